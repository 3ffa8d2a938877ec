/*
 * sort.c - a stable radix sort of records by a 64-bit key (see sort.h).
 */
#include "util/sort.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DIGIT_BITS 16
#define NBUCKET (1u << DIGIT_BITS)
#define SMALL 64 /* fewer records: insertion sort (a radix pass clears 512 KB of counts) */

static uint64_t key_at(const char *rec, size_t key_off)
{
	uint64_t k;

	memcpy(&k, rec + key_off, sizeof(k));
	return k;
}

bool cp_sorted_by_key(const void *base, size_t n, size_t size, size_t key_off)
{
	const char *p = base;
	size_t i;

	for (i = 1; i < n; i++)
		if (key_at(p + (i - 1) * size, key_off) > key_at(p + i * size, key_off))
			return false;
	return true;
}

size_t cp_first_key_at_least(const void *base, size_t n, size_t size, size_t key_off, uint64_t key)
{
	const char *p = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (key_at(p + mid * size, key_off) < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t cp_records_with_key(const void *base, size_t n, size_t size, size_t key_off, uint64_t key, size_t *first)
{
	const char *p = base;
	size_t i = cp_first_key_at_least(base, n, size, key_off, key), k = 0;

	*first = i;
	while (i + k < n && key_at(p + (i + k) * size, key_off) == key)
		k++;
	return k;
}

/* One counting pass on the digit at shift: from src into dst. */
static void pass(const char *src, char *dst, size_t n, size_t size, size_t key_off, unsigned shift,
		 size_t *count)
{
	size_t i, sum = 0;

	memset(count, 0, NBUCKET * sizeof(*count));
	for (i = 0; i < n; i++)
		count[(key_at(src + i * size, key_off) >> shift) & (NBUCKET - 1)]++;
	for (i = 0; i < NBUCKET; i++) {
		size_t c = count[i];

		count[i] = sum;
		sum += c;
	}
	for (i = 0; i < n; i++) {
		const char *r = src + i * size;

		memcpy(dst + count[(key_at(r, key_off) >> shift) & (NBUCKET - 1)]++ * size, r, size);
	}
}

/* Stable: a record moves left only past larger keys. */
static bool insertion_sort(char *a, size_t n, size_t size, size_t key_off)
{
	char *t = malloc(size);
	size_t i, j;

	if (!t)
		return false;
	for (i = 1; i < n; i++) {
		uint64_t k = key_at(a + i * size, key_off);

		for (j = i; j > 0 && key_at(a + (j - 1) * size, key_off) > k; j--)
			;
		if (j == i)
			continue;
		memcpy(t, a + i * size, size);
		memmove(a + (j + 1) * size, a + j * size, (i - j) * size);
		memcpy(a + j * size, t, size);
	}
	free(t);
	return true;
}

bool cp_sort_by_key(void *base, size_t n, size_t size, size_t key_off)
{
	char *a = base, *b, *src, *dst;
	uint64_t max = 0;
	size_t i, *count;
	unsigned shift;

	if (n < 2 || cp_sorted_by_key(base, n, size, key_off))
		return true;
	if (n < SMALL)
		return insertion_sort(a, n, size, key_off);
	for (i = 0; i < n; i++)
		if (key_at(a + i * size, key_off) > max)
			max = key_at(a + i * size, key_off);
	b = malloc(n * size);
	count = malloc(NBUCKET * sizeof(*count));
	if (!b || !count) {
		free(b);
		free(count);
		return false;
	}
	src = a;
	dst = b;
	for (shift = 0; shift < 64 && (shift == 0 || max >> shift); shift += DIGIT_BITS) {
		char *t;

		pass(src, dst, n, size, key_off, shift, count);
		t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * size);
	free(b);
	free(count);
	return true;
}

int cp_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}
