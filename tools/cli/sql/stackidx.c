// SPDX-License-Identifier: GPL-2.0
/*
 * The stack index (stackidx.h): one pass over a member's stack pairs
 * (scan.c, SCAN_STACKS, as the sample table reads them) names each
 * pair's frames (stack_pair_frames()), keeps each frame new to it with
 * its names, and each stack new to it as the chain of its frames' nodes.
 * The stack and frame tables list what it holds in that order, which is
 * the order a pass meets them: the rows are those of reading the member.
 *
 * Kept on disk (sqlcache.h, family "stacks") unless the pass depended on
 * more than the trace's files: frames are named from the trace's symbols
 * (KSYMS_FILE) and its symbol store (USYMS_DIR), whose state is part of
 * the key (stacks_key()), and, for what those cannot name, by debuginfod
 * -- an index whose pass asked debuginfod anything is not kept (a
 * server's answer may change), nor one whose pass read past damage or a
 * note (a run that reads it back would not say them).
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "../../../lib/ksyms.h"
#include "../../../lib/usyms.h"
#include "../debuginfod.h"
#include "sqlcache.h"
#include "stackidx.h"

/* ---- lookups by id ------------------------------------------------------------------ */

static uint64_t frame_hash(const struct stack_index *ix, uint32_t i)
{
	return (uint64_t)ix->frames[i].id;	/* a hash already */
}

static uint64_t stack_hash(const struct stack_index *ix, uint32_t i)
{
	return (uint64_t)ix->stacks[i].id;
}

static uint64_t pair_hash(uint32_t frame, uint32_t caller)
{
	uint64_t k = (uint64_t)frame << 32 | caller;

	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k;
}

static uint64_t node_hash(const struct stack_index *ix, uint32_t i)
{
	return pair_hash(ix->nodes[i].frame, ix->nodes[i].caller);
}

/* The pool's strings are found by their offset: the @i'th is not at hand, its text is. */
static uint64_t text_hash(const char *s)
{
	return XXH3_64bits(s, strlen(s));
}

/* @t made room for one more of the @n elements @hash places (rebuilt from them). */
static void slots_fit(const struct stack_index *ix, struct si_slots *t, size_t n,
		      uint64_t (*hash)(const struct stack_index *, uint32_t))
{
	struct si_slots g;

	if (2 * (n + 1) <= t->cap)
		return;
	if (n >= UINT32_MAX / 4)
		die("out of memory");
	g.cap = t->cap ? 2 * t->cap : 64;
	g.v = calloc(g.cap, sizeof(*g.v));
	if (!g.v)
		die("out of memory");
	for (uint32_t i = 0; i < n; i++) {
		size_t k = hash(ix, i) & (g.cap - 1);

		while (g.v[k])
			k = (k + 1) & (g.cap - 1);
		g.v[k] = i + 1;
	}
	free(t->v);
	*t = g;
}

/* The string table made room for one more (rebuilt from the pool). */
static void strs_fit(struct stack_index *ix)
{
	struct si_slots g;

	if (2 * (ix->nr_strs + 1) <= ix->str_by_text.cap)
		return;
	g.cap = ix->str_by_text.cap ? 2 * ix->str_by_text.cap : 64;
	g.v = calloc(g.cap, sizeof(*g.v));
	if (!g.v)
		die("out of memory");
	for (size_t off = 0; off < ix->pool_len; off += strlen(ix->pool + off) + 1) {
		size_t k = text_hash(ix->pool + off) & (g.cap - 1);

		while (g.v[k])
			k = (k + 1) & (g.cap - 1);
		g.v[k] = (uint32_t)off + 1;
	}
	free(ix->str_by_text.v);
	ix->str_by_text = g;
}

