/*
 * validate.c - checks an ELF file's headers and tables before anything
 * reads them.
 *
 * The readers (elf_view.c, relocs.c, functions.c) trust offsets, counts and
 * entry sizes; everything they will walk is checked here first, together
 * with what the loader would refuse or misread (the machine, segment
 * order and alignment, tables outside the loaded bytes).
 */
#include "elf/image.h"
#include "util/error.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TABLE_ENTRIES 0xff00u /* below PN_XNUM and SHN_LORESERVE */

static const char *machine_name(unsigned m)
{
	switch (m) {
	case EM_386: return "i386";
	case EM_ARM: return "arm";
	case EM_PPC: return "ppc";
	case EM_PPC64: return "ppc64";
	case EM_S390: return "s390x";
	case EM_RISCV: return "riscv";
	case EM_MIPS: return "mips";
	default: return "an unsupported machine";
	}
}

/* [off, off+len) inside [0, size), without overflow. */
static bool in_file(uint64_t off, uint64_t len, size_t size)
{
	return off <= size && len <= size - off;
}

static cp_status check_ident(const char *path, const uint8_t *d, size_t size, cp_error *err)
{
	char names[64];

	if (size == 0)
		return cp_fail(err, CP_E_INPUT, "%s: empty file", path);
	if (size < SELFMAG || memcmp(d, ELFMAG, SELFMAG) != 0)
		return cp_fail(err, CP_E_INPUT, "%s: not an ELF file", path);
	if (size < EI_NIDENT)
		return cp_fail(err, CP_E_INPUT, "%s: truncated ELF header (%zu bytes)", path, size);
	if (d[EI_CLASS] == ELFCLASS32)
		return cp_fail(err, CP_E_INPUT, "%s: 32-bit ELF; cypatch handles %s extensions only", path,
			       cp_arch_supported(names, sizeof(names)));
	if (d[EI_CLASS] != ELFCLASS64)
		return cp_fail(err, CP_E_INPUT, "%s: invalid ELF class %u", path, d[EI_CLASS]);
	if (d[EI_DATA] != ELFDATA2LSB)
		return cp_fail(err, CP_E_INPUT, "%s: big-endian ELF; cypatch handles %s extensions only", path,
			       cp_arch_supported(names, sizeof(names)));
	if (size < sizeof(Elf64_Ehdr))
		return cp_fail(err, CP_E_INPUT, "%s: truncated ELF header (%zu bytes)", path, size);
	return CP_OK;
}

static cp_status check_header(const char *path, const Elf64_Ehdr *eh, const struct cp_arch **arch,
			      cp_error *err)
{
	char names[64];

	*arch = cp_arch_for_machine(eh->e_machine);
	if (!*arch)
		return cp_fail(err, CP_E_INPUT,
			       "%s: ELF for %s (e_machine %u); cypatch handles %s extensions only",
			       path, machine_name(eh->e_machine), eh->e_machine,
			       cp_arch_supported(names, sizeof(names)));
	if (eh->e_type != ET_DYN)
		return cp_fail(err, CP_E_INPUT,
			       "%s: not a shared object (e_type %u); extension modules are ET_DYN",
			       path, eh->e_type);
	if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum == 0 ||
	    eh->e_phnum >= MAX_TABLE_ENTRIES)
		return cp_fail(err, CP_E_INPUT, "%s: bad program header table (e_phnum %u, e_phentsize %u)",
			       path, eh->e_phnum, eh->e_phentsize);
	if (eh->e_shnum == 0)
		return cp_fail(err, CP_E_INPUT, "%s: no section headers; cypatch needs them to find the module's data",
			       path);
	if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shnum >= MAX_TABLE_ENTRIES ||
	    eh->e_shstrndx == SHN_UNDEF || eh->e_shstrndx >= eh->e_shnum)
		return cp_fail(err, CP_E_INPUT,
			       "%s: bad section header table (e_shnum %u, e_shentsize %u, e_shstrndx %u)",
			       path, eh->e_shnum, eh->e_shentsize, eh->e_shstrndx);
	return CP_OK;
}

/* What ld.so refuses (dl-load.c), refused here before anything is planned
 * around it: an alignment that is not a power of two of at least a page
 * (4 KiB, the smallest page of either machine), an address not congruent to its file
 * offset modulo it, and, as the gABI requires, PT_LOAD entries out of order
 * or sharing addresses (ld.so would map the later over the earlier; an
 * output planned from either view of those bytes would be wrong). */
