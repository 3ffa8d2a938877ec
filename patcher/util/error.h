/* error.h - growing arrays, shared by every module; cp_fail, which fills a
 * cp_error, is public (cypatch.h). */
#ifndef CP_ERROR_H
#define CP_ERROR_H

#include <stddef.h>
#include "cypatch.h"

/*
 * Makes room for at least `need` elements of `size` bytes in *array, whose
 * capacity is *cap. Returns 0, or -1 when memory is exhausted or the size
 * would overflow (the array is then unchanged).
 */
int cp_grow(void *array, size_t *cap, size_t need, size_t size);
/* The capacity cp_grow gives an array of cap records that must hold need:
 * doubled from cap (8 when 0) until it does; 0 when the bytes of records
 * of `size`, plus `slack`, would overflow. */
size_t cp_grow_capacity(size_t cap, size_t need, size_t size, size_t slack);

/*
 * err, about `file` (a member of `wheel` unpacked to a private path), made
 * to name the member instead: "WHEEL: MEMBER: problem" (a message that
 * named the file or the member already keeps the rest). Returns st.
 */
cp_status cp_fail_about_member(cp_error *err, cp_status st, const char *file, const char *wheel,
				const char *member);

#define CP_GROW(arr, cap, need) cp_grow(&(arr), &(cap), (need), sizeof(*(arr)))

#endif
