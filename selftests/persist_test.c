// SPDX-License-Identifier: GPL-2.0
/*
 * The persistent region (module/persist.c): rings in memory the kernel
 * reserved at boot, kept across an unload and a reload of ringtrace.ko.
 *
 * Needs the boot's command line to reserve the region (run_guest.sh runs
 * this binary only then): reserve_mem=16M:4096:ringtrace (6.11+, with
 * reserve_mem=1M:4096:rtsmall for the too-small case) or
 * memmap=16M$0x50000000 (any kernel).  RT_KO is the ringtrace.ko to load;
 * the tests load and unload it themselves, in the order below, and leave
 * it unloaded.  What one test leaves for the next (the bytes each CPU's
 * ring held, the trace's uuid) is kept under RT_PERSIST_TMP.
 */
#include "ringtrace_test.h"

#include <sys/utsname.h>
#include <xxhash.h>

#include <linux/ringtrace_persist.h>

#define TMPDIR		"/tmp/rt-persist"
/*
 * Seconds per test, far above the harness's 30: each insmod is seconds
 * under KASAN, and bad_params_refused makes eight.
 */
#define PERSIST_TIMEOUT	600
#define MARKERS		10

/* ------------------------------------------------------------------ */
/* The module and the region                                           */
/* ------------------------------------------------------------------ */

struct region {
	char args[128];			/* the module parameters naming it */
	char small[128];		/* a region too small, or "" */
	bool reserve_mem;
};

static unsigned long long parse_size(const char *s, char **end)
{
	unsigned long long v = strtoull(s, end, 0);

	switch (**end) {
	case 'G': case 'g':
		v <<= 10;
		/* fallthrough */
	case 'M': case 'm':
		v <<= 10;
		/* fallthrough */
	case 'K': case 'k':
		v <<= 10;
		(*end)++;
	}
	return v;
}

/* The region of this boot's command line: 0, or -1 if it has none. */
static int find_region(struct region *r)
{
	char line[4096], *tok, *save, *end;
	unsigned long long size, addr;

	memset(r, 0, sizeof(*r));
	if (rt_read_file("/proc/cmdline", line, sizeof(line)) <= 0)
		return -1;
	for (tok = strtok_r(line, " \n", &save); tok;
	     tok = strtok_r(NULL, " \n", &save)) {
		end = strrchr(tok, ':');
		if (!strncmp(tok, "reserve_mem=", 12) && end) {
			if (!strcmp(end, ":ringtrace")) {
				snprintf(r->args, sizeof(r->args),
					 "persist=ringtrace");
				r->reserve_mem = true;
			} else if (!strcmp(end, ":rtsmall")) {
				snprintf(r->small, sizeof(r->small),
					 "persist=rtsmall");
			}
		} else if (!strncmp(tok, "memmap=", 7) && strchr(tok, '$')) {
			size = parse_size(tok + 7, &end);
			if (*end != '$')
				continue;
			addr = strtoull(end + 1, NULL, 0);
			snprintf(r->args, sizeof(r->args),
				 "persist_addr=%#llx persist_size=%llu",
				 addr, size);
			snprintf(r->small, sizeof(r->small),
				 "persist_addr=%#llx persist_size=%u",
				 addr, 1U << 20);
		}
	}
	return r->args[0] ? 0 : -1;
}

/* Kernels before 6.11 have no reserve_mem=. */
static bool has_reserve_mem(void)
{
	struct utsname u;
	int major, minor;

	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return false;
	return major > 6 || (major == 6 && minor >= 11);
}

static bool loaded(void)
{
	return !access("/sys/module/ringtrace", F_OK);
}

/* insmod RT_KO @args: its exit status (0 loaded). */
static int load(const char *args)
{
	const char *ko = getenv("RT_KO");
	char cmd[2048];

	if (!ko || !*ko)
		return -1;
	snprintf(cmd, sizeof(cmd), "insmod '%s' %s 2>/dev/null", ko, args);
	return system(cmd);
}

static int unload(void)
{
	return loaded() ? system("rmmod ringtrace") : 0;
}

/* The kernel log from now on: a /dev/kmsg reader at its end. */
static int kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

/* Whether a line logged since kmsg_open() contains @text. */
static bool kmsg_has(int fd, const char *text)
{
	char rec[8192];
	bool found = false;
	ssize_t n;

	for (;;) {
		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;	/* overwritten records: go on */
		if (n <= 0)
			break;
		rec[n] = '\0';
		if (strstr(rec, text))
			found = true;
	}
	return found;
}

/* ------------------------------------------------------------------ */
/* persist/info and persist/image                                      */
/* ------------------------------------------------------------------ */

struct slice_info {
	int cpu;			/* -1: unused */
	unsigned long long ring, size;
};

struct info {
	char state[32], lifecycle[32], uuid[64];
	unsigned long long size, subbuf_size;
	unsigned int num_subbufs, nr_slices;
	struct slice_info slice[CPU_SETSIZE];
};

