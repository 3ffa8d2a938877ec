/*
 * key_index.c - records found by a 64-bit key (see key_index.h).
 */
#include "util/key_index.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static uint64_t key_of(const void *records, size_t size, size_t key_off, size_t number)
{
	uint64_t k;

	memcpy(&k, (const char *)records + (number - 1) * size + key_off, sizeof(k));
	return k;
}

/* The slot holding the record whose key is key, or the empty one where it
 * would go. */
static size_t slot_of(const struct cp_key_index *x, const void *records, size_t size, size_t key_off,
		      uint64_t key)
{
	size_t h = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & x->mask;

	while (x->slot[h] && key_of(records, size, key_off, x->slot[h]) != key)
		h = (h + 1) & x->mask;
	return h;
}

size_t cp_key_index_find(const struct cp_key_index *x, const void *records, size_t size, size_t key_off,
			 uint64_t key)
{
	return x->slot ? x->slot[slot_of(x, records, size, key_off, key)] : 0;
}

/* Twice as large (or first made), its records in it again. */
static bool grow(struct cp_key_index *x, const void *records, size_t size, size_t key_off)
{
	struct cp_key_index y = { NULL, x->slot ? 2 * (x->mask + 1) - 1 : 63, x->n };
	size_t i;

	if (!(y.slot = calloc(y.mask + 1, sizeof(*y.slot))))
		return false;
	for (i = 0; x->slot && i <= x->mask; i++)
		if (x->slot[i])
			y.slot[slot_of(&y, records, size, key_off, key_of(records, size, key_off, x->slot[i]))] =
				x->slot[i];
	free(x->slot);
	*x = y;
	return true;
}

bool cp_key_index_add(struct cp_key_index *x, const void *records, size_t size, size_t key_off, size_t number)
{
	size_t h;

	assert(number > 0);
	if ((!x->slot || 2 * (x->n + 1) > x->mask + 1) && !grow(x, records, size, key_off))
		return false;
	h = slot_of(x, records, size, key_off, key_of(records, size, key_off, number));
	assert(!x->slot[h]);
	x->slot[h] = number;
	x->n++;
	return true;
}

void cp_key_index_free(struct cp_key_index *x)
{
	free(x->slot);
	memset(x, 0, sizeof(*x));
}
