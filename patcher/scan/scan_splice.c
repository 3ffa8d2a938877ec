/*
 * scan_splice.c - the check's code walk: the output's findings from the
 * input's, walking again only the functions an edit changed.
 *
 * The input's walk recorded where it stood as it entered each unit (a
 * function; struct cp_walk_mark) and at points inside large functions
 * (struct cp_walk_point). The output's walk goes unit by unit: a unit
 * whose bytes are the same in both, entered in the same state, is found to
 * hold what the input's walk found there, which is taken; any other unit is
 * walked again, only near its changes: from the input's last point an
 * instruction's length before the first changed byte, in the state the
 * input's walk recorded there (the input's findings before it taken), up
 * to the first of its points after the last changed byte where the walk
 * stands as the input's stood (the same state, the same tracked registers):
 * from there on the bytes and the state are the same, and the input's
 * findings are taken. A Cython module's init function is half a megabyte,
 * its imports near its start. Where an architecture's walk of a function
 * reads only that function and the image's tables (struct
 * cp_arch.walk_local) and the tables are the same (cp_code_walk_tables_same),
 * this is what a walk of all code finds; full_check walks all code as well
 * and compares, which is how the tests prove it on every module.
 */
#include "scan/scan_walk.h"
#include "util/error.h"
#include "util/sort.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static bool same_bytes(const cp_image *a, const cp_image *b, uint64_t start, uint64_t end)
{
	const uint8_t *x = cp_image_va_bytes(a, start, end - start);
	const uint8_t *y = cp_image_va_bytes(b, start, end - start);

	return x && y && !memcmp(x, y, end - start);
}

/* The first byte that differs between a's and b's [start, end), and one
 * past the last (end and start when none does). */
static void changed_bytes(const cp_image *a, const cp_image *b, uint64_t start, uint64_t end, uint64_t *first,
			  uint64_t *last)
{
	const uint8_t *x = cp_image_va_bytes(a, start, end - start);
	const uint8_t *y = cp_image_va_bytes(b, start, end - start);
	uint64_t i = 0, n = end - start;

	if (!x || !y) {
		*first = start;
		*last = end;
		return;
	}
	while (i < n && x[i] == y[i])
		i++;
	while (n > i && x[n - 1] == y[n - 1])
		n--;
	*first = start + i;
	*last = start + n;
}

/* The walk at one of the cuts of a unit walked again: stops where it meets
 * the input's point there (the last cut passed) in the input's state. */
static bool meet(void *ctx, uint64_t addr, const struct cp_code_state *regs)
{
	struct cp_walk *w = ctx;
	size_t i = cp_first_key_at_least(w->goal, w->ngoal, sizeof(*w->goal), offsetof(struct cp_walk_point, addr),
					 addr + 1);

	if (!i || !cp_walk_meets(w, &w->goal[i - 1], addr, regs))
		return false;
	w->met = &w->goal[i - 1];
	return true;
}

/* The last of the input's points of unit k at or before addr from which
 * its walk can be taken up, or NULL. */
static const struct cp_walk_point *resume_point(const cp_scan *from, size_t k, uint64_t addr)
{
	const struct cp_walk_mark *m = &from->marks[k];
	size_t i = cp_first_key_at_least(from->points, from->npoints, sizeof(*from->points),
					 offsetof(struct cp_walk_point, addr), addr + 1);

	for (; i > 0 && from->points[i - 1].addr >= m->start; i--)
		if (from->points[i - 1].at.state.npending <= CP_WALK_PENDING)
			return &from->points[i - 1];
	return NULL;
}

/* Unit k walked again: when entered in the input's state (alike), from
 * the input's last point an instruction's length before its first changed
 * byte (a decode that failed before the point read that far on; the
 * input's findings before it taken), else from its start; on to its end or
 * to a point of the input's after its last changed byte where the walks
 * meet (the input's findings after it taken). *from_addr, *until: the span
 * walked again. */
