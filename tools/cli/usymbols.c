// SPDX-License-Identifier: GPL-2.0
/*
 * User frames named (usymbols.h): a file offset in a binary of the
 * trace's symbol store -> the binary's address (its PT_LOAD segments,
 * the reverse of elfsym.c) -> the function of .symtab, else .dynsym,
 * holding it.  Binaries are kept open by build-id for the whole report.
 *
 * A frame the store cannot name (a stripped binary: no .symtab, and its
 * .dynsym names exported functions only; a binary not stored) is asked of
 * debuginfod (debuginfod.h): the debug file's .symtab names it.  A debug
 * file's segments hold no bytes (NOBITS), so the file offset becomes an
 * address through the store's binary, else through the executable
 * debuginfod serves.  A binary stored with its .symtab is never asked for.
 *
 * A stored binary is decompressed once per report into a memfd, which the
 * namer maps and the unwinder (unwind.c) hands libdwfl by its
 * /proc/self/fd path: one copy of its bytes for both.
 */
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "../../lib/usyms.h"
#include "debuginfod.h"
#include "usymbols.h"

struct usym {
	uint64_t value, size;
	const char *name;		/* in the ELF image */
	bool global;
};

struct load {
	uint64_t offset, filesz, vaddr;
};

struct binary {
	uint8_t id[USYMS_BUILD_ID_MAX];
	size_t id_len;
	bool ok;			/* opened and checked: names from it */
	bool stored;			/* @file holds the store's image */
	bool named;			/* names read, or why not said */
	int err;			/* usyms_open()'s, and its @why */
	char *why;
	bool symtab;			/* its functions are .symtab's */
	struct usyms_file file;		/* the store's (not debuginfod's) */
	int memfd;			/* file.image's bytes, mapped... */
	char *memfd_path;		/* ...when this is set: /proc/self/fd/N */
	Elf *elf;
	struct usym *syms;		/* by value */
	size_t nr_syms;
	struct load *loads;
	size_t nr_loads;
};

/* What debuginfod gave for a build-id: names, and where to map offsets. */
struct debug {
	uint8_t id[USYMS_BUILD_ID_MAX];
	size_t id_len;
	bool ok;
	struct binary syms;		/* the debug file */
	struct binary exe;		/* the executable, if the store lacks it */
};

struct usym_store {
	char *dir;
	bool looked;			/* whether the store exists, asked */
	bool exists;
	bool said;			/* that it does not, said */
	struct binary *bins;
	size_t nr, cap;
	size_t *index;			/* 1 + a bin's index, by build-id hash */
	size_t index_cap;		/* 4 * cap, a power of 2 */
	struct debug *dbgs;
	size_t nr_dbgs, cap_dbgs;
};

struct usym_store *usym_store_new(const char *dir)
{
	struct usym_store *st = calloc(1, sizeof(*st));

	if (!st || !(st->dir = strdup(dir))) {
		free(st);
		return NULL;
	}
	return st;
}

static void binary_free(struct binary *b)
{
	elf_end(b->elf);
	free(b->syms);
	free(b->loads);
	if (b->memfd_path) {
		munmap(b->file.image, b->file.size);
		b->file.image = NULL;
		close(b->memfd);
		free(b->memfd_path);
	}
	usyms_close(&b->file);
	free(b->why);
}

/*
 * @b's decompressed image moved into a memfd and mapped there (private
 * and writable, as the heap copy was: libelf may convert in place), the
 * heap copy freed.  0, or -errno with the heap copy kept.
 */
