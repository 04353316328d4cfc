// SPDX-License-Identifier: GPL-2.0
/*
 * USDT probes of an x86-64 ELF file, read from its .note.stapsdt with
 * libelf.  Each note (name "stapsdt", type 3) describes one probe site:
 * three addresses -- the site (a nop), the _.stapsdt.base the note was
 * assembled against, the semaphore (0 if none) -- then "provider\0name\0
 * args\0".  A prelinked file moved its sections but not the notes: the
 * addresses are corrected by the .stapsdt.base section's address minus
 * the note's base.  The site becomes a file offset through the PT_LOAD
 * headers (elfsym.c), the semaphore one through the section holding it:
 * the uprobe core takes both as offsets in the file's inode.
 *
 * The argument string is one operand per argument, "[-]SIZE@OPERAND" in
 * the assembler's AT&T syntax, as gcc printed it for the "nor"
 * constraint: a register, an immediate, or a memory operand (a
 * displacement from a base register and maybe an index register times a
 * scale, or a symbol relative to %rip).  Each becomes what the module's
 * handler can fetch from the probed task's registers and memory.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfsym.h"
#include "usdt.h"

#define NT_STAPSDT	3

/* x86-64's register names, each to the struct pt_regs field holding it. */
static const struct {
	const char *name;
	const char *reg;
	unsigned int width;	/* bytes */
} regs[] = {
#define GPR(q, d, w, b, k) { q, k, 8 }, { d, k, 4 }, { w, k, 2 }, { b, k, 1 }
	GPR("rax", "eax", "ax", "al", "ax"),
	GPR("rbx", "ebx", "bx", "bl", "bx"),
	GPR("rcx", "ecx", "cx", "cl", "cx"),
	GPR("rdx", "edx", "dx", "dl", "dx"),
	GPR("rsi", "esi", "si", "sil", "si"),
	GPR("rdi", "edi", "di", "dil", "di"),
	GPR("rbp", "ebp", "bp", "bpl", "bp"),
	GPR("rsp", "esp", "sp", "spl", "sp"),
	GPR("r8", "r8d", "r8w", "r8b", "r8"),
	GPR("r9", "r9d", "r9w", "r9b", "r9"),
	GPR("r10", "r10d", "r10w", "r10b", "r10"),
	GPR("r11", "r11d", "r11w", "r11b", "r11"),
	GPR("r12", "r12d", "r12w", "r12b", "r12"),
	GPR("r13", "r13d", "r13w", "r13b", "r13"),
	GPR("r14", "r14d", "r14w", "r14b", "r14"),
	GPR("r15", "r15d", "r15w", "r15b", "r15"),
#undef GPR
};

/* "%NAME" (@len bytes at @s) to the kernel's name; NULL if not a GPR of @width+. */
static const char *reg_of(const char *s, size_t len, unsigned int width)
{
	if (len < 2 || s[0] != '%')
		return NULL;
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		if (strlen(regs[i].name) == len - 1 &&
		    !strncmp(regs[i].name, s + 1, len - 1))
			return regs[i].width >= width ? regs[i].reg : NULL;
	return NULL;
}

/* A whole number at [s, s+len): decimal, 0x hex or 0 octal, maybe signed. */
static bool number(const char *s, size_t len, int64_t *v)
{
	char buf[32], *end;

	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (!isdigit((unsigned char)buf[buf[0] == '-' || buf[0] == '+']))
		return false;
	errno = 0;
	*v = strtoll(buf, &end, 0);
	return !errno && !*end;
}

/* SYMBOL[+-N] at [s, s+len): a symbol the assembler would take, then a number. */
static bool symbolic(const char *s, size_t len, struct usdt_arg *arg)
{
	size_t n = 0;

	while (n < len && (isalnum((unsigned char)s[n]) || s[n] == '_' ||
			   s[n] == '.'))
		n++;
	if (!n || isdigit((unsigned char)s[0]) || n >= sizeof(arg->sym))
		return false;
	memcpy(arg->sym, s, n);
	arg->sym[n] = '\0';
	arg->disp = 0;
	return n == len || ((s[n] == '+' || s[n] == '-') &&
			    number(s + n, len - n, &arg->disp));
}

