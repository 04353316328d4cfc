/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The clocks as a recording ended, kept in its trace directory beside the
 * metadata, whose clock offset is the one measured as it began (or as
 * the metadata was last copied, for an event registered during it)
 * (Documentation/ringtrace/fleet.rst, "Clocks").  CLOCK_FILE, a hidden
 * name so that CTF readers do not take it for a stream; JSON, written
 * once by ringtraced as it stops (a directory is one recording's; not
 * with --on-chunk, each set's manifest has its end), read by ringtrace's
 * trace table and ship:
 *
 *	{"format": "ringtrace-clock", "format_version": 1,
 *	 "end": {"monotonic_ns": .., "realtime_ns": .., "boottime_ns": ..,
 *	         "realtime_offset_ns": .., "boottime_offset_ns": ..}}
 *
 * The three clocks are read together, CLOCK_MONOTONIC (the trace's clock)
 * between the two others; realtime_offset_ns is CLOCK_REALTIME minus
 * CLOCK_MONOTONIC, as a chunk set's manifest has it.  A chunk set's end
 * is its manifest's "clock" instead.
 */
#ifndef RINGTRACE_CLOCKFILE_H
#define RINGTRACE_CLOCKFILE_H

#define CLOCK_FILE	".ringtrace-clock.json"

#endif /* RINGTRACE_CLOCKFILE_H */
