// SPDX-License-Identifier: GPL-2.0
/*
 * event_count: events by name and CPU, counted in C by one scan that
 * decodes no field (no per-event cost in SQLite): report --stat's
 * "events by name and CPU", a row per name and CPU that has events, in
 * the metadata's order of names.  cpu, name, trace and host constraints
 * are pushed down as in raw.
 */
#include <stdlib.h>
#include <string.h>

#include "sql.h"

enum { C_NAME, C_CPU, C_COUNT, C_TRACE, C_HOST };

static const struct sql_column cols[] = {
	[C_NAME] = { "name", "TEXT", SQL_PUSH_NAME },
	[C_CPU] = { "cpu", "INTEGER", SQL_PUSH_CPU },
	[C_COUNT] = { "count", "INTEGER", SQL_PUSH_NONE },
	[C_TRACE] = SQL_COL_TRACE,
	[C_HOST] = SQL_COL_HOST,
};

struct count_row {
	unsigned int member;
	const char *name;
	int cpu;
	uint64_t n;
};

struct counts {
	struct count_row *rows;
	size_t nr, next;
};

/* Member @m's counts, by event position then CPU index, into rows. */
static void member_rows(struct counts *k, unsigned int member,
			const struct rt_trace *t, const uint64_t *n)
{
	for (unsigned int e = 0; e < t->md->nr_events; e++)
		for (unsigned int i = 0; i < t->nr_cpus; i++) {
			uint64_t x = n[(size_t)e * t->nr_cpus + i];

			if (!x)
				continue;
			k->rows = realloc(k->rows, (k->nr + 1) * sizeof(*k->rows));
			if (!k->rows)
				die("out of memory");
			k->rows[k->nr++] = (struct count_row){ member, t->md->events[e].name,
							       t->cpus[i].cpu, x };
		}
}

static int count_filter(struct sql_cursor *c)
{
	struct counts *k = c->priv;
	const struct tset *ts = c->db->ts;
	uint64_t **n = calloc(ts->nr + 1, sizeof(*n));
	struct scan_row row;
	struct scan *s;
	int r;

	if (!n)
		die("out of memory");
	/* Rows are counts, not items: SQLite applies any LIMIT. */
	c->spec.limit = -1;
	s = scan_open(c, SCAN_EVENTS);
	while ((r = scan_next(s, &row)) > 0) {
		const struct rt_trace *t = ts->m[row.member].t;
		int i = trace_cpu_index(t, row.it->cpu);

		if (!n[row.member] &&
		    !(n[row.member] = calloc((size_t)t->md->nr_events * t->nr_cpus + 1,
					     sizeof(**n))))
			die("out of memory");
		if (i >= 0)
			n[row.member][(size_t)(row.it->event - t->md->events) * t->nr_cpus + i]++;
	}
	scan_close(s);
	for (unsigned int m = 0; m < ts->nr; m++) {
		if (n[m] && r == 0)
			member_rows(k, m, ts->m[m].t, n[m]);
		free(n[m]);
	}
	free(n);
	return r < 0 ? -1 : 0;
}

static int count_next(struct sql_cursor *c)
{
	struct counts *k = c->priv;

	if (k->next >= k->nr)
		return 0;
	k->next++;
	return 1;
}

static unsigned int count_member(const struct sql_cursor *c)
{
	const struct counts *k = c->priv;

	return k->rows[k->next - 1].member;
}

static void count_column(struct sql_cursor *c, struct sql_out *ctx, int col)
{
	struct counts *k = c->priv;
	const struct count_row *row = &k->rows[k->next - 1];

	switch (col) {
	case C_NAME:
		sql_out_text(ctx, row->name, -1, SQLITE_STATIC);
		break;
	case C_CPU:
		sql_out_int64(ctx, row->cpu);
		break;
	case C_COUNT:
		sql_out_int64(ctx, (int64_t)row->n);
		break;
	}
}

static void count_reset(struct sql_cursor *c)
{
	struct counts *k = c->priv;

	free(k->rows);
}

const struct sql_table sql_t_event_count = {
	.name = "event_count",
	.what = "events by name and CPU, counted without a row per event",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct counts),
	.filter = count_filter,
	.next = count_next,
	.column = count_column,
	.member = count_member,
	.reset = count_reset,
};
