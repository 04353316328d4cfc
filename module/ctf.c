// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: the event registry and the CTF 1.8 metadata (TSDL) that
 * describes the packets of include/uapi/linux/ringtrace.h and every
 * registered event.  babeltrace2 reads a trace directory made of this text
 * and the verbatim packets.
 */
#include <linux/ctype.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/utsname.h>

#include "internal.h"
#include "probes.h"

/*
 * Declarations while the module stays loaded: 1024 different events (the
 * marker's and the probes' included), however often each is registered
 * again.
 */
#define RTR_MAX_EVENTS	1024

/*
 * Every event registered since the module loaded keeps its id and its
 * declaration, also once unregistered:
 *   - an id is given to one declaration only, so a trace that spans an
 *     unregister and a new registration never reads one event's bytes
 *     with another's layout.  A registration of the same name and fields
 *     as an unregistered declaration takes that id back (a dynamic probe
 *     made again, a module reloaded): the declaration already says what
 *     its events are, old and new, so the ids do not run out however
 *     often the same probes come and go;
 *   - the metadata keeps describing an unregistered event, whose events may
 *     still sit in the buffers or in a trace being recorded.
 * The declaration is a copy: the registering module may go away.
 * rtr_events_gen changes with every registration and unregistration; the
 * meta page carries it, so a consumer learns at GET, without a syscall,
 * that the metadata has new declarations to append.
 */
struct rtr_event_decl {
	struct list_head node;
	unsigned int id;
	bool live;			/* registered now */
	const char *name;
	const char *fields;
};

static DEFINE_MUTEX(rtr_events_lock);
static LIST_HEAD(rtr_decls);		/* in id order */
static unsigned int rtr_next_id;	/* ids handed out so far */
u64 rtr_events_gen;			/* under rtr_events_lock; read anywhere */

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

static void rtr_decl_free(struct rtr_event_decl *d)
{
	kfree(d->name);
	kfree(d->fields);
	kfree(d);
}

static struct rtr_event_decl *rtr_decl_alloc(const struct ringtrace_event *ev)
{
	struct rtr_event_decl *d = kzalloc(sizeof(*d), GFP_KERNEL);

	if (!d)
		return NULL;
	d->name = kstrdup(ev->name, GFP_KERNEL);
	d->fields = kstrdup(ev->fields, GFP_KERNEL);
	if (!d->name || !d->fields) {
		rtr_decl_free(d);
		return NULL;
	}
	return d;
}

/* Caller holds rtr_events_lock. */
static void rtr_events_changed(void)
{
	WRITE_ONCE(rtr_events_gen, rtr_events_gen + 1);
}

/* An unregistered declaration of @ev's name and fields; the lock held. */
static struct rtr_event_decl *rtr_decl_find_same(const struct ringtrace_event *ev)
{
	struct rtr_event_decl *d;

	lockdep_assert_held(&rtr_events_lock);
	list_for_each_entry(d, &rtr_decls, node)
		if (!d->live && !strcmp(d->name, ev->name) &&
		    !strcmp(d->fields, ev->fields))
			return d;
	return NULL;
}

/*
 * Give @ev an id and describe it in the metadata from now on: the id of
 * an unregistered declaration of the same name and fields, or else the
 * next id never used since the module loaded (ids below 31 get the
 * 4-byte compact event header).  A consumer learns of a new one from
 * events_gen in the meta page (include/uapi/linux/ringtrace.h) and
 * appends its declaration.  -ENOSPC once RTR_MAX_EVENTS declarations
 * exist and @ev is none of them.
 */
