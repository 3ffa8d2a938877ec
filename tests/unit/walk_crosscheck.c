/*
 * walk_crosscheck.c - the check's shortcut against the long way. The check
 * walks again only the functions whose bytes an edit changed and takes the
 * input's findings for the rest (scan/scan_splice.c). For every module
 * given, patched to each layout, the output is scanned both ways: walked
 * in full, and with the input's walk taken where it may be; every finding
 * of the walk is compared (references into data, calls and their argument
 * values, jumps, uses of imports and of function starts, import blocks and
 * their loads), then every reference and its sites. It also counts the
 * outputs where the shortcut walked some functions again and took the
 * rest, and fails if there were none: a cross-check that never crossed
 * anything proves nothing. Each input is also walked on one thread and
 * on 2, 3 and 8 (scan/scan_threads.c), and the findings compared the same
 * way, and the backward search of scan/reach.c answers as it would with
 * whole functions decoded (check_reach). Exits 1 on the first difference,
 * naming it.
 *
 * usage: walk_crosscheck RULES FILE|DIR...  (directories: every *.so below)
 */
#include "cypatch.h"
#include "elf/image.h"
#include "scan/reach.h"
#include "scan/scan.h"
#include "scan/scan_walk.h"
#include "arch/code.h"
#include "so_files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int differ(const char *path, const char *layout, const char *what, size_t i)
{
	fprintf(stderr, "walk_crosscheck: %s (%s): %s %zu differs between the walk and the shortcut\n", path,
		layout, what, i);
	return 1;
}

static bool never(const void *ctx, size_t sec, uint64_t from, uint64_t to)
{
	(void)ctx;
	(void)sec;
	(void)from;
	(void)to;
	return false;
}

