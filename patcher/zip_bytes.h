/*
 * zip_bytes.h - the little-endian fields of zip records (APPNOTE.TXT
 * 4.4.1.1), read and written byte by byte: records are not aligned.
 */
#ifndef CP_ZIP_BYTES_H
#define CP_ZIP_BYTES_H

#include <stdint.h>

static inline uint16_t cp_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t cp_get32(const uint8_t *p)
{
	return (uint32_t)cp_get16(p) | (uint32_t)cp_get16(p + 2) << 16;
}

static inline uint64_t cp_get64(const uint8_t *p)
{
	return (uint64_t)cp_get32(p) | (uint64_t)cp_get32(p + 4) << 32;
}

static inline void cp_put16(uint8_t *p, uint64_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void cp_put32(uint8_t *p, uint64_t v)
{
	cp_put16(p, v);
	cp_put16(p + 2, v >> 16);
}

static inline void cp_put64(uint8_t *p, uint64_t v)
{
	cp_put32(p, v);
	cp_put32(p + 4, v >> 32);
}

#endif
