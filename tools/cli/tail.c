// SPDX-License-Identifier: GPL-2.0
/*
 * report --tail N: each CPU's last N events, CPU after CPU, each in time
 * order under a line "CPU c: last K events before [end]".
 *
 * report reads the trace as always (merged by time, filters, threads,
 * stacks, damage) but prints each item it keeps into tail_out()'s memory
 * stream; tail_keep() then files that text as the newest entry of the
 * item's CPU and drops the CPU's oldest entries while it holds more than N
 * events.  Losses are entries too, not counted in N: those among or just
 * before a CPU's last N events print with them.  tail_append() adds what
 * was printed since (the stacks report prints under an event, once the
 * next item shows they are complete) to the last event filed.  Memory:
 * N events per CPU and the losses between them, whatever the trace's size.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

struct tail_entry {
	char *text;			/* the item's lines, and its stacks' */
	bool event;			/* false: a loss */
};

/* One CPU's entries, oldest first: e[head..len), e[i] is number base + i. */
struct tail_cpu {
	struct tail_entry *e;
	size_t head, len, cap;
	uint64_t base;
	unsigned int events;		/* events in e[head..len) */
};

struct tail {
	unsigned int n;
	const struct rt_trace *t;
	struct tail_cpu *cpus;		/* t->cpus' order */
	FILE *out;			/* what report prints goes here */
	char *buf;
	size_t size;
	int last_cpu;			/* the last event filed: its CPU, */
	uint64_t last_nr;		/* and its number there */
};

struct tail *tail_new(unsigned int n, const struct rt_trace *t)
{
	struct tail *tl = calloc(1, sizeof(*tl));

	if (!tl)
		return NULL;
	tl->n = n;
	tl->t = t;
	tl->last_cpu = -1;
	tl->cpus = calloc(t->nr_cpus + 1, sizeof(*tl->cpus));
	tl->out = open_memstream(&tl->buf, &tl->size);
	if (!tl->cpus || !tl->out) {
		tail_free(tl);
		return NULL;
	}
	return tl;
}

FILE *tail_out(struct tail *tl)
{
	return tl->out;
}

/* What was printed since the last take, as a string of its own; the stream rewound. */
static char *take(struct tail *tl)
{
	char *s;

	if (fflush(tl->out))
		die("out of memory");
	s = strndup(tl->buf, tl->size);
	if (!s)
		die("out of memory");
	rewind(tl->out);
	return s;
}

static void drop_oldest(struct tail_cpu *c)
{
	struct tail_entry *e = &c->e[c->head++];

	c->events -= e->event;
	free(e->text);
	/* Once half the array is dropped entries, move the rest down. */
	if (c->head >= 64 && c->head * 2 >= c->len) {
		memmove(c->e, c->e + c->head, (c->len - c->head) * sizeof(*c->e));
		c->len -= c->head;
		c->base += c->head;
		c->head = 0;
	}
}

void tail_keep(struct tail *tl, uint32_t cpu, bool event)
{
	int i = trace_cpu_index(tl->t, cpu);
	struct tail_cpu *c;
	char *text = take(tl);

	if (i < 0) {
		free(text);
		return;
	}
	c = &tl->cpus[i];
	if (c->len == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 16;
		c->e = realloc(c->e, c->cap * sizeof(*c->e));
		if (!c->e)
			die("out of memory");
	}
	c->e[c->len] = (struct tail_entry){ text, event };
	if (event) {
		tl->last_cpu = i;
		tl->last_nr = c->base + c->len;
	}
	c->len++;
	c->events += event;
	while (c->events > tl->n)
		drop_oldest(c);
}

void tail_append(struct tail *tl)
{
	char *more = take(tl), *text;
	struct tail_cpu *c;
	struct tail_entry *e;

	if (tl->last_cpu < 0 || !*more)
		goto out;
	c = &tl->cpus[tl->last_cpu];
	if (tl->last_nr < c->base + c->head || tl->last_nr >= c->base + c->len)
		goto out;		/* dropped already */
	e = &c->e[tl->last_nr - c->base];
	if (asprintf(&text, "%s%s", e->text, more) < 0)
		die("out of memory");
	free(e->text);
	e->text = text;
out:
	free(more);
}

void tail_print(const struct tail *tl, FILE *f, bool wall, const bool *sel,
		unsigned int nr_sel)
{
	const struct rt_trace *t = tl->t;
	uint64_t end = 0;
	bool any = false;
	char when[48] = "-";

	for (unsigned int i = 0; i < t->nr_cpus; i++) {
		const struct rt_stream_stats *st = rt_stream_stats(t->cpus[i].stream);

		if (st->events && (!any || st->last_ts > end)) {
			end = st->last_ts;
			any = true;
		}
	}
	if (any)
		rt_format_ts(when, sizeof(when), t->md, end, wall);
	for (unsigned int i = 0, shown = 0; i < t->nr_cpus; i++) {
		const struct tail_cpu *c = &tl->cpus[i];
		int cpu = t->cpus[i].cpu;

		if (sel && (cpu < 0 || (unsigned int)cpu >= nr_sel || !sel[cpu]))
			continue;
		fprintf(f, "%sCPU %d: ", shown++ ? "\n" : "", cpu);
		if (!c->events)
			fprintf(f, "no events\n");
		else
			fprintf(f, "last %u event%s before %s\n", c->events,
				c->events == 1 ? "" : "s", when);
		for (size_t k = c->head; k < c->len; k++)
			fputs(c->e[k].text, f);
	}
}

void tail_free(struct tail *tl)
{
	if (!tl)
		return;
	for (unsigned int i = 0; tl->cpus && i < tl->t->nr_cpus; i++) {
		struct tail_cpu *c = &tl->cpus[i];

		for (size_t k = c->head; k < c->len; k++)
			free(c->e[k].text);
		free(c->e);
	}
	free(tl->cpus);
	if (tl->out)
		fclose(tl->out);
	free(tl->buf);
	free(tl);
}
