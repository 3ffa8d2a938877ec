/*
 * scan_strings.c - literals that hold a mapped module's name.
 *
 * The needles come from the rules: every module name, its path form (the
 * __pyx_f table names "cuda/bindings/cydriver.pxd"), every package prefix
 * that belongs to one layout only (cuda.bindings), and every module's
 * mangled prefix (__pyx_t_4cuda_8bindings_8cydriver_). A match counts when
 * it stands on name boundaries; its enclosing C string becomes a candidate,
 * and so does the needle itself when the linker merged it as the tail of a
 * longer string and code or a relocation points at the tail: then it is a
 * C string of its own, whatever stands before it ("see cuda.bindings.x"
 * or "Xcuda.bindings.x" in the user's code, and the import's literal in
 * Cython's, one tail merged into the other).
 *
 * cp_scan_strings_anywhere asks the cheaper question first: whether any
 * needle, or any mapped module's package as a whole C string, is anywhere
 * in the file's sections at all (scan.c: cp_scan_maps_nothing).
 */
#include "scan/scan.h"
#include "util/error.h"
#include "util/find.h"
#include "util/names.h"
#include "util/sort.h"

#include <elf.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* N_FROM: a mapped module's package, which counts only as a whole C string
 * and only where cp_scan_strings_anywhere looks */
enum needle_form { N_MODULE, N_PACKAGE, N_PATH, N_MANGLED, N_FROM };

struct needle {
	char text[CP_NEEDLE_MAX];
	size_t len;
	int layout;
	const char *module; /* rules-owned name */
	enum needle_form form;
	size_t anchor;      /* index into needles.anchor */
	size_t anchor_at;   /* where that anchor starts in text */
};

/* Needles share short anchors (all of cuda-python's hold "cuda"), so that a
 * section is searched once per anchor instead of once per needle: a 1 GiB
 * section took 6.5 s with one memmem pass per needle. */
#define ANCHOR_LEN 4

struct needles {
	struct needle *v;
	size_t n, cap;
	char (*anchor)[ANCHOR_LEN];
	size_t nanchor;
	size_t *slot, nslot;   /* open-addressing set of needle texts: index + 1, 0 free */
	size_t *by_anchor;     /* needle indexes by anchor, each anchor's in needle order */
	size_t *anchor_first;  /* anchor a's needles: by_anchor[anchor_first[a] .. [a + 1]) */
	struct { size_t lo, hi; } *anchor_at; /* least and most anchor_at of anchor a's needles */
	size_t dropped;        /* texts too long to be needles: no search rules them out */
};

static void needles_free(struct needles *ns)
{
	free(ns->v);
	free(ns->anchor);
	free(ns->slot);
	free(ns->by_anchor);
	free(ns->anchor_first);
	free(ns->anchor_at);
}

