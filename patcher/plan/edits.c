/*
 * edits.c - the plan as a record (see plan_internal.h): edits of the file's
 * bytes, chunks appended to new space, the instructions the check decodes
 * again, and the plan's invariants. The planner's stages (plan.c,
 * plan_blob.c, plan_fallback.c, place.c) record through these; nothing here
 * calls back into them.
 */
#include "plan/plan_internal.h"
#include "util/error.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

void cp_plan_start(struct planner *pl, const cp_image *img, const cp_scan *scan, struct cp_plan *plan,
		   int target, cp_error *err)
{
	memset(plan, 0, sizeof(*plan));
	memset(pl, 0, sizeof(*pl));
	plan->target = target;
	pl->img = img;
	pl->scan = scan;
	pl->rules = scan->rules;
	pl->p = plan;
	pl->err = err;
}

cp_status cp_plan_oom(struct planner *pl)
{
	return cp_fail(pl->err, CP_E_INTERNAL, "%s: out of memory", pl->img->path);
}

cp_status cp_plan_add_edit(struct planner *pl, enum cp_edit_kind kind, uint64_t off,
			  const void *bytes, uint32_t len, uint64_t site, uint64_t target,
			  const char *what)
{
	struct cp_plan *p = pl->p;
	struct cp_edit *e;

	if (len > sizeof(e->bytes))
		return cp_fail(pl->err, CP_E_INTERNAL, "%s: an edit of %u bytes is too long",
			       pl->img->path, len);
	/* every site was found in the file (cp_plan_file_off, the headers) */
	assert(off <= pl->img->size && len <= pl->img->size - off);
	if (CP_GROW(p->edits, p->capedits, p->nedits + 1))
		return cp_plan_oom(pl);
	e = &p->edits[p->nedits++];
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->off = off;
	e->len = len;
	memcpy(e->bytes, bytes, len);
	e->site = site;
	e->target = target;
	snprintf(e->what, sizeof(e->what), "%s", what);
	return CP_OK;
}

/* Appends bytes to new space of a kind (aligned to align); returns their
 * provisional address, 0 on failure. */
static uint64_t append(struct planner *pl, enum cp_space_kind kind, const void *bytes, size_t len,
		       unsigned align, const char *what)
{
	struct cp_space *sp = &pl->p->space[kind];
	struct cp_chunk *c;

	while (sp->size % align)
		sp->size++; /* zero-filled by emit */
	if (CP_GROW(sp->chunks, sp->capchunks, sp->nchunks + 1))
		return 0;
	c = &sp->chunks[sp->nchunks];
	c->bytes = malloc(len ? len : 1);
	if (!c->bytes)
		return 0;
	memcpy(c->bytes, bytes, len);
	c->len = (uint32_t)len;
	c->seg_off = sp->size;
	snprintf(c->what, sizeof(c->what), "%s", what);
	sp->size += len;
	sp->nchunks++;
	/* the provisional address is the chunk's place in its space, aligned,
	 * and stays below the other kind's (cp_plan_real_address tells them
	 * apart by it) */
	assert(c->seg_off % align == 0 && c->seg_off + len == sp->size);
	assert(sp->size < CP_PROVISIONAL_CODE);
	return (kind == CP_SPACE_CODE ? CP_PROVISIONAL_CODE : CP_PROVISIONAL) + c->seg_off;
}

uint64_t cp_plan_append(struct planner *pl, const void *bytes, size_t len, unsigned align,
			const char *what)
{
	return append(pl, CP_SPACE_DATA, bytes, len, align, what);
}

uint64_t cp_plan_append_code(struct planner *pl, const void *bytes, size_t len, unsigned align,
			     const char *what)
{
	return append(pl, CP_SPACE_CODE, bytes, len, align, what);
}

cp_status cp_plan_expect(struct planner *pl, uint64_t addr, uint64_t target)
{
	struct cp_plan *p = pl->p;

	if (CP_GROW(p->expects, p->capexpects, p->nexpects + 1))
		return cp_plan_oom(pl);
	p->expects[p->nexpects].addr = addr;
	p->expects[p->nexpects++].target = target;
	return CP_OK;
}

uint64_t cp_plan_new_bytes(const struct cp_plan *plan)
{
	return plan->space[CP_SPACE_DATA].size + plan->space[CP_SPACE_CODE].size;
}

