/*
 * pointers.c - what points into the file's data, indexed for the planner:
 * the targets of code operands (the scan's xrefs) and of relative
 * relocations, sorted once, so that each literal's questions (what points
 * at it, into it, or at a string running into it) are binary searches, not
 * passes over every relocation and operand.
 */
#include "plan/plan_internal.h"
#include "util/sort.h"

#include <stddef.h>
#include <stdlib.h>

/* A relative relocation: its addend, and its index in the image's. */
struct rel_at {
	uint64_t addend;
	size_t i;
};

struct cp_plan_pointers {
	uint64_t *target;     /* every target, sorted, each once */
	size_t ntarget;
	struct rel_at *rel;   /* by addend, then index */
	size_t nrel;
	size_t *index;        /* rel[k].i, for cp_plan_relocs_to */
};

static size_t unique(uint64_t *v, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (!k || v[k - 1] != v[i])
			v[k++] = v[i];
	return k;
}

cp_status cp_plan_index_pointers(struct planner *pl)
{
	const cp_scan *s = pl->scan;
	const cp_image *img = pl->img;
	struct cp_plan_pointers *p = calloc(1, sizeof(*p));
	size_t i, n = 0;

	if (!p)
		return cp_plan_oom(pl);
	pl->pointers = p;
	p->target = malloc((s->nxrefs + img->nrel + 1) * sizeof(*p->target));
	p->rel = malloc((img->nrel + 1) * sizeof(*p->rel));
	p->index = malloc((img->nrel + 1) * sizeof(*p->index));
	if (!p->target || !p->rel || !p->index)
		return cp_plan_oom(pl);
	for (i = 0; i < s->nxrefs; i++)
		p->target[n++] = s->xrefs[i].target;
	for (i = 0; i < img->nrel; i++) {
		if (img->rel[i].kind != CP_RELOC_RELATIVE)
			continue;
		p->target[n++] = (uint64_t)img->rel[i].addend;
		p->rel[p->nrel++] = (struct rel_at){ (uint64_t)img->rel[i].addend, i };
	}
	/* stable: a string's relocations stay in the image's order */
	if (!cp_sort_by_key(p->target, n, sizeof(*p->target), 0) ||
	    !cp_sort_by_key(p->rel, p->nrel, sizeof(*p->rel), offsetof(struct rel_at, addend)))
		return cp_plan_oom(pl);
	p->ntarget = unique(p->target, n);
	for (i = 0; i < p->nrel; i++)
		p->index[i] = p->rel[i].i;
	return CP_OK;
}

void cp_plan_free_pointers(struct planner *pl)
{
	if (!pl->pointers)
		return;
	free(pl->pointers->target);
	free(pl->pointers->rel);
	free(pl->pointers->index);
	free(pl->pointers);
	pl->pointers = NULL;
}

bool cp_plan_pointed_into(const struct planner *pl, uint64_t lo, uint64_t hi)
{
	const struct cp_plan_pointers *p = pl->pointers;
	size_t i = cp_first_key_at_least(p->target, p->ntarget, sizeof(*p->target), 0, lo);

	return i < p->ntarget && p->target[i] <= hi;
}

size_t cp_plan_relocs_to(const struct planner *pl, uint64_t va, const size_t **rel)
{
	const struct cp_plan_pointers *p = pl->pointers;
	size_t first, n = cp_records_with_key(p->rel, p->nrel, sizeof(*p->rel), offsetof(struct rel_at, addend), va,
					      &first);

	*rel = p->index + first;
	return n;
}
