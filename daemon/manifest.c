// SPDX-License-Identifier: GPL-2.0
/*
 * A chunk set's manifest.json (--on-chunk, handoff.c): what a machine
 * that receives the set alone needs to know about it, in JSON that any
 * tool reads (jq, a log shipper).  A few fields, so written here; the
 * checksums are XXH64 from libxxhash (zstd's own XXH64 is not its public
 * API).
 *
 *   {
 *     "format": "ringtrace-chunk-set", "format_version": 1,
 *     "host": ..., "boot_id": ..., "kernel_release": ...,
 *     "ringtrace_version": ..., "trace": <the trace directory's name>,
 *     "trace_uuid": <the metadata's trace uuid>, "sequence": k,
 *     "clock": { "name": "monotonic", "monotonic_ns": .., "realtime_ns": ..,
 *                "boottime_ns": .., "realtime_offset_ns": ..,
 *                "boottime_offset_ns": .. },
 *     "cpus": [ { "cpu": n, "file": ..., "packets": .., "events": ..,
 *                 "events_lost": .., "first_timestamp": ..,
 *                 "last_timestamp": .. }, ... ],
 *     "files": [ { "name": ..., "size": .., "xxh64": "16 hex digits" }, ... ]
 *   }
 *
 * Timestamps are the trace clock's (CLOCK_MONOTONIC, ns); the three clocks
 * are read together when the manifest is written, so that wall-clock time
 * = timestamp + realtime_offset_ns (and boot time likewise).  "events" are
 * the events in the set's packets; "events_lost" what the buffer reported
 * lost (events_discarded) since the CPU's previous chunk, or, for the
 * first, since the recording began (include/uapi/linux/ringtrace.h).
 *
 * The same clocks, read as a recording ends, go into its trace
 * directory's CLOCK_FILE (clock_file_write(), ../lib/clockfile.h).
 *
 * A set recover.c finished after a crash has "recovered": true after
 * "sequence", and its origin is the recording's (struct manifest_origin:
 * the metadata's host, release and clock offsets, the clocks "at" its last
 * timestamp).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "../lib/clockfile.h"
#include "ringtraced.h"

int manifest_file_sum(int dirfd, const char *name, struct manifest_file *mf)
{
	XXH64_state_t *xs = XXH64_createState();
	uint8_t *buf = malloc(1 << 17);
	int fd, err = 0;
	ssize_t n;

	if (!xs || !buf) {
		err = -ENOMEM;
		goto out;
	}
	/* In a set of an earlier trace too (recover.c): nothing followed. */
	fd = rt_open_regular(dirfd, name, NULL);
	if (fd < 0) {
		err = fd;
		goto out;
	}
	snprintf(mf->name, sizeof(mf->name), "%s", name);
	mf->size = 0;
	XXH64_reset(xs, 0);
	while ((n = read(fd, buf, 1 << 17)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		XXH64_update(xs, buf, (size_t)n);
		mf->size += (uint64_t)n;
	}
	mf->xxh64 = XXH64_digest(xs);
	/* A chunk kept stored may not be synced yet: it is now. */
	if (!err && fdatasync(fd) < 0)
		err = -errno;
	close(fd);
out:
	free(buf);
	XXH64_freeState(xs);
	return err;
}

void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* The first line of @path, without its newline; "" if unreadable. */
static void first_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");

	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, (int)size, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* The trace block's uuid = "..." of the metadata; "" if none. */
static void trace_uuid(const char *meta, char *buf, size_t size)
{
	const char *p = meta ? strstr(meta, "trace {") : NULL;
	const char *q;

	buf[0] = '\0';
	if (!p || !(p = strstr(p, "uuid = \"")))
		return;
	p += strlen("uuid = \"");
	q = strchr(p, '"');
	if (q && (size_t)(q - p) < size)
		snprintf(buf, size, "%.*s", (int)(q - p), p);
}

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The three clocks of @o, now. */
static void clocks_now(struct manifest_origin *o)
{
	/* Monotonic between the two others: its offsets err by half a read. */
	o->real = clock_ns(CLOCK_REALTIME);
	o->mono = clock_ns(CLOCK_MONOTONIC);
	o->boot = clock_ns(CLOCK_BOOTTIME);
}

void manifest_origin_now(struct manifest_origin *o)
{
	struct utsname u;

	memset(o, 0, sizeof(*o));
	if (gethostname(o->host, sizeof(o->host)) < 0)
		o->host[0] = '\0';
	o->host[sizeof(o->host) - 1] = '\0';
	first_line("/proc/sys/kernel/random/boot_id", o->boot_id, sizeof(o->boot_id));
	if (uname(&u) == 0)
		snprintf(o->release, sizeof(o->release), "%s", u.release);
	o->trace = outname;
	clocks_now(o);
}

/* The three clocks of @o and the offsets from the trace's: JSON members. */
static void clocks_json(FILE *f, const struct manifest_origin *o)
{
	fprintf(f, "\"monotonic_ns\": %lld, \"realtime_ns\": %lld, \"boottime_ns\": %lld, \"realtime_offset_ns\": %lld, \"boottime_offset_ns\": %lld",
		(long long)o->mono, (long long)o->real, (long long)o->boot,
		(long long)(o->real - o->mono), (long long)(o->boot - o->mono));
}