bool cp_plan_file_off(const struct planner *pl, uint64_t va, uint64_t len, uint64_t *off)
{
	return cp_image_va_to_off(pl->img, va, len, off);
}

/* Where the operand of the instruction at addr lies and what it reaches
 * now: its PC-relative field, or the whole instruction where the code walk
 * found it completes an address (insn_completes; the scan's xref at addr
 * is the word that it reaches from). */
static bool operand_at(struct planner *pl, uint64_t addr, uint64_t from, uint8_t *field_off, uint8_t *size,
		       uint64_t *target)
{
	const struct cp_arch *arch = pl->img->arch;

	if (cp_dis_rip_operand(&pl->dis, pl->img, addr, field_off, size, target))
		return true;
	if (!arch->insn_completes || !cp_dis_at(&pl->dis, pl->img, addr) || !arch->insn_completes(&pl->dis))
		return false;
	*field_off = 0;
	*size = (uint8_t)arch->pcrel_size;
	*target = from;
	return true;
}

/* The bytes at file offset off (n of them) into buf: the fields the
 * encoders rewrite hold their current bytes (arch.h). */
static void current_bytes(const struct planner *pl, uint64_t off, size_t n, uint8_t *buf)
{
	const uint8_t *b = cp_image_bytes(pl->img, off, n);

	assert(b); /* off and n came from cp_plan_file_off */
	memcpy(buf, b, n);
}

/* The references derived from the address the instruction at addr makes
 * that leave the object [from, from + span): cp_plan_check_derived wants
 * each redirected. */
static cp_status derived_from(struct planner *pl, uint64_t addr, uint64_t from, uint64_t span)
{
	const cp_scan *s = pl->scan;
	size_t i;

	for (i = 0; i < s->nderived; i++) {
		if (s->derived[i].base != addr || s->derived[i].target - from < span)
			continue;
		if (CP_GROW(pl->pending, pl->cappending, pl->npending + 1))
			return cp_plan_oom(pl);
		pl->pending[pl->npending++] = s->derived[i];
	}
	return CP_OK;
}

cp_status cp_plan_check_derived(struct planner *pl)
{
	size_t i, k;

	for (i = 0; i < pl->npending; i++) {
		const struct cp_derived *d = &pl->pending[i];

		for (k = 0; k < pl->p->nedits; k++)
			if (pl->p->edits[k].kind == CP_EDIT_DISP && pl->p->edits[k].site == d->addr)
				break;
		if (k < pl->p->nedits)
			continue;
		/* strings cannot say it; the fallback stub moves nothing */
		pl->inexpressible = true;
		return cp_fail(pl->err, CP_E_INPUT, "%s: the instruction at %#llx reaches %#llx from the "
			       "address the instruction at %#llx makes, which moves; it would reach elsewhere",
			       pl->img->path, (unsigned long long)d->addr, (unsigned long long)d->target,
			       (unsigned long long)d->base);
	}
	return CP_OK;
}

/* Points the code operand at addr (which reaches `from`) at `to`; a
 * provisional `to` is written when placed (place.c). */
cp_status cp_plan_redirect_code(struct planner *pl, uint64_t addr, uint64_t from, uint64_t span, uint64_t to,
				const char *what)
{
	const struct cp_arch *arch = pl->img->arch;
	uint8_t field_off, size, field[8] = { 0 };
	uint64_t target, off;

	if (!operand_at(pl, addr, from, &field_off, &size, &target) || target != from)
		return cp_fail(pl->err, CP_E_INPUT, "%s: the instruction at %#llx does not reach %#llx "
			       "as the scan found", pl->img->path, (unsigned long long)addr,
			       (unsigned long long)from);
	if (!cp_plan_file_off(pl, addr + field_off, arch->pcrel_size, &off))
		return cp_fail(pl->err, CP_E_INPUT, "%s: the instruction at %#llx lies outside the file",
			       pl->img->path, (unsigned long long)addr);
	current_bytes(pl, off, arch->pcrel_size, field);
	if (to < CP_PROVISIONAL_CODE && !arch->pcrel_put(field, addr, size, to))
		return cp_fail(pl->err, CP_E_INPUT, "%s: %#llx cannot reach %#llx with %s", pl->img->path,
			       (unsigned long long)addr, (unsigned long long)to, arch->reach);
	if (cp_plan_add_edit(pl, CP_EDIT_DISP, off, field, arch->pcrel_size, addr, to, what))
		return pl->err->code;
	pl->p->edits[pl->p->nedits - 1].site_end = addr + size;
	return derived_from(pl, addr, from, span);
}

