// SPDX-License-Identifier: GPL-2.0
/*
 * --on-chunk after a crash: the chunk sets an earlier ringtraced was
 * killed (SIGKILL, power loss) while assembling are finished and handed to
 * the hook.
 *
 * handoff.c assembles set k in a hidden .chunk-k.tmp/ of its trace
 * directory and renames it to chunk-k/ only once its manifest is written
 * and synced.  A kill before that rename leaves the staging directory with
 * some or all of the set's chunks (the others still in the trace
 * directory), perhaps a metadata or symbols copy or a manifest cut short.
 * No chunk is lost (each is renamed whole), but no reader or shipper looks
 * at a hidden directory: the set would sit there until --max-total removed
 * it.
 *
 * So at start, with --on-chunk, the traces beside the new one (in the same
 * parent directory: --root, the service's, or -o's parent) are looked at:
 * a trace directory (it has a metadata file) that no process holds locked
 * (a running ringtraced or `ringtrace compress` does), with a
 * .chunk-NNNNNN.tmp/ in it, has that set finished as handoff.c would
 * have: its chunks still in the trace directory moved in; the metadata and
 * symbols copied again from the trace directory (a copy cut short cannot
 * be told from a whole one); a manifest written from what the chunks hold;
 * synced; renamed to chunk-NNNNNN/; and queued for the hook ahead of the
 * new trace's sets.  Finishing rather than undoing: the hook is how sets
 * leave the machine, and the user asked for every set to reach it.
 *
 * The manifest of a recovered set says "recovered": true.  Its facts come
 * from the chunks' packet headers (the drain thread's counts died with
 * it): "events_lost" counts only what the set's own packets show lost
 * after its first packet.  Where it comes from is the recording's, not
 * this boot's: host and kernel release from the metadata's env, the clock
 * offsets from the metadata's clock (the module's, at the recording),
 * the boot id from another set of the trace still there, or "" when none
 * is (the machine may have rebooted since).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "ringtraced.h"

#define PACKET_HDR	sizeof(struct ringtrace_packet_header)

/*
 * A listing of @dirfd with an offset of its own: a dup() would share the
 * offset, and the listings nested here would end each other's.
 */
static DIR *list_at(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);

	if (!d && fd >= 0)
		close(fd);
	return d;
}

/* ---- what the chunks hold ------------------------------------------------------- */

/*
 * The facts of chunk @name of @dirfd from its packet headers: its
 * packets, events, first and last time, losses after its first packet.
 * A trailing partial frame or packet (a killed writer) ends it.
 */
static int chunk_read_facts(int dirfd, const char *name, struct chunk_facts *f)
{
	size_t in_cap = ZSTD_DStreamInSize(), cap = 1 << 20, len = 0;
	uint8_t *in = malloc(in_cap), *buf = malloc(cap);
	ZSTD_DCtx *z = ZSTD_createDCtx();
	uint64_t first_lost = 0;
	int fd, err = 0;
	ssize_t n;

	if (!in || !buf || !z) {
		err = -ENOMEM;
		goto out;
	}
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	while ((n = read(fd, in, in_cap)) != 0) {
		ZSTD_inBuffer zi = { .src = in };

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		zi.size = (size_t)n;
		while (zi.pos < zi.size) {
			ZSTD_outBuffer zo;
			size_t r, at = 0;

			if (cap - len < ZSTD_DStreamOutSize()) {
				uint8_t *b = realloc(buf, cap * 2);

				if (!b) {
					err = -ENOMEM;
					goto close;
				}
				buf = b;
				cap *= 2;
			}
			zo = (ZSTD_outBuffer){ buf + len, cap - len, 0 };
			r = ZSTD_decompressStream(z, &zo, &zi);
			if (ZSTD_isError(r)) {
				err = -EBADMSG;
				goto close;
			}
			len += zo.pos;
			/* Whole packets out of the buffer. */
			while (len - at >= PACKET_HDR) {
				struct ringtrace_packet_header h;
				uint64_t size;

				memcpy(&h, buf + at, sizeof(h));
				size = h.content_size / 8;
				if (h.magic != RINGTRACE_CTF_MAGIC || size < PACKET_HDR) {
					err = -EBADMSG;
					goto close;
				}
				if (len - at < size)
					break;
				if (!f->packets++) {
					f->ts_first = h.timestamp_begin;
					first_lost = h.events_discarded;
				}
				f->ts_last = h.timestamp_end;
				f->events += h.events;
				f->lost = h.events_discarded - first_lost;
				at += size;
			}
			memmove(buf, buf + at, len - at);
			len -= at;
		}
	}
close:
	close(fd);
out:
	ZSTD_freeDCtx(z);
	free(in);
	free(buf);
	return err;
}

