// SPDX-License-Identifier: GPL-2.0
/*
 * rt-seekgen: a large trace for the seek benchmark (host-seek.sh), as
 * ringtraced's drain threads leave it before packing: per CPU, rotated
 * chunks cpuN-KKKKKK.zst of stored frames (lib/chunk.h), one 64 KiB packet
 * each, of ringtrace_marker events with compact headers, as ringtrace.ko
 * lays them out.  `ringtrace compress` then packs them (with their time
 * indexes) as ringtraced's packers would.
 *
 * Usage: rt-seekgen [--mix THREADS] DIR UUID32HEX CPUS SECONDS EVENTS_PER_S CHUNK_MIB
 * Prints the first and last event times (ns).  The marker's text is a
 * counter and 16 letters of a 16-letter alphabet drawn at random: about
 * half the bytes of an event are noise, so the trace packs about 2.5:1
 * (a real trace packs 4-8:1: more events per compressed byte).
 *
 * --mix: a scheduler's and system calls' events instead of markers, for
 * the span tables of `ringtrace sql` (host-sql.sh): THREADS threads per
 * CPU, one running at a time, each making one to three system calls
 * (syscall_entry with three arguments, syscall_exit) and then waking
 * another of its CPU's threads (sched_wakeup) and switching to it
 * (sched_switch, prev_state S).  The ids and layouts are those of
 * test_decoder.py's KERNEL_EVENTS (the module's), whose TSDL the caller
 * writes as DIR/metadata; system call numbers 0, 4 and 110 (its enum).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/ringtrace.h>

#define PACKET		65536
#define TEXT		30
#define EVENT		(4 + 2 + TEXT)
#define T0		1000000000ULL

/* --mix: KERNEL_EVENTS' ids (test_decoder.py) and the largest event. */
enum { ID_SWITCH = 1, ID_WAKEUP = 2, ID_SYS_ENTRY = 11, ID_SYS_EXIT = 12 };
#define MIX_EVENT	(4 + 56)

/* One CPU's state in --mix: who runs, what it does next. */
struct mix {
	unsigned int threads, cpu;
	uint32_t cur;			/* index of the thread running */
	unsigned int calls;		/* system calls left before it sleeps */
	int32_t nr;			/* the call open, -1 none */
	int64_t woken;			/* the thread it woke, -1 none yet */
};