static int image_to_memfd(struct binary *b)
{
	const char *image = b->file.image;
	size_t done = 0;
	void *map;
	int fd, err;

	fd = memfd_create("ringtrace-binary", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (done < b->file.size) {
		ssize_t n = write(fd, image + done, b->file.size - done);

		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			goto fail;
		}
		done += (size_t)n;
	}
	map = mmap(NULL, b->file.size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	if (asprintf(&b->memfd_path, "/proc/self/fd/%d", fd) < 0) {
		munmap(map, b->file.size);
		err = -ENOMEM;
		goto fail;
	}
	free(b->file.image);
	b->file.image = map;
	b->memfd = fd;
	return 0;
fail:
	close(fd);
	return err;
}

void usym_store_free(struct usym_store *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->nr; i++)
		binary_free(&st->bins[i]);
	free(st->bins);
	free(st->index);
	for (size_t i = 0; i < st->nr_dbgs; i++) {
		binary_free(&st->dbgs[i].syms);
		binary_free(&st->dbgs[i].exe);
	}
	free(st->dbgs);
	free(st->dir);
	free(st);
}

static int cmp_usym(const void *a, const void *b)
{
	const struct usym *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	/* Aliases: the global name first, then by name, so every run agrees. */
	if (x->global != y->global)
		return x->global ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The functions of @type's table (SHT_SYMTAB, SHT_DYNSYM) into @b. */
static int read_syms(struct binary *b, Elf64_Word type)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(b->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n, room, fsize;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		/*
		 * Room for every function at once: as many as gelf_getsym()
		 * can return, whatever sh_entsize a damaged file claims.
		 */
		fsize = gelf_fsize(b->elf, ELF_T_SYM, 1, EV_CURRENT);
		room = fsize ? d->d_size / fsize : 0;
		if (room > n)
			room = n;
		if (room) {
			struct usym *p = reallocarray(b->syms, b->nr_syms + room,
						      sizeof(*p));

			if (!p)
				return -ENOMEM;
			b->syms = p;
		}
		for (size_t i = 0; i < n; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF ||
			    (GELF_ST_TYPE(s.st_info) != STT_FUNC &&
			     GELF_ST_TYPE(s.st_info) != STT_GNU_IFUNC))
				continue;
			name = elf_strptr(b->elf, sh.sh_link, s.st_name);
			if (!name || !*name)
				continue;
			b->syms[b->nr_syms++] = (struct usym){
				.value = s.st_value, .size = s.st_size, .name = name,
				.global = GELF_ST_BIND(s.st_info) != STB_LOCAL,
			};
		}
	}
	return 0;
}