static int read_info(struct info *in)
{
	char text[65536], *line, *save;
	unsigned int i;
	int n;

	memset(in, 0, sizeof(*in));
	if (rt_ctl_read("persist/info", text, sizeof(text)) <= 0)
		return -1;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		sscanf(line, "state %31s", in->state);
		sscanf(line, "lifecycle %31s", in->lifecycle);
		sscanf(line, "uuid %63s", in->uuid);
		sscanf(line, "size %llu", &in->size);
		sscanf(line, "subbuf_size %llu", &in->subbuf_size);
		sscanf(line, "num_subbufs %u", &in->num_subbufs);
		sscanf(line, "slices %u", &in->nr_slices);
		if (sscanf(line, "slice %u %n", &i, &n) == 1 && i < CPU_SETSIZE) {
			in->slice[i].cpu = -1;
			sscanf(line + n, "cpu %d", &in->slice[i].cpu);
			sscanf(strstr(line, " ring "), " ring %llu size %llu",
			       &in->slice[i].ring, &in->slice[i].size);
		}
	}
	return in->state[0] ? 0 : -1;
}

/* The whole kept image (persist/image), malloc()ed, or NULL. */
static uint8_t *read_image(size_t size)
{
	uint8_t *img = malloc(size);
	size_t off = 0;
	ssize_t n;
	int fd;

	fd = open(rt_path("persist/image"), O_RDONLY | O_CLOEXEC);
	if (!img || fd < 0)
		goto fail;
	while (off < size) {
		n = pread(fd, img + off, size - off, off);
		if (n <= 0)
			goto fail;
		off += n;
	}
	/* Nothing past the region. */
	if (pread(fd, &n, 1, off) != 0)
		goto fail;
	close(fd);
	return img;
fail:
	if (fd >= 0)
		close(fd);
	free(img);
	return NULL;
}

/* The header's xxh64, computed over its page with the field zero. */
static uint64_t header_sum(const uint8_t *img)
{
	uint8_t page[RINGTRACE_PERSIST_HEADER_SIZE];

	memcpy(page, img, sizeof(page));
	memset(page + offsetof(struct ringtrace_persist_header, checksum), 0,
	       sizeof(__u64));
	return XXH64(page, sizeof(page), 0);
}

/* ------------------------------------------------------------------ */
/* What one test leaves for the next                                   */
/* ------------------------------------------------------------------ */

static const char *tmp_path(const char *name, int cpu)
{
	static char path[128];

	mkdir(TMPDIR, 0700);
	snprintf(path, sizeof(path), "%s/%s%d", TMPDIR, name, cpu);
	return path;
}

static int save(const char *name, int cpu, const void *data, size_t len)
{
	const char *path = tmp_path(name, cpu);
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -1;
	ret = fwrite(data, 1, len, f) == len ? 0 : -1;
	return fclose(f) ? -1 : ret;
}

/* A saved file, malloc()ed, its length in *@len; or NULL. */
static uint8_t *restore(const char *name, int cpu, size_t *len)
{
	const char *path = tmp_path(name, cpu);
	struct stat st;
	uint8_t *data;
	FILE *f;

	if (stat(path, &st))
		return NULL;
	data = malloc(st.st_size + 1);
	f = fopen(path, "r");
	if (!data || !f || fread(data, 1, st.st_size, f) != (size_t)st.st_size) {
		free(data);
		data = NULL;
	}
	if (f)
		fclose(f);
	if (data) {
		data[st.st_size] = '\0';
		*len = st.st_size;
	}
	return data;
}

/*
 * Record MARKERS markers "@tag-CPU-I" on every CPU, stop tracing, and save
 * each CPU's mapped ring (meta page and sub-buffers) and the trace uuid.
 * 0, or -1 with *@why set.
 */
static int record_and_save(const char *tag, const struct info *in,
			   const char **why)
{
	char text[64], last[64];
	unsigned int i, k;
	struct rt_buf b;
	cpu_set_t cpus;
	int cpu;

	*why = "tracing_on";
	if (rt_ctl_write("tracing_on", "1"))
		return -1;
	if (rt_usable_cpus(&cpus) <= 0)
		return -1;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &cpus))
			continue;
		*why = "pin";
		if (rt_pin(cpu))
			return -1;
		for (k = 0; k < MARKERS; k++) {
			snprintf(text, sizeof(text), "%s-%d-%u", tag, cpu, k);
			*why = "marker";
			if (rt_ctl_write("marker", text))
				return -1;
		}
	}
	*why = "tracing_off";
	if (rt_ctl_write("tracing_on", "0"))
		return -1;
	for (i = 0; i < in->nr_slices; i++) {
		cpu = in->slice[i].cpu;
		if (cpu < 0)
			continue;
		*why = "buffer open";
		if (rt_buf_open(&b, cpu))
			return -1;
		snprintf(last, sizeof(last), "%s-%d-%u", tag, cpu, MARKERS - 1);
		*why = "the ring's size is not its slice's, or its last marker is missing";
		if (b.map_len != in->slice[i].size ||
		    !memmem(b.map, b.map_len, last, strlen(last)) ||
		    save("ring", cpu, b.map, b.map_len)) {
			rt_buf_close(&b);
			return -1;
		}
		rt_buf_close(&b);
	}
	*why = "save uuid";
	return save("uuid", 0, in->uuid, strlen(in->uuid));
}

/*
 * The kept image @img against what record_and_save() saved: header
 * (magic, layout, sizes, checksum, uuid, geometry), lifecycle, and each
 * used slice's ring byte for byte, its counters non-zero where the ring
 * has packets.  0, or -1 with @msg.
 */
