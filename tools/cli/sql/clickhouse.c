// SPDX-License-Identifier: GPL-2.0
/*
 * A ClickHouse server over its HTTP interface (libcurl), for ship (its
 * inserts) and sql --clickhouse (its queries): a statement POSTed, the
 * answer kept; an HTTP status other than 200 is the server's error, its
 * first line said.  Credentials go as HTTP basic authentication; messages
 * show the URL without them.
 */
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include <zlib.h>

#include "clickhouse.h"

void buf_add(struct buf *b, const void *data, size_t len)
{
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;

		while (cap < b->len + len)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p)
			die("out of memory");
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
}

void buf_u8(struct buf *b, uint8_t v)
{
	buf_add(b, &v, 1);
}

/* Little-endian, as RowBinary's numbers are (x86 and arm64 alike). */
void buf_le(struct buf *b, uint64_t v, unsigned int bytes)
{
	uint8_t le[8];

	for (unsigned int i = 0; i < bytes; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	buf_add(b, le, bytes);
}

/* RowBinary's String: LEB128 length, the bytes. */
void buf_str(struct buf *b, const void *s, size_t len)
{
	size_t n = len;

	do {
		buf_u8(b, (uint8_t)((n & 0x7f) | (n > 0x7f ? 0x80 : 0)));
		n >>= 7;
	} while (n);
	buf_add(b, s, len);
}

static size_t on_answer(char *data, size_t size, size_t n, void *arg)
{
	buf_add(arg, data, size * n);
	return size * n;
}

/* The server's answer as one line: its first line, trimmed. */
const char *answer_line(struct ch *ch)
{
	char *s;
	size_t n;

	buf_u8(&ch->answer, 0);
	ch->answer.len--;
	s = (char *)ch->answer.p;
	n = strcspn(s, "\n");
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	s[n] = 0;
	return n ? s : "(no text)";
}

/*
 * A statement: @sql in the POST body, or with @body (@gz: gzip'd) in the
 * URL's query parameter.  0 with the answer in ch->answer (NUL-ended),
 * or -1 said.
 */
int ch_run(struct ch *ch, const char *sql, const void *body, size_t len, bool gz)
{
	struct curl_slist *hdrs = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	char *url = NULL, *esc = NULL;
	long code = 0;
	CURLcode rc;

	ch->answer.len = 0;
	if (body) {
		esc = curl_easy_escape(ch->curl, sql, 0);
		if (!esc || asprintf(&url, "%s%squery=%s", ch->url,
				     strchr(ch->url, '?') ? "&" : "?", esc) < 0)
			die("out of memory");
		curl_free(esc);
	} else {
		body = sql;
		len = strlen(sql);
	}
	if (gz)
		hdrs = curl_slist_append(hdrs, "Content-Encoding: gzip");
	hdrs = curl_slist_append(hdrs, "Content-Type: application/octet-stream");
	curl_easy_setopt(ch->curl, CURLOPT_URL, url ? url : ch->url);
	curl_easy_setopt(ch->curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(ch->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(ch->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(ch->curl, CURLOPT_ERRORBUFFER, errbuf);
	rc = curl_easy_perform(ch->curl);
	curl_slist_free_all(hdrs);
	free(url);
	if (rc != CURLE_OK) {
		error_line("%s: %s", ch->shown, *errbuf ? errbuf : curl_easy_strerror(rc));
		return -1;
	}
	curl_easy_getinfo(ch->curl, CURLINFO_RESPONSE_CODE, &code);
	if (code != 200) {
		error_line("%s: the server answered HTTP %ld: %s", ch->shown, code,
			   answer_line(ch));
		return -1;
	}
	buf_u8(&ch->answer, 0);
	ch->answer.len--;
	return 0;
}

/* A statement whose answer is one number: 0 with *@v, or -1 said. */
int ch_count(struct ch *ch, const char *sql, uint64_t *v)
{
	char *end;

	if (ch_run(ch, sql, NULL, 0, false))
		return -1;
	errno = 0;
	*v = strtoull((char *)ch->answer.p, &end, 10);
	if (errno || end == (char *)ch->answer.p || (*end && *end != '\n')) {
		error_line("%s: not a count: %s (for %s)", ch->shown, answer_line(ch), sql);
		return -1;
	}
	return 0;
}

/* INSERT INTO db.@table FORMAT RowBinary, @b's rows gzip'd: 0 or -1 said. */
int ch_insert(struct ch *ch, const char *table, const struct buf *b)
{
	z_stream z = { 0 };
	uint8_t *out;
	uLong cap;
	char *sql;
	int rc;

	if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		die("zlib: %s", z.msg ? z.msg : "deflateInit2 failed");
	cap = deflateBound(&z, b->len);
	out = malloc(cap);
	if (!out)
		die("out of memory");
	z.next_in = b->p;
	z.avail_in = (uInt)b->len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END)
		die("zlib: %s", z.msg ? z.msg : "deflate failed");
	if (asprintf(&sql, "INSERT INTO %s.%s FORMAT RowBinary", ch->db, table) < 0)
		die("out of memory");
	rc = ch_run(ch, sql, out, z.total_out, true);
	ch->sent += z.total_out;
	ch->sent_raw += b->len;
	deflateEnd(&z);
	free(out);
	free(sql);
	return rc;
}

/* @url without its user:password@, or @url. */
static char *url_shown(const char *url)
{
	const char *host = strstr(url, "://") + 3;
	const char *at = strchr(host, '@');
	const char *slash = strchr(host, '/');
	char *s;

	if (!at || (slash && slash < at))
		at = host - 1;
	if (asprintf(&s, "%.*s%s", (int)(host - url), url, at + 1) < 0)
		die("out of memory");
	return s;
}

bool ch_is_name(const char *s)
{
	if (!*s || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

void ch_open(struct ch *ch, const char *user, const char *password)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		die("libcurl: cannot initialise");
	ch->shown = url_shown(ch->url);
	ch->curl = curl_easy_init();
	if (!ch->curl)
		die("libcurl: cannot initialise");
	curl_easy_setopt(ch->curl, CURLOPT_WRITEFUNCTION, on_answer);
	curl_easy_setopt(ch->curl, CURLOPT_WRITEDATA, &ch->answer);
	curl_easy_setopt(ch->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(ch->curl, CURLOPT_CONNECTTIMEOUT, 10L);
	/* A server that stops answering: an error after 2 minutes of silence. */
	curl_easy_setopt(ch->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(ch->curl, CURLOPT_LOW_SPEED_TIME, 120L);
	if (user)
		curl_easy_setopt(ch->curl, CURLOPT_USERNAME, user);
	if (password)
		curl_easy_setopt(ch->curl, CURLOPT_PASSWORD, password);
}

void ch_close(struct ch *ch)
{
	curl_easy_cleanup(ch->curl);
	curl_global_cleanup();
	free(ch->answer.p);
	free(ch->shown);
}