static void die(const char *what)
{
	fprintf(stderr, "rt-seekgen: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void put(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static void write_all(int fd, const void *b, size_t n)
{
	while (n) {
		ssize_t w = write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write");
		b = (const uint8_t *)b + w;
		n -= (size_t)w;
	}
}

static uint64_t xs = 88172645463325252ULL;

static uint64_t rnd(void)
{
	xs ^= xs << 13;
	xs ^= xs >> 7;
	xs ^= xs << 17;
	return xs;
}

static void put_comm(uint8_t *p, uint32_t tid)
{
	memset(p, 0, 16);
	snprintf((char *)p, 16, "mix-%u", tid);
}

/* The tid of --mix thread @i of @m's CPU. */
static uint32_t mix_tid(const struct mix *m, uint32_t i)
{
	return 1000 + m->cpu * m->threads + i;
}

/*
 * The next --mix event of @m at @ts into @e (compact header): its size.
 * Calls, then a wakeup of another thread, then the switch to it.
 */
static size_t mix_event(struct mix *m, uint8_t *e, uint64_t ts)
{
	static const int32_t nrs[] = { 0, 4, 110 };
	uint32_t hdr = (uint32_t)(ts & ((1U << 27) - 1)) << 5;
	uint64_t r = rnd();

	if (m->nr >= 0) {			/* the call returns */
		put(e, hdr | ID_SYS_EXIT, 4);
		put(e + 4, (uint32_t)m->nr, 4);
		put(e + 8, r % 4096, 8);
		m->nr = -1;
		m->calls--;
		return 4 + 12;
	}
	if (m->calls) {				/* fd, buffer, size */
		m->nr = nrs[r % 3];
		put(e, hdr | ID_SYS_ENTRY, 4);
		put(e + 4, (uint32_t)m->nr, 4);
		e[8] = 3;
		put(e + 9, (r >> 8) % 64, 8);
		put(e + 17, 0x7ffd00000000ULL | (r >> 16 & 0xfffff0), 8);
		put(e + 25, 1ULL << (r >> 40) % 17, 8);
		return 4 + 4 + 1 + 24;
	}
	if (m->woken < 0) {			/* wake another (or itself) */
		uint32_t next = m->threads == 1 ? m->cur :
			(m->cur + 1 + (uint32_t)(r % (m->threads - 1))) % m->threads;

		put(e, hdr | ID_WAKEUP, 4);
		put_comm(e + 4, mix_tid(m, next));
		put(e + 20, mix_tid(m, next), 4);
		put(e + 24, 120, 4);
		put(e + 28, m->cpu, 4);
		m->woken = next;
		return 4 + 28;
	}
	put(e, hdr | ID_SWITCH, 4);		/* and sleep, switching to it */
	put_comm(e + 4, mix_tid(m, m->cur));
	put(e + 20, mix_tid(m, m->cur), 4);
	put(e + 24, 120, 4);
	put(e + 28, 1, 8);			/* TASK_INTERRUPTIBLE: S */
	put_comm(e + 36, mix_tid(m, (uint32_t)m->woken));
	put(e + 52, mix_tid(m, (uint32_t)m->woken), 4);
	put(e + 56, 120, 4);
	m->cur = (uint32_t)m->woken;
	m->woken = -1;
	m->calls = 1 + (unsigned int)(r >> 60) % 3;
	return 4 + 56;
}

/* One packet as a stored frame: raw blocks of at most 128 KiB (one here). */
static void stored_frame(int fd, const uint8_t *pkt, uint32_t len)
{
	uint8_t h[12];

	put(h, 0xFD2FB528U, 4);
	h[4] = 0xA0;
	put(h + 5, len, 4);
	put(h + 9, (uint64_t)len << 3 | 1, 3);
	write_all(fd, h, sizeof(h));
	write_all(fd, pkt, len);
}

int main(int argc, char **argv)
{
	unsigned int cpus, seconds, chunk_mib, threads = 0;
	uint64_t rate, step, last = 0;
	uint8_t uuid[16], *pkt = malloc(PACKET);

	if (argc > 2 && !strcmp(argv[1], "--mix")) {
		threads = (unsigned int)atoi(argv[2]);
		if (threads < 1 || threads > 255) {
			fprintf(stderr, "rt-seekgen: --mix wants 1..255 threads\n");
			return 2;
		}
		argc -= 2;
		argv += 2;
	}
	if (argc != 7 || strlen(argv[2]) != 32 || !pkt) {
		fprintf(stderr, "usage: rt-seekgen [--mix THREADS] DIR UUID32HEX CPUS SECONDS EVENTS_PER_S CHUNK_MIB\n");
		return 2;
	}
	for (int i = 0; i < 16; i++)
		if (sscanf(argv[2] + 2 * i, "%2hhx", &uuid[i]) != 1) {
			fprintf(stderr, "rt-seekgen: '%s' is not 32 hex digits\n", argv[2]);
			return 2;
		}
	cpus = (unsigned int)atoi(argv[3]);
	seconds = (unsigned int)atoi(argv[4]);
	rate = strtoull(argv[5], NULL, 10);
	chunk_mib = (unsigned int)atoi(argv[6]);
	if (!cpus || !seconds || !rate || rate > 100000000 || !chunk_mib)
		return 2;
	step = 1000000000ULL / rate;
	for (unsigned int cpu = 0; cpu < cpus; cpu++) {
		uint64_t ts = T0 + cpu * 7, end = T0 + (uint64_t)seconds * 1000000000ULL;
		uint64_t seq = 0, n = 0, chunk_bytes = 0;
		struct mix m = { .threads = threads, .cpu = cpu, .calls = 1, .nr = -1,
				 .woken = -1 };
		unsigned int part = 0;
		int fd = -1;

		while (ts < end) {
			struct ringtrace_packet_header *h = (void *)pkt;
			size_t off = sizeof(*h);
			uint64_t begin = ts, at = ts;	/* the packet's last event */
			uint32_t events = 0;

			while (threads && off + MIX_EVENT <= PACKET && ts < end) {
				off += mix_event(&m, pkt + off, ts);
				events++;
				at = ts;
				last = ts > last ? ts : last;
				ts += 1 + step / 2 + rnd() % step;	/* about step apart */
			}
			while (!threads && off + EVENT <= PACKET && ts < end) {
				uint8_t *e = pkt + off;
				char text[TEXT + 1];

				put(e, (ts & ((1U << 27) - 1)) << 5, 4);
				put(e + 4, TEXT, 2);
				snprintf(text, sizeof(text), "m%012" PRIu64 "-", n++);
				for (int i = 14; i < TEXT; i++)
					text[i] = (char)('a' + (rnd() & 15));
				memcpy(e + 6, text, TEXT);
				off += EVENT;
				events++;
				at = ts;
				last = ts > last ? ts : last;
				ts += step;
			}
			memset(h, 0, sizeof(*h));
			h->magic = RINGTRACE_CTF_MAGIC;
			memcpy(h->uuid, uuid, 16);
			h->stream_instance_id = cpu;
			h->timestamp_begin = begin;
			h->timestamp_end = at;
			h->content_size = off * 8;
			h->packet_size = off * 8;
			h->packet_seq_num = seq++;
			h->cpu_id = cpu;
			h->events = events;
			if (fd < 0 || chunk_bytes >= (uint64_t)chunk_mib << 20) {
				char path[4096];

				if (fd >= 0 && close(fd))
					die("close");
				snprintf(path, sizeof(path), "%s/cpu%u-%06u.zst", argv[1],
					 cpu, ++part);
				fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
				if (fd < 0)
					die(path);
				chunk_bytes = 0;
			}
			stored_frame(fd, pkt, (uint32_t)off);
			chunk_bytes += off + 12;
		}
		if (fd >= 0 && close(fd))
			die("close");
	}
	printf("%" PRIu64 " %" PRIu64 "\n", (uint64_t)T0, last);
	return 0;
}
