/*
 * zip_deflated.c - a new member's bytes deflated by libdeflate, as a libzip
 * source (see zip_deflated.h).
 */
#include "wheel/zip_deflated.h"

#include <libdeflate.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct cp_deflated {
	uint8_t *buf; /* the raw deflate stream */
	size_t len;
	size_t pos;
	uint64_t size; /* uncompressed */
	uint32_t crc;
	zip_error_t error;
};

void cp_deflated_free(cp_deflated *d)
{
	if (!d)
		return;
	zip_error_fini(&d->error);
	free(d->buf);
	free(d);
}

/* libzip copies the stream as it is only when it knows all of this. */
static zip_int64_t stat_of(cp_deflated *d, void *data, zip_uint64_t len)
{
	zip_stat_t *st = data;

	if (len < sizeof(*st)) {
		zip_error_set(&d->error, ZIP_ER_INVAL, 0);
		return -1;
	}
	zip_stat_init(st);
	st->size = d->size;
	st->comp_size = d->len;
	st->comp_method = ZIP_CM_DEFLATE;
	st->encryption_method = ZIP_EM_NONE;
	st->crc = d->crc;
	st->valid = ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD | ZIP_STAT_ENCRYPTION_METHOD |
		    ZIP_STAT_CRC;
	return (zip_int64_t)sizeof(*st);
}

static zip_int64_t read_on(cp_deflated *d, void *out, zip_uint64_t want)
{
	size_t n = d->len - d->pos < want ? d->len - d->pos : (size_t)want;

	memcpy(out, d->buf + d->pos, n);
	d->pos += n;
	return (zip_int64_t)n;
}

static zip_int64_t deflated_cb(void *ud, void *data, zip_uint64_t len, zip_source_cmd_t cmd)
{
	cp_deflated *d = ud;

	switch (cmd) {
	case ZIP_SOURCE_OPEN:
		d->pos = 0;
		return 0;
	case ZIP_SOURCE_READ:
		return read_on(d, data, len);
	case ZIP_SOURCE_CLOSE:
		return 0;
	case ZIP_SOURCE_STAT:
		return stat_of(d, data, len);
	case ZIP_SOURCE_ERROR:
		return zip_error_to_data(&d->error, data, len);
	case ZIP_SOURCE_FREE:
		cp_deflated_free(d);
		return 0;
	case ZIP_SOURCE_SUPPORTS:
		return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE,
						      ZIP_SOURCE_STAT, ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE, -1);
	default:
		zip_error_set(&d->error, ZIP_ER_OPNOTSUPP, 0);
		return -1;
	}
}

/* The stream into d->buf; false when out of memory. */
static bool compress_into(cp_deflated *d, const uint8_t *data, size_t len)
{
	struct libdeflate_compressor *c = libdeflate_alloc_compressor(CP_DEFLATE_LEVEL);
	size_t cap = c ? libdeflate_deflate_compress_bound(c, len) : 0;

	if (c && (d->buf = malloc(cap ? cap : 1)))
		d->len = libdeflate_deflate_compress(c, data, len, d->buf, cap);
	libdeflate_free_compressor(c);
	return d->len > 0; /* even empty input gives a final block */
}

cp_deflated *cp_deflate(const uint8_t *data, size_t len)
{
	cp_deflated *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	zip_error_init(&d->error);
	d->size = len;
	d->crc = (uint32_t)libdeflate_crc32(0, data, len);
	if (!compress_into(d, data, len)) {
		cp_deflated_free(d);
		return NULL;
	}
	return d;
}

zip_source_t *cp_zip_source_of(cp_deflated *d, zip_error_t *ze)
{
	zip_source_t *src = zip_source_function_create(deflated_cb, d, ze);

	if (!src)
		cp_deflated_free(d);
	return src;
}

zip_source_t *cp_zip_source_deflated(const uint8_t *data, size_t len, zip_error_t *ze)
{
	cp_deflated *d = cp_deflate(data, len);

	if (!d) {
		zip_error_set(ze, ZIP_ER_MEMORY, 0);
		return NULL;
	}
	return cp_zip_source_of(d, ze);
}
