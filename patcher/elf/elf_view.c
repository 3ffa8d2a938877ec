/*
 * elf_view.c - sections, segments and symbols, read from the mapped file
 * with <elf.h> types.
 *
 * validate.c has checked every table read here (inside the file, entry
 * sizes, names NUL-terminated inside their string tables), so this file
 * only copies. LIEF 0.9's C API did this job before 0.1.0's performance
 * pass; it copies every section's and segment's bytes and computes their
 * entropy, 8 s and 2.9 GB for a 1 GB module (docs/performance.md). It stays
 * as the test suite's independent reader (tests/unit/lief_crosscheck.c).
 */
#include "elf/image.h"
#include "util/error.h"
#include "util/sort.h"

#include <elf.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const Elf64_Ehdr *ehdr(const cp_image *img)
{
	return (const Elf64_Ehdr *)img->data;
}

static const Elf64_Shdr *shdrs(const cp_image *img)
{
	return (const Elf64_Shdr *)(img->data + ehdr(img)->e_shoff);
}

static cp_status read_sections(cp_image *img, cp_error *err)
{
	const Elf64_Ehdr *eh = ehdr(img);
	const Elf64_Shdr *sh = shdrs(img);
	const char *names = (const char *)img->data + sh[eh->e_shstrndx].sh_offset;
	size_t i, n = eh->e_shnum;

	img->sec = calloc(n, sizeof(*img->sec));
	if (!img->sec)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	for (i = 0; i < n; i++) {
		struct cp_section *d = &img->sec[i];

		d->name = names + sh[i].sh_name;
		d->type = sh[i].sh_type;
		d->flags = sh[i].sh_flags;
		d->addr = sh[i].sh_addr;
		d->offset = sh[i].sh_offset;
		d->size = sh[i].sh_size;
		d->entsize = sh[i].sh_entsize;
		d->link = sh[i].sh_link;
	}
	img->nsec = n;
	return CP_OK;
}

static int by_addr(const void *a, const void *b)
{
	const struct cp_mapped_section *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->sec < y->sec ? -1 : x->sec > y->sec;
}

/* The index cp_image_section_at searches: lookups by address are made for
 * every operand and relocation the scan reads. */
static cp_status index_sections(cp_image *img, cp_error *err)
{
	size_t i, n = 0;
	uint64_t reach = 0;

	img->mapped = calloc(img->nsec ? img->nsec : 1, sizeof(*img->mapped));
	if (!img->mapped)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	for (i = 0; i < img->nsec; i++)
		if (cp_section_is_mapped(&img->sec[i]) && img->sec[i].size)
			img->mapped[n++] = (struct cp_mapped_section){ img->sec[i].addr, img->sec[i].size, 0, i };
	qsort(img->mapped, n, sizeof(*img->mapped), by_addr);
	for (i = 0; i < n; i++) {
		const struct cp_mapped_section *m = &img->mapped[i];
		/* validate.c does not bound a section's addresses: its last may be
		 * the last of the address space (size is not 0 here) */
		uint64_t last = m->size - 1 > UINT64_MAX - m->addr ? UINT64_MAX : m->addr + (m->size - 1);

		reach = last > reach ? last : reach;
		img->mapped[i].reach = reach;
	}
	img->nmapped = n;
	return CP_OK;
}

static cp_status read_segments(cp_image *img, cp_error *err)
{
	const Elf64_Ehdr *eh = ehdr(img);
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(img->data + eh->e_phoff);
	size_t i, n = eh->e_phnum;

	img->seg = calloc(n, sizeof(*img->seg));
	if (!img->seg)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	for (i = 0; i < n; i++)
		img->seg[i] = (struct cp_segment){ ph[i].p_type, ph[i].p_flags, ph[i].p_offset,
						   ph[i].p_vaddr, ph[i].p_filesz, ph[i].p_memsz,
						   ph[i].p_align };
	img->nseg = n;
	return CP_OK;
}

/* The named symbols of every SHT_SYMTAB and SHT_DYNSYM section. */
/* The ARM ELF mapping symbols ($x, $d, $x.<n>: code or data starts here)
 * name no function; read as one, "$x" would stand for the function
 * beside it. */
static bool is_mapping_symbol(const char *name, unsigned char info)
{
	return ELF64_ST_TYPE(info) == STT_NOTYPE && name[0] == '$' && (name[1] == 'x' || name[1] == 'd') &&
	       (name[2] == '\0' || name[2] == '.');
}

static cp_status read_symbols(cp_image *img, cp_error *err)
{
	const Elf64_Shdr *sh = shdrs(img);
	size_t i, k, total = 0;

	for (i = 0; i < img->nsec; i++)
		if (sh[i].sh_type == SHT_SYMTAB || sh[i].sh_type == SHT_DYNSYM)
			total += sh[i].sh_size / sizeof(Elf64_Sym);
	img->sym = calloc(total ? total : 1, sizeof(*img->sym));
	if (!img->sym)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	for (i = 0; i < img->nsec; i++) {
		const Elf64_Sym *s;
		const char *str;

		/* sh_link is validated for symbol tables only (the fuzzer found
		 * this read of another section's link out of bounds) */
		if (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM)
			continue;
		s = (const Elf64_Sym *)(img->data + sh[i].sh_offset);
		str = (const char *)img->data + sh[sh[i].sh_link].sh_offset;
		for (k = 0; k < sh[i].sh_size / sizeof(*s); k++) {
			struct cp_symbol *d = &img->sym[img->nsym];

			if (!str[s[k].st_name] || is_mapping_symbol(str + s[k].st_name, s[k].st_info))
				continue;
			d->name = str + s[k].st_name;
			d->value = s[k].st_value;
			d->size = s[k].st_size;
			d->type = ELF64_ST_TYPE(s[k].st_info);
			d->dynamic = sh[i].sh_type == SHT_DYNSYM;
			d->defined = s[k].st_shndx != SHN_UNDEF;
			img->nsym++;
		}
	}
	/* by value, symbols of one value in table order (stable) */
	if (!cp_sort_by_key(img->sym, img->nsym, sizeof(*img->sym), offsetof(struct cp_symbol, value)))
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	return CP_OK;
}

cp_status cp_elf_read(cp_image *img, cp_error *err)
{
	cp_status st = read_sections(img, err);

	if (!st)
		st = index_sections(img, err);
	if (!st)
		st = read_segments(img, err);
	if (!st)
		st = read_symbols(img, err);
	return st;
}
