/*
 * key_index.c - records found by a key (see key_index.h).
 */
#include "util/key_index.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* The slot holding a record with this hash for which is() holds (is:
 * NULL never does), or the empty one where it would go. */
static size_t slot_of(const struct cp_key_index *x, uint64_t hash, bool (*is)(const void *ctx, size_t number),
		      const void *ctx)
{
	size_t h = (size_t)(hash >> 32 ^ hash) & x->mask;

	while (x->slot[h].number && !(x->slot[h].hash == hash && is && is(ctx, x->slot[h].number)))
		h = (h + 1) & x->mask;
	return h;
}

size_t cp_key_index_lookup(const struct cp_key_index *x, uint64_t hash, bool (*is)(const void *ctx, size_t number),
			   const void *ctx)
{
	return x->slot ? x->slot[slot_of(x, hash, is, ctx)].number : 0;
}

/* Twice as large (or first made), its records in it again. */
static bool grow(struct cp_key_index *x)
{
	struct cp_key_index y = { NULL, x->slot ? 2 * (x->mask + 1) - 1 : 63, x->n };
	size_t i;

	if (!(y.slot = calloc(y.mask + 1, sizeof(*y.slot))))
		return false;
	for (i = 0; x->slot && i <= x->mask; i++)
		if (x->slot[i].number)
			y.slot[slot_of(&y, x->slot[i].hash, NULL, NULL)] = x->slot[i];
	free(x->slot);
	*x = y;
	return true;
}

bool cp_key_index_insert(struct cp_key_index *x, uint64_t hash, size_t number)
{
	size_t h;

	assert(number > 0);
	if ((!x->slot || 2 * (x->n + 1) > x->mask + 1) && !grow(x))
		return false;
	h = slot_of(x, hash, NULL, NULL);
	x->slot[h].hash = hash;
	x->slot[h].number = number;
	x->n++;
	return true;
}

struct u64_key {
	const void *records;
	size_t size, key_off;
	uint64_t key;
};

static uint64_t key_of(const struct u64_key *k, size_t number)
{
	uint64_t v;

	memcpy(&v, (const char *)k->records + (number - 1) * k->size + k->key_off, sizeof(v));
	return v;
}

static bool is_key(const void *ctx, size_t number)
{
	const struct u64_key *k = ctx;

	return key_of(k, number) == k->key;
}

static uint64_t hash_u64(uint64_t key)
{
	return key * 0x9e3779b97f4a7c15ull;
}

size_t cp_key_index_find(const struct cp_key_index *x, const void *records, size_t size, size_t key_off,
			 uint64_t key)
{
	struct u64_key k = { records, size, key_off, key };

	return cp_key_index_lookup(x, hash_u64(key), is_key, &k);
}

bool cp_key_index_add(struct cp_key_index *x, const void *records, size_t size, size_t key_off, size_t number)
{
	struct u64_key k = { records, size, key_off, 0 };

	k.key = key_of(&k, number);
	assert(!cp_key_index_find(x, records, size, key_off, k.key));
	return cp_key_index_insert(x, hash_u64(k.key), number);
}

void cp_key_index_free(struct cp_key_index *x)
{
	free(x->slot);
	memset(x, 0, sizeof(*x));
}
