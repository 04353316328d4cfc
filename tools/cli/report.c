// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace report: the events of a trace directory, all CPUs merged by
 * time, each with the thread it belongs to; filters; and --stat, the
 * summaries people ask a trace first: events per name and CPU, losses,
 * system calls by count and latency, threads by CPU time, wakeup latency.
 *
 * One pass in time order; memory grows with the number of threads,
 * system call names and wakeup samples (--stat), not with the events.
 * --tail N keeps each CPU's last N events instead of printing (tail.c).
 */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroups.h"
#include "debuginfod.h"
#include "traceset.h"
#include "window.h"

struct filter {
	bool *events;			/* by position in md->events; NULL: all */
	bool *cpus;			/* NULL: all */
	unsigned int nr_cpu_sel;
	int32_t *pids, *tids;
	unsigned int nr_pids, nr_tids;
	const char *const *comms;
	unsigned int nr_comms;
	struct cgroup_ids cgroups;	/* n == 0: all */
	struct window win;		/* --begin, --end */
};

struct opts {
	bool wall, stat, strict, folded, off_cpu, follow;
	unsigned int hold_ms;
	unsigned int top;		/* --stat's top functions */
	unsigned int tail;		/* --tail N; 0: every event */
	const char *events, *cpus, *begin, *end;
	const char *binaries;		/* --binaries DIR, or NULL */
	const char *critical;		/* --critical-path TID|COMM, or NULL */
	int32_t *pids, *tids;
	unsigned int nr_pids, nr_tids;
	const char **comms;
	unsigned int nr_comms;
	const char **cgroups;
	unsigned int nr_cgroups;
};

/* ---- options ------------------------------------------------------------ */

static void add_id(int32_t **v, unsigned int *n, const char *s, const char *what)
{
	char *copy = strdup(s), *tok, *save = NULL;
	int x;

	if (!copy)
		die("out of memory");
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!parse_int(tok, &x) || x < 0)
			usage_error("%s: '%s' is not a number", what, tok);
		*v = realloc(*v, (*n + 1) * sizeof(**v));
		if (!*v)
			die("out of memory");
		(*v)[(*n)++] = x;
	}
	free(copy);
}

static void add_comm(struct opts *o, const char *s)
{
	o->comms = realloc(o->comms, (o->nr_comms + 1) * sizeof(*o->comms));
	if (!o->comms)
		die("out of memory");
	o->comms[o->nr_comms++] = s;
}

static void add_cgroup(struct opts *o, const char *s)
{
	o->cgroups = realloc(o->cgroups, (o->nr_cgroups + 1) * sizeof(*o->cgroups));
	if (!o->cgroups)
		die("out of memory");
	o->cgroups[o->nr_cgroups++] = s;
}

/*
 * --cgroup PATH|ID: the ids of the cgroup and of those below it that
 * exist on this machine now; an ID no cgroup here has: that id alone (a
 * trace from another machine, or a cgroup since removed).
 */
static void cgroup_sel(struct cgroup_ids *ids, const char *arg)
{
	char path[PATH_MAX], why[PATH_MAX + 128];
	unsigned long long v;
	const char *name;
	uint64_t id;
	char *end;
	int err;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (*arg >= '0' && *arg <= '9' && !*end && !errno) {
		id = v;
		name = cgroup_name(id);
		if (!name) {
			err = cgroup_ids_add(ids, id);
		} else {
			snprintf(path, sizeof(path), "%s%s", CGROUP_ROOT,
				 strcmp(name, "/") ? name : "");
			err = cgroup_ids_under(path, ids);
		}
	} else {
		if (cgroup_resolve(arg, path, &id, why, sizeof(why)))
			usage_error("%s", why);
		err = cgroup_ids_under(path, ids);
	}
	if (err)
		die("--cgroup %s: %s", arg, strerror(-err));
}

/* ---- filtering ------------------------------------------------------------ */

