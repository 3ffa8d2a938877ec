/*
 * find.h - the occurrences of a short needle in a large range of bytes:
 * the searches of whole sections (scan_strings.c, image.c) and of whole
 * wheel members (wheel.c).
 *
 * glibc's memmem reads about 1.7 GB/s here whatever the bytes, and memchr
 * for the needle's first byte slows down wherever that byte is common. The
 * search compares 16 positions at a time (SSE2, which every x86-64 has)
 * against the needle's first and last bytes and compares the rest only
 * where both match: 5 to 7 GB/s on random bytes and on text alike
 * (docs/performance.md). Elsewhere it is memmem.
 */
#ifndef CP_FIND_H
#define CP_FIND_H

#include <stddef.h>
#include <stdint.h>

struct cp_find {
	const uint8_t *p, *end;
	const uint8_t *needle;
	size_t n;
};

/* A search for needle (n bytes, n > 0) in [p, p + len). */
void cp_find_init(struct cp_find *f, const void *p, size_t len, const void *needle, size_t n);

/* The next occurrence (each one once, overlapping ones included), or NULL. */
const uint8_t *cp_find_next(struct cp_find *f);

/* The first occurrence of needle in [p, p + len), or NULL. */
const uint8_t *cp_find_first(const void *p, size_t len, const void *needle, size_t n);

#endif