/* "DISP(BASE[,INDEX[,SCALE]])" or "SYM[+-N](%rip)" or "SYM[+-N]" at @op. */
static bool memory(const char *op, struct usdt_arg *arg)
{
	const char *open = strchr(op, '('), *end = op + strlen(op);
	const char *base, *comma, *index;
	int64_t scale = 1;

	if (!open) {
		arg->kind = USDT_SYM;
		return symbolic(op, strlen(op), arg);
	}
	if (end[-1] != ')' || end - 1 <= open)
		return false;
	base = open + 1;
	comma = memchr(base, ',', (size_t)(end - 1 - base));
	if (!comma) {
		if (!strncmp(base, "%rip)", 5)) {
			arg->kind = USDT_SYM;
			return symbolic(op, (size_t)(open - op), arg);
		}
		comma = end - 1;
	}
	arg->kind = USDT_MEM;
	arg->disp = 0;
	if (open > op && !number(op, (size_t)(open - op), &arg->disp))
		return false;
	arg->reg = NULL;
	if (comma > base && !(arg->reg = reg_of(base, (size_t)(comma - base), 8)))
		return false;
	arg->index = NULL;
	arg->scale = 0;
	if (comma == end - 1)
		return arg->reg != NULL;
	index = comma + 1;
	comma = memchr(index, ',', (size_t)(end - 1 - index));
	if (!comma)
		comma = end - 1;
	else if (!number(comma + 1, (size_t)(end - 2 - comma), &scale) ||
		 (scale != 1 && scale != 2 && scale != 4 && scale != 8))
		return false;
	arg->index = reg_of(index, (size_t)(comma - index), 8);
	arg->scale = (unsigned int)scale;
	/* %rsp is no index register. */
	return arg->index && strcmp(arg->index, "sp");
}

int usdt_parse_arg(const char *text, struct usdt_arg *arg, char *why,
		   size_t size)
{
	const char *at = strchr(text, '@'), *op;
	int64_t n;

	memset(arg, 0, sizeof(*arg));
	if (!at || !number(text, (size_t)(at - text), &n) ||
	    (n != 1 && n != 2 && n != 4 && n != 8 && n != -1 && n != -2 &&
	     n != -4 && n != -8)) {
		snprintf(why, size, "argument '%s' is not SIZE@OPERAND with a size "
			 "of 1, 2, 4 or 8 bytes (signed: -1, -2, -4, -8)", text);
		return -1;
	}
	arg->size = (unsigned int)(n < 0 ? -n : n);
	arg->is_signed = n < 0;
	op = at + 1;
	if (op[0] == '%') {
		arg->kind = USDT_REG;
		arg->reg = reg_of(op, strlen(op), 1);
		if (arg->reg)
			return 0;
	} else if (op[0] == '$') {
		arg->kind = USDT_IMM;
		if (number(op + 1, strlen(op + 1), &arg->disp))
			return 0;
	} else if (memory(op, arg)) {
		return 0;
	}
	snprintf(why, size, "argument '%s': operand '%s' is not handled "
		 "(a general register, $IMMEDIATE, DISP(BASE[,INDEX,SCALE]) "
		 "or SYMBOL[+-N](%%rip))", text, op);
	return -1;
}

/* ---- the notes -------------------------------------------------------- */

/* The section named @name, or NULL. */
static Elf_Scn *section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t strndx;
	const char *s;

	if (elf_getshdrstrndx(elf, &strndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, sh) && (s = elf_strptr(elf, strndx, sh->sh_name)) &&
		    !strcmp(s, name))
			return scn;
	return NULL;
}