static bool same_str(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

/* Field by field: the structs have padding, which memcmp would compare. */
static bool same_args(const struct cp_val *x, const struct cp_val *y)
{
	size_t k;

	for (k = 0; k < 6; k++)
		if (x[k].kind != y[k].kind || x[k].v != y[k].v || x[k].origin != y[k].origin)
			return false;
	return true;
}

static bool same_block(const struct cp_import_block *x, const struct cp_import_block *y)
{
	size_t k;

	if (x->call != y->call || !same_str(x->module, y->module) || x->nloads != y->nloads)
		return false;
	for (k = 0; k < x->nloads; k++)
		if (x->loads[k].target != y->loads[k].target || x->loads[k].at != y->loads[k].at ||
		    x->loads[k].clean != y->loads[k].clean)
			return false;
	return true;
}

static int compare_lists(const cp_scan *a, const cp_scan *b, const char *path, const char *layout)
{
	size_t i;

	if (a->nxrefs != b->nxrefs || a->njumps != b->njumps || a->nderived != b->nderived)
		return differ(path, layout, "count of xrefs, jumps or derived references", 0);
	for (i = 0; i < a->nxrefs; i++)
		if (a->xrefs[i].addr != b->xrefs[i].addr || a->xrefs[i].target != b->xrefs[i].target)
			return differ(path, layout, "xref", i);
	for (i = 0; i < a->njumps; i++)
		if (a->jumps[i].from != b->jumps[i].from || a->jumps[i].to != b->jumps[i].to)
			return differ(path, layout, "jump", i);
	for (i = 0; i < a->nderived; i++)
		if (a->derived[i].addr != b->derived[i].addr || a->derived[i].base != b->derived[i].base ||
		    a->derived[i].target != b->derived[i].target)
			return differ(path, layout, "derived reference", i);
	return 0;
}

static bool same_at(const struct cp_walk_at *x, const struct cp_walk_at *y)
{
	return x->ncalls == y->ncalls && x->nuses == y->nuses && x->nfuses == y->nfuses &&
	       x->nderived == y->nderived && x->nblocks == y->nblocks && cp_walk_state_equal(&x->state, &y->state);
}

/* The units' and points' records (the check's splice takes the input's). */
static int compare_marks(const cp_scan *a, const cp_scan *b, const char *path, const char *layout)
{
	size_t i;

	if (a->nmarks != b->nmarks)
		return differ(path, layout, "count of units", 0);
	for (i = 0; i < a->nmarks; i++) {
		const struct cp_walk_mark *x = &a->marks[i], *y = &b->marks[i];

		if (x->start != y->start || x->end != y->end || !same_at(&x->at, &y->at))
			return differ(path, layout, "unit", i);
	}
	if (a->npoints != b->npoints)
		return differ(path, layout, "count of points inside functions", 0);
	for (i = 0; i < a->npoints; i++)
		if (a->points[i].addr != b->points[i].addr || !same_at(&a->points[i].at, &b->points[i].at) ||
		    memcmp(&a->points[i].regs, &b->points[i].regs, sizeof(a->points[i].regs)))
			return differ(path, layout, "point inside a function", i);
	return 0;
}

static int compare_calls(const cp_scan *a, const cp_scan *b, const char *path, const char *layout)
{
	size_t i;

	if (a->ncalls != b->ncalls || a->nuses != b->nuses || a->nfuses != b->nfuses || a->nblocks != b->nblocks)
		return differ(path, layout, "count of calls, uses or blocks", 0);
	for (i = 0; i < a->ncalls; i++)
		if (a->calls[i].addr != b->calls[i].addr || !same_str(a->calls[i].name, b->calls[i].name) ||
		    !same_args(a->calls[i].arg, b->calls[i].arg))
			return differ(path, layout, "call", i);
	for (i = 0; i < a->nuses; i++)
		if (a->uses[i].addr != b->uses[i].addr || !same_str(a->uses[i].name, b->uses[i].name) ||
		    a->uses[i].slot != b->uses[i].slot || a->uses[i].ref != b->uses[i].ref)
			return differ(path, layout, "use of an import", i);
	for (i = 0; i < a->nfuses; i++)
		if (a->fuses[i].addr != b->fuses[i].addr || a->fuses[i].target != b->fuses[i].target ||
		    a->fuses[i].kind != b->fuses[i].kind || !same_args(a->fuses[i].arg, b->fuses[i].arg))
			return differ(path, layout, "use of a function start", i);
	for (i = 0; i < a->nblocks; i++)
		if (!same_block(&a->blocks[i], &b->blocks[i]))
			return differ(path, layout, "import block", i);
	return 0;
}

static int compare_refs(const cp_scan *a, const cp_scan *b, const char *path, const char *layout)
{
	size_t i, k;

	if (a->nrefs != b->nrefs)
		return differ(path, layout, "reference count", a->nrefs);
	for (i = 0; i < a->nrefs; i++) {
		const struct cp_ref *x = &a->refs[i], *y = &b->refs[i];

		if (x->kind != y->kind || !same_str(x->value, y->value) || x->nsites != y->nsites)
			return differ(path, layout, "reference", i);
		for (k = 0; k < x->nsites; k++)
			if (x->sites[k].kind != y->sites[k].kind || x->sites[k].addr != y->sites[k].addr)
				return differ(path, layout, "site of reference", i);
	}
	return 0;
}

/* The rules and the tallies, for check_file (so_files_each passes a path
 * only). */
static struct {
	cp_rules *rules;
	char tmp[64];
	size_t files, compared, spliced, threaded, questions, reached;
	int bad;
} t;

/* How many of the input's walk units have other bytes in out. */
static size_t units_changed(const cp_scan *in_scan, const cp_image *in, const cp_image *out)
{
	size_t k, n = 0;

	for (k = 0; k < in_scan->nmarks; k++) {
		const struct cp_walk_mark *m = &in_scan->marks[k];
		const uint8_t *x = cp_image_va_bytes(in, m->start, m->end - m->start);
		const uint8_t *y = cp_image_va_bytes(out, m->start, m->end - m->start);

		n += !x || !y || memcmp(x, y, m->end - m->start);
	}
	return n;
}

/* The output of one layout, scanned both ways; 0 when they agree. */
static int check_layout(const char *path, const cp_image *in, const cp_scan *in_scan, const char *layout)
{
	struct cp_patch_opts o = { .layout = layout, .no_fsync = true };
	struct cp_patch_result res;
	struct cp_scan_skip skip = { never, NULL, in_scan, in, false };
	cp_image *out = NULL;
	cp_scan *walked = NULL, *taken = NULL;
	cp_error err;
	size_t changed;
	int bad = 0;

	if (cp_patch_file(path, t.tmp, t.rules, &o, &res, &err) || res.outcome != CP_PATCHED)
		return 0;
	if (cp_image_open(t.tmp, &out, &err)) {
		fprintf(stderr, "walk_crosscheck: %s\n", err.msg);
		return 1;
	}
	if (cp_scan_run(out, t.rules, &walked, &err) || cp_scan_run_skipping(out, t.rules, &skip, &taken, &err)) {
		fprintf(stderr, "walk_crosscheck: %s\n", err.msg);
		bad = 1;
	}
	bad = bad || compare_lists(walked, taken, path, layout) || compare_calls(walked, taken, path, layout) ||
	      compare_refs(walked, taken, path, layout);
	changed = units_changed(in_scan, in, out);
	t.compared++;
	t.spliced += changed > 0 && changed < in_scan->nmarks;
	cp_scan_free(walked);
	cp_scan_free(taken);
	cp_image_close(out);
	unlink(t.tmp);
	return bad;
}

/* The walk on one thread against the walk cut into runs on n threads
 * (scan/scan_threads.c), however small the module: every cut where an
 * import block is open is a join that must walk units again. */
static int check_threads(const char *path, const cp_image *in, const cp_scan *one)
{
	static const unsigned counts[] = { 2, 3, 8 };
	char label[32];
	cp_scan *cut = NULL;
	cp_error err;
	size_t i;
	int bad = 0;

	for (i = 0; !bad && i < sizeof(counts) / sizeof(counts[0]); i++) {
		snprintf(label, sizeof(label), "%u threads", counts[i]);
		if (cp_scan_run_threads(in, t.rules, counts[i], &cut, &err)) {
			fprintf(stderr, "walk_crosscheck: %s\n", err.msg);
			return 1;
		}
		bad = compare_lists(one, cut, path, label) || compare_calls(one, cut, path, label) ||
		      compare_refs(one, cut, path, label) || compare_marks(one, cut, path, label);
		t.threaded++;
		cp_scan_free(cut);
	}
	return bad;
}

/*
 * The backward search decodes a function only as far as a question needs
 * (scan/reach.c): up to the instruction asked about, and on to the source
 * of each jump it follows back. Its answer must be the one it gives with
 * the whole function decoded. For the first calls of each function whose
 * first argument the walk did not know, the question is asked of a fresh
 * search, and again of one that decoded the whole function first (asked
 * about its last byte).
 */
static int check_reach(const char *path, const cp_image *in, const cp_scan *s)
{
	cp_reach *lazy = NULL, *whole = NULL;
	cp_error err;
	uint64_t start, end, last = 0;
	size_t i, asked = 0;
	int bad = 0, reg = cp_arg_reg(in, 0);

	if (cp_reach_open(in, s->jumps, s->njumps, &whole, &err)) {
		fprintf(stderr, "walk_crosscheck: %s\n", err.msg);
		return 1;
	}
	for (i = 0; !bad && i < s->ncalls; i++) {
		struct cp_reach_val a, b, prime;

		if (s->calls[i].arg[0].kind != CP_V_UNKNOWN || !cp_image_function(in, s->calls[i].addr, &start, &end))
			continue;
		asked = start == last ? asked + 1 : 0;
		last = start;
		if (asked >= 4)
			continue;
		if (cp_reach_open(in, s->jumps, s->njumps, &lazy, &err) ||
		    cp_reach_value(lazy, s->calls[i].addr, reg, &a, &err) ||
		    cp_reach_value(whole, end - 1, reg, &prime, &err) ||
		    cp_reach_value(whole, s->calls[i].addr, reg, &b, &err)) {
			fprintf(stderr, "walk_crosscheck: %s\n", err.msg);
			bad = 1;
		} else if (a.kind != b.kind || a.v != b.v) {
			fprintf(stderr, "walk_crosscheck: %s: what the call at %#llx passes differs between a search "
				"that decoded the function as far as it needed and one that decoded all of it\n",
				path, (unsigned long long)s->calls[i].addr);
			bad = 1;
		}
		t.reached += !bad && a.kind != CP_REACH_UNKNOWN;
		t.questions += !bad;
		cp_reach_close(lazy);
		lazy = NULL;
	}
	cp_reach_close(whole);
	return bad;
}

static int check_file(const char *path)
{
	static const char *const layouts[] = { "legacy", "bindings", "fallback" };
	cp_image *in = NULL;
	cp_scan *scan = NULL;
	cp_error err;
	size_t i;
	int bad = 0;

	if (cp_image_open(path, &in, &err))
		return 0; /* not an ELF file the patcher reads: nothing to compare */
	if (!cp_scan_run_threads(in, t.rules, 1, &scan, &err)) {
		bad = check_threads(path, in, scan) || check_reach(path, in, scan);
		for (i = 0; !bad && i < sizeof(layouts) / sizeof(layouts[0]); i++)
			bad = check_layout(path, in, scan, layouts[i]);
	}
	cp_scan_free(scan);
	cp_image_close(in);
	return bad;
}

int main(int argc, char **argv)
{
	cp_error err;
	int fd;

	if (argc < 3) {
		fprintf(stderr, "usage: walk_crosscheck RULES FILE|DIR...\n");
		return 64;
	}
	t.rules = cp_rules_new();
	if (!t.rules || cp_rules_load_file(t.rules, argv[1], &err)) {
		fprintf(stderr, "walk_crosscheck: %s\n", t.rules ? err.msg : "out of memory");
		return 1;
	}
	strcpy(t.tmp, "/tmp/walk_crosscheck.XXXXXX");
	fd = mkstemp(t.tmp);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	close(fd);
	t.bad = so_files_each(argv + 2, argc - 2, check_file, &t.files);
	unlink(t.tmp);
	cp_rules_free(t.rules);
	if (t.bad)
		return 1;
	if (!t.spliced) {
		fprintf(stderr, "walk_crosscheck: no output of the %zu files had some functions walked again and "
			"the rest taken\n", t.files);
		return 1;
	}
	if (!t.reached) {
		fprintf(stderr, "walk_crosscheck: none of the %zu questions to the backward search found a value\n",
			t.questions);
		return 1;
	}
	printf("walk_crosscheck: %zu outputs of %zu files scanned both ways, the same (%zu walked again in part); "
	       "%zu walks on several threads the same as on one; %zu backward searches (%zu found a value) the "
	       "same with the function decoded in part and in whole\n",
	       t.compared, t.files, t.spliced, t.threaded, t.questions, t.reached);
	return 0;
}