static int check_image(const uint8_t *img, const struct info *in,
		       char *msg, size_t msg_size)
{
	const struct ringtrace_persist_header *h = (const void *)img;
	const struct ringtrace_persist_state *st;
	const struct ringtrace_persist_slice *s;
	const struct ringtrace_persist_slot *slot;
	char uuid[64];
	uint8_t *saved;
	size_t len;
	unsigned int i, j, used = 0;
	uint64_t committed;

	if (h->magic != RINGTRACE_PERSIST_MAGIC)
		RT_FAIL("magic %#llx", (unsigned long long)h->magic);
	if (memcmp(img, "RTPERSIS", 8))
		RT_FAIL("magic bytes");
	if (h->layout != RINGTRACE_PERSIST_LAYOUT ||
	    h->header_size != RINGTRACE_PERSIST_HEADER_SIZE_VER1 ||
	    h->header_size != sizeof(*h))
		RT_FAIL("layout %u header_size %u", h->layout, h->header_size);
	if (h->checksum != header_sum(img))
		RT_FAIL("checksum %#llx, computed %#llx",
			(unsigned long long)h->checksum,
			(unsigned long long)header_sum(img));
	if (h->region_size != in->size || h->page_size != 4096)
		RT_FAIL("region_size %llu (info %llu) page_size %u",
			(unsigned long long)h->region_size, in->size,
			h->page_size);
	snprintf(uuid, sizeof(uuid),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 h->trace_uuid[0], h->trace_uuid[1], h->trace_uuid[2],
		 h->trace_uuid[3], h->trace_uuid[4], h->trace_uuid[5],
		 h->trace_uuid[6], h->trace_uuid[7], h->trace_uuid[8],
		 h->trace_uuid[9], h->trace_uuid[10], h->trace_uuid[11],
		 h->trace_uuid[12], h->trace_uuid[13], h->trace_uuid[14],
		 h->trace_uuid[15]);
	if (strcmp(uuid, in->uuid))
		RT_FAIL("header uuid %s, info %s", uuid, in->uuid);
	if (h->subbuf_size != in->subbuf_size ||
	    h->num_subbufs != in->num_subbufs || h->nr_slices != in->nr_slices)
		RT_FAIL("geometry %llu x %u, %u slices; info %llu x %u, %u",
			(unsigned long long)h->subbuf_size, h->num_subbufs,
			h->nr_slices, in->subbuf_size, in->num_subbufs,
			in->nr_slices);
	for (i = 0; i < RT_ARRAY_SIZE(h->reserved); i++)
		if (h->reserved[i])
			RT_FAIL("reserved[%u] not zero", i);
	if (h->rings_offset + h->rings_size > h->region_size ||
	    h->state_offset + sizeof(*st) > h->region_size ||
	    h->slices_offset + h->nr_slices * sizeof(*s) > h->region_size)
		RT_FAIL("areas outside the region");
	st = (const void *)(img + h->state_offset);
	if (st->lifecycle != RINGTRACE_PERSIST_UNLOADED)
		RT_FAIL("lifecycle %u, not UNLOADED", st->lifecycle);
	s = (const void *)(img + h->slices_offset);
	for (i = 0; i < h->nr_slices; i++, s++) {
		if (!(s->flags & RINGTRACE_PERSIST_SLICE_USED))
			continue;
		used++;
		if (s->counters_offset != h->rings_offset + i * h->slice_size ||
		    s->ring_offset != s->counters_offset + h->counters_size ||
		    s->ring_size != 4096 + h->subbuf_size * h->num_subbufs ||
		    s->ring_offset != in->slice[i].ring)
			RT_FAIL("slice %u: offsets %llu %llu %llu", i,
				(unsigned long long)s->counters_offset,
				(unsigned long long)s->ring_offset,
				(unsigned long long)s->ring_size);
		saved = restore("ring", s->cpu, &len);
		if (!saved)
			RT_FAIL("no saved ring for cpu %u", s->cpu);
		/*
		 * Byte for byte but the meta page's events_gen: the unload
		 * unregisters the events and its last flush refreshes it.
		 */
		memcpy(saved + offsetof(struct ringtrace_meta, events_gen),
		       img + s->ring_offset +
		       offsetof(struct ringtrace_meta, events_gen), sizeof(__u64));
		for (j = 0; j < len && j < s->ring_size; j++)
			if (saved[j] != img[s->ring_offset + j])
				break;
		if (len != s->ring_size || j < len) {
			free(saved);
			RT_FAIL("cpu %u: the image's ring differs from the ring written at byte %u of %zu",
				s->cpu, j, len);
		}
		free(saved);
		/* The first packet: a CTF packet of this trace and CPU. */
		{
			const struct ringtrace_packet_header *p =
				(const void *)(img + s->ring_offset + 4096);

			if (p->magic != RINGTRACE_CTF_MAGIC || p->cpu_id != s->cpu ||
			    memcmp(p->uuid, h->trace_uuid, 16))
				RT_FAIL("cpu %u: first packet magic %#x cpu %u",
					s->cpu, p->magic, p->cpu_id);
		}
		slot = (const void *)(img + s->counters_offset);
		committed = 0;
		for (j = 0; j < h->num_subbufs; j++)
			committed += slot[j].commit;
		if (!committed || !slot[0].events)
			RT_FAIL("cpu %u: slot counters zero", s->cpu);
		/* A closed packet: its generation committed whole. */
		if (slot[0].commit % h->subbuf_size)
			RT_FAIL("cpu %u: slot 0 commit %llu not whole packets",
				s->cpu, (unsigned long long)slot[0].commit);
	}
	if (!used)
		RT_FAIL("no slice used");
	return 0;
}