/* A NUL-terminated string at desc[*pos] before desc[len]; NULL if none. */
static const char *note_string(const char *desc, size_t len, size_t *pos)
{
	const char *s = desc + *pos, *nul;

	if (*pos >= len || !(nul = memchr(s, '\0', len - *pos)))
		return NULL;
	*pos += (size_t)(nul - s) + 1;
	return s;
}

/* Every probe of @elf to @cb; the number seen in *@n. */
static int walk_notes(Elf *elf, const char *path, size_t *n,
		      int (*cb)(const struct usdt_probe *p, void *arg), void *arg,
		      char *why, size_t size)
{
	GElf_Shdr sh, base_sh;
	bool have_base = section(elf, ".stapsdt.base", &base_sh) != NULL;
	Elf_Scn *scn = section(elf, ".note.stapsdt", &sh);
	Elf_Data *data;
	size_t off = 0, at = 0, next, name_off, desc_off;
	GElf_Nhdr nh;
	int ret;

	*n = 0;
	if (!scn || sh.sh_type != SHT_NOTE) {
		snprintf(why, size, "%s has no USDT probes", path);
		return -1;
	}
	data = elf_getdata(scn, NULL);
	while (data && (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const char *desc = (const char *)data->d_buf + desc_off;
		struct usdt_probe p;
		uint64_t addr[3];
		size_t pos = sizeof(addr);

		at = off;
		off = next;
		if (nh.n_type != NT_STAPSDT || nh.n_namesz != sizeof("stapsdt") ||
		    memcmp((const char *)data->d_buf + name_off, "stapsdt",
			   sizeof("stapsdt")))
			continue;
		if (nh.n_descsz < sizeof(addr))
			goto damaged;
		memcpy(addr, desc, sizeof(addr));
		p.provider = note_string(desc, nh.n_descsz, &pos);
		p.name = note_string(desc, nh.n_descsz, &pos);
		p.args = note_string(desc, nh.n_descsz, &pos);
		if (!p.provider || !p.name || !*p.provider || !*p.name)
			goto damaged;
		if (!p.args)
			p.args = "";
		/* Prelink moved the sections, not what the notes say. */
		p.pc = addr[0];
		p.semaphore = addr[2];
		if (have_base) {
			p.pc += base_sh.sh_addr - addr[1];
			if (p.semaphore)
				p.semaphore += base_sh.sh_addr - addr[1];
		}
		(*n)++;
		ret = cb(&p, arg);
		if (ret)
			return ret;
	}
	if (!*n) {
		snprintf(why, size, "%s has no USDT probes", path);
		return -1;
	}
	return 0;
damaged:
	snprintf(why, size, "%s: a damaged .note.stapsdt (note at byte %zu)", path,
		 at);
	return -1;
}

/* @path's ELF, checked x86-64; NULL with @why (and *@fd closed). */
static Elf *open_elf(const char *path, int *fd, char *why, size_t size)
{
	GElf_Ehdr eh;
	Elf *elf;

	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0) {
		snprintf(why, size, "%s: %s", path, strerror(errno));
		return NULL;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(*fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		snprintf(why, size, "%s: not an ELF file", path);
	} else if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
		snprintf(why, size, "%s: not an x86-64 ELF file", path);
	} else {
		return elf;
	}
	elf_end(elf);
	close(*fd);
	return NULL;
}

int usdt_probes(const char *path,
		int (*cb)(const struct usdt_probe *p, void *arg), void *arg,
		char *why, size_t size)
{
	size_t n;
	int fd, ret;
	Elf *elf = open_elf(path, &fd, why, size);

	if (!elf)
		return -1;
	ret = walk_notes(elf, path, &n, cb, arg, why, size);
	elf_end(elf);
	close(fd);
	return ret;
}

/* ---- one probe ---------------------------------------------------------- */

/* A probe's sites as the notes give them; the strings in the ELF data. */
struct find {
	const char *provider, *name;
	unsigned int sites;		/* all seen; the first USDT_SITES_MAX kept */
	struct usdt_probe found[USDT_SITES_MAX];
	char list[512];			/* "rt:forms, rt:tick" */
};

