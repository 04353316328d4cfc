// SPDX-License-Identifier: GPL-2.0
/*
 * A statement's rows printed (sql.h), streamed whatever their number:
 *   table  columns aligned to the widest value of the first 1000 rows
 *          (later rows keep those widths, a longer value pushes its line),
 *          numbers to the right, NULL as "NULL";
 *   csv    RFC 4180: a header line, a field quoted when it holds a comma,
 *          a quote or a line break (quotes doubled), NULL as empty;
 *   json   an array of objects, one per row, column names as keys,
 *          integers and reals as numbers, NULL as null, blobs as hex.
 * Each statement that returns columns prints its own header or array.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sql.h"

#define TABLE_PROBE	1000

struct out {
	enum out_mode mode;
	FILE *f;
	unsigned int statements;	/* printed so far */
	/* table: the first rows, kept to size the columns */
	char **cells;
	bool *right;
	size_t nr_cells, cap_cells;
	int *width;
	struct buf row;			/* json: the row being made */
};

struct out *out_new(enum out_mode mode, FILE *f)
{
	struct out *o = calloc(1, sizeof(*o));

	if (!o)
		die("out of memory");
	o->mode = mode;
	o->f = f;
	return o;
}

void out_free(struct out *o)
{
	free(o->cells);
	free(o->right);
	free(o->row.p);
	free(o);
}

void sql_json_text(struct buf *b, const uint8_t *s, size_t len)
{
	size_t plain = 0;		/* where the run of bytes kept as they are began */
	size_t i;

	buf_u8(b, '"');
	for (i = 0; i < len && s[i]; i++) {
		uint8_t c = s[i];
		char esc[8];

		if (c != '"' && c != '\\' && c >= 0x20 && c != 0x7f)
			continue;
		buf_add(b, s + plain, i - plain);
		plain = i + 1;
		if (c == '"' || c == '\\')
			snprintf(esc, sizeof(esc), "\\%c", c);
		else if (c == '\n')
			strcpy(esc, "\\n");
		else if (c == '\t')
			strcpy(esc, "\\t");
		else
			snprintf(esc, sizeof(esc), "\\u%04x", c);
		buf_add(b, esc, strlen(esc));
	}
	buf_add(b, s + plain, i - plain);
	buf_u8(b, '"');
}

/* Column @i of the row as text for the table and CSV: NULL as @null. */
static char *cell_text(sqlite3_stmt *st, int i, const char *null)
{
	const unsigned char *t;
	sqlite3_str *b;
	char *s;

	switch (sqlite3_column_type(st, i)) {
	case SQLITE_NULL:
		s = sqlite3_mprintf("%s", null);
		break;
	case SQLITE_BLOB:
		b = sqlite3_str_new(NULL);
		for (int k = 0; k < sqlite3_column_bytes(st, i); k++)
			sqlite3_str_appendf(b, "%02x",
					    ((const uint8_t *)sqlite3_column_blob(st, i))[k]);
		/* An empty blob is "": sqlite3_str_finish() of nothing is NULL. */
		sqlite3_str_appendchar(b, 1, '\0');
		s = sqlite3_str_finish(b);
		break;
	default:
		t = sqlite3_column_text(st, i);
		s = sqlite3_mprintf("%s", t ? (const char *)t : "");
	}
	if (!s)
		die("out of memory");
	return s;
}

static void csv_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void csv_row(struct out *o, sqlite3_stmt *st, bool header)
{
	for (int i = 0; i < sqlite3_column_count(st); i++) {
		char *s = header ? NULL : cell_text(st, i, "");

		if (i)
			fputc(',', o->f);
		csv_field(o->f, header ? sqlite3_column_name(st, i) : s);
		sqlite3_free(s);
	}
	fputs("\r\n", o->f);
}

