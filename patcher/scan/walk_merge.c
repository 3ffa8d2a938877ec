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
	size_t i;

	/* most records lie outside all of them */
	if (!again->n || addr < again->v[0].start || addr >= again->v[again->n - 1].end)
		return false;
	/* the first span ending past addr (an instruction's address is never
	 * the last of the address space) */
	i = cp_first_key_at_least(again->v, again->n, sizeof(*again->v), offsetof(struct cp_walk_span, end), addr + 1);
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

/* The first of the n records of a at or after lo that comes after x in
 * order o (or, with !ties, after or with it): found by galloping, since
 * the two lists interleave in long runs (each run's jumps target its own
 * code). */
static size_t first_after(const struct cp_walk_order *o, const char *a, size_t lo, size_t n, const char *x,
			  bool ties)
{
	int limit = ties ? 0 : -1; /* a[k] goes first while cmp(a[k], x) <= limit */
	size_t hi = lo, step = 1;

	while (hi < n && cp_walk_order_cmp(o, a + hi * o->size, x) <= limit) {
		lo = hi + 1;
		hi += step;
		step *= 2;
	}
	if (hi > n)
		hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cp_walk_order_cmp(o, a + mid * o->size, x) <= limit)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* from's entries [i, p) outside the spans walked again, copied to out in
 * runs; how many. */
static size_t copy_taken(const struct cp_walk_spans *again, const struct sorted_list *l, size_t i, size_t p,
			 char *out)
{
	const size_t size = l->order->size;
	const char *from = l->from;
	size_t n = 0, run = i;
	uint64_t addr;

	for (; i < p; i++) {
		memcpy(&addr, from + i * size + l->order->addr_at, sizeof(addr));
		if (!walked_again(again, addr))
			continue;
		memcpy(out + n * size, from + run * size, (i - run) * size);
		n += i - run;
		run = i + 1;
	}
	if (p > run)
		memcpy(out + n * size, from + run * size, (p - run) * size);
	return n + (p - run);
}

/* Alternating runs: from's entries up to the next of mine (from's first
 * where they tie), then mine up to the next of from's. */
static bool merge(const struct cp_walk_spans *again, const struct sorted_list *l)
{
	const struct cp_walk_order *o = l->order;
	size_t i = 0, j = 0, n = 0, p, q, m = *l->n, size = o->size, cap = 0;
	char *out = NULL, *mine = *l->dst;
	const char *from = l->from;

	if (cp_big_grow(&out, &cap, m + l->nfrom + 1, size))
		return false;
	if (!cp_walk_sort(mine, m, o)) {
		cp_big_free(out, cap, size);
		return false;
	}
	while (i < l->nfrom || j < m) {
		p = j < m ? first_after(o, from, i, l->nfrom, mine + j * size, true) : l->nfrom;
		n += copy_taken(again, l, i, p, out + n * size);
		i = p;
		/* from may be NULL with nothing in it: no pointer made into it then */
		q = i < l->nfrom ? first_after(o, mine, j, m, from + i * size, false) : m;
		if (q > j)
			memcpy(out + n * size, mine + j * size, (q - j) * size);
		n += q - j;
		j = q;
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