static char saved_uuid[64];

static const char *restore_uuid(void)
{
	size_t len;
	uint8_t *u = restore("uuid", 0, &len);

	if (!u)
		return "";
	snprintf(saved_uuid, sizeof(saved_uuid), "%s", (char *)u);
	free(u);
	return saved_uuid;
}

FIXTURE(persist) {
	struct region r;
};

FIXTURE_SETUP(persist)
{
	if (geteuid())
		SKIP(return, "needs root");
	if (find_region(&self->r))
		SKIP(return, "no persistent region on the kernel command line");
	if (!getenv("RT_KO"))
		SKIP(return, "RT_KO (the ringtrace.ko to load) not set");
}

/* Whatever a test left, the next starts with the module unloaded. */
FIXTURE_TEARDOWN(persist)
{
	if (!access("/sys/module/ringtrace_selftest", F_OK))
		system("rmmod ringtrace_selftest");
	unload();
}

/* ------------------------------------------------------------------ */
/* Tests, in order: each leaves the module unloaded                    */
/* ------------------------------------------------------------------ */

/* Without a region nothing changes: no persist/, today's geometry. */
TEST_F_TIMEOUT(persist, no_region_no_persist, PERSIST_TIMEOUT)
{

	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load(""));
	EXPECT_NE(0, access(rt_path("persist"), F_OK));
	EXPECT_EQ(RT_DEFAULT_SUBBUF_SIZE, rt_ctl_read_num("subbuf_size"));
	EXPECT_EQ(RT_DEFAULT_NUM_SUBBUFS, rt_ctl_read_num("num_subbufs"));
	EXPECT_EQ(0, unload());
}

/*
 * Load with the region: armed (or a previous test run's image, released),
 * rings carved from it, one slice per CPU; record, save the rings, unload.
 */
TEST_F_TIMEOUT(persist, arm_record_unload, PERSIST_TIMEOUT)
{
	const char *why = "";
	struct info in;

	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load(self->r.args));
	ASSERT_EQ(0, read_info(&in));
	/* An image of an earlier run in this boot: release it first. */
	if (!strcmp(in.state, "previous") || !strcmp(in.state, "damaged")) {
		ASSERT_EQ(0, rt_ctl_write("persist/release", in.uuid));
		ASSERT_EQ(0, read_info(&in));
	}
	ASSERT_STREQ("live", in.state);
	EXPECT_STREQ("live", in.lifecycle);
	EXPECT_EQ(RT_DEFAULT_SUBBUF_SIZE, in.subbuf_size);
	/* Geometry fitted to the region: the control files say the same. */
	EXPECT_EQ(in.subbuf_size, rt_ctl_read_num("subbuf_size"));
	EXPECT_EQ(in.num_subbufs, rt_ctl_read_num("num_subbufs"));
	EXPECT_LE(1, in.nr_slices);
	EXPECT_EQ(4096 + in.subbuf_size * in.num_subbufs, in.slice[0].size);
	/* No image while the rings are live. */
	EXPECT_EQ(NULL, read_image(in.size));
	ASSERT_EQ(0, record_and_save("first", &in, &why)) TH_LOG("%s", why);
	ASSERT_EQ(0, unload());
}

/* Reload: the image is found, valid, and holds what the rings held. */
TEST_F_TIMEOUT(persist, reload_keeps_image, PERSIST_TIMEOUT)
{
	char msg[256] = "";
	uint8_t *img, *again;
	struct info in, cur;
	struct rt_buf b;

	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load(self->r.args));
	ASSERT_EQ(0, read_info(&in));
	ASSERT_STREQ("previous", in.state);
	EXPECT_STREQ("unloaded", in.lifecycle);
	EXPECT_STREQ(restore_uuid(), in.uuid);
	img = read_image(in.size);
	ASSERT_NE(NULL, img);
	EXPECT_EQ(0, check_image(img, &in, msg, sizeof(msg))) TH_LOG("%s", msg);

	/* This load's rings are pages: tracing leaves the image alone. */
	EXPECT_EQ(RT_DEFAULT_NUM_SUBBUFS, rt_ctl_read_num("num_subbufs"));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	ASSERT_EQ(0, rt_ctl_write("marker", "while-kept"));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	ASSERT_EQ(0, rt_buf_open(&b, rt_test_cpu()));
	EXPECT_EQ(4096 + RT_DEFAULT_SUBBUF_SIZE * RT_DEFAULT_NUM_SUBBUFS,
		  b.map_len);
	rt_buf_close(&b);
	again = read_image(in.size);
	ASSERT_NE(NULL, again);
	EXPECT_EQ(0, memcmp(img, again, in.size));
	ASSERT_EQ(0, read_info(&cur));
	EXPECT_STREQ("previous", cur.state);
	free(again);
	free(img);
	ASSERT_EQ(0, unload());
}

