// SPDX-License-Identifier: GPL-2.0
/*
 * A persistent region's image, checked before anything of it is believed
 * (persist.h).  The layout is recomputed here as module/persist.c's
 * rtr_persist_layout_of() makes it, from the header's geometry and page
 * size, and every area of the header must be exactly there: an image is
 * either the module's layout or refused, with the field named.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include <linux/ringtrace.h>

#include "le.h"
#include "persist.h"

#define HDR		struct ringtrace_persist_header
#define OFF(f)		((uint64_t)offsetof(HDR, f))

static uint64_t page_align(uint64_t v, uint64_t page)
{
	return (v + page - 1) / page * page;
}

static bool pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* The areas of the module's layout for @h's geometry, in @l; false: overflow. */
static bool layout_of(const HDR *h, HDR *l)
{
	uint64_t page = h->page_size, off = RINGTRACE_PERSIST_HEADER_SIZE;
	uint64_t ring_pages;

	l->state_offset = off;
	l->state_size = page_align(RINGTRACE_PERSIST_SNAP_OFFSET +
				   (uint64_t)RINGTRACE_PERSIST_SNAP_SIZE * h->nr_slices, page);
	off += l->state_size;
	l->slices_offset = off;
	l->slices_size = page_align((uint64_t)h->nr_slices *
				    sizeof(struct ringtrace_persist_slice), page);
	off += l->slices_size;
	l->metadata_size = RINGTRACE_PERSIST_METADATA_SIZE;
	l->metadata_offset[0] = off;
	l->metadata_offset[1] = off + l->metadata_size;
	off += 2 * l->metadata_size;
	l->ksyms_size = RINGTRACE_PERSIST_KSYMS_SIZE;
	l->ksyms_offset[0] = off;
	l->ksyms_offset[1] = off + l->ksyms_size;
	off += 2 * l->ksyms_size;
	l->counters_size = page_align((uint64_t)h->num_subbufs *
				      (sizeof(struct ringtrace_persist_slot) +
				       sizeof(uint64_t) +
				       sizeof(struct ringtrace_persist_slot_info)),
				      page);
	ring_pages = 1 + h->subbuf_size * h->num_subbufs / page;
	l->slice_size = l->counters_size + ring_pages * page;
	l->rings_offset = off;
	if (__builtin_mul_overflow(l->slice_size, (uint64_t)h->nr_slices,
				   &l->rings_size) ||
	    __builtin_add_overflow(off, l->rings_size, &off))
		return false;
	return true;
}

/* Prints "field (offset N): ..." into @why; returns PERSIST_DAMAGED. */
static enum persist_kind __attribute__((format(printf, 4, 5)))
bad(char *why, size_t len, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(why, len, "offset %" PRIu64 ": ", off);
	if (n < 0 || (size_t)n >= len)
		return PERSIST_DAMAGED;
	va_start(ap, fmt);
	vsnprintf(why + n, len - n, fmt, ap);
	va_end(ap);
	return PERSIST_DAMAGED;
}

/* Each area of @h where the module's layout @l puts it; else damage. */
static enum persist_kind check_areas(const HDR *h, const HDR *l, char *why,
				     size_t len)
{
#define AREA(f)								\
	do {								\
		if (h->f != l->f)					\
			return bad(why, len, OFF(f),			\
				   #f " %" PRIu64 " (this geometry puts it at %" PRIu64 ")", \
				   (uint64_t)h->f, (uint64_t)l->f);	\
	} while (0)
	AREA(state_offset);
	AREA(state_size);
	AREA(slices_offset);
	AREA(slices_size);
	AREA(metadata_offset[0]);
	AREA(metadata_offset[1]);
	AREA(metadata_size);
	AREA(ksyms_offset[0]);
	AREA(ksyms_offset[1]);
	AREA(ksyms_size);
	AREA(counters_size);
	AREA(slice_size);
	AREA(rings_offset);
	AREA(rings_size);
#undef AREA
	return PERSIST_IMAGE;
}

