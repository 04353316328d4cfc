// SPDX-License-Identifier: GPL-2.0
/*
 * The symbol store of a trace directory (usyms.h): binaries by build-id,
 * zstd-compressed, put by `ringtrace symbols` (and later ringtraced) and
 * opened by the readers that name user frames.  Whatever a store file
 * holds is checked before it is used: the header, the frame's sizes, and
 * the build-id of the ELF image against the name it is kept under.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "usyms.h"

#define HEADER_MAGIC	"ringtrace-buildid 1 "
#define HEADER_MAX	8192		/* a header line's bytes, at most */
#define ZSTD_LEVEL	3

void usyms_hex(const uint8_t *id, size_t len, char *hex)
{
	for (size_t i = 0; i < len; i++)
		sprintf(hex + 2 * i, "%02x", id[i]);
	hex[2 * len] = '\0';
}

/* The first NT_GNU_BUILD_ID "GNU" note of @d, into @id: its length, or 0. */
static int note_build_id(Elf_Data *d, uint8_t *id)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	while (off < d->d_size &&
	       (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp((const char *)d->d_buf + name_off, "GNU", 4) &&
		    nh.n_descsz >= 1 && nh.n_descsz <= USYMS_BUILD_ID_MAX) {
			memcpy(id, (const char *)d->d_buf + desc_off, nh.n_descsz);
			return (int)nh.n_descsz;
		}
		off = next;
	}
	return 0;
}

int usyms_build_id(const void *buf, size_t len, uint8_t id[USYMS_BUILD_ID_MAX],
		   char *why, size_t size)
{
	size_t nr_phdr;
	int n = 0;
	Elf *e;

	elf_version(EV_CURRENT);
	/* libelf reads the image in place: it is never written through. */
	e = elf_memory((char *)buf, len);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		snprintf(why, size, "not an ELF file");
		goto out;
	}
	if (elf_getphdrnum(e, &nr_phdr)) {
		snprintf(why, size, "no program headers: %s", elf_errmsg(-1));
		goto out;
	}
	for (size_t i = 0; i < nr_phdr && !n; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (d)
			n = note_build_id(d, id);
	}
	if (!n)
		snprintf(why, size, "no GNU build-id note");
out:
	elf_end(e);
	return n ? n : -EINVAL;
}

/* ---- put ------------------------------------------------------------------ */

