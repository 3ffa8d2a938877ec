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

struct cp_plan_pointers {
	uint64_t *target;          /* every target, sorted, each once */
	size_t ntarget;
	struct cp_reloc_at *rel;   /* relative relocations by addend */
	size_t nrel;
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
	p->rel = cp_image_relatives_by_addend(img, &p->nrel);
	p->target = malloc((s->nxrefs + p->nrel + 1) * sizeof(*p->target));
	if (!p->rel || !p->target)
		return cp_plan_oom(pl);
	for (i = 0; i < s->nxrefs; i++)
		p->target[n++] = s->xrefs[i].target;
	for (i = 0; i < p->nrel; i++)
		p->target[n++] = p->rel[i].addend;
	if (!cp_sort_by_key(p->target, n, sizeof(*p->target), 0))
		return cp_plan_oom(pl);
	p->ntarget = unique(p->target, n);
	return CP_OK;
}

void cp_plan_free_pointers(struct planner *pl)
{
	if (!pl->pointers)
		return;
	free(pl->pointers->target);
	free(pl->pointers->rel);
	free(pl->pointers);
	pl->pointers = NULL;
}

bool cp_plan_pointed_into(const struct planner *pl, uint64_t lo, uint64_t hi)
{
	const struct cp_plan_pointers *p = pl->pointers;
	size_t i = cp_first_key_at_least(p->target, p->ntarget, sizeof(*p->target), 0, lo);

	return i < p->ntarget && p->target[i] <= hi;
}

size_t cp_plan_relocs_to(const struct planner *pl, uint64_t va, const struct cp_reloc_at **rel)
{
	const struct cp_plan_pointers *p = pl->pointers;
	size_t first, n = cp_records_with_key(p->rel, p->nrel, sizeof(*p->rel), offsetof(struct cp_reloc_at, addend),
					      va, &first);

	*rel = p->rel + first;
	return n;
}