/* @s's offset in the pool, added if new; SI_NOSTR for NULL. */
static uint32_t str_add(struct stack_index *ix, const char *s)
{
	const struct si_slots *t;
	size_t n, k;

	if (!s)
		return SI_NOSTR;
	strs_fit(ix);
	t = &ix->str_by_text;
	for (k = text_hash(s) & (t->cap - 1); t->v[k]; k = (k + 1) & (t->cap - 1))
		if (!strcmp(ix->pool + t->v[k] - 1, s))
			return t->v[k] - 1;
	n = strlen(s) + 1;
	if (ix->pool_len + n >= SI_NOSTR - 1)
		die("out of memory");
	if (ix->pool_len + n > ix->pool_cap) {
		ix->pool_cap = ix->pool_cap ? 2 * ix->pool_cap : 4096;
		while (ix->pool_len + n > ix->pool_cap)
			ix->pool_cap *= 2;
		ix->pool = realloc(ix->pool, ix->pool_cap);
		if (!ix->pool)
			die("out of memory");
	}
	memcpy(ix->pool + ix->pool_len, s, n);
	t->v[k] = (uint32_t)ix->pool_len + 1;
	ix->pool_len += n;
	ix->nr_strs++;
	return t->v[k] - 1;
}

/* The slot of frame @id, or the free one it would take (frame_by_id.cap > 0). */
static uint32_t *frame_slot(const struct stack_index *ix, int64_t id)
{
	const struct si_slots *t = &ix->frame_by_id;

	for (size_t k = (uint64_t)id & (t->cap - 1);; k = (k + 1) & (t->cap - 1))
		if (!t->v[k] || ix->frames[t->v[k] - 1].id == id)
			return &t->v[k];
}

static uint32_t *stack_slot(const struct stack_index *ix, int64_t id)
{
	const struct si_slots *t = &ix->stack_by_id;

	for (size_t k = (uint64_t)id & (t->cap - 1);; k = (k + 1) & (t->cap - 1))
		if (!t->v[k] || ix->stacks[t->v[k] - 1].id == id)
			return &t->v[k];
}

static uint32_t *node_slot(const struct stack_index *ix, uint32_t frame, uint32_t caller)
{
	const struct si_slots *t = &ix->node_by_pair;

	for (size_t k = pair_hash(frame, caller) & (t->cap - 1);; k = (k + 1) & (t->cap - 1)) {
		const struct si_node *x;

		if (!t->v[k])
			return &t->v[k];
		x = &ix->nodes[t->v[k] - 1];
		if (x->frame == frame && x->caller == caller)
			return &t->v[k];
	}
}

const struct si_stack *stackidx_stack(const struct stack_index *ix, int64_t id)
{
	uint32_t *s;

	if (!ix->stack_by_id.cap)
		return NULL;
	s = stack_slot(ix, id);
	return *s ? &ix->stacks[*s - 1] : NULL;
}

const struct si_frame *stackidx_frame(const struct stack_index *ix, int64_t id)
{
	uint32_t *s;

	if (!ix->frame_by_id.cap)
		return NULL;
	s = frame_slot(ix, id);
	return *s ? &ix->frames[*s - 1] : NULL;
}

/* ---- adding ----------------------------------------------------------------------- */

/* Room for one more of *@v's @n elements of @size bytes. */
static void *grow(void *v, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return v;
	*cap = *cap ? 2 * *cap : 64;
	v = reallocarray(v, *cap, size);
	if (!v)
		die("out of memory");
	return v;
}

/* The slot of frame @id, or the free one it takes, room made for one more. */
static uint32_t *frame_slot_fit(struct stack_index *ix, int64_t id)
{
	slots_fit(ix, &ix->frame_by_id, ix->nr_frames, frame_hash);
	return frame_slot(ix, id);
}

/* Frame @f put in free slot @s (frame_slot_fit()'s): its index. */
static uint32_t frame_put(struct stack_index *ix, uint32_t *s, const struct si_frame *f)
{
	ix->frames = grow(ix->frames, ix->nr_frames, &ix->cap_frames, sizeof(*ix->frames));
	ix->frames[ix->nr_frames] = *f;
	*s = (uint32_t)++ix->nr_frames;
	return *s - 1;
}

