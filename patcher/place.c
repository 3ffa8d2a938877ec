/*
 * place.c - where the new read-only space goes (see plan.h), and the
 * provisional addresses the plan used for it made real.
 */
#include "plan_internal.h"
#include "error.h"

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

/* The room after read-only PT_LOAD i: up to the next segment in the file
 * and in memory, from a 16-aligned start. */
static uint64_t room_after(const cp_image *img, size_t i, uint64_t *start_off, uint64_t *start_va)
{
	Elf64_Phdr s = phdr(img, i);
	uint64_t next_off = UINT64_MAX, next_va = UINT64_MAX, room;
	size_t k, n = phnum(img);

	if (s.p_type != PT_LOAD || s.p_flags != PF_R || s.p_filesz != s.p_memsz)
		return 0;
	*start_off = (s.p_offset + s.p_filesz + 15) & ~15ull;
	*start_va = s.p_vaddr + (*start_off - s.p_offset);
	for (k = 0; k < n; k++) {
		Elf64_Phdr o = phdr(img, k);

		if (o.p_type != PT_LOAD || k == i)
			continue;
		if (o.p_offset >= s.p_offset + s.p_filesz && o.p_offset < next_off)
			next_off = o.p_offset;
		if (o.p_vaddr >= s.p_vaddr + s.p_memsz && o.p_vaddr < next_va)
			next_va = o.p_vaddr;
	}
	if (next_off == UINT64_MAX || next_va == UINT64_MAX || next_off <= *start_off ||
	    next_va <= *start_va)
		return 0;
	room = next_off - *start_off;
	if (next_va - *start_va < room)
		room = next_va - *start_va;
	return room;
}

static cp_status place_in_gap(struct planner *pl, bool *done)
{
	struct cp_plan *p = pl->p;
	uint64_t best_room = 0, off, va, size;
	size_t i, n = phnum(pl->img);
	int best = -1;

	*done = false;
	for (i = 0; i < n; i++) {
		uint64_t room = room_after(pl->img, i, &off, &va);

		if (room >= p->seg_size && room > best_room && free_bytes(pl->img, off, p->seg_size)) {
			best = (int)i;
			best_room = room;
			p->seg_off = off;
			p->seg_vaddr = va;
		}
	}
	if (best < 0)
		return CP_OK;
	p->place = CP_PLACE_GAP;
	size = p->seg_off + p->seg_size - phdr(pl->img, (size_t)best).p_offset;
	*done = true;
	return cp_plan_add_edit(pl, CP_EDIT_WORD, phoff(pl->img) + (size_t)best * sizeof(Elf64_Phdr) +
				offsetof(Elf64_Phdr, p_filesz), &size, 8, 0, 0, "read-only PT_LOAD grows (filesz)") ||
	       cp_plan_add_edit(pl, CP_EDIT_WORD, phoff(pl->img) + (size_t)best * sizeof(Elf64_Phdr) +
				offsetof(Elf64_Phdr, p_memsz), &size, 8, 0, 0, "read-only PT_LOAD grows (memsz)")
		       ? pl->err->code : CP_OK;
}

/* A new PT_LOAD at the end of the file, in PT_NOTE's entry; the table is
 * rewritten so that the PT_LOADs stay sorted. */
static cp_status place_in_note(struct planner *pl)
{
	struct cp_plan *p = pl->p;
	size_t i, n = phnum(pl->img), o = 0, last_load = 0;
	uint64_t end = 0, align = 0x1000;
	Elf64_Phdr table[18];
	int note = -1;

	for (i = 0; i < n; i++) {
		Elf64_Phdr ph = phdr(pl->img, i);

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
			       "%s: no room for %llu new bytes: no read-only segment has that much padding "
			       "and there is no PT_NOTE entry to make a new segment of",
			       pl->img->path, (unsigned long long)p->seg_size);
	p->place = CP_PLACE_NOTE;
	p->seg_off = (pl->img->size + 15) & ~15ull;
	p->seg_vaddr = ((end + align - 1) & ~(align - 1)) + (p->seg_off % align);
	for (i = 0; i < n; i++) {
		if ((int)i != note)
			table[o++] = phdr(pl->img, i);
		if (i == last_load) {
			Elf64_Phdr ph = { PT_LOAD, PF_R, p->seg_off, p->seg_vaddr, p->seg_vaddr,
					  p->seg_size, p->seg_size, align };

			table[o++] = ph;
		}
	}
	return cp_plan_add_edit(pl, CP_EDIT_WORD, phoff(pl->img), table, (uint32_t)(n * sizeof(Elf64_Phdr)),
				0, 0, "program headers: PT_NOTE gives its entry to a new read-only PT_LOAD");
}

/* Provisional addresses become real: displacements, addends, words. */
static cp_status resolve(struct planner *pl)
{
	struct cp_plan *p = pl->p;
	size_t i;

	for (i = 0; i < p->nedits; i++) {
		struct cp_edit *e = &p->edits[i];
		uint64_t real;

		if (e->target < CP_PROVISIONAL)
			continue;
		real = p->seg_vaddr + (e->target - CP_PROVISIONAL);
		e->target = real;
		if (e->kind == CP_EDIT_DISP) {
			int64_t disp = (int64_t)(real - e->site_end);
			int32_t d32 = (int32_t)disp;

			if (disp < INT32_MIN || disp > INT32_MAX)
				return cp_fail(pl->err, CP_E_INPUT,
					       "%s: %#llx cannot reach the new space at %#llx with a 32-bit displacement",
					       pl->img->path, (unsigned long long)e->site, (unsigned long long)real);
			memcpy(e->bytes, &d32, 4);
		} else {
			memcpy(e->bytes, &real, 8);
		}
	}
	return CP_OK;
}

cp_status cp_plan_place(struct planner *pl)
{
	bool done;
	cp_status st;

	if (!pl->p->nchunks)
		return CP_OK;
	st = place_in_gap(pl, &done);
	if (!st && !done)
		st = place_in_note(pl);
	return st ? st : resolve(pl);
}