/* A NUL-padded text field holds a NUL. */
static bool has_nul(const char *s, size_t n)
{
	return memchr(s, 0, n) != NULL;
}

enum persist_kind persist_check(const uint8_t *buf, uint64_t size,
				struct persist_image *img, char *why,
				size_t len)
{
	HDR *h = &img->h, l;
	uint64_t sum, end;
	const struct ringtrace_persist_state *st;
	uint8_t page[RINGTRACE_PERSIST_HEADER_SIZE];
	enum persist_kind k;

	memset(img, 0, sizeof(*img));
	img->buf = buf;
	img->size = size;
	*why = 0;
	if (size < sizeof(uint64_t) ||
	    rt_get_le(buf, sizeof(uint64_t)) != RINGTRACE_PERSIST_MAGIC)
		return PERSIST_NONE;
	if (size < RINGTRACE_PERSIST_HEADER_SIZE)
		return bad(why, len, size, "the image ends inside its header page (%" PRIu64 " bytes)",
			   size);
	memcpy(h, buf, sizeof(*h));
	if (h->layout != RINGTRACE_PERSIST_LAYOUT) {
		snprintf(why, len, "offset %" PRIu64 ": layout %u, this reader reads %u",
			 OFF(layout), h->layout, RINGTRACE_PERSIST_LAYOUT);
		return PERSIST_OTHER_LAYOUT;
	}
	if (h->header_size != sizeof(*h))
		return bad(why, len, OFF(header_size), "header_size %u (layout 1's is %zu)",
			   h->header_size, sizeof(*h));
	memcpy(page, buf, sizeof(page));
	memset(page + OFF(checksum), 0, sizeof(h->checksum));
	sum = XXH64(page, sizeof(page), 0);
	if (sum != h->checksum)
		return bad(why, len, OFF(checksum), "checksum %016" PRIx64 ", the header's xxh64 is %016" PRIx64,
			   (uint64_t)h->checksum, sum);
	if (h->region_size != size)
		return bad(why, len, OFF(region_size), "region_size %" PRIu64 ", the image is %" PRIu64 " bytes",
			   (uint64_t)h->region_size, size);
	if (h->source != RINGTRACE_PERSIST_SRC_RESERVE_MEM &&
	    h->source != RINGTRACE_PERSIST_SRC_MEMMAP)
		return bad(why, len, OFF(source), "source %u", h->source);
	if (h->page_size < 4096 || h->page_size > 65536 || !pow2(h->page_size))
		return bad(why, len, OFF(page_size), "page_size %u", h->page_size);
	for (unsigned int i = 0; i < sizeof(h->reserved) / sizeof(h->reserved[0]); i++)
		if (h->reserved[i])
			return bad(why, len, OFF(reserved[0]) + 8 * i, "reserved[%u] is not zero", i);
	for (size_t i = sizeof(*h); i < sizeof(page); i++)
		if (page[i])
			return bad(why, len, i, "the header page is not zero past the header");
	if (!has_nul(h->release, sizeof(h->release)))
		return bad(why, len, OFF(release), "release is not a string");
	if (!has_nul(h->version, sizeof(h->version)))
		return bad(why, len, OFF(version), "version is not a string");
	if (h->build_id_len > RINGTRACE_PERSIST_BUILD_ID_MAX)
		return bad(why, len, OFF(build_id_len), "build_id_len %u (at most %u)",
			   h->build_id_len, RINGTRACE_PERSIST_BUILD_ID_MAX);
	if (h->subbuf_size < h->page_size || !pow2(h->subbuf_size) ||
	    h->subbuf_size > RINGTRACE_MAX_SUBBUF_SIZE)
		return bad(why, len, OFF(subbuf_size), "subbuf_size %" PRIu64,
			   (uint64_t)h->subbuf_size);
	if (h->num_subbufs < RINGTRACE_MIN_SUBBUFS || !pow2(h->num_subbufs) ||
	    h->num_subbufs > RINGTRACE_MAX_SUBBUFS)
		return bad(why, len, OFF(num_subbufs), "num_subbufs %u", h->num_subbufs);
	if (!h->nr_slices || h->nr_slices > size / h->page_size)
		return bad(why, len, OFF(nr_slices), "nr_slices %u", h->nr_slices);
	if (!layout_of(h, &l) ||
	    __builtin_add_overflow(l.rings_offset, l.rings_size, &end) ||
	    end > size)
		return bad(why, len, OFF(rings_size), "%u slices of %u x %" PRIu64 " bytes do not fit in %" PRIu64 " bytes",
			   h->nr_slices, h->num_subbufs, (uint64_t)h->subbuf_size, size);
	k = check_areas(h, &l, why, len);
	if (k != PERSIST_IMAGE)
		return k;
	st = (const void *)(buf + h->state_offset);
	img->lifecycle = rt_get_le(buf + h->state_offset, 4);
	if (img->lifecycle != RINGTRACE_PERSIST_EMPTY &&
	    img->lifecycle != RINGTRACE_PERSIST_LIVE &&
	    img->lifecycle != RINGTRACE_PERSIST_UNLOADED)
		return bad(why, len, h->state_offset, "lifecycle %u", img->lifecycle);
	/* crash_claimed and terminal: the crash path's (persist_crash()). */
	if (st->reserved0)
		return bad(why, len, h->state_offset +
			   offsetof(struct ringtrace_persist_state, reserved0),
			   "state reserved0 is not zero");
	for (unsigned int i = 0; i < sizeof(st->reserved) / sizeof(st->reserved[0]); i++)
		if (st->reserved[i])
			return bad(why, len, h->state_offset +
				   offsetof(struct ringtrace_persist_state, reserved) + 8 * i,
				   "state reserved[%u] is not zero", i);
	if (img->lifecycle == RINGTRACE_PERSIST_EMPTY)
		return PERSIST_NONE;
	return PERSIST_IMAGE;
}

