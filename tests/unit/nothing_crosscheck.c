/*
 * nothing_crosscheck.c - the shortcut that leaves a module's code unread
 * against the full scan. cypatch says that a module maps nothing without
 * walking its code when its bytes hold none of the rules' names
 * (cp_scan_maps_nothing, scan/scan.c). For every module given where that
 * shortcut is taken, the full scan must agree: no reference to a mapped
 * module, nothing it could not follow, no refusal. It counts the modules
 * the shortcut took and fails if there were none: a cross-check that never
 * crossed anything proves nothing. Exits 1 on the first disagreement,
 * naming it.
 *
 * usage: nothing_crosscheck RULES FILE|DIR|WHEEL...  (directories: every
 * *.so and *.whl below)
 */
#include "cypatch.h"
#include "elf/image.h"
#include "scan/scan.h"
#include "so_files.h"

#include <stdio.h>

/* The rules and the tallies, for check_file (so_files_each passes a path
 * only). */
static struct {
	cp_rules *rules;
	size_t files, modules, nothing;
} t;

static int disagree(const char *path, const char *what)
{
	fprintf(stderr, "nothing_crosscheck: %s: the shortcut says it maps nothing, but %s\n", path, what);
	return 1;
}

/* The full scan of a module the shortcut took; 0 when it agrees. */
static int full_scan_agrees(const char *path, const cp_image *img)
{
	cp_scan *scan = NULL;
	cp_error err;
	int bad = 0;

	if (cp_scan_run(img, t.rules, &scan, &err))
		bad = disagree(path, err.msg);
	else if (scan->layouts_seen)
		bad = disagree(path, "the full scan finds a reference to a mapped module");
	else if (scan->incomplete[0])
		bad = disagree(path, scan->incomplete);
	cp_scan_free(scan);
	return bad;
}

static int check_file(const char *path)
{
	cp_image *img = NULL;
	cp_error err;
	bool nothing = false;
	int bad = 0;

	if (cp_image_open(path, &img, &err))
		return 0; /* not an ELF file the patcher reads */
	t.modules += cp_scan_is_module(img);
	if (cp_scan_maps_nothing(img, t.rules, &nothing, &err)) {
		fprintf(stderr, "nothing_crosscheck: %s\n", err.msg);
		bad = 1;
	} else if (nothing) {
		t.nothing++;
		bad = full_scan_agrees(path, img);
	}
	cp_image_close(img);
	return bad;
}

int main(int argc, char **argv)
{
	cp_error err;
	int bad;

	if (argc < 3) {
		fprintf(stderr, "usage: nothing_crosscheck RULES FILE|DIR|WHEEL...\n");
		return 64;
	}
	t.rules = cp_rules_new();
	if (!t.rules || cp_rules_load_file(t.rules, argv[1], &err)) {
		fprintf(stderr, "nothing_crosscheck: %s\n", t.rules ? err.msg : "out of memory");
		return 1;
	}
	bad = so_files_each(argv + 2, argc - 2, check_file, &t.files);
	cp_rules_free(t.rules);
	if (bad)
		return 1;
	if (!t.nothing) {
		fprintf(stderr, "nothing_crosscheck: the shortcut took none of the %zu modules\n", t.modules);
		return 1;
	}
	printf("nothing_crosscheck: %zu files, %zu Cython extension modules; the shortcut took %zu, and the full "
	       "scan agreed on each\n", t.files, t.modules, t.nothing);
	return 0;
}