/* The node of frame @frame called from node @caller: its index. */
static uint32_t node_add(struct stack_index *ix, uint32_t frame, uint32_t caller)
{
	uint32_t *s;

	slots_fit(ix, &ix->node_by_pair, ix->nr_nodes, node_hash);
	s = node_slot(ix, frame, caller);
	if (*s)
		return *s - 1;
	ix->nodes = grow(ix->nodes, ix->nr_nodes, &ix->cap_nodes, sizeof(*ix->nodes));
	ix->nodes[ix->nr_nodes] = (struct si_node){ .frame = frame, .caller = caller };
	*s = (uint32_t)++ix->nr_nodes;
	return *s - 1;
}

/* Stack @id whose innermost node is @leaf, @depth frames: false if it was there. */
static bool stack_add(struct stack_index *ix, int64_t id, uint32_t leaf, uint32_t depth)
{
	uint32_t *s;

	slots_fit(ix, &ix->stack_by_id, ix->nr_stacks, stack_hash);
	s = stack_slot(ix, id);
	if (*s)
		return false;
	ix->stacks = grow(ix->stacks, ix->nr_stacks, &ix->cap_stacks, sizeof(*ix->stacks));
	ix->stacks[ix->nr_stacks] = (struct si_stack){ .id = id, .leaf = leaf, .depth = depth };
	*s = (uint32_t)++ix->nr_stacks;
	return true;
}

void stackidx_free(struct stack_index *ix)
{
	if (!ix)
		return;
	free(ix->frames);
	free(ix->pool);
	free(ix->str_by_text.v);
	free(ix->nodes);
	free(ix->stacks);
	free(ix->frame_by_id.v);
	free(ix->node_by_pair.v);
	free(ix->stack_by_id.v);
	free(ix);
}

/* ---- the pass ------------------------------------------------------------------------ */

/* One pair's frames as the pass names them: ids and indexes, innermost first. */
struct si_pass {
	struct stack_index *ix;
	int64_t *ids;
	uint32_t *at;
	size_t nr, cap;
};

static void pass_frame(void *arg, const struct named_frame *f)
{
	struct si_pass *p = arg;
	int64_t id = sr_frame_id(f);
	uint32_t *s;

	if (p->nr == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 64;
		p->ids = reallocarray(p->ids, p->cap, sizeof(*p->ids));
		p->at = reallocarray(p->at, p->cap, sizeof(*p->at));
		if (!p->ids || !p->at)
			die("out of memory");
	}
	p->ids[p->nr] = id;
	s = frame_slot_fit(p->ix, id);
	if (*s) {
		p->at[p->nr++] = *s - 1;
		return;
	}
	p->at[p->nr++] = frame_put(p->ix, s, &(struct si_frame){
		.id = id,
		.rel_pc = f->rel_pc,
		.name = str_add(p->ix, f->name),
		.module = str_add(p->ix, f->module),
		.symbol = str_add(p->ix, f->symbol),
		.user = f->user,
	});
}

/* A pair's frames (new ones kept), and its stack if new and it has a frame. */
static void pass_pair(struct si_pass *p, struct scan *s, const struct scan_row *row)
{
	uint32_t node = SI_NONE;
	int64_t id;

	p->nr = 0;
	if (!sr_pair_present(row->pair))
		return;
	stack_pair_frames(scan_names(s), row->pair, row->pid, pass_frame, p);
	if (!p->nr)
		return;
	id = sr_stack_id(p->ids, (uint32_t)p->nr);
	if (stackidx_stack(p->ix, id))
		return;
	/* From the root: the callers' nodes first, shared with other stacks. */
	for (size_t i = p->nr; i-- > 0;)
		node = node_add(p->ix, p->at[i], node);
	stack_add(p->ix, id, node, (uint32_t)p->nr);
}

