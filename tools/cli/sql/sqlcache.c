// SPDX-License-Identifier: GPL-2.0
/*
 * sqlcache (sqlcache.h): index files under the cache directory.  A file,
 * native byte order (a cache never leaves its machine; another order's
 * file fails the magic):
 *
 *   offset  size  field
 *   0       8     "RTSQLIX\n"
 *   8       4     SQLCACHE_VERSION
 *   12      4     48, the header's size
 *   16      8     the key: what the index was made from (member_key())
 *   24      8     payload bytes that follow the header
 *   32      8     XXH64 (seed 0) of bytes 0..31 and the payload
 *   40      8     0
 *   48      ...   the payload: its family's records (schedwalk.c)
 *
 * Identity of a member's files, the key: each file's name (the member's
 * order), size and the XXH64 of its first and last 4 KiB, and the
 * metadata's the same way, beside the trace uuid, --wall and the wall
 * clock offset.  A trace grows or shrinks only at its ends, which moves
 * the size and the tail; a packed file ends with its chunk index, whose
 * entries' XXH64 is in its last bytes (lib/chunk_index.h), so a repacked
 * or re-recorded file of the same size still changes them.  What it does
 * not see, a same-sized file changed in place in its middle alone, is not
 * how traces change; hashing every byte would cost the whole pass the
 * cache saves.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "sqlcache.h"

#define SQLCACHE_MAGIC		"RTSQLIX\n"
#define SQLCACHE_VERSION	1U
#define SQLCACHE_HEADER		48U
#define SQLCACHE_SUFFIX		".rtidx"
/* Bytes hashed at each end of a file. */
#define SQLCACHE_ENDS		4096

static bool disabled;
static bool noted;

void sqlcache_disable(void)
{
	disabled = true;
}

void sqlcache_put(struct sqlcache_buf *b, const void *v, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = b->cap ? 2 * b->cap : 4096;
		while (b->len + n > b->cap)
			b->cap *= 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			die("out of memory");
	}
	memcpy(b->p + b->len, v, n);
	b->len += n;
}

bool sqlcache_get(struct sqlcache_buf *b, void *v, size_t n)
{
	if (b->bad || n > b->len - b->off) {
		b->bad = true;
		memset(v, 0, n);
		return false;
	}
	memcpy(v, b->p + b->off, n);
	b->off += n;
	return true;
}

void sqlcache_buf_free(struct sqlcache_buf *b)
{
	free(b->p);
	*b = (struct sqlcache_buf){ 0 };
}

/* A note, once a run, that the cache is not kept. */
static void note(const char *dir, const char *what)
{
	if (!noted)
		warn("note: sql cache %s: %s: indexes are not kept", dir, what);
	noted = true;
}

/* Whether files are read and written (neither --no-cache nor RINGTRACE_SQL_CACHE=''). */
static bool enabled(void)
{
	const char *env = getenv("RINGTRACE_SQL_CACHE");

	return !disabled && !(env && !*env);
}

/* The cache directory, made if need be (malloc'd), or NULL: none. */
static char *cache_dir(void)
{
	const char *env = getenv("RINGTRACE_SQL_CACHE");
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	char *dir;
	int r;

	if (!enabled())
		return NULL;
	if (env) {
		r = asprintf(&dir, "%s", env);
	} else if (xdg && *xdg == '/') {	/* the XDG spec: a relative one is ignored */
		r = asprintf(&dir, "%s/ringtrace", xdg);
	} else if (home && *home == '/') {
		r = asprintf(&dir, "%s/.cache", home);
		if (r >= 0 && mkdir(dir, 0700) && errno != EEXIST) {
			note(dir, strerror(errno));
			free(dir);
			return NULL;
		}
		if (r >= 0) {
			free(dir);
			r = asprintf(&dir, "%s/.cache/ringtrace", home);
		}
	} else {
		return NULL;
	}
	if (r < 0)
		die("out of memory");
	if (mkdir(dir, 0700) && errno != EEXIST) {
		note(dir, strerror(errno));
		free(dir);
		return NULL;
	}
	return dir;
}

/* @path's identity into @h: its name, size and the XXH64 of its ends. */
static void file_key(XXH64_state_t *h, const char *path)
{
	const char *name = strrchr(path, '/');
	uint8_t buf[SQLCACHE_ENDS];
	struct stat st;
	uint64_t size = UINT64_MAX;
	int fd;

	name = name ? name + 1 : path;
	XXH64_update(h, name, strlen(name) + 1);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode)) {
		ssize_t n;

		size = (uint64_t)st.st_size;
		n = pread(fd, buf, sizeof(buf), 0);
		if (n > 0)
			XXH64_update(h, buf, (size_t)n);
		if (size > sizeof(buf)) {
			n = pread(fd, buf, sizeof(buf), (off_t)(size - sizeof(buf)));
			if (n > 0)
				XXH64_update(h, buf, (size_t)n);
		}
	}
	if (fd >= 0)
		close(fd);
	XXH64_update(h, &size, sizeof(size));
}