int persist_slice(const struct persist_image *img, unsigned int i,
		  struct persist_slice *s, char *why, size_t len)
{
	const HDR *h = &img->h;
	uint64_t at = h->slices_offset + (uint64_t)i * sizeof(struct ringtrace_persist_slice);
	struct ringtrace_persist_slice e;
	uint64_t counters = h->rings_offset + (uint64_t)i * h->slice_size;

	memcpy(&e, img->buf + at, sizeof(e));
	memset(s, 0, sizeof(*s));
	s->index = i;
	if (e.flags & ~RINGTRACE_PERSIST_SLICE_USED) {
		bad(why, len, at + offsetof(struct ringtrace_persist_slice, flags),
		    "slice %u: flags 0x%x", i, e.flags);
		return -1;
	}
	if (e.counters_offset != counters ||
	    e.ring_offset != counters + h->counters_size ||
	    e.ring_size != h->slice_size - h->counters_size) {
		bad(why, len, at, "slice %u: counters %" PRIu64 " ring %" PRIu64 " size %" PRIu64 " (the layout's: %" PRIu64 " %" PRIu64 " %" PRIu64 ")",
		    i, (uint64_t)e.counters_offset, (uint64_t)e.ring_offset,
		    (uint64_t)e.ring_size, counters,
		    (uint64_t)(counters + h->counters_size),
		    (uint64_t)(h->slice_size - h->counters_size));
		return -1;
	}
	s->used = e.flags & RINGTRACE_PERSIST_SLICE_USED;
	if (s->used && e.cpu >= 8192) {
		bad(why, len, at, "slice %u: cpu %u", i, e.cpu);
		return -1;
	}
	s->cpu = e.cpu;
	s->counters = img->buf + counters;
	s->ring = img->buf + e.ring_offset;
	return 0;
}