/*
 * Member @m's index by one pass over its stack pairs, read as a whole
 * sample table's scan reads them (sqlcache_family.build); scan_stats row
 * "stack index".  NULL with c->err.
 */
static void *index_build(struct sql_cursor *c, unsigned int m, void *arg)
{
	struct sqldb *d = c->db;
	struct sql_cursor ic = *c;
	struct stack_index *ix = calloc(1, sizeof(*ix));
	struct si_pass p = { .ix = ix };
	uint64_t past = d->read_past;
	struct scan_row row;
	struct scan *s;
	int r;

	(void)arg;
	if (!ix)
		die("out of memory");
	/* A cursor of its own: its spec the member whole, its row in scan_stats. */
	ic.spec = (struct scan_spec){ .limit = -1, .members_set = true };
	ic.spec.members = calloc(d->ts->nr + 1, sizeof(*ic.spec.members));
	if (!ic.spec.members)
		die("out of memory");
	ic.spec.members[m] = true;
	ic.stat = sqldb_stat_new(d, "stack index");
	ic.err = NULL;
	sqldb_stat(d, ic.stat)->filters++;
	ix->lookups = dbginfo_lookups();
	s = scan_open(&ic, SCAN_STACKS);
	while ((r = scan_next(s, &row)) > 0)
		pass_pair(&p, s, &row);
	scan_close(s);
	ix->asked = dbginfo_lookups() != ix->lookups;
	ix->read_past = d->read_past != past;
	free(p.ids);
	free(p.at);
	sql_spec_free(&ic.spec);
	if (r < 0) {
		c->err = ic.err;
		stackidx_free(ix);
		return NULL;
	}
	return ix;
}

/* ---- the index on disk (sqlcache.h) --------------------------------------------------- */

/* The records below, their version: a new one with any change to them. */
#define SI_CACHE_LAYOUT		1
#define SI_CACHE_FAMILY		"stacks"
/* Bytes of a frame's record, a node's, a stack's. */
#define SI_REC_FRAME		32
#define SI_REC_NODE		8
#define SI_REC_STACK		16

/* File @path's identity added to *@sum (a sum: a directory's entries come in any order). */
static void entry_key(uint64_t *sum, const char *path, const struct stat *st)
{
	XXH64_state_t *h = XXH64_createState();
	uint64_t v[3] = { (uint64_t)st->st_size, (uint64_t)st->st_mtim.tv_sec,
			  (uint64_t)st->st_mtim.tv_nsec };

	if (!h)
		die("out of memory");
	XXH64_reset(h, 0);
	XXH64_update(h, path, strlen(path) + 1);
	XXH64_update(h, v, sizeof(v));
	*sum += XXH64_digest(h);
	XXH64_freeState(h);
}

/* What names member @m's frames besides its files: sqlcache_family.key. */
static uint64_t stacks_key(const struct sqldb *d, unsigned int m, void *arg)
{
	const char *dir = d->ts->m[m].t->dir;
	uint64_t sum = dbginfo_enabled();
	char *path, *sub;
	struct dirent *e, *f;
	struct stat st;
	DIR *top, *in;

	(void)arg;
	if (asprintf(&path, "%s/%s", dir, KSYMS_FILE) < 0)
		die("out of memory");
	if (!stat(path, &st))
		entry_key(&sum, KSYMS_FILE, &st);
	free(path);
	/* The store: USYMS_DIR/xx/rest and USYMS_DIR/missing (lib/usyms.h). */
	if (asprintf(&path, "%s/%s", dir, USYMS_DIR) < 0)
		die("out of memory");
	top = opendir(path);
	while (top && (e = readdir(top))) {
		if (e->d_name[0] == '.')
			continue;
		if (asprintf(&sub, "%s/%s", path, e->d_name) < 0)
			die("out of memory");
		if (stat(sub, &st)) {
			free(sub);
			continue;
		}
		entry_key(&sum, e->d_name, &st);
		in = S_ISDIR(st.st_mode) ? opendir(sub) : NULL;
		while (in && (f = readdir(in))) {
			char *file, *rel;

			if (f->d_name[0] == '.')
				continue;
			if (asprintf(&file, "%s/%s", sub, f->d_name) < 0 ||
			    asprintf(&rel, "%s/%s", e->d_name, f->d_name) < 0)
				die("out of memory");
			if (!stat(file, &st))
				entry_key(&sum, rel, &st);
			free(file);
			free(rel);
		}
		if (in)
			closedir(in);
		free(sub);
	}
	if (top)
		closedir(top);
	free(path);
	return sum;
}

