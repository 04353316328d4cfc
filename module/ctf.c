// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: the event registry and the CTF 1.8 metadata (TSDL) that
 * describes the packets of include/uapi/linux/ringtrace.h and every
 * registered event.  babeltrace2 reads a trace directory made of this text
 * and the verbatim packets.
 */
#include <linux/bitmap.h>
#include <linux/ctype.h>
#include <linux/module.h>
#include <linux/timekeeping.h>
#include <linux/utsname.h>

#include "internal.h"

#define RTR_MAX_EVENTS	1024

static DEFINE_MUTEX(rtr_events_lock);
static LIST_HEAD(rtr_events);
static DECLARE_BITMAP(rtr_event_ids, RTR_MAX_EVENTS);

struct ringtrace_event rtr_marker_event = {
	.name = "ringtrace_marker",
	.fields = "uint16_t len; utf8_t data[len];",
	.id = RINGTRACE_EVENT_MARKER,
};

static bool rtr_valid_name(const char *name)
{
	if (!name || !*name)
		return false;
	for (; *name; name++)
		if (!isalnum(*name) && *name != '_' && *name != ':')
			return false;
	return true;
}

static void rtr_event_link(struct ringtrace_event *ev)
{
	__set_bit(ev->id, rtr_event_ids);
	list_add_tail(&ev->node, &rtr_events);
}

/*
 * Give @ev the lowest free id (ids below 31 get the 4-byte compact event
 * header) and describe it in the metadata from now on.  A consumer that
 * copied the metadata earlier does not know the event: register before
 * starting the trace.
 */
int ringtrace_event_register(struct ringtrace_event *ev)
{
	unsigned int id;
	int ret = 0;

	if (!rtr_valid_name(ev->name) || !ev->fields)
		return -EINVAL;
	mutex_lock(&rtr_events_lock);
	id = find_first_zero_bit(rtr_event_ids, RTR_MAX_EVENTS);
	if (id >= RTR_MAX_EVENTS) {
		ret = -ENOSPC;
		goto unlock;
	}
	ev->id = id;
	rtr_event_link(ev);
unlock:
	mutex_unlock(&rtr_events_lock);
	return ret;
}
EXPORT_SYMBOL_GPL(ringtrace_event_register);

void ringtrace_event_unregister(struct ringtrace_event *ev)
{
	mutex_lock(&rtr_events_lock);
	list_del(&ev->node);
	__clear_bit(ev->id, rtr_event_ids);
	mutex_unlock(&rtr_events_lock);
}
EXPORT_SYMBOL_GPL(ringtrace_event_unregister);

int rtr_events_init(void)
{
	mutex_lock(&rtr_events_lock);
	rtr_event_link(&rtr_marker_event);
	mutex_unlock(&rtr_events_lock);
	return 0;
}

void rtr_events_exit(void)
{
	ringtrace_event_unregister(&rtr_marker_event);
}

/* TSDL strings: drop what would end or escape the literal. */
static void rtr_put_tsdl_string(struct seq_file *m, const char *s)
{
	seq_putc(m, '"');
	for (; *s; s++)
		if (*s != '"' && *s != '\\' && isprint(*s))
			seq_putc(m, *s);
	seq_putc(m, '"');
}

static const char rtr_tsdl_types[] =
	"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	"typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
	"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
	"typealias integer { size = 8; align = 8; signed = true; } := int8_t;\n"
	"typealias integer { size = 16; align = 8; signed = true; } := int16_t;\n"
	"typealias integer { size = 32; align = 8; signed = true; } := int32_t;\n"
	"typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n"
	"typealias integer { size = 8; align = 8; signed = false; encoding = UTF8; } := utf8_t;\n"
	"typealias integer { size = 5; align = 1; signed = false; } := uint5_t;\n"
	"typealias integer { size = 27; align = 1; signed = false; map = clock.monotonic.value; } := uint27_clock_monotonic_t;\n"
	"typealias integer { size = 27; align = 1; signed = false; } := uint27_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := uint64_clock_monotonic_t;\n"
	"typealias integer { size = 64; align = 1; signed = false; map = clock.monotonic.value; } := uint64_bits_clock_monotonic_t;\n\n";