/* Copy @i of a blob area: 1 valid, 0 never written, -1 damaged (@what). */
static int blob_copy(const struct persist_image *img, uint64_t off,
		     uint64_t size, uint64_t *gen, uint64_t *n, const char **what)
{
	struct ringtrace_persist_blob b;

	memcpy(&b, img->buf + off, sizeof(b));
	*gen = b.gen;
	if (!b.gen) {
		*what = "never written";
		return 0;
	}
	if (b.reserved) {
		*what = "reserved is not zero";
		return -1;
	}
	if (b.len > size - sizeof(b)) {
		*what = "len is more than the copy holds";
		return -1;
	}
	if (XXH64(img->buf + off + sizeof(b), b.len, 0) != b.checksum) {
		*what = "checksum differs from its bytes' xxh64";
		return -1;
	}
	*n = b.len;
	return 1;
}

int persist_blob(const struct persist_image *img, bool ksyms,
		 const uint8_t **data, uint64_t *n, char *why, size_t len)
{
	const HDR *h = &img->h;
	const __u64 *offs = ksyms ? h->ksyms_offset : h->metadata_offset;
	uint64_t size = ksyms ? h->ksyms_size : h->metadata_size;
	uint64_t gen[2], cn[2];
	const char *what[2];
	int r[2], best = -1;

	for (int i = 0; i < 2; i++) {
		r[i] = blob_copy(img, offs[i], size, &gen[i], &cn[i], &what[i]);
		if (r[i] == 1 && (best < 0 || gen[i] > gen[best]))
			best = i;
	}
	if (best >= 0) {
		*data = img->buf + offs[best] + sizeof(struct ringtrace_persist_blob);
		*n = cn[best];
		return 1;
	}
	if (!r[0] && !r[1])
		return 0;
	snprintf(why, len, "%s copies at offsets %" PRIu64 " and %" PRIu64 ": %s; %s",
		 ksyms ? "ksyms" : "metadata", (uint64_t)offs[0],
		 (uint64_t)offs[1], what[0], what[1]);
	return -1;
}

