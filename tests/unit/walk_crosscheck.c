/*
 * walk_crosscheck.c - the check's shortcut against the long way: for every
 * module given, patched to each layout, whenever cp_code_walk_same says
 * the output's code walk must find what the input's found, the output is
 * scanned both ways (walked again, and with the input's walk taken by
 * cp_scan_code_from) and every finding compared: xrefs, calls, import
 * blocks, references and their sites. A fallback output, whose code the
 * stub's thunks edit, must not count as the same. Exits 1 on the first
 * difference, naming it.
 *
 * usage: walk_crosscheck RULES FILE|DIR...  (directories: every *.so below)
 */
#include "cypatch.h"
#include "arch/code.h"
#include "elf/image.h"
#include "scan/scan.h"
#include "so_files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int differ(const char *path, const char *layout, const char *what, size_t i)
{
	fprintf(stderr, "walk_crosscheck: %s (%s): %s %zu differs between the walk and the reuse\n", path, layout,
		what, i);
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

/* Field by field: the struct has padding, which memcmp would compare. */
static bool same_loads(const struct cp_import_block *x, const struct cp_import_block *y)
{
	size_t k;

	if (x->nloads != y->nloads)
		return false;
	for (k = 0; k < x->nloads; k++)
		if (x->loads[k].target != y->loads[k].target || x->loads[k].at != y->loads[k].at ||
		    x->loads[k].clean != y->loads[k].clean)
			return false;
	return true;
}

static int compare_walk(const cp_scan *a, const cp_scan *b, const char *path, const char *layout)
{
	size_t i;

	if (a->nxrefs != b->nxrefs || a->ncalls != b->ncalls || a->nblocks != b->nblocks)
		return differ(path, layout, "count of xrefs, calls or blocks", 0);
	for (i = 0; i < a->nxrefs; i++)
		if (a->xrefs[i].addr != b->xrefs[i].addr || a->xrefs[i].target != b->xrefs[i].target)
			return differ(path, layout, "xref", i);
	for (i = 0; i < a->ncalls; i++)
		if (a->calls[i].addr != b->calls[i].addr || !same_str(a->calls[i].name, b->calls[i].name) ||
		    memcmp(a->calls[i].arg, b->calls[i].arg, sizeof(a->calls[i].arg)))
			return differ(path, layout, "call", i);
	for (i = 0; i < a->nblocks; i++)
		if (a->blocks[i].call != b->blocks[i].call || !same_str(a->blocks[i].module, b->blocks[i].module) ||
		    !same_loads(&a->blocks[i], &b->blocks[i]))
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
	size_t files, compared;
	int bad;
} t;

/* The output of one layout, scanned both ways where the walk may be
 * reused; 0 when it agrees or does not apply. */
static int check_layout(const char *path, const cp_image *in, const cp_scan *in_scan, const char *layout)
{
	struct cp_patch_opts o = { .layout = layout, .no_fsync = true };
	struct cp_patch_result res;
	struct cp_scan_skip skip = { never, NULL, in_scan };
	cp_image *out = NULL;
	cp_scan *walked = NULL, *reused = NULL;
	cp_error err;
	bool same;
	int bad = 0;

	if (cp_patch_file(path, t.tmp, t.rules, &o, &res, &err) || res.outcome != CP_PATCHED)
		return 0;
	if (cp_image_open(t.tmp, &out, &err)) {
		fprintf(stderr, "walk_crosscheck: %s\n", err.msg);
		return 1;
	}
	same = cp_code_walk_same(in, out);
	if (same && res.fallback) {
		fprintf(stderr, "walk_crosscheck: %s (%s): the stub's output counted as the same code\n", path, layout);
		bad = 1;
	} else if (same) {
		if (cp_scan_run(out, t.rules, &walked, &err) ||
		    cp_scan_run_skipping(out, t.rules, &skip, &reused, &err)) {
			fprintf(stderr, "walk_crosscheck: %s\n", err.msg);
			bad = 1;
		}
		bad = bad || compare_walk(walked, reused, path, layout) || compare_refs(walked, reused, path, layout);
		t.compared++;
	}
	cp_scan_free(walked);
	cp_scan_free(reused);
	cp_image_close(out);
	unlink(t.tmp);
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
	if (!cp_scan_run(in, t.rules, &scan, &err))
		for (i = 0; !bad && i < sizeof(layouts) / sizeof(layouts[0]); i++)
			bad = check_layout(path, in, scan, layouts[i]);
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
	if (!t.compared) {
		fprintf(stderr, "walk_crosscheck: no output of the %zu files had its walk reused\n", t.files);
		return 1;
	}
	printf("walk_crosscheck: %zu outputs of %zu files scanned both ways, the same\n", t.compared, t.files);
	return 0;
}