/*
 * Member @m's key for @family (what the index depends on), and in *@name
 * the file's name (the member's file paths and the family).
 */
static uint64_t member_key(const struct sqldb *d, unsigned int m, const char *family,
			   uint64_t layout, uint64_t *name)
{
	const struct tset_member *mb = &d->ts->m[m];
	const struct rt_trace *t = mb->t;
	XXH64_state_t *h = XXH64_createState(), *n = XXH64_createState();
	uint32_t version = SQLCACHE_VERSION;
	uint8_t wall = d->wall;
	char *meta;
	uint64_t key;

	if (!h || !n)
		die("out of memory");
	XXH64_reset(h, 0);
	XXH64_reset(n, 0);
	XXH64_update(h, &version, sizeof(version));
	XXH64_update(h, &layout, sizeof(layout));
	XXH64_update(h, family, strlen(family) + 1);
	XXH64_update(n, family, strlen(family) + 1);
	XXH64_update(h, &wall, sizeof(wall));
	XXH64_update(h, &mb->wall_offset_ns, sizeof(mb->wall_offset_ns));
	XXH64_update(h, t->md->uuid, sizeof(t->md->uuid));
	if (asprintf(&meta, "%s/metadata", t->dir) < 0)
		die("out of memory");
	file_key(h, meta);
	free(meta);
	for (unsigned int i = 0; i < t->nr_cpus; i++)
		for (unsigned int j = 0; j < t->cpus[i].nr_paths; j++) {
			const char *p = t->cpus[i].paths[j];
			char *real = realpath(p, NULL);

			file_key(h, p);
			XXH64_update(n, real ? real : p, strlen(real ? real : p) + 1);
			free(real);
		}
	key = XXH64_digest(h);
	*name = XXH64_digest(n);
	XXH64_freeState(h);
	XXH64_freeState(n);
	return key;
}

static char *file_path(const char *dir, const struct sqldb *d, unsigned int m, uint64_t name,
		       const char *family)
{
	const uint8_t *u = d->ts->m[m].t->md->uuid;
	char *p;

	if (asprintf(&p, "%s/%02x%02x%02x%02x-%016llx.%s" SQLCACHE_SUFFIX, dir,
		     u[0], u[1], u[2], u[3], (unsigned long long)name, family) < 0)
		die("out of memory");
	return p;
}

static uint64_t file_sum(const uint8_t *header, const uint8_t *payload, size_t len)
{
	XXH64_state_t *h = XXH64_createState();
	uint64_t sum;

	if (!h)
		die("out of memory");
	XXH64_reset(h, 0);
	XXH64_update(h, header, 32);
	XXH64_update(h, payload, len);
	sum = XXH64_digest(h);
	XXH64_freeState(h);
	return sum;
}

bool sqlcache_load(struct sqldb *d, unsigned int m, const char *family, uint64_t layout,
		   struct sqlcache_buf *out)
{
	char *dir = cache_dir(), *path;
	uint64_t name, key, plen, sum, zero;
	uint32_t version, hsize;
	uint8_t *b = NULL;
	struct stat st;
	size_t got = 0;
	bool ok = false;
	int fd;

	*out = (struct sqlcache_buf){ 0 };
	if (!dir)
		return false;
	key = member_key(d, m, family, layout, &name);
	path = file_path(dir, d, m, name, family);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size < SQLCACHE_HEADER || (uint64_t)st.st_size > SQLCACHE_FILE_MAX)
		goto out;
	b = malloc((size_t)st.st_size);
	if (!b)
		die("out of memory");
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, b + got, (size_t)st.st_size - got);

		if (n <= 0)
			goto out;
		got += (size_t)n;
	}
	memcpy(&version, b + 8, 4);
	memcpy(&hsize, b + 12, 4);
	memcpy(&plen, b + 24, 8);
	memcpy(&sum, b + 32, 8);
	memcpy(&zero, b + 40, 8);
	if (memcmp(b, SQLCACHE_MAGIC, 8) || version != SQLCACHE_VERSION ||
	    hsize != SQLCACHE_HEADER || memcmp(b + 16, &key, 8) || zero ||
	    plen != (uint64_t)st.st_size - SQLCACHE_HEADER ||
	    sum != file_sum(b, b + SQLCACHE_HEADER, plen))
		goto out;
	/* The payload read where it lies, after the header: one copy of the file. */
	out->p = b;
	out->len = out->cap = (size_t)st.st_size;
	out->off = SQLCACHE_HEADER;
	b = NULL;
	/* Used: the last to go when the directory is trimmed. */
	futimens(fd, NULL);
	ok = true;
out:
	if (fd >= 0)
		close(fd);
	free(b);
	free(path);
	free(dir);
	return ok;
}

struct entry {
	char *name;
	off_t size;
	struct timespec used;
};

static int by_use(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	return (x->used.tv_nsec > y->used.tv_nsec) - (x->used.tv_nsec < y->used.tv_nsec);
}