static cp_status check_loads(const char *path, const Elf64_Phdr *ph, unsigned phnum,
			     const struct cp_arch *arch, cp_error *err)
{
	const uint64_t user_space = 1ull << arch->user_va_bits;
	const Elf64_Phdr *prev = NULL;
	unsigned i;

	for (i = 0; i < phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		if (ph[i].p_align < 0x1000 || (ph[i].p_align & (ph[i].p_align - 1)))
			return cp_fail(err, CP_E_INPUT, "%s: segment %u: PT_LOAD alignment %#llx is not a power of two "
				       "of at least a page", path, i, (unsigned long long)ph[i].p_align);
		if ((ph[i].p_vaddr - ph[i].p_offset) & (ph[i].p_align - 1))
			return cp_fail(err, CP_E_INPUT, "%s: segment %u: PT_LOAD address and offset disagree "
				       "modulo its alignment", path, i);
		/* ld.so cannot map past the machine's user space */
		if (ph[i].p_memsz > user_space || ph[i].p_vaddr > user_space - ph[i].p_memsz)
			return cp_fail(err, CP_E_INPUT, "%s: segment %u: PT_LOAD ends past the address space "
				       "(%#llx bytes at %#llx)", path, i, (unsigned long long)ph[i].p_memsz,
				       (unsigned long long)ph[i].p_vaddr);
		if (prev && ph[i].p_vaddr < prev->p_vaddr + prev->p_memsz)
			return cp_fail(err, CP_E_INPUT, "%s: segments %u and %u: PT_LOAD entries overlap or are "
				       "out of order", path, (unsigned)(prev - ph), i);
		prev = &ph[i];
	}
	return CP_OK;
}

static cp_status check_segments(const char *path, const uint8_t *d, size_t size,
				const Elf64_Ehdr *eh, const struct cp_arch *arch, cp_error *err)
{
	const Elf64_Phdr *ph;
	unsigned i;

	if (!in_file(eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(*ph), size) ||
	    eh->e_phoff % 8)
		return cp_fail(err, CP_E_INPUT, "%s: truncated: program headers lie outside the file", path);
	ph = (const Elf64_Phdr *)(d + eh->e_phoff);
	for (i = 0; i < eh->e_phnum; i++) {
		if (!in_file(ph[i].p_offset, ph[i].p_filesz, size))
			return cp_fail(err, CP_E_INPUT, "%s: truncated: segment %u lies outside the file", path, i);
		if (ph[i].p_filesz > ph[i].p_memsz)
			return cp_fail(err, CP_E_INPUT, "%s: segment %u has p_filesz > p_memsz", path, i);
	}
	return check_loads(path, ph, eh->e_phnum, arch, err);
}

static bool name_ok(const uint8_t *strtab, uint64_t strsize, uint32_t name)
{
	return name < strsize && memchr(strtab + name, 0, strsize - name) != NULL;
}

/* Symbol tables: entry size, string table link and every name inside it. */
static cp_status check_symtab(const char *path, const uint8_t *d, const Elf64_Shdr *sh,
			      unsigned shnum, unsigned i, cp_error *err)
{
	const Elf64_Shdr *s = &sh[i], *str;
	const Elf64_Sym *sym;
	uint64_t n, k;

	if (s->sh_entsize != sizeof(Elf64_Sym) || s->sh_size % sizeof(Elf64_Sym) ||
	    s->sh_offset % 8)
		return cp_fail(err, CP_E_INPUT, "%s: section %u: bad symbol table entry size", path, i);
	if (s->sh_link == 0 || s->sh_link >= shnum || sh[s->sh_link].sh_type != SHT_STRTAB)
		return cp_fail(err, CP_E_INPUT, "%s: section %u: symbol table without a string table", path, i);
	str = &sh[s->sh_link];
	sym = (const Elf64_Sym *)(d + s->sh_offset);
	n = s->sh_size / sizeof(Elf64_Sym);
	for (k = 0; k < n; k++)
		if (!name_ok(d + str->sh_offset, str->sh_size, sym[k].st_name))
			return cp_fail(err, CP_E_INPUT, "%s: section %u: symbol %llu has a bad name",
				       path, i, (unsigned long long)k);
	return CP_OK;
}

struct extent {
	uint64_t off, end;
	unsigned index;
};