/* The immediate or displacement field at insn + field_off (size bytes, as
 * the decoder found it) encoded with value, and its file offset; false when
 * value does not fit the field or the field lies outside the file. */
bool cp_plan_field(struct planner *pl, uint64_t insn, uint8_t field_off, uint8_t size,
		   int64_t value, uint8_t bytes[8], uint64_t *off)
{
	if (size > 8 || !cp_plan_file_off(pl, insn + field_off, size, off))
		return false;
	current_bytes(pl, *off, size, bytes);
	return pl->img->arch->field_put(bytes, size, value);
}

static int by_off(const void *a, const void *b)
{
	const struct cp_edit *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

cp_status cp_plan_check_overlaps(struct planner *pl)
{
	struct cp_plan *p = pl->p;
	size_t i, k;

	if (p->nedits)
		qsort(p->edits, p->nedits, sizeof(*p->edits), by_off);
	for (i = 1; i < p->nedits; i++)
		if (p->edits[i].off < p->edits[i - 1].off + p->edits[i - 1].len &&
		    !(p->edits[i].off == p->edits[i - 1].off && p->edits[i].len == p->edits[i - 1].len &&
		      !memcmp(p->edits[i].bytes, p->edits[i - 1].bytes, p->edits[i].len)))
			return cp_fail(pl->err, CP_E_INTERNAL, "%s: planned edits overlap at file offset %#llx",
				       pl->img->path, (unsigned long long)p->edits[i].off);
	/* emit writes the edits over the file and the new space after it or
	 * in free padding: no edit touches a new space's bytes */
	for (i = 0; i < p->nedits; i++)
		for (k = 0; k < CP_NSPACES; k++)
			assert(!p->space[k].nchunks || p->edits[i].off + p->edits[i].len <= p->space[k].seg_off ||
			       p->edits[i].off >= p->space[k].seg_off + p->space[k].size);
	return CP_OK;
}

void cp_plan_free(struct cp_plan *plan)
{
	size_t i, k;

	for (k = 0; k < CP_NSPACES; k++) {
		for (i = 0; i < plan->space[k].nchunks; i++)
			free(plan->space[k].chunks[i].bytes);
		free(plan->space[k].chunks);
	}
	free(plan->edits);
	free(plan->expects);
	memset(plan, 0, sizeof(*plan));
}

static void hex(FILE *out, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n && i < 24; i++)
		fprintf(out, "%02x", p[i]);
	if (n > 24)
		fputs("..", out);
}

static const char *edit_kind_name(enum cp_edit_kind k)
{
	static const char *const names[] = { "string", "length", "disp32", "addend", "word", "imm",
					     "branch" };

	return names[k];
}

static void print_space(const struct cp_space *sp, size_t kind, FILE *out)
{
	size_t i;

	if (!sp->nchunks)
		return;
	fprintf(out, "  new %s: %s at file %#llx, vaddr %#llx, %llu bytes:\n",
		kind == CP_SPACE_CODE ? "code" : "read-only data",
		sp->place == CP_PLACE_GAP ? "the padding after its kind of PT_LOAD"
					  : "a new PT_LOAD in place of PT_NOTE",
		(unsigned long long)sp->seg_off, (unsigned long long)sp->seg_vaddr,
		(unsigned long long)sp->size);
	for (i = 0; i < sp->nchunks; i++)
		fprintf(out, "    +%#llx %u bytes  [%s]\n", (unsigned long long)sp->chunks[i].seg_off,
			sp->chunks[i].len, sp->chunks[i].what);
}

void cp_plan_print(const struct cp_plan *plan, const cp_image *img, FILE *out)
{
	size_t i, k;

	for (i = 0; i < plan->nedits; i++) {
		const struct cp_edit *e = &plan->edits[i];
		const uint8_t *old = cp_image_bytes(img, e->off, e->len);

		fprintf(out, "  %-6s file %#llx (%#llx), %u bytes: ", edit_kind_name(e->kind),
			(unsigned long long)e->off, (unsigned long long)e->site, e->len);
		if (old)
			hex(out, old, e->len);
		fputs(" -> ", out);
		hex(out, e->bytes, e->len);
		fprintf(out, "  [%s]\n", e->what);
	}
	for (k = 0; k < CP_NSPACES; k++)
		print_space(&plan->space[k], k, out);
}