static int by_seq(const void *a, const void *b)
{
	const struct persist_packet *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Whether packet @p's header says what its slot's counters say: the
 * magic, the image's uuid, and the writer's packet number (or, in one a
 * consumer took, GET's renumbering from its recording's origin: never
 * more, its events written).
 */
static bool confirmed(const struct persist_image *img,
		      const struct persist_packet *p)
{
	const uint8_t *ph = p->raw;
	uint64_t hseq = rt_get_le(ph + offsetof(struct ringtrace_packet_header,
						packet_seq_num), 8);
	uint32_t events = rt_get_le(ph + offsetof(struct ringtrace_packet_header,
						  events), 4);

	return rt_get_le(ph, 4) == RINGTRACE_CTF_MAGIC &&
	       !memcmp(ph + offsetof(struct ringtrace_packet_header, uuid),
		       img->h.trace_uuid, 16) &&
	       (hseq == p->seq || (events && hseq < p->seq));
}

int persist_packets(const struct persist_image *img,
		    const struct persist_slice *s,
		    struct persist_packet **out, size_t *n, size_t *stale)
{
	const HDR *h = &img->h;
	uint64_t nsub = h->num_subbufs, S = h->subbuf_size;
	const uint8_t *slots = s->counters;
	const uint8_t *trailers = slots + nsub * sizeof(struct ringtrace_persist_slot);
	const uint8_t *info = trailers + nsub * sizeof(uint64_t);
	struct persist_packet *v = calloc(nsub, sizeof(*v));
	size_t k = 0, first = 0, last = 0, best = 0, best_ok = 0, ok = 0;

	*out = NULL;
	*n = *stale = 0;
	if (!v)
		return -1;
	for (unsigned int i = 0; i < nsub; i++) {
		uint64_t commit = rt_get_le(slots + 16 * i, 8);
		uint64_t events = rt_get_le(slots + 16 * i + 8, 8);
		uint64_t trl = rt_get_le(trailers + 8 * i, 8);
		uint64_t discarded = rt_get_le(info + 24 * i, 8);
		uint64_t retired = rt_get_le(info + 24 * i + 8, 8);
		uint64_t rtrl = rt_get_le(info + 24 * i + 16, 8);
		struct persist_packet *p = &v[k];
		uint64_t g = commit / S, r = commit % S;

		if (!commit)
			continue;
		p->slot = i;
		p->complete = !r;
		if (p->complete)
			g--;
		p->committed = p->complete ? S : r;
		p->records = events - retired + trl - rtrl;
		p->discarded = discarded;
		p->raw = s->ring + h->page_size + (uint64_t)i * S;
		/* No ring gets that far: stale, whatever the window. */
		if (__builtin_mul_overflow(g, nsub, &p->seq) ||
		    __builtin_add_overflow(p->seq, i, &p->seq)) {
			p->seq = UINT64_MAX;
			p->stale = true;
		}
		p->ok = !p->stale && confirmed(img, p);
		k++;
	}
	qsort(v, k, sizeof(*v), by_seq);
	/*
	 * The ring holds the newest num_subbufs packets: [max - n + 1, max].
	 * A counter that is damaged may claim any generation, so the ring is
	 * the window that holds the most packets whose headers agree with
	 * their counters (then the most packets, then the newest): one bad
	 * counter costs its own packet, not the ones it would put outside.
	 */
	for (size_t lo = 0, hi = 0; hi < k; hi++) {
		if (v[hi].stale)
			break;
		ok += v[hi].ok;
		while (v[hi].seq - v[lo].seq >= nsub)
			ok -= v[lo++].ok;
		if (ok > best_ok || (ok == best_ok && hi - lo + 1 >= best)) {
			best_ok = ok;
			best = hi - lo + 1;
			first = lo;
			last = hi;
		}
	}
	for (size_t i = 0; i < k; i++) {
		if (!best || i < first || i > last)
			v[i].stale = true;
		*stale += v[i].stale;
	}
	*out = v;
	*n = k;
	return 0;
}

void persist_build_id_hex(const struct persist_image *img, char *buf,
			  size_t len)
{
	size_t at = 0;

	buf[0] = 0;
	for (unsigned int i = 0; i < img->h.build_id_len && at + 3 <= len; i++)
		at += snprintf(buf + at, len - at, "%02x", img->h.build_id[i]);
}

int persist_crash(const struct persist_image *img, unsigned int i,
		  struct ringtrace_persist_crash *e)
{
	const uint64_t off = img->h.state_offset + RINGTRACE_PERSIST_CRASH_OFFSET +
			     (uint64_t)i * sizeof(*e);
	struct ringtrace_persist_crash blank;
	uint32_t claimed;

	/* persist_check() put the state area inside the image. */
	claimed = rt_get_le(img->buf + img->h.state_offset +
			    offsetof(struct ringtrace_persist_state, crash_claimed), 4);
	if (i >= RINGTRACE_PERSIST_CRASH_MAX || i >= claimed)
		return 0;
	memcpy(e, img->buf + off, sizeof(*e));
	blank = *e;
	blank.valid = 0;
	blank.checksum = 0;
	if (e->valid != RINGTRACE_PERSIST_CRASH_VALID ||
	    XXH64(&blank, sizeof(blank), 0) != e->checksum ||
	    e->depth > RINGTRACE_PERSIST_CRASH_IPS ||
	    memchr(e->message, 0, sizeof(e->message)) == NULL)
		return -1;
	e->comm[sizeof(e->comm) - 1] = 0;
	return 1;
}

uint32_t persist_crash_claimed(const struct persist_image *img)
{
	return rt_get_le(img->buf + img->h.state_offset +
			 offsetof(struct ringtrace_persist_state, crash_claimed), 4);
}

bool persist_snap(const struct persist_image *img, unsigned int slice,
		  struct ringtrace_persist_snap *s)
{
	memcpy(s, img->buf + img->h.state_offset + RINGTRACE_PERSIST_SNAP_OFFSET +
	       (uint64_t)slice * sizeof(*s), sizeof(*s));
	return s->valid == 1;
}
