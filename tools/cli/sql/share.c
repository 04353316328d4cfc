// SPDX-License-Identifier: GPL-2.0
/* One read of a trace for several tables' producers (share.h). */
#include <stdlib.h>
#include <string.h>

#include "share.h"

struct share {
	struct sql_cursor *c;		/* the read's counters and errors */
	struct share_reader *r;
	bool **want;			/* per reader, by event position in @md */
	unsigned int n, cap;
	unsigned int what;		/* every reader's SCAN_* */
	struct scan *scan;		/* the member being read; NULL between */
	struct scan_spec rd;		/* one member, whole, every reader's events */
	bool *rd_members;
	const struct rt_metadata *md;	/* the member's */
	unsigned int next;		/* the next member to read */
	bool done;
};

struct share *share_open(struct sql_cursor *c)
{
	struct share *sh = calloc(1, sizeof(*sh));

	if (!sh || !(sh->rd_members = calloc(c->db->ts->nr + 1, sizeof(*sh->rd_members))))
		die("out of memory");
	sh->c = c;
	sh->rd.limit = -1;
	sh->rd.members = sh->rd_members;
	sh->rd.members_set = true;
	/* No names yet: none is read until a reader asks for them. */
	sh->rd.names_set = true;
	return sh;
}

void share_add(struct share *sh, const struct share_reader *r)
{
	const struct scan_spec *sp = &r->c->spec;

	if (sh->n == sh->cap) {
		sh->cap = sh->cap ? 2 * sh->cap : 8;
		sh->r = reallocarray(sh->r, sh->cap, sizeof(*sh->r));
		sh->want = reallocarray(sh->want, sh->cap, sizeof(*sh->want));
		if (!sh->r || !sh->want)
			die("out of memory");
	}
	sh->r[sh->n] = *r;
	sh->want[sh->n++] = NULL;
	/* Whole members: no thread's runs to narrow them to. */
	sh->what |= r->what & ~(SCAN_RUNS | SCAN_NAMED);
	/* A reader of no events (lost) names none, whatever its cursor's spec. */
	if (!(r->what & SCAN_EVENTS))
		return;
	/* Every event if one reader reads them all, else the readers' names. */
	if (!sp->names_set || !sh->rd.names_set) {
		free(sh->rd.names);
		sh->rd.names = NULL;
		sh->rd.nr_names = 0;
		sh->rd.names_set = false;
		return;
	}
	sh->rd.names = reallocarray(sh->rd.names, sh->rd.nr_names + sp->nr_names + 1,
				    sizeof(*sh->rd.names));
	if (!sh->rd.names)
		die("out of memory");
	/* The strings are the cursor's: it outlives the share. */
	for (unsigned int j = 0; j < sp->nr_names; j++)
		sh->rd.names[sh->rd.nr_names++] = sp->names[j];
}

/* Member @m's read opened, each reader's events there noted, each told. */
static void member_open(struct share *sh, unsigned int m)
{
	const struct rt_metadata *md = sh->c->db->ts->m[m].t->md;

	memset(sh->rd_members, 0, sh->c->db->ts->nr * sizeof(*sh->rd_members));
	sh->rd_members[m] = true;
	sh->md = md;
	sh->scan = scan_open_spec(sh->c, sh->what, &sh->rd);
	for (unsigned int k = 0; k < sh->n; k++) {
		free(sh->want[k]);
		sh->want[k] = calloc(md->nr_events + 1, sizeof(**sh->want));
		if (!sh->want[k])
			die("out of memory");
		for (unsigned int e = 0; e < md->nr_events; e++)
			sh->want[k][e] = sql_spec_name(&sh->r[k].c->spec, md->events[e].name);
		if (sh->r[k].start)
			sh->r[k].start(sh->r[k].arg, m, sh->scan);
	}
}

/* Whether reader @k's own scan would have given row @r (scan_next()'s rules). */
static bool keeps(const struct share *sh, unsigned int k, const struct scan_row *r)
{
	unsigned int what = sh->r[k].what;

	if (r->pair)
		return what & SCAN_STACKS;
	if (r->gap)
		return what & SCAN_GAPS;
	if (!r->it)
		return what & SCAN_MEMBER_END;
	if (r->it->type == RT_ITEM_LOST)
		return what & SCAN_LOSSES;
	return (what & SCAN_EVENTS) && sh->want[k][r->it->event - sh->md->events];
}

int share_read(struct share *sh)
{
	for (;;) {
		struct scan_row r;
		bool ready = false;
		int rc;

		if (sh->done)
			return 0;
		if (!sh->scan) {
			/*
			 * No next member while a reader holds rows fed: the
			 * thread index's holds one member's tables, which the
			 * next member's end would overwrite.
			 */
			for (unsigned int k = 0; k < sh->n; k++)
				if (sh->r[k].ready(sh->r[k].arg))
					return 1;
			if (sh->next >= sh->c->db->ts->nr) {
				sh->done = true;
				for (unsigned int k = 0; k < sh->n; k++)
					sh->r[k].done(sh->r[k].arg);
				return 0;
			}
			member_open(sh, sh->next++);
			continue;
		}
		rc = scan_next(sh->scan, &r);
		if (rc < 0)
			return -1;
		if (!rc) {
			for (unsigned int k = 0; k < sh->n; k++)
				if (sh->r[k].end)
					sh->r[k].end(sh->r[k].arg);
			scan_close(sh->scan);
			sh->scan = NULL;
			return 1;
		}
		for (unsigned int k = 0; k < sh->n; k++) {
			struct scan_row own = r;

			if (!keeps(sh, k, &r))
				continue;
			/* Threads are followed for all; the owner is the reader's if it asked. */
			if (!(sh->r[k].what & SCAN_THREADS))
				own.tid = -1;
			sh->r[k].feed(sh->r[k].arg, &own);
			ready |= sh->r[k].ready(sh->r[k].arg);
		}
		if (ready)
			return 1;
	}
}

/* ---- a table whose rows are the scan's --------------------------------------------------- */

static void rows_feed(void *arg, const struct scan_row *row)
{
	struct share_rows *sr = arg;

	*sr->row = *row;
	sr->pending = true;
}

static void rows_done(void *arg)
{
	((struct share_rows *)arg)->done = true;
}

static bool rows_ready(void *arg)
{
	return ((struct share_rows *)arg)->pending;
}

void share_rows_reader(struct share_rows *sr, struct scan_row *row, struct sql_cursor *c,
		       unsigned int what, struct share_reader *r)
{
	*sr = (struct share_rows){ .row = row, .fed = true };
	*r = (struct share_reader){
		.c = c, .what = what, .arg = sr,
		.feed = rows_feed, .done = rows_done,
		.ready = rows_ready,
	};
}

int share_rows_next(struct share_rows *sr, struct scan *own, struct scan_row *row)
{
	if (!sr->fed)
		return scan_next(own, row);
	if (sr->pending) {
		sr->pending = false;
		return 1;
	}
	return sr->done ? 0 : SQL_WAIT;
}

void share_close(struct share *sh)
{
	if (!sh)
		return;
	scan_close(sh->scan);
	for (unsigned int k = 0; k < sh->n; k++)
		free(sh->want[k]);
	free(sh->want);
	free(sh->r);
	free(sh->rd.names);
	free(sh->rd_members);
	free(sh);
}