/*
 * Mirrors struct ringtrace_packet_header and the event header words.  CTF
 * alignment counts from the packet start and events are byte aligned, so
 * every field of the event header is bit aligned: a byte-aligned member
 * would move the whole variant option to the next byte.
 */
static const char rtr_tsdl_stream[] =
	"stream {\n"
	"\tid = 0;\n"
	"\tpacket.context := struct {\n"
	"\t\tuint64_clock_monotonic_t timestamp_begin;\n"
	"\t\tuint64_clock_monotonic_t timestamp_end;\n"
	"\t\tuint64_t content_size;\n"
	"\t\tuint64_t packet_size;\n"
	"\t\tuint64_t packet_seq_num;\n"
	"\t\tuint64_t events_discarded;\n"
	"\t\tuint32_t cpu_id;\n"
	"\t\tuint32_t events;\n"
	"\t};\n"
	"\tevent.header := struct {\n"
	"\t\tenum : uint5_t { compact = 0 ... 30, extended = 31 } id;\n"
	"\t\tvariant <id> {\n"
	"\t\t\tstruct { uint27_clock_monotonic_t timestamp; } compact;\n"
	"\t\t\tstruct { uint27_t id; uint64_bits_clock_monotonic_t timestamp; } extended;\n"
	"\t\t} v;\n"
	"\t};\n"
	"};\n\n";

int rtr_metadata_show(struct seq_file *m, void *unused)
{
	/* Wall time of monotonic zero, for the clock's offset. */
	u64 offset = ktime_get_real_ns() - ktime_get_mono_fast_ns();
	struct ringtrace_event *ev;

	seq_puts(m, "/* CTF 1.8 */\n\n");
	seq_puts(m, rtr_tsdl_types);
	seq_printf(m, "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"%pUb\";\n"
		   "\tbyte_order = le;\n"
		   "\tpacket.header := struct {\n"
		   "\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n"
		   "\t\tuint32_t stream_id;\n\t\tuint64_t stream_instance_id;\n"
		   "\t};\n};\n\n", rtr_trace.uuid);
	seq_puts(m, "env {\n\tdomain = \"kernel\";\n\tsysname = \"Linux\";\n\thostname = ");
	rtr_put_tsdl_string(m, utsname()->nodename);
	seq_puts(m, ";\n\tkernel_release = ");
	rtr_put_tsdl_string(m, utsname()->release);
	seq_printf(m, ";\n\ttracer_name = \"ringtrace\";\n\ttracer_major = %d;\n"
		   "\ttracer_minor = 0;\n};\n\n", RINGTRACE_ABI_VERSION);
	seq_printf(m, "clock {\n\tname = \"monotonic\";\n\tuuid = \"%pUb\";\n"
		   "\tdescription = \"CLOCK_MONOTONIC\";\n\tfreq = 1000000000;\n"
		   "\tprecision = 1;\n\toffset_s = %llu;\n\toffset = %llu;\n"
		   "\tabsolute = TRUE;\n};\n\n", rtr_trace.uuid,
		   offset / NSEC_PER_SEC, offset % NSEC_PER_SEC);
	seq_puts(m, rtr_tsdl_stream);

	mutex_lock(&rtr_events_lock);
	list_for_each_entry(ev, &rtr_events, node)
		seq_printf(m, "event {\n\tname = \"%s\";\n\tid = %u;\n"
			   "\tstream_id = 0;\n\tfields := struct { %s };\n};\n\n",
			   ev->name, ev->id, ev->fields);
	mutex_unlock(&rtr_events_lock);
	return 0;
}
