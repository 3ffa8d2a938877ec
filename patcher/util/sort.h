/*
 * sort.h - a stable sort of fixed-size records by a 64-bit key: the code
 * walk's findings (a million jumps in a large module), which glibc's qsort
 * took a tenth of a scan's time to order through its comparison calls.
 */
#ifndef CP_SORT_H
#define CP_SORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Orders n records of size bytes at base by the uint64_t at key_off in
 * each, keeping the order of records with equal keys (LSD radix sort, 16
 * bits a pass, as many passes as the largest key needs; an insertion sort
 * below 64 records). false: out of memory, and base is as it was. */
bool cp_sort_by_key(void *base, size_t n, size_t size, size_t key_off);

/* Whether the records are in order of that key already. */
bool cp_sorted_by_key(const void *base, size_t n, size_t size, size_t key_off);

/* In records in order of that key: the first whose key is at least key
 * (n when none is); the records whose key is key, [*first, *first +
 * the count returned). */
size_t cp_first_key_at_least(const void *base, size_t n, size_t size, size_t key_off, uint64_t key);
size_t cp_records_with_key(const void *base, size_t n, size_t size, size_t key_off, uint64_t key, size_t *first);

/* qsort and bsearch order of uint64_t values. */
int cp_cmp_u64(const void *a, const void *b);

#endif
