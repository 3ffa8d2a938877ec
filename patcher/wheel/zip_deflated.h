/*
 * zip_deflated.h - a new member's bytes deflated by libdeflate, as a
 * libzip source.
 *
 * libzip deflates through zlib; libdeflate at the same level (6, what
 * `wheel pack` writes) is about twice as fast and a little smaller, and a
 * patched extension of hundreds of MB is deflated on every repair
 * (docs/performance.md). The source states its compression method, sizes
 * and CRC-32, so libzip writes its bytes as they are.
 */
#ifndef CP_ZIP_DEFLATED_H
#define CP_ZIP_DEFLATED_H

#include <stddef.h>
#include <stdint.h>
#include <zip.h>

/* data[0..len) deflated at level 6 into a new source (data is not kept).
 * NULL, with ze set, on failure. */
zip_source_t *cp_zip_source_deflated(const uint8_t *data, size_t len, zip_error_t *ze);

#endif
