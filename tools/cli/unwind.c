// SPDX-License-Identifier: GPL-2.0
/*
 * Offline unwinding of user stacks copied by ringtrace.ko (user_stack_copy,
 * module/ustack.c): ip, sp and bp, and up to ustack_size bytes from sp.
 *
 * Each process gets one libdwfl session (a Dwfl), made the first time one
 * of its stacks is unwound: each executable mapping the mapping table
 * (tools/lib/umaps.h) holds for it is reported with dwfl_report_elf() at
 * the bias its address gives, from the binary of the same build-id: the
 * trace's symbol store (the memfd the namer, usymbols.c, decompressed it
 * into), else the --binaries directory, else debuginfod's executable.
 * When its mappings change (those of other processes do not matter,
 * umaps_gen()), the mappings added are reported to the same session
 * (dwfl_report_begin_add()); one that went or changed (an exec, an
 * munmap, a mapping over it) makes a new session.  The session's thread
 * callbacks answer for the stack being unwound (@cur):
 *
 *   set_initial_registers  DWARF 6 (rbp), 7 (rsp) and the pc, from the
 *                          record: the rules x86-64's CFI uses
 *   memory_read            the copied bytes where [sp, sp + size) holds
 *                          the word; else the word in a read-only segment
 *                          of the module's file (what was mapped); else
 *                          nothing: the unwind stops there
 *
 * and dwfl_getthread_frames() walks from them.  A stack copy is untrusted
 * input: a size larger than its record, an sp near 2^64, a copy cut short
 * or a binary missing each end the unwind early with a note, never read
 * outside the record.  x86-64 only, as copy mode is.
 */
#include <dirent.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debuginfod.h"
#include "unwind.h"
#include "usymbols.h"

#define BUILD_ID_MAX	20
#define PROC_CACHE	16		/* processes with a session at once */
#define DWARF_RBP	6
#define DWARF_RSP	7

bool ucopy_is(const struct rt_item *it)
{
	return it->type == RT_ITEM_EVENT &&
	       !strcmp(it->event->name, "user_stack_copy");
}

/* ---- the binaries, by build-id ------------------------------------ */

/* A file of the --binaries directory. */
struct binary {
	uint8_t build_id[BUILD_ID_MAX];
	uint8_t build_id_len;
	char *path;
};

/*
 * A build-id looked for: the file found (a stored binary's memfd, by its
 * /proc/self/fd path; a --binaries file; debuginfod's cached executable),
 * or NULL when none was.
 */
struct found {
	uint8_t build_id[BUILD_ID_MAX];
	uint8_t build_id_len;
	char *path;
};

/* A mapping a session was told of: a module, or counted missing. */
struct told {
	uint64_t start, end, pgoff;
	uint8_t build_id[BUILD_ID_MAX];
	uint8_t build_id_len;
};

/* One libdwfl session: a process's modules, and the stack being unwound. */
struct proc {
	int32_t pid;
	bool made;			/* this slot holds @pid's session */
	uint64_t gen;			/* umaps_gen() when last told */
	Dwfl *dwfl;			/* NULL: nothing to unwind with */
	unsigned int missing;		/* mappings without a binary */
	struct told *told;		/* by start, as umaps_nth() gives them */
	size_t nr_told;
	const struct stack_copy *cur;
	uint64_t unread;		/* the first word it could not read */
};

struct unwinder {
	struct usym_store *store;	/* the trace's symbol store */
	struct binary *bins;		/* --binaries */
	size_t nr_bins;
	struct found *found;
	size_t nr_found;
	struct proc procs[PROC_CACHE];
	unsigned int next_victim;
	char note[160];
};

/* The file's GNU build-id, or 0 (not an ELF, none). */
static size_t file_build_id(const char *path, uint8_t *out)
{
	const void *id;
	ssize_t len = 0;
	Elf *elf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf) {
		len = dwelf_elf_gnu_build_id(elf, &id);
		if (len > 0 && len <= BUILD_ID_MAX)
			memcpy(out, id, (size_t)len);
		else
			len = 0;
		elf_end(elf);
	}
	close(fd);
	return (size_t)len;
}

