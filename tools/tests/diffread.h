/* SPDX-License-Identifier: GPL-2.0 */
/*
 * diffread: one stream read three ways at once, item by item, for the
 * tests and fuzzers that hold the decoder's fast paths to what it always
 * did (tools/lib/rtdecode.c):
 *
 *   main       the decoder as readers use it: each event's header decoded
 *              once, fixed layouts checked with one bound
 *   reference  rt_stream_set_reference(): every field of every event
 *              walked to check a packet, every event decoded again to
 *              hand it out
 *   filtered   as main, with rt_stream_set_wanted(): some events only
 *
 * The main stream's items are the caller's; the reference must hand out
 * the same items, and the filtered one the same but the events it does
 * not want -- same times, offsets, payloads, fields, losses -- and all
 * three must end the same way (the same error), say the same damage and
 * notes, and count the same stats.  The first difference is kept
 * (dr_mismatch()); the caller fails on it.
 */
#ifndef RT_DIFFREAD_H
#define RT_DIFFREAD_H

#include "../lib/rtdecode.h"

struct diffread;

/*
 * The streams of files @paths (rt_stream_open()), or fed (@paths NULL);
 * which events the filtered stream wants is drawn from @seed: all, none,
 * or about every other one.  NULL out of memory.
 */
struct diffread *dr_open(const struct rt_metadata *md, const char *const *paths,
			 unsigned int nr_paths, int cpu, uint64_t seed);
void dr_set_tolerant(struct diffread *d, bool on);
void dr_set_window(struct diffread *d, uint64_t begin, uint64_t end, bool seek);
/*
 * rt_stream_feed() to the reference and filtered streams, lent to the main
 * one (rt_stream_feed_lent(): @bytes stay valid until it runs dry): 0, or
 * -1 (the main stream's error).
 */
int dr_feed(struct diffread *d, const char *file, uint64_t offset,
	    const uint8_t *bytes, size_t n, struct rt_error *err);
/* rt_stream_next() of the main stream, the others compared with it. */
int dr_next(struct diffread *d, struct rt_item *item, struct rt_error *err);
/* The main stream (for its damage, notes, stats). */
struct rt_stream *dr_stream(struct diffread *d);
/* Whether the filtered stream wants @ev. */
bool dr_wants(const struct diffread *d, const struct rt_event_desc *ev);
/* Events the filtered stream handed out, and left out, so far. */
uint64_t dr_handed(const struct diffread *d);
uint64_t dr_left_out(const struct diffread *d);
/*
 * The streams' damage, notes and stats compared (call once read to the
 * end, or dry); then the first difference found, or NULL.
 */
const char *dr_finish(struct diffread *d);
void dr_close(struct diffread *d);

#endif