/* Bad releases change nothing: wrong uuid, garbage, tracing on. */
TEST_F_TIMEOUT(persist, bad_release_refused, PERSIST_TIMEOUT)
{
	struct info in, cur;
	uint8_t *img, *again;
	char other[64];

	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load(self->r.args));
	ASSERT_EQ(0, read_info(&in));
	ASSERT_STREQ("previous", in.state);
	img = read_image(in.size);
	ASSERT_NE(NULL, img);

	EXPECT_EQ(-EINVAL, rt_ctl_write("persist/release", "garbage"));
	EXPECT_EQ(-EINVAL, rt_ctl_write("persist/release", ""));
	snprintf(other, sizeof(other), "%s", in.uuid);
	other[0] = other[0] == '0' ? '1' : '0';
	EXPECT_EQ(-EINVAL, rt_ctl_write("persist/release", other));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	EXPECT_EQ(-EBUSY, rt_ctl_write("persist/release", in.uuid));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	/* The image is read-only. */
	EXPECT_GT(0, rt_ctl_write("persist/image", "x"));

	ASSERT_EQ(0, read_info(&cur));
	EXPECT_STREQ("previous", cur.state);
	EXPECT_STREQ(in.uuid, cur.uuid);
	again = read_image(in.size);
	ASSERT_NE(NULL, again);
	EXPECT_EQ(0, memcmp(img, again, in.size));
	free(again);
	free(img);
	ASSERT_EQ(0, unload());
}

/*
 * Bad parameters fail the load with one clear line and leave the region
 * as it was: the next good load still finds the same image.
 */
TEST_F_TIMEOUT(persist, bad_params_refused, PERSIST_TIMEOUT)
{
	struct {
		char args[160];
		const char *line;
	} bad[8];
	unsigned int i, n = 0;
	struct info in;
	int kmsg;

	ASSERT_EQ(0, unload());
#define BAD(line_, ...) do {						\
	snprintf(bad[n].args, sizeof(bad[n].args), __VA_ARGS__);	\
	bad[n++].line = (line_);					\
} while (0)
	BAD("name two regions",
	    "persist=ringtrace persist_addr=0x50000000 persist_size=16777216");
	BAD("go together", "persist_addr=0x50000000");
	BAD("must be page aligned",
	    "persist_addr=0x50000100 persist_size=16777216");
	BAD("overlaps System RAM", "persist_addr=0x1000000 persist_size=16777216");
	BAD("not reserved memory",
	    "persist_addr=0x4000000000 persist_size=16777216");
	if (has_reserve_mem())
		BAD("no reserve_mem region of that name", "persist=rtnosuch");
	else
		BAD("needs reserve_mem=", "persist=rtnosuch");
	if (self->r.small[0])
		BAD("is too small", "%s", self->r.small);
#undef BAD
	/* Every kernel has the too-small case in its boot's region. */
	EXPECT_NE(0, self->r.small[0]);
	for (i = 0; i < n; i++) {
		kmsg = kmsg_open();
		ASSERT_LE(0, kmsg);
		EXPECT_NE(0, load(bad[i].args)) TH_LOG("%s", bad[i].args);
		EXPECT_FALSE(loaded()) TH_LOG("%s", bad[i].args);
		EXPECT_TRUE(kmsg_has(kmsg, bad[i].line))
			TH_LOG("%s: no line \"%s\"", bad[i].args, bad[i].line);
		close(kmsg);
		unload();
	}
	ASSERT_EQ(0, load(self->r.args));
	ASSERT_EQ(0, read_info(&in));
	EXPECT_STREQ("previous", in.state);
	EXPECT_STREQ(restore_uuid(), in.uuid);
	ASSERT_EQ(0, unload());
}

/*
 * Release arms the region and moves the rings into it; a geometry change
 * re-carves within it (too big: ENOSPC, nothing changed); clear; the
 * second trace survives a reload as the first did.
 */
