/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sqlcache: a member's indexes (schedwalk.c's and spanq.c's checkpoints,
 * runidx.c's run lists) kept on disk, so that the next `ringtrace sql` of the same trace
 * starts where the last one's first window left off instead of reading
 * the whole member again (plan-31 D5).  sqlcache_index() is how an index
 * is had: read back, else built and kept.
 *
 * One file per (member, family) in $RINGTRACE_SQL_CACHE, else
 * $XDG_CACHE_HOME/ringtrace, else ~/.cache/ringtrace; RINGTRACE_SQL_CACHE
 * set empty, or --no-cache, keeps none.  The file's name comes from the
 * member's files' paths; its header holds a key made of what the index
 * depends on (the trace uuid, each file's name, size and the XXH64 of its
 * first and last 4 KiB: sqlcache.c says why that is enough), so a trace
 * appended to, truncated or rewritten is indexed again, and the file
 * replaced.
 *
 * A cache file is untrusted input like a trace: sqlcache_load() checks its
 * magic, version, sizes and the XXH64 of the whole file, and the family's
 * load() checks every count and value it takes from the payload
 * (struct sqlcache_buf: reads past the end fail, never read).  Anything
 * wrong is a miss: the index is built again and the file rewritten.
 * Writing is a temporary file renamed over the old one; a cache directory
 * that cannot be made or written is one note on stderr, never an error.
 * Size: a file above SQLCACHE_FILE_MAX is not written; the directory's
 * index files are trimmed to SQLCACHE_DIR_MAX, the least recently used
 * first.
 */
#ifndef RINGTRACE_SQLCACHE_H
#define RINGTRACE_SQLCACHE_H

#include "sql.h"

#define SQLCACHE_FILE_MAX	(64ULL << 20)
#define SQLCACHE_DIR_MAX	(256ULL << 20)

/* A payload being written, or read back (@bad: a read went past its end). */
struct sqlcache_buf {
	uint8_t *p;
	size_t len, cap, off;
	bool bad;
};

void sqlcache_put(struct sqlcache_buf *b, const void *v, size_t n);
static inline void sqlcache_put64(struct sqlcache_buf *b, uint64_t v)
{
	sqlcache_put(b, &v, sizeof(v));
}
static inline void sqlcache_put32(struct sqlcache_buf *b, uint32_t v)
{
	sqlcache_put(b, &v, sizeof(v));
}
/* The next @n bytes into @v: false (b->bad, @v zeroed) past the end. */
bool sqlcache_get(struct sqlcache_buf *b, void *v, size_t n);
static inline uint64_t sqlcache_get64(struct sqlcache_buf *b)
{
	uint64_t v;

	sqlcache_get(b, &v, sizeof(v));
	return v;
}
static inline uint32_t sqlcache_get32(struct sqlcache_buf *b)
{
	uint32_t v;

	sqlcache_get(b, &v, sizeof(v));
	return v;
}
/* Bytes left to read. */
static inline size_t sqlcache_left(const struct sqlcache_buf *b)
{
	return b->len - b->off;
}
/* A count of records of @size bytes each that the rest of @b can hold: or 0, b->bad. */
static inline size_t sqlcache_get_count(struct sqlcache_buf *b, size_t size)
{
	uint64_t n = sqlcache_get64(b);

	if (n > sqlcache_left(b) / size) {
		b->bad = true;
		return 0;
	}
	return (size_t)n;
}
void sqlcache_buf_free(struct sqlcache_buf *b);

/* --no-cache: nothing read or written from now on. */
void sqlcache_disable(void);

/*
 * A family of index files, as its owner reads and writes them: a member's
 * index is read from its file, else built and kept in it
 * (sqlcache_index()).  @arg is sqlcache_index()'s, handed to each.
 */
struct sqlcache_family {
	const char *stat;		/* scan_stats row: "sched index", ... */
	uint64_t layout;		/* the records' version: a new one with any change */
	/*
	 * Member @m's index from payload @b, every value the index relies on
	 * checked; NULL, or b->bad set, for anything wrong (the index then
	 * freed by @free).  Bytes left over are a miss too.
	 */
	void *(*load)(struct sql_cursor *c, unsigned int m, struct sqlcache_buf *b, void *arg);
	/* @ix into @b, for load() to read back. */
	void (*store)(struct sqlcache_buf *b, const void *ix, void *arg);
	/* Member @m's index read from the trace; NULL: c->err set. */
	void *(*build)(struct sql_cursor *c, unsigned int m, void *arg);
	void (*free)(void *ix);
	/*
	 * Optional: what else than the member's files the index depends on
	 * (a hash, mixed into the key: a new value is a miss).
	 */
	uint64_t (*key)(const struct sqldb *d, unsigned int m, void *arg);
	/* Optional: whether a built @ix may be kept (NULL: always). */
	bool (*keep)(const void *ix, void *arg);
};

/*
 * Member @m's index of @f, in the file of @family (its name's end): read
 * back (a row @f->stat in scan_stats, plan "cache", no frame read), else
 * built and kept there.  NULL: the build failed (c->err set).
 */
void *sqlcache_index(struct sql_cursor *c, unsigned int m, const char *family,
		     const struct sqlcache_family *f, void *arg);
/* The same read back alone: NULL when the cache does not hold it. */
void *sqlcache_index_cached(struct sql_cursor *c, unsigned int m, const char *family,
			    const struct sqlcache_family *f, void *arg);

/*
 * Member @m's cached payload of @family, made by a reader whose record
 * layout is @layout (its version: a different one is a miss): true with
 * @out filled (the caller frees it), false for a miss of any kind.
 */
bool sqlcache_load(struct sqldb *d, unsigned int m, const char *family, uint64_t layout,
		   struct sqlcache_buf *out);
/* @payload kept as member @m's @family (errors: a note at most). */
void sqlcache_store(struct sqldb *d, unsigned int m, const char *family, uint64_t layout,
		    const struct sqlcache_buf *payload);

#endif /* RINGTRACE_SQLCACHE_H */