int ringtrace_event_register(struct ringtrace_event *ev)
{
	struct rtr_event_decl *d, *same;
	int ret = 0;

	if (!rtr_valid_name(ev->name) || !ev->fields)
		return -EINVAL;
	d = rtr_decl_alloc(ev);
	if (!d)
		return -ENOMEM;
	mutex_lock(&rtr_events_lock);
	same = rtr_decl_find_same(ev);
	if (same) {
		same->live = true;
		ev->id = same->id;
		rtr_events_changed();
		goto unlock;
	}
	if (rtr_next_id >= RTR_MAX_EVENTS) {
		pr_warn("ringtrace: no event id left for %s: %u different events declared since the module loaded\n",
			ev->name, RTR_MAX_EVENTS);
		ret = -ENOSPC;
		goto unlock;
	}
	d->id = rtr_next_id++;
	d->live = true;
	list_add_tail(&d->node, &rtr_decls);
	ev->id = d->id;
	rtr_events_changed();
	d = NULL;
unlock:
	mutex_unlock(&rtr_events_lock);
	if (d)
		rtr_decl_free(d);
	if (!ret)
		rtr_persist_events_changed();
	return ret;
}
EXPORT_SYMBOL_GPL(ringtrace_event_register);

/*
 * The declaration stays in the metadata, and its id with it: only a new
 * registration of the same name and fields takes the id again.  The
 * caller must not write @ev's events any more.
 */
void ringtrace_event_unregister(struct ringtrace_event *ev)
{
	struct rtr_event_decl *d;

	/* The TSDL stays as it was: the region's copy too. */
	mutex_lock(&rtr_events_lock);
	list_for_each_entry(d, &rtr_decls, node) {
		if (d->id == ev->id && d->live) {
			d->live = false;
			rtr_events_changed();
			break;
		}
	}
	mutex_unlock(&rtr_events_lock);
}
EXPORT_SYMBOL_GPL(ringtrace_event_unregister);

/*
 * The name of the event declared with @id (unregistered too), or NULL.
 * A declaration lives as long as the module: the name stays valid.
 */
const char *rtr_event_name(unsigned int id)
{
	struct rtr_event_decl *d;
	const char *name = NULL;

	mutex_lock(&rtr_events_lock);
	list_for_each_entry(d, &rtr_decls, node)
		if (d->id == id) {
			name = d->name;
			break;
		}
	mutex_unlock(&rtr_events_lock);
	return name;
}

/* The marker takes id 0, the first one. */
int rtr_events_init(void)
{
	int ret = ringtrace_event_register(&rtr_marker_event);

	if (!ret && rtr_marker_event.id != RINGTRACE_EVENT_MARKER)
		ret = -EINVAL;
	return ret;
}

