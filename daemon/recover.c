// SPDX-License-Identifier: GPL-2.0
/*
 * --on-chunk across a kill, a crash, a power cut or a stop's deadline:
 * every set an earlier ringtraced made and the hook did not take, and
 * every rotation it closed but did not assemble, handed over by the next
 * start with --on-chunk.
 *
 * handoff.c assembles set k in a hidden .chunk-k.tmp/ of its trace
 * directory and renames it to chunk-k/ only once its manifest is written
 * and synced; it marks chunk-k/ shipped (.chunk-k.shipped, synced) only
 * once its hook exited 0.  What a daemon that ended early leaves:
 *
 *   chunk-k/, not marked     queued, waiting for room, in the hook's
 *                            hands, or its hook failed: handed again,
 *                            with RINGTRACE_CHUNK_RETRY=1, if it is whole
 *                            (its manifest there, and every file it lists
 *                            with its size: set_is_whole()); one a hook
 *                            took part of is left, said
 *   .chunk-k.tmp/            the assembly cut short: some or all of the
 *                            set's chunks (the others still beside it),
 *                            perhaps a metadata or symbols copy or a
 *                            manifest cut short
 *   cpuN-k.zst               a rotation not assembled yet (its chunks were
 *                            being packed, or it was being recorded)
 *   .removing-chunk-k/       --max-total's removal of a set, cut short:
 *                            removed
 *
 * The last two are assembled here as handoff.c would have, and handed
 * over: the chunks still in the trace directory moved in; the metadata
 * and symbols copied again from the trace directory (a copy cut short
 * cannot be told from a whole one); a manifest written from what the
 * chunks hold; synced; renamed to chunk-NNNNNN/.  No chunk is lost (each
 * is renamed whole; a trailing frame cut by a kill is what readers drop).
 *
 * Which traces: those beside the new one (in the same parent directory:
 * --root, the service's, or -o's parent, which may be /tmp) that this
 * daemon's user made with --on-chunk and no process holds locked (a
 * running ringtraced, `ringtrace compress`):
 *
 *   the directory            ours (owner), written by nobody else (no
 *                            group or other write bit), not a symlink
 *   HANDOFF_MARKER in it     a regular file of ours with one link, not a
 *                            symlink: written by recover_mark_trace() when
 *                            the trace was made
 *   flock()                  taken, and held while any of its sets is
 *                            queued or in the hook's hands (handoff.c):
 *                            --max-total leaves it alone meanwhile
 *
 * Each entry there is looked at by one statx() that follows no symlink,
 * triggers no automount and waits on no FUSE or network file system
 * (maybe_ours()); only a directory on the parent's file system that is
 * this user's and written by no one else is opened, to look for its
 * marker.  Nothing else is opened: with -o /tmp/x, /tmp is listed, the
 * rest of it not read.  Inside one, every file is opened with O_NOFOLLOW |
 * O_NONBLOCK and taken only if it is a regular file: a FIFO named like a
 * chunk cannot hang the start, a symlink cannot bring another file into a
 * set.
 *
 * The scan is at start, before the first --max-total and before the new
 * trace's sets (cheap: a listing per trace of ours); the reading and
 * copying of recover_finish() is the handoff thread's, so that a large
 * backlog does not delay the recording.
 *
 * The manifest of a set assembled here says "recovered": true.  Its facts
 * come from the chunks' packet headers (the drain thread's counts died
 * with it): "events_lost" counts only what the set's own packets show lost
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
#include <sys/sysmacros.h>
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

/* A regular file @name in @dirfd, not followed. */
static bool is_regular_at(int dirfd, const char *name, struct stat *st)
{
	return !fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) &&
	       S_ISREG(st->st_mode);
}

/* ---- what the chunks hold ------------------------------------------------------- */

