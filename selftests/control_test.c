// SPDX-License-Identifier: GPL-2.0
/*
 * The control files of /sys/kernel/debug/ringtrace: every valid value is
 * taken and read back, every invalid write fails with the documented error
 * and leaves the value, the counters and the recorded data as they were,
 * and the -EBUSY rules hold.
 */
#include "ringtrace_test.h"

#include <sys/klog.h>

#include <dirent.h>
#include <sys/wait.h>


FIXTURE(control) {
	int cpu;
};

FIXTURE_SETUP(control)
{
	RT_REQUIRE();
	ASSERT_EQ(0, rt_reset());
	self->cpu = rt_test_cpu();
	ASSERT_LE(0, self->cpu);
	ASSERT_EQ(0, rt_pin(self->cpu));
}

FIXTURE_TEARDOWN(control)
{
	rt_reset();
}

/* Everything a bad write must not change. */
struct snapshot {
	char tracing_on[64], mode[64], subbuf_size[64], num_subbufs[64];
	char *stats;
};

static void snapshot_take(struct snapshot *s)
{
	rt_ctl_read("tracing_on", s->tracing_on, sizeof(s->tracing_on));
	rt_ctl_read("mode", s->mode, sizeof(s->mode));
	rt_ctl_read("subbuf_size", s->subbuf_size, sizeof(s->subbuf_size));
	rt_ctl_read("num_subbufs", s->num_subbufs, sizeof(s->num_subbufs));
	s->stats = rt_slurp(rt_path("stats"));
}

/*
 * Write @len bytes of @bad to @file, expect -@err, and expect every control
 * value and every counter to be unchanged.
 */
static void expect_rejected(struct __test_metadata *_metadata,
			    const char *file, const char *bad, size_t len,
			    int err)
{
	struct snapshot before, after;
	char path[256];

	snapshot_take(&before);
	snprintf(path, sizeof(path), "%s/%s", rt_dir(), file);
	EXPECT_EQ(-err, rt_write_file(path, bad, len)) {
		TH_LOG("%s: write of \"%.*s\" (%zu bytes)", file, (int)len,
		       bad, len);
	}
	snapshot_take(&after);
	EXPECT_STREQ(before.tracing_on, after.tracing_on);
	EXPECT_STREQ(before.mode, after.mode);
	EXPECT_STREQ(before.subbuf_size, after.subbuf_size);
	EXPECT_STREQ(before.num_subbufs, after.num_subbufs);
	ASSERT_NE(NULL, before.stats);
	ASSERT_NE(NULL, after.stats);
	EXPECT_STREQ(before.stats, after.stats) {
		TH_LOG("%s: \"%.*s\" changed the stats", file, (int)len, bad);
	}
	free(before.stats);
	free(after.stats);
}

static void expect_all_rejected(struct __test_metadata *_metadata,
				const char *file, const char *const *bad,
				size_t n, int err)
{
	size_t i;

	for (i = 0; i < n; i++)
		expect_rejected(_metadata, file, bad[i], strlen(bad[i]), err);
	/* An empty write is a write of nothing valid. */
	expect_rejected(_metadata, file, "", 0, err);
}

static void expect_value(struct __test_metadata *_metadata, const char *file,
			 const char *expected)
{
	char buf[64];

	ASSERT_LT(0, rt_ctl_read(file, buf, sizeof(buf)));
	EXPECT_STREQ(expected, buf);
}

/* Record @n markers on this CPU so that lost data would be noticed. */
static void write_markers(struct __test_metadata *_metadata, int n)
{
	int fd = rt_marker_open(), i;

	ASSERT_LE(0, fd);
	for (i = 0; i < n; i++)
		ASSERT_EQ(8, rt_write_seq_marker(fd, i, 8));
	close(fd);
}

