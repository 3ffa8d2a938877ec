/*
 * test_key_index.c - cp_key_index against a linear search: records of two
 * sizes with the key at two offsets, added one at a time through several
 * growths of the index, every key found as the record added under it and
 * keys never added not found (keys that collide in the index's low bits
 * among them, and 0).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/key_index.h"

struct wide {
	char pad[13];
	uint64_t key;
	char tail[5];
};

/* xorshift64: the same keys on every run */
static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* The number of the record holding key, by a pass over all of them. */
static size_t linear(const void *records, size_t n, size_t size, size_t key_off, uint64_t key)
{
	size_t i;
	uint64_t k;

	for (i = 0; i < n; i++) {
		memcpy(&k, (const char *)records + i * size + key_off, sizeof(k));
		if (k == key)
			return i + 1;
	}
	return 0;
}

/* n records with keys from keyf, added one by one; after each addition
 * every key so far is found, and a key not added is not. */
static void check(void *records, size_t n, size_t size, size_t key_off, uint64_t (*keyf)(uint64_t *, size_t))
{
	struct cp_key_index x = { NULL, 0, 0 };
	uint64_t seed = 0x9e3779b97f4a7c15ull, k;
	size_t i, j;

	for (i = 0; i < n; i++) {
		k = keyf(&seed, i);
		memcpy((char *)records + i * size + key_off, &k, sizeof(k));
		assert_int_equal(cp_key_index_find(&x, records, size, key_off, k), 0);
		assert_true(cp_key_index_add(&x, records, size, key_off, i + 1));
		for (j = 0; j <= i; j += 1 + i / 64) {
			memcpy(&k, (const char *)records + j * size + key_off, sizeof(k));
			assert_int_equal(cp_key_index_find(&x, records, size, key_off, k), j + 1);
		}
	}
	for (j = 0; j < 4 * n; j++) {
		k = keyf(&seed, n + j);
		assert_int_equal(cp_key_index_find(&x, records, size, key_off, k),
				 linear(records, n, size, key_off, k));
	}
	assert_int_equal(x.n, n);
	cp_key_index_free(&x);
	assert_null(x.slot);
}

static uint64_t random_key(uint64_t *seed, size_t i)
{
	(void)i;
	return next(seed);
}

/* Multiples of 2^32: one hash slot for all in a small table, were the
 * hash the key's low bits; 0 is the first. */
static uint64_t aligned_key(uint64_t *seed, size_t i)
{
	(void)seed;
	return (uint64_t)i << 32;
}

static void test_plain_keys(void **state)
{
	uint64_t *v = calloc(3000, sizeof(*v));

	(void)state;
	check(v, 3000, sizeof(*v), 0, random_key);
	check(v, 3000, sizeof(*v), 0, aligned_key);
	free(v);
}

static void test_keys_inside_records(void **state)
{
	struct wide *v = calloc(1000, sizeof(*v));

	(void)state;
	check(v, 1000, sizeof(*v), offsetof(struct wide, key), random_key);
	check(v, 1000, sizeof(*v), offsetof(struct wide, key), aligned_key);
	free(v);
}

static void test_empty(void **state)
{
	struct cp_key_index x = { NULL, 0, 0 };
	uint64_t v = 7;

	(void)state;
	assert_int_equal(cp_key_index_find(&x, &v, sizeof(v), 0, 7), 0);
	cp_key_index_free(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_keys),
		cmocka_unit_test(test_keys_inside_records),
		cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
