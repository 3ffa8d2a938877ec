/*
 * lief_crosscheck.c - LIEF as an independent reader of what elf_view.c
 * reads: for every file given, the sections, segments and named symbols of
 * cp_image_open must equal LIEF 0.9's (C API), and its lookup of the
 * section at an address (image.c's index) must give, at each section's
 * edges, the first mapped section in LIEF's table that holds the address.
 * Exits 1 on the first difference, naming it.
 *
 * usage: lief_crosscheck FILE|DIR...  (directories: every *.so below)
 */
/* LIEF's C header types.h declares `typedef int bool` for C, which clashes
 * with <stdbool.h> and does not match the one-byte C++ bool that libLIEF was
 * compiled with. Skipping it leaves the structures' bool as C's _Bool, the
 * layout the library really uses. */
#define LIEF_C_TYPES_H_
#include <stdbool.h>
#include <stdint.h>
#include <LIEF/ELF.h>

#include "elf/image.h"
#include "so_files.h"

#include <elf.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t count(void **list)
{
	size_t n = 0;

	while (list && list[n])
		n++;
	return n;
}

static int differ(const char *path, const char *what, size_t i)
{
	fprintf(stderr, "lief_crosscheck: %s: %s %zu differs from LIEF's\n", path, what, i);
	return 1;
}

static int check_sections(const cp_image *img, Elf_Binary_t *b)
{
	size_t i, n = count((void **)b->sections);

	if (n != img->nsec)
		return differ(img->path, "section count", n);
	for (i = 0; i < n; i++) {
		const Elf_Section_t *s = b->sections[i];
		const struct cp_section *d = &img->sec[i];

		if (strcmp(d->name, s->name ? s->name : "") || d->type != (uint32_t)s->type ||
		    d->flags != s->flags || d->addr != s->virtual_address || d->offset != s->offset ||
		    (d->size != s->size && d->type != SHT_NOBITS) || d->entsize != s->entry_size ||
		    d->link != s->link)
			return differ(img->path, "section", i);
	}
	return 0;
}

static bool lief_mapped(const Elf_Section_t *s)
{
	return (s->flags & SHF_ALLOC) && !((s->flags & SHF_TLS) && s->type == SHT_NOBITS);
}

/* The first mapped section of LIEF's table holding va, or -1. */
static long lief_section_at(Elf_Binary_t *b, uint64_t va)
{
	long i;

	for (i = 0; b->sections[i]; i++)
		if (lief_mapped(b->sections[i]) && va >= b->sections[i]->virtual_address &&
		    va - b->sections[i]->virtual_address < b->sections[i]->size)
			return i;
	return -1;
}

static int check_section_at(const cp_image *img, Elf_Binary_t *b)
{
	size_t i, k;

	for (i = 0; b->sections[i]; i++) {
		uint64_t a = b->sections[i]->virtual_address, n = b->sections[i]->size;
		uint64_t probe[4] = { a - 1, a, a + n - 1, a + n };

		for (k = 0; k < 4; k++) {
			const struct cp_section *s = cp_image_section_at(img, probe[k]);
			long want = lief_section_at(b, probe[k]);

			if ((s ? (long)(s - img->sec) : -1) != want)
				return differ(img->path, "section lookup at the edge of section", i);
		}
	}
	return 0;
}

static int check_segments(const cp_image *img, Elf_Binary_t *b)
{
	size_t i, n = count((void **)b->segments);

	if (n != img->nseg)
		return differ(img->path, "segment count", n);
	for (i = 0; i < n; i++) {
		const Elf_Segment_t *s = b->segments[i];
		const struct cp_segment *d = &img->seg[i];

		if (d->type != (uint32_t)s->type || d->flags != s->flags || d->offset != s->offset ||
		    d->vaddr != s->virtual_address || d->filesz != s->size || d->memsz != s->virtual_size ||
		    d->align != s->alignment)
			return differ(img->path, "segment", i);
	}
	return 0;
}

/* A named symbol as both readers see it, compared as sorted multisets. */
struct sym {
	const char *name;
	uint64_t value, size;
	unsigned type;
	bool dynamic, defined;
};

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	if (x->dynamic != y->dynamic)
		return x->dynamic - y->dynamic;
	return x->defined - y->defined;
}

static size_t add_lief(struct sym *out, size_t n, Elf_Symbol_t **list, bool dynamic)
{
	size_t i;

	for (i = 0; list && list[i]; i++)
		if (list[i]->name && *list[i]->name)
			out[n++] = (struct sym){ list[i]->name, list[i]->value, list[i]->size,
						 (uint8_t)list[i]->type, dynamic, list[i]->shndx != 0 };
	return n;
}

static int check_symbols(const cp_image *img, Elf_Binary_t *b)
{
	size_t i, n = count((void **)b->static_symbols) + count((void **)b->dynamic_symbols);
	struct sym *ours = calloc(img->nsym + 1, sizeof(*ours));
	struct sym *theirs = calloc(n + 1, sizeof(*theirs));
	int bad = 0;

	if (!ours || !theirs) {
		fprintf(stderr, "lief_crosscheck: out of memory\n");
		exit(1);
	}
	for (i = 0; i < img->nsym; i++) {
		const struct cp_symbol *s = &img->sym[i];

		ours[i] = (struct sym){ s->name, s->value, s->size, s->type, s->dynamic, s->defined };
	}
	n = add_lief(theirs, 0, b->static_symbols, false);
	n = add_lief(theirs, n, b->dynamic_symbols, true);
	if (n != img->nsym) {
		fprintf(stderr, "lief_crosscheck: %s: %zu named symbols, LIEF reads %zu\n", img->path,
			img->nsym, n);
		bad = 1;
	}
	qsort(ours, img->nsym, sizeof(*ours), sym_cmp);
	qsort(theirs, n, sizeof(*theirs), sym_cmp);
	for (i = 0; i < n && !bad; i++)
		if (sym_cmp(&ours[i], &theirs[i])) {
			fprintf(stderr, "lief_crosscheck: %s: symbol %s (%#llx) differs from LIEF's %s (%#llx)\n",
				img->path, ours[i].name, (unsigned long long)ours[i].value, theirs[i].name,
				(unsigned long long)theirs[i].value);
			bad = 1;
		}
	free(ours);
	free(theirs);
	return bad;
}

static int check_file(const char *path)
{
	cp_image *img;
	cp_error err;
	Elf_Binary_t *b;
	int bad;

	if (cp_image_open(path, &img, &err)) {
		fprintf(stderr, "lief_crosscheck: %s\n", err.msg);
		return 1;
	}
	b = elf_parse(path);
	if (!b) {
		fprintf(stderr, "lief_crosscheck: %s: LIEF cannot parse it\n", path);
		cp_image_close(img);
		return 1;
	}
	bad = check_sections(img, b) || check_section_at(img, b) || check_segments(img, b) || check_symbols(img, b);
	elf_binary_destroy(b);
	cp_image_close(img);
	return bad;
}

int main(int argc, char **argv)
{
	size_t files;
	int bad;

	if (argc < 2) {
		fprintf(stderr, "usage: lief_crosscheck FILE|DIR...\n");
		return 64;
	}
	bad = so_files_each(argv + 1, argc - 1, check_file, &files);
	if (bad)
		return 1;
	if (!files) {
		fprintf(stderr, "lief_crosscheck: no .so files under the paths given\n");
		return 1;
	}
	printf("lief_crosscheck: %zu files read the same by LIEF and by cypatch\n", files);
	return 0;
}