/* Tracing off, then the markers 0..n-1 must all be in @cpu's buffer. */
static void expect_markers(struct __test_metadata *_metadata, int cpu, int n)
{
	struct rt_markers c = { 0 };
	struct rt_meta *m;
	struct rt_buf b;
	char msg[256];
	int i;

	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	m = rt_meta_load_file();
	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, rt_buf_open(&b, cpu));
	EXPECT_EQ(-ENODATA, rt_drain(m, &b, rt_collect_marker, &c, NULL,
				     msg, sizeof(msg))) {
		TH_LOG("%s", msg);
	}
	EXPECT_EQ(n, c.count);
	for (i = 0; i < n && (size_t)i < c.count; i++)
		EXPECT_EQ(i, rt_marker_seq(c.m[i].data, c.m[i].len));
	rt_markers_free(&c);
	rt_buf_close(&b);
	free(m);
}

/* Can every possible CPU get @per_cpu bytes with half the free memory? */
static bool enough_memory(unsigned long long per_cpu)
{
	unsigned long long avail_kb = 0;
	char line[256];
	cpu_set_t cpus;
	FILE *f;

	f = fopen("/proc/meminfo", "r");
	if (!f || rt_possible_cpus(&cpus) <= 0) {
		if (f)
			fclose(f);
		return false;
	}
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &avail_kb) == 1)
			break;
	fclose(f);
	return per_cpu * CPU_COUNT(&cpus) <= avail_kb * 1024 / 2;
}

TEST_F(control, tracing_on)
{
	static const char *const bad[] = {
		"2", "10", "01", "-1", "on", "off", "y", "true", "0x1", "1x",
		"1 1", "\n", "1\n1",
	};

	expect_value(_metadata, "tracing_on", "0\n");
	expect_all_rejected(_metadata, "tracing_on", bad, RT_ARRAY_SIZE(bad),
			    EINVAL);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	expect_value(_metadata, "tracing_on", "1\n");
	/* Again: switching on what is on is fine. */
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1\n"));
	expect_value(_metadata, "tracing_on", "1\n");
	expect_all_rejected(_metadata, "tracing_on", bad, RT_ARRAY_SIZE(bad),
			    EINVAL);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0\n"));
	expect_value(_metadata, "tracing_on", "0\n");
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	expect_value(_metadata, "tracing_on", "0\n");
}

TEST_F(control, mode)
{
	static const char *const bad[] = {
		"Discard", "DISCARD", "discards", "disc", "overwrit",
		"overwrite discard", "0", "1", "flight", "\n", "dis card",
	};

	expect_value(_metadata, "mode", "discard\n");
	expect_all_rejected(_metadata, "mode", bad, RT_ARRAY_SIZE(bad), EINVAL);
	ASSERT_EQ(0, rt_ctl_write("mode", "overwrite"));
	expect_value(_metadata, "mode", "overwrite\n");
	expect_all_rejected(_metadata, "mode", bad, RT_ARRAY_SIZE(bad), EINVAL);
	ASSERT_EQ(0, rt_ctl_write("mode", "discard\n"));
	expect_value(_metadata, "mode", "discard\n");
	ASSERT_EQ(0, rt_ctl_write("mode", "overwrite\n"));
	expect_value(_metadata, "mode", "overwrite\n");

	/* While tracing: -EBUSY, whatever the word. */
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	expect_rejected(_metadata, "mode", "discard", 7, EBUSY);
	expect_rejected(_metadata, "mode", "overwrite", 9, EBUSY);
	expect_value(_metadata, "mode", "overwrite\n");
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	ASSERT_EQ(0, rt_ctl_write("mode", "discard"));
	expect_value(_metadata, "mode", "discard\n");
}

