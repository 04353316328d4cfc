// SPDX-License-Identifier: GPL-2.0
/*
 * raw and ftrace_event (trace_processor's names for the same thing):
 * every event, one row each, with its fields as JSON text in args --
 * integers as numbers, an enum's value as its label where it has one,
 * text as a string, arrays as arrays, bytes in hex (a build-id) as one
 * string, as report prints them.  Trailers (kernel_stack, user_stack,
 * stack_def...) are their event's, not rows.  Counted by name and CPU,
 * the rows are report --stat's "events by name and CPU".
 *
 * utid is member << 32 | tid of the thread the event belongs to
 * (report's), NULL when not known (after a loss, before the CPU's first
 * switch); threads are followed only when utid is read.  utid = X reads
 * on each CPU only from X's first run there to its last (runidx.c).
 */
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>

#include "share.h"
#include "sql.h"

enum { C_TS, C_NAME, C_CPU, C_UTID, C_ARGS, C_UCPU, C_TRACE, C_HOST };

static const struct sql_column cols[] = {
	[C_TS] = { "ts", "INTEGER", SQL_PUSH_TS },
	[C_NAME] = { "name", "TEXT", SQL_PUSH_NAME },
	[C_CPU] = { "cpu", "INTEGER", SQL_PUSH_CPU },
	[C_UTID] = { "utid", "INTEGER", SQL_PUSH_UTID },
	[C_ARGS] = { "args", "TEXT", SQL_PUSH_NONE },
	[C_UCPU] = { "ucpu", "INTEGER", SQL_PUSH_CPU },
	[C_TRACE] = SQL_COL_TRACE,
	[C_HOST] = SQL_COL_HOST,
};

/*
 * An event's field names as args' keys, made the first time a row is of
 * it: '{"name":' for the first field, ',"name":' for each after it, one
 * after another in @text, key i from @at[i] to @at[i + 1].
 */
struct raw_keys {
	struct buf text;
	size_t *at;
};

struct raw {
	struct scan *scan;
	struct scan_row row;
	struct share_rows fed;		/* raw_reader(): a share gives the rows */
	struct buf args;		/* the row's args, its room kept */
	/* Per member, per event (its position in the metadata): NULL until made. */
	struct raw_keys **keys;
	unsigned int nr_keys;		/* members in @keys */
};

static int raw_filter(struct sql_cursor *c)
{
	struct raw *r = c->priv;

	/* utid = X: only the stretches where X owned a CPU (SQLite checks the term). */
	r->scan = scan_open(c, SCAN_EVENTS | SCAN_RUNS |
			    (sql_col_used(c, C_UTID) ? SCAN_THREADS : 0));
	return 0;
}

static int raw_next(struct sql_cursor *c)
{
	struct raw *r = c->priv;

	return share_rows_next(&r->fed, r->scan, &r->row);
}

static void raw_reader(struct sql_cursor *c, struct share_reader *sr)
{
	struct raw *r = c->priv;

	share_rows_reader(&r->fed, &r->row, c,
			  SCAN_EVENTS | (sql_col_used(c, C_UTID) ? SCAN_THREADS : 0), sr);
}

/* In decimal, without printf's format parsing (a field or more an event). */
static void int_json(struct buf *b, const struct rt_field_value *v, uint64_t i)
{
	int64_t x;

	if (!v->desc->is_signed) {
		buf_dec(b, rt_field_u64(v, i), false);
		return;
	}
	x = rt_field_s64(v, i);
	buf_dec(b, x < 0 ? 0 - (uint64_t)x : (uint64_t)x, x < 0);
}

/* The keys of member @member's event @ev (raw_keys), made the first time. */
static const struct raw_keys *keys_of(struct sql_cursor *c, unsigned int member,
				      const struct rt_event_desc *ev)
{
	struct raw *r = c->priv;
	const struct rt_metadata *md = c->db->ts->m[member].t->md;
	struct raw_keys *k;

	if (!r->keys) {
		r->nr_keys = c->db->ts->nr;
		r->keys = calloc(r->nr_keys, sizeof(*r->keys));
		if (!r->keys)
			die("out of memory");
	}
	if (!r->keys[member] &&
	    !(r->keys[member] = calloc(md->nr_events + 1, sizeof(*r->keys[member]))))
		die("out of memory");
	k = &r->keys[member][ev - md->events];
	if (k->at)
		return k;
	k->at = malloc((ev->nr_fields + 1) * sizeof(*k->at));
	if (!k->at)
		die("out of memory");
	for (unsigned int i = 0; i < ev->nr_fields; i++) {
		k->at[i] = k->text.len;
		buf_u8(&k->text, i ? ',' : '{');
		sql_json_text(&k->text, (const uint8_t *)ev->fields[i].name, SIZE_MAX);
		buf_u8(&k->text, ':');
	}
	k->at[ev->nr_fields] = k->text.len;
	return k;
}