static void add_binary(struct unwinder *u, const char *path)
{
	uint8_t id[BUILD_ID_MAX];
	struct binary *b;
	size_t len = file_build_id(path, id);

	if (!len)
		return;
	b = realloc(u->bins, (u->nr_bins + 1) * sizeof(*b));
	if (!b)
		return;
	u->bins = b;
	b += u->nr_bins;
	b->path = strdup(path);
	if (!b->path)
		return;
	memcpy(b->build_id, id, len);
	b->build_id_len = (uint8_t)len;
	u->nr_bins++;
}

/* @dir's regular files, and its subdirectories' (perf's xx/yyyy layout). */
static int scan_dir(struct unwinder *u, const char *dir, int depth)
{
	struct dirent *de;
	struct stat st;
	char path[4096];
	DIR *d = opendir(dir);

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' ||
		    snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >=
		    (int)sizeof(path) || stat(path, &st))
			continue;
		if (S_ISREG(st.st_mode))
			add_binary(u, path);
		else if (S_ISDIR(st.st_mode) && depth < 1)
			scan_dir(u, path, depth + 1);
	}
	closedir(d);
	return 0;
}

/*
 * The binary of @m's build-id: the trace's symbol store, then the
 * --binaries directory, then debuginfod's executable; NULL when none
 * has it.  Each build-id is looked for once.
 */
static const char *find_binary(struct unwinder *u, const struct umap_mapping *m)
{
	const char *stored;
	struct found *f;
	char *path = NULL;

	if (!m->build_id_len)
		return NULL;
	for (size_t i = 0; i < u->nr_found; i++)
		if (u->found[i].build_id_len == m->build_id_len &&
		    !memcmp(u->found[i].build_id, m->build_id, m->build_id_len))
			return u->found[i].path;
	/* usymbols.c says what is wrong with a stored binary it refuses. */
	stored = usym_store_path(u->store, m->build_id, m->build_id_len);
	if (stored && !(path = strdup(stored)))
		return NULL;
	for (size_t i = 0; !path && i < u->nr_bins; i++)
		if (u->bins[i].build_id_len == m->build_id_len &&
		    !memcmp(u->bins[i].build_id, m->build_id, m->build_id_len) &&
		    !(path = strdup(u->bins[i].path)))
			break;
	if (!path && dbginfo_enabled()) {
		int dfd = dbginfo_find_executable(m->build_id, m->build_id_len, &path);

		if (dfd >= 0)
			close(dfd);
	}
	f = realloc(u->found, (u->nr_found + 1) * sizeof(*f));
	if (!f) {
		free(path);
		return NULL;
	}
	u->found = f;
	f += u->nr_found++;
	memcpy(f->build_id, m->build_id, m->build_id_len);
	f->build_id_len = m->build_id_len;
	f->path = path;
	return path;
}

struct unwinder *unwinder_new(struct usym_store *store, const char *bindir,
			      char *why, size_t len)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	int err;

	if (!u) {
		snprintf(why, len, "out of memory");
		return NULL;
	}
	u->store = store;
	elf_version(EV_CURRENT);
	if (bindir && (err = scan_dir(u, bindir, 0))) {
		snprintf(why, len, "%s: %s", bindir, strerror(-err));
		unwinder_free(u);
		return NULL;
	}
	return u;
}

static void proc_drop(struct proc *p)
{
	if (p->dwfl)
		dwfl_end(p->dwfl);
	free(p->told);
	memset(p, 0, sizeof(*p));
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	for (unsigned int i = 0; i < PROC_CACHE; i++)
		proc_drop(&u->procs[i]);
	for (size_t i = 0; i < u->nr_bins; i++)
		free(u->bins[i].path);
	free(u->bins);
	for (size_t i = 0; i < u->nr_found; i++)
		free(u->found[i].path);
	free(u->found);
	free(u);
}

