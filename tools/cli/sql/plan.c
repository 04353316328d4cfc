// SPDX-License-Identifier: GPL-2.0
/*
 * The constraints SQLite passes a table (sql.h).  Nothing is pushed down
 * yet: every table is read whole and SQLite checks every term; the plan
 * only tells the cursor which columns the statement reads.
 */
#include <stdlib.h>
#include <string.h>

#include "sql.h"

int sql_plan_best(const struct sql_table *t, sqlite3_index_info *info)
{
	(void)t;
	/* The columns the statement reads (xColumn is asked only for those). */
	info->idxNum = info->colUsed >> 30 ? 0x3fffffff : (int)info->colUsed;
	info->estimatedCost = 1e6;
	return SQLITE_OK;
}

void sql_spec_free(struct scan_spec *s)
{
	for (unsigned int i = 0; i < s->nr_names; i++)
		free(s->names[i]);
	free(s->names);
	free(s->cpus);
	free(s->members);
	memset(s, 0, sizeof(*s));
	s->limit = -1;
}

int sql_plan_spec(struct sql_cursor *c, int idx, const char *plan, int argc,
		  sqlite3_value **argv)
{
	(void)plan;
	(void)argc;
	(void)argv;
	sql_spec_free(&c->spec);
	c->col_used = (uint64_t)idx;
	return 0;
}

bool sql_spec_cpu(const struct scan_spec *s, int64_t cpu)
{
	if (!s->cpus_set)
		return true;
	for (unsigned int i = 0; i < s->nr_cpus; i++)
		if (s->cpus[i] == cpu)
			return true;
	return false;
}

bool sql_spec_name(const struct scan_spec *s, const char *name)
{
	if (!s->names_set)
		return true;
	for (unsigned int i = 0; i < s->nr_names; i++)
		if (!strcmp(s->names[i], name))
			return true;
	return false;
}

bool sql_spec_ts(const struct scan_spec *s, int64_t ts)
{
	return (!s->has_begin || ts >= s->begin) && (!s->has_end || ts <= s->end);
}
