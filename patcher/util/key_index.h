/*
 * key_index.h - records found by a key: a hash index over an array the
 * caller owns and only appends to (the scan's strings by address and its
 * cimports by what they import, the plan's literals already rewritten),
 * where a search of every record for each new one made a pass quadratic in
 * the references.
 */
#ifndef CP_KEY_INDEX_H
#define CP_KEY_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Zeroed: empty. Linear probing over 1-based record numbers with their
 * keys' hashes (so that it grows without reading the records), at most
 * half full. */
struct cp_key_index {
	struct cp_key_slot {
		uint64_t hash;
		size_t number; /* 0: empty */
	} *slot;
	size_t mask, n;
};

/* Any key: the number of the record whose key hashes to hash and for
 * which is(ctx, number) holds, or 0; record `number` added under hash
 * (its key not in the index yet); false: out of memory, and the index is
 * as it was. */
size_t cp_key_index_lookup(const struct cp_key_index *x, uint64_t hash, bool (*is)(const void *ctx, size_t number),
			   const void *ctx);
bool cp_key_index_insert(struct cp_key_index *x, uint64_t hash, size_t number);

/* A uint64_t key at key_off in records of `size` bytes: the same. */
size_t cp_key_index_find(const struct cp_key_index *x, const void *records, size_t size, size_t key_off,
			 uint64_t key);
bool cp_key_index_add(struct cp_key_index *x, const void *records, size_t size, size_t key_off, size_t number);

void cp_key_index_free(struct cp_key_index *x);

#endif