/* All of @fd from its start, at most USYMS_MAX_SIZE bytes. */
static int read_all(int fd, void **out, size_t *len, char *why, size_t size)
{
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (n == cap) {
			char *p;

			if (cap >= USYMS_MAX_SIZE) {
				free(buf);
				snprintf(why, size, "larger than %llu bytes",
					 (unsigned long long)USYMS_MAX_SIZE);
				return -EFBIG;
			}
			cap *= 2;
			p = realloc(buf, cap);
			if (!p) {
				free(buf);
				return -ENOMEM;
			}
			buf = p;
		}
		r = pread(fd, buf + n, cap - n, (off_t)n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int err = -errno;

			snprintf(why, size, "read: %s", strerror(errno));
			free(buf);
			return err;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	*out = buf;
	*len = n;
	return 0;
}

static void put_path(FILE *f, const char *path)
{
	for (; *path; path++) {
		if (*path == '\\')
			fputs("\\\\", f);
		else if (*path == '\n')
			fputs("\\n", f);
		else
			fputc(*path, f);
	}
}

/* The header line and the compressed image into a new file @tmp of @sub. */
static int write_file(int sub, const char *tmp, const void *image, size_t len,
		      uint64_t mtime, const char *path, uint64_t *written,
		      char *why, size_t size)
{
	size_t bound = ZSTD_compressBound(len), clen;
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	void *frame = malloc(bound);
	int fd = -1, err = 0;
	FILE *f = NULL;
	long hlen;

	if (!cc || !frame) {
		err = -ENOMEM;
		goto out;
	}
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, ZSTD_LEVEL);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	clen = ZSTD_compress2(cc, frame, bound, image, len);
	if (ZSTD_isError(clen)) {
		snprintf(why, size, "zstd: %s", ZSTD_getErrorName(clen));
		err = -EIO;
		goto out;
	}
	fd = openat(sub, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		err = -errno;
		snprintf(why, size, "%s: %s", tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto out;
	}
	fprintf(f, HEADER_MAGIC "%zu %" PRIu64 " ", len, mtime);
	put_path(f, path);
	fputc('\n', f);
	hlen = ftell(f);
	if (fwrite(frame, 1, clen, f) != clen || fflush(f) || fsync(fileno(f))) {
		err = -errno;
		snprintf(why, size, "%s: %s", tmp, strerror(errno));
	}
	if (fclose(f) && !err) {
		err = -errno;
		snprintf(why, size, "%s: %s", tmp, strerror(errno));
	}
	*written = (uint64_t)hlen + clen;
out:
	free(frame);
	ZSTD_freeCCtx(cc);
	return err;
}

int usyms_put(int dirfd, const uint8_t *id, size_t id_len, int fd,
	      const char *path, uint64_t *written, char *why, size_t size)
{
	char hex[2 * USYMS_BUILD_ID_MAX + 1], tmp[2 * USYMS_BUILD_ID_MAX + 16];
	uint8_t got[USYMS_BUILD_ID_MAX];
	int store = -1, sub = -1, err, n;
	void *image = NULL;
	struct stat st;
	size_t len;

	*written = 0;
	if (id_len < 1 || id_len > USYMS_BUILD_ID_MAX) {
		snprintf(why, size, "a build-id of %zu bytes", id_len);
		return -EINVAL;
	}
	usyms_hex(id, id_len, hex);
	if (fstat(fd, &st)) {
		snprintf(why, size, "stat: %s", strerror(errno));
		return -errno;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, size, "not a regular file");
		return -EINVAL;
	}
	if ((uint64_t)st.st_size > USYMS_MAX_SIZE) {
		snprintf(why, size, "larger than %llu bytes",
			 (unsigned long long)USYMS_MAX_SIZE);
		return -EFBIG;
	}
	err = read_all(fd, &image, &len, why, size);
	if (err)
		return err;
	n = usyms_build_id(image, len, got, why, size);
	if (n < 0 || (size_t)n != id_len || memcmp(got, id, id_len)) {
		if (n > 0) {
			char ghex[2 * USYMS_BUILD_ID_MAX + 1];

			usyms_hex(got, (size_t)n, ghex);
			snprintf(why, size, "its build-id is %s, not %s", ghex, hex);
		}
		err = -ESTALE;
		goto out;
	}
	if (mkdirat(dirfd, USYMS_DIR, 0755) && errno != EEXIST)
		goto errno_out;
	store = openat(dirfd, USYMS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (store < 0)
		goto errno_out;
	{
		char two[3] = { hex[0], hex[1], '\0' };

		if (mkdirat(store, two, 0755) && errno != EEXIST)
			goto errno_out;
		sub = openat(store, two, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (sub < 0)
			goto errno_out;
	}
	if (!faccessat(sub, hex + 2, F_OK, AT_SYMLINK_NOFOLLOW)) {
		err = 0;
		goto out;
	}
	snprintf(tmp, sizeof(tmp), ".%s.%d", hex + 2, (int)getpid());
	unlinkat(sub, tmp, 0);
	err = write_file(sub, tmp, image, len, (uint64_t)st.st_mtime, path,
			 written, why, size);
	if (!err && renameat(sub, tmp, sub, hex + 2)) {
		err = -errno;
		snprintf(why, size, "rename: %s", strerror(errno));
	}
	if (err)
		unlinkat(sub, tmp, 0);
	else
		err = 1;
	goto out;
errno_out:
	err = -errno;
	snprintf(why, size, USYMS_DIR ": %s", strerror(errno));
out:
	if (sub >= 0)
		close(sub);
	if (store >= 0)
		close(store);
	free(image);
	return err;
}

/* ---- open ----------------------------------------------------------------- */

/* The header's path, unescaped, or NULL out of memory. */
static char *get_path(const char *s, size_t n)
{
	char *p = malloc(n + 1), *o = p;

	if (!p)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\' && i + 1 < n) {
			i++;
			*o++ = s[i] == 'n' ? '\n' : s[i];
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return p;
}

/* "SIZE MTIME PATH" after the magic: 0, or -EINVAL. */
static int parse_header(const char *h, size_t n, struct usyms_file *f)
{
	const char *end = h + n;
	uint64_t v[2];

	for (int k = 0; k < 2; k++) {
		const char *s = h;

		v[k] = 0;
		while (h < end && *h >= '0' && *h <= '9') {
			if (v[k] > (UINT64_MAX - 9) / 10)
				return -EINVAL;
			v[k] = v[k] * 10 + (uint64_t)(*h++ - '0');
		}
		if (h == s || h == end || *h++ != ' ')
			return -EINVAL;
	}
	if (v[0] > USYMS_MAX_SIZE)
		return -EINVAL;
	f->size = (size_t)v[0];
	f->mtime = v[1];
	f->path = get_path(h, (size_t)(end - h));
	return f->path ? 0 : -ENOMEM;
}

int usyms_open(const char *dir, const uint8_t *id, size_t id_len,
	       struct usyms_file *out, char *why, size_t size)
{
	char hex[2 * USYMS_BUILD_ID_MAX + 1], *path = NULL;
	uint8_t got[USYMS_BUILD_ID_MAX];
	struct usyms_file f = { 0 };
	unsigned long long csize;
	uint8_t *file = NULL;
	const uint8_t *nl;
	size_t flen, hlen;
	struct stat st;
	int fd, err, n;

	if (id_len < 1 || id_len > USYMS_BUILD_ID_MAX) {
		snprintf(why, size, "a build-id of %zu bytes", id_len);
		return -EINVAL;
	}
	usyms_hex(id, id_len, hex);
	if (asprintf(&path, "%s/" USYMS_DIR "/%.2s/%s", dir, hex, hex + 2) < 0)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		err = -errno;
		snprintf(why, size, "%s: %s", path, strerror(errno));
		free(path);
		return err;
	}
	err = -EINVAL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > ZSTD_compressBound(USYMS_MAX_SIZE) + HEADER_MAX) {
		snprintf(why, size, "%s: not a store file", path);
		goto out;
	}
	if (read_all(fd, (void **)&file, &flen, why, size)) {
		snprintf(why, size, "%s: cannot be read", path);
		goto out;
	}
	nl = memchr(file, '\n', flen < HEADER_MAX ? flen : HEADER_MAX);
	hlen = sizeof(HEADER_MAGIC) - 1;
	if (!nl || (size_t)(nl - file) < hlen || memcmp(file, HEADER_MAGIC, hlen) ||
	    parse_header((const char *)file + hlen, (size_t)(nl - file) - hlen, &f)) {
		snprintf(why, size, "%s: no store header", path);
		goto out;
	}
	hlen = (size_t)(nl - file) + 1;
	csize = ZSTD_getFrameContentSize(file + hlen, flen - hlen);
	if (csize != f.size || ZSTD_findFrameCompressedSize(file + hlen, flen - hlen) !=
			       flen - hlen) {
		snprintf(why, size, "%s: not one zstd frame of %zu bytes (cut or damaged)",
			 path, f.size);
		goto out;
	}
	f.image = malloc(f.size ? f.size : 1);
	if (!f.image) {
		err = -ENOMEM;
		goto out;
	}
	if (ZSTD_decompress(f.image, f.size, file + hlen, flen - hlen) != f.size) {
		snprintf(why, size, "%s: its zstd frame is damaged", path);
		goto out;
	}
	n = usyms_build_id(f.image, f.size, got, why, size);
	if (n < 0) {
		char w[128];

		snprintf(w, sizeof(w), "%s", why);
		snprintf(why, size, "%s: %s", path, w);
		goto out;
	}
	if ((size_t)n != id_len || memcmp(got, id, id_len)) {
		char ghex[2 * USYMS_BUILD_ID_MAX + 1];

		usyms_hex(got, (size_t)n, ghex);
		snprintf(why, size, "%s: holds build-id %s", path, ghex);
		goto out;
	}
	*out = f;
	f.image = NULL;
	f.path = NULL;
	err = 0;
out:
	free(f.image);
	free(f.path);
	free(file);
	free(path);
	close(fd);
	return err;
}