/* ---- libdwfl's callbacks -------------------------------------------- */

/* No file is looked for: every module is reported with its file. */
static int no_elf(Dwfl_Module *mod, void **userdata, const char *name,
		  Dwarf_Addr base, char **file_name, Elf **elfp)
{
	(void)mod, (void)userdata, (void)name, (void)base;
	*file_name = NULL;
	*elfp = NULL;
	return -1;
}

/* The module's own .eh_frame is the CFI; no separate debug file (yet). */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *name,
			Dwarf_Addr base, const char *file_name,
			const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)name, (void)base, (void)file_name;
	(void)debuglink_file, (void)debuglink_crc;
	*debuginfo_file_name = NULL;
	return -1;
}

static const Dwfl_Callbacks dwfl_cbs = {
	.find_elf = no_elf,
	.find_debuginfo = no_debuginfo,
};

static pid_t cb_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct proc *p = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = p;
	return p->pid;
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct proc *p = arg;

	(void)dwfl;
	if (tid != p->pid)
		return false;
	*thread_argp = p;
	return true;
}

/* The word at @addr in a read-only PT_LOAD segment of its module's file. */
static bool read_module(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, addr);
	GElf_Phdr mem, *ph;
	Dwarf_Addr bias;
	size_t nr, size;
	uint64_t va, off;
	const char *raw;
	Elf *elf;

	if (!mod || !(elf = dwfl_module_getelf(mod, &bias)) ||
	    elf_getphdrnum(elf, &nr) || !(raw = elf_rawfile(elf, &size)))
		return false;
	va = addr - bias;
	for (size_t i = 0; i < nr; i++) {
		ph = gelf_getphdr(elf, (int)i, &mem);
		if (!ph || ph->p_type != PT_LOAD || ph->p_flags & PF_W ||
		    va < ph->p_vaddr || va - ph->p_vaddr >= ph->p_filesz ||
		    ph->p_filesz - (va - ph->p_vaddr) < sizeof(*result))
			continue;
		off = ph->p_offset + (va - ph->p_vaddr);
		if (off < ph->p_offset || off > size ||
		    size - off < sizeof(*result))
			return false;
		memcpy(result, raw + off, sizeof(*result));
		return true;
	}
	return false;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result,
			   void *arg)
{
	struct proc *p = arg;
	const struct stack_copy *c = p->cur;
	uint64_t at = addr - c->sp;

	/* Unsigned: an addr below sp wraps to a huge @at, and misses. */
	if (addr >= c->sp && at < c->size && c->size - at >= sizeof(*result)) {
		memcpy(result, c->bytes + at, sizeof(*result));
		return true;
	}
	if (read_module(dwfl, addr, result))
		return true;
	/*
	 * libdwfl takes a return address it cannot read for the end of the
	 * stack, without an error: remember why it ended.
	 */
	if (!p->unread)
		p->unread = addr;
	return false;
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct stack_copy *c = ((struct proc *)arg)->cur;
	Dwarf_Word regs[2] = { c->bp, c->sp };	/* DWARF_RBP, DWARF_RSP */

	if (!dwfl_thread_state_registers(thread, DWARF_RBP, 2, regs))
		return false;
	dwfl_thread_state_register_pc(thread, c->ip);
	return true;
}

static const Dwfl_Thread_Callbacks thread_cbs = {
	.next_thread = cb_next_thread,
	.get_thread = cb_get_thread,
	.memory_read = cb_memory_read,
	.set_initial_registers = cb_set_initial_registers,
};

/* ---- sessions --------------------------------------------------------- */

/*
 * The bias of @m's binary, mapped at @m->start from file offset
 * @m->pgoff: the PT_LOAD holding that offset says which vaddr it has.
 * False if no segment does (not the file that was mapped).
 */
