/*
 * emit.c - a plan as a delta over the input, and writing it (see emit.h).
 */
#include "emit/emit.h"
#include "util/error.h"
#include "util/write.h"

#include <assert.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One write, in the order the plan's bytes apply. */
struct piece {
	uint64_t off, len;
	const uint8_t *bytes;
};

struct pieces {
	struct piece *v;
	size_t n, cap;
};

static int add_piece(struct pieces *ps, uint64_t off, uint64_t len, const uint8_t *bytes)
{
	if (!len)
		return 0;
	if (CP_GROW(ps->v, ps->cap, ps->n + 1))
		return -1;
	ps->v[ps->n++] = (struct piece){ off, len, bytes };
	return 0;
}

static const char *const section_name[CP_NSPACES] = { CP_SECTION_NAME, CP_CODE_SECTION_NAME };

/* The edits, then the chunks of the new spaces. */
static int plan_pieces(const struct cp_plan *p, struct pieces *ps)
{
	size_t i, k;

	for (i = 0; i < p->nedits; i++)
		if (add_piece(ps, p->edits[i].off, p->edits[i].len, p->edits[i].bytes))
			return -1;
	for (k = 0; k < CP_NSPACES; k++)
		for (i = 0; i < p->space[k].nchunks; i++) {
			const struct cp_chunk *c = &p->space[k].chunks[i];

			if (add_piece(ps, p->space[k].seg_off + c->seg_off, c->len, c->bytes))
				return -1;
		}
	return 0;
}

/* Where the new section name table and header table go: after the input
 * and after every new space. */
static uint64_t tail_base(const cp_image *img, const struct cp_plan *p)
{
	uint64_t base = img->size;
	size_t k;

	for (k = 0; k < CP_NSPACES; k++)
		if (p->space[k].nchunks && p->space[k].seg_off + p->space[k].size > base)
			base = p->space[k].seg_off + p->space[k].size;
	return base;
}

/* The section name table and header table again, after everything, with a
 * header over each new space; *shnum becomes the new count. */
static void write_sections(const cp_image *img, const struct cp_plan *p, uint8_t *tail,
			   uint64_t strtab_off, uint64_t shdr_off, uint16_t *shnum)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img->data;
	uint8_t *shdrs = tail + (shdr_off - img->size);
	Elf64_Shdr strsh, nsh;
	size_t k;

	memcpy(&strsh, img->data + eh->e_shoff + (uint64_t)eh->e_shstrndx * sizeof(Elf64_Shdr), sizeof(strsh));
	memcpy(tail + (strtab_off - img->size), img->data + strsh.sh_offset, strsh.sh_size);
	memcpy(shdrs, img->data + eh->e_shoff, (size_t)eh->e_shnum * sizeof(Elf64_Shdr));
	*shnum = eh->e_shnum;
	for (k = 0; k < CP_NSPACES; k++) {
		const struct cp_space *sp = &p->space[k];
		size_t len = strlen(section_name[k]) + 1;

		if (!sp->nchunks)
			continue;
		memset(&nsh, 0, sizeof(nsh));
		nsh.sh_name = (uint32_t)strsh.sh_size;
		nsh.sh_type = SHT_PROGBITS;
		nsh.sh_flags = SHF_ALLOC | (k == CP_SPACE_CODE ? SHF_EXECINSTR : 0);
		nsh.sh_addr = sp->seg_vaddr;
		nsh.sh_offset = sp->seg_off;
		nsh.sh_size = sp->size;
		nsh.sh_addralign = 16;
		memcpy(tail + (strtab_off - img->size) + strsh.sh_size, section_name[k], len);
		strsh.sh_size += len;
		memcpy(shdrs + (uint64_t)(*shnum)++ * sizeof(Elf64_Shdr), &nsh, sizeof(nsh));
	}
	strsh.sh_offset = strtab_off;
	memcpy(shdrs + (uint64_t)eh->e_shstrndx * sizeof(Elf64_Shdr), &strsh, sizeof(strsh));
}

/* Pieces past the input's end go into the tail; the rest stay. */
static void split_tail(struct cp_delta *d, struct pieces *ps)
{
	size_t i, kept = 0;

	for (i = 0; i < ps->n; i++) {
		struct piece pc = ps->v[i];

		if (pc.off + pc.len > d->in_size) {
			uint64_t from = pc.off > d->in_size ? pc.off : d->in_size;

			memcpy(d->tail + (from - d->in_size), pc.bytes + (from - pc.off), pc.off + pc.len - from);
			if (pc.off >= d->in_size)
				continue;
			pc.len = d->in_size - pc.off;
		}
		ps->v[kept++] = pc;
	}
	ps->n = kept;
}

