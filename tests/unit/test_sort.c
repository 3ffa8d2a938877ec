/*
 * test_sort.c - cp_sort_by_key against a reference: glibc's qsort over
 * (key, original position), which is what a stable sort by key must give.
 * Records of several sizes with the key at several offsets; keys dense
 * (many equal: stability shows), spread over 16, 32 and 64 bits (one to
 * four radix passes), and counts on both sides of the insertion-sort cut;
 * and the lookups by key in sorted records, against a linear pass.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/sort.h"

/* xorshift64: the same records on every run */
static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

struct ref {
	uint64_t key;
	size_t pos;
};

static int by_key_then_pos(const void *x, const void *y)
{
	const struct ref *a = x, *b = y;

	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* n records of `size` bytes, the key at key_off and the record's position
 * in the bytes after it; keys below `range` (0: any 64-bit value). */
static void check(size_t n, size_t size, size_t key_off, uint64_t range, uint64_t seed)
{
	uint8_t *rec = malloc(n * size + 1);
	struct ref *want = malloc((n + 1) * sizeof(*want));
	size_t i;

	assert_non_null(rec);
	assert_non_null(want);
	assert_true(key_off + 8 + sizeof(size_t) <= size);
	for (i = 0; i < n; i++) {
		uint64_t k = next(&seed);

		k = range ? k % range : k;
		memset(rec + i * size, 0xa5, size);
		memcpy(rec + i * size + key_off, &k, 8);
		memcpy(rec + i * size + key_off + 8, &i, sizeof(i));
		want[i].key = k;
		want[i].pos = i;
	}
	qsort(want, n, sizeof(*want), by_key_then_pos);
	assert_true(cp_sort_by_key(rec, n, size, key_off));
	assert_true(cp_sorted_by_key(rec, n, size, key_off));
	for (i = 0; i < n; i++) {
		uint64_t k;
		size_t pos;

		memcpy(&k, rec + i * size + key_off, 8);
		memcpy(&pos, rec + i * size + key_off + 8, sizeof(pos));
		assert_int_equal(k, want[i].key);
		assert_int_equal(pos, want[i].pos); /* stable */
		assert_int_equal(rec[i * size + size - 1], 0xa5);
	}
	free(rec);
	free(want);
}

static void test_small(void **state)
{
	size_t n;

	(void)state;
	for (n = 0; n < 200; n++) {
		check(n, 24, 0, 7, n + 1);
		check(n, 40, 8, 0, n + 7);
	}
}

static void test_dense_keys(void **state)
{
	(void)state;
	check(100000, 24, 0, 10, 3);
	check(100000, 32, 8, 1000, 5);
}

static void test_wide_keys(void **state)
{
	(void)state;
	check(50000, 24, 0, 1u << 16, 11);
	check(50000, 24, 0, 1ull << 32, 13);
	check(50000, 48, 16, 1ull << 48, 17);
	check(50000, 24, 0, 0, 19);
}

static void test_sorted_and_reversed(void **state)
{
	uint64_t rec[1000][3];
	size_t i;

	(void)state;
	for (i = 0; i < 1000; i++) {
		rec[i][0] = 1000 - i / 2; /* pairs of equal keys, descending */
		rec[i][1] = i;
		rec[i][2] = 0;
	}
	assert_false(cp_sorted_by_key(rec, 1000, sizeof(rec[0]), 0));
	assert_true(cp_sort_by_key(rec, 1000, sizeof(rec[0]), 0));
	for (i = 0; i < 1000; i++) {
		assert_int_equal(rec[i][0], 501 + i / 2);
		assert_int_equal(rec[i][1], 998 - 2 * (i / 2) + i % 2);
	}
	assert_true(cp_sort_by_key(rec, 1000, sizeof(rec[0]), 0)); /* sorted already */
	assert_int_equal(rec[0][1], 998);
}

/* The lookups against a linear pass, for every key around those present:
 * records of 24 bytes, the key at offset 8, keys 0, 2, 4 ... with runs of
 * equal ones, and an empty list. */
static void test_lookups(void **state)
{
	uint64_t rec[300][3];
	size_t n, i, first, count, want_first, want_count;
	uint64_t key;

	(void)state;
	for (n = 0; n <= 300; n += 37) {
		for (i = 0; i < n; i++) {
			rec[i][0] = i;
			rec[i][1] = 2 * (i / 3); /* three of each even key */
			rec[i][2] = ~(uint64_t)i;
		}
		for (key = 0; key < 2 * (n / 3) + 4; key++) {
			for (want_first = 0; want_first < n && rec[want_first][1] < key; want_first++)
				;
			for (want_count = 0; want_first + want_count < n && rec[want_first + want_count][1] == key;
			     want_count++)
				;
			assert_int_equal(cp_first_key_at_least(rec, n, sizeof(rec[0]), 8, key), want_first);
			count = cp_records_with_key(rec, n, sizeof(rec[0]), 8, key, &first);
			assert_int_equal(first, want_first);
			assert_int_equal(count, want_count);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small),
		cmocka_unit_test(test_dense_keys),
		cmocka_unit_test(test_wide_keys),
		cmocka_unit_test(test_sorted_and_reversed),
		cmocka_unit_test(test_lookups),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
