/*
 * scan_strings.c - literals that hold a mapped module's name.
 *
 * The needles come from the rules: every module name, its path form (the
 * __pyx_f table names "cuda/bindings/cydriver.pxd"), every package prefix
 * that belongs to one layout only (cuda.bindings), and every module's
 * mangled prefix (__pyx_t_4cuda_8bindings_8cydriver_). A match counts when
 * it stands on name boundaries; its enclosing C string becomes a candidate,
 * and so does the needle itself when the linker merged it as the tail of a
 * longer string and code points at the tail.
 */
#include "scan.h"
#include "error.h"
#include "find.h"
#include "names.h"

#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum needle_form { N_MODULE, N_PACKAGE, N_PATH, N_MANGLED };

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
};

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
	size_t i, len = strlen(text);

	if (len == 0 || len >= sizeof(ns->v[0].text))
		return 0;
	for (i = 0; i < ns->n; i++)
		if (strcmp(ns->v[i].text, text) == 0)
			return 0;
	if (CP_GROW(ns->v, ns->cap, ns->n + 1))
		return -1;
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

		if (n >= sizeof(pkg))
			return 0;
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
	if (cp_mangle_prefix(m, buf, sizeof(buf)) > 0 && add_needle(ns, buf, lay, m, N_MANGLED))
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

/* How many needles without an anchor hold the ANCHOR_LEN bytes at text. */
static size_t coverage(const struct needles *ns, const char *text)
{
	size_t i, n = 0;

	for (i = 0; i < ns->n; i++)
		n += ns->v[i].anchor == SIZE_MAX &&
		     memmem(ns->v[i].text, ns->v[i].len, text, ANCHOR_LEN) != NULL;
	return n;
}

/* Greedy cover: the substring held by most uncovered needles becomes the
 * next anchor. Needles shorter than an anchor are their own. */