/*
 * The event's fields as one JSON object, made in the cursor's buffer (no
 * allocation a row once it has grown) and copied out by sql_out_text();
 * each field's key as @k made it once for the event.
 */
static void args_json(struct sql_out *ctx, struct buf *b, const struct raw_keys *k,
		      const struct rt_item *it)
{
	static const char hex[] = "0123456789abcdef";
	const struct rt_event_desc *ev = it->event;

	b->len = 0;
	if (!it->nr_fields)
		buf_u8(b, '{');
	for (unsigned int i = 0; i < it->nr_fields; i++) {
		const struct rt_field_value *v = &it->fields[i];
		const char *label;

		/* The decoder's values are the event's fields, in its order. */
		if (i < ev->nr_fields && v->desc == &ev->fields[i]) {
			buf_add(b, k->text.p + k->at[i], k->at[i + 1] - k->at[i]);
		} else {
			buf_u8(b, i ? ',' : '{');
			sql_json_text(b, (const uint8_t *)v->desc->name, SIZE_MAX);
			buf_u8(b, ':');
		}
		if (v->desc->kind == RT_FIELD_INT) {
			label = v->desc->nr_labels ? rt_field_label(v->desc, rt_field_s64(v, 0)) : NULL;
			if (label)
				sql_json_text(b, (const uint8_t *)label, SIZE_MAX);
			else
				int_json(b, v, 0);
		} else if (v->desc->is_text) {
			sql_json_text(b, v->data, v->count);
		} else if (v->desc->bits == 8 && v->desc->base == 16 && !v->desc->is_signed) {
			buf_u8(b, '"');
			for (uint64_t j = 0; j < v->count; j++) {
				uint8_t x = (uint8_t)rt_field_u64(v, j);

				buf_u8(b, (uint8_t)hex[x >> 4]);
				buf_u8(b, (uint8_t)hex[x & 15]);
			}
			buf_u8(b, '"');
		} else {
			buf_u8(b, '[');
			for (uint64_t j = 0; j < v->count; j++) {
				if (j)
					buf_u8(b, ',');
				int_json(b, v, j);
			}
			buf_u8(b, ']');
		}
	}
	buf_u8(b, '}');
	if (b->len > INT_MAX) {
		sql_out_error(ctx, "args: too long", -1);
		return;
	}
	sql_out_text(ctx, (const char *)b->p, (int)b->len, SQLITE_TRANSIENT);
}

static unsigned int raw_member(const struct sql_cursor *c)
{
	return ((const struct raw *)c->priv)->row.member;
}

static void raw_column(struct sql_cursor *c, struct sql_out *ctx, int col)
{
	const struct scan_row *row = &((struct raw *)c->priv)->row;
	const struct rt_item *it = row->it;

	switch (col) {
	case C_TS:
		sql_out_int64(ctx, row->ts);
		break;
	case C_NAME:
		sql_out_text(ctx, it->event->name, -1, SQLITE_STATIC);
		break;
	case C_CPU:
	case C_UCPU:
		sql_out_int64(ctx, it->cpu);
		break;
	case C_UTID:
		sql_result_utid(ctx, row->member, row->tid);
		break;
	case C_ARGS:
		args_json(ctx, &((struct raw *)c->priv)->args,
			  keys_of(c, row->member, it->event), it);
		break;
	}
}

static void raw_reset(struct sql_cursor *c)
{
	struct raw *r = c->priv;

	scan_close(r->scan);
	free(r->args.p);
	for (unsigned int m = 0; m < r->nr_keys; m++) {
		const struct rt_metadata *md = c->db->ts->m[m].t->md;

		if (!r->keys[m])
			continue;
		for (unsigned int e = 0; e < md->nr_events; e++) {
			free(r->keys[m][e].text.p);
			free(r->keys[m][e].at);
		}
		free(r->keys[m]);
	}
	free(r->keys);
}

const struct sql_table sql_t_raw = {
	.name = "raw",
	.what = "every event: its fields (args, JSON), its thread (utid)",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct raw),
	.scan_rows = true,
	.ordered = true,
	.filter = raw_filter,
	.next = raw_next,
	.reader = raw_reader,
	.column = raw_column,
	.member = raw_member,
	.reset = raw_reset,
};

const struct sql_table sql_t_ftrace_event = {
	.name = "ftrace_event",
	.what = "raw under trace_processor's other name",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct raw),
	.scan_rows = true,
	.ordered = true,
	.filter = raw_filter,
	.next = raw_next,
	.column = raw_column,
	.member = raw_member,
	.reset = raw_reset,
};