/* The ELF file of @b (b->elf): its segments and functions. */
static int read_elf(struct binary *b, char *why, size_t size)
{
	size_t nr_phdr;

	if (!b->elf || elf_kind(b->elf) != ELF_K_ELF ||
	    elf_getphdrnum(b->elf, &nr_phdr)) {
		snprintf(why, size, "%s", elf_errmsg(-1));
		return -EINVAL;
	}
	for (size_t i = 0; i < nr_phdr; i++) {
		GElf_Phdr ph;
		struct load *p;

		if (!gelf_getphdr(b->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		p = realloc(b->loads, (b->nr_loads + 1) * sizeof(*p));
		if (!p)
			return -ENOMEM;
		b->loads = p;
		b->loads[b->nr_loads++] = (struct load){
			.offset = ph.p_offset, .filesz = ph.p_filesz, .vaddr = ph.p_vaddr,
		};
	}
	if (read_syms(b, SHT_SYMTAB))
		return -ENOMEM;
	b->symtab = b->nr_syms > 0;
	if (!b->nr_syms && read_syms(b, SHT_DYNSYM))
		return -ENOMEM;
	if (b->nr_syms)
		qsort(b->syms, b->nr_syms, sizeof(*b->syms), cmp_usym);
	return 0;
}

/* The ELF image of @b, from the store. */
static int read_binary(struct binary *b, char *why, size_t size)
{
	elf_version(EV_CURRENT);
	b->elf = elf_memory(b->file.image, b->file.size);
	return read_elf(b, why, size);
}

/* Where @id's slot is, or would go, in st->index (a build-id is a hash). */
static size_t index_slot(const struct usym_store *st, const uint8_t *id,
			 size_t len)
{
	size_t mask = st->index_cap - 1, h = 0;

	memcpy(&h, id, len < sizeof(h) ? len : sizeof(h));
	for (h &= mask; st->index[h]; h = (h + 1) & mask) {
		const struct binary *b = &st->bins[st->index[h] - 1];

		if (b->id_len == len && !memcmp(b->id, id, len))
			break;
	}
	return h;
}

/* Room for one more slot, in st->bins and in st->index: 0 or -ENOMEM. */
static int grow_bins(struct usym_store *st)
{
	size_t cap = st->cap ? 2 * st->cap : 16;
	struct binary *p;
	size_t *index;

	if (st->nr < st->cap)
		return 0;
	p = realloc(st->bins, cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	st->bins = p;
	index = calloc(4 * cap, sizeof(*index));
	if (!index)
		return -ENOMEM;
	free(st->index);
	st->index = index;
	st->index_cap = 4 * cap;
	st->cap = cap;
	for (size_t i = 0; i < st->nr; i++)
		st->index[index_slot(st, st->bins[i].id, st->bins[i].id_len)] = i + 1;
	return 0;
}

/*
 * @id's slot, its stored image loaded on the first ask (b->stored; what
 * went wrong kept for get_binary() to say when a frame is named: the
 * unwinder asks for binaries no frame may be in); NULL out of memory.
 */
static struct binary *load_binary(struct usym_store *st, const uint8_t *id,
				  size_t len)
{
	char why[PATH_MAX + 256], hex[2 * USYMS_BUILD_ID_MAX + 1];
	struct binary *b;
	size_t h;
	int err;

	if (st->index_cap && st->index[h = index_slot(st, id, len)])
		return &st->bins[st->index[h] - 1];
	if (!st->looked) {
		char path[PATH_MAX];
		struct stat s;

		snprintf(path, sizeof(path), "%s/" USYMS_DIR, st->dir);
		st->exists = !stat(path, &s) && S_ISDIR(s.st_mode);
		st->looked = true;
	}
	if (grow_bins(st))
		return NULL;
	b = &st->bins[st->nr++];
	memset(b, 0, sizeof(*b));
	memcpy(b->id, id, len);
	b->id_len = len;
	st->index[index_slot(st, id, len)] = st->nr;
	if (!st->exists)
		return b;
	b->err = usyms_open(st->dir, id, len, &b->file, why, sizeof(why));
	if (b->err) {
		b->why = strdup(why);
		return b;
	}
	b->stored = true;
	err = image_to_memfd(b);
	if (err) {
		usyms_hex(id, len, hex);
		warn("build-id %s: no memfd for it (%s): its user stack copies are not unwound with it",
		     hex, strerror(-err));
	}
	return b;
}

/* @b's functions read (b->ok), or why not said: once, on its first frame. */
static void name_binary(struct usym_store *st, struct binary *b)
{
	char why[PATH_MAX + 256], ewhy[256], hex[2 * USYMS_BUILD_ID_MAX + 1];
	int err;

	b->named = true;
	if (!st->exists) {
		if (!st->said)
			warn("%s has no symbol store (" USYMS_DIR "): user frames print unresolved%s ('ringtrace symbols %s' fills it while the binaries exist)",
			     st->dir, dbginfo_enabled() ? " unless debuginfod has them" : "",
			     st->dir);
		st->said = true;
		return;
	}
	usyms_hex(b->id, b->id_len, hex);
	if (b->err == -ENOENT) {
		char left[768];

		/* Why the recording left it out, if its missing list says. */
		if (usyms_missing_why(st->dir, b->id, b->id_len, left, sizeof(left)))
			warn("build-id %s is not in the symbol store (not stored when recorded: %s): %s",
			     hex, left, dbginfo_enabled() ? "asking debuginfod" :
			     "its frames print unresolved");
		else
			warn("build-id %s is not in the symbol store: %s", hex,
			     dbginfo_enabled() ? "asking debuginfod" :
			     "its frames print unresolved");
		return;
	}
	if (b->err) {
		warn("%s: its frames print unresolved", b->why ? b->why : strerror(-b->err));
		return;
	}
	err = read_binary(b, ewhy, sizeof(ewhy));
	/*
	 * No function, but segments: kept for debuginfod's debug file
	 * (usym_resolve()), which says why if it has none.
	 */
	if (!err && !b->nr_syms && !dbginfo_enabled()) {
		snprintf(ewhy, sizeof(ewhy), "no function in .symtab or .dynsym (stripped, or damaged)");
		err = -EINVAL;
	}
	if (err) {
		snprintf(why, sizeof(why), "build-id %s: %s", hex, ewhy);
		warn("%s: its frames print unresolved", why);
		/* The image stays (b->stored): its CFI may still unwind. */
		elf_end(b->elf);
		free(b->syms);
		free(b->loads);
		b->elf = NULL;
		b->syms = NULL;
		b->loads = NULL;
		b->nr_syms = b->nr_loads = 0;
		return;
	}
	b->ok = true;
}

/* @id's binary, opened on the first ask; NULL when missing or bad. */
static struct binary *get_binary(struct usym_store *st, const uint8_t *id,
				 size_t len)
{
	struct binary *b = load_binary(st, id, len);

	if (b && !b->named)
		name_binary(st, b);
	return b && b->ok ? b : NULL;
}

const char *usym_store_path(struct usym_store *st, const uint8_t *id,
			    size_t len)
{
	struct binary *b;

	if (!id || !len || len > USYMS_BUILD_ID_MAX)
		return NULL;
	b = load_binary(st, id, len);
	return b && b->stored ? b->memfd_path : NULL;
}

/*
 * @file_off of a binary named: an address through @map's segments, the
 * function there from @names' symbols.  0, or -1 (@f untouched).
 */
static int name_offset(const struct binary *map, const struct binary *names,
		       uint64_t file_off, struct usym_frame *f)
{
	uint64_t vaddr = 0;
	size_t lo = 0, hi, i;
	bool in_load = false;

	for (i = 0; i < map->nr_loads && !in_load; i++) {
		const struct load *l = &map->loads[i];

		if (file_off >= l->offset && file_off - l->offset < l->filesz) {
			vaddr = file_off - l->offset + l->vaddr;
			in_load = true;
		}
	}
	if (!in_load)
		return -1;
	/* The last function starting at or below @vaddr, the first of its aliases. */
	hi = names->nr_syms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (names->syms[mid].value <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	i = lo - 1;
	while (i && names->syms[i - 1].value == names->syms[i].value)
		i--;
	if (vaddr - names->syms[i].value >=
	    (names->syms[i].size ? names->syms[i].size : 1))
		return -1;
	f->name = names->syms[i].name;
	f->offset = vaddr - names->syms[i].value;
	return 0;
}

/*
 * @b filled from debuginfod's file @fd (dbginfo_find()'s: closed here) of
 * build-id @hex, which holds functions when @need_syms.  False, said once,
 * when it is not usable.
 */
static bool read_fetched(struct binary *b, int fd, const char *path, const char *hex,
			 bool need_syms)
{
	char why[256];

	elf_version(EV_CURRENT);
	b->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	/* All of it mapped (or read) now: the descriptor is not needed. */
	if (b->elf && elf_cntl(b->elf, ELF_C_FDREAD)) {
		elf_end(b->elf);
		b->elf = NULL;
	}
	close(fd);
	if (read_elf(b, why, sizeof(why))) {
		warn("build-id %s: debuginfod's %s: %s: its frames print unresolved", hex,
		     path, why);
		return false;
	}
	if (need_syms && !b->symtab) {
		warn("build-id %s: debuginfod's %s has no .symtab: its frames print unresolved",
		     hex, path);
		return false;
	}
	return true;
}

/*
 * @id's debug file from debuginfod, and the executable too when the store
 * has no binary @stored; fetched on the first ask, NULL when off, missing
 * (debuginfod.c says so) or unusable.
 */
static struct debug *get_debug(struct usym_store *st, const uint8_t *id, size_t len,
			       const struct binary *stored)
{
	char hex[2 * USYMS_BUILD_ID_MAX + 1], *path;
	struct debug *d;
	int fd;

	for (size_t i = 0; i < st->nr_dbgs; i++)
		if (st->dbgs[i].id_len == len && !memcmp(st->dbgs[i].id, id, len))
			return st->dbgs[i].ok ? &st->dbgs[i] : NULL;
	if (!dbginfo_enabled())
		return NULL;
	d = grow_array(st->dbgs, &st->cap_dbgs, st->nr_dbgs, sizeof(*d), 16);
	if (!d)
		return NULL;
	st->dbgs = d;
	d = &st->dbgs[st->nr_dbgs++];
	memset(d, 0, sizeof(*d));
	memcpy(d->id, id, len);
	d->id_len = len;
	usyms_hex(id, len, hex);
	fd = dbginfo_find(id, len, &path);
	if (fd < 0)
		return NULL;
	d->ok = read_fetched(&d->syms, fd, path, hex, true);
	free(path);
	if (!d->ok || stored)
		return d->ok ? d : NULL;
	fd = dbginfo_find_executable(id, len, &path);
	if (fd < 0) {
		d->ok = false;
		return NULL;
	}
	d->ok = read_fetched(&d->exe, fd, path, hex, false);
	free(path);
	return d->ok ? d : NULL;
}

int usym_resolve(struct usym_store *st, const uint8_t *build_id, size_t len,
		 uint64_t file_off, struct usym_frame *f)
{
	struct binary *b;
	struct debug *d;

	f->name = NULL;
	f->offset = 0;
	if (!build_id || !len || len > USYMS_BUILD_ID_MAX)
		return -1;
	/* The store's binary, then debuginfod's debug file, then nothing. */
	b = get_binary(st, build_id, len);
	if (b && !name_offset(b, b, file_off, f))
		return 0;
	if (b && b->symtab)
		return -1;
	d = get_debug(st, build_id, len, b);
	if (!d)
		return -1;
	return name_offset(b ? b : &d->exe, &d->syms, file_off, f);
}

int usym_load_bias(struct usym_store *st, const uint8_t *build_id, size_t len,
		   uint64_t file_off, uint64_t *bias)
{
	const struct binary *b;
	struct debug *d;

	if (!build_id || !len || len > USYMS_BUILD_ID_MAX)
		return -1;
	b = get_binary(st, build_id, len);
	if (!b) {
		d = get_debug(st, build_id, len, NULL);
		b = d ? &d->exe : NULL;
	}
	for (size_t i = 0; b && i < b->nr_loads; i++) {
		const struct load *l = &b->loads[i];

		if (file_off >= l->offset && file_off - l->offset < l->filesz) {
			*bias = l->vaddr - l->offset;
			return 0;
		}
	}
	return -1;
}

bool usym_format(struct usym_store *st, const struct umaps *um, int32_t pid,
		 uint64_t ip, enum usym_style style, char *buf, size_t size)
{
	struct usym_frame f;
	struct umap_hit h;
	const char *bin;

	/* In no mapping the trace knows: said to be a user address. */
	if (!umaps_lookup(um, pid, ip, &h)) {
		snprintf(buf, size, style == USYM_LINE ? "0x%" PRIx64 " [user]" :
			 "0x%" PRIx64, ip);
		return false;
	}
	bin = strrchr(h.path, '/');
	bin = bin ? bin + 1 : h.path;
	if (!*bin)
		bin = "[unknown]";
	if (!usym_resolve(st, h.build_id, h.build_id_len, h.file_off, &f)) {
		if (style == USYM_FOLDED)
			snprintf(buf, size, "%s", f.name);
		else if (style == USYM_NAME)
			snprintf(buf, size, "%s (%s)", f.name, bin);
		else
			snprintf(buf, size, "%s+0x%" PRIx64 " (%s)", f.name, f.offset, bin);
		return true;
	}
	if (h.build_id_len >= 4)
		snprintf(buf, size, "%s+0x%" PRIx64 " [bid:%02x%02x%02x%02x]", bin,
			 h.file_off, h.build_id[0], h.build_id[1], h.build_id[2],
			 h.build_id[3]);
	else
		snprintf(buf, size, "%s+0x%" PRIx64 " [bid:none]", bin, h.file_off);
	return false;
}
