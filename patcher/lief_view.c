/*
 * lief_view.c - sections, segments and symbols through LIEF's C API.
 *
 * This is the only file that calls LIEF (its C API is gone from LIEF 2.0, so
 * a port touches this file alone). LIEF parses the file again from its path;
 * validate.c has already checked what it will walk.
 */
/* LIEF's C header types.h declares `typedef int bool` for C, which clashes
 * with <stdbool.h> and does not match the one-byte C++ bool that libLIEF was
 * compiled with. Skipping it leaves the structures' bool as C's _Bool, the
 * layout the library really uses. */
#define LIEF_C_TYPES_H_
#include <stdbool.h>
#include <stdint.h>
#include <LIEF/ELF.h>

#include "image.h"
#include "error.h"
#include <stdlib.h>
#include <string.h>

static size_t count(void **list)
{
	size_t n = 0;

	while (list && list[n])
		n++;
	return n;
}

static cp_status copy_sections(cp_image *img, Elf_Binary_t *b, cp_error *err)
{
	size_t i, n = count((void **)b->sections);

	img->sec = calloc(n ? n : 1, sizeof(*img->sec));
	if (!img->sec)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	for (i = 0; i < n; i++) {
		const Elf_Section_t *s = b->sections[i];
		struct cp_section *d = &img->sec[i];

		d->name = cp_image_intern(img, s->name ? s->name : "");
		if (!d->name)
			return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
		d->type = (uint32_t)s->type;
		d->flags = s->flags;
		d->addr = s->virtual_address;
		d->offset = s->offset;
		d->size = s->size;
		d->entsize = s->entry_size;
		d->link = s->link;
	}
	img->nsec = n;
	return CP_OK;
}

static cp_status copy_segments(cp_image *img, Elf_Binary_t *b, cp_error *err)
{
	size_t i, n = count((void **)b->segments);

	img->seg = calloc(n ? n : 1, sizeof(*img->seg));
	if (!img->seg)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	for (i = 0; i < n; i++) {
		const Elf_Segment_t *s = b->segments[i];

		img->seg[i].type = (uint32_t)s->type;
		img->seg[i].flags = s->flags;
		img->seg[i].offset = s->offset;
		img->seg[i].vaddr = s->virtual_address;
		img->seg[i].filesz = s->size;
		img->seg[i].memsz = s->virtual_size;
		img->seg[i].align = s->alignment;
	}
	img->nseg = n;
	return CP_OK;
}

static int by_value(const void *a, const void *b)
{
	const struct cp_symbol *x = a, *y = b;

	return x->value < y->value ? -1 : x->value > y->value;
}

static cp_status add_symbols(cp_image *img, Elf_Symbol_t **list, bool dynamic,
			     size_t *cap, cp_error *err)
{
	size_t i, n = count((void **)list);

	for (i = 0; i < n; i++) {
		const Elf_Symbol_t *s = list[i];
		struct cp_symbol *d;

		if (!s->name || !*s->name)
			continue;
		if (CP_GROW(img->sym, *cap, img->nsym + 1))
			return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
		d = &img->sym[img->nsym];
		d->name = cp_image_intern(img, s->name);
		if (!d->name)
			return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
		d->value = s->value;
		d->size = s->size;
		d->type = (uint8_t)s->type;
		d->dynamic = dynamic;
		d->defined = s->shndx != 0;
		img->nsym++;
	}
	return CP_OK;
}

cp_status cp_lief_read(cp_image *img, cp_error *err)
{
	Elf_Binary_t *b = elf_parse(img->path);
	size_t cap = 0;
	cp_status st;

	if (!b)
		return cp_fail(err, CP_E_INPUT, "%s: LIEF could not parse the ELF file", img->path);
	st = copy_sections(img, b, err);
	if (!st)
		st = copy_segments(img, b, err);
	if (!st)
		st = add_symbols(img, b->static_symbols, false, &cap, err);
	if (!st)
		st = add_symbols(img, b->dynamic_symbols, true, &cap, err);
	elf_binary_destroy(b);
	if (!st && img->nsym)
		qsort(img->sym, img->nsym, sizeof(*img->sym), by_value);
	return st;
}