void rtr_events_exit(void)
{
	struct rtr_event_decl *d, *tmp;

	list_for_each_entry_safe(d, tmp, &rtr_decls, node) {
		list_del(&d->node);
		rtr_decl_free(d);
	}
	rtr_next_id = 0;
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
 *
 * One compact id may be "untimed" (rtr_stack_untimed_id(): stack_ref): its
 * 27 bits hold the id again, not a time, so the record takes the time of
 * the record before it, its event, and its header word is the same every
 * time (a packed trace stores it for next to nothing).  The name "id" is
 * what makes babeltrace2 read the 27 bits as the event's id, as in the
 * extended option; a field without a meaning there would be warned about.
 */
static const char rtr_tsdl_stream_head[] =
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
	"\tevent.header := struct {\n";

static const char rtr_tsdl_stream_variant[] =
	"\t\tvariant <id> {\n"
	"\t\t\tstruct { uint27_clock_monotonic_t timestamp; } compact;\n";

static const char rtr_tsdl_stream_tail[] =
	"\t\t\tstruct { uint27_t id; uint64_bits_clock_monotonic_t timestamp; } extended;\n"
	"\t\t} v;\n"
	"\t};\n"
	"};\n\n";

/* The stream block: its header's enum maps @untimed (if any) apart. */
static void rtr_metadata_stream(struct seq_file *m, int untimed)
{
	seq_puts(m, rtr_tsdl_stream_head);
	seq_puts(m, "\t\tenum : uint5_t { ");
	if (untimed < 0) {
		seq_puts(m, "compact = 0 ... 30");
	} else {
		if (untimed > 0)
			seq_printf(m, "compact = 0 ... %d, ", untimed - 1);
		seq_printf(m, "untimed = %d", untimed);
		if (untimed < RINGTRACE_EVENT_ID_EXTENDED - 1)
			seq_printf(m, ", compact = %d ... 30", untimed + 1);
	}
	seq_puts(m, ", extended = 31 } id;\n");
	seq_puts(m, rtr_tsdl_stream_variant);
	if (untimed >= 0)
		seq_puts(m, "\t\t\tstruct { uint27_t id; } untimed;\n");
	seq_puts(m, rtr_tsdl_stream_tail);
}

/*
 * The env block.  boottime_offset is CLOCK_BOOTTIME minus CLOCK_MONOTONIC
 * (the time the system spent suspended), read now: a reader adds it to a
 * timestamp of the trace's clock to get CLOCK_BOOTTIME, the clock Perfetto
 * assumes for kernel events.  It holds until the next suspend.
 */
static void rtr_metadata_env(struct seq_file *m)
{
	s64 boot_offset = ktime_to_ns(ktime_mono_to_any(0, TK_OFFS_BOOT));

	seq_puts(m, "env {\n\tdomain = \"kernel\";\n\tsysname = \"Linux\";\n\thostname = ");
	rtr_put_tsdl_string(m, utsname()->nodename);
	seq_puts(m, ";\n\tkernel_release = ");
	rtr_put_tsdl_string(m, utsname()->release);
	seq_puts(m, ";\n\tkernel_version = ");
	rtr_put_tsdl_string(m, utsname()->version);
	seq_puts(m, ";\n\tmachine = ");
	rtr_put_tsdl_string(m, utsname()->machine);
	seq_printf(m, ";\n\tboottime_offset = %lld;\n"
		   "\ttracer_name = \"ringtrace\";\n\ttracer_major = %d;\n"
		   "\ttracer_minor = 0;\n};\n\n", boot_offset,
		   RINGTRACE_ABI_VERSION);
}

/*
 * The whole TSDL into @m (which marks itself overflowed if it is too
 * small); returns the event set's generation it describes.
 */
u64 rtr_metadata_print(struct seq_file *m)
{
	/* Wall time of monotonic zero, for the clock's offset. */
	u64 offset = ktime_get_real_ns() - ktime_get_mono_fast_ns();
	struct rtr_event_decl *d;
	u64 gen;

	seq_puts(m, "/* CTF 1.8 */\n\n");
	seq_puts(m, rtr_tsdl_types);
	seq_printf(m, "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"%pUb\";\n"
		   "\tbyte_order = le;\n"
		   "\tpacket.header := struct {\n"
		   "\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n"
		   "\t\tuint32_t stream_id;\n\t\tuint64_t stream_instance_id;\n"
		   "\t};\n};\n\n", rtr_trace.uuid);
	rtr_metadata_env(m);
	seq_printf(m, "clock {\n\tname = \"monotonic\";\n\tuuid = \"%pUb\";\n"
		   "\tdescription = \"CLOCK_MONOTONIC\";\n\tfreq = 1000000000;\n"
		   "\tprecision = 1;\n\toffset_s = %llu;\n\toffset = %llu;\n"
		   "\tabsolute = TRUE;\n};\n\n", rtr_trace.uuid,
		   offset / NSEC_PER_SEC, offset % NSEC_PER_SEC);
	rtr_metadata_stream(m, rtr_stack_untimed_id());

	/* Unregistered events too: their events may still be read. */
	mutex_lock(&rtr_events_lock);
	list_for_each_entry(d, &rtr_decls, node)
		seq_printf(m, "event {\n\tname = \"%s\";\n\tid = %u;\n"
			   "\tstream_id = 0;\n\tfields := struct { %s };\n};\n\n",
			   d->name, d->id, d->fields);
	gen = rtr_events_gen;
	mutex_unlock(&rtr_events_lock);
	return gen;
}

/*
 * The metadata file.  A text rendered whole is also the persistent
 * region's copy (persist.c): the image then holds what this reader got.
 * seq_read() renders from an empty buffer, again in a bigger one when it
 * overflows.
 */
int rtr_metadata_show(struct seq_file *m, void *unused)
{
	size_t start = m->count;
	u64 gen = rtr_metadata_print(m);

	if (!seq_has_overflowed(m))
		rtr_persist_metadata_read(m->buf + start, m->count - start,
					  gen);
	return 0;
}