/* True if @list ("rt:forms, rt:tick") names @p: a probe of several sites once. */
static bool listed(const char *list, const struct usdt_probe *p)
{
	size_t lp = strlen(p->provider), ln = strlen(p->name);

	for (const char *s = list; *s; s += strcspn(s, ","), s += *s ? 2 : 0)
		if (!strncmp(s, p->provider, lp) && s[lp] == ':' &&
		    !strncmp(s + lp + 1, p->name, ln) &&
		    (s[lp + 1 + ln] == ',' || !s[lp + 1 + ln]))
			return true;
	return false;
}

static int find_cb(const struct usdt_probe *p, void *arg)
{
	struct find *f = arg;
	size_t len = strlen(f->list);

	if (!strcmp(p->provider, f->provider) && !strcmp(p->name, f->name)) {
		if (f->sites < USDT_SITES_MAX)
			f->found[f->sites] = *p;
		f->sites++;
	}
	if (len < sizeof(f->list) - 1 && !listed(f->list, p))
		snprintf(f->list + len, sizeof(f->list) - len, "%s%s:%s",
			 len ? ", " : "", p->provider, p->name);
	return 0;
}

/* The number of operands in a note's argument string. */
static unsigned int count_args(const char *args)
{
	unsigned int n = 0;

	for (const char *p = args; *p; ) {
		p += strspn(p, " \t");
		if (!*p)
			break;
		n++;
		p += strcspn(p, " \t");
	}
	return n;
}

/* The file offset of @vaddr in the section that holds its bytes; -1 if none. */
static int data_offset(Elf *elf, uint64_t vaddr, uint64_t *offset)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_ALLOC) &&
		    sh.sh_type != SHT_NOBITS && vaddr >= sh.sh_addr &&
		    vaddr - sh.sh_addr + 2 <= sh.sh_size) {
			*offset = sh.sh_offset + vaddr - sh.sh_addr;
			return 0;
		}
	return -1;
}

/* The operands of site @k of @f's probe into @site; symbols made relative to it. */
static int resolve_args(Elf *elf, const char *path, const struct find *f,
			unsigned int k, struct usdt_site *site, char *why,
			size_t size)
{
	const struct usdt_probe *p = &f->found[k];
	char args[1024], *save = NULL, *word, msg[400];
	unsigned int n = 0;
	struct usdt_arg *a;
	GElf_Sym sym;

	/* strtok_r() cuts: a copy, not the ELF data. */
	snprintf(args, sizeof(args), "%s", p->args);
	for (word = strtok_r(args, " \t", &save); word;
	     word = strtok_r(NULL, " \t", &save)) {
		a = &site->args[n++];
		if (usdt_parse_arg(word, a, msg, sizeof(msg))) {
			snprintf(why, size, "%s: USDT probe %s:%s: %s", path,
				 f->provider, f->name, msg);
			return -1;
		}
		if (a->kind != USDT_SYM)
			continue;
		if (!elfsym_find(elf, a->sym, &sym)) {
			snprintf(why, size, "%s: USDT probe %s:%s: argument '%s' names "
				 "%s, not a symbol of the file", path, f->provider,
				 f->name, word, a->sym);
			return -1;
		}
		/* At the hit, ip is the site's address, wherever it is mapped. */
		a->kind = USDT_MEM;
		a->reg = "ip";
		a->disp += (int64_t)(sym.st_value - p->pc);
	}
	return 0;
}

/*
 * What the sites of @f's probe must agree on: the argument count (the
 * event's fields) and the semaphore (the module raises one per probe).
 */