static void write_json(FILE *f, unsigned int seq, const struct chunk_facts *cf,
		       unsigned int nf, const struct manifest_file *files,
		       unsigned int nfiles, const char *meta,
		       const struct manifest_origin *o)
{
	char uuid[64], name[CHUNK_NAME_MAX];
	unsigned int i;

	trace_uuid(meta, uuid, sizeof(uuid));
	fputs("{\n  \"format\": \"ringtrace-chunk-set\",\n  \"format_version\": 1,\n  \"host\": ", f);
	json_str(f, o->host);
	fputs(",\n  \"boot_id\": ", f);
	json_str(f, o->boot_id);
	fputs(",\n  \"kernel_release\": ", f);
	json_str(f, o->release);
	fputs(",\n  \"ringtrace_version\": ", f);
	json_str(f, RINGTRACE_VERSION);
	fputs(",\n  \"trace\": ", f);
	json_str(f, o->trace);
	fputs(",\n  \"trace_uuid\": ", f);
	json_str(f, uuid);
	fprintf(f, ",\n  \"sequence\": %u,\n", seq);
	if (o->recovered)
		fputs("  \"recovered\": true,\n", f);
	fputs("  \"clock\": {\"name\": \"monotonic\", ", f);
	clocks_json(f, o);
	fputs("},\n", f);
	fputs("  \"cpus\": [", f);
	for (i = 0; i < nf; i++) {
		chunk_name(name, sizeof(name), cf[i].cpu, cf[i].seq);
		fprintf(f, "%s\n    {\"cpu\": %u, \"file\": \"%s\", \"packets\": %llu, \"events\": %llu, \"events_lost\": %llu, \"first_timestamp\": %llu, \"last_timestamp\": %llu}",
			i ? "," : "", cf[i].cpu, name,
			(unsigned long long)cf[i].packets,
			(unsigned long long)cf[i].events,
			(unsigned long long)cf[i].lost,
			(unsigned long long)cf[i].ts_first,
			(unsigned long long)cf[i].ts_last);
	}
	fputs("\n  ],\n  \"files\": [", f);
	for (i = 0; i < nfiles; i++) {
		fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
		json_str(f, files[i].name);
		fprintf(f, ", \"size\": %llu, \"xxh64\": \"%016llx\"}",
			(unsigned long long)files[i].size,
			(unsigned long long)files[i].xxh64);
	}
	fputs("\n  ]\n}\n", f);
}

/*
 * @dirfd/@name (opened with @flags) made by @emit, flushed and synced:
 * 0 or -errno (a file that could not be finished may be left).
 */
static int write_synced(int dirfd, const char *name, int flags,
			void (*emit)(FILE *f, const void *arg), const void *arg)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | flags,
			0640);
	FILE *f;
	int err = 0;

	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		return err;
	}
	emit(f, arg);
	if (fflush(f) == EOF || ferror(f))
		err = -(errno ? errno : EIO);
	if (!err && fdatasync(fd) < 0)
		err = -errno;
	if (fclose(f) == EOF && !err)
		err = -errno;
	return err;
}

struct manifest_args {
	unsigned int seq;
	const struct chunk_facts *cf;
	unsigned int nf;
	const struct manifest_file *files;
	unsigned int nfiles;
	const char *meta;
	const struct manifest_origin *o;
};

static void emit_manifest(FILE *f, const void *arg)
{
	const struct manifest_args *a = arg;

	write_json(f, a->seq, a->cf, a->nf, a->files, a->nfiles, a->meta, a->o);
}

int manifest_write(int setfd, unsigned int seq, const struct chunk_facts *cf,
		   unsigned int nf, const struct manifest_file *files,
		   unsigned int nfiles, const char *meta,
		   const struct manifest_origin *o)
{
	struct manifest_args a = { seq, cf, nf, files, nfiles, meta, o };
	struct manifest_origin now;

	if (!o) {
		manifest_origin_now(&now);
		a.o = &now;
	}
	return write_synced(setfd, "manifest.json", O_EXCL, emit_manifest, &a);
}

static void emit_clock(FILE *f, const void *arg)
{
	fputs("{\"format\": \"ringtrace-clock\", \"format_version\": 1,\n \"end\": {", f);
	clocks_json(f, arg);
	fputs("}}\n", f);
}

int clock_file_write(int dirfd)
{
	static const char tmp[] = CLOCK_FILE ".tmp";
	struct manifest_origin now;
	int err;

	clocks_now(&now);
	err = write_synced(dirfd, tmp, O_TRUNC, emit_clock, &now);
	/* Renamed whole, then the name made durable. */
	if (!err && renameat(dirfd, tmp, dirfd, CLOCK_FILE) < 0)
		err = -errno;
	if (!err && fsync(dirfd) < 0)
		err = -errno;
	if (err)
		unlinkat(dirfd, tmp, 0);
	return err;
}