static int choose_anchors(struct needles *ns)
{
	size_t i, k, best_n, left = ns->n;
	const char *best;

	ns->anchor = calloc(ns->n ? ns->n : 1, sizeof(*ns->anchor));
	if (!ns->anchor)
		return -1;
	for (i = 0; i < ns->n; i++)
		ns->v[i].anchor = SIZE_MAX;
	while (left) {
		best = NULL;
		best_n = 0;
		for (i = 0; i < ns->n; i++)
			for (k = 0; ns->v[i].anchor == SIZE_MAX && k + ANCHOR_LEN <= ns->v[i].len; k++)
				if (coverage(ns, ns->v[i].text + k) > best_n) {
					best = ns->v[i].text + k;
					best_n = coverage(ns, best);
				}
		if (!best)
			break;
		memcpy(ns->anchor[ns->nanchor], best, ANCHOR_LEN);
		for (i = 0; i < ns->n; i++) {
			const char *at = ns->v[i].anchor == SIZE_MAX
						 ? memmem(ns->v[i].text, ns->v[i].len, best, ANCHOR_LEN) : NULL;

			if (at) {
				ns->v[i].anchor = ns->nanchor;
				ns->v[i].anchor_at = (size_t)(at - ns->v[i].text);
				left--;
			}
		}
		ns->nanchor++;
	}
	return 0;
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
	if (CP_GROW(s->strs, s->capstrs, s->nstrs + 1))
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	str = &s->strs[s->nstrs++];
	memset(str, 0, sizeof(*str));
	str->va = sec->addr + start;
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

/* One match: its enclosing C string, and the needle as a merged tail. */
static cp_status on_match(cp_scan *s, const struct cp_section *sec, const uint8_t *d,
			  size_t pos, const struct needle *n, cp_error *err)
{
	size_t start = pos, end;
	const uint8_t *nul = memchr(d + pos, 0, sec->size - pos);
	size_t first;
	cp_status st;

	if (!nul)
		return CP_OK;
	end = (size_t)(nul - d);
	while (start > 0 && d[start - 1] != 0)
		start--;
	st = add_string(s, sec, start, end, pos, n, err);
	if (st || start == pos || end != pos + n->len || n->form != N_MODULE)
		return st;
	if (cp_scan_xrefs_to(s, sec->addr + pos, &first) == 0)
		return CP_OK;
	return add_string(s, sec, pos, end, pos, n, err);
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
static int find_anchored(const struct needles *ns, size_t a, const uint8_t *d, size_t size,
			 size_t from, size_t to, struct matches *ms)
{
	size_t end = to + ANCHOR_LEN - 1 < size ? to + ANCHOR_LEN - 1 : size;
	const uint8_t *h;
	struct cp_find f;
	size_t i;

	cp_find_init(&f, d + from, end - from, ns->anchor[a], ANCHOR_LEN);
	while ((h = cp_find_next(&f)) != NULL) {
		size_t hit = (size_t)(h - d);

		for (i = 0; i < ns->n; i++) {
			const struct needle *n = &ns->v[i];

			if (n->anchor != a || hit < n->anchor_at || n->len > size - (hit - n->anchor_at) ||
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
	size_t i, from, to, k = (size_t)(sec - s->img->sec);
	size_t w = s->window_at[k];

	for (from = 0; from < sec->size; from = to, w++) {
		size_t before = ms->n;

		to = sec->size - from > CP_SEARCH_WINDOW ? from + CP_SEARCH_WINDOW : sec->size;
		if (s->skip && s->skip->window(s->skip->ctx, k, from, to))
			continue;
		for (i = 0; i < ns->nanchor; i++)
			if (find_anchored(ns, i, d, sec->size, from, to, ms))
				return -1;
		for (i = 0; i < ns->n; i++)
			if (ns->v[i].anchor == SIZE_MAX &&
			    find_plain(&ns->v[i], i, d, sec->size, from, to, ms))
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
			      const struct needles *ns, cp_error *err)
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

		if (!on_boundary(n, d, sec->size, pos) ||
		    cp_in_blob(s, sec->addr + pos, n->len) ||
		    cp_image_in_fallback(s->img, sec->addr + pos))
			continue;
		st = on_match(s, sec, d, pos, n, err);
	}
	free(ms.v);
	return st;
}

cp_status cp_scan_strings(cp_scan *s, cp_error *err)
{
	struct needles ns = { NULL, 0, 0, NULL, 0 };
	cp_status st = CP_OK;
	size_t i;

	if (build_needles(&ns, s->rules) || choose_anchors(&ns)) {
		free(ns.v);
		free(ns.anchor);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	}
	for (i = 0; !st && i < s->img->nsec; i++) {
		const struct cp_section *sec = &s->img->sec[i];

		if (cp_section_is_data(sec))
			st = scan_section(s, sec, &ns, err);
	}
	free(ns.v);
	free(ns.anchor);
	return st;
}

int cp_scan_name_layout(const cp_scan *s, const char *v, const char **module)
{
	const cp_rules *r = s->rules;
	size_t i;
	int k, lay;

	for (i = 0; i < r->nmod; i++)
		for (k = 0; k < 2; k++)
			if (strcmp(r->mod[i].name[k], v) == 0) {
				*module = r->mod[i].name[k];
				return r->mod[i].layout[k];
			}
	lay = cp_rules_package_layout(r, v);
	if (lay >= 0)
		*module = v;
	return lay;
}

int cp_scan_signature_layout(const cp_scan *s, const char *sig, const char **module)
{
	const cp_rules *r = s->rules;
	char buf[512];
	size_t i;
	int k;

	for (i = 0; i < r->nmod; i++)
		for (k = 0; k < 2; k++)
			if (cp_mangle_prefix(r->mod[i].name[k], buf, sizeof(buf)) > 0 &&
			    strstr(sig, buf)) {
				*module = r->mod[i].name[k];
				return r->mod[i].layout[k];
			}
	return -1;
}
