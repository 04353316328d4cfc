// SPDX-License-Identifier: GPL-2.0
/*
 * The queries shipped with ringtrace sql (--list prints them, -q NAME
 * runs one, --stat runs report --stat's in its order): plain SQL over the
 * tables, for a user to copy and change.  Times are printed in us with
 * report's arithmetic and rounding (ns * 1e6 / 1e9, C's %.1f/%.2f),
 * so on a trace of a 1 GHz clock (ringtrace's) the numbers are report's
 * to the last digit.  fixed() is this file's SQL function for that.
 */
#include <stdio.h>
#include <string.h>

#include "sql.h"

/*
 * fixed(X, N): X with N decimals as report prints it (C's %.*f: the
 * binary value rounded, 111.065 -> "111.06"); SQLite's printf rounds its
 * decimal digits instead (-> "111.07").  NULL for a NULL X.
 */
static void fixed(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	int n = sqlite3_value_int(argv[1]);
	char buf[400];

	(void)argc;
	if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
		sqlite3_result_null(ctx);
		return;
	}
	if (n < 0 || n > 20) {
		sqlite3_result_error(ctx, "fixed(): decimals are 0 to 20", -1);
		return;
	}
	snprintf(buf, sizeof(buf), "%.*f", n, sqlite3_value_double(argv[0]));
	sqlite3_result_text(ctx, buf, -1, SQLITE_TRANSIENT);
}

/*
 * slice, trace_processor's shape (ts, dur, name, category, depth) over the
 * span tables: a view, so SQLite hands each arm of the UNION ALL the terms
 * of a WHERE on it (cpu = 1 reaches irq's and softirq's xFilter).
 */
static const char slice_view[] =
	"CREATE TEMP VIEW slice AS\n"
	"SELECT ts, dur, name, 'syscall' AS category, 0 AS depth, utid, cpu, trace, host\n"
	"FROM syscall\n"
	"UNION ALL SELECT ts, dur, name, 'irq', depth, utid, cpu, trace, host FROM irq\n"
	"UNION ALL SELECT ts, dur, name, 'softirq', depth, utid, cpu, trace, host FROM softirq";

int sql_functions_register(sqlite3 *db)
{
	int rc = sqlite3_create_function(db, "fixed", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC |
					 SQLITE_INNOCUOUS, NULL, fixed, NULL, NULL);

	return rc != SQLITE_OK ? rc : sqlite3_exec(db, slice_view, NULL, NULL, NULL);
}

/* A syscall summary ranked by @order (count, or total latency). */
#define SYSCALLS(order)							\
	"SELECT name AS syscall, count(*) AS count,\n"			\
	"       fixed(sum(dur) * 1e6 / 1e9, 1) AS total_us,\n"	\
	"       fixed(sum(dur) * 1e6 / 1e9 / count(*), 2) AS avg_us,\n" \
	"       fixed(max(dur) * 1e6 / 1e9, 2) AS max_us\n"	\
	"FROM syscall WHERE dur IS NOT NULL\n"				\
	"GROUP BY id ORDER BY " order " DESC, id LIMIT 25;\n"

/*
 * Percentile @p (a real: 50.0, not 50, or / 100 divides integers) of l's
 * latencies: rank ceil(p / 100 * n), report's rule, its arithmetic.
 */
#define PCT(p, col)							\
	"       fixed(max(CASE WHEN rn = max(1, ceil(" p " / 100 * n))\n" \
	"                          THEN latency END) * 1e6 / 1e9, 2) AS " col

/*
 * ClickHouse's fixed(X, N) (18.16 has no printf, and round() rounds X
 * times 10^N, not X): k = floor(X * 10^N) and k + 1 are the candidates,
 * k + 1 when X * 2 * 10^N >= 2k + 1 exactly, told by the product's exact
 * error (Dekker: X split in halves by Veltkamp's 2^27 + 1, 2 * 10^N has
 * few bits), a tie to even as C's %.*f.  Checked equal to C's on 1.2
 * million values, ties included.  X is computed as report computes it
 * (the same IEEE operations in the same order), so the strings agree.
 */
#define CH_FIXED(x, c10, c2)						\
	"arrayMap(x -> arrayMap(k -> arrayMap(s -> concat(toString(intDiv(k + " \
	"(s > 0 OR (s = 0 AND k % 2 = 1)), " c10 ")), '.', substring(toString((k + " \
	"(s > 0 OR (s = 0 AND k % 2 = 1))) % " c10 " + " c10 "), 2)), [((x * " c2 \
	") - (2 * k + 1)) + ((((x * 134217729) - ((x * 134217729) - x)) * " c2 \
	" - x * " c2 ") + (x - ((x * 134217729) - ((x * 134217729) - x))) * " c2 \
	")])[1], [toInt64(floor(x * " c10 "))])[1], [toFloat64(assumeNotNull(" x \
	"))])[1]"