static int by_offset(const void *a, const void *b)
{
	const struct extent *x = a, *y = b;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return x->index < y->index ? -1 : 1;
}

/* Two sections sharing file bytes would let an edit of one corrupt the
 * other; linkers never emit that. */
static cp_status check_overlap(const char *path, const Elf64_Shdr *sh, unsigned shnum, cp_error *err)
{
	struct extent *e = malloc(shnum * sizeof(*e));
	unsigned i, n = 0;
	cp_status st = CP_OK;

	if (!e)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", path);
	for (i = 1; i < shnum; i++)
		if (sh[i].sh_type != SHT_NOBITS && sh[i].sh_size)
			e[n++] = (struct extent){ sh[i].sh_offset, sh[i].sh_offset + sh[i].sh_size, i };
	qsort(e, n, sizeof(*e), by_offset);
	for (i = 1; i < n && !st; i++)
		if (e[i].off < e[i - 1].end)
			st = cp_fail(err, CP_E_INPUT, "%s: sections %u and %u overlap in the file", path,
				     e[i - 1].index, e[i].index);
	free(e);
	return st;
}

/* Whether [va, va+len) lies in one PT_LOAD's file bytes. */
static bool va_loaded(const uint8_t *d, const Elf64_Ehdr *eh, uint64_t va, uint64_t len)
{
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(d + eh->e_phoff);
	unsigned i;

	for (i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && va >= ph[i].p_vaddr &&
		    va - ph[i].p_vaddr <= ph[i].p_filesz && len <= ph[i].p_filesz - (va - ph[i].p_vaddr))
			return true;
	return false;
}

/* Whether an allocated section lies where a PT_LOAD maps it: its bytes at
 * the same distance from the segment's start in the file and in memory
 * (NOBITS: inside the segment's memory). The scan reads code and data by
 * address; an allocated section no segment maps (a PT_LOAD retyped) would
 * be read from bytes ld.so never maps. TLS NOBITS (.tbss) takes no room in
 * its segment and may run past its end. */
static bool section_loaded(const uint8_t *d, const Elf64_Ehdr *eh, const Elf64_Shdr *s)
{
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(d + eh->e_phoff);
	bool nobits = s->sh_type == SHT_NOBITS;
	unsigned i;

	if (!(s->sh_flags & SHF_ALLOC) || s->sh_size == 0 || (nobits && (s->sh_flags & SHF_TLS)))
		return true;
	for (i = 0; i < eh->e_phnum; i++) {
		uint64_t at = s->sh_addr - ph[i].p_vaddr, room = nobits ? ph[i].p_memsz : ph[i].p_filesz;

		if (ph[i].p_type != PT_LOAD || s->sh_addr < ph[i].p_vaddr || at > room || s->sh_size > room - at)
			continue;
		if (nobits || s->sh_offset - ph[i].p_offset == at)
			return true;
	}
	return false;
}

static const char *dyn_tag_name(int64_t tag)
{
	switch (tag) {
	case DT_HASH: return "DT_HASH";
	case DT_GNU_HASH: return "DT_GNU_HASH";
	case DT_STRTAB: return "DT_STRTAB";
	case DT_SYMTAB: return "DT_SYMTAB";
	case DT_RELA: return "DT_RELA";
	case DT_JMPREL: return "DT_JMPREL";
	case DT_VERSYM: return "DT_VERSYM";
	case DT_VERNEED: return "DT_VERNEED";
	default: return NULL;
	}
}

/* The tables the dynamic section points at (which the loader follows) must lie in the file's loaded bytes; a bad pointer otherwise
 * surfaces later as a misleading "no PyInit_" or worse. */
static cp_status check_dynamic(const char *path, const uint8_t *d, const Elf64_Ehdr *eh,
			       const Elf64_Shdr *s, cp_error *err)
{
	const Elf64_Dyn *dyn = (const Elf64_Dyn *)(d + s->sh_offset);
	uint64_t n = s->sh_size / sizeof(*dyn), k, strsz = 0;

	for (k = 0; k < n && dyn[k].d_tag != DT_NULL; k++)
		if (dyn[k].d_tag == DT_STRSZ)
			strsz = dyn[k].d_un.d_val;
	for (k = 0; k < n && dyn[k].d_tag != DT_NULL; k++) {
		const char *name = dyn_tag_name(dyn[k].d_tag);
		uint64_t len = dyn[k].d_tag == DT_STRTAB ? strsz : 1;

		if (name && !va_loaded(d, eh, dyn[k].d_un.d_ptr, len))
			return cp_fail(err, CP_E_INPUT, "%s: dynamic entry %s (%#llx) points outside the loaded segments",
				       path, name, (unsigned long long)dyn[k].d_un.d_ptr);
	}
	return CP_OK;
}

