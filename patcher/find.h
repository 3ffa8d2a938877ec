/*
 * find.h - the occurrences of a short needle in a large range of bytes:
 * the searches of whole sections (scan_strings.c, image.c) and of whole
 * wheel members (wheel.c).
 *
 * glibc's memmem reads about 1.7 GB/s here whatever the bytes; its memchr
 * is vectorised and reads ten times that. So the search is memchr for the
 * needle's first byte and a compare at each candidate, until candidates
 * come more often than one per 64 bytes (text full of that letter), when
 * memmem takes the next 64 KiB: no input is searched much slower than by
 * memmem alone, and compressed data, machine code and other binary bulk
 * are searched at memchr's speed.
 */
#ifndef CP_FIND_H
#define CP_FIND_H

#include <stddef.h>
#include <stdint.h>

struct cp_find {
	const uint8_t *start, *p, *end;
	const uint8_t *needle;
	size_t n;
	size_t misses;            /* candidates since start that were not the needle */
	const uint8_t *dense_end; /* memmem up to here, or NULL */
};

/* A search for needle (n bytes, n > 0) in [p, p + len). */
void cp_find_init(struct cp_find *f, const void *p, size_t len, const void *needle, size_t n);

/* The next occurrence (each one once, overlapping ones included), or NULL. */
const uint8_t *cp_find_next(struct cp_find *f);

/* The first occurrence of needle in [p, p + len), or NULL. */
const uint8_t *cp_find_first(const void *p, size_t len, const void *needle, size_t n);

#endif