void usyms_close(struct usyms_file *f)
{
	if (!f)
		return;
	free(f->image);
	free(f->path);
	f->image = NULL;
	f->path = NULL;
}

/* ---- the missing list ------------------------------------------------------ */

struct usyms_missing {
	char *text;
	size_t len;
	FILE *f;			/* open_memstream() over text */
	unsigned int nr;
};

struct usyms_missing *usyms_missing_begin(void)
{
	struct usyms_missing *ms = calloc(1, sizeof(*ms));

	if (!ms || !(ms->f = open_memstream(&ms->text, &ms->len))) {
		free(ms);
		return NULL;
	}
	return ms;
}

void usyms_missing_add(struct usyms_missing *ms, const uint8_t *id, size_t id_len,
		       const char *path, const char *reason)
{
	char hex[2 * USYMS_BUILD_ID_MAX + 1];

	if (id_len < 1 || id_len > USYMS_BUILD_ID_MAX)
		return;
	usyms_hex(id, id_len, hex);
	fprintf(ms->f, "%s\t", hex);
	for (; *reason; reason++)
		fputc(*reason == '\t' || *reason == '\n' ? ' ' : *reason, ms->f);
	fputc('\t', ms->f);
	put_path(ms->f, path);
	fputc('\n', ms->f);
	ms->nr++;
}