static bool map_bias(const char *path, const struct umap_mapping *m,
		     uint64_t *bias)
{
	GElf_Phdr mem, *ph;
	bool found = false;
	size_t nr;
	Elf *elf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && !elf_getphdrnum(elf, &nr))
		for (size_t i = 0; i < nr && !found; i++) {
			ph = gelf_getphdr(elf, (int)i, &mem);
			/* Mappings start at a page: 64 KiB covers any. */
			if (!ph || ph->p_type != PT_LOAD ||
			    m->pgoff < (ph->p_offset & ~0xffffULL) ||
			    m->pgoff >= ph->p_offset + ph->p_filesz)
				continue;
			*bias = m->start - m->pgoff + ph->p_offset - ph->p_vaddr;
			found = true;
		}
	elf_end(elf);
	close(fd);
	return found;
}

/* @um reported to @p's session: true if it became a module. */
static bool proc_report(struct unwinder *u, struct proc *p,
			const struct umap_mapping *um)
{
	const char *path, *name;
	uint64_t bias;

	path = find_binary(u, um);
	if (path && map_bias(path, um, &bias)) {
		name = strrchr(path, '/');
		/* add_p_vaddr: @bias is added to the file's vaddrs as they are. */
		if (dwfl_report_elf(p->dwfl, name ? name + 1 : path, path, -1,
				    bias, true))
			return true;
	}
	p->missing++;
	return false;
}

static bool told_is(const struct told *t, const struct umap_mapping *um)
{
	return t->start == um->start && t->end == um->end &&
	       t->pgoff == um->pgoff && t->build_id_len == um->build_id_len &&
	       !memcmp(t->build_id, um->build_id, um->build_id_len);
}

/*
 * @p's list of what it was told made @pid's mappings with a build-id now
 * (without one, nothing finds their file), the modules reported and
 * counted in the session: all of them when @p->nr_told is 0, else those
 * not in the list (proc_add() checked the list's are all still there).
 * Returns how many became modules, or -1 out of memory (nothing told).
 */
static int proc_tell(struct unwinder *u, struct proc *p, const struct umaps *m)
{
	const struct umap_mapping *um;
	struct told *next = NULL;
	size_t nr = 0, j = 0;
	int reported = 0;

	for (uint32_t i = 0; (um = umaps_nth(m, p->pid, i)); i++)
		nr += um->build_id_len > 0;
	if (nr && !(next = calloc(nr, sizeof(*next))))
		return -1;
	nr = 0;
	for (uint32_t i = 0; (um = umaps_nth(m, p->pid, i)); i++) {
		struct told *t;

		if (!um->build_id_len)
			continue;
		t = &next[nr++];
		*t = (struct told){ .start = um->start, .end = um->end,
				    .pgoff = um->pgoff,
				    .build_id_len = um->build_id_len };
		memcpy(t->build_id, um->build_id, um->build_id_len);
		/* Both by start: one told before is at j. */
		if (j < p->nr_told && told_is(&p->told[j], um)) {
			j++;
			continue;
		}
		reported += proc_report(u, p, um);
	}
	free(p->told);
	p->told = next;
	p->nr_told = nr;
	return reported;
}

static void proc_make(struct unwinder *u, struct proc *p, int32_t pid,
		      const struct umaps *m, uint64_t gen)
{
	int reported;

	p->pid = pid;
	p->made = true;
	p->gen = gen;
	p->dwfl = dwfl_begin(&dwfl_cbs);
	if (!p->dwfl)
		return;
	dwfl_report_begin(p->dwfl);
	reported = proc_tell(u, p, m);
	dwfl_report_end(p->dwfl, NULL, NULL);
	if (reported <= 0 ||
	    !dwfl_attach_state(p->dwfl, NULL, pid, &thread_cbs, p)) {
		dwfl_end(p->dwfl);
		p->dwfl = NULL;
	}
}

