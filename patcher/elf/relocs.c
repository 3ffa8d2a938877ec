/*
 * relocs.c - dynamic relocations, .dynsym names, and the GOT and PLT maps.
 *
 * Read with <elf.h> types; what a relocation type means is the
 * architecture's (img->arch->reloc_kind). Every read copies through memcpy from a range checked against the file.
 */
#include "elf/image.h"
#include "util/error.h"
#include "util/sort.h"

#include <elf.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifndef SHT_RELR
#define SHT_RELR 19
#endif

static cp_status oom(const cp_image *img, cp_error *err)
{
	return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
}

static cp_status read_dynnames(cp_image *img, cp_error *err)
{
	const struct cp_section *dynsym = NULL, *str;
	size_t i, n;

	for (i = 0; i < img->nsec; i++)
		if (img->sec[i].type == SHT_DYNSYM)
			dynsym = &img->sec[i];
	if (!dynsym)
		return CP_OK;
	if (dynsym->link >= img->nsec)
		return cp_fail(err, CP_E_INPUT, "%s: .dynsym links to no string table", img->path);
	str = &img->sec[dynsym->link];
	n = dynsym->size / sizeof(Elf64_Sym);
	img->dynnames = calloc(n ? n : 1, sizeof(char *));
	if (!img->dynnames)
		return oom(img, err);
	for (i = 0; i < n; i++) {
		const uint8_t *p = cp_image_bytes(img, dynsym->offset + i * sizeof(Elf64_Sym),
						  sizeof(Elf64_Sym));
		Elf64_Sym sym;

		if (!p)
			return cp_fail(err, CP_E_INPUT, "%s: .dynsym lies outside the file", img->path);
		memcpy(&sym, p, sizeof(sym));
		if (sym.st_name >= str->size ||
		    !memchr(img->data + str->offset + sym.st_name, 0, str->size - sym.st_name))
			return cp_fail(err, CP_E_INPUT, "%s: .dynsym entry %zu has a bad name", img->path, i);
		img->dynnames[i] = (char *)(img->data + str->offset + sym.st_name);
	}
	img->ndynnames = n;
	return CP_OK;
}

static cp_status push_reloc(cp_image *img, size_t *cap, uint64_t off, uint32_t type,
			    uint32_t sym, int64_t addend, uint64_t entry_off, cp_error *err)
{
	if (CP_GROW(img->rel, *cap, img->nrel + 1))
		return oom(img, err);
	img->rel[img->nrel].entry_off = entry_off;
	img->rel[img->nrel].offset = off;
	img->rel[img->nrel].type = type;
	img->rel[img->nrel].kind = img->arch->reloc_kind(type);
	img->rel[img->nrel].sym = sym;
	img->rel[img->nrel].addend = addend;
	img->nrel++;
	return CP_OK;
}

/* The PT_LOAD, from index `from` on, whose memory (or, file_backed, whose
 * file bytes) hold [va, va+8); img->nseg when none does. validate.c has
 * the PT_LOADs ascending without overlap: at most one holds it. */
static size_t load_holding(const cp_image *img, size_t from, uint64_t va, bool file_backed)
{
	size_t i;

	for (i = from; i < img->nseg; i++) {
		const struct cp_segment *g = &img->seg[i];
		uint64_t room = file_backed ? g->filesz : g->memsz;

		if (g->type == PT_LOAD && va >= g->vaddr && room >= 8 && va - g->vaddr <= room - 8)
			return i;
	}
	return img->nseg;
}

/* Whether a relative relocation's target lies inside the image's loaded
 * span (from the lowest PT_LOAD to the end of the highest, that end
 * included: a pointer one past the last object). Outside it, the word
 * points into whatever ld.so maps beside the image: a module that works so
 * works by chance, and a patch that adds a segment changes that chance. */
static bool points_into_image(const cp_image *img, uint64_t target)
{
	const struct cp_segment *first = NULL, *last = NULL;
	size_t i;

	/* validate.c has the PT_LOADs ascending, without overlap, each inside
	 * the address space: the first starts the span, the last ends it */
	for (i = 0; i < img->nseg; i++)
		if (img->seg[i].type == PT_LOAD) {
			first = first ? first : &img->seg[i];
			last = &img->seg[i];
		}
	return first && target >= first->vaddr && target - first->vaddr <= last->vaddr + last->memsz - first->vaddr;
}

