/*
 * big_array.c - growable arrays of many records (see big_array.h).
 */
#include "util/big_array.h"
#include "util/error.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE (2u << 20)

/* The mapping of an array of `bytes` bytes (above CP_BIG_ARRAY). */
static size_t mapped(size_t bytes)
{
	return (bytes + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1);
}

/* The array moved from the heap to a mapping of its own. */
static void *to_mapping(void *old, size_t old_bytes, size_t bytes)
{
	void *p = mmap(NULL, mapped(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, mapped(bytes), MADV_HUGEPAGE); /* advice: without it, small pages */
	if (old_bytes)
		memcpy(p, old, old_bytes);
	free(old);
	return p;
}

int cp_big_grow(void *array, size_t *cap, size_t need, size_t size)
{
	void **a = array;
	size_t ncap, old = *cap * size, bytes;
	void *n;

	if (need <= *cap)
		return 0;
	if (!(ncap = cp_grow_capacity(*cap, need, size, HUGE_PAGE)))
		return -1;
	bytes = ncap * size;
	if (bytes <= CP_BIG_ARRAY)
		n = realloc(*a, bytes);
	else if (old <= CP_BIG_ARRAY)
		n = to_mapping(*a, old, bytes);
	else if (mapped(bytes) == mapped(old))
		n = *a;
	else if ((n = mremap(*a, mapped(old), mapped(bytes), MREMAP_MAYMOVE)) == MAP_FAILED)
		n = NULL;
	if (!n)
		return -1;
	*a = n;
	*cap = ncap;
	return 0;
}

void cp_big_free(void *array, size_t cap, size_t size)
{
	if (cap * size > CP_BIG_ARRAY)
		munmap(array, mapped(cap * size));
	else
		free(array);
}
