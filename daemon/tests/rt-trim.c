// SPDX-License-Identifier: GPL-2.0
/*
 * rt-trim: cut a decompressed ringtrace stream file after its last whole
 * CTF packet, and say how many packets it holds.
 *
 *   rt-trim FILE...
 *
 * Prints "FILE: <packets> packets, <bytes> bytes, <cut> trailing bytes cut"
 * per file.  Exit 1 if a packet header is bad (wrong magic, or a size that
 * does not hold the header): that is corruption, not a cut-short tail.
 *
 * The tests use it only when tools/ringtrace (whose `unpack` does this) is
 * not built; a file decompressed from a stream the daemon was killed while
 * writing may end inside a packet, which babeltrace2 rejects whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/ringtrace.h>

static int trim(const char *path)
{
	struct ringtrace_packet_header h;
	unsigned long long packets = 0;
	off_t off = 0, size;
	struct stat st;
	int fd, ret = 0;

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "rt-trim: %s: %s\n", path, strerror(errno));
		return 1;
	}
	size = st.st_size;
	while (size - off >= (off_t)sizeof(h)) {
		if (pread(fd, &h, sizeof(h), off) != (ssize_t)sizeof(h)) {
			fprintf(stderr, "rt-trim: %s: read error\n", path);
			ret = 1;
			break;
		}
		if (h.magic != RINGTRACE_CTF_MAGIC || h.packet_size % 8 ||
		    h.packet_size / 8 < sizeof(h) ||
		    h.content_size > h.packet_size) {
			fprintf(stderr, "rt-trim: %s: bad packet header at %lld\n",
				path, (long long)off);
			ret = 1;
			break;
		}
		if ((unsigned long long)(size - off) < h.packet_size / 8)
			break;
		off += (off_t)(h.packet_size / 8);
		packets++;
	}
	if (!ret && off < size && ftruncate(fd, off) < 0) {
		fprintf(stderr, "rt-trim: %s: %s\n", path, strerror(errno));
		ret = 1;
	}
	if (!ret)
		printf("%s: %llu packets, %lld bytes, %lld trailing bytes cut\n",
		       path, packets, (long long)off, (long long)(size - off));
	close(fd);
	return ret;
}

int main(int argc, char **argv)
{
	int i, ret = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: rt-trim FILE...\n");
		return 2;
	}
	for (i = 1; i < argc; i++)
		ret |= trim(argv[i]);
	return ret;
}
