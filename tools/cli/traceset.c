// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: several trace and chunk-set directories read as one
 * (traceset.h says what they become).  Manifests are parsed with json-c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "traceset.h"

#define MANIFEST_MAX	(1 << 20)	/* bytes: a set of 8192 CPUs fits */

/* What a chunk set's manifest says, as far as reading the set needs it. */
struct set_info {
	char *dir;
	bool is_set;			/* has a manifest.json */
	char *host, *boot_id, *trace, *uuid;
	unsigned int seq;
	int64_t wall_offset_ns;
	bool has_events;
	uint64_t first_ns, last_ns;	/* of its events, every CPU */
	unsigned int nr_cpus;
	struct set_cpu *cpus;		/* what the manifest says of each file */
	struct rt_trace *t;
};

/* A chunk of a set, as its manifest tells: what a window may skip. */
struct set_cpu {
	int cpu;
	uint64_t packets;
	uint64_t first_ns;		/* its first packet's timestamp_begin */
};

static void set_info_free(struct set_info *s)
{
	free(s->dir);
	free(s->host);
	free(s->boot_id);
	free(s->trace);
	free(s->uuid);
	free(s->cpus);
	rt_trace_close(s->t);
}

/* ---- manifest.json -------------------------------------------------------------- */

/* The whole of @path, NUL-terminated: 0, 1 when it does not exist, -1 said. */
static int read_small(const char *path, char **out)
{
	struct stat st;
	char *buf;
	ssize_t n;
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ENOENT)
			return 1;
		error_line("%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > MANIFEST_MAX) {
		error_line("%s: not a manifest (a regular file of at most %d bytes)",
			   path, MANIFEST_MAX);
		close(fd);
		return -1;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		die("out of memory");
	while (len < (size_t)st.st_size &&
	       (n = read(fd, buf + len, (size_t)st.st_size - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			error_line("%s: %s", path, strerror(errno));
			free(buf);
			close(fd);
			return -1;
		}
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	*out = buf;
	return 0;
}

/* @obj's member @key of type @type, or NULL. */
static struct json_object *member(struct json_object *obj, const char *key,
				  enum json_type type)
{
	struct json_object *v;

	if (!json_object_is_type(obj, json_type_object) ||
	    !json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, type))
		return NULL;
	return v;
}

static bool get_str(struct json_object *obj, const char *key, char **out)
{
	struct json_object *v = member(obj, key, json_type_string);

	if (!v)
		return false;
	*out = strdup(json_object_get_string(v));
	if (!*out)
		die("out of memory");
	return true;
}

/* An integer in [lo, hi]. */
static bool get_int(struct json_object *obj, const char *key, int64_t lo,
		    int64_t hi, int64_t *out)
{
	struct json_object *v = member(obj, key, json_type_int);

	if (!v)
		return false;
	errno = 0;
	*out = json_object_get_int64(v);
	return !errno && *out >= lo && *out <= hi;
}

/* Each of "files" there with its size: a set cut short in transit is said. */
static const char *check_files(const char *dir, struct json_object *files)
{
	static char why[PATH_MAX + 128];
	size_t n = json_object_array_length(files);

	for (size_t i = 0; i < n; i++) {
		struct json_object *f = json_object_array_get_idx(files, i);
		struct json_object *name = member(f, "name", json_type_string);
		const char *s = name ? json_object_get_string(name) : NULL;
		char path[PATH_MAX];
		struct stat st;
		int64_t size;

		if (!s || !*s || strchr(s, '/') || !strcmp(s, ".") || !strcmp(s, "..") ||
		    !get_int(f, "size", 0, INT64_MAX, &size))
			return "a \"files\" entry without a plain name and a size";
		snprintf(path, sizeof(path), "%s/%s", dir, s);
		if (stat(path, &st) || !S_ISREG(st.st_mode)) {
			snprintf(why, sizeof(why), "lists %s, which is not there", s);
			return why;
		}
		if (st.st_size != size) {
			snprintf(why, sizeof(why), "says %s has %" PRId64 " bytes, it has %lld",
				 s, size, (long long)st.st_size);
			return why;
		}
	}
	return NULL;
}

/* The facts of DIR/manifest.json into @s; 1 if DIR has none; -1 said. */
static int read_manifest(struct set_info *s)
{
	struct json_object *root, *clock, *cpus, *files, *v;
	enum json_tokener_error jerr;
	const char *why = NULL;
	char path[PATH_MAX], *text;
	int64_t x;
	int r;

	snprintf(path, sizeof(path), "%s/manifest.json", s->dir);
	r = read_small(path, &text);
	if (r)
		return r;
	root = json_tokener_parse_verbose(text, &jerr);
	free(text);
	if (!root) {
		error_line("%s: not JSON: %s", path, json_tokener_error_desc(jerr));
		return -1;
	}
	s->is_set = true;
	if (!(v = member(root, "format", json_type_string)) ||
	    strcmp(json_object_get_string(v), "ringtrace-chunk-set"))
		why = "\"format\" is not \"ringtrace-chunk-set\"";
	else if (!get_int(root, "format_version", 1, 1, &x))
		why = "\"format_version\" is not 1, the one this ringtrace reads";
	else if (!get_str(root, "host", &s->host) ||
		 !get_str(root, "boot_id", &s->boot_id) ||
		 !get_str(root, "trace", &s->trace) ||
		 !get_str(root, "trace_uuid", &s->uuid))
		why = "no \"host\", \"boot_id\", \"trace\" or \"trace_uuid\" string";
	else if (!get_int(root, "sequence", 1, UINT_MAX, &x))
		why = "no \"sequence\" number from 1";
	else if ((s->seq = (unsigned int)x, !(clock = member(root, "clock", json_type_object))) ||
		 !get_int(clock, "realtime_offset_ns", INT64_MIN, INT64_MAX,
			  &s->wall_offset_ns))
		why = "no \"clock\" with a \"realtime_offset_ns\"";
	else if (!(cpus = member(root, "cpus", json_type_array)) ||
		 !(files = member(root, "files", json_type_array)))
		why = "no \"cpus\" or \"files\" list";
	if (!why) {
		size_t n = json_object_array_length(cpus);

		s->cpus = calloc(n + 1, sizeof(*s->cpus));
		if (!s->cpus)
			die("out of memory");
		for (size_t i = 0; i < n && !why; i++) {
			struct json_object *c = json_object_array_get_idx(cpus, i);
			int64_t ev, first, last, cpu, packets;

			if (!get_int(c, "events", 0, INT64_MAX, &ev) ||
			    !get_int(c, "first_timestamp", 0, INT64_MAX, &first) ||
			    !get_int(c, "last_timestamp", first, INT64_MAX, &last))
				why = "a \"cpus\" entry without its events and first <= last timestamps";
			else if (get_int(c, "cpu", 0, RT_MAX_CPUS - 1, &cpu) &&
				 get_int(c, "packets", 0, INT64_MAX, &packets))
				s->cpus[s->nr_cpus++] = (struct set_cpu){
					(int)cpu, (uint64_t)packets, (uint64_t)first };
			if (!why && ev) {
				if (!s->has_events || (uint64_t)first < s->first_ns)
					s->first_ns = (uint64_t)first;
				if (!s->has_events || (uint64_t)last > s->last_ns)
					s->last_ns = (uint64_t)last;
				s->has_events = true;
			}
		}
		if (!why)
			why = check_files(s->dir, files);
	}
	json_object_put(root);
	if (why) {
		error_line("%s: not a chunk set's manifest: %s", path, why);
		return -1;
	}
	return 0;
}

/* ---- members -------------------------------------------------------------------- */

static void uuid_text(const struct rt_metadata *md, char *buf, size_t size)
{
	const uint8_t *u = md->uuid;

	snprintf(buf, size, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4], u[5],
		 u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

/* Nanoseconds of the trace clock as its cycles. */
static uint64_t ns_cycles(const struct rt_metadata *md, uint64_t ns)
{
	unsigned __int128 c = (unsigned __int128)ns * md->clock_freq / 1000000000;

	return c > UINT64_MAX ? UINT64_MAX : (uint64_t)c;
}

__int128 tset_wall_ns(const struct tset_member *m, uint64_t cycles)
{
	uint64_t freq = m->t->md->clock_freq;

	return (__int128)((unsigned __int128)cycles * 1000000000 / freq) +
	       m->wall_offset_ns;
}

/* Events of @old read with @md, the newer metadata: each declared alike. */
static const char *same_events(const struct rt_metadata *old,
			       const struct rt_metadata *md)
{
	static char why[256];

	if (old->clock_freq != md->clock_freq)
		return "their clocks' frequencies differ";
	for (unsigned int i = 0; i < old->nr_events; i++) {
		const struct rt_event_desc *a = &old->events[i];
		const struct rt_event_desc *b = rt_metadata_event(md, a->id);

		if (!b || strcmp(a->name, b->name) || a->nr_fields != b->nr_fields) {
			snprintf(why, sizeof(why), "event id %" PRIu32 " is %s in one, %s in the other",
				 a->id, a->name, b ? b->name : "not declared");
			return why;
		}
	}
	return NULL;
}

/* A plain trace directory as a member. */
static void plain_member(struct tset_member *m, struct set_info *s)
{
	const struct rt_metadata *md = s->t->md;
	const char *host = rt_metadata_env(md, "hostname");

	m->t = s->t;
	s->t = NULL;
	m->host = strdup(host ? host : "");
	if (!m->host)
		die("out of memory");
	m->wall_offset_ns = (__int128)md->clock_offset_s * 1000000000 +
			    (__int128)md->clock_offset * 1000000000 / (__int128)md->clock_freq;
}

/* Appends @p to @c's paths. */
static void add_path(struct rt_trace_cpu *c, char *p)
{
	char **n = realloc(c->paths, (c->nr_paths + 1) * sizeof(*n));

	if (!n)
		die("out of memory");
	c->paths = n;
	c->paths[c->nr_paths++] = p;
}

/* The CPU @cpu of @t, made (in order) if new. */
static struct rt_trace_cpu *cpu_of(struct rt_trace *t, int cpu)
{
	unsigned int i;
	struct rt_trace_cpu *c;

	for (i = 0; i < t->nr_cpus && t->cpus[i].cpu < cpu; i++)
		;
	if (i < t->nr_cpus && t->cpus[i].cpu == cpu)
		return &t->cpus[i];
	c = realloc(t->cpus, (t->nr_cpus + 1) * sizeof(*c));
	if (!c)
		die("out of memory");
	t->cpus = c;
	memmove(&c[i + 1], &c[i], (t->nr_cpus - i) * sizeof(*c));
	t->nr_cpus++;
	memset(&c[i], 0, sizeof(*c));
	c[i].cpu = cpu;
	return &c[i];
}

/*
 * What @s's manifest says of its chunk of CPU @cpu, now the member's file
 * @path: for tset_window().  Nothing when it does not say.
 */
static void add_fact(struct tset_member *m, const struct set_info *s, int cpu,
		     const char *path)
{
	struct tset_file *n;

	for (unsigned int i = 0; i < s->nr_cpus; i++) {
		if (s->cpus[i].cpu != cpu)
			continue;
		n = realloc(m->files, (m->nr_files + 1) * sizeof(*n));
		if (!n)
			die("out of memory");
		m->files = n;
		m->files[m->nr_files++] = (struct tset_file){
			path, s->cpus[i].packets,
			ns_cycles(s->t->md, s->cpus[i].first_ns) };
		return;
	}
}

/*
 * The sets @s[0..n) of one recording, sorted by sequence, as member @m:
 * 0, or -1 said.
 */
static int join_sets(struct tset_member *m, struct set_info **s, unsigned int n,
		     bool strict)
{
	struct set_info *last = s[n - 1];
	struct rt_error err;
	char uuid[40];
	const char *why;
	uint64_t before = 0;
	bool any = false;

	m->t = calloc(1, sizeof(*m->t));
	m->t->dir = strdup(last->dir);
	m->host = strdup(last->host);
	if (!m->t || !m->t->dir || !m->host)
		die("out of memory");
	m->nr_sets = n;
	m->wall_offset_ns = s[0]->wall_offset_ns;
	for (unsigned int i = 0; i < n; i++) {
		if (i && s[i]->seq == s[i - 1]->seq) {
			error_line("%s and %s: both are chunk set %u of %s on %s: one is enough",
				   s[i - 1]->dir, s[i]->dir, s[i]->seq, s[i]->trace, s[i]->host);
			return -1;
		}
		uuid_text(s[i]->t->md, uuid, sizeof(uuid));
		if (!s[i]->t->md->has_uuid || strcasecmp(uuid, s[i]->uuid)) {
			error_line("%s: the manifest's trace_uuid %s is not its metadata's (%s)",
				   s[i]->dir, s[i]->uuid, s[i]->t->md->has_uuid ? uuid : "none");
			return -1;
		}
		/* A recovered set may not know its boot: "". */
		if (*s[i]->boot_id && *last->boot_id &&
		    strcmp(s[i]->boot_id, last->boot_id)) {
			error_line("%s and %s: chunk sets of one trace (%s on %s, uuid %s) from two boots",
				   s[i]->dir, last->dir, last->trace, last->host, last->uuid);
			return -1;
		}
		why = same_events(s[i]->t->md, last->t->md);
		if (why) {
			error_line("%s and %s: their metadata disagree: %s",
				   s[i]->dir, last->dir, why);
			return -1;
		}
	}

	/* Each CPU's chunks, set after set, one stream. */
	for (unsigned int i = 0; i < n; i++)
		for (unsigned int k = 0; k < s[i]->t->nr_cpus; k++) {
			struct rt_trace_cpu *from = &s[i]->t->cpus[k];
			struct rt_trace_cpu *c = cpu_of(m->t, from->cpu);

			for (unsigned int j = 0; j < from->nr_paths; j++) {
				add_fact(m, s[i], from->cpu, from->paths[j]);
				add_path(c, from->paths[j]);
				from->paths[j] = NULL;
			}
			c->compressed |= from->compressed;
		}
	m->t->md = last->t->md;
	last->t->md = NULL;
	for (unsigned int k = 0; k < m->t->nr_cpus; k++) {
		struct rt_trace_cpu *c = &m->t->cpus[k];

		if (rt_stream_open(&c->stream, m->t->md, (const char *const *)c->paths,
				   c->nr_paths, c->cpu, &err)) {
			error_line("%s", err.msg);
			return -1;
		}
		rt_stream_set_tolerant(c->stream, !strict);
	}

	/* The missing sequence numbers, from the end of what came before. */
	m->gaps = calloc(n + 1, sizeof(*m->gaps));
	if (!m->gaps)
		die("out of memory");
	if (s[0]->seq > 1)
		m->gaps[m->nr_gaps++] = (struct tset_gap){
			.first = 1, .last = s[0]->seq - 1, .leading = true,
			.from = ns_cycles(m->t->md, s[0]->first_ns),
			.to = ns_cycles(m->t->md, s[0]->first_ns),
		};
	for (unsigned int i = 0; i < n; i++) {
		if (i && s[i]->seq > s[i - 1]->seq + 1) {
			uint64_t after = UINT64_MAX;

			for (unsigned int j = i; j < n; j++)
				if (s[j]->has_events && s[j]->first_ns < after)
					after = s[j]->first_ns;
			/* CPUs' sets may overlap in time: never an end before its start. */
			if (after == UINT64_MAX || after < before)
				after = before;
			m->gaps[m->nr_gaps++] = (struct tset_gap){
				.first = s[i - 1]->seq + 1, .last = s[i]->seq - 1,
				.from = ns_cycles(m->t->md, before),
				.to = ns_cycles(m->t->md, after),
			};
		}
		if (s[i]->has_events && (!any || s[i]->last_ns > before))
			before = s[i]->last_ns;
		any |= s[i]->has_events;
	}
	return 0;
}

static int cmp_set(const void *a, const void *b)
{
	const struct set_info *x = *(struct set_info *const *)a;
	const struct set_info *y = *(struct set_info *const *)b;
	int r;

	if ((r = strcmp(x->host, y->host)) || (r = strcmp(x->trace, y->trace)) ||
	    (r = strcasecmp(x->uuid, y->uuid)))
		return r;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static bool same_recording(const struct set_info *x, const struct set_info *y)
{
	return !strcmp(x->host, y->host) && !strcmp(x->trace, y->trace) &&
	       !strcasecmp(x->uuid, y->uuid);
}

/* Each directory read, and given once: 0, or -1 said. */
static int read_dirs(struct set_info *in, char *const *dirs, unsigned int n,
		     bool strict)
{
	char **real = calloc(n, sizeof(*real));
	struct rt_error err;
	int ret = -1;

	if (!real)
		die("out of memory");
	for (unsigned int i = 0; i < n; i++) {
		in[i].dir = strdup(dirs[i]);
		real[i] = realpath(dirs[i], NULL);
		if (!in[i].dir)
			die("out of memory");
		if (!real[i]) {
			error_line("%s: %s", dirs[i], strerror(errno));
			goto out;
		}
		for (unsigned int j = 0; j < i; j++)
			if (!strcmp(real[i], real[j])) {
				error_line("%s: given twice", dirs[i]);
				goto out;
			}
		if (read_manifest(&in[i]) < 0)
			goto out;
		if (rt_trace_open(dirs[i], &in[i].t, &err)) {
			error_line("%s", err.msg);
			goto out;
		}
		for (unsigned int k = 0; k < in[i].t->nr_cpus; k++)
			rt_stream_set_tolerant(in[i].t->cpus[k].stream, !strict);
	}
	ret = 0;
out:
	for (unsigned int i = 0; i < n; i++)
		free(real[i]);
	free(real);
	return ret;
}

struct tset *tset_open(char *const *dirs, unsigned int n, bool strict)
{
	struct set_info *in = calloc(n, sizeof(*in)), **sets;
	struct tset *ts = calloc(1, sizeof(*ts));
	unsigned int nsets = 0;
	int ok = -1;

	sets = calloc(n, sizeof(*sets));
	if (!in || !ts || !sets || !(ts->m = calloc(n, sizeof(*ts->m))))
		die("out of memory");
	ts->strict = strict;
	if (read_dirs(in, dirs, n, strict))
		goto out;
	for (unsigned int i = 0; i < n; i++) {
		if (in[i].is_set)
			sets[nsets++] = &in[i];
		else
			plain_member(&ts->m[ts->nr++], &in[i]);
	}
	qsort(sets, nsets, sizeof(*sets), cmp_set);
	for (unsigned int i = 0; i < nsets; ) {
		unsigned int j = i + 1;

		while (j < nsets && same_recording(sets[i], sets[j]))
			j++;
		if (join_sets(&ts->m[ts->nr++], &sets[i], j - i, strict))
			goto out;
		i = j;
	}
	ok = 0;
out:
	for (unsigned int i = 0; i < n; i++)
		set_info_free(&in[i]);
	free(in);
	free(sets);
	if (ok) {
		tset_close(ts);
		return NULL;
	}
	return ts;
}

void tset_close(struct tset *ts)
{
	if (!ts)
		return;
	for (unsigned int i = 0; i < ts->nr; i++) {
		rt_trace_close(ts->m[i].t);
		free(ts->m[i].host);
		free(ts->m[i].gaps);
		free(ts->m[i].files);
	}
	free(ts->m);
	free(ts);
}

uint64_t tset_first_event(const struct tset_member *m)
{
	uint64_t start = UINT64_MAX;

	for (unsigned int i = 0; i < m->t->nr_cpus; i++) {
		const struct rt_trace_cpu *c = &m->t->cpus[i];
		struct rt_stream *s;
		struct rt_error err;
		struct rt_item it;
		int r;

		if (rt_stream_open(&s, m->t->md, (const char *const *)c->paths,
				   c->nr_paths, c->cpu, &err))
			continue;
		rt_stream_set_tolerant(s, true);
		while ((r = rt_stream_next(s, &it, &err)) > 0)
			if (it.type == RT_ITEM_EVENT)
				break;
		if (r > 0 && it.timestamp < start)
			start = it.timestamp;
		rt_stream_close(s);
	}
	return start == UINT64_MAX ? 0 : start;
}

/* ---- a time window -------------------------------------------------------------- */

static const struct tset_file *file_fact(const struct tset_member *m,
					 const char *path)
{
	for (unsigned int i = 0; i < m->nr_files; i++)
		if (m->files[i].path == path)
			return &m->files[i];
	return NULL;
}

/*
 * Whether CPU @c's chunk @j is outside [begin, end]: its manifest says it
 * starts after the window (it is left unread), or a later chunk of the
 * CPU starts before the window (this one holds neither the window nor the
 * packet before it: it is opened only when the CPU's thread is looked for
 * in it, rt_stream_set_cold()).  The manifest's times are read as
 * traceset.h says (nanoseconds); a cycle of rounding either way is
 * allowed for.
 */
static bool chunk_after(const struct tset_member *m, const struct rt_trace_cpu *c,
			unsigned int j, uint64_t end)
{
	const struct tset_file *f = file_fact(m, c->paths[j]);

	return f && f->packets && end < UINT64_MAX - 1 && f->first > end + 1;
}

static bool chunk_before(const struct tset_member *m, const struct rt_trace_cpu *c,
			 unsigned int j, uint64_t begin)
{
	for (unsigned int k = j + 1; k < c->nr_paths; k++) {
		const struct tset_file *g = file_fact(m, c->paths[k]);

		if (g && g->packets && g->first + 1 < begin)
			return true;
	}
	return false;
}

int tset_window(struct tset *ts, unsigned int member, uint64_t begin,
		uint64_t end, bool seek)
{
	struct tset_member *m = &ts->m[member];
	struct rt_error err;

	for (unsigned int i = 0; i < m->t->nr_cpus; i++) {
		struct rt_trace_cpu *c = &m->t->cpus[i];
		char **keep = calloc(c->nr_paths + 1, sizeof(*keep));
		unsigned int n = 0, cold = 0;

		if (!keep)
			die("out of memory");
		for (unsigned int j = 0; j < c->nr_paths; j++) {
			if (seek && chunk_after(m, c, j, end))
				continue;
			/* A prefix: a chunk before one that is before too. */
			if (seek && n == cold && chunk_before(m, c, j, begin))
				cold++;
			keep[n++] = c->paths[j];
		}
		if (n < c->nr_paths) {
			rt_stream_close(c->stream);
			c->stream = NULL;
			if (rt_stream_open(&c->stream, m->t->md, (const char *const *)keep,
					   n, c->cpu, &err)) {
				free(keep);
				error_line("%s", err.msg);
				return -1;
			}
			rt_stream_set_tolerant(c->stream, !ts->strict);
		}
		free(keep);
		rt_stream_set_window(c->stream, begin, end, seek);
		rt_stream_set_cold(c->stream, cold);
	}
	return 0;
}

/* ---- merged on wall-clock time ----------------------------------------------------- */

struct tset_cursor {
	struct merge *m;
	const struct rt_item *cur;	/* its next item; NULL: none left */
	unsigned int gap;		/* its next gap */
};

struct tset_merge {
	struct tset *ts;
	struct tset_cursor *c;
	int last;			/* member handed out last; -1: none */
	bool last_gap;
	const char *error;
	struct tset_item out;
};

/* The member's next item, or its error. */
static void cursor_next(struct tset_merge *tm, struct tset_cursor *c)
{
	c->cur = merge_next(c->m);
	if (!c->cur && merge_error(c->m))
		tm->error = merge_error(c->m);
}

struct tset_merge *tset_merge_open(struct tset *ts)
{
	struct tset_merge *tm = calloc(1, sizeof(*tm));

	if (!tm || !(tm->c = calloc(ts->nr + 1, sizeof(*tm->c))))
		die("out of memory");
	tm->ts = ts;
	tm->last = -1;
	for (unsigned int i = 0; i < ts->nr; i++) {
		tm->c[i].m = merge_open(ts->m[i].t, false);
		cursor_next(tm, &tm->c[i]);
	}
	return tm;
}

/* A member's gap comes before its item at a later time. */
static bool gap_first(const struct tset_member *m, const struct tset_cursor *c)
{
	const struct tset_gap *g;

	if (c->gap >= m->nr_gaps)
		return false;
	g = &m->gaps[c->gap];
	return !c->cur || g->leading || g->from < c->cur->timestamp;
}

const struct tset_item *tset_merge_next(struct tset_merge *tm)
{
	__int128 best_key = 0;
	int best = -1;

	if (tm->last >= 0) {
		struct tset_cursor *c = &tm->c[tm->last];

		if (tm->last_gap)
			c->gap++;
		else
			cursor_next(tm, c);
	}
	if (tm->error)
		return NULL;
	for (unsigned int i = 0; i < tm->ts->nr; i++) {
		const struct tset_member *m = &tm->ts->m[i];
		const struct tset_cursor *c = &tm->c[i];
		__int128 key;

		if (gap_first(m, c))
			key = m->gaps[c->gap].leading ? INT64_MIN :
			      tset_wall_ns(m, m->gaps[c->gap].from);
		else if (c->cur)
			key = tset_wall_ns(m, c->cur->timestamp);
		else
			continue;
		if (best < 0 || key < best_key) {
			best = (int)i;
			best_key = key;
		}
	}
	tm->last = best;
	if (best < 0)
		return NULL;
	tm->last_gap = gap_first(&tm->ts->m[best], &tm->c[best]);
	tm->out.member = (unsigned int)best;
	tm->out.it = tm->last_gap ? NULL : tm->c[best].cur;
	tm->out.gap = tm->last_gap ? &tm->ts->m[best].gaps[tm->c[best].gap] : NULL;
	return &tm->out;
}

const char *tset_merge_error(const struct tset_merge *tm)
{
	return tm->error;
}

void tset_merge_close(struct tset_merge *tm)
{
	if (!tm)
		return;
	for (unsigned int i = 0; i < tm->ts->nr; i++)
		merge_close(tm->c[i].m);
	free(tm->c);
	free(tm);
}

int tset_print_end(const struct tset *ts, const char *error)
{
	unsigned int damaged = 0;
	int status;

	if (fflush(stdout) || ferror(stdout))
		die("write error: %s", strerror(errno));
	for (unsigned int i = 0; i < ts->nr; i++)
		damaged += damage_report(ts->m[i].t);
	status = damaged ? EXIT_DAMAGED : 0;
	if (error) {
		error_line("%s", error);
		status = 1;
	}
	return status;
}
