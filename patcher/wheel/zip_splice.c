/*
 * zip_splice.c - a zip archive assembled from the members of others (see
 * zip_splice.h). End records as APPNOTE.TXT 4.3.14-16.
 */
#include "wheel/zip_splice.h"
#include "util/error.h"
#include "util/write.h"
#include "wheel/zip_bytes.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* A stop waits for at most one chunk. */
#define CHUNK (64ull << 20)

struct cp_zip_splice {
	int out;
	const char *path;
	uint64_t zip64_at;
	uint64_t at;       /* where the next member goes */
	int from;          /* bytes [from_off, from_off + pending) of from, not yet copied to at - pending */
	uint64_t from_off, pending;
	uint8_t *cd;       /* the new central directory */
	size_t cd_len, cd_cap;
	uint64_t n;
	atomic_bool stop;
};

static cp_status failed(cp_zip_splice *z, cp_error *err)
{
	return cp_fail(err, CP_E_IO, "%s: writing the archive failed: %s", z->path, cp_write_strerror(errno));
}

cp_status cp_zip_splice_new(int out, const char *path, uint64_t zip64_at, cp_zip_splice **s, cp_error *err)
{
	*s = calloc(1, sizeof(**s));
	if (!*s)
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	(*s)->out = out;
	(*s)->path = path;
	(*s)->zip64_at = zip64_at;
	(*s)->from = -1;
	atomic_init(&(*s)->stop, false);
	return CP_OK;
}

cp_status cp_zip_splice_flush(cp_zip_splice *z, cp_error *err)
{
	uint64_t to = z->at - z->pending;

	while (z->pending) {
		uint64_t n = z->pending < CHUNK ? z->pending : CHUNK;

		if (atomic_load(&z->stop))
			return cp_fail(err, CP_E_IO, "%s: stopped", z->path);
		if (cp_write_copy_range(z->from, z->from_off, z->out, to, n))
			return failed(z, err);
		z->from_off += n;
		z->pending -= n;
		to += n;
	}
	return CP_OK;
}

void cp_zip_splice_stop(cp_zip_splice *z)
{
	atomic_store(&z->stop, true);
}

cp_status cp_zip_splice_add(cp_zip_splice *z, int fd, const struct cp_zip_span *s, cp_error *err)
{
	size_t k;
	cp_status st;

	if (CP_GROW(z->cd, z->cd_cap, z->cd_len + s->cd_len + 12))
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	k = cp_zip_record_moved(s, z->at, z->zip64_at, z->cd + z->cd_len);
	if (!k)
		return cp_fail(err, CP_E_INPUT, "%s: a member's extra fields leave no room for its zip64 offset",
			       z->path);
	z->cd_len += k;
	z->n++;
	/* the members of one file that follow each other go in one copy */
	if (z->pending && (fd != z->from || s->off != z->from_off + z->pending) && (st = cp_zip_splice_flush(z, err)))
		return st;
	if (!z->pending) {
		z->from = fd;
		z->from_off = s->off;
	}
	z->pending += s->len;
	z->at += s->len;
	return CP_OK;
}

/* The end records: zip64 ones (4.3.14-15) when a count, size or offset
 * does not fit the classic record, whose fields then hold all ones. */
static size_t end_records(const cp_zip_splice *z, uint8_t *e)
{
	uint64_t cd_off = z->at, cd_size = z->cd_len;
	bool wide = z->n >= 0xffff || cd_size >= 0xffffffffu || cd_off >= z->zip64_at;
	size_t o = 0;

	if (wide) {
		cp_put32(e, CP_EOCD64_SIG);
		cp_put64(e + 4, CP_EOCD64_LEN - 12);
		cp_put16(e + 12, 45); /* made by, needed: 4.5 */
		cp_put16(e + 14, 45);
		cp_put64(e + 16, 0);  /* this disk, the directory's disk */
		cp_put64(e + 24, z->n);
		cp_put64(e + 32, z->n);
		cp_put64(e + 40, cd_size);
		cp_put64(e + 48, cd_off);
		cp_put32(e + 56, CP_LOC64_SIG);
		cp_put32(e + 60, 0);
		cp_put64(e + 64, cd_off + cd_size);
		cp_put32(e + 72, 1);
		o = CP_EOCD64_LEN + CP_LOC64_LEN;
	}
	memset(e + o, 0, CP_EOCD_LEN);
	cp_put32(e + o, CP_EOCD_SIG);
	cp_put16(e + o + 8, z->n < 0xffff ? z->n : 0xffff);
	cp_put16(e + o + 10, z->n < 0xffff ? z->n : 0xffff);
	cp_put32(e + o + 12, cd_size < 0xffffffffu ? cd_size : 0xffffffffu);
	cp_put32(e + o + 16, wide ? 0xffffffffu : cd_off);
	return o + CP_EOCD_LEN;
}

cp_status cp_zip_splice_finish(cp_zip_splice *z, cp_error *err)
{
	uint8_t e[CP_EOCD64_LEN + CP_LOC64_LEN + CP_EOCD_LEN];
	size_t n;
	cp_status st = cp_zip_splice_flush(z, err);

	if (st)
		return st;
	n = end_records(z, e);
	if (cp_write_all_at(z->out, z->cd, z->cd_len, z->at) || cp_write_all_at(z->out, e, n, z->at + z->cd_len))
		return failed(z, err);
	return CP_OK;
}

void cp_zip_splice_free(cp_zip_splice *z)
{
	if (!z)
		return;
	free(z->cd);
	free(z);
}
