/*
 * test_walk_args.c - the aarch64 walk keeps all eight argument registers
 * of a call (A64_NARGS, x0 to x7): the fixture (walk_args_fixture.c,
 * cross-compiled here) passes two strings' addresses in x6 and x7, one
 * made from the other by an add. A walk that kept six (the count x86-64's
 * registers give) loses both. No corpus needed.
 *
 * usage: test_walk_args FIXTURE.so   (exit 77, skipped, without the fixture:
 *        no aarch64 cross compiler; scripts/setup installs one)
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "scan/scan.h"
#include "fixture_symbols.h"

static const char *fixture;

/* The call to target the walk of all of img's code saw. */
static void test_the_seventh_and_eighth_arguments_are_kept(void **state)
{
	cp_image *img = NULL;
	cp_scan *s = calloc(1, sizeof(*s));
	const struct cp_func_use *use = NULL;
	uint64_t sink;
	cp_error err;
	size_t i;

	(void)state;
	assert_non_null(s);
	if (cp_image_open(fixture, &img, &err))
		fail_msg("%s", err.msg);
	sink = fixture_symbol(img, "cp_args_sink");
	s->img = img;
	s->path = strdup(img->path);
	s->threads = 1;
	if (cp_scan_code(s, &err))
		fail_msg("%s", err.msg);
	for (i = 0; i < s->nfuses; i++)
		if (s->fuses[i].kind == CP_FUSE_CALL && s->fuses[i].target == sink)
			use = &s->fuses[i];
	assert_non_null(use);
	assert_int_equal(use->arg[5].kind, CP_V_IMM);
	assert_int_equal(use->arg[5].v, 6);
	assert_int_equal(use->arg[6].kind, CP_V_ADDR);
	assert_int_equal(use->arg[6].v, fixture_symbol(img, "cp_args_seventh"));
	assert_int_equal(use->arg[7].kind, CP_V_ADDR);
	assert_int_equal(use->arg[7].v, fixture_symbol(img, "cp_args_eighth"));
	cp_scan_free_walk(s);
	free(s->path);
	free(s);
	cp_image_close(img);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_seventh_and_eighth_arguments_are_kept),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: test_walk_args FIXTURE.so\n");
		return 2;
	}
	if (access(argv[1], R_OK)) {
		printf("skipped: %s: missing (no aarch64 cross compiler: scripts/setup installs gcc-aarch64-linux-gnu)\n",
		       argv[1]);
		return 77;
	}
	fixture = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