/* @dirfd/@name whole, NUL-terminated (at most 16 MiB); NULL with errno. */
static char *read_file_at(int dirfd, const char *name, size_t *len)
{
	struct stat st;
	char *buf = NULL;
	ssize_t n;
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);

	*len = 0;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || st.st_size > (16 << 20)) {
		errno = EFBIG;
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		goto out;
	while (*len < (size_t)st.st_size &&
	       (n = read(fd, buf + *len, (size_t)st.st_size - *len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			buf = NULL;
			goto out;
		}
		*len += (size_t)n;
	}
	buf[*len] = '\0';
out:
	close(fd);
	return buf;
}

/* ---- where the set comes from -------------------------------------------------- */

/* The TSDL value of "@key = " after @block in @meta, quotes dropped. */
static bool tsdl_value(const char *meta, const char *block, const char *key,
		       char *buf, size_t size)
{
	const char *p = strstr(meta, block), *e;
	char pat[64];

	if (!p)
		return false;
	snprintf(pat, sizeof(pat), "\t%s = ", key);
	p = strstr(p, pat);
	if (!p)
		return false;
	p += strlen(pat);
	if (*p == '"')
		p++;
	e = p + strcspn(p, "\";\n");
	snprintf(buf, size, "%.*s", (int)(e - p), p);
	return true;
}

/* A "key": "value" of a manifest the daemon wrote (no escapes in ids). */
static void json_value(const char *text, const char *key, char *buf, size_t size)
{
	char pat[64];
	const char *p, *e;

	snprintf(pat, sizeof(pat), "\"%s\": \"", key);
	p = strstr(text, pat);
	if (!p)
		return;
	p += strlen(pat);
	e = strchr(p, '"');
	if (e && (size_t)(e - p) < size)
		snprintf(buf, size, "%.*s", (int)(e - p), p);
}

/* The boot id in a finished set of trace @tfd, if one is still there. */
static void sibling_boot_id(int tfd, char *buf, size_t size)
{
	struct dirent *de;
	DIR *d = list_at(tfd);

	if (!d)
		return;
	while (!*buf && (de = readdir(d))) {
		char path[SET_NAME_MAX + 16], text[4096];
		ssize_t n;
		int mfd;

		if (strncmp(de->d_name, "chunk-", 6) || strlen(de->d_name) >= SET_NAME_MAX)
			continue;
		snprintf(path, sizeof(path), "%s/manifest.json", de->d_name);
		mfd = openat(tfd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (mfd < 0)
			continue;
		n = read(mfd, text, sizeof(text) - 1);
		close(mfd);
		if (n > 0) {
			text[n] = '\0';
			json_value(text, "boot_id", buf, size);
		}
	}
	closedir(d);
}

/* Where trace @tfd (named @tname, its metadata @meta) was recorded. */
static void recorded_origin(struct manifest_origin *o, int tfd,
			    const char *tname, const char *meta,
			    const struct chunk_facts *f, unsigned int nf)
{
	char s[32] = "0", ns[32] = "0", boot[32] = "0";

	memset(o, 0, sizeof(*o));
	o->recovered = true;
	o->trace = tname;
	tsdl_value(meta, "env {", "hostname", o->host, sizeof(o->host));
	tsdl_value(meta, "env {", "kernel_release", o->release, sizeof(o->release));
	tsdl_value(meta, "env {", "boottime_offset", boot, sizeof(boot));
	tsdl_value(meta, "clock {", "offset_s", s, sizeof(s));
	tsdl_value(meta, "clock {", "offset", ns, sizeof(ns));
	sibling_boot_id(tfd, o->boot_id, sizeof(o->boot_id));
	/* The clocks at the set's end, as the module's offsets make them. */
	for (unsigned int i = 0; i < nf; i++)
		if ((int64_t)f[i].ts_last > o->mono)
			o->mono = (int64_t)f[i].ts_last;
	o->real = o->mono + strtoll(s, NULL, 10) * 1000000000 + strtoll(ns, NULL, 10);
	o->boot = o->mono + strtoll(boot, NULL, 10);
}

/* ---- finishing a set -------------------------------------------------------------- */

/* Chunk names of set @seq in @dirfd: moved into @setfd when @move, listed. */
static int set_chunks(int dirfd, int setfd, unsigned int seq, bool move,
		      struct chunk_facts **f, unsigned int *nf)
{
	DIR *d = list_at(move ? dirfd : setfd);
	struct dirent *de;
	int err = 0;

	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		unsigned int cpu, s;
		struct chunk_facts *n;

		if (!chunk_parse_name(de->d_name, &cpu, &s) || s != seq)
			continue;
		if (move) {
			if (renameat(dirfd, de->d_name, setfd, de->d_name) < 0)
				err = -errno;
			continue;
		}
		n = realloc(*f, (*nf + 1) * sizeof(*n));
		if (!n) {
			err = -ENOMEM;
			break;
		}
		*f = n;
		memset(&n[*nf], 0, sizeof(*n));
		n[*nf].cpu = cpu;
		n[*nf].seq = seq;
		(*nf)++;
	}
	closedir(d);
	return err;
}

static int cmp_facts(const void *a, const void *b)
{
	const struct chunk_facts *x = a, *y = b;

	return (x->cpu > y->cpu) - (x->cpu < y->cpu);
}

/*
 * Trace @tfd's (named @tname) staging directory @tmp of set @seq finished
 * into chunk-NNNNNN; what failed in @what.  0 or -errno.
 */
static int finish_set(int tfd, const char *tname, const char *tmp,
		      unsigned int seq, char *what, size_t wsize)
{
	char name[SET_NAME_MAX], cname[CHUNK_NAME_MAX];
	struct manifest_file *files = NULL;
	struct chunk_facts *f = NULL;
	struct manifest_origin o;
	unsigned int nf = 0, nfiles = 0;
	char *meta = NULL;
	size_t meta_len = 0;
	int setfd, err;
	struct stat st;

	snprintf(name, sizeof(name), "chunk-%06u", seq);
	snprintf(what, wsize, "%s", tmp);
	setfd = openat(tfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (setfd < 0)
		return -errno;
	if (!fstatat(tfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		err = -EEXIST;		/* a set of that number is there already */
		snprintf(what, wsize, "%s", name);
		goto out;
	}
	/* What a whole set would hold but this one may hold cut short. */
	unlinkat(setfd, "manifest.json", 0);
	unlinkat(setfd, "metadata", 0);
	unlinkat(setfd, KSYMS_FILE, 0);
	err = set_chunks(tfd, setfd, seq, true, NULL, NULL);
	if (!err)
		err = set_chunks(tfd, setfd, seq, false, &f, &nf);
	if (!err && !nf)
		err = -ENOENT;
	if (err)
		goto out;
	qsort(f, nf, sizeof(*f), cmp_facts);
	files = calloc(nf + 2, sizeof(*files));
	if (!files) {
		err = -ENOMEM;
		goto out;
	}
	for (unsigned int i = 0; i < nf; i++) {
		chunk_name(cname, sizeof(cname), f[i].cpu, seq);
		snprintf(what, wsize, "%s/%s", tmp, cname);
		err = chunk_read_facts(setfd, cname, &f[i]);
		if (!err)
			err = manifest_file_sum(setfd, cname, &files[nfiles++]);
		if (err)
			goto out;
	}
	snprintf(what, wsize, "metadata");
	err = copy_synced(tfd, setfd, "metadata", true);
	if (err)
		goto out;
	err = manifest_file_sum(setfd, "metadata", &files[nfiles++]);
	if (err)
		goto out;
	snprintf(what, wsize, KSYMS_FILE);
	err = copy_synced(tfd, setfd, KSYMS_FILE, true);
	if (!err)
		err = manifest_file_sum(setfd, KSYMS_FILE, &files[nfiles++]);
	if (err < 0)
		goto out;
	snprintf(what, wsize, "%s/metadata", tmp);
	meta = read_file_at(setfd, "metadata", &meta_len);
	if (!meta) {
		err = -errno;
		goto out;
	}
	recorded_origin(&o, tfd, tname, meta, f, nf);
	snprintf(what, wsize, "%s/manifest.json", tmp);
	err = manifest_write(setfd, seq, f, nf, files, nfiles, meta, &o);
	if (err)
		goto out;
	snprintf(what, wsize, "%s", name);
	if (fsync(setfd) < 0 || renameat(tfd, tmp, tfd, name) < 0 || fsync(tfd) < 0)
		err = -errno;
out:
	close(setfd);
	free(meta);
	free(files);
	free(f);
	return err;
}

/* .chunk-NNNNNN.tmp: true and its number. */
static bool staging_name(const char *name, unsigned int *seq)
{
	char tail[8];

	return sscanf(name, ".chunk-%6u%7s", seq, tail) == 2 &&
	       !strcmp(tail, ".tmp") && strlen(name) == strlen(".chunk-000000.tmp");
}

/* The staging directories of the trace @tname in @parent finished. */
static void recover_trace(int parent, const char *pname, const char *tname)
{
	char what[SET_NAME_MAX + CHUNK_NAME_MAX + 32], path[PATH_MAX + 512];
	int tfd, err;
	struct dirent *de;
	struct stat st;
	unsigned int seq;
	DIR *d;

	tfd = openat(parent, tname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd < 0)
		return;
	/* A trace, and no one's now (a live ringtraced, ringtrace compress). */
	if (fstatat(tfd, "metadata", &st, 0) || !S_ISREG(st.st_mode) ||
	    flock(tfd, LOCK_EX | LOCK_NB) < 0) {
		close(tfd);
		return;
	}
	d = list_at(tfd);
	if (!d) {
		close(tfd);
		return;
	}
	while ((de = readdir(d))) {
		if (!staging_name(de->d_name, &seq))
			continue;
		err = finish_set(tfd, tname, de->d_name, seq, what, sizeof(what));
		snprintf(path, sizeof(path), "%s/%s/chunk-%06u", pname, tname, seq);
		if (err) {
			warn("%s/%s/%s: chunk set %u left half-assembled by a killed ringtraced, not finished: %s",
			     pname, tname, what, seq, strerror(-err));
			continue;
		}
		info("%s: chunk set left half-assembled by a killed ringtraced, finished (\"recovered\" in its manifest)",
		     path);
		handoff_recovered(path);
	}
	closedir(d);
	close(tfd);		/* and its lock */
}

void recover_sets(void)
{
	char pname[PATH_MAX], *slash;
	struct dirent *de;
	int parent;
	DIR *d;

	snprintf(pname, sizeof(pname), "%s", outdir);
	slash = strrchr(pname, '/');
	if (!slash)
		snprintf(pname, sizeof(pname), ".");
	else if (slash == pname)
		pname[1] = '\0';
	else
		*slash = '\0';
	parent = open(pname, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (parent < 0)
		return;
	d = fdopendir(parent);
	if (!d) {
		close(parent);
		return;
	}
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && strcmp(de->d_name, outname) &&
		    (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN))
			recover_trace(parent, pname, de->d_name);
	closedir(d);
}