TEST_F(control, subbuf_size)
{
	long page = sysconf(_SC_PAGESIZE);
	char half_page[32], page_plus[32], three_pages[32];
	const char *const bad[] = {
		"0", "1", half_page, page_plus, three_pages, "4095", "6144",
		"134217728",		/* 128 MiB: too large */
		"67112960",		/* 64 MiB + 4 KiB */
		"4294967296",		/* 4 GiB */
		"18446744073709551616",	/* overflows u64 */
		"-4096", "4096x", "x4096", "4096 4096", "\n", "1e6",
	};
	const unsigned int good[] = { page, 2 * page, 65536, 1 << 20 };
	char buf[32];
	size_t i;

	snprintf(half_page, sizeof(half_page), "%ld", page / 2);
	snprintf(page_plus, sizeof(page_plus), "%ld", page + 1);
	snprintf(three_pages, sizeof(three_pages), "%ld", 3 * page);

	expect_value(_metadata, "subbuf_size", "65536\n");
	expect_all_rejected(_metadata, "subbuf_size", bad, RT_ARRAY_SIZE(bad),
			    EINVAL);
	for (i = 0; i < RT_ARRAY_SIZE(good); i++) {
		ASSERT_EQ(0, rt_ctl_write_num("subbuf_size", good[i]));
		EXPECT_EQ(good[i], rt_ctl_read_num("subbuf_size"));
		EXPECT_EQ(RT_DEFAULT_NUM_SUBBUFS,
			  rt_ctl_read_num("num_subbufs"));
	}
	/* A trailing newline, as echo writes it. */
	ASSERT_EQ(0, rt_ctl_write("subbuf_size", "8192\n"));
	EXPECT_EQ(8192, rt_ctl_read_num("subbuf_size"));
	expect_all_rejected(_metadata, "subbuf_size", bad, RT_ARRAY_SIZE(bad),
			    EINVAL);

	/* Tracing on: -EBUSY even for a valid size. */
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	expect_rejected(_metadata, "subbuf_size", "16384", 5, EBUSY);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	EXPECT_EQ(8192, rt_ctl_read_num("subbuf_size"));

	/*
	 * The largest size, with the fewest sub-buffers to spare memory, if
	 * this machine has the memory for it on every possible CPU.
	 */
	if (!enough_memory(2ULL * RINGTRACE_MAX_SUBBUF_SIZE)) {
		TH_LOG("not enough memory to try %u-byte sub-buffers",
		       RINGTRACE_MAX_SUBBUF_SIZE);
		return;
	}
	ASSERT_EQ(0, rt_ctl_write("num_subbufs", "2"));
	snprintf(buf, sizeof(buf), "%u", RINGTRACE_MAX_SUBBUF_SIZE);
	ASSERT_EQ(0, rt_ctl_write("subbuf_size", buf));
	EXPECT_EQ(RINGTRACE_MAX_SUBBUF_SIZE, rt_ctl_read_num("subbuf_size"));
	ASSERT_EQ(0, rt_set_geometry(RT_DEFAULT_SUBBUF_SIZE,
				     RT_DEFAULT_NUM_SUBBUFS));
}

TEST_F(control, num_subbufs)
{
	static const char *const bad[] = {
		"0", "1", "3", "6", "4097", "5000", "8192", "-2", "two",
		"2 2", "\n", "4294967298", "18446744073709551618",
	};
	const unsigned int good[] = { 2, 8, 16, 256 };
	size_t i;

	expect_value(_metadata, "num_subbufs", "64\n");
	expect_all_rejected(_metadata, "num_subbufs", bad, RT_ARRAY_SIZE(bad),
			    EINVAL);
	for (i = 0; i < RT_ARRAY_SIZE(good); i++) {
		ASSERT_EQ(0, rt_ctl_write_num("num_subbufs", good[i]));
		EXPECT_EQ(good[i], rt_ctl_read_num("num_subbufs"));
		EXPECT_EQ(RT_DEFAULT_SUBBUF_SIZE, rt_ctl_read_num("subbuf_size"));
	}
	/* The largest count, with the smallest sub-buffers. */
	ASSERT_EQ(0, rt_ctl_write_num("subbuf_size", sysconf(_SC_PAGESIZE)));
	ASSERT_EQ(0, rt_ctl_write("num_subbufs", "4096\n"));
	EXPECT_EQ(RINGTRACE_MAX_SUBBUFS, rt_ctl_read_num("num_subbufs"));
	expect_all_rejected(_metadata, "num_subbufs", bad, RT_ARRAY_SIZE(bad),
			    EINVAL);

	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	expect_rejected(_metadata, "num_subbufs", "8", 1, EBUSY);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	EXPECT_EQ(RINGTRACE_MAX_SUBBUFS, rt_ctl_read_num("num_subbufs"));
}

