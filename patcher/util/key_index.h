/*
 * key_index.h - records found by a 64-bit key: a hash index over an array
 * the caller owns and only appends to (the scan's strings by address, the
 * plan's literals already rewritten), where a search of every record for
 * each new one made a pass quadratic in the references.
 */
#ifndef CP_KEY_INDEX_H
#define CP_KEY_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Zeroed: empty. Linear probing over 1-based record numbers, at most half
 * full. The records are `size` bytes, their key a uint64_t at key_off. */
struct cp_key_index {
	size_t *slot;
	size_t mask, n;
};

/* The number (1-based) of the record whose key is key, or 0. */
size_t cp_key_index_find(const struct cp_key_index *x, const void *records, size_t size, size_t key_off,
			 uint64_t key);

/* Record `number` (1-based; its key not in the index yet) added; false:
 * out of memory, and the index is as it was. */
bool cp_key_index_add(struct cp_key_index *x, const void *records, size_t size, size_t key_off, size_t number);

void cp_key_index_free(struct cp_key_index *x);

#endif