/* The directory's index files down to SQLCACHE_DIR_MAX, least recently used first. */
static void trim(const char *dir)
{
	DIR *dh = opendir(dir);
	struct entry *e = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *de;

	if (!dh)
		return;
	while ((de = readdir(dh))) {
		size_t len = strlen(de->d_name);
		struct stat st;

		if (len <= strlen(SQLCACHE_SUFFIX) ||
		    strcmp(de->d_name + len - strlen(SQLCACHE_SUFFIX), SQLCACHE_SUFFIX) ||
		    fstatat(dirfd(dh), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 32;
			e = reallocarray(e, cap, sizeof(*e));
			if (!e)
				die("out of memory");
		}
		e[n].name = strdup(de->d_name);
		if (!e[n].name)
			die("out of memory");
		e[n].size = st.st_size;
		e[n++].used = st.st_mtim;
		total += (uint64_t)st.st_size;
	}
	if (n)
		qsort(e, n, sizeof(*e), by_use);
	for (size_t i = 0; i < n; i++) {
		if (total > SQLCACHE_DIR_MAX && !unlinkat(dirfd(dh), e[i].name, 0))
			total -= (uint64_t)e[i].size;
		free(e[i].name);
	}
	free(e);
	closedir(dh);
}

void sqlcache_store(struct sqldb *d, unsigned int m, const char *family, uint64_t layout,
		    const struct sqlcache_buf *payload)
{
	char *dir, *path, *tmp;
	uint8_t h[SQLCACHE_HEADER] = { 0 };
	uint32_t version = SQLCACHE_VERSION, hsize = SQLCACHE_HEADER;
	uint64_t name, key, plen = payload->len, sum;
	bool ok;
	int fd;

	if (plen > SQLCACHE_FILE_MAX - SQLCACHE_HEADER || !(dir = cache_dir()))
		return;
	key = member_key(d, m, family, layout, &name);
	path = file_path(dir, d, m, name, family);
	if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
		die("out of memory");
	memcpy(h, SQLCACHE_MAGIC, 8);
	memcpy(h + 8, &version, 4);
	memcpy(h + 12, &hsize, 4);
	memcpy(h + 16, &key, 8);
	memcpy(h + 24, &plen, 8);
	sum = file_sum(h, payload->p, plen);
	memcpy(h + 32, &sum, 8);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		note(dir, strerror(errno));
		goto out;
	}
	ok = write(fd, h, sizeof(h)) == (ssize_t)sizeof(h);
	for (size_t off = 0; ok && off < plen;) {
		ssize_t n = write(fd, payload->p + off, plen - off);

		ok = n > 0;
		off += ok ? (size_t)n : 0;
	}
	if (close(fd))
		ok = false;
	if (!ok || rename(tmp, path)) {
		note(dir, strerror(errno ? errno : EIO));
		unlink(tmp);
		goto out;
	}
	trim(dir);
out:
	free(tmp);
	free(path);
	free(dir);
}

/* The family's layout, with its own key when it has one (member_key() hashes both). */
static uint64_t family_layout(struct sqldb *d, unsigned int m,
			      const struct sqlcache_family *f, void *arg)
{
	uint64_t k[2];

	if (!f->key)
		return f->layout;
	k[0] = f->layout;
	k[1] = f->key(d, m, arg);
	return XXH64(k, sizeof(k), 0);
}

static void *index_load(struct sql_cursor *c, unsigned int m, const char *family,
			const struct sqlcache_family *f, void *arg, uint64_t layout)
{
	struct sqldb *d = c->db;
	struct sqlcache_buf b;
	void *ix = NULL;

	if (sqlcache_load(d, m, family, layout, &b)) {
		ix = f->load(c, m, &b, arg);
		if (ix && (b.bad || sqlcache_left(&b))) {
			f->free(ix);
			ix = NULL;
		}
		sqlcache_buf_free(&b);
	}
	if (ix) {
		struct scan_stat *st = sqldb_stat(d, sqldb_stat_new(d, f->stat));

		snprintf(st->plan, sizeof(st->plan), "cache");
	}
	return ix;
}

void *sqlcache_index_cached(struct sql_cursor *c, unsigned int m, const char *family,
			    const struct sqlcache_family *f, void *arg)
{
	return index_load(c, m, family, f, arg, family_layout(c->db, m, f, arg));
}

/* One layout for the load and the store: building may change what f->key() sees. */
void *sqlcache_index(struct sql_cursor *c, unsigned int m, const char *family,
		     const struct sqlcache_family *f, void *arg)
{
	struct sqldb *d = c->db;
	uint64_t layout = family_layout(d, m, f, arg);
	struct sqlcache_buf b;
	void *ix = index_load(c, m, family, f, arg, layout);

	if (ix)
		return ix;
	ix = f->build(c, m, arg);
	if (ix && enabled() && (!f->keep || f->keep(ix, arg))) {
		b = (struct sqlcache_buf){ 0 };
		f->store(&b, ix, arg);
		sqlcache_store(d, m, family, layout, &b);
		sqlcache_buf_free(&b);
	}
	return ix;
}