TEST_F(control, clear)
{
	static const char *const bad[] = {
		"0", "2", "11", "yes", "1 1", "\n", "-1",
	};
	struct rt_stats s;
	cpu_set_t cpus;
	int cpu, n;

	ASSERT_EQ(0, rt_ctl_write("mode", "overwrite"));
	ASSERT_EQ(0, rt_set_geometry(8192, 8));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	write_markers(_metadata, 5);
	ASSERT_EQ(0, rt_read_stats(self->cpu, &s));
	EXPECT_EQ(5, s.written);

	/* Tracing on: -EBUSY, and the data stays. */
	expect_rejected(_metadata, "clear", "1", 1, EBUSY);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	expect_all_rejected(_metadata, "clear", bad, RT_ARRAY_SIZE(bad), EINVAL);

	ASSERT_EQ(0, rt_ctl_write("clear", "1\n"));
	/* Every counter of every CPU is zero; geometry and mode stay. */
	n = rt_possible_cpus(&cpus);
	ASSERT_LT(0, n);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &cpus))
			continue;
		ASSERT_EQ(0, rt_read_stats(cpu, &s));
		EXPECT_EQ(0, s.written + s.delivered + rt_stats_lost(&s) +
			     s.subbufs + s.bytes);
	}
	expect_value(_metadata, "mode", "overwrite\n");
	EXPECT_EQ(8192, rt_ctl_read_num("subbuf_size"));
	EXPECT_EQ(8, rt_ctl_read_num("num_subbufs"));
	/* The data went too. */
	expect_markers(_metadata, self->cpu, 0);
}

/* The kernel log's tail, or NULL. */
static char *kernel_log(void)
{
	int len = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	char *buf;

	if (len <= 0)
		return NULL;
	buf = calloc(1, len + 1);
	if (buf && klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, len) < 0) {
		free(buf);
		buf = NULL;
	}
	return buf;
}

/*
 * Geometry that memory cannot hold is refused at once with ENOMEM and a
 * kernel log line that says why, with the numbers compared (rt_fuzz holds
 * every ENOMEM to such a line); values, counters and data stay.  4096
 * sub-buffers of 64 MiB are 256 GiB per CPU.
 */
TEST_F(control, huge_geometry_refused)
{
	const char *why = "67108864 x 4096 bytes would need";
	unsigned long long need = 0, avail = 0;
	unsigned int nr = 0;
	char *log, *hit, *last = NULL;

	ASSERT_EQ(0, rt_set_geometry(4096, RINGTRACE_MAX_SUBBUFS));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	write_markers(_metadata, 3);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	expect_rejected(_metadata, "subbuf_size", "67108864", 8, ENOMEM);
	expect_markers(_metadata, self->cpu, 3);
	log = kernel_log();
	ASSERT_NE(NULL, log);
	for (hit = strstr(log, why); hit; hit = strstr(hit + 1, why))
		last = hit;
	ASSERT_NE(NULL, last) TH_LOG("no \"%s\" line in the kernel log", why);
	/* Back to the start of the line's message. */
	while (last > log && last[-1] != '\n')
		last--;
	last = strstr(last, "ringtrace: ");
	ASSERT_NE(NULL, last);
	EXPECT_EQ(3, sscanf(last, "ringtrace: %u buffers of 67108864 x 4096 bytes would need %llu KiB, %llu KiB are available",
			    &nr, &need, &avail)) TH_LOG("%.120s", last);
	EXPECT_LT(0, nr);
	/* 256 GiB and a meta page per buffer, and more than there is. */
	EXPECT_EQ(nr * ((256ULL << 20) + 4), need);
	EXPECT_GT(need, avail);
	free(log);
}