static cp_status relative_ok(const cp_image *img, const struct cp_section *s, uint64_t where, uint64_t target,
			     cp_error *err)
{
	if (points_into_image(img, target))
		return CP_OK;
	return cp_fail(err, CP_E_INPUT,
		       "%s: %s: the relative relocation at %#llx points at %#llx, outside the loaded segments",
		       img->path, s->name, (unsigned long long)where, (unsigned long long)target);
}

/* A dynamic relocation ld.so applies as the scan reads it: at a place it
 * maps (elsewhere it writes into whatever lies there, and a patch that
 * adds a segment changes what does), and a symbol binding without an
 * addend (lazy binding ignores it, eager binding adds it: the function
 * called would depend on LD_BIND_NOW). */
static cp_status dynamic_reloc_ok(const cp_image *img, const struct cp_section *s, const Elf64_Rela *r,
				  cp_error *err)
{
	enum cp_reloc_kind kind = img->arch->reloc_kind((uint32_t)ELF64_R_TYPE(r->r_info));

	if (!(s->flags & SHF_ALLOC))
		return CP_OK;
	if (load_holding(img, 0, r->r_offset, false) == img->nseg)
		return cp_fail(err, CP_E_INPUT, "%s: %s: a relocation writes at %#llx, outside the loaded segments",
			       img->path, s->name, (unsigned long long)r->r_offset);
	if ((kind == CP_RELOC_JUMP_SLOT || kind == CP_RELOC_GLOB_DAT) && r->r_addend)
		return cp_fail(err, CP_E_INPUT, "%s: %s: the symbol binding at %#llx has an addend (%#llx)", img->path,
			       s->name, (unsigned long long)r->r_offset, (unsigned long long)r->r_addend);
	if (kind == CP_RELOC_RELATIVE)
		return relative_ok(img, s, r->r_offset, (uint64_t)r->r_addend, err);
	return CP_OK;
}

static cp_status read_rela(cp_image *img, const struct cp_section *s, size_t *cap, cp_error *err)
{
	size_t i, n = s->size / sizeof(Elf64_Rela);
	cp_status st;

	if (s->entsize != sizeof(Elf64_Rela))
		return cp_fail(err, CP_E_INPUT, "%s: %s: bad relocation entry size", img->path, s->name);
	for (i = 0; i < n; i++) {
		const uint8_t *p = cp_image_bytes(img, s->offset + i * sizeof(Elf64_Rela),
						  sizeof(Elf64_Rela));
		Elf64_Rela r;

		if (!p)
			return cp_fail(err, CP_E_INPUT, "%s: %s lies outside the file", img->path, s->name);
		memcpy(&r, p, sizeof(r));
		st = dynamic_reloc_ok(img, s, &r, err);
		if (!st)
			st = push_reloc(img, cap, r.r_offset, (uint32_t)ELF64_R_TYPE(r.r_info),
				(uint32_t)ELF64_R_SYM(r.r_info), r.r_addend,
				s->offset + i * sizeof(Elf64_Rela), err);
		if (st)
			return st;
	}
	return CP_OK;
}

/* Where the next RELR place may lie: above `next`, and in segment `seg` or
 * a later one (places ascend, and so do the segments). Kept across RELR
 * sections, so that several of them over the same bytes stay bounded. */
struct relr_cursor {
	uint64_t next;
	size_t seg;
};

static bool relr_writable(const cp_image *img, struct relr_cursor *c, uint64_t where)
{
	size_t i = load_holding(img, c->seg, where, true);

	if (i == img->nseg || !(img->seg[i].flags & PF_W))
		return false;
	c->seg = i;
	return true;
}

/* RELR (-z pack-relative-relocs): relative relocations whose addend is the
 * word already stored at the place. ld.so writes each place, so it must lie
 * inside the file-backed bytes of a writable PT_LOAD segment, and RELR
 * encodes ascending addresses, so each place must lie above the one before.
 * Together these bound the relocations by the file's size: a bitmap word of
 * all ones no longer stands for 63 relocations wherever it points. */