TEST_F_TIMEOUT(persist, release_geometry_reload, PERSIST_TIMEOUT)
{
	const char *why = "";
	char msg[256] = "", old[64];
	struct info in, cur;
	uint8_t *img;
	int kmsg;

	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load(self->r.args));
	ASSERT_EQ(0, read_info(&in));
	ASSERT_STREQ("previous", in.state);
	snprintf(old, sizeof(old), "%s", in.uuid);
	ASSERT_EQ(0, rt_ctl_write("persist/release", in.uuid));
	ASSERT_EQ(0, read_info(&in));
	ASSERT_STREQ("live", in.state);
	EXPECT_STRNE(old, in.uuid);
	EXPECT_EQ(NULL, read_image(in.size));
	/* A second release finds nothing to release. */
	EXPECT_EQ(-ENODATA, rt_ctl_write("persist/release", old));
	EXPECT_EQ(in.num_subbufs, rt_ctl_read_num("num_subbufs"));
	EXPECT_LE(0, in.slice[0].cpu);

	kmsg = kmsg_open();
	EXPECT_EQ(-ENOSPC, rt_ctl_write("num_subbufs", "4096"));
	EXPECT_TRUE(kmsg_has(kmsg, "cannot hold"));
	close(kmsg);
	ASSERT_EQ(0, read_info(&cur));
	EXPECT_EQ(in.num_subbufs, cur.num_subbufs);
	EXPECT_EQ(in.num_subbufs, rt_ctl_read_num("num_subbufs"));

	ASSERT_EQ(0, rt_ctl_write("num_subbufs", "4"));
	ASSERT_EQ(0, read_info(&in));
	EXPECT_EQ(4, in.num_subbufs);
	EXPECT_EQ(4096 + 4 * in.subbuf_size, in.slice[0].size);
	ASSERT_EQ(0, rt_ctl_write("clear", "1"));
	ASSERT_EQ(0, record_and_save("second", &in, &why)) TH_LOG("%s", why);
	ASSERT_EQ(0, unload());

	ASSERT_EQ(0, load(self->r.args));
	ASSERT_EQ(0, read_info(&cur));
	ASSERT_STREQ("previous", cur.state);
	EXPECT_STREQ(in.uuid, cur.uuid);
	img = read_image(cur.size);
	ASSERT_NE(NULL, img);
	EXPECT_EQ(0, check_image(img, &cur, msg, sizeof(msg))) TH_LOG("%s", msg);
	free(img);
	ASSERT_EQ(0, rt_ctl_write("persist/release", cur.uuid));
	ASSERT_EQ(0, read_info(&cur));
	EXPECT_STREQ("live", cur.state);
	ASSERT_EQ(0, unload());
}

/* ------------------------------------------------------------------ */
/* The image describes itself: metadata, ksyms, identity               */
/* ------------------------------------------------------------------ */

#define BUILD_ID_HEX	"00112233445566778899aabbccddeeff01234567"

/* persist/info's identity and newest copies (0: metadata, 1: ksyms). */
struct described {
	char boot_id[64], build_id[64];
	unsigned long long gen[2], bytes[2];
};

static int read_described(struct described *d)
{
	char text[65536], *line, *save;
	int seen = 0;

	memset(d, 0, sizeof(*d));
	if (rt_ctl_read("persist/info", text, sizeof(text)) <= 0)
		return -1;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		seen += sscanf(line, "boot_id %63s", d->boot_id);
		seen += sscanf(line, "build_id %63s", d->build_id);
		seen += sscanf(line, "metadata gen %llu bytes %llu", &d->gen[0],
			       &d->bytes[0]) == 2;
		seen += sscanf(line, "ksyms gen %llu bytes %llu", &d->gen[1],
			       &d->bytes[1]) == 2;
	}
	return seen == 4 ? 0 : -1;
}

/*
 * Copy @copy of the metadata (@kind 0) or ksyms (1) area of @img, checked
 * as a reader must (uapi struct ringtrace_persist_blob): NULL with @why
 * if it is not valid; a copy never written (all of its header zero) is
 * not valid either, @why "unwritten".
 */
static const struct ringtrace_persist_blob *
blob_of(const uint8_t *img, int kind, int copy, const char **why)
{
	const struct ringtrace_persist_header *h = (const void *)img;
	const struct ringtrace_persist_blob *b;
	uint64_t off = kind ? h->ksyms_offset[copy] : h->metadata_offset[copy];
	uint64_t size = kind ? h->ksyms_size : h->metadata_size;

	*why = "outside the region";
	if (size < sizeof(*b) || off > h->region_size ||
	    size > h->region_size - off)
		return NULL;
	b = (const void *)(img + off);
	*why = "unwritten";
	if (!b->gen && !b->len && !b->checksum && !b->reserved)
		return NULL;
	*why = "gen 0";
	if (!b->gen)
		return NULL;
	*why = "reserved";
	if (b->reserved)
		return NULL;
	*why = "len";
	if (b->len > size - sizeof(*b))
		return NULL;
	*why = "checksum";
	if (XXH64(b + 1, b->len, 0) != b->checksum)
		return NULL;
	return b;
}

/* The valid copy with the highest gen: its index, or -1. */
static int newest_copy(const uint8_t *img, int kind)
{
	const struct ringtrace_persist_blob *b[2];
	const char *why;
	int i, best = -1;

	for (i = 0; i < 2; i++) {
		b[i] = blob_of(img, kind, i, &why);
		if (b[i] && (best < 0 || b[i]->gen > b[best]->gen))
			best = i;
	}
	return best;
}

/* ringtrace_selftest.ko, beside RT_KO: insmod's exit status. */
static int load_selftest_module(void)
{
	const char *ko = getenv("RT_KO"), *slash = ko ? strrchr(ko, '/') : NULL;
	char cmd[2048];

	if (!slash)
		return -1;
	snprintf(cmd, sizeof(cmd), "insmod '%.*s/ringtrace_selftest.ko'",
		 (int)(slash - ko), ko);
	return system(cmd);
}

/* A write of @len bytes to persist/ksyms: 0 or -errno. */
static int write_ksyms(const void *data, size_t len)
{
	ssize_t n = rt_write_file(rt_path("persist/ksyms"), data, len);

	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -EIO;
}

