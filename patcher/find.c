/*
 * find.c - the occurrences of a short needle (see find.h).
 */
#include "find.h"

#include <string.h>

/* Once past DENSE_AFTER candidates, more than one per DENSE_GAP bytes
 * and memchr stops paying for itself: memmem takes the next DENSE_SPAN
 * bytes, then memchr tries again (a section's strings are dense, the bulk
 * after them need not be). */
#define DENSE_GAP 64
#define DENSE_AFTER 64
#define DENSE_SPAN (1u << 16)

void cp_find_init(struct cp_find *f, const void *p, size_t len, const void *needle, size_t n)
{
	f->start = f->p = p;
	f->end = f->p + len;
	f->dense_end = NULL;
	f->needle = needle;
	f->n = n;
	f->misses = 0;
}

static const uint8_t *by_memchr(struct cp_find *f)
{
	while (f->p < f->end) {
		const uint8_t *c = memchr(f->p, f->needle[0], (size_t)(f->end - f->p));

		if (!c || (size_t)(f->end - c) < f->n)
			break;
		f->p = c + 1;
		if (!memcmp(c, f->needle, f->n))
			return c;
		f->misses++;
		if (f->misses > DENSE_AFTER && (size_t)(c - f->start) < f->misses * DENSE_GAP) {
			f->dense_end = (size_t)(f->end - f->p) > DENSE_SPAN ? f->p + DENSE_SPAN : f->end;
			return NULL;
		}
	}
	f->p = f->end;
	return NULL;
}

/* Matches that begin before dense_end, by memmem. */
static const uint8_t *by_memmem(struct cp_find *f)
{
	size_t room = (size_t)(f->end - f->dense_end);
	const uint8_t *lim = f->dense_end + (room < f->n - 1 ? room : f->n - 1);
	const uint8_t *hit = f->p < f->dense_end ? memmem(f->p, (size_t)(lim - f->p), f->needle, f->n) : NULL;

	if (hit) {
		f->p = hit + 1;
		return hit;
	}
	f->p = f->dense_end;
	f->dense_end = NULL;
	f->start = f->p;
	f->misses = 0;
	return NULL;
}

const uint8_t *cp_find_next(struct cp_find *f)
{
	const uint8_t *hit;

	while (f->p < f->end) {
		hit = f->dense_end ? by_memmem(f) : by_memchr(f);
		if (hit)
			return hit;
	}
	return NULL;
}

const uint8_t *cp_find_first(const void *p, size_t len, const void *needle, size_t n)
{
	struct cp_find f;

	cp_find_init(&f, p, len, needle, n);
	return cp_find_next(&f);
}
