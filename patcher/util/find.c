/*
 * find.c - the occurrences of a short needle (see find.h).
 */
#include "util/find.h"

#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

void cp_find_init(struct cp_find *f, const void *p, size_t len, const void *needle, size_t n)
{
	f->p = p;
	f->end = f->p + len;
	f->needle = needle;
	f->n = n;
}

#ifdef __SSE2__
/* Whether the needle is at c, given that its first and last bytes are. */
static int middle_matches(const struct cp_find *f, const uint8_t *c)
{
	return f->n <= 2 || !memcmp(c + 1, f->needle + 1, f->n - 2);
}

/* The first match at or after f->p: 16 candidates at a time, then one at a
 * time for the last few (the loads must stay inside the range). */
static const uint8_t *search(const struct cp_find *f)
{
	const uint8_t *p = f->p, *stop = f->end - f->n + 1; /* candidates: [p, stop) */
	const __m128i first = _mm_set1_epi8((char)f->needle[0]);
	const __m128i last = _mm_set1_epi8((char)f->needle[f->n - 1]);

	for (; stop - p >= 16; p += 16) {
		__m128i a = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)p), first);
		__m128i b = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + f->n - 1)), last);
		unsigned m = (unsigned)_mm_movemask_epi8(_mm_and_si128(a, b));

		for (; m; m &= m - 1) {
			const uint8_t *c = p + __builtin_ctz(m);

			if (middle_matches(f, c))
				return c;
		}
	}
	for (; p < stop; p++)
		if (p[0] == f->needle[0] && p[f->n - 1] == f->needle[f->n - 1] && middle_matches(f, p))
			return p;
	return NULL;
}
#else
/* elsewhere (aarch64) the C library's memmem */
static const uint8_t *search(const struct cp_find *f)
{
	return memmem(f->p, (size_t)(f->end - f->p), f->needle, f->n);
}
#endif

const uint8_t *cp_find_next(struct cp_find *f)
{
	const uint8_t *hit = (size_t)(f->end - f->p) >= f->n ? search(f) : NULL;

	f->p = hit ? hit + 1 : f->end;
	return hit;
}

const uint8_t *cp_find_first(const void *p, size_t len, const void *needle, size_t n)
{
	struct cp_find f;

	cp_find_init(&f, p, len, needle, n);
	return cp_find_next(&f);
}