/* @len bytes that begin as a zstd frame does, then a pattern of @seed. */
static uint8_t *fake_zst(size_t len, unsigned int seed)
{
	static const uint8_t magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
	uint8_t *p = malloc(len);
	size_t i;

	if (!p)
		return NULL;
	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(i * seed + (i >> 9));
	memcpy(p, magic, sizeof(magic));
	return p;
}

static int uuid_bytes(const char *text, uint8_t out[16])
{
	unsigned int i, v;

	for (i = 0; i < 16; i++) {
		while (*text == '-')
			text++;
		if (sscanf(text, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
		text += 2;
	}
	return 0;
}

/*
 * The live region takes this boot's identity and the symbols' blob from
 * userspace, and the metadata from the module: bad input changes none of
 * them.  Reloaded, the image holds each framed as the uapi says: the
 * metadata a consumer last read, byte for byte; both ksyms writes, one a
 * copy; the identity in the checksummed header.
 */
TEST_F_TIMEOUT(persist, image_describes_itself, PERSIST_TIMEOUT)
{
	const size_t room = RINGTRACE_PERSIST_KSYMS_SIZE -
			    sizeof(struct ringtrace_persist_blob);
	const struct ringtrace_persist_header *h;
	const struct ringtrace_persist_blob *b;
	char boot_id[64], good[256], text[256], *meta;
	uint8_t *blob1, *blob2, *img, boot[16];
	unsigned long long registered_gen;
	struct described d, cur;
	const char *why = "";
	struct utsname u;
	unsigned int i;
	struct info in;
	ssize_t mlen;
	int c;

	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load(self->r.args));
	ASSERT_EQ(0, read_info(&in));
	if (!strcmp(in.state, "previous") || !strcmp(in.state, "damaged")) {
		ASSERT_EQ(0, rt_ctl_write("persist/release", in.uuid));
		ASSERT_EQ(0, read_info(&in));
	}
	ASSERT_STREQ("live", in.state);
	/* Armed: the metadata is in it; nothing of userspace's yet. */
	ASSERT_EQ(0, read_described(&d));
	EXPECT_LE(1, d.gen[0]);
	EXPECT_LT(1000, d.bytes[0]);
	EXPECT_EQ(0, d.gen[1]);
	EXPECT_STREQ("unset", d.boot_id);
	EXPECT_STREQ("unset", d.build_id);

	ASSERT_LT(0, rt_read_file("/proc/sys/kernel/random/boot_id", boot_id,
				  sizeof(boot_id)));
	boot_id[strcspn(boot_id, "\n")] = '\0';
	ASSERT_EQ(0, uuid_bytes(boot_id, boot));
	snprintf(good, sizeof(good), "boot_id=%s build_id=" BUILD_ID_HEX "\n",
		 boot_id);
	{
		const char *bad[] = {
			"garbage", "boot_id=", "boot_id=%s", "build_id=%s",
			"boot_id=%s build_id=abc",
			"boot_id=%s build_id=" BUILD_ID_HEX "00",
			"boot_id=%sx build_id=" BUILD_ID_HEX,
			"boot_id=%.35s build_id=" BUILD_ID_HEX,
			"boot_id=%s build_id=" BUILD_ID_HEX " boot_id=%s",
			"boot_id=%s build_id=zz112233445566778899aabbccddeeff01234567",
			"boot_id=%s build_id=" BUILD_ID_HEX " extra=1",
			"boot_id=%s  build_id " BUILD_ID_HEX,
		};

		for (i = 0; i < RT_ARRAY_SIZE(bad); i++) {
			snprintf(text, sizeof(text), bad[i], boot_id, boot_id);
			EXPECT_EQ(-EINVAL, rt_ctl_write("persist/identity", text))
				TH_LOG("identity \"%s\"", text);
		}
	}
	memset(text, 'a', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	EXPECT_EQ(-EINVAL, rt_ctl_write("persist/identity", text));
	ASSERT_EQ(0, read_described(&cur));
	EXPECT_STREQ("unset", cur.boot_id);
	EXPECT_STREQ("unset", cur.build_id);
	ASSERT_EQ(0, rt_ctl_write("persist/identity", good));
	ASSERT_EQ(0, read_described(&cur));
	EXPECT_STREQ(boot_id, cur.boot_id);
	EXPECT_STREQ(BUILD_ID_HEX, cur.build_id);
	/* A bad one after it leaves it. */
	EXPECT_EQ(-EINVAL, rt_ctl_write("persist/identity", "boot_id=x"));

	/* ksyms: not a zstd frame, too big: refused, nothing written. */
	blob1 = fake_zst(200000, 7);
	blob2 = fake_zst(room + 1, 13);
	ASSERT_NE(NULL, blob1);
	ASSERT_NE(NULL, blob2);
	EXPECT_EQ(-EINVAL, write_ksyms("abc", 3));
	EXPECT_EQ(-EINVAL, write_ksyms(blob1 + 4, 4096));
	EXPECT_EQ(-EFBIG, write_ksyms(blob2, room + 1));
	ASSERT_EQ(0, read_described(&cur));
	EXPECT_EQ(0, cur.gen[1]);
	/* Two writes, the second the most a copy holds. */
	ASSERT_EQ(0, write_ksyms(blob1, 200000));
	ASSERT_EQ(0, read_described(&cur));
	EXPECT_EQ(1, cur.gen[1]);
	EXPECT_EQ(200000, cur.bytes[1]);
	ASSERT_EQ(0, write_ksyms(blob2, room));
	EXPECT_EQ(-EINVAL, write_ksyms(blob1 + 4, 4096));
	EXPECT_EQ(-EFBIG, write_ksyms(blob2, room + 1));
	ASSERT_EQ(0, read_described(&cur));
	EXPECT_EQ(2, cur.gen[1]);
	EXPECT_EQ(room, cur.bytes[1]);

	/*
	 * Each event registered renders it again: the selftest module
	 * registers its events at load (and its unload changes no TSDL).
	 */
	ASSERT_EQ(0, read_described(&d));
	ASSERT_EQ(0, load_selftest_module());
	ASSERT_EQ(0, read_described(&cur));
	EXPECT_LT(d.gen[0], cur.gen[0]);
	registered_gen = cur.gen[0];
	ASSERT_EQ(0, system("rmmod ringtrace_selftest"));

	/* A whole read of the metadata file is the image's copy. */
	meta = malloc(RINGTRACE_PERSIST_METADATA_SIZE);
	ASSERT_NE(NULL, meta);
	mlen = rt_ctl_read("metadata", meta, RINGTRACE_PERSIST_METADATA_SIZE);
	ASSERT_LT(1000, mlen);
	ASSERT_EQ(0, read_described(&cur));
	EXPECT_EQ(registered_gen + 1, cur.gen[0]);
	EXPECT_EQ(mlen, cur.bytes[0]);
	d = cur;
	ASSERT_EQ(0, unload());

	ASSERT_EQ(0, load(self->r.args));
	ASSERT_EQ(0, read_info(&in));
	ASSERT_STREQ("previous", in.state);
	/* A kept image takes nothing. */
	EXPECT_EQ(-EBUSY, rt_ctl_write("persist/identity", good));
	EXPECT_EQ(-EBUSY, write_ksyms(blob1, 200000));
	img = read_image(in.size);
	ASSERT_NE(NULL, img);
	h = (const void *)img;
	EXPECT_EQ(h->checksum, header_sum(img));
	EXPECT_EQ(0, memcmp(h->boot_id, boot, sizeof(boot)));
	EXPECT_EQ(20, h->build_id_len);
	EXPECT_EQ(0, memcmp(h->build_id,
			    "\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99"
			    "\xaa\xbb\xcc\xdd\xee\xff\x01\x23\x45\x67", 20));
	ASSERT_EQ(0, uname(&u));
	EXPECT_STREQ(u.release, h->release);
	EXPECT_STREQ(u.version, h->version);
	EXPECT_EQ(RINGTRACE_PERSIST_METADATA_SIZE, h->metadata_size);
	EXPECT_EQ(RINGTRACE_PERSIST_KSYMS_SIZE, h->ksyms_size);

	/* Metadata: both copies valid, the newer the text read. */
	c = newest_copy(img, 0);
	ASSERT_LE(0, c);
	b = blob_of(img, 0, c, &why);
	EXPECT_EQ(d.gen[0], b->gen);
	EXPECT_EQ(mlen, b->len);
	EXPECT_EQ(0, memcmp(b + 1, meta, mlen));
	EXPECT_NE(NULL, memmem(b + 1, b->len, "\"" RTST_RECORD_NAME "\"",
			       strlen(RTST_RECORD_NAME) + 2));
	/* The older: the render for the selftest module's last event. */
	b = blob_of(img, 0, !c, &why);
	ASSERT_NE(NULL, b) TH_LOG("older metadata copy: %s", why);
	EXPECT_EQ(registered_gen, b->gen);
	EXPECT_EQ(0, memcmp(b + 1, "/* CTF 1.8 */", 13));
	EXPECT_NE(NULL, memmem(b + 1, b->len, "\"" RTST_RECORD_NAME "\"",
			       strlen(RTST_RECORD_NAME) + 2));

	/* ksyms: the first write in copy 0, the second in copy 1. */
	EXPECT_EQ(1, newest_copy(img, 1));
	b = blob_of(img, 1, 0, &why);
	ASSERT_NE(NULL, b) TH_LOG("ksyms copy 0: %s", why);
	EXPECT_EQ(1, b->gen);
	EXPECT_EQ(200000, b->len);
	EXPECT_EQ(0, memcmp(b + 1, blob1, 200000));
	b = blob_of(img, 1, 1, &why);
	ASSERT_NE(NULL, b) TH_LOG("ksyms copy 1: %s", why);
	EXPECT_EQ(2, b->gen);
	EXPECT_EQ(room, b->len);
	EXPECT_EQ(0, memcmp(b + 1, blob2, room));

	/* persist/info of the kept image says the same. */
	ASSERT_EQ(0, read_described(&cur));
	EXPECT_STREQ(boot_id, cur.boot_id);
	EXPECT_EQ(d.gen[0], cur.gen[0]);
	EXPECT_EQ(2, cur.gen[1]);
	free(img);
	free(meta);
	free(blob1);
	free(blob2);
	ASSERT_EQ(0, rt_ctl_write("persist/release", in.uuid));
	ASSERT_EQ(0, unload());
}

TEST_HARNESS_MAIN