static void buf_text(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

static void json_row(struct out *o, sqlite3_stmt *st, bool first)
{
	struct buf *b = &o->row;
	char num[40], *s;

	b->len = 0;
	buf_text(b, first ? "\n  {" : ",\n  {");
	for (int i = 0; i < sqlite3_column_count(st); i++) {
		double d;

		if (i)
			buf_text(b, ", ");
		sql_json_text(b, (const uint8_t *)sqlite3_column_name(st, i), SIZE_MAX);
		buf_text(b, ": ");
		switch (sqlite3_column_type(st, i)) {
		case SQLITE_NULL:
			buf_text(b, "null");
			break;
		case SQLITE_INTEGER:
			sqlite3_snprintf(sizeof(num), num, "%lld", sqlite3_column_int64(st, i));
			buf_text(b, num);
			break;
		case SQLITE_FLOAT:
			d = sqlite3_column_double(st, i);
			if (isfinite(d)) {
				sqlite3_snprintf(sizeof(num), num, "%!.17g", d);
				buf_text(b, num);
			} else {
				buf_text(b, "null");
			}
			break;
		case SQLITE_BLOB:
			s = cell_text(st, i, "");
			sql_json_text(b, (const uint8_t *)s, SIZE_MAX);
			sqlite3_free(s);
			break;
		default:
			sql_json_text(b, sqlite3_column_text(st, i),
				      (size_t)sqlite3_column_bytes(st, i));
		}
	}
	buf_u8(b, '}');
	fwrite(b->p, 1, b->len, o->f);
}

/* table: the kept rows' cells, or the header (@cells NULL) */
static void table_line(struct out *o, int n, char **cells, const bool *right,
		       sqlite3_stmt *st)
{
	for (int i = 0; i < n; i++) {
		const char *s = cells ? cells[i] : sqlite3_column_name(st, i);
		bool last = i == n - 1;

		if (right && right[i])
			fprintf(o->f, "%s%*s", i ? "  " : "", o->width[i], s);
		else
			fprintf(o->f, "%s%-*s", i ? "  " : "", last ? 0 : o->width[i], s);
	}
	fputc('\n', o->f);
}

static void table_flush(struct out *o, int n, sqlite3_stmt *st)
{
	table_line(o, n, NULL, NULL, st);
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < o->width[i]; k++)
			fputc('-', o->f);
		fputs(i == n - 1 ? "\n" : "  ", o->f);
	}
	for (size_t r = 0; r < o->nr_cells / (size_t)n; r++)
		table_line(o, n, &o->cells[r * n], &o->right[r * n], st);
	for (size_t i = 0; i < o->nr_cells; i++)
		sqlite3_free(o->cells[i]);
	o->nr_cells = 0;
}

static void table_row(struct out *o, sqlite3_stmt *st, int n, size_t row)
{
	bool keep = row < TABLE_PROBE;
	char *line[n ? n : 1];
	bool right[n ? n : 1];

	for (int i = 0; i < n; i++) {
		int type = sqlite3_column_type(st, i);
		int w;

		line[i] = cell_text(st, i, "NULL");
		right[i] = type == SQLITE_INTEGER || type == SQLITE_FLOAT;
		w = (int)strlen(line[i]);
		if (keep && w > o->width[i])
			o->width[i] = w;
	}
	if (!keep) {
		table_line(o, n, line, right, st);
		for (int i = 0; i < n; i++)
			sqlite3_free(line[i]);
		return;
	}
	if (o->nr_cells + (size_t)n > o->cap_cells) {
		o->cap_cells = 2 * o->cap_cells + (size_t)n;
		o->cells = realloc(o->cells, o->cap_cells * sizeof(*o->cells));
		o->right = realloc(o->right, o->cap_cells * sizeof(*o->right));
		if (!o->cells || !o->right)
			die("out of memory");
	}
	memcpy(&o->cells[o->nr_cells], line, (size_t)n * sizeof(*line));
	memcpy(&o->right[o->nr_cells], right, (size_t)n * sizeof(*right));
	o->nr_cells += (size_t)n;
}

int out_statement(struct out *o, sqlite3_stmt *st)
{
	int n = sqlite3_column_count(st), rc;
	size_t rows = 0;

	if (n) {
		o->width = calloc((size_t)n, sizeof(*o->width));
		if (!o->width)
			die("out of memory");
		for (int i = 0; i < n; i++)
			o->width[i] = (int)strlen(sqlite3_column_name(st, i));
		if (o->mode == OUT_TABLE && o->statements)
			fputc('\n', o->f);
		if (o->mode == OUT_JSON)
			fputc('[', o->f);
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (o->mode == OUT_CSV) {
			if (!rows)
				csv_row(o, st, true);
			csv_row(o, st, false);
		} else if (o->mode == OUT_JSON) {
			json_row(o, st, !rows);
		} else {
			table_row(o, st, n, rows);
			if (rows + 1 == TABLE_PROBE)
				table_flush(o, n, st);
		}
		rows++;
	}
	if (n) {
		if (o->mode == OUT_TABLE && rows < TABLE_PROBE)
			table_flush(o, n, st);
		if (o->mode == OUT_CSV && !rows)
			csv_row(o, st, true);
		if (o->mode == OUT_JSON)
			fputs(rows ? "\n]\n" : "]\n", o->f);
		o->statements++;
		free(o->width);
		o->width = NULL;
	}
	/* What stays kept after an error. */
	for (size_t i = 0; i < o->nr_cells; i++)
		sqlite3_free(o->cells[i]);
	o->nr_cells = 0;
	return rc;
}