static int by_offset(const void *a, const void *b)
{
	const struct piece *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static struct cp_run *run_at(const struct cp_delta *d, uint64_t off)
{
	size_t lo = 0, hi = d->nrun;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->run[mid].off + d->run[mid].len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return &d->run[lo];
}

/* Overlapping and adjacent pieces merge into runs that start as the
 * input's bytes; then every piece lands in its run, in plan order, so that
 * a later piece wins where two overlap. */
static cp_status make_runs(const cp_image *img, struct cp_delta *d, const struct pieces *ps,
			   cp_error *err)
{
	struct piece *sorted = malloc((ps->n ? ps->n : 1) * sizeof(*sorted));
	size_t i;

	d->run = calloc(ps->n ? ps->n : 1, sizeof(*d->run));
	if (!sorted || !d->run) {
		free(sorted);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	}
	memcpy(sorted, ps->v, ps->n * sizeof(*sorted));
	qsort(sorted, ps->n, sizeof(*sorted), by_offset);
	for (i = 0; i < ps->n; i++) {
		struct cp_run *last = d->nrun ? &d->run[d->nrun - 1] : NULL;

		if (last && sorted[i].off <= last->off + last->len) {
			if (sorted[i].off + sorted[i].len > last->off + last->len)
				last->len = sorted[i].off + sorted[i].len - last->off;
			continue;
		}
		d->run[d->nrun++] = (struct cp_run){ sorted[i].off, sorted[i].len, NULL };
	}
	free(sorted);
	for (i = 0; i < d->nrun; i++) {
		/* plan.c keeps every edit inside the input; the tail is apart */
		assert(d->run[i].off + d->run[i].len <= img->size);
		assert(i == 0 || d->run[i - 1].off + d->run[i - 1].len < d->run[i].off);
		d->run[i].bytes = malloc(d->run[i].len);
		if (!d->run[i].bytes)
			return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
		memcpy(d->run[i].bytes, img->data + d->run[i].off, d->run[i].len);
	}
	for (i = 0; i < ps->n; i++) {
		struct cp_run *r = run_at(d, ps->v[i].off);

		assert(ps->v[i].off >= r->off && ps->v[i].off + ps->v[i].len <= r->off + r->len);
		memcpy(r->bytes + (ps->v[i].off - r->off), ps->v[i].bytes, ps->v[i].len);
	}
	return CP_OK;
}

/* The ELF header as the edits leave it, pointing at the new section
 * header table. */
static void new_header(const cp_image *img, const struct pieces *ps, uint64_t shoff, uint16_t shnum,
		       Elf64_Ehdr *eh)
{
	uint8_t *h = (uint8_t *)eh;
	size_t i;

	memcpy(eh, img->data, sizeof(*eh));
	for (i = 0; i < ps->n; i++)
		if (ps->v[i].off < sizeof(*eh)) {
			uint64_t n = ps->v[i].len;

			if (n > sizeof(*eh) - ps->v[i].off)
				n = sizeof(*eh) - ps->v[i].off;
			memcpy(h + ps->v[i].off, ps->v[i].bytes, n);
		}
	eh->e_shoff = shoff;
	eh->e_shnum = shnum;
}

static cp_status emit_pieces(const cp_image *img, const struct cp_plan *p, struct cp_delta *d,
			     struct pieces *ps, Elf64_Ehdr *eh, cp_error *err)
{
	const Elf64_Ehdr *in = (const Elf64_Ehdr *)img->data;
	uint64_t base = tail_base(img, p), strtab_off = base, shdr_off = base, names = 0;
	uint16_t shnum = in->e_shnum;
	size_t k;

	d->in_size = d->size = img->size;
	if (plan_pieces(p, ps))
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	if (cp_plan_new_bytes(p)) {
		for (k = 0; k < CP_NSPACES; k++)
			names += p->space[k].nchunks ? strlen(section_name[k]) + 1 : 0;
		shdr_off = (strtab_off + img->sec[in->e_shstrndx].size + names + 7) & ~7ull;
		d->size = shdr_off + ((uint64_t)in->e_shnum + CP_NSPACES) * sizeof(Elf64_Shdr);
	}
	d->tail = calloc(1, d->size - d->in_size + 1);
	if (!d->tail)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	split_tail(d, ps);
	if (cp_plan_new_bytes(p)) {
		write_sections(img, p, d->tail, strtab_off, shdr_off, &shnum);
		d->size = shdr_off + (uint64_t)shnum * sizeof(Elf64_Shdr);
		new_header(img, ps, shdr_off, shnum, eh);
		if (add_piece(ps, 0, sizeof(*eh), (const uint8_t *)eh))
			return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	}
	return make_runs(img, d, ps, err);
}

cp_status cp_emit(const cp_image *img, const struct cp_plan *p, struct cp_delta *d, cp_error *err)
{
	struct pieces ps = { NULL, 0, 0 };
	Elf64_Ehdr eh;
	cp_status st;

	memset(d, 0, sizeof(*d));
	st = emit_pieces(img, p, d, &ps, &eh, err);
	free(ps.v);
	if (st)
		cp_delta_free(d);
	return st;
}

void cp_delta_free(struct cp_delta *d)
{
	size_t i;

	for (i = 0; i < d->nrun; i++)
		free(d->run[i].bytes);
	free(d->run);
	free(d->tail);
	memset(d, 0, sizeof(*d));
}

cp_status cp_emit_write(const struct cp_delta *d, int fd, const char *target, bool sync, cp_error *err)
{
	size_t i;

	for (i = 0; i < d->nrun; i++)
		if (cp_write_all_at(fd, d->run[i].bytes, d->run[i].len, d->run[i].off))
			return cp_fail(err, CP_E_IO, "%s: writing the output failed: %s", target, cp_write_strerror(errno));
	if (cp_write_all_at(fd, d->tail, d->size - d->in_size, d->in_size))
		return cp_fail(err, CP_E_IO, "%s: writing the output failed: %s", target, cp_write_strerror(errno));
	cp_write_start_writeback(fd, sync); /* while the check runs */
	return CP_OK;
}
