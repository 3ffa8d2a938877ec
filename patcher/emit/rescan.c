/*
 * rescan.c - the output is scanned again and compared with the plan.
 */
#include "emit/rescan.h"
#include "arch/code.h"
#include "util/error.h"
#include "scan/scan.h"

#include <elf.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cp_status no_other_layout(const cp_scan *s, int target, const char *path, cp_error *err)
{
	size_t i;

	for (i = 0; i < s->nrefs; i++) {
		const struct cp_ref *r = &s->refs[i];

		if (r->layout < 0 || r->layout == target || !cp_ref_is_live(r))
			continue;
		return cp_fail(err, CP_E_INPUT, "%s: check failed: the output still holds %s \"%s\" of layout %s",
			       path, cp_ref_kind_name(r->kind), r->value, s->rules->layout[r->layout]);
	}
	return CP_OK;
}

/* Live references of a kind. */
static size_t count_kind(const cp_scan *s, enum cp_ref_kind k)
{
	size_t i, n = 0;

	for (i = 0; i < s->nrefs; i++)
		n += s->refs[i].kind == k && cp_ref_is_live(&s->refs[i]);
	return n;
}

/*
 * A from-import is inferred from a pair of Python-level names, and the
 * output's pairs can read differently: `from cuda.bindings import driver,
 * runtime` becomes `from cuda import cuda, cudart`, where "cuda" alone
 * also fits `import cuda.x` and is not reported. So a retarget is checked
 * by the names themselves: every from-import of the input has both names
 * of its target form among the output's names (no_other_layout has made
 * sure none of another layout is left).
 */
static cp_status from_imports_kept(const cp_scan *a, const cp_scan *b, int target, const char *path,
				   cp_error *err)
{
	size_t i;

	for (i = 0; i < a->nrefs; i++) {
		const struct cp_ref *r = &a->refs[i];
		const char *t, *dot;

		/* only a from-import's module is sure to be known here */
		if (r->kind != CP_K_FROMIMPORT || !cp_ref_is_live(r))
			continue;
		t = r->layout == target ? r->module : cp_rules_map(a->rules, r->module, target);
		dot = t ? strrchr(t, '.') : NULL;
		if (!dot || !cp_scan_has_pyname(b, t, (size_t)(dot - t)) || !cp_scan_has_pyname(b, dot + 1, strlen(dot + 1)))
			return cp_fail(err, CP_E_INPUT, "%s: check failed: from %s import %s has no counterpart "
				       "in the output (from %.*s import %s)", path, r->package, r->name,
				       dot ? (int)(dot - t) : 0, t ? t : "", dot ? dot + 1 : "?");
	}
	return CP_OK;
}

/* Each kind that binds keeps its number of references; from-imports
 * of a retarget are checked by their names (from_imports_kept). */
static cp_status counterparts(const cp_scan *a, const cp_scan *b, int target, const char *path, cp_error *err)
{
	static const enum cp_ref_kind kinds[] = { CP_K_CIMPORT, CP_K_FUNCTION, CP_K_VARIABLE, CP_K_TYPE,
						  CP_K_FILENAME, CP_K_FROMIMPORT };
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (kinds[i] == CP_K_FROMIMPORT && target >= 0)
			return from_imports_kept(a, b, target, path, err);
		if (count_kind(a, kinds[i]) != count_kind(b, kinds[i]))
			return cp_fail(err, CP_E_INPUT, "%s: check failed: %zu %s references before, %zu after",
				       path, count_kind(a, kinds[i]), cp_ref_kind_name(kinds[i]),
				       count_kind(b, kinds[i]));
	}
	return CP_OK;
}

/* Messages of the check name the input: the output is a temporary file
 * that is gone by the time the user reads them. */
static cp_status reaches(cp_dis *d, const cp_image *out, const char *name, uint64_t addr, uint64_t want,
			 cp_error *err)
{
	uint64_t target;

	if (cp_dis_reaches(d, out, addr, &target) && target == want)
		return CP_OK;
	return cp_fail(err, CP_E_INTERNAL, "%s: check failed: the instruction at %#llx does not reach %#llx",
		       name, (unsigned long long)addr, (unsigned long long)want);
}

/* Every redirected operand, rewritten branch and new thunk instruction
 * decodes to the address planned. */
static cp_status operands_decode(const cp_image *out, const char *name, const struct cp_plan *p,
				 cp_error *err)
{
	cp_dis d;
	size_t i;
	cp_status st = cp_dis_open(&d, out, err);

	for (i = 0; !st && i < p->nedits; i++) {
		const struct cp_edit *e = &p->edits[i];

		if (e->kind == CP_EDIT_DISP || e->kind == CP_EDIT_BRANCH)
			st = reaches(&d, out, name, e->site, e->target, err);
	}
	for (i = 0; !st && i < p->nexpects; i++)
		st = reaches(&d, out, name, p->expects[i].addr, p->expects[i].target, err);
	cp_dis_close(&d);
	return st;
}