/* Section 0 is SHT_NULL, all zero (gABI; extended numbering, which would
 * put counts in its sh_size and sh_link, is refused by check_header). The
 * loops below start at 1 and trust that: any other header 0 is refused. */
static cp_status check_null_section(const char *path, const Elf64_Shdr *sh, cp_error *err)
{
	static const Elf64_Shdr zero;

	if (memcmp(sh, &zero, sizeof(zero)) != 0)
		return cp_fail(err, CP_E_INPUT, "%s: section 0 is not the null section (type %u, offset %#llx, "
			       "size %#llx)", path, sh->sh_type, (unsigned long long)sh->sh_offset,
			       (unsigned long long)sh->sh_size);
	return CP_OK;
}

static cp_status check_sections(const char *path, const uint8_t *d, size_t size,
				const Elf64_Ehdr *eh, cp_error *err)
{
	const Elf64_Shdr *sh, *shstr;
	unsigned i;
	cp_status st;

	if (!in_file(eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(*sh), size) || eh->e_shoff % 8)
		return cp_fail(err, CP_E_INPUT, "%s: truncated: section headers lie outside the file", path);
	sh = (const Elf64_Shdr *)(d + eh->e_shoff);
	st = check_null_section(path, sh, err);
	if (st)
		return st;
	for (i = 1; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_NOBITS && !in_file(sh[i].sh_offset, sh[i].sh_size, size))
			return cp_fail(err, CP_E_INPUT,
				       "%s: section %u lies outside the file (offset %#llx, size %#llx; the file has %zu bytes)",
				       path, i, (unsigned long long)sh[i].sh_offset,
				       (unsigned long long)sh[i].sh_size, size);
		if (sh[i].sh_addralign > 1 && (sh[i].sh_addralign & (sh[i].sh_addralign - 1)))
			return cp_fail(err, CP_E_INPUT, "%s: section %u: alignment is not a power of two", path, i);
	}
	st = check_overlap(path, sh, eh->e_shnum, err);
	if (st)
		return st;
	shstr = &sh[eh->e_shstrndx];
	if (shstr->sh_type != SHT_STRTAB || shstr->sh_size == 0)
		return cp_fail(err, CP_E_INPUT, "%s: section name table is not a string table", path);
	for (i = 0; i < eh->e_shnum; i++) {
		if (!name_ok(d + shstr->sh_offset, shstr->sh_size, sh[i].sh_name))
			return cp_fail(err, CP_E_INPUT, "%s: section %u has a bad name", path, i);
		if (!section_loaded(d, eh, &sh[i]))
			return cp_fail(err, CP_E_INPUT, "%s: section %u (%s at %#llx) lies in no PT_LOAD segment",
				       path, i, (const char *)d + shstr->sh_offset + sh[i].sh_name,
				       (unsigned long long)sh[i].sh_addr);
		if (sh[i].sh_type == SHT_SYMTAB || sh[i].sh_type == SHT_DYNSYM) {
			st = check_symtab(path, d, sh, eh->e_shnum, i, err);
			if (st)
				return st;
		}
		if (sh[i].sh_type == SHT_DYNAMIC &&
		    (sh[i].sh_entsize != sizeof(Elf64_Dyn) || sh[i].sh_size % sizeof(Elf64_Dyn) ||
		     sh[i].sh_offset % 8))
			return cp_fail(err, CP_E_INPUT, "%s: section %u: bad dynamic table", path, i);
		if (sh[i].sh_type == SHT_DYNAMIC) {
			st = check_dynamic(path, d, eh, &sh[i], err);
			if (st)
				return st;
		}
	}
	return CP_OK;
}

cp_status cp_validate_elf(const char *path, const uint8_t *d, size_t size, const struct cp_arch **arch,
			  cp_error *err)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)d;
	cp_status st;

	st = check_ident(path, d, size, err);
	if (!st)
		st = check_header(path, eh, arch, err);
	if (!st)
		st = check_segments(path, d, size, eh, *arch, err);
	if (!st)
		st = check_sections(path, d, size, eh, err);
	return st;
}
