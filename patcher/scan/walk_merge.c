/*
 * walk_merge.c - the xrefs and jumps of walks of parts of the code merged
 * into the order of one walk of all of it: the threaded walk's runs
 * (scan_threads.c), and the check's walk of the changed code beside the
 * input's (scan_splice.c). Each list is sorted on the thread that made it;
 * the merge drops the entries of another walk in the spans walked again.
 */
#include "scan/scan_walk.h"
#include "util/big_array.h"
#include "util/error.h"
#include "util/sort.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

bool cp_walk_spans_add(struct cp_walk_spans *s, uint64_t start, uint64_t end)
{
	if (CP_GROW(s->v, s->cap, s->n + 1))
		return false;
	s->v[s->n].start = start;
	s->v[s->n++].end = end;
	return true;
}

/* Whether addr lies in one of the spans walked again. */
static bool walked_again(const struct cp_walk_spans *again, uint64_t addr)
{
	/* the first span ending past addr (an instruction's address is never
	 * the last of the address space) */
	size_t i = cp_first_key_at_least(again->v, again->n, sizeof(*again->v), offsetof(struct cp_walk_span, end),
					 addr + 1);

	return i < again->n && again->v[i].start <= addr;
}

/* Two sorted lists into *dst: *dst's own (sorted here, unless they are
 * already) and from's entries outside the spans walked again, which are
 * in order already. */
struct sorted_list {
	void **dst;
	size_t *n, *cap;
	const void *from;
	size_t nfrom;
	const struct cp_walk_order *order;
};

static bool taken(const struct cp_walk_spans *again, const struct sorted_list *l, size_t i)
{
	uint64_t addr;

	memcpy(&addr, (const char *)l->from + i * l->order->size + l->order->addr_at, sizeof(addr));
	return !walked_again(again, addr);
}

static bool merge(const struct cp_walk_spans *again, const struct sorted_list *l)
{
	size_t i = 0, j = 0, n = 0, m = *l->n, size = l->order->size, cap = 0;
	char *out = NULL, *mine = *l->dst;

	if (cp_big_grow(&out, &cap, m + l->nfrom + 1, size))
		return false;
	if (!cp_walk_sort(mine, m, l->order)) {
		cp_big_free(out, cap, size);
		return false;
	}
	while (i < l->nfrom || j < m) {
		/* from may be NULL with nothing in it: no pointer made into it then */
		const char *x = i < l->nfrom ? (const char *)l->from + i * size : NULL;

		if (i < l->nfrom && !taken(again, l, i)) {
			i++;
			continue;
		}
		if (j == m || (i < l->nfrom && cp_walk_order_cmp(l->order, x, mine + j * size) <= 0)) {
			memcpy(out + n++ * size, x, size);
			i++;
		} else {
			memcpy(out + n++ * size, mine + j++ * size, size);
		}
	}
	cp_big_free(*l->dst, *l->cap, size);
	*l->dst = out;
	*l->n = n;
	*l->cap = cap;
	return true;
}

bool cp_walk_merge_found(cp_scan *s, const cp_scan *from, const struct cp_walk_spans *again)
{
	struct sorted_list x = { (void **)&s->xrefs, &s->nxrefs, &s->capxrefs, from->xrefs, from->nxrefs,
				 &cp_walk_xref_order };
	struct sorted_list j = { (void **)&s->jumps, &s->njumps, &s->capjumps, from->jumps, from->njumps,
				 &cp_walk_jump_order };

	return merge(again, &x) && merge(again, &j);
}
