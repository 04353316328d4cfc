// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: several trace and chunk-set directories read as one
 * (traceset.h says what they become).  Manifests are parsed with json-c.
 *
 * What is given is unfolded into units first: a chunk set (a directory
 * with a manifest.json), or the chunks a trace directory holds itself
 * ("loose": those of a daemon's sets not yet assembled, or a plain
 * trace's streams).  A trace directory also gives every set under it
 * (DIR/chunk-NNNNNN/: any subdirectory with a manifest.json) and, as
 * loose chunks, those of a set a killed ringtraced left half-assembled
 * (DIR/.chunk-NNNNNN.tmp/); a directory with neither metadata nor a
 * manifest gives the sets under it (where a hook moved them).
 *
 * A set given twice (a hook that copied it: in the daemon's directory
 * and where it went) is read once.  Two copies of one sequence number of
 * one recording whose manifests list the same chunk files (names, sizes,
 * XXH64) are one set; copies that differ are told apart by hashing their
 * files, and the one that matches its manifest is read.  A directory
 * reached twice (DIR and DIR/chunk-000003 both given) is one unit.
 *
 * A trace directory's loose chunks join the sets of its recording -- the
 * same trace uuid (checked against the metadata) and trace name (its own
 * sets' name, else the directory's, as ringtraced names it) -- each CPU's
 * chunks in sequence order, the daemon's metadata (the newest) decoding
 * them all; a chunk found both loose and in a set is read from the set.
 *
 * What a manifest promises of a chunk (size, XXH64) is checked where the
 * stream opens it (rt_stream_promise()); a listed file that is missing, a
 * chunk file it does not list, a metadata that does not match it, are
 * damage of the member: said and counted like a stream's (exit 3), never
 * a reason to read less.  Its times are used to skip chunks only where
 * the chunk confirms them (tset_window()).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/chunk.h"
#include "../../lib/clockfile.h"
#include "traceset.h"

#define MANIFEST_MAX	(1 << 20)	/* bytes: a set of 8192 CPUs fits */
#define CLOCK_FILE_MAX	4096		/* bytes: the writer's are 200 */

/* What a manifest says of a file of its set. */
struct set_file {
	char *name;
	uint64_t size, xxh64;
};

/* What a manifest says of a CPU's chunk: what a window may skip. */
struct set_cpu {
	int cpu;
	char *file;
	uint64_t packets;
	uint64_t first_ns;		/* its first packet's timestamp_begin */
};

/* A loose chunk of a trace directory. */
struct loose {
	unsigned int cpu, seq;
	char *path;
};

/*
 * One unit of what was given: a chunk set, as its manifest says, or the
 * chunks a trace directory holds itself.
 */
struct unit {
	char *dir;
	char *real;			/* its realpath: read once */
	bool is_set;			/* has a manifest.json */
	bool recovered;			/* its manifest says "recovered" */
	char *host, *boot_id, *trace, *uuid;
	unsigned int seq;
	int64_t wall_offset_ns;
	bool has_events;
	uint64_t first_ns, last_ns;	/* of its events, every CPU */
	unsigned int nr_cpus;
	struct set_cpu *cpus;
	unsigned int nr_files;
	struct set_file *files;
	/* Loose: its chunks when all are named cpuN-K.zst (it can join sets). */
	unsigned int nr_loose;
	struct loose *loose;
	bool joined;			/* loose: part of a member of sets */
	bool copy;			/* a set read from another unit */
	struct rt_trace *t;		/* its metadata (and a set's streams) */
};

static void unit_free(struct unit *u)
{
	free(u->dir);
	free(u->real);
	free(u->host);
	free(u->boot_id);
	free(u->trace);
	free(u->uuid);
	for (unsigned int i = 0; i < u->nr_cpus; i++)
		free(u->cpus[i].file);
	free(u->cpus);
	for (unsigned int i = 0; i < u->nr_files; i++)
		free(u->files[i].name);
	free(u->files);
	for (unsigned int i = 0; i < u->nr_loose; i++)
		free(u->loose[i].path);
	free(u->loose);
	rt_trace_close(u->t);
}

/* The units found so far. */
struct units {
	struct unit *v;
	unsigned int n, cap;
};

static struct unit *unit_new(struct units *us, const char *dir)
{
	struct unit *u;

	if (us->n == us->cap) {
		unsigned int cap = us->cap ? 2 * us->cap : 16;
		struct unit *v = realloc(us->v, cap * sizeof(*v));

		if (!v)
			die("out of memory");
		us->v = v;
		us->cap = cap;
	}
	u = &us->v[us->n++];
	memset(u, 0, sizeof(*u));
	u->dir = strdup(dir);
	if (!u->dir)
		die("out of memory");
	return u;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d)
		die("out of memory");
	return d;
}

