// SPDX-License-Identifier: GPL-2.0
/*
 * One database over the trace directories (sql.h): the trace set, one
 * in-memory SQLite connection made safe for untrusted input (defensive,
 * no extensions, sorts spill to temporary files, its heap bounded by
 * --max-memory), every table registered
 * from the one array below, and what the cursors' scans leave behind --
 * their counters (scan_stats) and the damage they read past, each place
 * said once however many cursors read it.
 */
#include <stdlib.h>
#include <string.h>

#include "runidx.h"

/* Every table: a new one is a line here and a t_*.c file. */
static const struct sql_table *const tables[] = {
	&sql_t_trace, &sql_t_raw, &sql_t_ftrace_event, &sql_t_lost,
	&sql_t_event_count, &sql_t_scan_stats,
	&sql_t_sched_slice, &sql_t_thread_state,
	&sql_t_thread, &sql_t_process,
	&sql_t_syscall, &sql_t_wakeup, &sql_t_irq, &sql_t_softirq, &sql_t_marker,
	&sql_t_sample, &sql_t_stack, &sql_t_frame,
	&sql_t_critical_path,
};

const struct sql_table *sql_table_find(const char *name)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(tables); i++)
		if (!strcmp(tables[i]->name, name))
			return tables[i];
	return NULL;
}

void sqldb_help_tables(FILE *f)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(tables); i++) {
		const struct sql_table *t = tables[i];
		int col = 4;

		fprintf(f, "  %-14s %s\n   ", t->name, t->what);
		for (unsigned int k = 0; k < t->nr_cols; k++) {
			int w = (int)strlen(t->cols[k].name) + 2;

			if (col + w > 76) {
				fputs("\n   ", f);
				col = 4;
			}
			fprintf(f, " %s%s", t->cols[k].name, k + 1 < t->nr_cols ? "," : "\n");
			col += w;
		}
	}
}

static bool seek_allowed(void)
{
	const char *e = getenv("RINGTRACE_SEEK");

	return !e || strcmp(e, "0");
}

/*
 * SQLite's heap bounded by half of @max (0: not bounded).  The hard limit
 * makes an allocation past it fail (SQLITE_NOMEM: the statement fails);
 * the soft limit, half of that, first makes SQLite give back its caches
 * and its sorter spill early, so a statement that can spill does.
 * Process-wide: one database per process.
 */
static void heap_limit(uint64_t max)
{
	sqlite3_int64 hard = (sqlite3_int64)(max / 2);

	sqlite3_hard_heap_limit64(hard);
	sqlite3_soft_heap_limit64(hard / 2);
}