static bool in_list(const int32_t *v, unsigned int n, int32_t x)
{
	for (unsigned int i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

static bool wanted(const struct filter *f, const struct rt_item *it,
		   const struct rt_metadata *md, const struct rt_threads *th,
		   int32_t tid)
{
	if (!window_holds(&f->win, it->timestamp))
		return false;
	if (f->cpus && (it->cpu >= f->nr_cpu_sel || !f->cpus[it->cpu]))
		return false;
	if (it->type != RT_ITEM_EVENT)
		return !f->events && !f->nr_tids && !f->nr_pids && !f->nr_comms &&
		       !f->cgroups.n;
	if (f->events && !f->events[it->event - md->events])
		return false;
	if (f->nr_tids && !in_list(f->tids, f->nr_tids, tid))
		return false;
	if (f->nr_pids && !in_list(f->pids, f->nr_pids,
				   rt_threads_pid(th, tid)))
		return false;
	if (f->cgroups.n &&
	    !cgroup_ids_has(&f->cgroups, rt_threads_cgroup(th, tid)))
		return false;
	if (f->nr_comms) {
		const char *comm = rt_threads_comm(th, tid, it->cpu);
		bool hit = false;

		for (unsigned int i = 0; comm && i < f->nr_comms; i++)
			hit |= !fnmatch(f->comms[i], comm, 0);
		if (!hit)
			return false;
	}
	return true;
}

static void cpu_sel(unsigned int cpu, void *arg)
{
	struct filter *f = arg;

	if (cpu >= RT_MAX_CPUS)
		return;			/* in no trace */
	if (cpu >= f->nr_cpu_sel) {
		f->cpus = realloc(f->cpus, (cpu + 1) * sizeof(*f->cpus));
		if (!f->cpus)
			die("out of memory");
		memset(f->cpus + f->nr_cpu_sel, 0, cpu + 1 - f->nr_cpu_sel);
		f->nr_cpu_sel = cpu + 1;
	}
	f->cpus[cpu] = true;
}

/* The first event's time, for +DURATION: one look at each CPU's start. */
static uint64_t trace_start(const char *dir)
{
	struct rt_trace *t = open_trace(dir, false);
	uint64_t start = UINT64_MAX;

	for (unsigned int i = 0; t && i < t->nr_cpus; i++) {
		struct rt_error err;
		struct rt_item it;
		int r;

		while ((r = rt_stream_next(t->cpus[i].stream, &it, &err)) > 0)
			if (it.type == RT_ITEM_EVENT)
				break;
		if (r > 0 && it.timestamp < start)
			start = it.timestamp;
	}
	rt_trace_close(t);
	return start == UINT64_MAX ? 0 : start;
}

/* -e's events of @md, by position; NULL: all. */
static bool *select_md_events(const char *spec, const struct rt_metadata *md)
{
	const char **names;
	char why[512];
	bool *sel;

	if (!spec)
		return NULL;
	names = calloc(md->nr_events + 1, sizeof(*names));
	sel = calloc(md->nr_events + 1, sizeof(*sel));
	if (!names || !sel)
		die("out of memory");
	for (unsigned int i = 0; i < md->nr_events; i++)
		names[i] = md->events[i].name;
	if (select_events(spec, names, md->nr_events, sel, why, sizeof(why)))
		usage_error("%s", why);
	free(names);
	return sel;
}

/*
 * The filter of @o on @md's events: a member @mb of a trace set, or a
 * trace being followed in @dir (@mb NULL).
 */
static void make_filter(struct filter *f, const struct opts *o,
			const struct rt_metadata *md,
			const struct tset_member *mb, const char *dir)
{
	uint64_t start = 0;

	memset(f, 0, sizeof(*f));
	f->events = select_md_events(o->events, md);
	if (o->cpus && !parse_cpu_list(o->cpus, cpu_sel, f))
		usage_error("--cpu: '%s' is not a CPU list like 0-3,8", o->cpus);
	f->pids = o->pids;
	f->nr_pids = o->nr_pids;
	f->tids = o->tids;
	f->nr_tids = o->nr_tids;
	f->comms = o->comms;
	f->nr_comms = o->nr_comms;
	for (unsigned int i = 0; i < o->nr_cgroups; i++)
		cgroup_sel(&f->cgroups, o->cgroups[i]);
	if (window_from_start(o->begin, o->end))
		start = mb ? tset_first_event(mb) : trace_start(dir);
	window_parse(&f->win, o->begin, o->end, md, start, o->wall);
}

/* ---- printing --------------------------------------------------------------- */

static void print_thread(FILE *f, const struct rt_threads *th, int32_t tid, uint32_t cpu)
{
	const char *comm = rt_threads_comm(th, tid, cpu);

	if (tid < 0)
		fputs(" -", f);
	else
		fprintf(f, " %s-%" PRId32, comm ? comm : "<...>", tid);
}

/*
 * "[time]" of a member's @cycles: as the trace's clock (or -w) for one
 * member (or a trace followed: @ts NULL); several members' are
 * wall-clock time, followed by their host.
 */
static void format_ts(char *buf, size_t len, const struct tset *ts,
		      const struct tset_member *mb, const struct rt_metadata *md,
		      uint64_t cycles, bool wall)
{
	__int128 t;
	size_t n;

	if (!ts || ts->nr == 1) {
		rt_format_ts(buf, len, md, cycles, wall);
		return;
	}
	t = tset_wall_ns(mb, cycles);
	if (t < 0)
		n = (size_t)snprintf(buf, len, "[-%" PRIu64 ".%09u]",
				     (uint64_t)(-t / 1000000000), (unsigned int)(-t % 1000000000));
	else
		n = (size_t)snprintf(buf, len, "[%" PRIu64 ".%09u]",
				     (uint64_t)(t / 1000000000), (unsigned int)(t % 1000000000));
	if (n < len)
		snprintf(buf + n, len - n, " %s", *mb->host ? mb->host : "-");
}

static void print_item(FILE *f, const struct tset *ts, const struct tset_member *mb,
		       const struct rt_metadata *md, const struct rt_item *it,
		       const struct rt_threads *th, int32_t tid, bool wall)
{
	char time[320];

	format_ts(time, sizeof(time), ts, mb, md, it->timestamp, wall);
	if (it->type == RT_ITEM_LOST) {
		fprintf(f, "%s cpu%u -- lost events=%" PRIu64 " packets=%" PRIu64,
			time, it->cpu, it->lost_events, it->lost_packets);
		if (it->damaged_packets)
			fprintf(f, " damaged=%" PRIu64, it->damaged_packets);
		fprintf(f, "%s\n", it->lost_first ? " before the first packet" : "");
		return;
	}
	fprintf(f, "%s cpu%u", time, it->cpu);
	print_thread(f, th, tid, it->cpu);
	fprintf(f, " %s:", it->event->name);
	if (it->nr_fields) {
		fputc(' ', f);
		rt_print_fields(f, it);
	}
	fputc('\n', f);
}

/* "chunk set 3" or "chunk sets 3-5". */
static void gap_sets(char *buf, size_t len, const struct tset_gap *g)
{
	if (g->first == g->last)
		snprintf(buf, len, "chunk set %u", g->first);
	else
		snprintf(buf, len, "chunk sets %u-%u", g->first, g->last);
}

/* A gap of a member's sequence of chunk sets: what is missing, and when. */
static void print_gap(FILE *f, const char *indent, const struct tset *ts,
		      const struct tset_member *mb, const struct tset_gap *g,
		      bool wall)
{
	char from[320], to[320], sets[48];

	format_ts(from, sizeof(from), ts, mb, mb->t->md, g->from, wall);
	format_ts(to, sizeof(to), ts, mb, mb->t->md, g->to, wall);
	gap_sets(sets, sizeof(sets), g);
	if (g->leading)
		fprintf(f, "%s%s -- gap: %s not given, everything before it\n",
			indent, from, sets);
	else
		fprintf(f, "%s%s -- gap: %s not given, up to %s\n", indent, from,
			sets, to);
}

/* ---- --stat -------------------------------------------------------------------- */

/* A system call number's latencies (numbers beyond INT32_MAX: not counted). */
struct syscall_stat {
	int32_t id;			/* first: the tidmap's key */
	uint64_t count, total, max;	/* latency in clock cycles */
};

/* A thread's open system call and scheduling state. */
struct tstate {
	int32_t tid;			/* first: the tidmap's key */
	int64_t sc_id;			/* -1: not in a syscall */
	uint64_t sc_start;
	uint64_t on_cpu;		/* cycles on a CPU */
	uint64_t woken;			/* wakeup time waiting for a switch in */
	uint64_t switches;
};

/*
 * One CPU of the trace (stat_state.cpus is t->cpus' order): who runs
 * there since when, as its switches say; its events by name; its losses.
 */
struct cpu_stat {
	int32_t tid;			/* -1: unknown */
	uint64_t since;
	uint64_t *per_event;		/* by event position; NULL: none yet */
	uint64_t lost_events, lost_packets, damaged;
};

struct stat_state {
	const struct rt_trace *t;
	const struct rt_threads *th;
	struct cpu_stat *cpus;
	struct rt_tidmap sys;		/* struct syscall_stat by id */
	struct rt_tidmap ts;		/* struct tstate by tid */
	uint64_t *wake;			/* wakeup latencies */
	size_t nr_wake, wake_cap;
	int ev_entry, ev_exit, ev_switch, ev_wakeup, ev_wakeup_new;
	uint64_t first, last;
};

static int event_pos(const struct rt_metadata *md, const char *name)
{
	for (unsigned int i = 0; i < md->nr_events; i++)
		if (!strcmp(md->events[i].name, name) && !md->events[i].unsupported)
			return (int)i;
	return -1;
}

/* The state of thread @tid; NULL for a negative tid (none, or damage). */
static struct tstate *tstate(struct stat_state *s, int32_t tid)
{
	struct tstate *t;
	bool created;

	if (tid < 0)
		return NULL;
	t = rt_tidmap_get(&s->ts, tid, &created);
	if (!t)
		die("out of memory");
	if (created)
		t->sc_id = -1;
	return t;
}

/* An integer field's value; -1 when the event has no such integer field. */
static int64_t field_s(const struct rt_item *it, const char *name)
{
	const struct rt_field_value *v = rt_item_field(it, name, RT_USE_INT);

	return v ? rt_field_s64(v, 0) : -1;
}

static void stat_feed(struct stat_state *s, const struct rt_item *it,
		      int32_t tid)
{
	const struct rt_metadata *md = s->t->md;
	int i = trace_cpu_index(s->t, it->cpu), pos;
	struct cpu_stat *c = i < 0 ? NULL : &s->cpus[i];

	if (!c)
		return;
	if (!s->first)
		s->first = it->timestamp;
	s->last = it->timestamp;
	if (it->type == RT_ITEM_LOST) {
		c->lost_events += it->lost_events;
		c->lost_packets += it->lost_packets;
		c->damaged += it->damaged_packets;
		return;
	}
	pos = (int)(it->event - md->events);
	if (!c->per_event) {
		c->per_event = calloc(md->nr_events, sizeof(*c->per_event));
		if (!c->per_event)
			die("out of memory");
	}
	c->per_event[pos]++;
	if ((pos == s->ev_entry || pos == s->ev_exit) && tid >= 0) {
		struct tstate *t = tstate(s, tid);
		int64_t id = field_s(it, "id");

		if (pos == s->ev_entry) {
			t->sc_id = id;
			t->sc_start = it->timestamp;
		} else if (t->sc_id == id && id >= 0 && id <= INT32_MAX) {
			uint64_t lat = it->timestamp - t->sc_start;
			struct syscall_stat *sc;
			bool created;

			sc = rt_tidmap_get(&s->sys, (int32_t)id, &created);
			if (!sc)
				die("out of memory");
			sc->count++;
			sc->total += lat;
			if (lat > sc->max)
				sc->max = lat;
			t->sc_id = -1;
		}
	} else if (pos == s->ev_switch) {
		int32_t prev = (int32_t)field_s(it, "prev_tid");
		int32_t next = (int32_t)field_s(it, "next_tid");
		struct tstate *n;

		/*
		 * Time on a CPU counts only between two switches of it that
		 * chain: with a pid filter, switches between two other
		 * threads are not in the trace.
		 */
		if (c->tid >= 0 && c->tid == prev)
			tstate(s, prev)->on_cpu += it->timestamp - c->since;
		c->tid = next;
		c->since = it->timestamp;
		n = tstate(s, next);
		if (n)
			n->switches++;
		if (n && n->woken && next > 0) {
			if (s->nr_wake == s->wake_cap) {
				s->wake_cap = s->wake_cap ? 2 * s->wake_cap : 4096;
				s->wake = realloc(s->wake, s->wake_cap * sizeof(*s->wake));
				if (!s->wake)
					die("out of memory");
			}
			s->wake[s->nr_wake++] = it->timestamp - n->woken;
			n->woken = 0;
		}
	} else if (pos == s->ev_wakeup || pos == s->ev_wakeup_new) {
		struct tstate *w = tstate(s, (int32_t)field_s(it, "tid"));

		if (w && !w->woken)
			w->woken = it->timestamp;
	}
}

static double cyc_us(const struct rt_metadata *md, uint64_t c)
{
	return (double)c * 1e6 / (double)md->clock_freq;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A table slot, ranked by key (largest first), ties by id (smallest first). */
struct rank {
	size_t i;
	uint64_t key;
	int32_t id;
};

static int cmp_rank(const void *a, const void *b)
{
	const struct rank *x = a, *y = b;

	return x->key < y->key ? 1 : x->key > y->key ? -1 :
	       (x->id > y->id) - (x->id < y->id);
}

static uint64_t per_event(const struct cpu_stat *c, unsigned int e)
{
	return c->per_event ? c->per_event[e] : 0;
}

static void stat_print(struct stat_state *s, const struct tset *ts,
		       const struct tset_member *mb, bool wall)
{
	const struct rt_metadata *md = s->t->md;
	unsigned int nr_cpus = s->t->nr_cpus;
	const struct rt_field_desc *idf = NULL;
	const char *hostname;
	struct rank *r;
	bool cg = false, local;
	char host[256] = "";
	size_t n;

	printf("events by name and CPU (%.6f s)\n",
	       (double)(s->last - s->first) / (double)md->clock_freq);
	printf("  %-28s %12s", "event", "total");
	for (unsigned int c = 0; c < nr_cpus; c++) {
		char name[16];

		snprintf(name, sizeof(name), "cpu%d", s->t->cpus[c].cpu);
		printf(" %11s", name);
	}
	putchar('\n');
	for (unsigned int e = 0; e < md->nr_events; e++) {
		uint64_t total = 0;

		for (unsigned int c = 0; c < nr_cpus; c++)
			total += per_event(&s->cpus[c], e);
		if (!total)
			continue;
		printf("  %-28s %12" PRIu64, md->events[e].name, total);
		for (unsigned int c = 0; c < nr_cpus; c++)
			printf(" %11" PRIu64, per_event(&s->cpus[c], e));
		putchar('\n');
	}

	printf("\nlosses\n");
	for (unsigned int c = 0; c < nr_cpus; c++)
		printf("  CPU %d: %" PRIu64 " events lost, %" PRIu64 " packets lost, %" PRIu64 " damaged places skipped\n",
		       s->t->cpus[c].cpu, s->cpus[c].lost_events,
		       s->cpus[c].lost_packets, s->cpus[c].damaged);
	for (unsigned int g = 0; g < mb->nr_gaps; g++)
		print_gap(stdout, "  ", ts, mb, &mb->gaps[g], wall);

	if (s->ev_entry >= 0) {
		const struct rt_event_desc *ev = &md->events[s->ev_entry];
		int i = rt_event_field(ev, "id", RT_USE_INT);

		if (i >= 0)
			idf = &ev->fields[i];
	}
	r = calloc(s->sys.used + 1, sizeof(*r));
	if (!r)
		die("out of memory");
	for (size_t pass = 0; pass < 2; pass++) {
		n = 0;
		for (size_t i = 0; i < s->sys.cap; i++) {
			const struct syscall_stat *sc = rt_tidmap_slot(&s->sys, i);

			if (sc)
				r[n++] = (struct rank){ i, pass ? sc->total : sc->count,
							sc->id };
		}
		qsort(r, n, sizeof(*r), cmp_rank);
		printf("\nsystem calls by %s (entry to exit of the same thread)\n",
		       pass ? "total latency" : "count");
		printf("  %-24s %10s %14s %12s %12s\n", "syscall", "count",
		       "total_us", "avg_us", "max_us");
		for (size_t k = 0; k < n && k < 25; k++) {
			const struct syscall_stat *st = rt_tidmap_slot(&s->sys, r[k].i);
			const char *name = idf ? rt_field_label(idf, st->id) : NULL;
			char num[24];

			snprintf(num, sizeof(num), "%" PRId32, st->id);
			printf("  %-24s %10" PRIu64 " %14.1f %12.2f %12.2f\n",
			       name ? name : num, st->count,
			       cyc_us(md, st->total),
			       cyc_us(md, st->total) / (double)st->count,
			       cyc_us(md, st->max));
		}
	}
	free(r);

	/* Close the slices of threads still on a CPU at the end. */
	for (unsigned int c = 0; c < nr_cpus; c++)
		if (s->cpus[c].tid >= 0)
			tstate(s, s->cpus[c].tid)->on_cpu += s->last - s->cpus[c].since;
	r = calloc(s->ts.used + 1, sizeof(*r));
	if (!r)
		die("out of memory");
	n = 0;
	for (size_t i = 0; i < s->ts.cap; i++) {
		const struct tstate *t = rt_tidmap_slot(&s->ts, i);

		if (t && t->on_cpu && t->tid > 0)
			r[n++] = (struct rank){ i, t->on_cpu, t->tid };
	}
	qsort(r, n, sizeof(*r), cmp_rank);
	/*
	 * The cgroup column only for a trace that has cgroup ids; named by
	 * path when the trace was recorded here (ids are this machine's).
	 */
	hostname = rt_metadata_env(md, "hostname");
	local = hostname && !gethostname(host, sizeof(host)) &&
		!strcmp(host, hostname);
	for (size_t k = 0; k < n && k < 25 && !cg; k++) {
		const struct tstate *t = rt_tidmap_slot(&s->ts, r[k].i);

		cg = rt_threads_cgroup(s->th, t->tid) != 0;
	}
	printf("\nthreads by on-CPU time (from sched_switch)\n");
	printf("  %-20s%s%-*s %8s %8s %14s %10s\n", "comm", cg ? " " : "",
	       cg ? 24 : 0, cg ? "cgroup" : "", "tid", "pid", "on_cpu_ms",
	       "switches");
	for (size_t k = 0; k < n && k < 25; k++) {
		const struct tstate *t = rt_tidmap_slot(&s->ts, r[k].i);
		/* No idle task here (tid > 0): no CPU names it. */
		const char *comm = rt_threads_comm(s->th, t->tid, 0);
		int32_t pid = rt_threads_pid(s->th, t->tid);
		char pids[16] = "-", cgs[32] = "-";
		uint64_t id = rt_threads_cgroup(s->th, t->tid);
		const char *cgname = id && local ? cgroup_name(id) : NULL;

		if (pid >= 0)
			snprintf(pids, sizeof(pids), "%" PRId32, pid);
		if (id)
			snprintf(cgs, sizeof(cgs), "%" PRIu64, id);
		printf("  %-20s%s%-*s %8" PRId32 " %8s %14.3f %10" PRIu64 "\n",
		       comm ? comm : "<...>", cg ? " " : "", cg ? 24 : 0,
		       cg ? (cgname ? cgname : cgs) : "", t->tid, pids,
		       cyc_us(md, t->on_cpu) / 1e3, t->switches);
	}
	free(r);

	printf("\nwakeup to run latency (sched_wakeup to the sched_switch in)\n");
	if (!s->nr_wake) {
		printf("  no wakeup followed by a switch in\n");
		return;
	}
	qsort(s->wake, s->nr_wake, sizeof(*s->wake), cmp_u64);
	printf("  samples %zu", s->nr_wake);
	{
		static const double pct[] = { 50, 90, 99, 99.9, 100 };

		for (int i = 0; i < ARRAY_SIZE(pct); i++) {
			size_t k = (size_t)ceil(pct[i] / 100 * (double)s->nr_wake);

			k = k ? k - 1 : 0;
			printf("  p%g %.2f us", pct[i], cyc_us(md, s->wake[k]));
		}
	}
	putchar('\n');
}

static void stat_free(struct stat_state *s)
{
	for (unsigned int c = 0; s->cpus && c < s->t->nr_cpus; c++)
		free(s->cpus[c].per_event);
	free(s->cpus);
	rt_tidmap_free(&s->sys);
	rt_tidmap_free(&s->ts);
	free(s->wake);
}

/* ---- the command ------------------------------------------------------------------ */

static void stat_init(struct stat_state *s, const struct rt_trace *t,
		      const struct rt_threads *th)
{
	s->t = t;
	s->th = th;
	rt_tidmap_init(&s->ts, sizeof(struct tstate));
	rt_tidmap_init(&s->sys, sizeof(struct syscall_stat));
	s->cpus = calloc(t->nr_cpus + 1, sizeof(*s->cpus));
	if (!s->cpus)
		die("out of memory");
	for (unsigned int i = 0; i < t->nr_cpus; i++)
		s->cpus[i].tid = -1;
	s->ev_entry = event_pos(t->md, "syscall_entry");
	s->ev_exit = event_pos(t->md, "syscall_exit");
	s->ev_switch = event_pos(t->md, "sched_switch");
	s->ev_wakeup = event_pos(t->md, "sched_wakeup");
	s->ev_wakeup_new = event_pos(t->md, "sched_wakeup_new");
}

/*
 * What printing the events takes, for one member of a trace set
 * (report_dirs()) or a trace being written (follow_trace(): no set).
 */
struct view {
	const struct opts *o;
	const char *dir;
	const struct rt_metadata *md;	/* the items' events point into it */
	const struct tset *ts;		/* NULL when following */
	const struct tset_member *mb;
	struct filter f;
	struct rt_threads *th;
	struct stat_state *st;		/* --stat: fed instead of printed */
	struct stackrec *sr;		/* the events' stacks */
	struct umaps *um;		/* the processes' mappings */
	struct stack_names *names;	/* what names the frames */
	struct top_fns *top;		/* --stat: the stacks' functions */
	struct tail *tail;		/* --tail: kept per CPU instead of printed */
	FILE *out;			/* where events print: stdout, or the tail's */
	bool pair_kept;			/* the last event: printed (or counted) */
	int32_t pair_tid;		/* the last event's thread */
};

static void view_init(struct view *v, const struct opts *o, const char *dir,
		      const struct rt_metadata *md, const struct tset *ts,
		      const struct tset_member *mb)
{
	memset(v, 0, sizeof(*v));
	v->o = o;
	v->dir = dir;
	v->md = md;
	v->ts = ts;
	v->mb = mb;
	make_filter(&v->f, o, md, mb, dir);
	v->th = rt_threads_new(md);
	v->sr = stackrec_new(md);
	v->um = umaps_new(md);
	if (!v->th || !v->sr || !v->um)
		die("out of memory");
	v->names = stack_names_new(dir, o->binaries, v->um);
	v->out = stdout;
	if (o->stat)
		v->top = top_fns_new();
}

/* The trace's metadata grew: the same filter, on its events. */
static void view_set_metadata(struct view *v, const struct rt_metadata *md)
{
	free(v->f.events);
	v->f.events = select_md_events(v->o->events, md);
	if (rt_threads_set_metadata(v->th, md) || stackrec_set_metadata(v->sr, md) ||
	    umaps_set_metadata(v->um, md))
		die("out of memory");
	v->md = md;
}

static void view_free(struct view *v)
{
	top_fns_free(v->top);
	stack_names_free(v->names);
	umaps_free(v->um);
	stack_lost_warn(v->sr);
	stackrec_free(v->sr);
	free(v->f.events);
	free(v->f.cpus);
	cgroup_ids_free(&v->f.cgroups);
	rt_threads_free(v->th);
}

/* An event's stacks go with it: printed under it (or counted), or not. */
static void view_pair(struct view *v, const struct stack_pair *p)
{
	int32_t pid;

	if (!v->pair_kept)
		return;
	pid = stack_pair_pid(p, v->th, v->pair_tid);
	if (v->top)
		top_fns_add(v->top, v->names, p, pid);
	else
		stack_pair_print(v->out, v->names, p, pid);
	if (v->tail)
		tail_append(v->tail);
}

/* The stacks of the last event, before items of another trace are printed. */
static void view_flush(struct view *v)
{
	const struct stack_pair *p = stackrec_flush(v->sr);

	if (p)
		view_pair(v, p);
}

/* One item, in time order: printed (or counted) if the filter keeps it. */
static void view_item(struct view *v, const struct rt_item *it)
{
	const struct stack_pair *p = stackrec_feed(v->sr, it);
	int32_t tid;
	bool keep;

	/* Before this item is printed or learnt from: the last event's stacks. */
	if (p)
		view_pair(v, p);
	if (stackrec_is_trailer(v->sr, it))
		return;
	tid = rt_threads_owner(v->th, it);
	keep = wanted(&v->f, it, v->md, v->th, tid);
	if (it->type == RT_ITEM_EVENT) {
		v->pair_kept = keep;
		v->pair_tid = tid;
	}
	if (keep && v->st)
		stat_feed(v->st, it, tid);
	else if (keep)
		print_item(v->out, v->ts, v->mb, v->md, it, v->th, tid, v->o->wall);
	if (keep && v->tail)
		tail_keep(v->tail, it->cpu, it->type == RT_ITEM_EVENT);
	/*
	 * Threads are learnt from everything read, before --begin too, and,
	 * seeking, from what the frames before the window's tell
	 * (window_threads()): a window's lines are those of the whole report.
	 */
	rt_threads_feed(v->th, it);
	if (umaps_feed(v->um, it))
		die("out of memory");
}

/* A gap of a member's chunk sets, unless the time window leaves it out. */
static void view_gap(const struct view *v, const struct tset_gap *g)
{
	if (v->st || (v->f.win.has_begin && g->to < v->f.win.begin) ||
	    (v->f.win.has_end && g->from > v->f.win.end))
		return;
	print_gap(stdout, "", v->ts, v->mb, g, v->o->wall);
}

/* The directories @dirs, as @o says: the exit status. */
static int report_dirs(char *const *dirs, unsigned int n, const struct opts *o)
{
	const struct tset_item *ti;
	struct stat_state *sts;
	struct tset_merge *tm;
	const char *error;
	struct view *vs;
	struct tset *ts;
	int status, last = -1;

	ts = tset_open(dirs, n, o->strict);
	if (!ts)
		return 1;
	if (o->tail && ts->nr > 1) {
		error_line("--tail reads one recording: these directories are %u", ts->nr);
		tset_close(ts);
		return 1;
	}
	vs = calloc(ts->nr, sizeof(*vs));
	sts = calloc(ts->nr, sizeof(*sts));
	if (!vs || !sts)
		die("out of memory");
	for (unsigned int i = 0; i < ts->nr; i++) {
		const struct tset_member *mb = &ts->m[i];

		view_init(&vs[i], o, mb->t->dir, mb->t->md, ts, mb);
		if (o->stat) {
			stat_init(&sts[i], mb->t, vs[i].th);
			vs[i].st = &sts[i];
		}
		if (o->tail) {
			vs[i].tail = tail_new(o->tail, mb->t);
			if (!vs[i].tail)
				die("out of memory");
			vs[i].out = tail_out(vs[i].tail);
		}
		if (window_apply(ts, i, &vs[i].f.win) ||
		    window_threads(ts, i, vs[i].th)) {
			status = 1;
			goto out;
		}
	}

	tm = tset_merge_open(ts);
	while ((ti = tset_merge_next(tm))) {
		/* An event's stacks are the items after it in its own trace. */
		if (last >= 0 && (unsigned int)last != ti->member)
			view_flush(&vs[last]);
		last = (int)ti->member;
		if (ti->it)
			view_item(&vs[ti->member], ti->it);
		else
			view_gap(&vs[ti->member], ti->gap);
	}
	if (last >= 0)
		view_flush(&vs[last]);
	/* After an error, what was read stays printed; no summaries. */
	error = tset_merge_error(tm);
	for (unsigned int i = 0; error && i < ts->nr; i++)
		if (vs[i].tail)
			tail_print(vs[i].tail, stdout, o->wall, vs[i].f.cpus,
				   vs[i].f.nr_cpu_sel);
	for (unsigned int i = 0; !error && i < ts->nr; i++) {
		const struct tset_member *mb = &ts->m[i];

		if (ts->nr > 1)
			printf("%shost %s\n", i ? "\n" : "", *mb->host ? mb->host : "-");
		if (o->stat) {
			stat_print(&sts[i], ts, mb, o->wall);
			top_fns_print(vs[i].top, stdout, o->top);
			continue;
		}
		if (vs[i].tail)
			tail_print(vs[i].tail, stdout, o->wall, vs[i].f.cpus,
				   vs[i].f.nr_cpu_sel);
		putchar('\n');
		for (unsigned int c = 0; c < mb->t->nr_cpus; c++)
			print_cpu_summary(mb->t, &mb->t->cpus[c], stdout);
	}
	status = tset_print_end(ts, error);
	tset_merge_close(tm);
out:
	for (unsigned int i = 0; i < ts->nr; i++) {
		stat_free(&sts[i]);
		tail_free(vs[i].tail);
		view_free(&vs[i]);
	}
	free(sts);
	free(vs);
	tset_close(ts);
	return status;
}

/*
 * --follow: the trace directory @dir as ringtraced writes it, until
 * SIGINT or SIGTERM (exit status 0), from what comes next; with @live
 * (record --live) from its first chunks, until SIGTERM.
 */
static int follow_trace(const char *dir, const struct opts *o, bool live)
{
	const struct rt_item *it;
	struct follow *fl;
	const char *error;
	struct view v;
	int status = 0;

	fl = follow_open(dir, live ? FOLLOW_FROM_START | FOLLOW_TERM_ONLY : 0,
			 o->hold_ms, o->strict);
	if (!fl)
		return 1;
	view_init(&v, o, dir, follow_metadata(fl), NULL, NULL);
	if (!live)
		info("following %s: Ctrl-C stops", dir);
	while ((it = follow_next(fl))) {
		if (follow_metadata(fl) != v.md)
			view_set_metadata(&v, follow_metadata(fl));
		view_item(&v, it);
	}
	view_flush(&v);
	if (fflush(stdout) || ferror(stdout))
		die("write error: %s", strerror(errno));
	if (follow_late(fl))
		warn("%" PRIu64 " item%s reached the disk after later ones of another CPU were printed (ringtraced wrote them later than the hold): printed out of order",
		     follow_late(fl), follow_late(fl) == 1 ? "" : "s");
	if (follow_damage_report(fl))
		status = EXIT_DAMAGED;
	error = follow_error(fl);
	if (error) {
		error_line("%s", error);
		status = 1;
	}
	view_free(&v);
	follow_close(fl);
	return status;
}

int report_live(const char *dir)
{
	struct opts o = { .hold_ms = FOLLOW_HOLD_MS };

	return follow_trace(dir, &o, true);
}

static int run(int argc, char **argv)
{
	enum { O_CPU = 256, O_PID, O_TID, O_COMM, O_BEGIN, O_END, O_STAT,
	       O_STRICT, O_FOLDED, O_OFF_CPU, O_FOLLOW, O_HOLD, O_CGROUP, O_TOP,
	       O_NO_DEBUGINFOD, O_BINARIES, O_CRITICAL, O_TAIL };
	static const struct option lopts[] = {
		{ "wall", no_argument, NULL, 'w' },
		{ "events", required_argument, NULL, 'e' },
		{ "cpu", required_argument, NULL, O_CPU },
		{ "pid", required_argument, NULL, O_PID },
		{ "tid", required_argument, NULL, O_TID },
		{ "comm", required_argument, NULL, O_COMM },
		{ "cgroup", required_argument, NULL, O_CGROUP },
		{ "begin", required_argument, NULL, O_BEGIN },
		{ "end", required_argument, NULL, O_END },
		{ "stat", no_argument, NULL, O_STAT },
		{ "strict", no_argument, NULL, O_STRICT },
		{ "folded", no_argument, NULL, O_FOLDED },
		{ "off-cpu", no_argument, NULL, O_OFF_CPU },
		{ "follow", no_argument, NULL, O_FOLLOW },
		{ "hold", required_argument, NULL, O_HOLD },
		{ "top", required_argument, NULL, O_TOP },
		{ "no-debuginfod", no_argument, NULL, O_NO_DEBUGINFOD },
		{ "binaries", required_argument, NULL, O_BINARIES },
		{ "critical-path", required_argument, NULL, O_CRITICAL },
		{ "tail", required_argument, NULL, O_TAIL },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .hold_ms = FOLLOW_HOLD_MS, .top = 20 };
	bool hold = false, top = false;
	struct stat st;
	int c;

	while ((c = cmd_getopt(argc, argv, "we:h", lopts)) != -1) {
		switch (c) {
		case 'w':
			o.wall = true;
			break;
		case 'e':
			o.events = optarg;
			break;
		case O_CPU:
			o.cpus = optarg;
			break;
		case O_PID:
			add_id(&o.pids, &o.nr_pids, optarg, "--pid");
			break;
		case O_TID:
			add_id(&o.tids, &o.nr_tids, optarg, "--tid");
			break;
		case O_COMM:
			add_comm(&o, optarg);
			break;
		case O_BEGIN:
			o.begin = optarg;
			break;
		case O_END:
			o.end = optarg;
			break;
		case O_STAT:
			o.stat = true;
			break;
		case O_STRICT:
			o.strict = true;
			break;
		case O_FOLDED:
			o.folded = true;
			break;
		case O_OFF_CPU:
			o.off_cpu = true;
			break;
		case O_FOLLOW:
			o.follow = true;
			break;
		case O_HOLD:
			if (!parse_uint(optarg, &o.hold_ms) || o.hold_ms > 60000)
				usage_error("--hold: '%s' is not a number of milliseconds (0..60000)",
					    optarg);
			hold = true;
			break;
		case O_CGROUP:
			add_cgroup(&o, optarg);
			break;
		case O_TOP:
			if (!parse_uint(optarg, &o.top) || !o.top)
				usage_error("--top: '%s' is not a number of functions (1 or more)",
					    optarg);
			top = true;
			break;
		case O_NO_DEBUGINFOD:
			dbginfo_disable();
			break;
		case O_BINARIES:
			o.binaries = optarg;
			break;
		case O_CRITICAL:
			o.critical = optarg;
			break;
		case O_TAIL:
			if (!parse_uint(optarg, &o.tail) || !o.tail)
				usage_error("--tail: '%s' is not a number of events (1 or more)",
					    optarg);
			break;
		}
	}
	if (argc - optind < 1)
		usage_error("a trace directory is needed");
	if (o.critical) {
		if (o.stat || o.events || o.cpus || o.nr_pids || o.nr_tids || o.nr_comms ||
		    o.nr_cgroups || o.off_cpu || o.follow || o.wall || o.binaries || top || hold ||
		    o.tail)
			usage_error("--critical-path takes --begin, --end, --folded and --strict only");
		c = critical_report(argv + optind, (unsigned int)(argc - optind), o.critical,
				    o.begin, o.end, o.folded, o.strict);
		free(o.pids);
		free(o.tids);
		free(o.comms);
		free(o.cgroups);
		return c;
	}
	if (o.binaries && (stat(o.binaries, &st) || !S_ISDIR(st.st_mode)))
		usage_error("--binaries %s: not a directory", o.binaries);
	if (o.folded && argc - optind != 1)
		usage_error("--folded reads one trace directory");
	if (o.off_cpu && !o.folded)
		usage_error("--off-cpu goes with --folded");
	if (o.folded && (o.stat || o.events || o.cpus || o.nr_pids ||
			 o.nr_tids || o.nr_comms || o.nr_cgroups || o.begin ||
			 o.end))
		usage_error("--folded takes the whole trace: no --stat or filters");
	if (top && !o.stat)
		usage_error("--top goes with --stat");
	if (hold && !o.follow)
		usage_error("--hold goes with --follow");
	if (o.follow && (o.stat || o.folded))
		usage_error("--follow prints the events: no --stat or --folded");
	if (o.tail && (o.stat || o.folded || o.follow))
		usage_error("--tail prints events: no --stat, --folded or --follow");
	if (o.follow && argc - optind != 1)
		usage_error("--follow reads one trace directory");
	if (o.follow)
		c = follow_trace(argv[optind], &o, false);
	else if (o.folded)
		c = folded_report(argv[optind], o.binaries, o.off_cpu, o.strict);
	else
		c = report_dirs(argv + optind, (unsigned int)(argc - optind), &o);
	dbginfo_end();
	free(o.pids);
	free(o.tids);
	free(o.comms);
	free(o.cgroups);
	return c;
}

const struct command cmd_report = {
	.name = "report",
	.summary = "print a trace's events, filtered, its summaries (--stat), stacks (--folded) "
		   "or a thread's critical path",
	.help =
"Usage: ringtrace report [OPTIONS] DIR...\n"
"\n"
"Print every event of the trace directory DIR, all CPUs merged by time:\n"
"  [seconds.nanoseconds] cpuN COMM-TID name: field=value, ...\n"
"COMM-TID is the thread the event belongs to (the one running on the CPU,\n"
"interrupts included), '-' when the trace does not tell yet; an enum\n"
"value prints as label(value), text up to its first NUL.  Losses print as\n"
"  [seconds.nanoseconds] cpuN -- lost events=N packets=M [damaged=D]\n"
"before the packet they come before: N events the CPU dropped, M packet\n"
"numbers not read (overwritten, or in damage), D damaged places skipped\n"
"(stderr says what and where; events there are not counted in N); then\n"
"one summary line per CPU.  An event recorded with its kernel stack\n"
"(record --stack) has its frames under it, innermost first, one a line:\n"
"      function+0xoff [module]\n"
"named from the symbols kept in the trace (no [module] in vmlinux), then\n"
"its user stack's, if recorded, through the trace's mappings and symbol\n"
"store (ringtrace symbols):\n"
"      function+0xoff (binary)\n"
"or binary+0xFILEOFF [bid:xxxxxxxx] when the store lacks the binary.\n"
"A frame the store cannot name (a stripped binary, one not stored) is\n"
"named from its debug file's .symtab, fetched by build-id from the\n"
"debuginfod servers of $DEBUGINFOD_URLS (kept in the client's cache,\n"
"$DEBUGINFOD_CACHE_PATH); without DEBUGINFOD_URLS, no lookup.\n"
"then a line for what cut a user stack short, if anything did.  A user\n"
"stack recorded as a copy (record --ustack-mode copy) is unwound here\n"
"with the CFI of the binaries the trace's mappings (user_mmap) name by\n"
"build-id: from the symbol store, else the --binaries directory, else\n"
"debuginfod; then printed the same way (callers' addresses are their\n"
"return addresses minus 1: inside the call), with a line saying why\n"
"the unwind ended early if it did.\n"
"Diagnostics go to stderr.\n"
"\n"
"A DIR that ringtraced --on-chunk made is read with its chunk sets\n"
"(DIR/chunk-NNNNNN/); a DIR of sets a hook moved, with the sets in it.\n"
"Several DIRs: the chunk sets of one recording, in any order (as SETDIR...,\n"
"their directory, or with the daemon's DIR), are read as one trace, a set\n"
"found twice once; a set missing from their sequence prints as\n"
"  [seconds.nanoseconds] -- gap: chunk set K not given, up to [time]\n"
"A chunk that is not what its set's manifest says is damage (exit 3).\n"
"Several recordings (machines, boots) are merged on wall-clock time:\n"
"then times are since the epoch and each is followed by its host.\n"
"\n"
"  -e, --events LIST   only these events: names, globs (sched_*) and\n"
"                      groups, comma separated; groups:\n"
"                      " EVENT_GROUPS "\n"
"      --cpu LIST      only these CPUs (0-3,8)\n"
"      --pid PID       only threads of these processes (repeat, or a,b)\n"
"      --tid TID       only these threads\n"
"      --comm NAME     only threads of this name (a glob; repeatable)\n"
"      --cgroup CG     only threads in this cgroup v2 or below it (repeatable):\n"
"                      a path (absolute, or under /sys/fs/cgroup) or an id;\n"
"                      a thread's cgroup is the one it had when the state\n"
"                      dump or its fork was recorded\n"
"      --begin TIME    from TIME: seconds as printed (with -w: since the\n"
"                      epoch), or +DURATION from the first event (+1.5s)\n"
"      --end TIME      up to TIME, the same way\n"
"      --stat          instead of the events: events per name and CPU,\n"
"                      losses, system calls by count and by total and max\n"
"                      latency, threads by on-CPU time, wakeup-to-run\n"
"                      latency percentiles (of what the filters keep);\n"
"                      with stacks, the top functions by self (innermost)\n"
"                      and total (anywhere in the stack) counts\n"
"      --top N         with --stat: N top functions (default 20)\n"
"      --tail N        each CPU's last N events (of those the filters\n"
"                      keep), with their stacks, CPU after CPU, each in\n"
"                      time order under \"CPU c: last K events before [END]\"\n"
"                      (END: the trace's last event); losses among or\n"
"                      just before them print with them, uncounted.  What\n"
"                      each CPU did before a crash: ringtrace recover's\n"
"                      directory (or any one recording)\n"
"  -w, --wall          times since the epoch (default: CLOCK_MONOTONIC)\n"
"      --binaries DIR  more binaries to unwind user stack copies with\n"
"                      (record --ustack-mode copy): DIR's files and its\n"
"                      subdirectories', matched to the trace's mappings\n"
"                      by build-id, for those the symbol store lacks\n"
"      --folded        instead of the events: the stacks (record --stack)\n"
"                      folded for flame graphs, root first:\n"
"                        COMM;frame;...;frame COUNT\n"
"                      user frames first, then the kernel's, prefixed\n"
"                      '[k] ' when any stack has user frames\n"
"      --off-cpu       with --folded: sched_switch stacks only, each\n"
"                      weighted by the nanoseconds until its thread ran\n"
"                      again (where threads wait, and how long)\n"
"      --critical-path TID|COMM  instead of the events: the thread's\n"
"                      critical path (ringtrace sql's critical_path()):\n"
"                      for each span it did not run, who woke it and what\n"
"                      that waker did meanwhile, back through the chain of\n"
"                      wakeups; a line per span with its share of the\n"
"                      time, the chain thread;waker;waker's waker...; from\n"
"                      --begin to --end (default: the thread's life); COMM\n"
"                      must name one thread.  With --folded: summed as\n"
"                      flame graph input, CHAIN;STATE NANOSECONDS\n"
"      --no-debuginfod no debug files from debuginfod, DEBUGINFOD_URLS or not\n"
"      --strict        damage in the trace is an error (default: read past\n"
"                      it, say on stderr what was skipped, exit status 3)\n"
"      --follow        DIR is a trace ringtraced is writing (the service's,\n"
"                      or record's): print its events as they reach the\n"
"                      disk, from now on, with the filters above, until\n"
"                      Ctrl-C (exit status 0).  An event waits until\n"
"                      every CPU wrote past its time, at most --hold: a\n"
"                      second behind needs ringtraced's flush interval\n"
"                      (-f) of 100 ms (record --live sets it)\n"
"      --hold MS       with --follow: the longest an event waits for the\n"
"                      other CPUs (default 300); events that come later\n"
"                      than that print out of order, counted on stderr\n"
"  -h, --help          this text\n",
	.run = run,
};
