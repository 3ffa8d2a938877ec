/*
 * place.c - where the new read-only space goes (see plan.h), and the
 * provisional addresses the plan used for it made real.
 */
#include "plan/plan_internal.h"
#include "util/error.h"

#include <assert.h>
#include <elf.h>
#include <string.h>

static Elf64_Phdr phdr(const cp_image *img, size_t i)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;

	memcpy(&eh, img->data, sizeof(eh));
	memcpy(&ph, img->data + eh.e_phoff + i * sizeof(ph), sizeof(ph));
	return ph;
}

static size_t phnum(const cp_image *img)
{
	Elf64_Ehdr eh;

	memcpy(&eh, img->data, sizeof(eh));
	return eh.e_phnum;
}

static uint64_t phoff(const cp_image *img)
{
	Elf64_Ehdr eh;

	memcpy(&eh, img->data, sizeof(eh));
	return eh.e_phoff;
}

/* No section's file bytes in [off, off+len), and all of them zero. */
static bool free_bytes(const cp_image *img, uint64_t off, uint64_t len)
{
	const uint8_t *p = cp_image_bytes(img, off, len);
	size_t i;

	if (!p)
		return false;
	for (i = 0; i < img->nsec; i++) {
		const struct cp_section *s = &img->sec[i];

		if (s->type != SHT_NOBITS && s->size && s->offset < off + len && off < s->offset + s->size)
			return false;
	}
	for (i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* The granule a segment is mapped in: its alignment, at least 4 KiB. */
static uint64_t page(const Elf64_Phdr *ph)
{
	return ph->p_align > 0x1000 && !(ph->p_align & (ph->p_align - 1)) ? ph->p_align : 0x1000;
}

/* The room after PT_LOAD i when its flags are `flags`: up to the next
 * segment in the file and in memory, from a 16-aligned start. */
static uint64_t room_after(const cp_image *img, size_t i, uint32_t flags, uint64_t *start_off,
			   uint64_t *start_va)
{
	Elf64_Phdr s = phdr(img, i);
	uint64_t next_off = UINT64_MAX, next_va = UINT64_MAX, room;
	size_t k, n = phnum(img);

	if (s.p_type != PT_LOAD || s.p_flags != flags || s.p_filesz != s.p_memsz)
		return 0;
	*start_off = (s.p_offset + s.p_filesz + 15) & ~15ull;
	*start_va = s.p_vaddr + (*start_off - s.p_offset);
	for (k = 0; k < n; k++) {
		Elf64_Phdr o = phdr(img, k);

		if (o.p_type != PT_LOAD || k == i)
			continue;
		if (o.p_offset >= s.p_offset + s.p_filesz && o.p_offset < next_off)
			next_off = o.p_offset;
		/* the loader maps the next segment from the start of its page,
		 * over whatever this one mapped there (-z noseparate-code puts
		 * RW data on the last page of the code) */
		if (o.p_vaddr >= s.p_vaddr + s.p_memsz && (o.p_vaddr & ~(page(&o) - 1)) < next_va)
			next_va = o.p_vaddr & ~(page(&o) - 1);
	}
	if (next_off == UINT64_MAX || next_va == UINT64_MAX || next_off <= *start_off ||
	    next_va <= *start_va)
		return 0;
	room = next_off - *start_off;
	if (next_va - *start_va < room)
		room = next_va - *start_va;
	return room;
}

/* Room after PT_LOAD i when it is the last segment in the file and in
 * memory and only the section-name table and the section header table
 * follow it (a segment an earlier run appended): emit writes both again
 * after the new space, so the space may take their place. flags 0: a
 * segment of any flags. */
static bool tail_room(const cp_image *img, size_t i, uint32_t flags, uint64_t *start_off, uint64_t *start_va)
{
	Elf64_Phdr s = phdr(img, i);
	Elf64_Ehdr eh;
	uint64_t end = s.p_offset + s.p_filesz;
	size_t k;

	memcpy(&eh, img->data, sizeof(eh));
	if (s.p_type != PT_LOAD || (flags && s.p_flags != flags) || s.p_filesz != s.p_memsz ||
	    eh.e_shoff < end)
		return false;
	for (k = 0; k < phnum(img); k++) {
		Elf64_Phdr o = phdr(img, k);

		if (k != i && o.p_type == PT_LOAD &&
		    (o.p_offset + o.p_filesz > end || o.p_vaddr + o.p_memsz > s.p_vaddr + s.p_memsz))
			return false;
	}
	for (k = 0; k < img->nsec; k++)
		if (img->sec[k].type != SHT_NOBITS && img->sec[k].offset + img->sec[k].size > end &&
		    (k != eh.e_shstrndx || img->sec[k].offset < end))
			return false;
	*start_off = (end + 15) & ~15ull;
	*start_va = s.p_vaddr + (*start_off - s.p_offset);
	return true;
}

/* A PT_LOAD that grows over the padding after it. */
struct growth {
	int phdr;       /* -1: none */
	uint64_t size;  /* its new filesz and memsz */
};

/* The space goes into the padding after a PT_LOAD of its own flags. */
static void place_in_gap(struct planner *pl, enum cp_space_kind kind, struct growth *g)
{
	struct cp_space *sp = &pl->p->space[kind];
	uint64_t best_room = 0, off, va;
	size_t i, n = phnum(pl->img);

	g->phdr = -1;
	for (i = 0; i < n; i++) {
		uint64_t room = room_after(pl->img, i, sp->flags, &off, &va);

		if (room >= sp->size && room > best_room && free_bytes(pl->img, off, sp->size)) {
			g->phdr = (int)i;
			best_room = room;
			sp->seg_off = off;
			sp->seg_vaddr = va;
		}
	}
	for (i = 0; i < n && g->phdr < 0; i++)
		if (tail_room(pl->img, i, sp->flags, &off, &va)) {
			g->phdr = (int)i;
			sp->seg_off = off;
			sp->seg_vaddr = va;
		}
	if (g->phdr < 0)
		return;
	sp->place = CP_PLACE_GAP;
	g->size = sp->seg_off + sp->size - phdr(pl->img, (size_t)g->phdr).p_offset;
}

/* Program header i as the plan leaves it: grown over padding. */
static Elf64_Phdr grown(const cp_image *img, size_t i, const struct growth g[CP_NSPACES])
{
	Elf64_Phdr ph = phdr(img, i);
	size_t k;

	for (k = 0; k < CP_NSPACES; k++)
		if (g[k].phdr == (int)i)
			ph.p_filesz = ph.p_memsz = g[k].size;
	return ph;
}

static const char *const grow_what[CP_NSPACES] = {
	"read-only PT_LOAD grows over its padding (filesz, memsz)",
	"executable PT_LOAD grows over its padding (filesz, memsz)",
};

static cp_status add_growths(struct planner *pl, const struct growth g[CP_NSPACES])
{
	size_t k;

	for (k = 0; k < CP_NSPACES; k++) {
		uint64_t sizes[2] = { g[k].size, g[k].size };

		if (g[k].phdr >= 0 &&
		    cp_plan_add_edit(pl, CP_EDIT_WORD, phoff(pl->img) + (size_t)g[k].phdr * sizeof(Elf64_Phdr) +
				     offsetof(Elf64_Phdr, p_filesz), sizes, 16, 0, 0, grow_what[k]))
			return pl->err->code;
	}
	return CP_OK;
}

/* A new PT_LOAD at the end of the file, in PT_NOTE's entry, for the spaces
 * no padding took (code first, then data; R+X when it holds code). The
 * table is rewritten, with the growths, so that the PT_LOADs stay sorted. */
static cp_status place_in_note(struct planner *pl, const struct growth g[CP_NSPACES])
{
	struct cp_plan *p = pl->p;
	size_t i, k, n = phnum(pl->img), o = 0, last_load = 0;
	uint64_t end = 0, align = 0x1000, off, va, total = 0;
	uint32_t flags = 0;
	Elf64_Phdr table[18];
	int note = -1;

	for (i = 0; i < n; i++) {
		Elf64_Phdr ph = grown(pl->img, i, g);

		if (ph.p_type == PT_NOTE && note < 0)
			note = (int)i;
		if (ph.p_type != PT_LOAD)
			continue;
		last_load = i;
		if (ph.p_vaddr + ph.p_memsz > end)
			end = ph.p_vaddr + ph.p_memsz;
		if (ph.p_align > align)
			align = ph.p_align;
	}
	if (note < 0 || n > sizeof(table) / sizeof(table[0]))
		return cp_fail(pl->err, CP_E_INPUT,
			       "%s: no room for %llu new bytes: no segment has that much padding "
			       "and there is no PT_NOTE entry to make a new segment of",
			       pl->img->path, (unsigned long long)cp_plan_new_bytes(p));
	off = (pl->img->size + 15) & ~15ull;
	va = ((end + align - 1) & ~(align - 1)) + (off % align);
	for (k = CP_NSPACES; k-- > 0;) { /* code first */
		struct cp_space *sp = &p->space[k];

		if (!sp->nchunks || sp->place != CP_PLACE_NONE)
			continue;
		total = (total + 15) & ~15ull;
		sp->place = CP_PLACE_NOTE;
		sp->seg_off = off + total;
		sp->seg_vaddr = va + total;
		total += sp->size;
		flags |= sp->flags;
	}
	for (i = 0; i < n; i++) {
		if ((int)i != note)
			table[o++] = grown(pl->img, i, g);
		if (i == last_load) {
			Elf64_Phdr ph = { PT_LOAD, flags, off, va, va, total, total, align };

			table[o++] = ph;
		}
	}
	return cp_plan_add_edit(pl, CP_EDIT_WORD, phoff(pl->img), table, (uint32_t)(n * sizeof(Elf64_Phdr)),
				0, 0, flags & PF_X ? "program headers: PT_NOTE gives its entry to a new R+X PT_LOAD"
						   : "program headers: PT_NOTE gives its entry to a new read-only PT_LOAD");
}

static bool has_note(const cp_image *img)
{
	size_t i;

	for (i = 0; i < phnum(img); i++)
		if (phdr(img, i).p_type == PT_NOTE)
			return true;
	return false;
}

/* Whether the PT_LOAD that maps the file's start (its headers and, with
 * -z noseparate-code, its read-only data) is executable. */
static bool headers_executable(const cp_image *img)
{
	size_t i;

	for (i = 0; i < phnum(img); i++) {
		Elf64_Phdr ph = phdr(img, i);

		if (ph.p_type == PT_LOAD && ph.p_offset == 0)
			return (ph.p_flags & PF_X) != 0;
	}
	return false;
}

/* No padding and no PT_NOTE entry left, in a file an earlier run gave a
 * segment at its tail: that segment grows for every space still unplaced,
 * after what it already holds, and becomes R+X when one holds code. Only
 * where the file maps its read-only data executable anyway (-z
 * noseparate-code), so that no data becomes executable that the linker
 * kept apart from code. Returns false when that does not apply. */
static bool place_on_tail(struct planner *pl, struct growth g[CP_NSPACES], Elf64_Phdr *entry, int *at)
{
	struct cp_plan *p = pl->p;
	uint64_t off, va, end;
	size_t i, k;
	int tail = -1;

	if (!headers_executable(pl->img))
		return false;
	for (i = 0; i < phnum(pl->img) && tail < 0; i++)
		if (tail_room(pl->img, i, 0, &off, &va))
			tail = (int)i;
	if (tail < 0)
		return false;
	*entry = phdr(pl->img, (size_t)tail);
	end = off;
	for (k = 0; k < CP_NSPACES; k++)
		if (g[k].phdr == tail && p->space[k].seg_off + p->space[k].size > end)
			end = p->space[k].seg_off + p->space[k].size;
	for (k = CP_NSPACES; k-- > 0;) { /* code first */
		struct cp_space *sp = &p->space[k];

		if (!sp->nchunks || sp->place != CP_PLACE_NONE)
			continue;
		sp->place = CP_PLACE_GAP;
		sp->seg_off = (end + 15) & ~15ull;
		sp->seg_vaddr = entry->p_vaddr + (sp->seg_off - entry->p_offset);
		end = sp->seg_off + sp->size;
		entry->p_flags |= sp->flags;
	}
	for (k = 0; k < CP_NSPACES; k++)
		if (g[k].phdr == tail)
			g[k].phdr = -1; /* the entry is written whole, below */
	entry->p_filesz = entry->p_memsz = end - entry->p_offset;
	*at = tail;
	return true;
}

/* The real address of a provisional one: at most the end of its space. */
static uint64_t real_address(const struct cp_plan *p, uint64_t t)
{
	if (t >= CP_PROVISIONAL) {
		assert(t - CP_PROVISIONAL <= p->space[CP_SPACE_DATA].size);
		return p->space[CP_SPACE_DATA].seg_vaddr + (t - CP_PROVISIONAL);
	}
	assert(t - CP_PROVISIONAL_CODE <= p->space[CP_SPACE_CODE].size);
	return p->space[CP_SPACE_CODE].seg_vaddr + (t - CP_PROVISIONAL_CODE);
}

/* Provisional addresses become real: displacements, addends, words. */
static cp_status resolve(struct planner *pl)
{
	struct cp_plan *p = pl->p;
	size_t i;

	for (i = 0; i < p->nedits; i++) {
		struct cp_edit *e = &p->edits[i];
		uint64_t real;

		if (e->target < CP_PROVISIONAL_CODE)
			continue;
		real = real_address(p, e->target);
		e->target = real;
		if (e->kind == CP_EDIT_DISP || e->kind == CP_EDIT_BRANCH) {
			if (!pl->img->arch->pcrel_put(e->bytes + e->disp_at, e->site,
						      (unsigned)(e->site_end - e->site), real))
				return cp_fail(pl->err, CP_E_INPUT,
					       "%s: %#llx cannot reach the new space at %#llx with %s",
					       pl->img->path, (unsigned long long)e->site, (unsigned long long)real,
					       pl->img->arch->reach);
		} else {
			memcpy(e->bytes, &real, 8);
		}
	}
	return CP_OK;
}

/* Each space with chunks is placed where the loader maps its bytes at
 * the addresses the plan gives them: 16-aligned, the file offset and the
 * address congruent modulo a page (validate.c holds every PT_LOAD to it),
 * a new segment past the end of the file, and apart from the other space.
 * Only asserts ask. */
#ifndef NDEBUG
static bool placed(const struct cp_plan *p, const cp_image *img)
{
	const struct cp_space *d = &p->space[CP_SPACE_DATA], *c = &p->space[CP_SPACE_CODE];
	size_t k;

	for (k = 0; k < CP_NSPACES; k++) {
		const struct cp_space *sp = &p->space[k];

		if (sp->nchunks && (sp->place == CP_PLACE_NONE || sp->seg_off % 16 ||
				    (sp->seg_vaddr - sp->seg_off) % 0x1000 ||
				    (sp->place == CP_PLACE_NOTE && sp->seg_off < img->size)))
			return false;
	}
	return !d->nchunks || !c->nchunks || d->seg_off + d->size <= c->seg_off ||
	       c->seg_off + c->size <= d->seg_off;
}
#endif

cp_status cp_plan_place(struct planner *pl)
{
	struct cp_plan *p = pl->p;
	struct growth g[CP_NSPACES];
	Elf64_Phdr tail;
	bool note = false;
	int at;
	cp_status st;
	size_t k;

	p->space[CP_SPACE_DATA].flags = PF_R;
	p->space[CP_SPACE_CODE].flags = PF_R | PF_X;
	for (k = 0; k < CP_NSPACES; k++) {
		g[k].phdr = -1;
		if (p->space[k].nchunks)
			place_in_gap(pl, (enum cp_space_kind)k, &g[k]);
		note = note || (p->space[k].nchunks && p->space[k].place == CP_PLACE_NONE);
	}
	if (note && !has_note(pl->img) && place_on_tail(pl, g, &tail, &at)) {
		st = add_growths(pl, g);
		if (!st && cp_plan_add_edit(pl, CP_EDIT_WORD, phoff(pl->img) + (size_t)at * sizeof(Elf64_Phdr),
					    &tail, sizeof(tail), 0, 0,
					    tail.p_flags & PF_X ? "program headers: the segment an earlier run appended grows, R+X"
								: "program headers: the segment an earlier run appended grows"))
			st = pl->err->code;
	} else {
		st = note ? place_in_note(pl, g) : add_growths(pl, g);
	}
	assert(st || placed(p, pl->img));
	return st ? st : resolve(pl);
}

/* The real address of provisional address t, once placed. */
uint64_t cp_plan_real_address(const struct cp_plan *p, uint64_t t)
{
	return t >= CP_PROVISIONAL_CODE ? real_address(p, t) : t;
}