/* Whether a built index may be kept: it depends on the trace's files alone. */
static bool index_keep(const void *index, void *arg)
{
	const struct stack_index *ix = index;

	(void)arg;
	return !ix->asked && !ix->read_past;
}

static void index_store(struct sqlcache_buf *b, const void *index, void *arg)
{
	const struct stack_index *ix = index;

	(void)arg;
	sqlcache_put64(b, ix->pool_len);
	sqlcache_put(b, ix->pool, ix->pool_len);
	sqlcache_put64(b, ix->nr_frames);
	for (size_t i = 0; i < ix->nr_frames; i++) {
		const struct si_frame *f = &ix->frames[i];

		sqlcache_put64(b, (uint64_t)f->id);
		sqlcache_put64(b, f->rel_pc);
		sqlcache_put32(b, f->user);
		sqlcache_put32(b, f->name);
		sqlcache_put32(b, f->module);
		sqlcache_put32(b, f->symbol);
	}
	sqlcache_put64(b, ix->nr_nodes);
	for (size_t i = 0; i < ix->nr_nodes; i++) {
		sqlcache_put32(b, ix->nodes[i].frame);
		sqlcache_put32(b, ix->nodes[i].caller);
	}
	sqlcache_put64(b, ix->nr_stacks);
	for (size_t i = 0; i < ix->nr_stacks; i++) {
		sqlcache_put64(b, (uint64_t)ix->stacks[i].id);
		sqlcache_put32(b, ix->stacks[i].leaf);
		sqlcache_put32(b, ix->stacks[i].depth);
	}
}

/* Whether @s starts a string of the pool (whose last byte is a NUL), or is none. */
static bool str_ok(const struct stack_index *ix, uint32_t s)
{
	return s == SI_NOSTR || (s < ix->pool_len && (!s || !ix->pool[s - 1]));
}

/*
 * A stack's record checked against the nodes: @depth nodes from @leaf to
 * the root, and @id the id of their frames (sr_stack_id()).
 */
static bool stack_ok(const struct stack_index *ix, int64_t id, uint32_t leaf, uint32_t depth,
		     int64_t **ids, size_t *cap)
{
	uint32_t n = 0;

	if (id < 0 || !depth || depth > ix->nr_nodes)
		return false;
	if (*cap < depth) {
		*cap = depth;
		*ids = reallocarray(*ids, *cap, sizeof(**ids));
		if (!*ids)
			die("out of memory");
	}
	for (uint32_t k = leaf; k != SI_NONE; k = ix->nodes[k].caller) {
		if (k >= ix->nr_nodes || n == depth)
			return false;
		(*ids)[n++] = ix->frames[ix->nodes[k].frame].id;
	}
	return n == depth && sr_stack_id(*ids, depth) == id;
}

/*
 * Member @m's index from payload @b (sqlcache_family.load).  Checked: the
 * strings' pool ends with a NUL, a frame's strings start one of them;
 * frame ids non-negative and each once; a node's
 * frame one of the frames, its caller an earlier node (a pass adds the
 * callers first: no cycle), each (frame, caller) once; a stack's chain
 * of its depth, the id of its frames (so its frames are the ones named
 * by it), each id once.
 */