#define CH_FIXED1(x)	CH_FIXED(x, "10", "20")
#define CH_FIXED2(x)	CH_FIXED(x, "100", "200")
#define CH_FIXED3(x)	CH_FIXED(x, "1000", "2000")

/* SYSCALLS on the shipped syscall table. */
#define CH_SYSCALLS(order)						\
	"SELECT any(name) AS syscall, count() AS count,\n"		\
	"       " CH_FIXED1("sum(dur) * 1e6 / 1e9") " AS total_us,\n"	\
	"       " CH_FIXED2("sum(dur) * 1e6 / 1e9 / count()") " AS avg_us,\n" \
	"       " CH_FIXED2("max(dur) * 1e6 / 1e9") " AS max_us\n"	\
	"FROM syscall WHERE dur IS NOT NULL\n"				\
	"GROUP BY id ORDER BY " order " DESC, id LIMIT 25\n"

/* Percentile @p of the sorted latencies a (n of them): report's rank. */
#define CH_PCT(p, col)							\
	"       " CH_FIXED2("a[toUInt64(greatest(1, ceil(" p " / 100 * n)))] * 1e6 / 1e9") \
	" AS " col

static const struct sql_query queries[] = {
	{
		.name = "events",
		.what = "events by name and CPU (report --stat's first table)",
		.stat = true,
		.sql = "SELECT name, cpu, count FROM event_count;\n",
		/* The metadata's order of names is not shipped: by name. */
		.clickhouse = "SELECT name, cpu, count() AS count FROM raw\n"
			      "GROUP BY name, cpu ORDER BY name, cpu\n",
	},
	{
		.name = "losses",
		.what = "events and packets lost, damaged places, per CPU that lost any",
		.stat = true,
		.sql =
"SELECT cpu, sum(events) AS events_lost, sum(packets) AS packets_lost,\n"
"       sum(damaged) AS damaged\n"
"FROM lost WHERE cpu IS NOT NULL GROUP BY cpu ORDER BY cpu;\n",
		.clickhouse =
"SELECT cpu, sum(events) AS events_lost, sum(packets) AS packets_lost,\n"
"       sum(damaged) AS damaged\n"
"FROM lost WHERE cpu IS NOT NULL GROUP BY cpu ORDER BY cpu\n",
	},
	{
		.name = "syscalls_by_count",
		.what = "system calls by count (entry to exit of the same thread)",
		.stat = true,
		.sql = SYSCALLS("count(*)"),
		.clickhouse = CH_SYSCALLS("count()"),
	},
	{
		.name = "syscalls_by_total",
		.what = "system calls by total latency",
		.stat = true,
		.sql = SYSCALLS("sum(dur)"),
		.clickhouse = CH_SYSCALLS("sum(dur)"),
	},
	{
		.name = "threads_on_cpu",
		.what = "threads by on-CPU time (thread_state Running; switches in)",
		.stat = true,
		/*
		 * report's order (most first, ties by tid), its top 25, idle
		 * left out; switches counts every sched_switch to the thread.
		 * MATERIALIZED: the joins then look rows up in SQLite's own
		 * tables, not by scanning the trace again per row.
		 */
		.sql =
"WITH run AS MATERIALIZED (\n"
"  SELECT utid, sum(dur) AS d FROM thread_state\n"
"  WHERE state = 'Running' AND utid & 0xffffffff > 0 GROUP BY utid),\n"
"sw AS MATERIALIZED (\n"
"  SELECT trace << 32 | json_extract(args, '$.next_tid') AS utid, count(*) AS n\n"
"  FROM raw WHERE name = 'sched_switch' GROUP BY 1),\n"
"t AS MATERIALIZED (SELECT utid, name, upid, cgroup FROM thread)\n"
"SELECT coalesce(t.name, '<...>') AS comm, t.cgroup, run.utid & 0xffffffff AS tid,\n"
"       t.upid & 0xffffffff AS pid, fixed(run.d * 1e6 / 1e9 / 1e3, 3) AS on_cpu_ms,\n"
"       coalesce(sw.n, 0) AS switches\n"
"FROM run LEFT JOIN t USING (utid) LEFT JOIN sw USING (utid)\n"
"WHERE run.d > 0 ORDER BY run.d DESC, tid LIMIT 25;\n",
		/*
		 * A thread is (host, boot_id, utid) across a fleet; its
		 * thread row any of its sets' (the same name, pid, cgroup).
		 */
		.clickhouse =
"SELECT ifNull(name, '<...>') AS comm, cgroup, bitAnd(utid, 4294967295) AS tid,\n"
"       bitAnd(upid, 4294967295) AS pid, " CH_FIXED3("d * 1e6 / 1e9 / 1e3") " AS on_cpu_ms,\n"
"       ifNull(n, 0) AS switches\n"
"FROM (SELECT * FROM\n"
"        (SELECT host, boot_id, utid, sum(dur) AS d FROM thread_state\n"
"         WHERE state = 'Running' AND bitAnd(utid, 4294967295) > 0\n"
"         GROUP BY host, boot_id, utid)\n"
"      ANY LEFT JOIN\n"
"        (SELECT host, boot_id, utid, any(name) AS name, any(upid) AS upid,\n"
"                any(cgroup) AS cgroup FROM thread GROUP BY host, boot_id, utid)\n"
"      USING (host, boot_id, utid))\n"
"ANY LEFT JOIN\n"
"  (SELECT host, boot_id,\n"
"          toNullable(bitOr(bitShiftLeft(bitShiftRight(assumeNotNull(utid), 32), 32),\n"
"                 visitParamExtractInt(args, 'next_tid'))) AS utid,\n"
"          toNullable(count()) AS n FROM raw WHERE name = 'sched_switch'\n"
"   GROUP BY host, boot_id, utid)\n"
"USING (host, boot_id, utid)\n"
"WHERE d > 0 ORDER BY d DESC, tid LIMIT 25\n",
	},
	{
		.name = "wakeup_latency",
		.what = "wakeup to run latency percentiles (sched_wakeup to the switch in)",
		.stat = true,
		.sql =
"WITH l AS MATERIALIZED (\n"
"  SELECT latency, row_number() OVER (ORDER BY latency) AS rn,\n"
"         count(*) OVER () AS n\n"
"  FROM wakeup WHERE latency IS NOT NULL)\n"
"SELECT count(*) AS samples,\n"
PCT("50.0", "p50_us") ",\n"
PCT("90.0", "p90_us") ",\n"
PCT("99.0", "p99_us") ",\n"
PCT("99.9", "p99_9_us") ",\n"
PCT("100.0", "p100_us") "\n"
"FROM l HAVING count(*) > 0;\n",
		.clickhouse =
"SELECT n AS samples,\n"
CH_PCT("50.0", "p50_us") ",\n"
CH_PCT("90.0", "p90_us") ",\n"
CH_PCT("99.0", "p99_us") ",\n"
CH_PCT("99.9", "p99_9_us") ",\n"
CH_PCT("100.0", "p100_us") "\n"
"FROM (SELECT arraySort(groupArray(assumeNotNull(latency))) AS a, count() AS n\n"
"      FROM wakeup WHERE latency IS NOT NULL)\n"
"WHERE n > 0\n",
	},
	{
		.name = "irqs",
		.what = "interrupt handlers and softirqs by count, total and max time",
		.sql =
"SELECT 'irq' AS kind, irq AS number, name, count(*) AS count,\n"
"       fixed(sum(dur) * 1e6 / 1e9, 1) AS total_us,\n"
"       fixed(max(dur) * 1e6 / 1e9, 2) AS max_us\n"
"FROM irq GROUP BY irq, name\n"
"UNION ALL\n"
"SELECT 'softirq', vec, name, count(*), fixed(sum(dur) * 1e6 / 1e9, 1),\n"
"       fixed(max(dur) * 1e6 / 1e9, 2)\n"
"FROM softirq GROUP BY vec, name\n"
"ORDER BY count DESC;\n",
	},
	{
		.name = "top_functions",
		.what = "functions by the stacks they are innermost in (self), then in at all (total)",
		.stat = true,
		/*
		 * report --stat's: a function counts once per stack however
		 * often it recurs; self only for the innermost frame (depth
		 * 0), if resolved; its top 20.
		 */
		.sql =
"WITH s AS MATERIALIZED (\n"
"  SELECT trace, stack_id, count(*) AS n FROM sample\n"
"  WHERE stack_id IS NOT NULL GROUP BY trace, stack_id),\n"
"f AS MATERIALIZED (\n"
"  SELECT trace, frame_id, symbol FROM frame WHERE symbol IS NOT NULL),\n"
"k AS MATERIALIZED (\n"
"  SELECT trace, stack_id, frame_id, depth FROM stack),\n"
"per AS (\n"
"  SELECT k.trace, k.stack_id, f.symbol, max(k.depth = 0) AS leaf\n"
"  FROM k JOIN f ON f.trace = k.trace AND f.frame_id = k.frame_id\n"
"  GROUP BY k.trace, k.stack_id, f.symbol)\n"
"SELECT sum(CASE WHEN leaf THEN n ELSE 0 END) AS self, sum(n) AS total,\n"
"       symbol AS function\n"
"FROM per JOIN s ON s.trace = per.trace AND s.stack_id = per.stack_id\n"
"GROUP BY symbol ORDER BY self DESC, total DESC, function LIMIT 20;\n",
	},
};

const struct sql_query *sql_queries(unsigned int *n)
{
	*n = ARRAY_SIZE(queries);
	return queries;
}

const struct sql_query *sql_query_find(const char *name)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(queries); i++)
		if (!strcmp(queries[i].name, name))
			return &queries[i];
	return NULL;
}