static cp_status walk_again(struct cp_walk *w, struct cp_code_visitor *v, const cp_scan *from, size_t k,
			    const cp_image *a, bool alike, uint64_t *from_addr, uint64_t *until, cp_error *err)
{
	const struct cp_walk_mark *m = &from->marks[k];
	const cp_image *b = w->s->img;
	const struct cp_walk_point *start;
	uint64_t first, last, *cuts = NULL;
	size_t i, n;
	cp_status st;

	changed_bytes(a, b, m->start, m->end, &first, &last);
	start = alike && first - m->start >= b->arch->max_insn ? resume_point(from, k, first - b->arch->max_insn)
								: NULL;
	if (start && !cp_walk_take_upto(w, from, k, start))
		w->oom = true;
	i = cp_first_key_at_least(from->points, from->npoints, sizeof(*from->points),
				  offsetof(struct cp_walk_point, addr), last);
	w->goal = i < from->npoints ? &from->points[i] : NULL;
	for (w->ngoal = 0; i + w->ngoal < from->npoints && w->goal[w->ngoal].addr < m->end; w->ngoal++)
		;
	w->met = NULL;
	if (w->ngoal && m[1].at.state.npending <= CP_WALK_PENDING && (cuts = malloc(w->ngoal * sizeof(*cuts)))) {
		for (n = 0; n < w->ngoal; n++)
			cuts[n] = w->goal[n].addr;
		v->cuts = cuts;
		v->ncuts = w->ngoal;
		v->on_cut = meet;
	}
	v->from = start ? &start->regs : NULL;
	*from_addr = start ? start->addr : m->start;
	st = w->oom ? CP_OK : cp_code_walk(b, *from_addr, m->end, v, err);
	v->cuts = NULL;
	v->ncuts = 0;
	v->on_cut = NULL;
	v->from = NULL;
	free(cuts);
	*until = w->met ? w->met->addr : m->end;
	if (!st && w->met && !w->oom && !cp_walk_take_rest(w, from, k, w->met))
		w->oom = true;
	return st;
}

/* Whether unit k can be taken as the input's walk found it, entered as
 * that walk entered it (alike): the same bytes, and a state at its end
 * that the walk can take up. */
static bool takes(const cp_scan *from, size_t k, const cp_image *a, const cp_image *b)
{
	const struct cp_walk_mark *m = &from->marks[k];

	return same_bytes(a, b, m->start, m->end) && m[1].at.state.npending <= CP_WALK_PENDING;
}

static cp_status splice(cp_scan *s, const cp_scan *from, const cp_image *a, cp_error *err)
{
	const cp_image *b = s->img;
	struct cp_walk w;
	struct cp_code_visitor v;
	struct cp_walk_spans again = { NULL, 0, 0 };
	cp_status st = CP_OK;
	uint64_t again_from, until;
	size_t k, i, end;

	cp_walk_start(&w, s, false, &v);
	for (k = 0; !st && !w.oom && k < from->nmarks; k = end) {
		struct cp_walk_state now;
		bool alike;

		cp_walk_state(&w, &now);
		alike = cp_walk_state_equal(&now, &from->marks[k].at.state);
		end = k + 1;
		if (alike && takes(from, k, a, b)) {
			/* the units after it that take too are entered as the
			 * input's walk entered them: taken at once */
			while (end < from->nmarks && takes(from, end, a, b))
				end++;
			w.oom = !cp_walk_take_units(&w, from, k, end);
		} else if (!(st = walk_again(&w, &v, from, k, a, alike, &again_from, &until, err))) {
			w.oom = !cp_walk_spans_add(&again, again_from, until) || w.oom;
		}
	}
	/* code the output adds (the fallback stub's) */
	for (i = 0; !st && !w.oom && i < b->nsec; i++) {
		uint64_t x, y;

		if (cp_walk_span(&b->sec[i], 0, 0, &x, &y) && !cp_image_section_at(a, x))
			st = cp_code_walk(b, x, y, &v, err);
	}
	if (!st && !w.oom)
		w.oom = !cp_walk_merge_found(s, from, &again);
	free(again.v);
	return st ? st : cp_walk_end(&w, true, err);
}

/* ---- the proof: a walk of all code finds the same ---- */