static char *path_join(const char *dir, const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		die("out of memory");
	return p;
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

static bool exists(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return !stat(path, &st);
}

/* ---- manifest.json -------------------------------------------------------------- */

/*
 * The whole of @path (@what: a regular file of at most @max bytes),
 * NUL-terminated: 0, 1 when it does not exist, -1 with *@why (@buf's
 * room, @size) saying what was wrong.
 */
static int read_small(const char *path, const char *what, size_t max, char **out,
		      char *why, size_t size)
{
	struct stat st;
	char *buf;
	ssize_t n;
	size_t len = 0;
	/* Neither a symlink followed nor a FIFO waited on. */
	int fd = rt_open_regular(AT_FDCWD, path, &st);

	if (fd == -ENOENT)
		return 1;
	if (fd < 0 && fd != -EINVAL) {
		snprintf(why, size, "%s", strerror(-fd));
		return -1;
	}
	if (fd < 0 || (size_t)st.st_size > max) {
		snprintf(why, size, "not a %s (a regular file of at most %zu bytes)", what, max);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		die("out of memory");
	while (len < (size_t)st.st_size &&
	       (n = read(fd, buf + len, (size_t)st.st_size - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(why, size, "%s", strerror(errno));
			free(buf);
			close(fd);
			return -1;
		}
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	*out = buf;
	return 0;
}

/* @obj's member @key of type @type, or NULL. */
static struct json_object *member(struct json_object *obj, const char *key,
				  enum json_type type)
{
	struct json_object *v;

	if (!json_object_is_type(obj, json_type_object) ||
	    !json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, type))
		return NULL;
	return v;
}

static bool get_str(struct json_object *obj, const char *key, char **out)
{
	struct json_object *v = member(obj, key, json_type_string);

	if (!v)
		return false;
	*out = xstrdup(json_object_get_string(v));
	return true;
}

/* An integer in [lo, hi]. */
static bool get_int(struct json_object *obj, const char *key, int64_t lo,
		    int64_t hi, int64_t *out)
{
	struct json_object *v = member(obj, key, json_type_int);

	if (!v)
		return false;
	errno = 0;
	*out = json_object_get_int64(v);
	return !errno && *out >= lo && *out <= hi;
}

/* A plain file name: no directory, not "." or "..". */
static bool plain_name(const char *s)
{
	return s && *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

/* "files": each with a plain name, its size and its XXH64 (16 hex digits). */
static const char *read_files(struct unit *u, struct json_object *files)
{
	size_t n = json_object_array_length(files);

	u->files = calloc(n + 1, sizeof(*u->files));
	if (!u->files)
		die("out of memory");
	for (size_t i = 0; i < n; i++) {
		struct json_object *f = json_object_array_get_idx(files, i);
		struct json_object *name = member(f, "name", json_type_string);
		struct json_object *sum = member(f, "xxh64", json_type_string);
		const char *s = name ? json_object_get_string(name) : NULL;
		const char *x = sum ? json_object_get_string(sum) : NULL;
		struct set_file *sf = &u->files[u->nr_files];
		char *end;
		int64_t size;

		if (!plain_name(s) || !get_int(f, "size", 0, INT64_MAX, &size))
			return "a \"files\" entry without a plain name and a size";
		if (!x || strlen(x) != 16 || strspn(x, "0123456789abcdefABCDEF") != 16)
			return "a \"files\" entry without its \"xxh64\" (16 hex digits)";
		sf->xxh64 = strtoull(x, &end, 16);
		sf->size = (uint64_t)size;
		sf->name = xstrdup(s);
		u->nr_files++;
	}
	return NULL;
}

/* "cpus": each with its events and first <= last timestamps. */
static const char *read_cpus(struct unit *u, struct json_object *cpus)
{
	size_t n = json_object_array_length(cpus);

	u->cpus = calloc(n + 1, sizeof(*u->cpus));
	if (!u->cpus)
		die("out of memory");
	for (size_t i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(cpus, i);
		struct json_object *file = member(c, "file", json_type_string);
		int64_t ev, first, last, cpu, packets;

		if (!get_int(c, "events", 0, INT64_MAX, &ev) ||
		    !get_int(c, "first_timestamp", 0, INT64_MAX, &first) ||
		    !get_int(c, "last_timestamp", first, INT64_MAX, &last))
			return "a \"cpus\" entry without its events and first <= last timestamps";
		if (get_int(c, "cpu", 0, RT_MAX_CPUS - 1, &cpu) &&
		    get_int(c, "packets", 0, INT64_MAX, &packets) &&
		    file && plain_name(json_object_get_string(file)))
			u->cpus[u->nr_cpus++] = (struct set_cpu){
				(int)cpu, xstrdup(json_object_get_string(file)),
				(uint64_t)packets, (uint64_t)first };
		if (ev) {
			if (!u->has_events || (uint64_t)first < u->first_ns)
				u->first_ns = (uint64_t)first;
			if (!u->has_events || (uint64_t)last > u->last_ns)
				u->last_ns = (uint64_t)last;
			u->has_events = true;
		}
	}
	return NULL;
}

/*
 * @dir/CLOCK_FILE's realtime offset as the recording ended into *@end:
 * true; false when there is none, or (said) one that cannot be read --
 * its clock drift is then not known, the trace is read all the same.
 */
static bool read_clock_end(const char *dir, __int128 *end)
{
	struct json_object *root, *clock, *v;
	enum json_tokener_error jerr;
	char path[PATH_MAX], why[128], *text;
	int64_t x;
	int r;

	snprintf(path, sizeof(path), "%s/" CLOCK_FILE, dir);
	r = read_small(path, "clock file", CLOCK_FILE_MAX, &text, why, sizeof(why));
	if (r > 0)
		return false;
	if (r < 0) {
		warn("%s: %s: the trace's clock drift is not known", path, why);
		return false;
	}
	root = json_tokener_parse_verbose(text, &jerr);
	free(text);
	if (!root) {
		warn("%s: not JSON (%s): the trace's clock drift is not known", path,
		     json_tokener_error_desc(jerr));
		return false;
	}
	if (!(v = member(root, "format", json_type_string)) ||
	    strcmp(json_object_get_string(v), "ringtrace-clock") ||
	    !get_int(root, "format_version", 1, 1, &x) ||
	    !(clock = member(root, "end", json_type_object)) ||
	    !get_int(clock, "realtime_offset_ns", INT64_MIN, INT64_MAX, &x)) {
		warn("%s: not a ringtrace-clock of format_version 1 with an \"end\" "
		     "realtime_offset_ns: the trace's clock drift is not known", path);
		json_object_put(root);
		return false;
	}
	json_object_put(root);
	*end = x;
	return true;
}

/* The facts of DIR/manifest.json into @u; 1 if DIR has none; -1 said. */
static int read_manifest(struct unit *u)
{
	struct json_object *root, *clock, *cpus, *files, *v;
	enum json_tokener_error jerr;
	const char *why = NULL;
	char path[PATH_MAX], why_buf[128], *text;
	int64_t x;
	int r;

	snprintf(path, sizeof(path), "%s/manifest.json", u->dir);
	r = read_small(path, "manifest", MANIFEST_MAX, &text, why_buf, sizeof(why_buf));
	if (r < 0)
		error_line("%s: %s", path, why_buf);
	if (r)
		return r;
	root = json_tokener_parse_verbose(text, &jerr);
	free(text);
	if (!root) {
		error_line("%s: not JSON: %s", path, json_tokener_error_desc(jerr));
		return -1;
	}
	u->is_set = true;
	if (!(v = member(root, "format", json_type_string)) ||
	    strcmp(json_object_get_string(v), "ringtrace-chunk-set"))
		why = "\"format\" is not \"ringtrace-chunk-set\"";
	else if (!get_int(root, "format_version", 1, 1, &x))
		why = "\"format_version\" is not 1, the one this ringtrace reads";
	else if (!get_str(root, "host", &u->host) ||
		 !get_str(root, "boot_id", &u->boot_id) ||
		 !get_str(root, "trace", &u->trace) ||
		 !get_str(root, "trace_uuid", &u->uuid))
		why = "no \"host\", \"boot_id\", \"trace\" or \"trace_uuid\" string";
	else if (!get_int(root, "sequence", 1, UINT_MAX, &x))
		why = "no \"sequence\" number from 1";
	else if ((u->seq = (unsigned int)x, !(clock = member(root, "clock", json_type_object))) ||
		 !get_int(clock, "realtime_offset_ns", INT64_MIN, INT64_MAX,
			  &u->wall_offset_ns))
		why = "no \"clock\" with a \"realtime_offset_ns\"";
	else if (!(cpus = member(root, "cpus", json_type_array)) ||
		 !(files = member(root, "files", json_type_array)))
		why = "no \"cpus\" or \"files\" list";
	if (!why && (v = member(root, "recovered", json_type_boolean)))
		u->recovered = json_object_get_boolean(v);
	if (!why)
		why = read_cpus(u, cpus);
	if (!why)
		why = read_files(u, files);
	json_object_put(root);
	if (why) {
		error_line("%s: not a chunk set's manifest: %s", path, why);
		return -1;
	}
	return 0;
}

/* ---- what is given, as units --------------------------------------------------- */

static bool known(const struct units *us, const char *real)
{
	for (unsigned int i = 0; i < us->n; i++)
		if (!strcmp(us->v[i].real, real))
			return true;
	return false;
}

/* The chunk set @dir (it has a manifest.json): 0, or -1 said. */
static int add_set(struct units *us, const char *dir)
{
	char *real = realpath(dir, NULL);
	struct rt_error err;
	struct unit *u;

	if (!real) {
		error_line("%s: %s", dir, strerror(errno));
		return -1;
	}
	if (known(us, real)) {
		free(real);
		return 0;
	}
	u = unit_new(us, dir);
	u->real = real;
	if (read_manifest(u) < 0)
		return -1;
	if (rt_trace_open(dir, &u->t, &err)) {
		error_line("%s", err.msg);
		return -1;
	}
	return 0;
}

static void add_loose(struct unit *u, unsigned int cpu, unsigned int seq, char *path)
{
	struct loose *n = realloc(u->loose, (u->nr_loose + 1) * sizeof(*n));

	if (!n)
		die("out of memory");
	u->loose = n;
	n[u->nr_loose++] = (struct loose){ cpu, seq, path };
}

/* ".chunk-NNNNNN.tmp": a set being assembled, or left so by a kill. */
static bool tmp_set_name(const char *name, unsigned int *seq)
{
	const char *p = name + 7;
	unsigned long long v = 0;

	if (strncmp(name, ".chunk-", 7) || *p < '0' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (unsigned int)(*p - '0');
		if (v > UINT_MAX)
			return false;
	}
	if (strcmp(p, ".tmp"))
		return false;
	*seq = (unsigned int)v;
	return true;
}

/* The chunks of @dir/@name (.chunk-@seq.tmp) of that set, as loose ones. */
static void add_tmp_chunks(struct unit *u, const char *dir, const char *name,
			   unsigned int seq)
{
	char *sub = path_join(dir, name);
	DIR *d = opendir(sub);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		unsigned int cpu, s;

		if (chunk_parse_name(de->d_name, &cpu, &s) && s == seq &&
		    cpu < RT_MAX_CPUS)
			add_loose(u, cpu, s, path_join(sub, de->d_name));
	}
	if (d)
		closedir(d);
	free(sub);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * A directory given that is not a set: a trace directory (it has a
 * metadata) -- its own chunks and the sets under it -- or a directory of
 * sets.  0, or -1 said.
 */
static int add_dir(struct units *us, const char *dir, char *real)
{
	bool trace = exists(dir, "metadata"), streams = false, chunks_only = true;
	struct unit *self = NULL;
	struct rt_error err;
	char **subs = NULL;
	unsigned int nsubs = 0, before = us->n;
	struct dirent *de;
	int ret = -1;
	DIR *d;

	/* Only a trace keeps its real path: its sets and chunks are its own. */
	if (trace) {
		self = unit_new(us, dir);
		self->real = real;
	} else {
		free(real);
	}
	d = opendir(dir);
	if (!d) {
		error_line("%s: %s", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d))) {
		const char *n = de->d_name;
		unsigned int cpu, seq;
		char *path;

		if (!strncmp(n, "cpu", 3)) {
			streams = true;
			if (trace && chunk_parse_name(n, &cpu, &seq) && cpu < RT_MAX_CPUS)
				add_loose(self, cpu, seq, path_join(dir, n));
			else
				chunks_only = false;
			continue;
		}
		if (trace && tmp_set_name(n, &seq)) {
			add_tmp_chunks(self, dir, n, seq);
			continue;
		}
		if (n[0] == '.')
			continue;
		path = path_join(dir, n);
		if (exists(path, "manifest.json")) {
			char **v = realloc(subs, (nsubs + 1) * sizeof(*v));

			if (!v)
				die("out of memory");
			subs = v;
			subs[nsubs++] = path;
		} else {
			free(path);
		}
	}
	closedir(d);
	/* In the order of their names: the same messages on every run. */
	if (nsubs)
		qsort(subs, nsubs, sizeof(*subs), cmp_str);
	for (unsigned int i = 0; i < nsubs; i++)
		if (add_set(us, subs[i]))
			goto out;
	/* unit_new() may have moved them. */
	self = trace ? &us->v[before] : NULL;
	/* Its trace's name: its sets' (as their manifests say), else its own. */
	for (unsigned int i = 0; trace && i < nsubs && !self->trace; i++) {
		char *r = realpath(subs[i], NULL);

		for (unsigned int j = 0; r && j < us->n && !self->trace; j++)
			if (us->v[j].is_set && !strcmp(us->v[j].real, r))
				self->trace = xstrdup(us->v[j].trace);
		free(r);
	}
	if (trace && !self->trace)
		self->trace = xstrdup(base_name(self->real));
	if (!trace) {
		if (!nsubs && streams) {
			/* Streams without their metadata: that is what is missing. */
			error_line("%s/metadata: %s", dir, strerror(ENOENT));
			goto out;
		}
		if (!nsubs) {
			error_line("%s: no metadata, manifest.json or chunk sets (DIR/chunk-NNNNNN/manifest.json) in it: not a trace",
				   dir);
			goto out;
		}
		ret = 0;
		goto out;
	}
	if (streams && !chunks_only) {
		/* A plain trace: its streams as rt_trace_open() finds them. */
		for (unsigned int i = 0; i < self->nr_loose; i++)
			free(self->loose[i].path);
		free(self->loose);
		self->loose = NULL;
		self->nr_loose = 0;
		if (rt_trace_open(dir, &self->t, &err)) {
			error_line("%s", err.msg);
			goto out;
		}
		ret = 0;
		goto out;
	}
	/*
	 * Its metadata, its chunks loose -- none at all once every set was
	 * assembled and moved: tset_open() then wants its sets given too.
	 */
	self->t = calloc(1, sizeof(*self->t));
	if (!self->t)
		die("out of memory");
	self->t->dir = xstrdup(dir);
	{
		char *mpath = path_join(dir, "metadata");
		int r = rt_metadata_load(mpath, &self->t->md, &err);

		free(mpath);
		if (r) {
			error_line("%s", err.msg);
			goto out;
		}
	}
	ret = 0;
out:
	for (unsigned int i = 0; i < nsubs; i++)
		free(subs[i]);
	free(subs);
	return ret;
}

/* Each directory given, unfolded into @us: 0, or -1 said. */
static int read_dirs(struct units *us, char *const *dirs, unsigned int n)
{
	char **real = calloc(n + 1, sizeof(*real));
	int ret = -1;

	if (!real)
		die("out of memory");
	for (unsigned int i = 0; i < n; i++) {
		char *r = realpath(dirs[i], NULL);

		if (!r) {
			error_line("%s: %s", dirs[i], strerror(errno));
			goto out;
		}
		real[i] = r;
		for (unsigned int j = 0; j < i; j++)
			if (!strcmp(real[i], real[j])) {
				error_line("%s: given twice", dirs[i]);
				goto out;
			}
		if (exists(dirs[i], "manifest.json")) {
			if (add_set(us, dirs[i]))
				goto out;
		} else if (!known(us, r) && add_dir(us, dirs[i], xstrdup(r))) {
			goto out;
		}
	}
	ret = 0;
out:
	for (unsigned int i = 0; i < n; i++)
		free(real[i]);
	free(real);
	return ret;
}

/* ---- members -------------------------------------------------------------------- */

static void uuid_text(const struct rt_metadata *md, char *buf, size_t size)
{
	const uint8_t *u = md->uuid;

	snprintf(buf, size, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4], u[5],
		 u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

/* Nanoseconds of the trace clock as its cycles. */
static uint64_t ns_cycles(const struct rt_metadata *md, uint64_t ns)
{
	unsigned __int128 c = (unsigned __int128)ns * md->clock_freq / 1000000000;

	return c > UINT64_MAX ? UINT64_MAX : (uint64_t)c;
}

__int128 tset_wall_ns(const struct tset_member *m, uint64_t cycles)
{
	uint64_t freq = m->t->md->clock_freq;

	return (__int128)((unsigned __int128)cycles * 1000000000 / freq) +
	       m->wall_offset_ns;
}

/* Events of @old read with @md, the newer metadata: each declared alike. */
static const char *same_events(const struct rt_metadata *old,
			       const struct rt_metadata *md)
{
	static char why[256];

	if (old->clock_freq != md->clock_freq)
		return "their clocks' frequencies differ";
	for (unsigned int i = 0; i < old->nr_events; i++) {
		const struct rt_event_desc *a = &old->events[i];
		const struct rt_event_desc *b = rt_metadata_event(md, a->id);

		if (!b || strcmp(a->name, b->name) || a->nr_fields != b->nr_fields) {
			snprintf(why, sizeof(why), "event id %" PRIu32 " is %s in one, %s in the other",
				 a->id, a->name, b ? b->name : "not declared");
			return why;
		}
	}
	return NULL;
}

/* Damage of member @m, about CPU @cpu's stream (-1: the member's). */
__attribute__((format(printf, 3, 4)))
static void member_damage(struct tset_member *m, int cpu, const char *fmt, ...)
{
	struct tset_damage *n = realloc(m->damage, (m->nr_damage + 1) * sizeof(*n));
	va_list ap;

	if (!n)
		die("out of memory");
	m->damage = n;
	n += m->nr_damage++;
	n->cpu = cpu;
	va_start(ap, fmt);
	if (vasprintf(&n->what, fmt, ap) < 0)
		die("out of memory");
	va_end(ap);
}

/*
 * CPU @c's stream of member @m, just opened: tolerant or not, what the
 * manifests promise of its files, the member's damage that is its.
 */
static void stream_setup(const struct tset *ts, const struct tset_member *m,
			 struct rt_trace_cpu *c, bool first)
{
	rt_stream_set_tolerant(c->stream, !ts->strict);
	for (unsigned int i = 0; i < m->nr_files; i++) {
		const struct tset_file *f = &m->files[i];

		if (f->cpu == c->cpu && f->promised &&
		    rt_stream_promise(c->stream, f->path, f->size, f->xxh64))
			die("out of memory");
	}
	for (unsigned int i = 0; i < m->nr_damage; i++)
		if (m->damage[i].cpu == c->cpu || (m->damage[i].cpu < 0 && first))
			rt_stream_add_damage(c->stream, m->damage[i].what);
}

/* Every CPU's stream of @m opened: 0, or -1 said. */
static int open_streams(const struct tset *ts, struct tset_member *m)
{
	struct rt_error err;

	for (unsigned int k = 0; k < m->t->nr_cpus; k++) {
		struct rt_trace_cpu *c = &m->t->cpus[k];

		if (rt_stream_open(&c->stream, m->t->md, (const char *const *)c->paths,
				   c->nr_paths, c->cpu, &err)) {
			error_line("%s", err.msg);
			return -1;
		}
		stream_setup(ts, m, c, k == 0);
	}
	return 0;
}

/* The CPU @cpu of @t, made (in order) if new. */
static struct rt_trace_cpu *cpu_of(struct rt_trace *t, int cpu)
{
	unsigned int i;
	struct rt_trace_cpu *c;

	for (i = 0; i < t->nr_cpus && t->cpus[i].cpu < cpu; i++)
		;
	if (i < t->nr_cpus && t->cpus[i].cpu == cpu)
		return &t->cpus[i];
	c = realloc(t->cpus, (t->nr_cpus + 1) * sizeof(*c));
	if (!c)
		die("out of memory");
	t->cpus = c;
	memmove(&c[i + 1], &c[i], (t->nr_cpus - i) * sizeof(*c));
	t->nr_cpus++;
	memset(&c[i], 0, sizeof(*c));
	c[i].cpu = cpu;
	return &c[i];
}

/* Appends @p to @c's paths. */
static void add_path(struct rt_trace_cpu *c, char *p)
{
	char **n = realloc(c->paths, (c->nr_paths + 1) * sizeof(*n));

	if (!n)
		die("out of memory");
	c->paths = n;
	c->paths[c->nr_paths++] = p;
	c->compressed = true;
}

/*
 * @m's wall-clock offset as its recording began (its metadata's) and, if
 * known, as it ended: @dir's CLOCK_FILE (a directory's own chunks or
 * streams are newer than any of its sets), else the newest of the @n
 * sets @s that was not recovered (a recovered set's clocks were made from
 * the metadata's, not read).
 */
static void member_clock(struct tset_member *m, const char *dir, struct unit *const *s,
			 unsigned int n)
{
	const struct rt_metadata *md = m->t->md;

	m->wall_start_ns = (__int128)md->clock_offset_s * 1000000000 +
			   (__int128)md->clock_offset * 1000000000 / (__int128)md->clock_freq;
	m->has_wall_end = dir && read_clock_end(dir, &m->wall_end_ns);
	for (unsigned int i = n; i-- && !m->has_wall_end;)
		if (!s[i]->recovered) {
			m->wall_end_ns = s[i]->wall_offset_ns;
			m->has_wall_end = true;
		}
}

/* A plain trace directory as a member. */
static void plain_member(struct tset_member *m, struct unit *u)
{
	const char *host = rt_metadata_env(u->t->md, "hostname");

	m->t = u->t;
	u->t = NULL;
	m->host = xstrdup(host ? host : "");
	m->boot_id = xstrdup("");
	member_clock(m, u->dir, NULL, 0);
	m->wall_offset_ns = m->wall_start_ns;
}

/* A chunk of a member, where it comes from. */
struct chunk {
	unsigned int cpu, seq;
	char *path;
	const struct unit *set;		/* NULL: loose */
	const struct set_file *promise;
	const struct set_cpu *fact;
};

static int cmp_chunk(const void *a, const void *b)
{
	const struct chunk *x = a, *y = b;

	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	/* A set's copy first: checked against its manifest. */
	return (x->set == NULL) - (y->set == NULL);
}

struct chunks {
	struct chunk *v;
	unsigned int n, cap;
};

static void chunk_add(struct chunks *cs, const struct chunk *c)
{
	if (cs->n == cs->cap) {
		unsigned int cap = cs->cap ? 2 * cs->cap : 64;
		struct chunk *v = realloc(cs->v, cap * sizeof(*v));

		if (!v)
			die("out of memory");
		cs->v = v;
		cs->cap = cap;
	}
	cs->v[cs->n++] = *c;
}

/* What @u's manifest says of its file @name, or NULL. */
static const struct set_file *file_of(const struct unit *u, const char *name)
{
	for (unsigned int i = 0; i < u->nr_files; i++)
		if (!strcmp(u->files[i].name, name))
			return &u->files[i];
	return NULL;
}

static const struct set_cpu *cpu_fact(const struct unit *u, const char *name)
{
	for (unsigned int i = 0; i < u->nr_cpus; i++)
		if (!strcmp(u->cpus[i].file, name))
			return &u->cpus[i];
	return NULL;
}

/* @path's size and XXH64: 0, or -1 (errno). */
static int file_sum(const char *path, uint64_t *size, uint64_t *sum)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -1;
	ret = rt_file_xxh64(fd, size, sum);
	close(fd);
	return ret;
}

/*
 * Set @s's chunk files into @cs, each with what its manifest says of it;
 * what the manifest lists that is not there, or does not list, and a
 * metadata that is not the one it lists, are damage of @m.  0, or -1
 * said (a file that is not a chunk of this set).
 */
static int set_chunks(struct tset_member *m, struct unit *s, struct chunks *cs)
{
	uint64_t size, sum;
	unsigned int cpu, seq;

	for (unsigned int k = 0; k < s->t->nr_cpus; k++) {
		struct rt_trace_cpu *from = &s->t->cpus[k];

		for (unsigned int j = 0; j < from->nr_paths; j++) {
			const char *name = base_name(from->paths[j]);
			struct chunk c;

			if (!chunk_parse_name(name, &cpu, &seq) || seq != s->seq) {
				error_line("%s: holds %s, not a chunk of set %u (cpuN-%06u.zst)",
					   s->dir, name, s->seq, s->seq);
				return -1;
			}
			c = (struct chunk){ cpu, seq, from->paths[j], s,
					    file_of(s, name), cpu_fact(s, name) };
			from->paths[j] = NULL;
			if (!c.promise)
				member_damage(m, (int)cpu, "%s: not in its set's manifest: read unchecked",
					      c.path);
			chunk_add(cs, &c);
		}
	}
	for (unsigned int i = 0; i < s->nr_files; i++) {
		const struct set_file *f = &s->files[i];
		char *path = path_join(s->dir, f->name);
		struct stat st;

		if (stat(path, &st)) {
			member_damage(m, chunk_parse_name(f->name, &cpu, &seq) ? (int)cpu : -1,
				      "%s: its manifest lists %s, which is not there", s->dir,
				      f->name);
		} else if (!strcmp(f->name, "metadata")) {
			/* Small, and read before anything else: checked now. */
			if (file_sum(path, &size, &sum) || size != f->size || sum != f->xxh64)
				member_damage(m, -1, "%s: not the metadata its manifest lists (%" PRIu64 " bytes, XXH64 %016" PRIx64 ")",
					      path, f->size, f->xxh64);
		}
		free(path);
	}
	return 0;
}

/*
 * Whether loose chunk @c is a copy of chunk @kept (of the same CPU and
 * sequence number): the same bytes as its manifest promises, or as it
 * holds.  Only read when one chunk is found twice.
 */
static bool same_chunk(const struct chunk *kept, const struct chunk *c)
{
	uint64_t size, sum, ksize, ksum;

	if (file_sum(c->path, &size, &sum))
		return false;
	if (kept->promise)
		return size == kept->promise->size && sum == kept->promise->xxh64;
	return !file_sum(kept->path, &ksize, &ksum) && size == ksize && sum == ksum;
}

struct span {
	unsigned int seq;
	bool has_events;
	uint64_t first_ns, last_ns;
};

/* By sequence; of one sequence, a set's (with its times) first. */
static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return (int)y->has_events - (int)x->has_events;
}

/* The first of @m's files with @path, or NULL. */
static const struct tset_file *file_fact(const struct tset_member *m,
					 const char *path)
{
	for (unsigned int i = 0; i < m->nr_files; i++)
		if (m->files[i].path == path)
			return &m->files[i];
	return NULL;
}

/*
 * Member @m: the sets @s[0..n) of one recording, sorted by sequence (no
 * two alike), and the loose units @lu[0..nl) of its trace directory (or
 * the one loose unit of a member of its own).  0, or -1 said.
 */
static int build_member(struct tset *ts, struct tset_member *m, struct unit **s,
			unsigned int n, struct unit **lu, unsigned int nl)
{
	struct unit *newest = nl ? lu[0] : s[n - 1];
	const struct chunk *kept = NULL;
	struct chunks cs = { 0 };
	struct span *sp;
	unsigned int nsp = 0, k = 0;
	uint64_t before = 0;
	const char *why;
	bool any = false;
	char uuid[40];
	int ret = -1;

	for (unsigned int i = 0; i < n; i++) {
		uuid_text(s[i]->t->md, uuid, sizeof(uuid));
		if (!s[i]->t->md->has_uuid || strcasecmp(uuid, s[i]->uuid)) {
			error_line("%s: the manifest's trace_uuid %s is not its metadata's (%s)",
				   s[i]->dir, s[i]->uuid, s[i]->t->md->has_uuid ? uuid : "none");
			return -1;
		}
		/* A recovered set may not know its boot: "". */
		if (*s[i]->boot_id && *s[n - 1]->boot_id &&
		    strcmp(s[i]->boot_id, s[n - 1]->boot_id)) {
			error_line("%s and %s: chunk sets of one trace (%s on %s, uuid %s) from two boots",
				   s[i]->dir, s[n - 1]->dir, s[n - 1]->trace, s[n - 1]->host,
				   s[n - 1]->uuid);
			return -1;
		}
	}
	for (unsigned int i = 0; i < n + nl; i++) {
		struct unit *u = i < n ? s[i] : lu[i - n];

		if (u != newest && (why = same_events(u->t->md, newest->t->md))) {
			error_line("%s and %s: their metadata disagree: %s",
				   u->dir, newest->dir, why);
			return -1;
		}
	}

	m->t = calloc(1, sizeof(*m->t));
	if (!m->t)
		die("out of memory");
	m->t->dir = xstrdup(newest->dir);
	m->t->md = newest->t->md;
	newest->t->md = NULL;
	m->nr_sets = n;
	/* The directory's own chunks, if any, are the newest: its end is the recording's. */
	member_clock(m, nl ? lu[0]->dir : n ? NULL : newest->dir, s, n);
	if (n) {
		m->host = xstrdup(s[n - 1]->host);
		m->boot_id = xstrdup(s[n - 1]->boot_id);
		m->first_seq = s[0]->seq;
		m->last_seq = s[n - 1]->seq;
		m->wall_offset_ns = s[0]->wall_offset_ns;
	} else {
		const char *host = rt_metadata_env(m->t->md, "hostname");

		m->host = xstrdup(host ? host : "");
		m->boot_id = xstrdup("");
		m->wall_offset_ns = m->wall_start_ns;
	}

	/* Each CPU's chunks in sequence order, one of each. */
	for (unsigned int i = 0; i < n; i++)
		if (set_chunks(m, s[i], &cs)) {
			for (unsigned int j = 0; j < cs.n; j++)
				free(cs.v[j].path);
			goto out;
		}
	for (unsigned int i = 0; i < nl; i++)
		for (unsigned int j = 0; j < lu[i]->nr_loose; j++) {
			struct loose *l = &lu[i]->loose[j];

			chunk_add(&cs, &(struct chunk){ .cpu = l->cpu, .seq = l->seq,
						   .path = l->path });
			l->path = NULL;
		}
	qsort(cs.v, cs.n, sizeof(*cs.v), cmp_chunk);
	m->files = calloc(cs.n + 1, sizeof(*m->files));
	if (!m->files)
		die("out of memory");
	for (unsigned int i = 0; i < cs.n; i++) {
		struct chunk *c = &cs.v[i];
		struct rt_trace_cpu *tc;
		struct tset_file *f;

		if (kept && c->cpu == kept->cpu && c->seq == kept->seq) {
			/* The same chunk again (a copy): read once. */
			if (!same_chunk(kept, c)) {
				error_line("%s and %s: chunk %u of cpu%u twice, and they differ: give one",
					   kept->path, c->path, c->seq, c->cpu);
				for (unsigned int j = i; j < cs.n; j++)
					free(cs.v[j].path);
				goto out;
			}
			free(c->path);
			continue;
		}
		kept = c;
		tc = cpu_of(m->t, (int)c->cpu);
		add_path(tc, c->path);
		f = &m->files[m->nr_files++];
		*f = (struct tset_file){ .path = c->path, .cpu = (int)c->cpu };
		if (c->promise) {
			f->promised = true;
			f->size = c->promise->size;
			f->xxh64 = c->promise->xxh64;
		}
		if (c->fact) {
			f->timed = c->fact->packets != 0;
			f->first = ns_cycles(m->t->md, c->fact->first_ns);
		}
	}
	if (!m->t->nr_cpus) {
		error_line("%s: no chunk files in the sets given", m->t->dir);
		goto out;
	}
	if (ts->strict && m->nr_damage) {
		error_line("%s", m->damage[0].what);
		goto out;
	}
	if (open_streams(ts, m))
		goto out;

	/* The sequence numbers missing, from the end of what came before. */
	sp = calloc(n + cs.n + 1, sizeof(*sp));
	if (!sp)
		die("out of memory");
	for (unsigned int i = 0; i < n; i++)
		sp[nsp++] = (struct span){ s[i]->seq, s[i]->has_events, s[i]->first_ns,
					   s[i]->last_ns };
	for (unsigned int i = 0; i < cs.n; i++)
		if (!cs.v[i].set)
			sp[nsp++] = (struct span){ .seq = cs.v[i].seq };
	qsort(sp, nsp, sizeof(*sp), cmp_span);
	for (unsigned int i = 0; i < nsp; i++)
		if (!k || sp[i].seq != sp[k - 1].seq)
			sp[k++] = sp[i];
	nsp = k;
	m->gaps = calloc(nsp + 1, sizeof(*m->gaps));
	if (!m->gaps)
		die("out of memory");
	for (unsigned int i = 0; n && i < nsp; i++) {
		if (!i && sp[0].seq > 1) {
			uint64_t at = 0;

			for (unsigned int j = 0; j < nsp && !at; j++)
				at = sp[j].has_events ? sp[j].first_ns : 0;
			m->gaps[m->nr_gaps++] = (struct tset_gap){
				.first = 1, .last = sp[0].seq - 1, .leading = true,
				.from = ns_cycles(m->t->md, at), .to = ns_cycles(m->t->md, at),
			};
		}
		if (i && sp[i].seq > sp[i - 1].seq + 1) {
			uint64_t after = UINT64_MAX;

			for (unsigned int j = i; j < nsp; j++)
				if (sp[j].has_events && sp[j].first_ns < after)
					after = sp[j].first_ns;
			/* CPUs' sets may overlap in time: never an end before its start. */
			if (after == UINT64_MAX || after < before)
				after = before;
			m->gaps[m->nr_gaps++] = (struct tset_gap){
				.first = sp[i - 1].seq + 1, .last = sp[i].seq - 1,
				.from = ns_cycles(m->t->md, before),
				.to = ns_cycles(m->t->md, after),
			};
		}
		if (sp[i].has_events && (!any || sp[i].last_ns > before))
			before = sp[i].last_ns;
		any |= sp[i].has_events;
	}
	free(sp);
	ret = 0;
out:
	free(cs.v);
	return ret;
}

/* ---- recordings ----------------------------------------------------------------- */

static int cmp_set(const void *a, const void *b)
{
	const struct unit *x = *(struct unit *const *)a;
	const struct unit *y = *(struct unit *const *)b;
	int r;

	if ((r = strcmp(x->host, y->host)) || (r = strcmp(x->trace, y->trace)) ||
	    (r = strcasecmp(x->uuid, y->uuid)))
		return r;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static bool same_recording(const struct unit *x, const struct unit *y)
{
	return !strcmp(x->host, y->host) && !strcmp(x->trace, y->trace) &&
	       !strcasecmp(x->uuid, y->uuid);
}

/* Whether @a's and @b's manifests list the same chunk files: names, sizes, XXH64. */
static bool same_chunks(const struct unit *a, const struct unit *b)
{
	unsigned int na = 0, nb = 0, cpu, seq;

	for (unsigned int i = 0; i < a->nr_files; i++) {
		const struct set_file *f = &a->files[i], *g;

		if (!chunk_parse_name(f->name, &cpu, &seq))
			continue;
		na++;
		g = file_of(b, f->name);
		if (!g || g->size != f->size || g->xxh64 != f->xxh64)
			return false;
	}
	for (unsigned int i = 0; i < b->nr_files; i++)
		nb += chunk_parse_name(b->files[i].name, &cpu, &seq);
	return na == nb;
}

/* Whether @u's files are there as its manifest says: by size, or (@sums) read whole. */
static bool set_intact(const struct unit *u, bool sums)
{
	for (unsigned int i = 0; i < u->nr_files; i++) {
		const struct set_file *f = &u->files[i];
		char *path = path_join(u->dir, f->name);
		uint64_t size, sum;
		struct stat st;
		bool ok = sums ? !file_sum(path, &size, &sum) && size == f->size &&
				 sum == f->xxh64 :
				 !stat(path, &st) && (uint64_t)st.st_size == f->size;

		free(path);
		if (!ok)
			return false;
	}
	return true;
}

/*
 * Of two sets with one sequence number of one recording, which to read:
 * the other is a copy (u->copy).  0, or -1 said: they differ, and their
 * files do not tell which is the set.
 */
static int pick_copy(struct unit **keep, struct unit *other)
{
	bool a, b;

	if (same_chunks(*keep, other)) {
		a = set_intact(*keep, false);
		b = set_intact(other, false);
	} else {
		a = set_intact(*keep, true);
		b = set_intact(other, true);
		if (a == b) {
			error_line("%s and %s: both are chunk set %u of %s on %s, and they differ%s: give one",
				   (*keep)->dir, other->dir, other->seq, other->trace,
				   other->host, a ? "" : " (neither matches its manifest)");
			return -1;
		}
	}
	if (b && !a) {
		(*keep)->copy = true;
		*keep = other;
	} else {
		other->copy = true;
	}
	return 0;
}

struct tset *tset_open(char *const *dirs, unsigned int n, bool strict)
{
	struct tset *ts = calloc(1, sizeof(*ts));
	struct unit **sets = NULL;
	unsigned int nsets = 0, k = 0;
	struct units us = { 0 };
	int ok = -1;

	if (!ts)
		die("out of memory");
	ts->strict = strict;
	if (read_dirs(&us, dirs, n))
		goto out;
	sets = calloc(us.n + 1, sizeof(*sets));
	ts->m = calloc(us.n + 1, sizeof(*ts->m));
	if (!sets || !ts->m)
		die("out of memory");
	for (unsigned int i = 0; i < us.n; i++) {
		struct unit *u = &us.v[i];
		char uuid[40] = "";

		if (u->is_set) {
			sets[nsets++] = u;
			continue;
		}
		if (u->t->md->has_uuid)
			uuid_text(u->t->md, uuid, sizeof(uuid));
		u->uuid = xstrdup(uuid);
	}
	qsort(sets, nsets, sizeof(*sets), cmp_set);
	/* A set given twice is read once. */
	for (unsigned int i = 0; i < nsets; ) {
		struct unit *keep = sets[i];
		unsigned int j = i + 1;

		for (; j < nsets && same_recording(keep, sets[j]) &&
		       sets[j]->seq == keep->seq; j++)
			if (pick_copy(&keep, sets[j]))
				goto out;
		i = j;
	}
	for (unsigned int i = 0; i < nsets; i++)
		if (!sets[i]->copy)
			sets[k++] = sets[i];
	nsets = k;
	/* A trace directory's loose chunks join the sets of its recording. */
	for (unsigned int i = 0; i < us.n; i++) {
		struct unit *u = &us.v[i];
		const char *host = u->t ? rt_metadata_env(u->t->md, "hostname") : NULL;
		int best = -1;

		if (u->is_set || u->t->nr_cpus || !*u->uuid)
			continue;
		for (unsigned int j = 0; j < nsets; j++)
			if (!strcasecmp(sets[j]->uuid, u->uuid) &&
			    !strcmp(sets[j]->trace, u->trace) &&
			    (best < 0 || (host && !strcmp(sets[j]->host, host) &&
					  strcmp(sets[best]->host, host))))
				best = (int)j;
		if (best >= 0) {
			u->joined = true;
			free(u->host);
			u->host = xstrdup(sets[best]->host);
			free(u->trace);
			u->trace = xstrdup(sets[best]->trace);
			free(u->uuid);
			u->uuid = xstrdup(sets[best]->uuid);
		}
	}
	/* Plain traces and loose chunks of their own first, in the order given. */
	for (unsigned int i = 0; i < us.n; i++) {
		struct unit *u = &us.v[i], *self = u;
		struct tset_member *m;

		if (u->is_set || u->joined)
			continue;
		if (!u->nr_loose && !u->t->nr_cpus) {
			error_line("%s: no stream files (cpuN, cpuN.zst, cpuN-K.zst) and no chunk sets (chunk-NNNNNN/)%s",
				   u->dir, nsets ? ", and none of the sets given is of its trace" :
				   ": where its sets were moved, give them too");
			goto out;
		}
		m = &ts->m[ts->nr++];
		if (!u->nr_loose) {
			plain_member(m, u);
			for (unsigned int c = 0; c < m->t->nr_cpus; c++)
				stream_setup(ts, m, &m->t->cpus[c], c == 0);
		} else if (build_member(ts, m, NULL, 0, &self, 1)) {
			goto out;
		}
	}
	for (unsigned int i = 0; i < nsets; ) {
		struct unit **lu = calloc(us.n + 1, sizeof(*lu));
		unsigned int j = i + 1, nl = 0;
		int r;

		if (!lu)
			die("out of memory");
		while (j < nsets && same_recording(sets[i], sets[j]))
			j++;
		for (unsigned int l = 0; l < us.n; l++)
			if (us.v[l].joined && same_recording(&us.v[l], sets[i]))
				lu[nl++] = &us.v[l];
		r = build_member(ts, &ts->m[ts->nr++], &sets[i], j - i, lu, nl);
		free(lu);
		if (r)
			goto out;
		i = j;
	}
	if (!ts->nr) {
		error_line("%s: no stream files (cpuN, cpuN.zst, cpuN-K.zst) and no chunk sets (chunk-NNNNNN/)",
			   n ? dirs[0] : "");
		goto out;
	}
	ok = 0;
out:
	for (unsigned int i = 0; i < us.n; i++)
		unit_free(&us.v[i]);
	free(us.v);
	free(sets);
	if (ok) {
		tset_close(ts);
		return NULL;
	}
	return ts;
}

void tset_close(struct tset *ts)
{
	if (!ts)
		return;
	for (unsigned int i = 0; i < ts->nr; i++) {
		struct tset_member *m = &ts->m[i];

		rt_trace_close(m->t);
		free(m->host);
		free(m->boot_id);
		free(m->gaps);
		free(m->files);
		for (unsigned int j = 0; j < m->nr_damage; j++)
			free(m->damage[j].what);
		free(m->damage);
	}
	free(ts->m);
	free(ts);
}

uint64_t tset_first_event(const struct tset_member *m)
{
	uint64_t start = UINT64_MAX;

	for (unsigned int i = 0; i < m->t->nr_cpus; i++) {
		const struct rt_trace_cpu *c = &m->t->cpus[i];
		struct rt_stream *s;
		struct rt_error err;
		struct rt_item it;
		int r;

		if (rt_stream_open(&s, m->t->md, (const char *const *)c->paths,
				   c->nr_paths, c->cpu, &err))
			continue;
		rt_stream_set_tolerant(s, true);
		while ((r = rt_stream_next(s, &it, &err)) > 0)
			if (it.type == RT_ITEM_EVENT)
				break;
		if (r > 0 && it.timestamp < start)
			start = it.timestamp;
		rt_stream_close(s);
	}
	return start == UINT64_MAX ? 0 : start;
}

/* ---- a time window -------------------------------------------------------------- */

/*
 * Whether chunk @j of CPU @c starts where its manifest says: its own first
 * packet's timestamp_begin is the manifest's first_timestamp (a cycle of
 * rounding either way allowed for).  Two records written apart -- the
 * kernel's packet header, the daemon's manifest -- that agree: what lets a
 * window skip chunks on that time.  One that disagrees is damage, and no
 * chunk is skipped on it.
 */
static bool confirmed(struct tset_member *m, const struct rt_trace_cpu *c,
		      unsigned int j, char **why)
{
	const struct tset_file *f = file_fact(m, c->paths[j]);
	uint64_t ts;

	if (!rt_file_first_ts(c->paths[j], &ts) && ts + 1 >= f->first && ts <= f->first + 1)
		return true;
	if (asprintf(why, "%s: its manifest's first_timestamp is not its first packet's: no chunk skipped on it",
		     c->paths[j]) < 0)
		die("out of memory");
	return false;
}

/*
 * Which of CPU @c's chunks a window [begin, end] reads: those before
 * *@after (a chunk that starts after the window, and the ones after it,
 * hold nothing of it), and of those the first *@cold only when the CPU's
 * thread is looked for there (rt_stream_set_cold(): a later chunk starts
 * before the window).  The two chunks that decide -- the first that starts
 * after the window, the last that starts before it, by their manifests --
 * are confirmed by their own first packets (confirmed()); chunks are in
 * sequence order, and a CPU's packets never go back in time, so the
 * chunks on their far sides follow.  What is not confirmed skips nothing.
 */
static void window_chunks(struct tset_member *m, const struct rt_trace_cpu *c,
			  uint64_t begin, uint64_t end, unsigned int *after,
			  unsigned int *cold, char **why_after, char **why_cold)
{
	unsigned int a = c->nr_paths, b = 0;

	for (unsigned int j = 0; j < c->nr_paths && a == c->nr_paths; j++) {
		const struct tset_file *f = file_fact(m, c->paths[j]);

		if (f && f->timed && end < UINT64_MAX - 1 && f->first > end + 1)
			a = j;
	}
	for (unsigned int j = c->nr_paths; j-- > 0 && !b;) {
		const struct tset_file *f = file_fact(m, c->paths[j]);

		if (f && f->timed && f->first + 1 < begin)
			b = j;
	}
	if (a < c->nr_paths && !confirmed(m, c, a, why_after))
		a = c->nr_paths;
	if (b && !confirmed(m, c, b, why_cold))
		b = 0;
	/* Confirmed both, yet out of order: the times go back; skip nothing. */
	if (b >= a) {
		a = c->nr_paths;
		b = 0;
	}
	*after = a;
	*cold = b;
}

/*
 * The window [@begin, @end] on the streams of @t, member @m's CPUs (@t is
 * m->t, or a view's copy of it): each CPU's chunks after the window not
 * opened, the window and the cold chunks set.  Streams not open yet (a
 * view's) are opened here.  0, or -1 with @err set.
 */
static int window_streams(const struct tset *ts, struct tset_member *m,
			  struct rt_trace *t, uint64_t begin, uint64_t end,
			  const uint64_t *begins, const uint64_t *ends,
			  bool seek, struct rt_error *err)
{
	for (unsigned int i = 0; i < t->nr_cpus; i++) {
		struct rt_trace_cpu *c = &t->cpus[i];
		unsigned int after = c->nr_paths, cold = 0;
		char *why[2] = { NULL, NULL };

		/* A window of its own (by index in @t->cpus). */
		if (begins) {
			begin = begins[i];
			end = ends[i];
		}

		if (seek)
			window_chunks(m, c, begin, end, &after, &cold, &why[0], &why[1]);
		if (ts->strict && (why[0] || why[1])) {
			snprintf(err->msg, sizeof(err->msg), "%s", why[0] ? why[0] : why[1]);
			free(why[0]);
			free(why[1]);
			return -1;
		}
		if (after < c->nr_paths || !c->stream) {
			rt_stream_close(c->stream);
			c->stream = NULL;
			if (rt_stream_open(&c->stream, t->md, (const char *const *)c->paths,
					   after, c->cpu, err))
				return -1;
			stream_setup(ts, m, c, i == 0);
		}
		for (unsigned int k = 0; k < 2; k++) {
			if (why[k])
				rt_stream_add_damage(c->stream, why[k]);
			free(why[k]);
		}
		rt_stream_set_window(c->stream, begin, end, seek);
		rt_stream_set_cold(c->stream, cold);
	}
	return 0;
}

int tset_window(struct tset *ts, unsigned int member, uint64_t begin,
		uint64_t end, bool seek)
{
	struct rt_error err;

	if (window_streams(ts, &ts->m[member], ts->m[member].t, begin, end, NULL, NULL,
			   seek, &err)) {
		error_line("%s", err.msg);
		return -1;
	}
	return 0;
}

/* ---- views: a member read by one reader ---------------------------------------- */

struct tset_view {
	struct rt_trace t;		/* the member's, its own cpus[] and streams */
};

/* tset_view_open(), and with @begins: a window per CPU (by index in m->t->cpus). */
static struct tset_view *view_open(struct tset *ts, unsigned int member,
				   const bool *cpus, bool windowed, uint64_t begin,
				   uint64_t end, const uint64_t *begins,
				   const uint64_t *ends, bool seek, struct rt_error *err)
{
	struct tset_member *m = &ts->m[member];
	struct tset_view *v = calloc(1, sizeof(*v));
	uint64_t *b = NULL, *e = NULL;
	unsigned int n = 0;

	if (!v || !(v->t.cpus = calloc(m->t->nr_cpus + 1, sizeof(*v->t.cpus))))
		die("out of memory");
	if (begins && (!(b = calloc(m->t->nr_cpus + 1, sizeof(*b))) ||
		       !(e = calloc(m->t->nr_cpus + 1, sizeof(*e)))))
		die("out of memory");
	v->t.dir = m->t->dir;
	v->t.md = m->t->md;
	for (unsigned int i = 0; i < m->t->nr_cpus; i++) {
		if (cpus && !cpus[i])
			continue;
		if (begins) {
			b[n] = begins[i];
			e[n] = ends[i];
		}
		v->t.cpus[n] = m->t->cpus[i];
		v->t.cpus[n++].stream = NULL;
	}
	v->t.nr_cpus = n;
	if (windowed) {
		int r = window_streams(ts, m, &v->t, begin, end, b, e, seek, err);

		free(b);
		free(e);
		if (r)
			goto fail;
		return v;
	}
	for (unsigned int k = 0; k < n; k++) {
		struct rt_trace_cpu *c = &v->t.cpus[k];

		if (rt_stream_open(&c->stream, v->t.md, (const char *const *)c->paths,
				   c->nr_paths, c->cpu, err))
			goto fail;
		stream_setup(ts, m, c, k == 0);
	}
	return v;
fail:
	tset_view_close(v);
	return NULL;
}

struct tset_view *tset_view_open(struct tset *ts, unsigned int member,
				 const bool *cpus, bool windowed, uint64_t begin,
				 uint64_t end, bool seek, struct rt_error *err)
{
	return view_open(ts, member, cpus, windowed, begin, end, NULL, NULL, seek, err);
}

struct tset_view *tset_view_open_cpus(struct tset *ts, unsigned int member,
				      const bool *cpus, const uint64_t *begins,
				      const uint64_t *ends, bool seek, struct rt_error *err)
{
	return view_open(ts, member, cpus, true, 0, 0, begins, ends, seek, err);
}

struct rt_trace *tset_view_trace(struct tset_view *v)
{
	return &v->t;
}

void tset_view_close(struct tset_view *v)
{
	if (!v)
		return;
	for (unsigned int i = 0; i < v->t.nr_cpus; i++)
		rt_stream_close(v->t.cpus[i].stream);
	free(v->t.cpus);
	free(v);
}

/* ---- merged on wall-clock time ----------------------------------------------------- */

struct tset_cursor {
	struct merge *m;
	const struct rt_item *cur;	/* its next item; NULL: none left */
	unsigned int gap;		/* its next gap */
};

struct tset_merge {
	struct tset *ts;
	struct tset_cursor *c;
	int last;			/* member handed out last; -1: none */
	bool last_gap;
	const char *error;
	struct tset_item out;
};

/* The member's next item, or its error. */
static void cursor_next(struct tset_merge *tm, struct tset_cursor *c)
{
	c->cur = merge_next(c->m);
	if (!c->cur && merge_error(c->m))
		tm->error = merge_error(c->m);
}

struct tset_merge *tset_merge_open(struct tset *ts)
{
	struct tset_merge *tm = calloc(1, sizeof(*tm));

	if (!tm || !(tm->c = calloc(ts->nr + 1, sizeof(*tm->c))))
		die("out of memory");
	tm->ts = ts;
	tm->last = -1;
	for (unsigned int i = 0; i < ts->nr; i++) {
		tm->c[i].m = merge_trace(ts->m[i].t, false);
		cursor_next(tm, &tm->c[i]);
	}
	return tm;
}

/* A member's gap comes before its item at a later time. */
static bool gap_first(const struct tset_member *m, const struct tset_cursor *c)
{
	const struct tset_gap *g;

	if (c->gap >= m->nr_gaps)
		return false;
	g = &m->gaps[c->gap];
	return !c->cur || g->leading || g->from < c->cur->timestamp;
}

const struct tset_item *tset_merge_next(struct tset_merge *tm)
{
	__int128 best_key = 0;
	int best = -1;

	if (tm->last >= 0) {
		struct tset_cursor *c = &tm->c[tm->last];

		if (tm->last_gap)
			c->gap++;
		else
			cursor_next(tm, c);
	}
	if (tm->error)
		return NULL;
	for (unsigned int i = 0; i < tm->ts->nr; i++) {
		const struct tset_member *m = &tm->ts->m[i];
		const struct tset_cursor *c = &tm->c[i];
		__int128 key;

		if (gap_first(m, c))
			key = m->gaps[c->gap].leading ? INT64_MIN :
			      tset_wall_ns(m, m->gaps[c->gap].from);
		else if (c->cur)
			key = tset_wall_ns(m, c->cur->timestamp);
		else
			continue;
		if (best < 0 || key < best_key) {
			best = (int)i;
			best_key = key;
		}
	}
	tm->last = best;
	if (best < 0)
		return NULL;
	tm->last_gap = gap_first(&tm->ts->m[best], &tm->c[best]);
	tm->out.member = (unsigned int)best;
	tm->out.it = tm->last_gap ? NULL : tm->c[best].cur;
	tm->out.gap = tm->last_gap ? &tm->ts->m[best].gaps[tm->c[best].gap] : NULL;
	return &tm->out;
}

const char *tset_merge_error(const struct tset_merge *tm)
{
	return tm->error;
}

void tset_merge_close(struct tset_merge *tm)
{
	if (!tm)
		return;
	for (unsigned int i = 0; i < tm->ts->nr; i++)
		merge_close(tm->c[i].m);
	free(tm->c);
	free(tm);
}

int tset_print_end(const struct tset *ts, const char *error)
{
	unsigned int damaged = 0;
	int status;

	if (fflush(stdout) || ferror(stdout))
		die("write error: %s", strerror(errno));
	for (unsigned int i = 0; i < ts->nr; i++)
		damaged += damage_report(ts->m[i].t);
	status = damaged ? EXIT_DAMAGED : 0;
	if (error) {
		error_line("%s", error);
		status = 1;
	}
	return status;
}
