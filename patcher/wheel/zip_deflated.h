/*
 * zip_deflated.h - a new member's bytes deflated by libdeflate, as a
 * libzip source.
 *
 * libzip deflates through zlib; libdeflate is about twice as fast at the
 * same level, and a patched extension of hundreds of MB is deflated on
 * every repair (docs/performance.md). The source states its compression
 * method, sizes and CRC-32, so libzip writes its bytes as they are.
 */
#ifndef CP_ZIP_DEFLATED_H
#define CP_ZIP_DEFLATED_H

#include <stddef.h>
#include <stdint.h>
#include <zip.h>

/* libdeflate's level: 5 deflates a fifth faster than 6 and is within 1 %
 * of the size of zlib's 6, which `wheel pack` writes (0.5 % larger over
 * cuda-python's extensions, 1 % smaller over rmm-cu12's). */
#define CP_DEFLATE_LEVEL 5

/* A member's bytes deflated, with what a zip entry says of them. */
typedef struct cp_deflated cp_deflated;

/* data[0..len) deflated at CP_DEFLATE_LEVEL (data is not kept); NULL when out of
 * memory. A repair deflates each patched extension on the thread that
 * patched it. */
cp_deflated *cp_deflate(const uint8_t *data, size_t len);
void cp_deflated_free(cp_deflated *d);

/* A new source of d's stream, which it takes (freed with the source, or
 * here on failure: NULL, with ze set). */
zip_source_t *cp_zip_source_of(cp_deflated *d, zip_error_t *ze);

/* data[0..len) deflated into a new source: cp_deflate, then
 * cp_zip_source_of. */
zip_source_t *cp_zip_source_deflated(const uint8_t *data, size_t len, zip_error_t *ze);

#endif