/* FNV-1a. */
static uint64_t hash_bytes(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

/* The slot of text in the set: the slot that holds it, or the free one
 * where it would go. */
static size_t *text_slot(const struct needles *ns, const char *text, size_t len)
{
	size_t i = (size_t)hash_bytes(text, len) & (ns->nslot - 1);

	while (ns->slot[i] && strcmp(ns->v[ns->slot[i] - 1].text, text) != 0)
		i = (i + 1) & (ns->nslot - 1);
	return &ns->slot[i];
}

/* Keeps the set at most half full, so that a lookup stays short. */
static int grow_text_set(struct needles *ns)
{
	size_t *old = ns->slot, nold = ns->nslot, i;

	if (2 * (ns->n + 1) <= ns->nslot)
		return 0;
	ns->nslot = nold ? 2 * nold : 64;
	ns->slot = calloc(ns->nslot, sizeof(*ns->slot));
	if (!ns->slot) {
		ns->slot = old;
		ns->nslot = nold;
		return -1;
	}
	for (i = 0; i < nold; i++)
		if (old[i])
			*text_slot(ns, ns->v[old[i] - 1].text, ns->v[old[i] - 1].len) = old[i];
	free(old);
	return 0;
}

/* A match: needle index and position, in the order the needles came. */
struct match {
	size_t needle, pos;
};

struct matches {
	struct match *v;
	size_t n, cap;
};

static int add_needle(struct needles *ns, const char *text, int layout, const char *module,
		      enum needle_form form)
{
	size_t len = strlen(text), *slot;

	if (len >= sizeof(ns->v[0].text))
		ns->dropped++;
	if (len == 0 || len >= sizeof(ns->v[0].text))
		return 0;
	if (grow_text_set(ns))
		return -1;
	slot = text_slot(ns, text, len);
	if (*slot)
		return 0;
	if (CP_GROW(ns->v, ns->cap, ns->n + 1))
		return -1;
	*slot = ns->n + 1;
	memcpy(ns->v[ns->n].text, text, len + 1);
	ns->v[ns->n].len = len;
	ns->v[ns->n].layout = layout;
	ns->v[ns->n].module = module;
	ns->v[ns->n].form = form;
	ns->n++;
	return 0;
}

static int add_packages(struct needles *ns, const cp_rules *r, const char *module)
{
	char pkg[512];
	const char *dot;

	for (dot = strchr(module, '.'); dot; dot = strchr(dot + 1, '.')) {
		size_t n = (size_t)(dot - module);
		int lay;

		if (n >= sizeof(pkg)) {
			ns->dropped++;
			return 0;
		}
		memcpy(pkg, module, n);
		pkg[n] = '\0';
		lay = cp_rules_package_layout(r, pkg);
		if (lay >= 0 && add_needle(ns, pkg, lay, module, N_PACKAGE))
			return -1;
	}
	return 0;
}

static int add_module_needles(struct needles *ns, const cp_rules *r, const char *m, int lay)
{
	char buf[512];
	size_t i;

	if (add_needle(ns, m, lay, m, N_MODULE) || add_packages(ns, r, m))
		return -1;
	snprintf(buf, sizeof(buf), "%s", m);
	for (i = 0; buf[i]; i++)
		if (buf[i] == '.')
			buf[i] = '/';
	if (add_needle(ns, buf, lay, m, N_PATH))
		return -1;
	if (cp_mangle_prefix(m, buf, sizeof(buf)) <= 0)
		ns->dropped++;
	else if (add_needle(ns, buf, lay, m, N_MANGLED))
		return -1;
	return 0;
}

static int build_needles(struct needles *ns, const cp_rules *r)
{
	size_t i;
	int k;

	for (i = 0; i < r->nmod; i++)
		for (k = 0; k < 2; k++)
			if (add_module_needles(ns, r, r->mod[i].name[k], r->mod[i].layout[k]))
				return -1;
	return 0;
}

/* `from cuda import cudart` leaves "cuda" and "cudart" as names of their
 * own, which no needle holds (scan_names.c pairs them): every mapped
 * module's package, for cp_scan_strings_anywhere. A text already a needle
 * stays one, which counts anywhere, not only as a whole string. */
static int add_from_packages(struct needles *ns, const cp_rules *r)
{
	char pkg[CP_NEEDLE_MAX];
	const char *m, *dot;
	size_t i, n;
	int k;

	for (i = 0; i < r->nmod; i++)
		for (k = 0; k < 2; k++) {
			m = r->mod[i].name[k];
			if (!(dot = strrchr(m, '.')))
				continue;
			if ((n = (size_t)(dot - m)) >= sizeof(pkg)) {
				ns->dropped++;
				continue;
			}
			memcpy(pkg, m, n);
			pkg[n] = '\0';
			if (add_needle(ns, pkg, r->mod[i].layout[k], m, N_FROM))
				return -1;
		}
	return 0;
}

/* The anchors: a greedy cover, whose next anchor is the ANCHOR_LEN bytes
 * held by most needles not yet covered, the first met (needle by needle,
 * then by position) of those held by as many. Needles shorter than an
 * anchor are their own.
 *
 * This was a scan of every needle's substrings counting, for each, the
 * needles holding it: cubic in the rules' size (1,000 mapped modules took
 * 21 s). The same choice is now made from one table of the substrings
 * ("grams"), each with the needles holding it (its postings, in needle
 * order, at its first place in each), and a heap of the grams by how many
 * uncovered needles hold them and where the first of those holds them.
 * Both only get worse as needles are covered, so a gram whose entry in the
 * heap is stale is put back with its current key, and one popped whose key
 * is current is the best: O(P log P) in the gram occurrences P. */
struct gram {
	uint32_t key;
	size_t cov;          /* uncovered needles holding it */
	size_t post, npost;  /* its postings: post[post .. post + npost) */
	size_t first;        /* postings before it are of covered needles */
	size_t last;         /* the needle that last counted it (building) */
};

struct posting {
	size_t needle, at;
};

/* A heap entry: the gram's key when it was pushed. */
struct ranked {
	size_t cov, needle, at, gram;
};

struct grams {
	struct gram *v;
	size_t n;
	size_t *slot, nslot;  /* gram index + 1, 0 free */
	struct posting *post;
	struct ranked *heap;
	size_t nheap;
};

static uint32_t gram_key(const char *p)
{
	uint32_t k;

	memcpy(&k, p, sizeof(k));
	return k;
}

/* The gram of key: its index, added when new. The table is sized for
 * every occurrence, so it never fills. */
static size_t gram_of(struct grams *g, uint32_t key)
{
	size_t i = (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 20) & (g->nslot - 1);

	while (g->slot[i] && g->v[g->slot[i] - 1].key != key)
		i = (i + 1) & (g->nslot - 1);
	if (!g->slot[i]) {
		g->v[g->n] = (struct gram){ key, 0, 0, 0, 0, SIZE_MAX };
		g->slot[i] = ++g->n;
	}
	return g->slot[i] - 1;
}

/* Whether x ranks above y: held by more, or first met earlier. */
static bool ranks_above(const struct ranked *x, const struct ranked *y)
{
	if (x->cov != y->cov)
		return x->cov > y->cov;
	return x->needle != y->needle ? x->needle < y->needle : x->at < y->at;
}

static void heap_push(struct grams *g, struct ranked r)
{
	size_t i = g->nheap++;

	while (i > 0 && ranks_above(&r, &g->heap[(i - 1) / 2])) {
		g->heap[i] = g->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	g->heap[i] = r;
}

static struct ranked heap_pop(struct grams *g)
{
	struct ranked top = g->heap[0], last = g->heap[--g->nheap];
	size_t i = 0, c;

	while ((c = 2 * i + 1) < g->nheap) {
		if (c + 1 < g->nheap && ranks_above(&g->heap[c + 1], &g->heap[c]))
			c++;
		if (!ranks_above(&g->heap[c], &last))
			break;
		g->heap[i] = g->heap[c];
		i = c;
	}
	if (g->nheap)
		g->heap[i] = last;
	return top;
}

/* The gram's current key; cov 0 when no uncovered needle holds it. */
static struct ranked gram_rank(const struct needles *ns, struct grams *g, size_t k)
{
	struct gram *x = &g->v[k];
	struct ranked r = { x->cov, 0, 0, k };

	while (x->first < x->npost && ns->v[g->post[x->post + x->first].needle].anchor != SIZE_MAX)
		x->first++;
	if (x->cov && x->first < x->npost) {
		r.needle = g->post[x->post + x->first].needle;
		r.at = g->post[x->post + x->first].at;
	} else {
		r.cov = 0;
	}
	return r;
}

static int build_grams(const struct needles *ns, struct grams *g)
{
	size_t i, k, occ = 0, sum = 0;

	for (i = 0; i < ns->n; i++)
		if (ns->v[i].len >= ANCHOR_LEN)
			occ += ns->v[i].len - ANCHOR_LEN + 1;
	for (g->nslot = 64; g->nslot < 2 * occ; g->nslot *= 2)
		;
	g->slot = calloc(g->nslot, sizeof(*g->slot));
	g->v = calloc(occ ? occ : 1, sizeof(*g->v));
	g->post = calloc(occ ? occ : 1, sizeof(*g->post));
	g->heap = calloc(occ ? occ : 1, sizeof(*g->heap));
	if (!g->slot || !g->v || !g->post || !g->heap)
		return -1;
	/* count each gram once per needle, then place the postings */
	for (i = 0; i < ns->n; i++)
		for (k = 0; k + ANCHOR_LEN <= ns->v[i].len; k++) {
			struct gram *x = &g->v[gram_of(g, gram_key(ns->v[i].text + k))];

			if (x->last != i) {
				x->last = i;
				x->npost++;
			}
		}
	for (k = 0; k < g->n; k++) {
		g->v[k].post = sum;
		sum += g->v[k].npost;
		g->v[k].cov = g->v[k].npost;
		g->v[k].npost = 0;
		g->v[k].last = SIZE_MAX;
	}
	for (i = 0; i < ns->n; i++)
		for (k = 0; k + ANCHOR_LEN <= ns->v[i].len; k++) {
			struct gram *x = &g->v[gram_of(g, gram_key(ns->v[i].text + k))];

			if (x->last != i) {
				x->last = i;
				g->post[x->post + x->npost++] = (struct posting){ i, k };
			}
		}
	return 0;
}

/* Needle i is covered: the grams it holds lose it. */
static void uncount(const struct needles *ns, struct grams *g, size_t i)
{
	size_t k;

	for (k = 0; k + ANCHOR_LEN <= ns->v[i].len; k++) {
		struct gram *x = &g->v[gram_of(g, gram_key(ns->v[i].text + k))];

		/* last still holds i from building: a stamp of SIZE_MAX - i marks
		 * the gram as uncounted for needle i (no needle index comes near) */
		if (x->last != SIZE_MAX - i) {
			x->last = SIZE_MAX - i;
			x->cov--;
		}
	}
}

/* Each anchor's needles, in needle order, for the search (find_anchored). */
static int index_anchors(struct needles *ns)
{
	size_t i, a;

	ns->anchor_first = calloc(ns->nanchor + 1, sizeof(*ns->anchor_first));
	ns->by_anchor = calloc(ns->n ? ns->n : 1, sizeof(*ns->by_anchor));
	ns->anchor_at = calloc(ns->nanchor ? ns->nanchor : 1, sizeof(*ns->anchor_at));
	if (!ns->anchor_first || !ns->by_anchor || !ns->anchor_at)
		return -1;
	for (a = 0; a < ns->nanchor; a++)
		ns->anchor_at[a].lo = SIZE_MAX;
	for (i = 0; i < ns->n; i++) {
		size_t k = ns->v[i].anchor;

		if (k == SIZE_MAX)
			continue;
		ns->anchor_first[k + 1]++;
		if (ns->v[i].anchor_at < ns->anchor_at[k].lo)
			ns->anchor_at[k].lo = ns->v[i].anchor_at;
		if (ns->v[i].anchor_at > ns->anchor_at[k].hi)
			ns->anchor_at[k].hi = ns->v[i].anchor_at;
	}
	for (a = 0; a < ns->nanchor; a++)
		ns->anchor_first[a + 1] += ns->anchor_first[a];
	for (i = 0; i < ns->n; i++)
		if (ns->v[i].anchor != SIZE_MAX)
			ns->by_anchor[ns->anchor_first[ns->v[i].anchor]++] = i;
	/* each start was moved to the next one's: move them back */
	for (a = ns->nanchor; a > 0; a--)
		ns->anchor_first[a] = ns->anchor_first[a - 1];
	ns->anchor_first[0] = 0;
	return 0;
}

static int choose_anchors(struct needles *ns)
{
	struct grams g = { NULL, 0, NULL, 0, NULL, NULL, 0 };
	size_t i, k;
	int ret = -1;

	ns->anchor = calloc(ns->n ? ns->n : 1, sizeof(*ns->anchor));
	if (!ns->anchor)
		goto out;
	for (i = 0; i < ns->n; i++)
		ns->v[i].anchor = SIZE_MAX;
	if (build_grams(ns, &g))
		goto out;
	for (k = 0; k < g.n; k++)
		heap_push(&g, gram_rank(ns, &g, k));
	while (g.nheap) {
		struct ranked top = heap_pop(&g), now = gram_rank(ns, &g, top.gram);
		const struct gram *x = &g.v[top.gram];

		if (now.cov == 0)
			continue;
		if (now.cov != top.cov || now.needle != top.needle || now.at != top.at) {
			heap_push(&g, now);
			continue;
		}
		memcpy(ns->anchor[ns->nanchor], ns->v[now.needle].text + now.at, ANCHOR_LEN);
		for (k = x->first; k < x->npost; k++) {
			const struct posting *p = &g.post[x->post + k];

			if (ns->v[p->needle].anchor != SIZE_MAX)
				continue;
			ns->v[p->needle].anchor = ns->nanchor;
			ns->v[p->needle].anchor_at = p->at;
			uncount(ns, &g, p->needle);
		}
		ns->nanchor++;
	}
	ret = index_anchors(ns);
out:
	free(g.v);
	free(g.slot);
	free(g.post);
	free(g.heap);
	return ret;
}

static bool on_boundary(const struct needle *n, const uint8_t *d, size_t size, size_t pos)
{
	return n->form == N_MANGLED || cp_name_on_boundary((const char *)d, size, pos, n->len);
}

static cp_status add_string(cp_scan *s, const struct cp_section *sec, uint64_t start,
			    uint64_t end, uint64_t at, const struct needle *n, cp_error *err)
{
	struct cp_string *str = cp_scan_string_at(s, sec->addr + start);

	if (str) {
		/* a longer needle at the same place says more (module over package) */
		if (str->needle_at == sec->addr + at && str->package && n->form == N_MODULE) {
			str->module = n->module;
			str->layout = n->layout;
			str->package = false;
			str->exact = start == at && end - start == n->len;
		}
		return CP_OK;
	}
	if (!(str = cp_scan_add_string(s, sec->addr + start, err)))
		return CP_E_INTERNAL;
	str->off = sec->offset + start;
	str->len = end - start;
	str->section = sec->name;
	str->layout = n->layout;
	str->module = n->module;
	str->needle_at = sec->addr + at;
	str->exact = start == at && end - start == n->len;
	str->package = n->form == N_PACKAGE;
	str->path_form = n->form == N_PATH;
	str->mangled = n->form == N_MANGLED;
	return CP_OK;
}

/* The image's relative relocations by addend, made when a merged tail
 * first needs them. */
struct addends {
	struct cp_reloc_at *v;
	size_t n;
	bool made;
};

/* Whether an instruction or a relative relocation points at va. */
static int pointed_at(const cp_scan *s, struct addends *a, uint64_t va)
{
	size_t first;

	if (cp_scan_xrefs_to(s, va, &first))
		return 1;
	if (!a->made) {
		a->made = true;
		if (!(a->v = cp_image_relatives_by_addend(s->img, &a->n)))
			return -1;
	}
	return cp_records_with_key(a->v, a->n, sizeof(*a->v), offsetof(struct cp_reloc_at, addend), va, &first) > 0;
}

/* The needle at pos, a module's name whose NUL ends its C string, as a
 * string of its own where something points at it (a merged tail). */
static cp_status merged_tail(cp_scan *s, const struct cp_section *sec, const uint8_t *d, size_t pos,
			     const struct needle *n, struct addends *a, cp_error *err)
{
	int at;

	if (n->form != N_MODULE || pos == 0 || !d[pos - 1] || sec->size - pos <= n->len || d[pos + n->len])
		return CP_OK;
	at = pointed_at(s, a, sec->addr + pos);
	if (at < 0)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	return at ? add_string(s, sec, pos, pos + n->len, pos, n, err) : CP_OK;
}

/* One match: its enclosing C string, and the needle as a merged tail. */
static cp_status on_match(cp_scan *s, const struct cp_section *sec, const uint8_t *d,
			  size_t pos, const struct needle *n, struct addends *a, cp_error *err)
{
	size_t start = pos;
	const uint8_t *nul = memchr(d + pos, 0, sec->size - pos);
	cp_status st;

	if (!nul)
		return CP_OK;
	while (start > 0 && d[start - 1] != 0)
		start--;
	st = add_string(s, sec, start, (size_t)(nul - d), pos, n, err);
	return st ? st : merged_tail(s, sec, d, pos, n, a, err);
}

static int add_match(struct matches *ms, size_t needle, size_t pos)
{
	if (CP_GROW(ms->v, ms->cap, ms->n + 1))
		return -1;
	ms->v[ms->n++] = (struct match){ needle, pos };
	return 0;
}

/* Every occurrence of a needle holds its anchor at anchor_at, so each one
 * is found exactly once, at the hit of its own anchor. Hits are searched
 * in [from, to); a needle's bytes may reach past either end. */
static int find_anchored(const struct needles *ns, size_t a, const cp_image *img,
			 const struct cp_section *sec, const uint8_t *d, size_t from, size_t to,
			 struct matches *ms)
{
	size_t size = sec->size;
	size_t end = to + ANCHOR_LEN - 1 < size ? to + ANCHOR_LEN - 1 : size;
	const uint8_t *h;
	struct cp_find f;
	size_t j;

	cp_find_init(&f, d + from, end - from, ns->anchor[a], ANCHOR_LEN);
	while ((h = cp_find_next(&f)) != NULL) {
		size_t hit = (size_t)(h - d);

		/* Every needle of this anchor would begin inside cypatch's
		 * fallback context, whose matches scan_section drops: the stub
		 * carries every mapped name, and trying each needle at each of
		 * their hits was quadratic in the rules. */
		if (hit >= ns->anchor_at[a].hi &&
		    cp_image_in_fallback(img, sec->addr + hit - ns->anchor_at[a].hi) &&
		    cp_image_in_fallback(img, sec->addr + hit - ns->anchor_at[a].lo))
			continue;
		for (j = ns->anchor_first[a]; j < ns->anchor_first[a + 1]; j++) {
			size_t i = ns->by_anchor[j];
			const struct needle *n = &ns->v[i];

			if (hit < n->anchor_at || n->len > size - (hit - n->anchor_at) ||
			    memcmp(d + hit - n->anchor_at, n->text, n->len))
				continue;
			if (add_match(ms, i, hit - n->anchor_at))
				return -1;
		}
	}
	return 0;
}

/* Needles shorter than an anchor: one pass each. */
static int find_plain(const struct needle *n, size_t index, const uint8_t *d, size_t size,
		      size_t from, size_t to, struct matches *ms)
{
	size_t end = to + n->len - 1 < size ? to + n->len - 1 : size;
	const uint8_t *p = d + from;

	while ((p = memmem(p, end - (size_t)(p - d), n->text, n->len)) != NULL) {
		if (add_match(ms, index, (size_t)(p - d)))
			return -1;
		p++;
	}
	return 0;
}

/* Every needle that begins in [from, to) of the section: each anchor's,
 * then those shorter than an anchor. */
static int find_window(const struct needles *ns, const cp_image *img, const struct cp_section *sec,
		       const uint8_t *d, size_t from, size_t to, struct matches *ms)
{
	size_t i;

	for (i = 0; i < ns->nanchor; i++)
		if (find_anchored(ns, i, img, sec, d, from, to, ms))
			return -1;
	for (i = 0; i < ns->n; i++)
		if (ns->v[i].anchor == SIZE_MAX && find_plain(&ns->v[i], i, d, sec->size, from, to, ms))
			return -1;
	return 0;
}

static int by_needle(const void *a, const void *b)
{
	const struct match *x = a, *y = b;

	if (x->needle != y->needle)
		return x->needle < y->needle ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* A section is searched a window at a time (all anchors in one window
 * before the next), each window's pages handed back after it, so that a
 * 1 GiB section never is resident at once; the windows where a needle
 * begins are noted for the check, which passes over the others when they
 * did not change. */
static int find_all(cp_scan *s, const struct cp_section *sec, const struct needles *ns,
		    const uint8_t *d, struct matches *ms)
{
	size_t from, to, k = (size_t)(sec - s->img->sec);
	size_t w = s->window_at[k];

	for (from = 0; from < sec->size; from = to, w++) {
		size_t before = ms->n;

		to = sec->size - from > CP_SEARCH_WINDOW ? from + CP_SEARCH_WINDOW : sec->size;
		if (s->skip && s->skip->window(s->skip->ctx, k, from, to))
			continue;
		if (find_window(ns, s->img, sec, d, from, to, ms))
			return -1;
		if (sec->size > CP_SEARCH_WINDOW)
			cp_image_done_with(s->img, sec->offset + from, to - from);
		s->window_hit[w] = ms->n > before;
	}
	/* needle by needle, as the candidates' precedence expects (add_string) */
	if (ms->n)
		qsort(ms->v, ms->n, sizeof(*ms->v), by_needle);
	return 0;
}

static cp_status scan_section(cp_scan *s, const struct cp_section *sec,
			      const struct needles *ns, struct addends *a, cp_error *err)
{
	const uint8_t *d = cp_image_bytes(s->img, sec->offset, sec->size);
	struct matches ms = { NULL, 0, 0 };
	cp_status st = CP_OK;
	size_t i;

	if (!d)
		return CP_OK;
	if (find_all(s, sec, ns, d, &ms)) {
		free(ms.v);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	}
	for (i = 0; !st && i < ms.n; i++) {
		const struct needle *n = &ns->v[ms.v[i].needle];
		size_t pos = ms.v[i].pos;

		if (cp_in_blob(s, sec->addr + pos, n->len) || cp_image_in_fallback(s->img, sec->addr + pos))
			continue;
		/* off a name's boundary, only a tail something points at counts */
		st = on_boundary(n, d, sec->size, pos) ? on_match(s, sec, d, pos, n, a, err)
						       : merged_tail(s, sec, d, pos, n, a, err);
	}
	free(ms.v);
	return st;
}

cp_status cp_scan_strings(cp_scan *s, cp_error *err)
{
	struct needles ns = { NULL, 0, 0, NULL, 0, NULL, 0, NULL, NULL, NULL, 0 };
	struct addends a = { NULL, 0, false };
	cp_status st = CP_OK;
	size_t i;

	if (build_needles(&ns, s->rules) || choose_anchors(&ns)) {
		needles_free(&ns);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	}
	for (i = 0; !st && i < s->img->nsec; i++) {
		const struct cp_section *sec = &s->img->sec[i];

		if (cp_section_is_data(sec))
			st = scan_section(s, sec, &ns, &a, err);
	}
	needles_free(&ns);
	free(a.v);
	return st;
}

/* Whether a match counts for cp_scan_strings_anywhere: a package as a
 * whole C string (scan_names.c reads names up to their NUL), any other
 * needle wherever it is. */
static bool counts_anywhere(const struct needle *n, const uint8_t *d, size_t size, size_t pos)
{
	return n->form != N_FROM || (pos + n->len < size && d[pos + n->len] == 0);
}

/* The search stops at the first needle that counts, so its windows are
 * small: a module that names a mapped module usually does so early in its
 * .rodata (cuda-python's driver module: 2,888 bytes in), which may hold a
 * GiB more. They begin at 64 KiB and double up to 1 MiB. */
#define ANYWHERE_FIRST ((size_t)1 << 16)
#define ANYWHERE_WINDOW ((size_t)1 << 20)

/* Whether a needle that counts is in the section, window by window (those
 * of a section as large as the string search's windows handed back as it
 * goes; the scan reads the smaller ones next). */
static int section_holds(const cp_image *img, const struct cp_section *sec, const struct needles *ns,
			 struct matches *ms, bool *found)
{
	const uint8_t *d = cp_image_bytes(img, sec->offset, sec->size);
	size_t from, to, i, window = ANYWHERE_FIRST;

	if (!d) {
		*found = true; /* bytes it cannot read rule nothing out */
		return 0;
	}
	for (from = 0; from < sec->size && !*found; from = to) {
		to = sec->size - from > window ? from + window : sec->size;
		window = window < ANYWHERE_WINDOW ? 2 * window : window;
		ms->n = 0;
		if (find_window(ns, img, sec, d, from, to, ms))
			return -1;
		for (i = 0; i < ms->n && !*found; i++)
			*found = counts_anywhere(&ns->v[ms->v[i].needle], d, sec->size, ms->v[i].pos);
		if (sec->size > CP_SEARCH_WINDOW)
			cp_image_done_with(img, sec->offset + from, to - from);
	}
	return 0;
}

/* When the anywhere search reads a section: data first (where a needle
 * most often is), then the rest of what the process maps (code, .dynstr),
 * device code last; -1 never: the scan reads names only through addresses
 * (cp_image_section_at), so never from what is not mapped. */
static int anywhere_pass(const struct cp_section *sec)
{
	if (sec->type == SHT_NOBITS || !sec->size || !cp_section_is_mapped(sec))
		return -1;
	if (cp_section_is_device_code(sec))
		return 2;
	return cp_section_is_data(sec) ? 0 : 1;
}

cp_status cp_scan_strings_anywhere(const cp_image *img, const cp_rules *rules, bool *found, cp_error *err)
{
	struct needles ns = { NULL, 0, 0, NULL, 0, NULL, 0, NULL, NULL, NULL, 0 };
	struct matches ms = { NULL, 0, 0 };
	int pass, bad = 0;
	size_t i;

	*found = false;
	if (build_needles(&ns, rules) || add_from_packages(&ns, rules) || choose_anchors(&ns)) {
		needles_free(&ns);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	}
	*found = ns.dropped > 0;
	for (pass = 0; pass < 3; pass++)
		for (i = 0; !bad && !*found && i < img->nsec; i++)
			if (anywhere_pass(&img->sec[i]) == pass)
				bad = section_holds(img, &img->sec[i], &ns, &ms, found);
	free(ms.v);
	needles_free(&ns);
	if (bad)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	return CP_OK;
}
