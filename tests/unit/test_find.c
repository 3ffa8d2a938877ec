/*
 * test_find.c - cp_find against memmem, the reference: every occurrence,
 * in order, over bytes where candidates are rare (random), dense (text of
 * the needle's letters) and mixed (dense runs inside random bulk), with
 * needles of 1 to 40 bytes, at the edges of the range and of the 16-byte
 * blocks, and overlapping ones.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/find.h"

/* xorshift: the same bytes on every run */
static uint32_t next(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/* Every occurrence by cp_find_next equals memmem's, one by one; how many
 * there were. */
static size_t same_as_memmem(const uint8_t *d, size_t n, const char *needle)
{
	size_t k = strlen(needle), found = 0;
	const uint8_t *want = d, *got;
	struct cp_find f;

	cp_find_init(&f, d, n, needle, k);
	for (;;) {
		want = memmem(want, n - (size_t)(want - d), needle, k);
		got = cp_find_next(&f);
		assert_ptr_equal(got, want);
		if (!want)
			break;
		found++;
		want++;
	}
	assert_ptr_equal(cp_find_first(d, n, needle, k), memmem(d, n, needle, k));
	return found;
}

static uint8_t *random_bytes(size_t n, uint32_t seed)
{
	uint8_t *d = malloc(n);
	size_t i;

	assert_non_null(d);
	for (i = 0; i < n; i++)
		d[i] = (uint8_t)next(&seed);
	return d;
}

static void rare_candidates(void **state)
{
	size_t n = 4u << 20;
	uint8_t *d = random_bytes(n, 1);

	(void)state;
	memcpy(d, "cuda", 4);
	memcpy(d + n / 2, "cuda", 4);
	memcpy(d + n - 4, "cuda", 4);
	assert_int_equal(same_as_memmem(d, n, "cuda"), 3);
	free(d);
}

static void dense_candidates(void **state)
{
	size_t n = 1u << 20, i;
	uint8_t *d = malloc(n);
	uint32_t x = 7;

	(void)state;
	assert_non_null(d);
	for (i = 0; i < n; i++)
		d[i] = "cuda"[next(&x) % 4];
	assert_true(same_as_memmem(d, n, "cuda") > 0);
	for (i = 0; i < n;) { /* matches and misses at random places */
		static const char *const tok[] = { "cuda", "cu", "c" };
		const char *t = tok[next(&x) % 3];
		size_t k = strlen(t) < n - i ? strlen(t) : n - i;

		memcpy(d + i, t, k);
		i += k;
	}
	assert_true(same_as_memmem(d, n, "cuda") > 0);
	memset(d, 'a', n); /* overlapping occurrences */
	assert_int_equal(same_as_memmem(d, n, "aaaa"), n - 3);
	free(d);
}

static void dense_runs_in_bulk(void **state)
{
	size_t n = 8u << 20, at, i;
	uint8_t *d = random_bytes(n, 3);
	uint32_t x = 11;

	(void)state;
	for (at = 0; at + (300u << 10) < n; at += 1u << 20)
		for (i = 0; i < (300u << 10); i++)
			d[at + i] = "cuda_cud"[next(&x) % 8];
	assert_true(same_as_memmem(d, n, "cuda") > 0);
	assert_true(same_as_memmem(d, n, "cuda_c") > 0);
	free(d);
}

static void short_ranges(void **state)
{
	const char *s = "cud cuda";

	(void)state;
	assert_null(cp_find_first(s, 3, "cuda", 4));
	assert_null(cp_find_first(s, 7, "cuda", 4));
	assert_ptr_equal(cp_find_first(s, 8, "cuda", 4), s + 4);
	assert_ptr_equal(cp_find_first(s, 8, "c", 1), s);
	assert_null(cp_find_first(s, 0, "c", 1));
}

/* Needles of every length from 1 to 40 placed at every offset of a
 * 16-byte block and at the very end, in ranges that end at every offset
 * too: the block loop, its tail and the range's end. */
static void lengths_and_edges(void **state)
{
	static const char long_needle[] = "cuda.bindings._bindings.cydriver.pxd...";
	char needle[41];
	size_t k, at, len;

	(void)state;
	for (k = 1; k <= 40; k++) {
		memcpy(needle, long_needle, k);
		needle[k] = '\0';
		for (at = 0; at + k <= 200; at += 7) {
			uint8_t *c = random_bytes(256, (uint32_t)(k * 1000 + at + 1));

			memcpy(c + at, needle, k);
			for (len = at; len <= at + k + 17 && len <= 256; len++)
				same_as_memmem(c, len, needle);
			memcpy(c + 256 - k, needle, k);
			assert_true(same_as_memmem(c, 256, needle) >= 2);
			free(c);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rare_candidates),
		cmocka_unit_test(dense_candidates),
		cmocka_unit_test(dense_runs_in_bulk),
		cmocka_unit_test(short_ranges),
		cmocka_unit_test(lengths_and_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
