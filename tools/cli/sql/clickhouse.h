/* SPDX-License-Identifier: GPL-2.0 */
/* A ClickHouse server over HTTP (clickhouse.c): ship's and sql --clickhouse's. */
#ifndef RINGTRACE_SQL_CLICKHOUSE_H
#define RINGTRACE_SQL_CLICKHOUSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "sql.h"

/* Little-endian, as RowBinary's numbers are. */
void buf_le(struct buf *b, uint64_t v, unsigned int bytes);
/* RowBinary's String: LEB128 length, the bytes. */
void buf_str(struct buf *b, const void *s, size_t len);

/*
 * How ch_insert() compresses its bodies (ship --compress): ClickHouse's
 * native compressed blocks of LZ4 or zstd (the URL's decompress=1), gzip
 * (Content-Encoding, the only encodings 18.16's HTTP interface takes being
 * gzip and deflate), or none.
 */
enum ch_wire { CH_WIRE_LZ4, CH_WIRE_ZSTD, CH_WIRE_GZIP, CH_WIRE_NONE };
#define CH_WIRE_NR	(CH_WIRE_NONE + 1)

/* The names --compress takes, by enum ch_wire. */
extern const char *const ch_wire_names[CH_WIRE_NR];

struct ch {
	CURL *curl;
	const char *url;
	char *shown;			/* url without user:password@, for messages */
	const char *db;
	enum ch_wire wire;		/* ch_insert()'s compression */
	struct buf answer;
	struct buf body;		/* ch_insert()'s compressed body, reused */
	void *zstd;			/* ZSTD_CCtx, made at the first zstd insert */
	uint64_t sent;			/* ch_insert()'s bodies as sent, bytes */
	uint64_t sent_raw;		/* the same before compression */
};

/* libcurl set up for @ch->url (user and password: NULL for none). */
void ch_open(struct ch *ch, const char *user, const char *password);
void ch_close(struct ch *ch);
/* A database name ship and sql accept: letters, digits, '_'. */
bool ch_is_name(const char *s);
/* A statement (the POST's body): 0 with the answer in ch->answer (NUL-ended), or -1 said. */
int ch_run(struct ch *ch, const char *sql);
/* The server's answer as one line: its first line, trimmed. */
const char *answer_line(struct ch *ch);
/* A statement whose answer is one number: 0 with *@v, or -1 said. */
int ch_count(struct ch *ch, const char *sql, uint64_t *v);
/* INSERT INTO db.@table FORMAT RowBinary, @b's rows compressed by ch->wire: 0 or -1 said. */
int ch_insert(struct ch *ch, const char *table, const struct buf *b);

#endif
