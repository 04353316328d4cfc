// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target of module/elfnote.h, the build-id parser ringtrace.ko
 * runs over every mapped file (untrusted input): the input is a whole
 * file, read as module/mmap.c reads it -- its first RTR_ELF_HEAD_MAX bytes
 * at hand, the rest through the read callback.  Besides ASan and UBSan,
 * it aborts if the parser asks for bytes outside the file or more note
 * bytes than RTR_ELF_NOTES_MAX, or returns an id longer than
 * RTR_BUILD_ID_MAX.  tools/tests/fuzz-elfnote.sh runs it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../module/elfnote.h"

struct input {
	const uint8_t *data;
	size_t size;
	uint64_t read;		/* note bytes read through the callback */
};

static int read_input(void *ctx, u8 *buf, u64 off, u64 len)
{
	struct input *in = ctx;

	if (off > in->size || len > in->size - off || len > RTR_ELF_NOTES_MAX)
		abort();
	in->read += len;
	if (in->read > RTR_ELF_NOTES_MAX)
		abort();
	memcpy(buf, in->data + off, len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { .data = data, .size = size };
	u8 notes[RTR_ELF_NOTES_MAX], id[RTR_BUILD_ID_MAX];
	size_t head = size < RTR_ELF_HEAD_MAX ? size : RTR_ELF_HEAD_MAX;
	uint8_t *copy = malloc(head ? head : 1);
	int ret;

	if (!copy)
		return 0;
	/* A copy of its own size: ASan sees any read past what was read. */
	memcpy(copy, data, head);
	ret = rtr_elf_build_id(copy, head, size, read_input, &in, notes, id);
	if (ret > RTR_BUILD_ID_MAX || (ret < 0 && ret != -ENOEXEC && ret != -EIO))
		abort();
	free(copy);
	return 0;
}