struct sqldb *sqldb_open(char *const *dirs, unsigned int n, bool strict, bool wall,
			 uint64_t max_memory)
{
	struct sqldb *d = calloc(1, sizeof(*d));
	unsigned int slots = 0;

	if (!d)
		die("out of memory");
	d->ts = tset_open(dirs, n, strict);
	if (!d->ts) {
		free(d);
		return NULL;
	}
	d->wall = wall;
	d->seek = seek_allowed();
	d->max_memory = max_memory;
	/* The limits count only what SQLite's memory statistics count. */
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 1);
	heap_limit(max_memory);
	for (unsigned int i = 0; i < d->ts->nr; i++)
		if (d->ts->m[i].t->nr_cpus > slots)
			slots = d->ts->m[i].t->nr_cpus;
	d->cpu_slots = slots + 1;
	d->undescribed = calloc((size_t)d->ts->nr * d->cpu_slots, sizeof(*d->undescribed));
	if (!d->undescribed)
		die("out of memory");
	if (sqlite3_open_v2(":memory:", &d->db, SQLITE_OPEN_READWRITE |
			    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		error_line("sqlite: %s", d->db ? sqlite3_errmsg(d->db) : "out of memory");
		sqldb_close(d);
		return NULL;
	}
	sqlite3_db_config(d->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	sqlite3_db_config(d->db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
	sqlite3_exec(d->db, "PRAGMA temp_store=FILE", NULL, NULL, NULL);
	for (unsigned int i = 0; i < ARRAY_SIZE(tables); i++) {
		if (sql_vtab_register(d, tables[i]) != SQLITE_OK) {
			error_line("sqlite: %s: %s", tables[i]->name, sqlite3_errmsg(d->db));
			sqldb_close(d);
			return NULL;
		}
	}
	if (sql_functions_register(d->db) != SQLITE_OK) {
		error_line("sqlite: %s", sqlite3_errmsg(d->db));
		sqldb_close(d);
		return NULL;
	}
	return d;
}

void sqldb_close(struct sqldb *d)
{
	if (!d)
		return;
	sqlite3_close(d->db);
	for (unsigned int i = 0; d->sched_idx && i < d->ts->nr; i++)
		schedwalk_index_free(d->sched_idx[i]);
	free(d->sched_idx);
	for (unsigned int i = 0; d->sched_rec && i < d->ts->nr; i++)
		schedpack_member_free(d->sched_rec[i]);
	free(d->sched_rec);
	spanq_index_free(d->span_idx);
	for (unsigned int i = 0; d->run_idx && i < d->ts->nr; i++)
		runidx_free(d->run_idx[i]);
	free(d->run_idx);
	free(d->no_pairs);
	for (unsigned int i = 0; d->events_read && i < d->ts->nr; i++)
		free(d->events_read[i]);
	free(d->events_read);
	for (unsigned int i = 0; d->thread_idx && i < 2 * d->ts->nr; i++)
		threadidx_free(d->thread_idx[i]);
	free(d->thread_idx);
	for (unsigned int i = 0; d->stack_idx && i < d->ts->nr; i++)
		stackidx_free(d->stack_idx[i]);
	free(d->stack_idx);
	tset_close(d->ts);
	free(d->cur);
	free(d->last);
	for (unsigned int i = 0; i < d->nr_damage; i++)
		free(d->damage[i]);
	free(d->damage);
	for (unsigned int i = 0; i < d->nr_notes; i++)
		free(d->notes[i]);
	free(d->notes);
	free(d->undescribed);
	free(d);
}

void sqldb_statement(struct sqldb *d)
{
	if (!d->nr_cur)
		return;
	free(d->last);
	d->last = d->cur;
	d->nr_last = d->nr_cur;
	d->cur = NULL;
	d->nr_cur = 0;
}

unsigned int sqldb_stat_new(struct sqldb *d, const char *table)
{
	struct scan_stat *n = realloc(d->cur, (d->nr_cur + 1) * sizeof(*n));

	if (!n)
		die("out of memory");
	d->cur = n;
	memset(&n[d->nr_cur], 0, sizeof(*n));
	n[d->nr_cur].table = table;
	return d->nr_cur++;
}

/* @what added to *@v (of *@n) unless it is there already. */
static void keep_once(char ***v, unsigned int *n, const char *what)
{
	for (unsigned int i = 0; i < *n; i++)
		if (!strcmp((*v)[i], what))
			return;
	*v = realloc(*v, (*n + 1) * sizeof(**v));
	if (!*v || !((*v)[*n] = strdup(what)))
		die("out of memory");
	(*n)++;
}

void sqldb_view_damage(struct sqldb *d, unsigned int member, const struct rt_trace *t)
{
	const struct rt_trace *mt = d->ts->m[member].t;

	for (unsigned int i = 0; i < t->nr_cpus; i++) {
		const struct rt_stream *s = t->cpus[i].stream;
		unsigned int nr, shown = 0, slot;
		int x;

		if (!s)
			continue;
		x = trace_cpu_index(mt, (uint32_t)t->cpus[i].cpu);
		slot = member * d->cpu_slots + (unsigned int)(x < 0 ? 0 : x);
		for (unsigned int j = 0; j < rt_stream_nr_index_notes(s); j++)
			if (rt_stream_index_note(s, j))
				keep_once(&d->notes, &d->nr_notes, rt_stream_index_note(s, j));
		nr = rt_stream_nr_damage(s);
		d->read_past += nr + rt_stream_nr_index_notes(s);
		for (unsigned int j = 0; j < nr; j++) {
			if (rt_stream_damage(s, j)) {
				keep_once(&d->damage, &d->nr_damage, rt_stream_damage(s, j));
				shown++;
			}
		}
		/* What no message describes: the most one read of the CPU found. */
		if (nr - shown > d->undescribed[slot])
			d->undescribed[slot] = nr - shown;
	}
}

unsigned int sqldb_damage_report(const struct sqldb *d)
{
	unsigned int n = d->nr_damage;

	for (unsigned int i = 0; i < d->nr_notes; i++)
		warn("note: %s", d->notes[i]);
	for (unsigned int i = 0; i < d->nr_damage; i++)
		warn("damaged: %s", d->damage[i]);
	for (unsigned int m = 0; m < d->ts->nr; m++) {
		const struct rt_trace *t = d->ts->m[m].t;

		for (unsigned int c = 0; c < t->nr_cpus; c++) {
			unsigned int u = d->undescribed[m * d->cpu_slots + c];

			if (u)
				warn("damaged: cpu%d: %u more damaged place%s, not described",
				     t->cpus[c].cpu, u, u == 1 ? "" : "s");
			n += u;
		}
	}
	if (n)
		warn("%u damaged place%s read past (--strict fails instead)",
		     n, n == 1 ? "" : "s");
	return n;
}

int64_t sqldb_ns(const struct sqldb *d, unsigned int member, uint64_t cycles)
{
	const struct tset_member *m = &d->ts->m[member];
	__int128 ns;

	if (d->wall)
		ns = tset_wall_ns(m, cycles);
	else
		ns = (__int128)((unsigned __int128)cycles * 1000000000 / m->t->md->clock_freq);
	return ns > INT64_MAX ? INT64_MAX : ns < INT64_MIN ? INT64_MIN : (int64_t)ns;
}