static void *index_load(struct sql_cursor *c, unsigned int m, struct sqlcache_buf *b,
			void *arg)
{
	struct stack_index *ix = calloc(1, sizeof(*ix));
	int64_t *ids = NULL;
	size_t n, cap = 0;

	(void)c;
	(void)m;
	(void)arg;
	if (!ix)
		die("out of memory");
	n = sqlcache_get_count(b, 1);
	if (n >= SI_NOSTR || (n && b->p[b->off + n - 1]))
		b->bad = true;
	ix->pool_len = ix->pool_cap = b->bad ? 0 : n;
	ix->pool = malloc(ix->pool_len + 1);
	if (!ix->pool)
		die("out of memory");
	sqlcache_get(b, ix->pool, ix->pool_len);
	n = b->bad ? 0 : sqlcache_get_count(b, SI_REC_FRAME);
	for (size_t i = 0; !b->bad && i < n; i++) {
		struct si_frame f = { .id = (int64_t)sqlcache_get64(b) };
		uint32_t user, *s;

		f.rel_pc = sqlcache_get64(b);
		user = sqlcache_get32(b);
		f.user = user;
		f.name = sqlcache_get32(b);
		f.module = sqlcache_get32(b);
		f.symbol = sqlcache_get32(b);
		if (b->bad || f.id < 0 || user > 1 || !str_ok(ix, f.name) ||
		    !str_ok(ix, f.module) || !str_ok(ix, f.symbol)) {
			b->bad = true;
			break;
		}
		s = frame_slot_fit(ix, f.id);
		if (*s)				/* twice */
			b->bad = true;
		else
			frame_put(ix, s, &f);
	}
	n = b->bad ? 0 : sqlcache_get_count(b, SI_REC_NODE);
	for (size_t i = 0; !b->bad && i < n; i++) {
		uint32_t frame = sqlcache_get32(b), caller = sqlcache_get32(b);

		if (frame >= ix->nr_frames || (caller != SI_NONE && caller >= i)) {
			b->bad = true;
			break;
		}
		node_add(ix, frame, caller);
		if (ix->nr_nodes != i + 1)
			b->bad = true;
	}
	n = b->bad ? 0 : sqlcache_get_count(b, SI_REC_STACK);
	for (size_t i = 0; !b->bad && i < n; i++) {
		int64_t id = (int64_t)sqlcache_get64(b);
		uint32_t leaf = sqlcache_get32(b), depth = sqlcache_get32(b);

		if (b->bad || !stack_ok(ix, id, leaf, depth, &ids, &cap) ||
		    !stack_add(ix, id, leaf, depth))
			b->bad = true;
	}
	free(ids);
	return ix;
}

static void index_free(void *ix)
{
	stackidx_free(ix);
}

static const struct sqlcache_family stack_family = {
	.stat = "stack index", .layout = SI_CACHE_LAYOUT,
	.load = index_load, .store = index_store, .build = index_build, .free = index_free,
	.key = stacks_key, .keep = index_keep,
};

int stackidx_next_member(struct sql_cursor *c, unsigned int *next, unsigned int *member,
			 const struct stack_index **ix)
{
	const struct scan_spec *sp = &c->spec;

	while (*next < c->db->ts->nr && sp->members_set && !sp->members[*next])
		(*next)++;
	if (*next >= c->db->ts->nr)
		return 0;
	*member = (*next)++;
	*ix = stackidx_get(c, *member);
	return *ix ? 1 : -1;
}

const struct stack_index *stackidx_get(struct sql_cursor *c, unsigned int m)
{
	struct sqldb *d = c->db;

	if (!d->stack_idx) {
		d->stack_idx = calloc(d->ts->nr + 1, sizeof(*d->stack_idx));
		if (!d->stack_idx)
			die("out of memory");
	}
	if (!d->stack_idx[m])
		d->stack_idx[m] = sqlcache_index(c, m, SI_CACHE_FAMILY, &stack_family, NULL);
	return d->stack_idx[m];
}