static int check_sites(const char *path, const struct find *f, char *why,
		       size_t size)
{
	unsigned int n0 = count_args(f->found[0].args), n;

	if (f->sites > USDT_SITES_MAX) {
		snprintf(why, size, "%s: USDT probe %s:%s has %u sites, more than "
			 "the %d ringtrace probes at once", path, f->provider,
			 f->name, f->sites, USDT_SITES_MAX);
		return -1;
	}
	if (n0 > USDT_ARGS_MAX) {
		snprintf(why, size, "%s: USDT probe %s:%s has more than %d arguments",
			 path, f->provider, f->name, USDT_ARGS_MAX);
		return -1;
	}
	for (unsigned int k = 1; k < f->sites; k++) {
		n = count_args(f->found[k].args);
		if (n != n0) {
			snprintf(why, size, "%s: USDT probe %s:%s: its sites disagree on "
				 "the argument count (%u at 0x%" PRIx64 ", %u at 0x%"
				 PRIx64 ")", path, f->provider, f->name, n0,
				 f->found[0].pc, n, f->found[k].pc);
			return -1;
		}
		if (f->found[k].semaphore != f->found[0].semaphore) {
			snprintf(why, size, "%s: USDT probe %s:%s: its sites name different "
				 "semaphores (0x%" PRIx64 " at 0x%" PRIx64 ", 0x%" PRIx64
				 " at 0x%" PRIx64 ")", path, f->provider, f->name,
				 f->found[0].semaphore, f->found[0].pc,
				 f->found[k].semaphore, f->found[k].pc);
			return -1;
		}
	}
	return 0;
}

int usdt_spec(const char *path, const char *provider, const char *name,
	      struct usdt_spec *spec, char *why, size_t size)
{
	struct find *f = calloc(1, sizeof(*f));
	size_t n;
	int fd, ret = -1;
	Elf *elf;

	memset(spec, 0, sizeof(*spec));
	if (!f) {
		snprintf(why, size, "out of memory");
		return -1;
	}
	f->provider = provider;
	f->name = name;
	elf = open_elf(path, &fd, why, size);
	if (!elf) {
		free(f);
		return -1;
	}
	if (walk_notes(elf, path, &n, find_cb, f, why, size))
		goto out;
	if (!f->sites) {
		snprintf(why, size, "%s: no USDT probe %s:%s (it has %s)", path,
			 provider, name, f->list);
		goto out;
	}
	if (check_sites(path, f, why, size))
		goto out;
	spec->sites = calloc(f->sites, sizeof(*spec->sites));
	if (!spec->sites) {
		snprintf(why, size, "out of memory");
		goto out;
	}
	spec->nsites = f->sites;
	spec->nargs = count_args(f->found[0].args);
	if (f->found[0].semaphore &&
	    data_offset(elf, f->found[0].semaphore, &spec->ref_offset)) {
		snprintf(why, size, "%s: the semaphore of USDT probe %s:%s is not "
			 "in the file's data", path, provider, name);
		goto out;
	}
	for (unsigned int k = 0; k < f->sites; k++) {
		if (elfsym_vaddr_offset(elf, f->found[k].pc, &spec->sites[k].offset)) {
			snprintf(why, size, "%s: USDT probe %s:%s (its site at 0x%" PRIx64
				 ") is not in a loaded segment", path, provider, name,
				 f->found[k].pc);
			goto out;
		}
		if (resolve_args(elf, path, f, k, &spec->sites[k], why, size))
			goto out;
	}
	ret = 0;
out:
	if (ret)
		usdt_spec_free(spec);
	elf_end(elf);
	close(fd);
	free(f);
	return ret;
}

void usdt_spec_free(struct usdt_spec *spec)
{
	free(spec->sites);
	memset(spec, 0, sizeof(*spec));
}

/* ---- the module's command ----------------------------------------------- */

