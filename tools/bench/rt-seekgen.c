// SPDX-License-Identifier: GPL-2.0
/*
 * rt-seekgen: a large trace for the seek benchmark (host-seek.sh), as
 * ringtraced's drain threads leave it before packing: per CPU, rotated
 * chunks cpuN-KKKKKK.zst of stored frames (lib/chunk.h), one 64 KiB packet
 * each, of ringtrace_marker events with compact headers, as ringtrace.ko
 * lays them out.  `ringtrace compress` then packs them (with their time
 * indexes) as ringtraced's packers would.
 *
 * Usage: rt-seekgen DIR UUID32HEX CPUS SECONDS EVENTS_PER_S CHUNK_MIB
 * Prints the first and last event times (ns).  The marker's text is a
 * counter and 16 letters of a 16-letter alphabet drawn at random: about
 * half the bytes of an event are noise, so the trace packs about 2.5:1
 * (a real trace packs 4-8:1: more events per compressed byte).
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
	unsigned int cpus, seconds, chunk_mib;
	uint64_t rate, step, last = 0, xs = 88172645463325252ULL;
	uint8_t uuid[16], *pkt = malloc(PACKET);

	if (argc != 7 || strlen(argv[2]) != 32 || !pkt) {
		fprintf(stderr, "usage: rt-seekgen DIR UUID32HEX CPUS SECONDS EVENTS_PER_S CHUNK_MIB\n");
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
		unsigned int part = 0;
		int fd = -1;

		while (ts < end) {
			struct ringtrace_packet_header *h = (void *)pkt;
			size_t off = sizeof(*h);
			uint64_t begin = ts;
			uint32_t events = 0;

			while (off + EVENT <= PACKET && ts < end) {
				uint8_t *e = pkt + off;
				char text[TEXT + 1];

				put(e, (ts & ((1U << 27) - 1)) << 5, 4);
				put(e + 4, TEXT, 2);
				snprintf(text, sizeof(text), "m%012" PRIu64 "-", n++);
				for (int i = 14; i < TEXT; i++) {
					xs ^= xs << 13;
					xs ^= xs >> 7;
					xs ^= xs << 17;
					text[i] = (char)('a' + (xs & 15));
				}
				memcpy(e + 6, text, TEXT);
				off += EVENT;
				events++;
				last = ts > last ? ts : last;
				ts += step;
			}
			memset(h, 0, sizeof(*h));
			h->magic = RINGTRACE_CTF_MAGIC;
			memcpy(h->uuid, uuid, 16);
			h->stream_instance_id = cpu;
			h->timestamp_begin = begin;
			h->timestamp_end = ts - step;
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
