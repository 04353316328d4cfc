// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's text symbols in a trace directory: written from
 * /proc/kallsyms and /proc/modules when a trace with stacks starts, read
 * back to name the frames of its stacks.  The format is in ksyms.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "ksyms.h"

#define KSYMS_MAGIC	"ringtrace-ksyms 1"
/* Far beyond any kernel's (~5 MB for 120000 text symbols). */
#define KSYMS_MAX_TEXT	(256U << 20)
#define KSYMS_NAME_MAX	256

/* ---- writing ------------------------------------------------------------- */

struct wsym {
	uint64_t addr;
	int sect;			/* -1 vmlinux, else the module's index */
	char *name;
};

struct wmod {
	char *name;
	uint64_t base, size;
};

struct wtab {
	struct wsym *syms;
	size_t nr, cap;
	struct wmod *mods;
	size_t nr_mods;
	uint64_t text;			/* _text */
};

struct strbuf {
	char *p;
	size_t len, cap;
};

static int sb_printf(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return -EINVAL;
		if (b->len + (size_t)n < b->cap)
			break;
		b->cap = b->cap ? 2 * b->cap + (size_t)n : 1 << 20;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			return -ENOMEM;
	}
	b->len += (size_t)n;
	return 0;
}

static int mod_index(const struct wtab *t, const char *name)
{
	for (size_t i = 0; i < t->nr_mods; i++)
		if (!strcmp(t->mods[i].name, name))
			return (int)i;
	return -1;
}

/* "name size refs deps state 0xaddr": the module's text base. */
static int read_modules(struct wtab *t)
{
	char line[4096], name[KSYMS_NAME_MAX];
	unsigned long long size, base;
	FILE *f = fopen("/proc/modules", "re");

	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%255s %llu %*s %*s %*s %llx", name, &size,
			   &base) != 3 || !base)
			continue;
		t->mods = realloc(t->mods, (t->nr_mods + 1) * sizeof(*t->mods));
		if (!t->mods || !(t->mods[t->nr_mods].name = strdup(name))) {
			fclose(f);
			return -ENOMEM;
		}
		t->mods[t->nr_mods].base = base;
		t->mods[t->nr_mods++].size = size;
	}
	fclose(f);
	return 0;
}

static int add_sym(struct wtab *t, uint64_t addr, int sect, const char *name)
{
	if (t->nr == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 65536;
		t->syms = realloc(t->syms, t->cap * sizeof(*t->syms));
		if (!t->syms)
			return -ENOMEM;
	}
	t->syms[t->nr].addr = addr;
	t->syms[t->nr].sect = sect;
	t->syms[t->nr].name = strdup(name);
	return t->syms[t->nr++].name ? 0 : -ENOMEM;
}

/* Text symbols ("t", "T") of vmlinux and of the modules /proc/modules has. */
static int read_kallsyms(struct wtab *t)
{
	char line[1024], name[KSYMS_NAME_MAX], mod[KSYMS_NAME_MAX], type;
	unsigned long long addr;
	FILE *f = fopen("/proc/kallsyms", "re");
	int n, err = 0, sect;

	if (!f)
		return -errno;
	while (!err && fgets(line, sizeof(line), f)) {
		n = sscanf(line, "%llx %c %255s [%255[^]]]", &addr, &type, name,
			   mod);
		if (n < 3)
			continue;
		if (n == 3 && !strcmp(name, "_text"))
			t->text = addr;
		if (type != 't' && type != 'T')
			continue;
		sect = n == 4 ? mod_index(t, mod) : -1;
		if (n == 4 && sect < 0)
			continue;
		err = add_sym(t, addr, sect, name);
	}
	fclose(f);
	/* Zeroes: kptr_restrict hides the addresses from us. */
	if (!err && !t->text)
		err = -EPERM;
	return err;
}