/* One operand as module/usdt.c reads it, and shows it back. */
static int put_arg(char *buf, size_t size, unsigned int i, const struct usdt_arg *a)
{
	int n = snprintf(buf, size, " a%u=%u%s@", i, a->size, a->is_signed ? "s" : "");

	if (n < 0 || (size_t)n >= size)
		return -1;
	buf += n;
	size -= (size_t)n;
	switch (a->kind) {
	case USDT_REG:
		n = snprintf(buf, size, "%s", a->reg);
		break;
	case USDT_IMM:
		n = snprintf(buf, size, "$%" PRId64, a->disp);
		break;
	default:
		if (a->index)
			n = snprintf(buf, size, "%" PRId64 "(%s,%s,%u)", a->disp,
				     a->reg ? a->reg : "", a->index, a->scale);
		else
			n = snprintf(buf, size, "%" PRId64 "(%s)", a->disp, a->reg);
	}
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* " a0=... a1=..." of @site, or " at=0xOFF a0=..." for a site after the first. */
static int put_site(char *buf, size_t size, const struct usdt_spec *spec,
		    unsigned int k)
{
	size_t len = 0;
	int n;

	if (k) {
		n = snprintf(buf, size, " at=0x%" PRIx64, spec->sites[k].offset);
		if (n < 0 || (size_t)n >= size)
			return -1;
		len = (size_t)n;
	}
	for (unsigned int i = 0; i < spec->nargs; i++) {
		if (put_arg(buf + len, size - len, i, &spec->sites[k].args[i]))
			return -1;
		len += strlen(buf + len);
	}
	return 0;
}

char *usdt_cmd(const char *word, char *why, size_t size)
{
	const char *arg = word + strlen("usdt:"), *name, *provider;
	char *file = NULL, *abs = NULL, *cmd = NULL, *prov = NULL, *args = NULL, *p;
	/* The module's longest site: RTR_USDT_SITE_CMD_MAX (module/dynprobes.h). */
	size_t args_size = USDT_SITES_MAX * 512, len;
	struct usdt_spec spec = { 0 };
	char label[256];

	name = strrchr(arg, ':');
	provider = name ? memrchr(arg, ':', (size_t)(name - arg)) : NULL;
	if (!provider || provider == arg || provider + 1 == name || !name[1]) {
		snprintf(why, size, "-e %s: not usdt:PATH:PROVIDER:NAME", word);
		return NULL;
	}
	file = strndup(arg, (size_t)(provider - arg));
	prov = strndup(provider + 1, (size_t)(name - provider - 1));
	name++;
	args = calloc(1, args_size);
	if (!file || !prov || !args)
		goto nomem;
	abs = elfsym_probe_path(word, file, why, size);
	if (!abs)
		goto out;
	/* The command's words are parted by spaces. */
	if (strpbrk(abs, " \t\n")) {
		snprintf(why, size, "-e %s: %s: a path with a space is not taken",
			 word, abs);
		goto out;
	}
	if (usdt_spec(abs, prov, name, &spec, why, size)) {
		char *msg = strdup(why);

		if (msg)
			snprintf(why, size, "-e %s: %s", word, msg);
		free(msg);
		goto out;
	}
	/* The event is usdt_LABEL: letters, digits and '_'. */
	snprintf(label, sizeof(label), "%s_%s", prov, name);
	for (p = label; *p; p++)
		if (!isalnum((unsigned char)*p))
			*p = '_';
	for (unsigned int k = 0; k < spec.nsites; k++) {
		len = strlen(args);
		if (put_site(args + len, args_size - len, &spec, k))
			goto nomem;
	}
	if ((spec.ref_offset ?
	     asprintf(&cmd, "s:%s:0x%" PRIx64 "@%s ref=0x%" PRIx64 "%s", abs,
		      spec.sites[0].offset, label, spec.ref_offset, args) :
	     asprintf(&cmd, "s:%s:0x%" PRIx64 "@%s%s", abs, spec.sites[0].offset,
		      label, args)) < 0) {
		cmd = NULL;
		goto nomem;
	}
	goto out;
nomem:
	snprintf(why, size, "out of memory");
out:
	usdt_spec_free(&spec);
	free(args);
	free(file);
	free(prov);
	free(abs);
	return cmd;
}
