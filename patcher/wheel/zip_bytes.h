/*
 * zip_bytes.h - the end records of a zip archive (APPNOTE.TXT 4.3.14-16)
 * and the little-endian fields of its records (4.4.1.1), read and written
 * byte by byte: records are not aligned.
 */
#ifndef CP_ZIP_BYTES_H
#define CP_ZIP_BYTES_H

#include <stdint.h>

#define CP_EOCD_SIG 0x06054b50u
#define CP_EOCD_LEN 22
#define CP_LOC64_SIG 0x07064b50u
#define CP_LOC64_LEN 20
#define CP_EOCD64_SIG 0x06064b50u
#define CP_EOCD64_LEN 56

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
