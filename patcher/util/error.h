/* error.h - filling a cp_error and growing arrays, shared by every module. */
#ifndef CP_ERROR_H
#define CP_ERROR_H

#include <stddef.h>
#include "cypatch.h"

#if defined(__GNUC__)
#define CP_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CP_PRINTF(a, b)
#endif

/* Records code and message in err (which may be NULL) and returns code. */
cp_status cp_fail(cp_error *err, cp_status code, const char *fmt, ...) CP_PRINTF(3, 4);

/*
 * Makes room for at least `need` elements of `size` bytes in *array, whose
 * capacity is *cap. Returns 0, or -1 when memory is exhausted or the size
 * would overflow (the array is then unchanged).
 */
int cp_grow(void *array, size_t *cap, size_t need, size_t size);

#define CP_GROW(arr, cap, need) cp_grow(&(arr), &(cap), (need), sizeof(*(arr)))

#endif