/*
 * @p's session told of @p->pid's mappings added since (as @gen is now):
 * false, nothing done, when one it was told of went or changed (an exec,
 * an munmap, a mapping over a part), or it has no session to add to.
 */
static bool proc_add(struct unwinder *u, struct proc *p, const struct umaps *m,
		     uint64_t gen)
{
	const struct umap_mapping *um;
	size_t j = 0;
	int rc;

	if (!p->dwfl)
		return false;
	/* Every mapping told is still there as it was: both lists by start. */
	for (uint32_t i = 0; j < p->nr_told && (um = umaps_nth(m, p->pid, i)); i++) {
		if (!um->build_id_len || um->start < p->told[j].start)
			continue;	/* none, or added */
		if (!told_is(&p->told[j], um))
			return false;
		j++;
	}
	if (j < p->nr_told)
		return false;
	dwfl_report_begin_add(p->dwfl);
	rc = proc_tell(u, p, m);
	if (dwfl_report_end(p->dwfl, NULL, NULL) || rc < 0)
		return false;
	p->gen = gen;
	return true;
}

/*
 * @pid's session, told of the mappings added since, or made again when
 * one it knew went or changed.
 */
static struct proc *proc_get(struct unwinder *u, int32_t pid,
			     const struct umaps *m)
{
	uint64_t gen = umaps_gen(m, pid);
	struct proc *p;

	for (unsigned int i = 0; i < PROC_CACHE; i++) {
		p = &u->procs[i];
		if (!p->made || p->pid != pid)
			continue;
		if (p->gen == gen || proc_add(u, p, m, gen))
			return p;
		proc_drop(p);
		proc_make(u, p, pid, m, gen);
		return p;
	}
	p = &u->procs[u->next_victim++ % PROC_CACHE];
	proc_drop(p);
	proc_make(u, p, pid, m, gen);
	return p;
}

struct walk {
	uint64_t *ips;
	unsigned int n, max;
};

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct walk *w = arg;
	bool activation;
	Dwarf_Addr pc;

	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	/* Activations (the first frame) hold pc; callers a return address. */
	w->ips[w->n++] = activation || !pc ? pc : pc - 1;
	return w->n == w->max ? DWARF_CB_ABORT : DWARF_CB_OK;
}

unsigned int unwind_copy(struct unwinder *u, const struct stack_copy *c,
			 int32_t pid, const struct umaps *m, uint64_t *ips,
			 unsigned int max, const char **note)
{
	struct walk w = { .ips = ips, .max = max };
	struct proc *p;
	int rc;

	*note = NULL;
	if (!max)
		return 0;
	p = pid > 0 ? proc_get(u, pid, m) : NULL;
	if (!p || !p->dwfl) {
		ips[0] = c->ip;
		*note = pid <= 0 ? "its process is unknown" :
			p && p->missing ? "no binary of its mappings at hand (ringtrace symbols, report --binaries)" :
			"no mapping of its process in the trace";
		return 1;
	}
	p->cur = c;
	p->unread = 0;
	rc = dwfl_getthread_frames(p->dwfl, pid, frame_cb, &w);
	p->cur = NULL;
	if (!w.n) {
		ips[w.n++] = c->ip;
		snprintf(u->note, sizeof(u->note), "not unwound: %s",
			 dwfl_errmsg(-1));
		*note = u->note;
	} else if (w.n < max && (rc || p->unread)) {
		if (rc)
			snprintf(u->note, sizeof(u->note), "unwinding stopped: %s",
				 dwfl_errmsg(-1));
		else
			snprintf(u->note, sizeof(u->note),
				 "unwinding stopped: 0x%" PRIx64 " is neither in the copy nor in a binary",
				 p->unread);
		if (p->missing)
			snprintf(u->note + strlen(u->note),
				 sizeof(u->note) - strlen(u->note),
				 " (a mapping's binary is missing)");
		*note = u->note;
	}
	return w.n;
}
