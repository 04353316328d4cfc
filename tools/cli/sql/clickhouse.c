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

#include <lz4.h>
#include <zlib.h>
#include <zstd.h>

#include "clickhouse.h"

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
 * A POST: @sql in the body, or with @body in the URL's query parameter and
 * @params (each "&name=value") after it, @hdr (or NULL) an extra header.
 * 0 with the answer in ch->answer (NUL-ended), or -1 said.
 */
static int ch_post(struct ch *ch, const char *sql, const void *body, size_t len,
		   const char *params, const char *hdr)
{
	struct curl_slist *hdrs = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	char *url = NULL, *esc = NULL;
	long code = 0;
	CURLcode rc;

	ch->answer.len = 0;
	if (body) {
		esc = curl_easy_escape(ch->curl, sql, 0);
		if (!esc || asprintf(&url, "%s%squery=%s%s", ch->url,
				     strchr(ch->url, '?') ? "&" : "?", esc, params) < 0)
			die("out of memory");
		curl_free(esc);
	} else {
		body = sql;
		len = strlen(sql);
	}
	if (hdr)
		hdrs = curl_slist_append(hdrs, hdr);
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

int ch_run(struct ch *ch, const char *sql)
{
	return ch_post(ch, sql, NULL, 0, NULL, NULL);
}

/* A statement whose answer is one number: 0 with *@v, or -1 said. */
int ch_count(struct ch *ch, const char *sql, uint64_t *v)
{
	char *end;

	if (ch_run(ch, sql))
		return -1;
	errno = 0;
	*v = strtoull((char *)ch->answer.p, &end, 10);
	if (errno || end == (char *)ch->answer.p || (*end && *end != '\n')) {
		error_line("%s: not a count: %s (for %s)", ch->shown, answer_line(ch), sql);
		return -1;
	}
	return 0;
}

const char *const ch_wire_names[CH_WIRE_NR] = {
	[CH_WIRE_LZ4] = "lz4", [CH_WIRE_ZSTD] = "zstd", [CH_WIRE_GZIP] = "gzip",
	[CH_WIRE_NONE] = "none",
};

/* @b as one gzip member (zlib's level 1: its fastest) into ch->body. */
static void body_gzip(struct ch *ch, const struct buf *b)
{
	z_stream z = { 0 };

	if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		die("zlib: %s", z.msg ? z.msg : "deflateInit2 failed");
	ch->body.len = 0;
	buf_room(&ch->body, deflateBound(&z, b->len));
	z.next_in = b->p;
	z.avail_in = (uInt)b->len;
	z.next_out = ch->body.p;
	z.avail_out = (uInt)ch->body.cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END)
		die("zlib: %s", z.msg ? z.msg : "deflate failed");
	ch->body.len = z.total_out;
	deflateEnd(&z);
}

/*
 * ClickHouse's native compressed blocks (what its own clients send, and
 * the HTTP interface reads with decompress=1), a block per at most
 * CH_BLOCK bytes of @b: a 16-byte checksum, the method (0x82: LZ4, 0x90:
 * zstd), the block's size with this 9-byte header and the data's size
 * before compression (UInt32 LE each), then the data: one LZ4 block
 * (liblz4's raw block format) or one zstd frame.  The checksum is
 * CityHash128 (v1.0.2) of the rest; no Debian library has ClickHouse's
 * variant of it, so ringtrace sends zeros and the URL says
 * http_native_compression_disable_checksumming_on_decompress=1 (18.16 has
 * it and current releases keep it).  What the checksum would have caught
 * TCP's checksums and, for zstd, each frame's own (XXH64 of its content,
 * checked by the server's ZSTD_decompress) catch instead; a corrupt LZ4
 * block that still decodes would go in as rows -- it would have to get
 * past TCP first, as an uncompressed body does.
 */
#define CH_BLOCK		(256U << 10)
#define CH_METHOD_LZ4		0x82
#define CH_METHOD_ZSTD		0x90
#define CH_ZSTD_LEVEL		1

/* @n bytes at @src as one block of ch->wire's method at @dst (room @cap): its size. */
static size_t block_compress(struct ch *ch, uint8_t *dst, size_t cap, const uint8_t *src,
			     size_t n)
{
	ZSTD_CCtx *z = ch->zstd;
	size_t zn;
	int ln;

	if (ch->wire == CH_WIRE_LZ4) {
		ln = LZ4_compress_default((const char *)src, (char *)dst, (int)n, (int)cap);
		if (ln <= 0)
			die("lz4: cannot compress a block of %zu bytes", n);
		return (size_t)ln;
	}
	if (!z) {
		z = ch->zstd = ZSTD_createCCtx();
		if (!z ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel,
							CH_ZSTD_LEVEL)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 1)))
			die("zstd: cannot set up a compression context");
	}
	zn = ZSTD_compress2(z, dst, cap, src, n);
	if (ZSTD_isError(zn))
		die("zstd: %s", ZSTD_getErrorName(zn));
	return zn;
}

static void body_native(struct ch *ch, const struct buf *b)
{
	bool lz4 = ch->wire == CH_WIRE_LZ4;

	_Static_assert(CH_BLOCK <= LZ4_MAX_INPUT_SIZE, "a block is one LZ4 input");
	ch->body.len = 0;
	for (size_t off = 0; off < b->len; off += CH_BLOCK) {
		size_t n = b->len - off < CH_BLOCK ? b->len - off : CH_BLOCK;
		size_t head = ch->body.len, zn;

		buf_room(&ch->body, 16 + 9 + (lz4 ? (size_t)LZ4_compressBound((int)n) :
					      ZSTD_compressBound(n)));
		memset(ch->body.p + head, 0, 16);
		zn = block_compress(ch, ch->body.p + head + 25, ch->body.cap - head - 25,
				    b->p + off, n);
		ch->body.len = head + 16;
		buf_u8(&ch->body, lz4 ? CH_METHOD_LZ4 : CH_METHOD_ZSTD);
		buf_le(&ch->body, 9 + zn, 4);
		buf_le(&ch->body, n, 4);
		ch->body.len += zn;
	}
}

/* INSERT INTO db.@table FORMAT RowBinary, @b's rows compressed by ch->wire: 0 or -1 said. */
int ch_insert(struct ch *ch, const char *table, const struct buf *b)
{
	const char *params = "", *hdr = NULL;
	const struct buf *body = &ch->body;
	char *sql;
	int rc;

	switch (ch->wire) {
	case CH_WIRE_LZ4:
	case CH_WIRE_ZSTD:
		body_native(ch, b);
		params = "&decompress=1"
			 "&http_native_compression_disable_checksumming_on_decompress=1";
		break;
	case CH_WIRE_GZIP:
		body_gzip(ch, b);
		hdr = "Content-Encoding: gzip";
		break;
	case CH_WIRE_NONE:
		body = b;
		break;
	}
	if (asprintf(&sql, "INSERT INTO %s.%s FORMAT RowBinary", ch->db, table) < 0)
		die("out of memory");
	rc = ch_post(ch, sql, body->p, body->len, params, hdr);
	ch->sent += body->len;
	ch->sent_raw += b->len;
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
	ZSTD_freeCCtx(ch->zstd);
	free(ch->body.p);
	free(ch->answer.p);
	free(ch->shown);
}