static cp_status push_relr(cp_image *img, const struct cp_section *s, size_t *cap,
			   uint64_t where, struct relr_cursor *c, cp_error *err)
{
	const uint8_t *p;
	uint64_t v = 0;

	if (where < c->next)
		return cp_fail(err, CP_E_INPUT,
			       "%s: %s: the relocation at 0x%llx is not above the one before it",
			       img->path, s->name, (unsigned long long)where);
	if (!relr_writable(img, c, where))
		return cp_fail(err, CP_E_INPUT,
			       "%s: %s: a relocation at 0x%llx lies outside the writable segments",
			       img->path, s->name, (unsigned long long)where);
	c->next = where + 1;
	/* the word ld.so adds the base to: in the segment's file bytes
	 * (relr_writable), whether or not a section covers them */
	p = cp_image_bytes(img, img->seg[c->seg].offset + (where - img->seg[c->seg].vaddr), 8);
	if (p)
		memcpy(&v, p, 8);
	return push_reloc(img, cap, where, img->arch->reloc_relative, 0, (int64_t)v, 0, err);
}

static cp_status read_relr_places(cp_image *img, const struct cp_section *s, size_t *cap,
				  struct relr_cursor *c, cp_error *err)
{
	size_t i, n = s->size / 8;
	uint64_t base = 0;
	cp_status st;

	for (i = 0; i < n; i++) {
		const uint8_t *p = cp_image_bytes(img, s->offset + i * 8, 8);
		uint64_t e;
		int bit;

		if (!p)
			return cp_fail(err, CP_E_INPUT, "%s: %s lies outside the file", img->path, s->name);
		memcpy(&e, p, 8);
		if ((e & 1) == 0) {
			st = push_relr(img, s, cap, e, c, err);
			if (st)
				return st;
			base = e + 8;
			continue;
		}
		for (bit = 1; bit < 64; bit++) {
			if ((e >> bit) & 1) {
				st = push_relr(img, s, cap, base + (uint64_t)(bit - 1) * 8, c, err);
				if (st)
					return st;
			}
		}
		base += 63 * 8;
	}
	return CP_OK;
}

/* The section's places first (a bitmap that runs out of the writable
 * segment is named as such), then the words they hold as targets. */
static cp_status read_relr(cp_image *img, const struct cp_section *s, size_t *cap,
			   struct relr_cursor *c, cp_error *err)
{
	size_t i, first = img->nrel;
	cp_status st = read_relr_places(img, s, cap, c, err);

	for (i = first; !st && i < img->nrel; i++)
		st = relative_ok(img, s, img->rel[i].offset, (uint64_t)img->rel[i].addend, err);
	return st;
}

