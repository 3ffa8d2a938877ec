/*
 * big_array.h - growable arrays of many small records: the code walk's
 * findings (a quarter of a million jumps and a hundred thousand calls in a
 * large module, copied again by the check and the threads' joins).
 *
 * Up to CP_BIG_ARRAY bytes one lives on the heap, as cp_grow's do. Larger,
 * it has an anonymous mapping of its own, advised to use transparent huge
 * pages and grown in place (mremap): filling it then costs a page fault
 * per 2 MB rather than per 4 KB (a fault is microseconds), and growing it
 * copies nothing. Where the kernel gives no huge pages it is an ordinary
 * mapping. An array grown here is freed here, with the capacity it has.
 */
#ifndef CP_UTIL_BIG_ARRAY_H
#define CP_UTIL_BIG_ARRAY_H

#include <stddef.h>

#define CP_BIG_ARRAY (1u << 20)

/* As cp_grow: room for `need` records of `size` bytes in *array (whose
 * capacity is *cap); 0, or -1 with *array and *cap unchanged. */
int cp_big_grow(void *array, size_t *cap, size_t need, size_t size);
/* Frees an array of cap records of `size` bytes grown by cp_big_grow. */
void cp_big_free(void *array, size_t cap, size_t size);

#define CP_BIG_GROW(arr, cap, need) cp_big_grow(&(arr), &(cap), (need), sizeof(*(arr)))
#define CP_BIG_FREE(arr, cap) cp_big_free((arr), (cap), sizeof(*(arr)))

#endif
