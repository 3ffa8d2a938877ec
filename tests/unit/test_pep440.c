/*
 * test_pep440.c - cp_pep440_compare and cp_pep440_satisfies: PEP 440's
 * order (post, pre and dev releases, zero padding, epochs) and each
 * operator's rule, with the answers pip's `packaging` gives.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "releases/pep440.h"

static int cmp(const char *a, const char *b)
{
	bool ok;
	int c = cp_pep440_compare(a, b, &ok);

	assert_true(ok);
	return c;
}

static int sat(const char *spec, const char *v)
{
	return cp_pep440_satisfies(spec, strlen(spec), v);
}

static void test_order(void **state)
{
	bool ok;

	(void)state;
	assert_int_equal(cmp("12.6.2", "12.6.2.post1"), -1);
	assert_int_equal(cmp("12.6.2.post1", "12.6.10"), -1);
	assert_int_equal(cmp("13.0.0a0", "13.0.0"), -1);
	assert_int_equal(cmp("13.0a0", "12.9.10"), 1);
	assert_int_equal(cmp("13.0.0.dev1", "13.0.0a0"), -1);
	assert_int_equal(cmp("13.0.0rc1", "13.0.0b2"), 1);
	assert_int_equal(cmp("13.0.0.post1.dev0", "13.0.0.post1"), -1);
	assert_int_equal(cmp("13.0.0.post1.dev0", "13.0.0"), 1);
	assert_int_equal(cmp("12.9", "12.9.0"), 0);
	assert_int_equal(cmp("11.8.5.post1", "11.8.5-1"), 0);
	assert_int_equal(cmp("1!0.1", "99.0"), 1);
	assert_int_equal(cmp("12.9.0+local", "12.9.0"), 0);
	cp_pep440_compare("12.x", "12.0", &ok);
	assert_false(ok);
	cp_pep440_compare("12.0", "", &ok);
	assert_false(ok);
}

static void test_operators(void **state)
{
	(void)state;
	assert_int_equal(sat(">=12.9.2,<13.0a0", "12.9.2"), 1);
	assert_int_equal(sat(">=12.9.2,<13.0a0", "12.9.10"), 1);
	assert_int_equal(sat(">=12.9.2,<13.0a0", "12.9.1"), 0);
	assert_int_equal(sat(">=12.9.2,<13.0a0", "13.0.0"), 0);
	assert_int_equal(sat("==13.*", "13.5.0"), 1);
	assert_int_equal(sat("==13.*", "12.9.0"), 0);
	assert_int_equal(sat("!=13.*", "12.9.0"), 1);
	assert_int_equal(sat("== 12.9", "12.9.0"), 1);
	assert_int_equal(sat("~=12.9", "12.9.7"), 1);
	assert_int_equal(sat("~=12.9", "13.0.0"), 0);
	assert_int_equal(sat("~=12.9.2", "12.10.0"), 0);
	assert_int_equal(sat("~=12.9.2", "12.9.3"), 1);
	assert_int_equal(sat("!=12.9.1", "12.9.1"), 0);
	assert_int_equal(sat("<=12.6.0", "12.6.0"), 1);
	assert_int_equal(sat("<13", "13.0.0a0"), 0);  /* no pre-release of 13 under <13 */
	assert_int_equal(sat(">12.6.2", "12.6.2.post1"), 0); /* nor a post-release of it under > */
	assert_int_equal(sat(">12.6.2.post0", "12.6.2.post1"), 1);
	assert_int_equal(sat(">=3.9", "3.11"), 1);
	assert_int_equal(sat("===12.5.0", "12.5.0"), 1);
	assert_int_equal(sat("===12.5", "12.5.0"), 0);
	assert_int_equal(sat("", "12.5.0"), 1);
	assert_int_equal(sat(">=13.0.0a0", "13.0.0a1"), 1); /* a named pre-release admits others */
	assert_int_equal(sat(">=12", "13.0.0a1"), 0);
}

static void test_refused(void **state)
{
	(void)state;
	assert_int_equal(sat(">=12,", "12.0"), -1);
	assert_int_equal(sat(",>=12", "12.0"), -1);
	assert_int_equal(sat("=>12", "12.0"), -1);
	assert_int_equal(sat("12.0", "12.0"), -1);
	assert_int_equal(sat(">=12.*", "12.0"), -1);
	assert_int_equal(sat("~=12", "12.0"), -1);
	assert_int_equal(sat(">=12", "twelve"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_operators),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
