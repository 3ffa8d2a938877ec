/*
 * test_big_array.c - cp_big_grow keeps what an array holds as it grows one
 * record at a time from nothing, across the move from the heap to a
 * mapping of its own (CP_BIG_ARRAY) and the mapping's growths (mremap),
 * with records of a size that does not divide a page; and it refuses a
 * size that cannot be held, leaving the array as it was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "util/big_array.h"

struct rec {
	uint64_t a, b;
	uint8_t tag[8];
	uint32_t c;
}; /* 28 bytes and padding: not a power of two */

static void fill(struct rec *r, size_t i)
{
	memset(r, 0, sizeof(*r));
	r->a = i * 0x9e3779b97f4a7c15ull;
	r->b = ~(uint64_t)i;
	memset(r->tag, (int)(i & 0xff), sizeof(r->tag));
	r->c = (uint32_t)i;
}

static void test_grows_and_keeps(void **state)
{
	struct rec *v = NULL, want;
	size_t n, i, cap = 0, total = 3 * (CP_BIG_ARRAY / sizeof(*v)) + 12345;
	size_t checked_at = 0;

	(void)state;
	for (n = 0; n < total; n++) {
		size_t before = cap;

		assert_int_equal(CP_BIG_GROW(v, cap, n + 1), 0);
		assert_true(cap >= n + 1);
		fill(&v[n], n);
		/* after each growth, everything written before it is intact */
		if (cap != before) {
			for (i = checked_at; i < n; i++) {
				fill(&want, i);
				assert_memory_equal(&v[i], &want, sizeof(want));
			}
			checked_at = 0;
		}
	}
	for (i = 0; i < total; i++) {
		fill(&want, i);
		assert_memory_equal(&v[i], &want, sizeof(want));
	}
	assert_true(cap * sizeof(*v) > CP_BIG_ARRAY);
	CP_BIG_FREE(v, cap);
}

static void test_refuses_too_large(void **state)
{
	struct rec *v = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(CP_BIG_GROW(v, cap, 100), 0);
	v[99].c = 7;
	assert_int_equal(cp_big_grow(&v, &cap, SIZE_MAX / 8, sizeof(*v)), -1);
	assert_int_equal(v[99].c, 7);
	assert_true(cap >= 100 && cap * sizeof(*v) <= CP_BIG_ARRAY);
	CP_BIG_FREE(v, cap);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grows_and_keeps),
		cmocka_unit_test(test_refuses_too_large),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