/*
 * The facts of chunk @name of @dirfd from its packet headers: its
 * packets, events, first and last time, losses after its first packet.
 * A trailing partial frame or packet (a killed writer), or damage (a
 * power cut), ends them: the chunk goes into the set as it is, and its
 * readers say what they cannot read.
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
	fd = rt_open_regular(dirfd, name, NULL);
	if (fd < 0) {
		err = fd;
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
			/* Damage ends what the manifest counts, not the set. */
			if (ZSTD_isError(r))
				goto close;
			len += zo.pos;
			/* Whole packets out of the buffer. */
			while (len - at >= PACKET_HDR) {
				struct ringtrace_packet_header h;
				uint64_t size;

				memcpy(&h, buf + at, sizeof(h));
				size = h.content_size / 8;
				/* No sub-buffer is larger: damage, not a packet to wait for. */
				if (h.magic != RINGTRACE_CTF_MAGIC || size < PACKET_HDR ||
				    size > RINGTRACE_MAX_SUBBUF_SIZE)
					goto close;
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
	int fd = rt_open_regular(dirfd, name, NULL);

	*len = 0;
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
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
		char text[4096];
		ssize_t n;
		int sfd, mfd;

		if (strncmp(de->d_name, "chunk-", 6))
			continue;
		sfd = openat(tfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sfd < 0)
			continue;
		mfd = rt_open_regular(sfd, "manifest.json", NULL);
		close(sfd);
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

/*
 * The chunks of set @seq: those in @dirfd moved into @setfd when @move,
 * else those in @setfd listed.  Regular files only: anything else named
 * like a chunk is not one.  An empty one holds nothing (a chunk opened
 * just before a kill) and would be no zstd file: removed.
 */
static int set_chunks(int dirfd, int setfd, unsigned int seq, bool move,
		      struct chunk_facts **f, unsigned int *nf)
{
	int from = move ? dirfd : setfd;
	DIR *d = list_at(from);
	struct dirent *de;
	struct stat st;
	int err = 0;

	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		unsigned int cpu, s;
		struct chunk_facts *n;

		if (!chunk_parse_name(de->d_name, &cpu, &s) || s != seq ||
		    !is_regular_at(from, de->d_name, &st))
			continue;
		if (!st.st_size) {
			unlinkat(from, de->d_name, 0);
			continue;
		}
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

int recover_finish(int tfd, const char *tpath, unsigned int seq, char *what,
		   size_t wsize)
{
	const char *tname = strrchr(tpath, '/') ? strrchr(tpath, '/') + 1 : tpath;
	char tmp[SET_NAME_MAX + 8];
	int err;

	snprintf(tmp, sizeof(tmp), ".chunk-%06u.tmp", seq);
	/* Only loose chunks: the staging directory handoff.c would have made. */
	if (mkdirat(tfd, tmp, 0750) < 0 && errno != EEXIST) {
		snprintf(what, wsize, "%s", tmp);
		return -errno;
	}
	err = finish_set(tfd, tname, tmp, seq, what, wsize);
	if (err)
		unlinkat(tfd, tmp, AT_REMOVEDIR);	/* if empty */
	return err;
}

/* ---- which traces, which sets ------------------------------------------------------ */

/* "chunk-NNNNNN" (@dot: ".chunk-NNNNNN.tmp") as handoff.c names it: its number. */
static bool set_name_of(const char *name, bool dot, unsigned int *seq)
{
	char again[SET_NAME_MAX + 8];
	unsigned long v;
	char *end;

	if (strncmp(name, dot ? ".chunk-" : "chunk-", dot ? 7 : 6))
		return false;
	name += dot ? 7 : 6;
	if (*name < '0' || *name > '9')
		return false;
	v = strtoul(name, &end, 10);
	if (v > UINT_MAX || strcmp(end, dot ? ".tmp" : ""))
		return false;
	*seq = (unsigned int)v;
	snprintf(again, sizeof(again), "%06u%s", *seq, dot ? ".tmp" : "");
	return !strcmp(again, name);
}

/*
 * The set @name of trace @tfd is whole: its manifest.json there, ended,
 * and every file it lists there, a regular file of the size it says.  A
 * hook that took part of the set, or a removal cut short, leaves one that
 * is not: what it lacks in @why.  (Checksums are the reader's: the set is
 * handed over as it is.)
 */
static bool set_is_whole(int tfd, const char *name, char *why, size_t wsize)
{
	static const char files_at[] = "\"files\": [", name_at[] = "{\"name\": \"",
			  size_at[] = "\", \"size\": ", tail[] = "\n  ]\n}\n";
	unsigned int files = 0;
	char fname[NAME_MAX + 1], *text = NULL, *p, *end;
	unsigned long long size;
	bool whole = false;
	struct stat st;
	size_t len, n;
	int sfd;

	sfd = openat(tfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		     O_NONBLOCK | O_CLOEXEC);
	if (sfd < 0) {
		snprintf(why, wsize, "%s", strerror(errno));
		return false;
	}
	text = read_file_at(sfd, "manifest.json", &len);
	if (!text) {
		snprintf(why, wsize, "manifest.json: %s", strerror(errno));
		goto out;
	}
	/* manifest.c ends it so: one cut short ends elsewhere. */
	if (len < sizeof(tail) - 1 || strcmp(text + len - (sizeof(tail) - 1), tail) ||
	    !(p = strstr(text, files_at))) {
		snprintf(why, wsize, "manifest.json: cut short");
		goto out;
	}
	for (p += sizeof(files_at) - 1; (p = strstr(p, name_at)); files++) {
		p += sizeof(name_at) - 1;
		n = strcspn(p, "\"\\/");
		if (!n || n > NAME_MAX || p[n] != '"' ||
		    strncmp(p + n, size_at, sizeof(size_at) - 1)) {
			snprintf(why, wsize, "manifest.json: not as ringtraced writes it");
			goto out;
		}
		snprintf(fname, sizeof(fname), "%.*s", (int)n, p);
		p += n + sizeof(size_at) - 1;
		size = strtoull(p, &end, 10);
		p = end;
		if (fstatat(sfd, fname, &st, AT_SYMLINK_NOFOLLOW)) {
			snprintf(why, wsize, "%s: %s", fname, strerror(errno));
			goto out;
		}
		if (!S_ISREG(st.st_mode) || (unsigned long long)st.st_size != size) {
			snprintf(why, wsize, "%s: %lld bytes, its manifest says %llu",
				 fname, S_ISREG(st.st_mode) ? (long long)st.st_size : -1LL,
				 size);
			goto out;
		}
	}
	whole = files > 0;
	if (!whole)
		snprintf(why, wsize, "manifest.json: lists no files");
out:
	free(text);
	close(sfd);
	return whole;
}

/*
 * The set @name of trace @tfd is locked: a hook an earlier ringtraced
 * started, or something it left running, still has it (handoff.c's lock,
 * on a descriptor the hook inherited; the kill of its daemon, outside a
 * unit that ends its processes, did not end them).
 */
static bool set_is_held(int tfd, const char *name)
{
	int fd = open_locked(tfd, name);

	if (fd >= 0)
		close(fd);
	return fd == -EBUSY;
}

/*
 * A trace this daemon's user made with --on-chunk, that nobody else could
 * have changed: the directory ours and written by us alone, its marker a
 * regular file of ours with one link.  Nothing is followed.
 */
static bool trace_is_ours(int tfd)
{
	struct stat st;
	bool ours;
	int fd;

	if (fstat(tfd, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)))
		return false;
	fd = rt_open_regular(tfd, HANDOFF_MARKER, NULL);
	if (fd < 0)
		return false;
	ours = !fstat(fd, &st) && st.st_uid == geteuid() && st.st_nlink == 1;
	close(fd);
	return ours;
}

void recover_mark_trace(void)
{
	static const char text[] =
		"ringtraced --on-chunk made this trace: its chunk sets go to the hook,\n"
		"and .chunk-NNNNNN.shipped marks each set the hook took (exit 0) and left\n"
		"here.  A later ringtraced --on-chunk hands the others over again.\n";
	int fd, err;

	fd = openat(outdirfd, HANDOFF_MARKER,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0)
		die("%s/" HANDOFF_MARKER ": %s", outdir, strerror(errno));
	err = write_all(fd, text, sizeof(text) - 1);
	if (!err && fdatasync(fd) < 0)
		err = -errno;
	close(fd);
	if (!err && fsync(outdirfd) < 0)
		err = -errno;
	if (err)
		die("%s/" HANDOFF_MARKER ": %s", outdir, strerror(-err));
}

static int cmp_recovered(const void *a, const void *b)
{
	const struct recovered *x = a, *y = b;

	if (x->seq != y->seq)
		return (x->seq > y->seq) - (x->seq < y->seq);
	/* A whole set first: loose chunks of its number are not its. */
	return (int)x->finish - (int)y->finish;
}

/* A directory beside the new trace that may be one of ours. */
struct candidate {
	char *name;
	dev_t dev;
	ino_t ino;
};

/*
 * The entry @name of @parent (on the file system @dev) may be a trace of
 * ours: a directory on the same file system (no mount point), this user's,
 * written by no one else.  Told by one statx() that follows no symlink,
 * triggers no automount and asks no FUSE or network file system for fresh
 * attributes (AT_STATX_DONT_SYNC): another user's mount in /tmp cannot
 * stall the start, and nothing else is opened.
 */
static bool maybe_ours(int parent, const char *name, dev_t dev,
		       struct candidate *c)
{
	struct statx sx;

	if (statx(parent, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT |
		  AT_STATX_DONT_SYNC, STATX_TYPE | STATX_MODE | STATX_UID |
		  STATX_INO, &sx) < 0 || !S_ISDIR(sx.stx_mode) ||
	    makedev(sx.stx_dev_major, sx.stx_dev_minor) != dev ||
	    sx.stx_uid != geteuid() || (sx.stx_mode & (S_IWGRP | S_IWOTH)))
		return false;
	c->dev = dev;
	c->ino = sx.stx_ino;
	return true;
}

/*
 * The sets of the trace @c in @parent (@pname) to hand over, when it is
 * still what maybe_ours() saw, ours (its marker) and no one's now; its fd
 * goes to handoff.c with them.
 */
static void recover_trace(int parent, const char *pname,
			  const struct candidate *c)
{
	const char *tname = c->name;
	char path[PATH_MAX + NAME_MAX + 2], mark[SHIPPED_NAME_MAX], why[NAME_MAX + 128];
	char (*tombs)[NAME_MAX + 1] = NULL;
	unsigned int ntombs = 0;
	struct recovered *r = NULL, *more;
	unsigned int n = 0, cap = 0, i, k, seq, cpu;
	struct dirent *de;
	struct stat st;
	bool finish, skip;
	int tfd;
	DIR *d;

	tfd = openat(parent, tname,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (tfd < 0)
		return;
	/* Ours, and no one's now (a live ringtraced, ringtrace compress). */
	if (fstat(tfd, &st) || st.st_dev != c->dev || st.st_ino != c->ino ||
	    !trace_is_ours(tfd) || flock(tfd, LOCK_EX | LOCK_NB) < 0) {
		close(tfd);
		return;
	}
	snprintf(path, sizeof(path), "%s%s%s", pname,
		 strcmp(pname, "/") ? "/" : "", tname);
	d = list_at(tfd);
	while (d && (de = readdir(d))) {
		if (set_name_of(de->d_name, false, &seq)) {
			/*
			 * Whatever stands at a set's name, handed over or not,
			 * keeps what else bears its number from being made a
			 * set: it would find the name taken.
			 */
			shipped_name(mark, sizeof(mark), seq);
			if (fstatat(tfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW))
				continue;
			finish = false;
			skip = !S_ISDIR(st.st_mode) ||
			       !fstatat(tfd, mark, &st, AT_SYMLINK_NOFOLLOW);
			if (!skip && !set_is_whole(tfd, de->d_name, why, sizeof(why))) {
				warn("%s/%s: not handed to --on-chunk: incomplete (%s); left as it is",
				     path, de->d_name, why);
				skip = true;
			}
			if (!skip && set_is_held(tfd, de->d_name)) {
				warn("%s/%s: not handed to --on-chunk now: a hook an earlier ringtraced started still holds it (it outlived its daemon); the next start looks again",
				     path, de->d_name);
				skip = true;
			}
		} else if (set_name_of(de->d_name, true, &seq)) {
			if (fstatat(tfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
			    !S_ISDIR(st.st_mode))
				continue;
			finish = true;
			skip = false;
		} else if (!strncmp(de->d_name, ".removing-", 10) &&
			   set_name_of(de->d_name + 10, false, &seq)) {
			/* A removal of --max-total's that a kill cut short. */
			void *more_tombs = realloc(tombs, (ntombs + 1) * sizeof(*tombs));

			if (more_tombs) {
				tombs = more_tombs;
				snprintf(tombs[ntombs++], sizeof(tombs[0]), "%s",
					 de->d_name);
			}
			continue;
		} else if (chunk_parse_name(de->d_name, &cpu, &seq)) {
			if (!is_regular_at(tfd, de->d_name, &st))
				continue;
			/* Opened just before the end, never written: nothing. */
			if (!st.st_size) {
				unlinkat(tfd, de->d_name, 0);
				continue;
			}
			finish = true;
			skip = false;
		} else {
			continue;
		}
		if (n == cap) {
			more = realloc(r, (cap ? 2 * cap : 16) * sizeof(*r));
			if (!more)
				break;
			r = more;
			cap = cap ? 2 * cap : 16;
		}
		r[n++] = (struct recovered){ .seq = seq, .finish = finish,
					     .skip = skip };
	}
	if (d)
		closedir(d);
	for (i = 0; i < ntombs; i++) {
		int err = retention_remove_tree(tfd, tombs[i]);

		if (err)
			warn("%s/%s: %s (a chunk set --max-total was removing when its ringtraced ended)",
			     path, tombs[i], strerror(-err));
		else
			info("%s/%s: removed, a chunk set --max-total was removing when its ringtraced ended",
			     path, tombs[i]);
	}
	free(tombs);
	/* In order, one entry per number. */
	if (n)
		qsort(r, n, sizeof(*r), cmp_recovered);
	for (i = k = 0; i < n; i++) {
		if (i && r[i - 1].seq == r[i].seq) {
			/* Said once: a set's name sorts first, then the rest. */
			if (!r[i - 1].finish && r[i].finish)
				warn("%s/chunk-%06u: chunks of that number beside it (cpuN-%06u.zst or .chunk-%06u.tmp): left as they are",
				     path, r[i].seq, r[i].seq, r[i].seq);
			continue;
		}
		if (!r[i].skip)
			r[k++] = r[i];
	}
	if (k)
		handoff_recovered(tfd, path, r, k);
	else
		close(tfd);
	free(r);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(((const struct candidate *)a)->name,
		      ((const struct candidate *)b)->name);
}

void recover_sets(void)
{
	struct candidate *c = NULL, *more;
	char pname[PATH_MAX], *slash;
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	struct stat pst;
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
	if (fstat(parent, &pst) < 0) {
		close(parent);
		return;
	}
	d = list_at(parent);
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.' || !strcmp(de->d_name, outname) ||
		    (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		if (n == cap) {
			more = realloc(c, (cap ? 2 * cap : 16) * sizeof(*c));
			if (!more)
				break;
			c = more;
			cap = cap ? 2 * cap : 16;
		}
		if (!maybe_ours(parent, de->d_name, pst.st_dev, &c[n]))
			continue;
		if (!(c[n].name = strdup(de->d_name)))
			break;
		n++;
	}
	if (d)
		closedir(d);
	/* --root's names are start times: the oldest trace's sets first. */
	if (n)
		qsort(c, n, sizeof(*c), cmp_names);
	for (i = 0; i < n; i++) {
		recover_trace(parent, pname, &c[i]);
		free(c[i].name);
	}
	free(c);
	close(parent);
}