static bool edited(const struct cp_plan *p, uint64_t off)
{
	size_t lo = 0, hi = p->nedits;

	/* edits are sorted by offset and do not overlap (plan/edits.c) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->edits[mid].off + p->edits[mid].len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->nedits && p->edits[lo].off <= off;
}

/* The ELF header's fields that a new section changes, and the new space. */
static bool added(const struct cp_plan *p, size_t off)
{
	size_t k;

	if ((off >= offsetof(Elf64_Ehdr, e_shoff) && off < offsetof(Elf64_Ehdr, e_shoff) + 8) ||
	    (off >= offsetof(Elf64_Ehdr, e_shnum) && off < offsetof(Elf64_Ehdr, e_shnum) + 2))
		return true;
	for (k = 0; k < CP_NSPACES; k++)
		if (off >= p->space[k].seg_off && off < p->space[k].seg_off + p->space[k].size)
			return true;
	return false;
}

/* Inside the runs, the output differs from the input only where the plan
 * writes. */
static cp_status runs_planned(const cp_image *in, const struct cp_plan *p, const struct cp_delta *d,
			      const char *path, cp_error *err)
{
	size_t i;
	uint64_t k;

	for (i = 0; i < d->nrun; i++)
		for (k = d->run[i].off; k < d->run[i].off + d->run[i].len; k++) {
			if (in->data[k] == d->run[i].bytes[k - d->run[i].off] || edited(p, k) ||
			    (cp_plan_new_bytes(p) && added(p, k)))
				continue;
			return cp_fail(err, CP_E_INTERNAL, "%s: check failed: byte %#llx changed outside the plan",
				       path, (unsigned long long)k);
		}
	return CP_OK;
}

/* The output holds the delta: its size, every run and the tail. The bytes
 * between the runs are the kernel's copy of the input (emit.c), whose
 * length the copy loop checked; reading them again would cost the file. */
static cp_status holds_delta(const cp_image *out, const struct cp_delta *d, const char *path,
			     cp_error *err)
{
	size_t i;

	if (out->size != d->size)
		return cp_fail(err, CP_E_INTERNAL, "%s: check failed: the output has %zu bytes, not %llu",
			       path, out->size, (unsigned long long)d->size);
	for (i = 0; i < d->nrun; i++)
		if (memcmp(out->data + d->run[i].off, d->run[i].bytes, d->run[i].len))
			return cp_fail(err, CP_E_INTERNAL, "%s: check failed: bytes %#llx..%#llx differ from the plan",
				       path, (unsigned long long)d->run[i].off,
				       (unsigned long long)(d->run[i].off + d->run[i].len));
	if (memcmp(out->data + d->in_size, d->tail, d->size - d->in_size))
		return cp_fail(err, CP_E_INTERNAL, "%s: check failed: the appended bytes differ from the plan", path);
	return CP_OK;
}

/* What the check's scan may pass over: a window of an output section
 * that sits where the input's did, with the same bytes, in which the
 * input's scan found no needle beginning, and which no run of the delta
 * reaches (a needle that begins in it may run CP_NEEDLE_MAX bytes past it).
 * A needle in the output either lies in unchanged bytes, where the input's
 * scan found it, or touches a run; so on a 1 GiB module whose bulk is one
 * data section, the check searches the windows the edit touched. */
struct unchanged {
	const cp_image *in, *out;
	const cp_scan *in_scan;
	const struct cp_delta *d;
};

static bool unchanged_window(const void *ctx, size_t i, uint64_t from, uint64_t to)
{
	const struct unchanged *u = ctx;
	const struct cp_section *a, *b;
	uint64_t lo, hi;
	size_t k;

	if (i >= u->in->nsec || i >= u->out->nsec)
		return false;
	a = &u->in->sec[i];
	b = &u->out->sec[i];
	if (a->offset != b->offset || a->size != b->size || a->type != b->type || a->flags != b->flags ||
	    b->offset + b->size > u->d->in_size || cp_scan_window_hit(u->in_scan, i, from))
		return false;
	lo = b->offset + from;
	hi = b->offset + to + CP_NEEDLE_MAX;
	for (k = 0; k < u->d->nrun; k++)
		if (u->d->run[k].off < hi && u->d->run[k].off + u->d->run[k].len > lo)
			return false;
	return true;
}

/* Reading the output failed (the reader names the temporary file): the
 * same reason, under the input's name, as the internal error it is. */
static cp_status output_failed(cp_status st, const char *path, const char *name, cp_error *err)
{
	size_t n = strlen(path);
	char why[sizeof(err->msg)];

	if (!st || !err)
		return st;
	snprintf(why, sizeof(why), "%s", strncmp(err->msg, path, n) == 0 && strncmp(err->msg + n, ": ", 2) == 0
					       ? err->msg + n + 2 : err->msg);
	return cp_fail(err, CP_E_INTERNAL, "%s: check failed: reading the output: %s", name, why);
}

cp_status cp_rescan(const cp_image *in, const cp_scan *in_scan, const struct cp_plan *plan,
		   const char *path, const struct cp_delta *d, bool full_check, cp_error *err)
{
	cp_image *img = NULL;
	cp_scan *scan = NULL;
	struct unchanged u = { in, NULL, in_scan, d };
	struct cp_scan_skip skip = { unchanged_window, &u, in_scan, in, full_check };
	cp_status st = runs_planned(in, plan, d, in->path, err);

	if (!st)
		st = output_failed(cp_image_open(path, &img, err), path, in->path, err);
	if (!st)
		st = holds_delta(img, d, in->path, err);
	if (!st)
		st = operands_decode(img, in->path, plan, err);
	u.out = img;
	if (!st)
		st = output_failed(cp_scan_run_skipping(img, in_scan->rules, &skip, &scan, err), path, in->path,
				   err);
	if (!st && plan->target >= 0)
		st = no_other_layout(scan, plan->target, in->path, err);
	if (!st && plan->target < 0 && !scan->fallback)
		st = cp_fail(err, CP_E_INTERNAL, "%s: check failed: the output has no fallback context", in->path);
	if (!st)
		st = counterparts(in_scan, scan, plan->target, in->path, err);
	cp_scan_free(scan);
	cp_image_close(img);
	return st;
}