static int cmp_wsym(const void *a, const void *b)
{
	const struct wsym *x = a, *y = b;

	if (x->sect != y->sect)
		return x->sect < y->sect ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int build_text(struct wtab *t, struct strbuf *b)
{
	uint64_t prev = 0;
	int err, sect = -2;

	qsort(t->syms, t->nr, sizeof(*t->syms), cmp_wsym);
	err = sb_printf(b, KSYMS_MAGIC "\nK %" PRIx64 "\n", t->text);
	for (size_t i = 0; !err && i < t->nr; i++) {
		const struct wsym *s = &t->syms[i];
		uint64_t base = s->sect < 0 ? t->text : t->mods[s->sect].base;

		if (s->addr < base)
			continue;
		if (s->sect != sect) {
			sect = s->sect;
			prev = base;
			if (sect >= 0)
				err = sb_printf(b, "M %s %" PRIx64 " %" PRIx64 "\n",
						t->mods[sect].name,
						t->mods[sect].base,
						t->mods[sect].size);
		}
		if (!err)
			err = sb_printf(b, "%" PRIx64 " %s\n", s->addr - prev,
					s->name);
		prev = s->addr;
	}
	return err;
}

static void wtab_free(struct wtab *t)
{
	for (size_t i = 0; i < t->nr; i++)
		free(t->syms[i].name);
	for (size_t i = 0; i < t->nr_mods; i++)
		free(t->mods[i].name);
	free(t->syms);
	free(t->mods);
}

static int write_all_fd(int fd, const void *p, size_t len)
{
	const char *c = p;

	while (len) {
		ssize_t n = write(fd, c, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		c += n;
		len -= (size_t)n;
	}
	return 0;
}

int ksyms_build(void **out, size_t *len)
{
	struct wtab t = { 0 };
	struct strbuf b = { 0 };
	void *z = NULL;
	size_t zlen;
	int err;

	err = read_modules(&t);
	if (!err)
		err = read_kallsyms(&t);
	if (!err)
		err = build_text(&t, &b);
	if (err)
		goto out;
	zlen = ZSTD_compressBound(b.len);
	z = malloc(zlen);
	if (!z) {
		err = -ENOMEM;
		goto out;
	}
	zlen = ZSTD_compress(z, zlen, b.p, b.len, 3);
	if (ZSTD_isError(zlen)) {
		err = -EIO;
		goto out;
	}
	*out = z;
	*len = zlen;
	z = NULL;
out:
	free(z);
	free(b.p);
	wtab_free(&t);
	return err;
}

int ksyms_write(int dirfd, const void *z, size_t len)
{
	int err, fd;

	fd = openat(dirfd, KSYMS_FILE,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	err = write_all_fd(fd, z, len);
	if (!err && fdatasync(fd) < 0)
		err = -errno;
	close(fd);
	return err;
}

int ksyms_save(int dirfd)
{
	size_t len;
	void *z;
	int err;

	err = ksyms_build(&z, &len);
	if (err)
		return err;
	err = ksyms_write(dirfd, z, len);
	free(z);
	return err;
}

/* ---- reading ------------------------------------------------------------- */

struct rsym {
	uint64_t addr;			/* as recorded: base + offset */
	uint32_t sect;			/* 0 vmlinux, else module sect - 1 */
	uint32_t name;			/* offset in ks->text */
};

struct rsect {
	const char *name;		/* NULL: vmlinux */
	uint64_t base, end;
};

struct ksyms {
	char *text;			/* the decompressed file, names cut out */
	struct rsym *syms;		/* by addr */
	size_t nr;
	struct rsect *sects;
	size_t nr_sects;
};

static int fail(char *why, size_t size, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, size, fmt, ap);
	va_end(ap);
	return err;
}

static int read_whole(const char *path, void **out, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	char *p;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_size > (off_t)KSYMS_MAX_TEXT) {
		close(fd);
		return -EFBIG;
	}
	p = malloc((size_t)st.st_size + 1);
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	n = read(fd, p, (size_t)st.st_size);
	close(fd);
	if (n != st.st_size) {
		free(p);
		return -EIO;
	}
	*out = p;
	*len = (size_t)n;
	return 0;
}

static int cmp_rsym(const void *a, const void *b)
{
	const struct rsym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static bool parse_hex(char **s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(*s, &end, 16);
	if (errno || end == *s)
		return false;
	*s = end;
	return true;
}

/* One line at a time; names are cut out in place (NUL at line end). */
static int parse(struct ksyms *ks, char *text, size_t len, char *why,
		 size_t size)
{
	char *line = text, *end = text + len, *nl, *p;
	size_t cap_s = 0, cap_m = 0, lineno = 0;
	uint64_t a, b, at = 0;
	uint32_t sect = 0;

	while (line < end) {
		nl = memchr(line, '\n', (size_t)(end - line));
		if (!nl)
			return fail(why, size, -EINVAL, "line %zu: no newline", lineno + 1);
		*nl = '\0';
		lineno++;
		p = line;
		if (lineno == 1) {
			if (strcmp(line, KSYMS_MAGIC))
				return fail(why, size, -EINVAL, "not ringtrace symbols");
		} else if (*p == 'K' || *p == 'M') {
			if (ks->nr_sects == cap_m) {
				cap_m = cap_m ? 2 * cap_m : 64;
				ks->sects = realloc(ks->sects, cap_m * sizeof(*ks->sects));
				if (!ks->sects)
					return -ENOMEM;
			}
			if (*p == 'K') {
				p++;
				while (*p == ' ')
					p++;
				if (ks->nr_sects || !parse_hex(&p, &a) || *p)
					return fail(why, size, -EINVAL, "line %zu: bad K line", lineno);
				ks->sects[0] = (struct rsect){ NULL, a, UINT64_MAX };
			} else {
				char *name = p + 2;

				p = p[1] == ' ' ? strchr(name, ' ') : NULL;
				if (!ks->nr_sects || !p || p == name)
					return fail(why, size, -EINVAL, "line %zu: bad M line", lineno);
				*p++ = '\0';
				if (!parse_hex(&p, &a) || *p++ != ' ' ||
				    !parse_hex(&p, &b) || *p || a + b < a)
					return fail(why, size, -EINVAL, "line %zu: bad M line", lineno);
				ks->sects[ks->nr_sects] = (struct rsect){ name, a, a + b };
			}
			at = ks->sects[ks->nr_sects].base;
			sect = (uint32_t)ks->nr_sects++;
		} else {
			if (!ks->nr_sects || !parse_hex(&p, &a) || *p++ != ' ' ||
			    !*p || a > UINT64_MAX - at ||
			    (uint64_t)(p - text) > UINT32_MAX)
				return fail(why, size, -EINVAL, "line %zu: bad symbol", lineno);
			if (ks->nr == cap_s) {
				cap_s = cap_s ? 2 * cap_s : 65536;
				ks->syms = realloc(ks->syms, cap_s * sizeof(*ks->syms));
				if (!ks->syms)
					return -ENOMEM;
			}
			at += a;
			ks->syms[ks->nr++] = (struct rsym){ at, sect,
							    (uint32_t)(p - text) };
			/* vmlinux ends at _etext, where its text does. */
			if (sect == 0 && !strcmp(p, "_etext"))
				ks->sects[0].end = at;
		}
		line = nl + 1;
	}
	if (!ks->nr_sects)
		return fail(why, size, -EINVAL, "no K line");
	qsort(ks->syms, ks->nr, sizeof(*ks->syms), cmp_rsym);
	return 0;
}

int ksyms_load(const char *dir, struct ksyms **out, char *why, size_t size)
{
	struct ksyms *ks;
	unsigned long long n;
	char path[4096];
	size_t zlen = 0, r;
	void *z = NULL;
	int err;

	snprintf(path, sizeof(path), "%s/" KSYMS_FILE, dir);
	err = read_whole(path, &z, &zlen);
	if (err)
		return err == -ENOENT ? err :
		       fail(why, size, err, "%s: %s", path, strerror(-err));
	ks = calloc(1, sizeof(*ks));
	n = ZSTD_getFrameContentSize(z, zlen);
	if (!ks || n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN ||
	    n > KSYMS_MAX_TEXT) {
		err = ks ? fail(why, size, -EINVAL, "%s: not a zstd frame of symbols", path) :
		      -ENOMEM;
		goto fail;
	}
	ks->text = malloc(n + 1);
	if (!ks->text) {
		err = -ENOMEM;
		goto fail;
	}
	r = ZSTD_decompress(ks->text, n, z, zlen);
	if (ZSTD_isError(r) || r != n) {
		err = fail(why, size, -EINVAL, "%s: damaged (%s)", path,
			   ZSTD_isError(r) ? ZSTD_getErrorName(r) : "short");
		goto fail;
	}
	ks->text[n] = '\0';
	err = parse(ks, ks->text, n, why, size);
	if (err) {
		if (err != -ENOMEM) {
			char line[256];

			snprintf(line, sizeof(line), "%s", why);
			fail(why, size, err, "%s: %s", path, line);
		}
		goto fail;
	}
	free(z);
	*out = ks;
	return 0;
fail:
	free(z);
	ksyms_free(ks);
	if (err == -ENOMEM)
		fail(why, size, err, "out of memory");
	return err;
}

void ksyms_free(struct ksyms *ks)
{
	if (!ks)
		return;
	free(ks->text);
	free(ks->syms);
	free(ks->sects);
	free(ks);
}

void ksyms_lookup(const struct ksyms *ks, uint64_t ip, struct ksym_frame *f)
{
	size_t lo = 0, hi = ks ? ks->nr : 0;
	const struct rsect *s;
	const struct rsym *y;

	f->name = f->module = NULL;
	f->offset = f->start = 0;
	/* The last symbol at or below @ip. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->syms[mid].addr <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return;
	y = &ks->syms[lo - 1];
	s = &ks->sects[y->sect];
	if (ip >= s->end)
		return;
	f->name = ks->text + y->name;
	f->module = s->name;
	f->offset = ip - y->addr;
	f->start = y->addr - s->base;
}

bool ksyms_addr(const struct ksyms *ks, const char *name, uint64_t *addr)
{
	/* Asked a few times per trace: a plain search, no index by name. */
	for (size_t i = 0; ks && i < ks->nr; i++)
		if (!ks->syms[i].sect && !strcmp(ks->text + ks->syms[i].name, name)) {
			*addr = ks->syms[i].addr;
			return true;
		}
	return false;
}

void ksyms_format(const struct ksyms *ks, uint64_t ip, char *buf, size_t size)
{
	struct ksym_frame f;

	ksyms_lookup(ks, ip, &f);
	if (!f.name)
		snprintf(buf, size, "0x%" PRIx64, ip);
	else if (f.module)
		snprintf(buf, size, "%s+0x%" PRIx64 " [%s]", f.name, f.offset,
			 f.module);
	else
		snprintf(buf, size, "%s+0x%" PRIx64, f.name, f.offset);
}