static bool same_val(const struct cp_val *x, const struct cp_val *y)
{
	return x->kind == y->kind && x->v == y->v && x->origin == y->origin;
}

static bool same_args(const struct cp_val *x, const struct cp_val *y)
{
	size_t i;

	for (i = 0; i < CP_MAX_ARGS; i++)
		if (!same_val(&x[i], &y[i]))
			return false;
	return true;
}

static bool same_str(const char *x, const char *y)
{
	return (!x && !y) || (x && y && !strcmp(x, y));
}

static bool same_calls(const cp_scan *x, const cp_scan *y)
{
	size_t i;

	if (x->ncalls != y->ncalls || x->nuses != y->nuses || x->nfuses != y->nfuses)
		return false;
	for (i = 0; i < x->ncalls; i++)
		if (x->calls[i].addr != y->calls[i].addr || !same_str(x->calls[i].name, y->calls[i].name) ||
		    !same_args(x->calls[i].arg, y->calls[i].arg))
			return false;
	for (i = 0; i < x->nuses; i++)
		if (x->uses[i].addr != y->uses[i].addr || !same_str(x->uses[i].name, y->uses[i].name) ||
		    x->uses[i].slot != y->uses[i].slot || x->uses[i].ref != y->uses[i].ref)
			return false;
	for (i = 0; i < x->nfuses; i++)
		if (x->fuses[i].addr != y->fuses[i].addr || x->fuses[i].target != y->fuses[i].target ||
		    x->fuses[i].kind != y->fuses[i].kind || !same_args(x->fuses[i].arg, y->fuses[i].arg))
			return false;
	return true;
}

static bool same_blocks(const cp_scan *x, const cp_scan *y)
{
	size_t i, k;

	if (x->nblocks != y->nblocks)
		return false;
	for (i = 0; i < x->nblocks; i++) {
		const struct cp_import_block *p = &x->blocks[i], *q = &y->blocks[i];

		if (p->call != q->call || !same_str(p->module, q->module) || p->nloads != q->nloads)
			return false;
		for (k = 0; k < p->nloads; k++)
			if (p->loads[k].target != q->loads[k].target || p->loads[k].at != q->loads[k].at ||
			    p->loads[k].clean != q->loads[k].clean)
				return false;
	}
	return true;
}

/* What differs between two walks' findings, or NULL. */
static const char *walk_difference(const cp_scan *x, const cp_scan *y)
{
	if (x->nxrefs != y->nxrefs || (x->nxrefs && memcmp(x->xrefs, y->xrefs, x->nxrefs * sizeof(*x->xrefs))))
		return "references into data";
	if (x->njumps != y->njumps || (x->njumps && memcmp(x->jumps, y->jumps, x->njumps * sizeof(*x->jumps))))
		return "jumps";
	if (x->nderived != y->nderived ||
	    (x->nderived && memcmp(x->derived, y->derived, x->nderived * sizeof(*x->derived))))
		return "derived references";
	if (!same_calls(x, y))
		return "calls";
	if (!same_blocks(x, y))
		return "import blocks";
	return NULL;
}

static cp_status full_check(const cp_scan *s, cp_error *err)
{
	cp_scan *all = calloc(1, sizeof(*all));
	cp_status st;
	const char *diff;

	if (!all || !(all->path = strdup(s->path))) {
		free(all);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	}
	all->img = s->img;
	st = cp_scan_code(all, err);
	diff = st ? NULL : walk_difference(s, all);
	cp_scan_free_walk(all);
	free(all->path);
	free(all);
	if (!st && diff)
		st = cp_fail(err, CP_E_INTERNAL, "%s: the walk of the changed functions differs from a walk of "
			     "all its code (%s)", s->path, diff);
	return st;
}

cp_status cp_scan_code_from(cp_scan *s, const cp_scan *from, const cp_image *from_img, bool check,
			    cp_error *err)
{
	cp_status st;

	if (from->marks && s->img->arch->walk_local && cp_code_walk_tables_same(from_img, s->img))
		st = splice(s, from, from_img, err);
	else
		st = cp_scan_code(s, err);
	return !st && check ? full_check(s, err) : st;
}
