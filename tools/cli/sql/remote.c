// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace sql --clickhouse URL: statements run on a ClickHouse server
 * (clickhouse.c), printed by out.c's printers.  Each statement is sent
 * alone with default_format=TabSeparatedWithNamesAndTypes; its answer
 * (names, types, rows) goes into a table of an in-memory SQLite database,
 * each value as the type ClickHouse gave it (integers as INTEGER, floats
 * as REAL, NULL as NULL, anything else as TEXT), and `SELECT c1 AS name1,
 * ...` of it is what out_statement() prints: the same table, CSV and JSON
 * as sql on a trace, a column's alignment and JSON type by its values'.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse.h"

/* TabSeparated's escapes undone in place (\b \f \r \n \t \0 \' \\). */
static size_t unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (*r != '\\' || !r[1]) {
			*w++ = *r;
			continue;
		}
		switch (*++r) {
		case 'b': *w++ = '\b'; break;
		case 'f': *w++ = '\f'; break;
		case 'r': *w++ = '\r'; break;
		case 'n': *w++ = '\n'; break;
		case 't': *w++ = '\t'; break;
		case '0': *w++ = '\0'; break;
		default: *w++ = *r;
		}
	}
	*w = 0;
	return (size_t)(w - s);
}

/* The next TAB- or line-ended field of *@p, NUL-ended in place. */
static char *field(char **p)
{
	char *f = *p, *end = f + strcspn(f, "\t\n");

	*p = *end ? end + 1 : end;
	*end = 0;
	return f;
}

enum kind { K_INT, K_REAL, K_TEXT };

/* A ClickHouse type's kind: Nullable(T) is T's. */
static enum kind type_kind(const char *t)
{
	if (!strncmp(t, "Nullable(", 9))
		t += 9;
	if (!strncmp(t, "Int", 3) || (!strncmp(t, "UInt", 4) && strncmp(t, "UInt64", 6)))
		return K_INT;
	if (!strncmp(t, "UInt64", 6))
		return K_INT;		/* above INT64_MAX: bound as text */
	if (!strncmp(t, "Float", 5))
		return K_REAL;
	return K_TEXT;
}

/* One value of a row into parameter @i of @ins. */
static void bind_value(sqlite3_stmt *ins, int i, char *v, enum kind k)
{
	char *end;
	size_t len;

	if (!strcmp(v, "\\N")) {
		sqlite3_bind_null(ins, i);
		return;
	}
	len = unescape(v);
	errno = 0;
	if (k == K_INT) {
		long long n = strtoll(v, &end, 10);

		if (!errno && end != v && !*end) {
			sqlite3_bind_int64(ins, i, n);
			return;
		}
	} else if (k == K_REAL) {
		double d = strtod(v, &end);

		if (!errno && end != v && !*end) {
			sqlite3_bind_double(ins, i, d);
			return;
		}
	}
	sqlite3_bind_text(ins, i, v, (int)len, SQLITE_TRANSIENT);
}

/*
 * The answer @text (TabSeparatedWithNamesAndTypes) printed by @o through
 * @mem: 0, or -1 said.
 */