int usyms_missing_end(struct usyms_missing *ms, int dirfd)
{
	char tmp[32];
	int store = -1, fd = -1, err = 0;

	if (fclose(ms->f))
		err = -ENOMEM;
	if (err)
		goto out;
	store = openat(dirfd, USYMS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (store < 0 && errno == ENOENT && ms->nr) {
		if (mkdirat(dirfd, USYMS_DIR, 0755) && errno != EEXIST)
			goto errno_out;
		store = openat(dirfd, USYMS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (store < 0) {
		if (errno == ENOENT && !ms->nr)
			goto out;	/* no store, nothing missing */
		goto errno_out;
	}
	if (!ms->nr) {
		if (unlinkat(store, USYMS_MISSING, 0) && errno != ENOENT)
			goto errno_out;
		goto out;
	}
	snprintf(tmp, sizeof(tmp), "." USYMS_MISSING ".%d", (int)getpid());
	fd = openat(store, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		goto errno_out;
	for (size_t off = 0; off < ms->len;) {
		ssize_t w = write(fd, ms->text + off, ms->len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			goto errno_out;
		off += (size_t)w;
	}
	if (fsync(fd) || renameat(store, tmp, store, USYMS_MISSING))
		goto errno_out;
	goto out;
errno_out:
	err = -errno;
	if (fd >= 0)
		unlinkat(store, tmp, 0);
out:
	if (fd >= 0)
		close(fd);
	if (store >= 0)
		close(store);
	free(ms->text);
	free(ms);
	return err;
}

bool usyms_missing_why(const char *dir, const uint8_t *id, size_t id_len,
		       char *out, size_t size)
{
	char hex[2 * USYMS_BUILD_ID_MAX + 1], *path = NULL, *line = NULL;
	size_t cap = 0, hlen;
	bool found = false;
	ssize_t n;
	FILE *f;

	if (id_len < 1 || id_len > USYMS_BUILD_ID_MAX ||
	    asprintf(&path, "%s/" USYMS_DIR "/" USYMS_MISSING, dir) < 0)
		return false;
	f = fopen(path, "re");
	free(path);
	if (!f)
		return false;
	usyms_hex(id, id_len, hex);
	hlen = 2 * id_len;
	while (!found && (n = getline(&line, &cap, f)) > 0) {
		char *reason = line + hlen + 1, *tab;

		if ((size_t)n <= hlen + 1 || memcmp(line, hex, hlen) || line[hlen] != '\t')
			continue;
		tab = strchr(reason, '\t');
		if (tab)
			*tab = '\0';
		else
			reason[strcspn(reason, "\n")] = '\0';
		snprintf(out, size, "%s", reason);
		found = true;
	}
	free(line);
	fclose(f);
	return found;
}
