/*
 * test_releases.c - cp_releases_parse: ranges of one distribution's
 * releases (closed, open to the newest, several joined), the item kinds,
 * and the lines it must refuse, each with its line number; then the
 * compiled-in file's own parse is the CLI's (tests/python).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "releases/releases.h"

static const char good[] =
	"# a comment\n"
	"date 2026-12-04\n"
	"release a 1.0 any\n"
	"release a 1.1 >=3.9\n"
	"release a 2.0 any\n"
	"release b 1.0 any\n"
	"release b 2.0 any\n"
	"\n"
	"module m extension a:1.1-,b:1.0-1.0\n"
	"module p python a:1.0-1.0,a:2.0-\n"
	"function m f b:1.0- int (void *, char const *)\n"
	"variable m v a:1.0-1.1 double\n";

static cp_releases *parse(const char *text, cp_error *err)
{
	cp_releases *r = NULL;

	if (cp_releases_parse(text, strlen(text), &r, err))
		return NULL;
	return r;
}

static void test_ranges_and_kinds(void **state)
{
	cp_error err = { CP_OK, "" };
	cp_releases *r = parse(good, &err);
	/* releases: a1.0 a1.1 a2.0 b1.0 b2.0 */
	static const int has[4][5] = { { 0, 1, 1, 1, 0 }, { 1, 0, 1, 0, 0 }, { 0, 0, 0, 1, 1 }, { 1, 1, 0, 0, 0 } };
	size_t i, k;

	(void)state;
	assert_non_null(r);
	assert_string_equal(r->date, "2026-12-04");
	assert_int_equal(r->nrel, 5);
	assert_string_equal(r->rel[1].requires_python, ">=3.9");
	assert_int_equal(cp_releases_find(r, "b", "2.0"), 4);
	assert_int_equal(cp_releases_find(r, "b", "1.1"), -1);
	assert_int_equal(r->nitem, 4);
	assert_int_equal(r->item[0].kind, CP_REL_EXTENSION);
	assert_int_equal(r->item[1].kind, CP_REL_PYTHON);
	assert_int_equal(r->item[2].kind, CP_REL_FUNCTION);
	assert_string_equal(r->item[2].sig, "int (void *, char const *)");
	assert_int_equal(r->item[3].kind, CP_REL_VARIABLE);
	assert_string_equal(r->item[3].name, "v");
	for (i = 0; i < 4; i++)
		for (k = 0; k < 5; k++)
			assert_int_equal(cp_releases_has(r, i, k), has[i][k]);
	cp_releases_free(r);
}

/* Each bad line after the good text's releases: refused, naming its line. */
static void test_bad_lines(void **state)
{
	static const char *const bad[] = {
		"module m extension c:1.0-\n",          /* a distribution it does not list */
		"module m extension a:1.2-\n",          /* a release it does not list */
		"module m extension a:2.0-1.0\n",       /* backwards */
		"module m extension a:1.0\n",           /* no dash */
		"module m shared a:1.0-\n",             /* no such kind */
		"module m extension a:1.0- extra\n",    /* words left over */
		"function m f a:1.0-\n",                /* no signature */
		"release a 3.0 any\n",                  /* a release after the items */
		"library m f a:1.0- int\n",             /* no such line */
	};
	char text[1024];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cp_error err = { CP_OK, "" };

		snprintf(text, sizeof(text), "%s%s", good, bad[i]);
		assert_null(parse(text, &err));
		assert_int_equal(err.code, CP_E_INTERNAL);
		assert_non_null(strstr(err.msg, "line 13 "));
	}
}

static void test_a_release_twice_or_no_date(void **state)
{
	cp_error err = { CP_OK, "" };

	(void)state;
	assert_null(parse("date 2026-12-04\nrelease a 1.0 any\nrelease a 1.0 any\n", &err));
	assert_null(parse("release a 1.0 any\n", &err));
	assert_null(parse("date 2026-12-04\n", &err));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ranges_and_kinds),
		cmocka_unit_test(test_bad_lines),
		cmocka_unit_test(test_a_release_twice_or_no_date),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