static int print_answer(sqlite3 *mem, struct out *o, char *text, const char *shown)
{
	char *names = text, *types, *p, *row, *sql;
	sqlite3_str *create, *select, *insert;
	sqlite3_stmt *ins = NULL, *st = NULL;
	enum kind *kinds;
	int n = 0, n_types = 0, rc = -1;
	bool good = true;

	if (!*text)			/* a statement without rows */
		return 0;
	p = strchr(names, '\n');
	types = p ? p + 1 : NULL;
	if (!types || !strchr(types, '\n')) {
		error_line("%s: the answer is not TabSeparatedWithNamesAndTypes (a FORMAT "
			   "clause in the statement?)", shown);
		return -1;
	}
	for (p = names; *p != '\n'; p++)
		n += *p == '\t';
	n++;
	/* As many types as names, each a type's name (Nullable(String), UInt64). */
	for (p = types; *p != '\n' && good; p++)
		if (*p == '\t') {
			good = p[1] >= 'A' && p[1] <= 'Z';
			n_types++;
		}
	if (!good || n_types + 1 != n || *types < 'A' || *types > 'Z') {
		error_line("%s: the answer is not TabSeparatedWithNamesAndTypes (a FORMAT "
			   "clause in the statement?)", shown);
		return -1;
	}
	kinds = calloc((size_t)n, sizeof(*kinds));
	if (!kinds)
		die("out of memory");
	create = sqlite3_str_new(NULL);
	select = sqlite3_str_new(NULL);
	insert = sqlite3_str_new(NULL);
	sqlite3_str_appendall(create, "CREATE TABLE r (");
	sqlite3_str_appendall(select, "SELECT ");
	sqlite3_str_appendall(insert, "INSERT INTO r VALUES (");
	p = names;
	row = strchr(types, '\n') + 1;
	for (int i = 0; i < n; i++) {
		char *name = field(&p);

		unescape(name);
		sqlite3_str_appendf(create, "%sc%d", i ? ", " : "", i);
		sqlite3_str_appendf(select, "%sc%d AS \"%w\"", i ? ", " : "", i, name);
		sqlite3_str_appendf(insert, "%s?", i ? ", " : "");
	}
	p = types;
	for (int i = 0; i < n; i++)
		kinds[i] = type_kind(field(&p));
	sqlite3_str_appendall(create, ")");
	sqlite3_str_appendall(select, " FROM r ORDER BY rowid");
	sqlite3_str_appendall(insert, ")");
	sql = sqlite3_str_finish(create);
	if (!sql || sqlite3_exec(mem, "DROP TABLE IF EXISTS r", NULL, NULL, NULL) ||
	    sqlite3_exec(mem, sql, NULL, NULL, NULL))
		die("sqlite: %s", sqlite3_errmsg(mem));
	sqlite3_free(sql);
	sql = sqlite3_str_finish(insert);
	if (!sql || sqlite3_prepare_v2(mem, sql, -1, &ins, NULL))
		die("sqlite: %s", sqlite3_errmsg(mem));
	sqlite3_free(sql);
	sqlite3_exec(mem, "BEGIN", NULL, NULL, NULL);
	for (p = row; *p; ) {
		for (int i = 0; i < n; i++)
			bind_value(ins, i + 1, field(&p), kinds[i]);
		if (sqlite3_step(ins) != SQLITE_DONE)
			die("sqlite: %s", sqlite3_errmsg(mem));
		sqlite3_reset(ins);
	}
	sqlite3_exec(mem, "COMMIT", NULL, NULL, NULL);
	sql = sqlite3_str_finish(select);
	if (!sql || sqlite3_prepare_v2(mem, sql, -1, &st, NULL))
		die("sqlite: %s", sqlite3_errmsg(mem));
	sqlite3_free(sql);
	if (out_statement(o, st) == SQLITE_DONE)
		rc = 0;
	else
		error_line("%s", sqlite3_errmsg(mem));
	sqlite3_finalize(st);
	sqlite3_finalize(ins);
	free(kinds);
	return rc;
}

/* The end of the statement at @s: its ';' outside quotes, or its NUL. */
static const char *statement_end(const char *s)
{
	char quote = 0;

	for (; *s; s++) {
		if (quote) {
			if (*s == '\\' && s[1])
				s++;
			else if (*s == quote)
				quote = 0;
		} else if (*s == '\'' || *s == '"' || *s == '`') {
			quote = *s;
		} else if (*s == '-' && s[1] == '-') {
			s += strcspn(s, "\n");
			if (!*s)
				break;
		} else if (*s == ';') {
			break;
		}
	}
	return s;
}

/* Only white space and -- comments: no statement. */
static bool blank(const char *s)
{
	for (;;) {
		s += strspn(s, " \t\r\n");
		if (s[0] != '-' || s[1] != '-')
			return !*s;
		s += strcspn(s, "\n");
	}
}

int sql_clickhouse(struct ch *ch, struct out *o, const char *text)
{
	sqlite3 *mem;
	int status = 0;

	if (sqlite3_open(":memory:", &mem) != SQLITE_OK)
		die("sqlite: cannot open a database in memory");
	while (*text && !status) {
		const char *end = statement_end(text);
		char *one = strndup(text, (size_t)(end - text));

		if (!one)
			die("out of memory");
		text = *end ? end + 1 : end;
		if (!blank(one)) {
			if (ch_run(ch, one) ||
			    print_answer(mem, o, (char *)ch->answer.p, ch->shown))
				status = 1;
		}
		free(one);
	}
	sqlite3_close(mem);
	return status;
}