/* Failed geometry writes keep the recorded data, not just the values. */
TEST_F(control, bad_writes_keep_data)
{
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	write_markers(_metadata, 3);
	expect_rejected(_metadata, "subbuf_size", "8192", 4, EBUSY);
	expect_rejected(_metadata, "num_subbufs", "8", 1, EBUSY);
	expect_rejected(_metadata, "clear", "1", 1, EBUSY);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	expect_rejected(_metadata, "subbuf_size", "12288", 5, EINVAL);
	expect_rejected(_metadata, "num_subbufs", "5", 1, EINVAL);
	expect_rejected(_metadata, "clear", "0", 1, EINVAL);
	expect_rejected(_metadata, "tracing_on", "2", 1, EINVAL);
	expect_rejected(_metadata, "mode", "x", 1, EINVAL);
	expect_markers(_metadata, self->cpu, 3);
}

/* An open buffer file pins the geometry: its mapping would go stale. */
TEST_F(control, busy_while_buffer_open)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len;
	void *map;
	int fd;

	fd = rt_buf_open_fd(self->cpu, O_RDONLY);
	ASSERT_LE(0, fd);
	expect_rejected(_metadata, "subbuf_size", "8192", 4, EBUSY);
	expect_rejected(_metadata, "num_subbufs", "8", 1, EBUSY);
	expect_rejected(_metadata, "clear", "1", 1, EBUSY);
	/* Only geometry and clear: mode has no -EBUSY rule for open files. */
	EXPECT_EQ(0, rt_ctl_write("mode", "overwrite"));
	EXPECT_EQ(0, rt_ctl_write("mode", "discard"));

	/* A mapping keeps the file open after close(). */
	len = page + (size_t)RT_DEFAULT_SUBBUF_SIZE * RT_DEFAULT_NUM_SUBBUFS;
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	close(fd);
	expect_rejected(_metadata, "subbuf_size", "8192", 4, EBUSY);
	expect_rejected(_metadata, "clear", "1", 1, EBUSY);
	munmap(map, len);

	EXPECT_EQ(0, rt_ctl_write("subbuf_size", "8192"));
	EXPECT_EQ(0, rt_ctl_write("num_subbufs", "8"));
	EXPECT_EQ(0, rt_ctl_write("clear", "1"));
	EXPECT_EQ(8192, rt_ctl_read_num("subbuf_size"));
	EXPECT_EQ(8, rt_ctl_read_num("num_subbufs"));
}

TEST_F(control, stats_format)
{
	char *text = rt_slurp(rt_path("stats")), *line, *next;
	struct rt_stats s, io;
	int expect_cpu = -1, cpu, n = 0, fd;
	cpu_set_t cpus;

	ASSERT_NE(NULL, text);
	ASSERT_LT(0, rt_possible_cpus(&cpus));
	/* One line per possible CPU, in order, in the exact format. */
	for (line = text; *line; line = next) {
		next = strchr(line, '\n');
		ASSERT_NE(NULL, next) TH_LOG("last line not terminated");
		*next++ = '\0';
		cpu = rt_parse_stats_line(line, &s);
		ASSERT_LE(0, cpu) TH_LOG("bad stats line \"%s\"", line);
		ASSERT_LT(expect_cpu, cpu);
		expect_cpu = cpu;
		EXPECT_TRUE(CPU_ISSET(cpu, &cpus));
		EXPECT_EQ(0, s.written + s.delivered + rt_stats_lost(&s) +
			     s.subbufs + s.bytes);
		n++;
	}
	EXPECT_EQ(CPU_COUNT(&cpus), n);
	free(text);

	/* GET_STATS says the same as the file, after some activity. */
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	write_markers(_metadata, 7);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	fd = rt_buf_open_fd(self->cpu, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, rt_read_stats(self->cpu, &s));
	ASSERT_EQ(0, rt_ioctl_stats(fd, &io));
	EXPECT_TRUE(rt_stats_equal(&s, &io));
	EXPECT_EQ(7, s.written);
	close(fd);
}