int cp_import_slot_cmp(const void *a, const void *b)
{
	const struct cp_import_slot *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static cp_status build_got(cp_image *img, cp_error *err)
{
	size_t i, cap = 0;

	for (i = 0; i < img->nrel; i++) {
		const struct cp_reloc *r = &img->rel[i];

		if (r->kind != CP_RELOC_JUMP_SLOT && r->kind != CP_RELOC_GLOB_DAT)
			continue;
		if (r->sym == 0 || r->sym >= img->ndynnames)
			continue;
		if (CP_GROW(img->got, cap, img->ngot + 1))
			return oom(img, err);
		img->got[img->ngot].addr = r->offset;
		img->got[img->ngot].name = img->dynnames[r->sym];
		img->ngot++;
	}
	if (img->ngot)
		qsort(img->got, img->ngot, sizeof(*img->got), cp_import_slot_cmp);
	/* ld.so writes each; the last wins, and which name the slot holds
	 * depends on the order of calls: no reading of the code could say */
	for (i = 1; i < img->ngot; i++)
		if (img->got[i].addr == img->got[i - 1].addr)
			return cp_fail(err, CP_E_INPUT, "%s: two relocations bind the GOT slot at %#llx (%s and %s)",
				       img->path, (unsigned long long)img->got[i].addr, img->got[i - 1].name,
				       img->got[i].name);
	return CP_OK;
}

/* The code walk knows the PLT by its sections' names (.plt, .plt.sec,
 * .plt.got) and walks every other executable section as the module's
 * code. A lazily bound slot holds, until its first call, the address of
 * its PLT entry's second half: that address must lie in a .plt section,
 * or the PLT would be walked (and patched) as code. */
static cp_status plt_where_named(const cp_image *img, cp_error *err)
{
	size_t i;

	for (i = 0; i < img->nrel; i++) {
		const struct cp_reloc *r = &img->rel[i];
		const uint8_t *p = r->kind == CP_RELOC_JUMP_SLOT ? cp_image_va_bytes(img, r->offset, 8) : NULL;
		const struct cp_section *s;
		uint64_t lazy;

		if (!p)
			continue;
		memcpy(&lazy, p, 8);
		s = lazy ? cp_image_section_at(img, lazy) : NULL;
		if (lazy && (!s || !cp_section_is_code(s) || strncmp(s->name, ".plt", 4) != 0))
			return cp_fail(err, CP_E_INPUT, "%s: the PLT entry at %#llx (slot %#llx) lies in no .plt section",
				       img->path, (unsigned long long)lazy, (unsigned long long)r->offset);
	}
	return CP_OK;
}

/* The entry that code calls starts at the section's entry granularity;
 * what a jump through a GOT slot looks like is the architecture's. */
static cp_status scan_plt_section(cp_image *img, const struct cp_section *s, size_t *cap,
				  cp_error *err)
{
	uint64_t gran = s->entsize ? s->entsize : 16, pos, slot;
	const uint8_t *d = cp_image_bytes(img, s->offset, s->size);
	unsigned len;

	if (!d)
		return CP_OK;
	for (pos = 0; pos < s->size; pos += img->arch->plt_step) {
		const char *name;

		if (!img->arch->plt_jump(d + pos, s->size - pos, s->addr + pos, &slot, &len))
			continue;
		name = cp_image_got_name(img, slot);
		if (!name)
			continue;
		if (CP_GROW(img->plt, *cap, img->nplt + 1))
			return oom(img, err);
		img->plt[img->nplt].addr = s->addr + (pos / gran) * gran;
		img->plt[img->nplt].name = name;
		img->nplt++;
		pos += len - img->arch->plt_step;
	}
	return CP_OK;
}

cp_status cp_relocs_read(cp_image *img, cp_error *err)
{
	size_t i, cap = 0, pcap = 0;
	struct relr_cursor relr = {0, 0};
	cp_status st = read_dynnames(img, err);

	for (i = 0; !st && i < img->nsec; i++) {
		if (img->sec[i].type == SHT_RELA)
			st = read_rela(img, &img->sec[i], &cap, err);
		else if (img->sec[i].type == SHT_RELR)
			st = read_relr(img, &img->sec[i], &cap, &relr, err);
	}
	if (!st)
		st = build_got(img, err);
	if (!st)
		st = plt_where_named(img, err);
	for (i = 0; !st && i < img->nsec; i++)
		if (strncmp(img->sec[i].name, ".plt", 4) == 0 && cp_section_is_code(&img->sec[i]))
			st = scan_plt_section(img, &img->sec[i], &pcap, err);
	if (!st && img->nplt)
		qsort(img->plt, img->nplt, sizeof(*img->plt), cp_import_slot_cmp);
	return st;
}

uint64_t cp_image_relative_at(const cp_image *img, uint64_t va)
{
	size_t i;

	for (i = 0; i < img->nrel; i++)
		if (img->rel[i].offset == va && img->rel[i].kind == CP_RELOC_RELATIVE)
			return (uint64_t)img->rel[i].addend;
	return 0;
}

struct cp_reloc_at *cp_image_relatives_by_addend(const cp_image *img, size_t *n)
{
	struct cp_reloc_at *v = malloc((img->nrel + 1) * sizeof(*v));
	size_t i;

	*n = 0;
	if (!v)
		return NULL;
	for (i = 0; i < img->nrel; i++)
		if (img->rel[i].kind == CP_RELOC_RELATIVE)
			v[(*n)++] = (struct cp_reloc_at){ (uint64_t)img->rel[i].addend, i };
	/* stable: equal addends keep the image's order */
	if (!cp_sort_by_key(v, *n, sizeof(*v), offsetof(struct cp_reloc_at, addend))) {
		free(v);
		*n = 0;
		return NULL;
	}
	return v;
}