TEST_F(control, metadata)
{
	char *text = rt_slurp(rt_path("metadata")), *text2;
	struct rt_meta *m = calloc(1, sizeof(*m));
	const struct rt_event_desc *d;
	char line[256];
	FILE *f;
	int id;

	ASSERT_NE(NULL, text);
	ASSERT_NE(NULL, m);
	EXPECT_EQ(0, strncmp(text, "/* CTF 1.8 */", 13));
	ASSERT_EQ(0, rt_meta_parse(m, text));
	EXPECT_TRUE(m->have_uuid);

	/* The marker event: fixed id, {u16 len; 8-bit data[len]}. */
	d = &m->ev[RINGTRACE_EVENT_MARKER];
	ASSERT_TRUE(d->present);
	EXPECT_STREQ("ringtrace_marker", d->name);
	ASSERT_TRUE(d->decodable);
	ASSERT_EQ(2, d->nfields);
	EXPECT_EQ(RT_SCALAR, d->field[0].kind);
	EXPECT_EQ(2, d->field[0].size);
	EXPECT_EQ(RT_SEQUENCE, d->field[1].kind);
	EXPECT_EQ(1, d->field[1].size);
	EXPECT_EQ(0, d->field[1].len_field);

	/* Same trace, same text (the clock offset aside: none changed). */
	text2 = rt_slurp(rt_path("metadata"));
	ASSERT_NE(NULL, text2);
	EXPECT_EQ(0, strncmp(text, text2, strstr(text, "clock {") ?
			     (size_t)(strstr(text, "clock {") - text) : strlen(text)));
	free(text2);

	/* Every event of the selftest module, under the id it was given. */
	f = fopen(RTST_DIR "/events", "r");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			char name[RT_NAME_MAX];

			ASSERT_EQ(2, sscanf(line, "%63s %d", name, &id));
			EXPECT_EQ(id, rt_meta_find(m, name));
			ASSERT_LE(0, id);
			ASSERT_GT(RT_MAX_IDS, id);
			EXPECT_TRUE(m->ev[id].decodable) TH_LOG("%s", name);
		}
		fclose(f);
	} else {
		TH_LOG("ringtrace_selftest.ko not loaded: its events not checked");
	}
	free(text);
	free(m);
}

/* One buffer file per possible CPU, nothing else under cpu/. */
TEST_F(control, buffer_files)
{
	cpu_set_t cpus;
	struct dirent *de;
	char path[512];
	int n = 0, cpu;
	DIR *dir;

	ASSERT_LT(0, rt_possible_cpus(&cpus));
	dir = opendir(rt_path("cpu"));
	ASSERT_NE(NULL, dir);
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		cpu = atoi(de->d_name);
		EXPECT_TRUE(CPU_ISSET(cpu, &cpus)) TH_LOG("cpu/%s", de->d_name);
		snprintf(path, sizeof(path), "%s/cpu/%s/buffer", rt_dir(), de->d_name);
		EXPECT_EQ(0, access(path, R_OK));
		n++;
	}
	closedir(dir);
	EXPECT_EQ(CPU_COUNT(&cpus), n);
}

/* Files that only read or only write refuse the other direction. */
TEST_F(control, wrong_direction)
{
	char buf[64];
	int fd;

	EXPECT_GT(0, rt_write_file(rt_path("stats"), "1", 1));
	EXPECT_GT(0, rt_write_file(rt_path("metadata"), "1", 1));
	fd = open(rt_path("marker"), O_RDONLY);
	if (fd >= 0) {
		EXPECT_GT(0, read(fd, buf, sizeof(buf)));
		close(fd);
	}
	expect_value(_metadata, "tracing_on", "0\n");
}

TEST_HARNESS_MAIN
