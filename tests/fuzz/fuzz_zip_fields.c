/*
 * fuzz_zip_fields.c - `cypatch repair` on wheels mutated field by field.
 *
 * The custom mutator walks the input as a zip (its own bounds-checked
 * reader of the EOCD, the zip64 records, the central directory and the
 * local headers) and changes FIELDS rather than bytes: a local header's or
 * a central record's sizes, offsets, CRC, method, flags, name and extra
 * lengths; the EOCD's counts, offset and comment (a second central
 * directory planted in it); entries dropped, duplicated, reordered,
 * renamed or given zip64 extra fields; and RECORD rows (duplicated, stale,
 * `../` or absolute paths, sha512/sha384/md5 hashes, missing, wrong sizes,
 * a row for a missing member), the archive rebuilt around a new RECORD.
 * A fraction of the mutations is libFuzzer's own.
 *
 * The body runs the repair pipeline in-process (cp_repair_wheel, as the
 * CLI does). When it reports success, the output must pass an oracle:
 * libzip, zip_layout.c and this file's walker see the same members (names,
 * offsets, sizes); every RECORD row's hash and size match the member's
 * bytes as libzip and the walker (with zlib) read them; every member but
 * RECORD has a row; every member repair did not change equals the input's
 * (libzip); no name is absolute or holds `..`. A violation aborts.
 */
#include "fuzz_input.h"
#include "wheel/record.h"
#include "cypatch.h"
#include "wheel/zip_layout.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>
#include <zlib.h>

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

/* ---- little-endian fields ---- */

static uint32_t rd16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32(const uint8_t *p) { return rd16(p) | rd16(p + 2) << 16; }
static uint64_t rd64(const uint8_t *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void wr32(uint8_t *p, uint32_t v) { wr16(p, v & 0xffff); wr16(p + 2, v >> 16); }
static void wr64(uint8_t *p, uint64_t v) { wr32(p, (uint32_t)v); wr32(p + 4, (uint32_t)(v >> 32)); }

/* ---- a small walker ---- */

#define MAXE 256

struct zent {
	size_t cd, cd_len;      /* its central record in the buffer */
	size_t lh;              /* its local header (0 when outside) */
	bool lh_ok;
	size_t data, data_len;  /* compressed bytes after the local header, clamped */
	const uint8_t *name;
	size_t name_len;
	uint32_t method, flags, crc;
	uint64_t csize, usize, off;
};

struct zwalk {
	size_t eocd;
	bool z64;
	size_t z64eocd;
	size_t cd_off, cd_size;
	struct zent e[MAXE];
	size_t n;
};

/* The zip64 extra field's values in place of the 0xffffffff ones. */
static void apply_z64(const uint8_t *ex, size_t exlen, struct zent *z, uint32_t u32, uint32_t c32, uint32_t o32)
{
	size_t i = 0;

	while (i + 4 <= exlen) {
		uint32_t id = rd16(ex + i), len = rd16(ex + i + 2);
		size_t p = i + 4, end = i + 4 + len;

		if (end > exlen)
			return;
		if (id == 1) {
			if (u32 == 0xffffffff && p + 8 <= end)
				z->usize = rd64(ex + p), p += 8;
			if (c32 == 0xffffffff && p + 8 <= end)
				z->csize = rd64(ex + p), p += 8;
			if (o32 == 0xffffffff && p + 8 <= end)
				z->off = rd64(ex + p);
			return;
		}
		i = end;
	}
}

/* The end of central directory record, found backwards within the
 * longest comment, and the zip64 one in its place when the locator before
 * it points at one: where the central directory is, and *n its entries. */
static bool walk_end(const uint8_t *d, size_t size, struct zwalk *w, uint64_t *n)
{
	size_t i;

	if (size < 22)
		return false;
	for (i = size - 22;; i--) {
		if (rd32(d + i) == 0x06054b50)
			break;
		if (i == 0 || size - i > 65557)
			return false;
	}
	w->eocd = i;
	*n = rd16(d + i + 10);
	w->cd_size = rd32(d + i + 12);
	w->cd_off = rd32(d + i + 16);
	if (i >= 20 && rd32(d + i - 20) == 0x07064b50) {
		uint64_t at = rd64(d + i - 20 + 8);
		if (at + 56 <= i && rd32(d + at) == 0x06064b50) {
			w->z64 = true;
			w->z64eocd = (size_t)at;
			*n = rd64(d + at + 32);
			w->cd_size = (size_t)(rd64(d + at + 40) & 0xffffffffffff);
			w->cd_off = (size_t)(rd64(d + at + 48) & 0xffffffffffff);
		}
	}
	return true;
}

/* The central record at p into z, with its local header and data when
 * they lie in the buffer; false (z untouched) when the record's names and
 * fields run past end. */
static bool walk_entry(const uint8_t *d, size_t size, size_t p, size_t end, struct zent *z)
{
	size_t nl = rd16(d + p + 28), el = rd16(d + p + 30), cl = rd16(d + p + 32);
	uint32_t c32, u32, o32;

	if (p + 46 + nl + el + cl > end)
		return false;
	z->cd = p;
	z->cd_len = 46 + nl + el + cl;
	z->name = d + p + 46;
	z->name_len = nl;
	z->flags = rd16(d + p + 8);
	z->method = rd16(d + p + 10);
	z->crc = rd32(d + p + 16);
	z->csize = c32 = rd32(d + p + 20);
	z->usize = u32 = rd32(d + p + 24);
	z->off = o32 = rd32(d + p + 42);
	apply_z64(d + p + 46 + nl, el, z, u32, c32, o32);
	if (z->off <= size && size - z->off >= 30 && rd32(d + z->off) == 0x04034b50) {
		size_t h = (size_t)z->off, dat = h + 30 + rd16(d + h + 26) + rd16(d + h + 28);

		z->lh = h;
		z->lh_ok = true;
		if (dat <= size) {
			z->data = dat;
			z->data_len = z->csize <= size - dat ? (size_t)z->csize : size - dat;
		}
	}
	return true;
}

static bool walk(const uint8_t *d, size_t size, struct zwalk *w)
{
	size_t p, end;
	uint64_t n;

	memset(w, 0, sizeof(*w));
	if (!walk_end(d, size, w, &n))
		return false;
	if (w->cd_off > size)
		return false;
	p = w->cd_off;
	end = w->cd_off + w->cd_size < w->cd_off || w->cd_off + w->cd_size > size ? size : w->cd_off + w->cd_size;
	while (w->n < MAXE && w->n < n && p + 46 <= end && rd32(d + p) == 0x02014b50) {
		if (!walk_entry(d, size, p, end, &w->e[w->n]))
			break;
		p += w->e[w->n].cd_len;
		w->n++;
	}
	return true;
}

/* ---- rebuilding an archive from entries ---- */

struct buf {
	uint8_t *p;
	size_t n, cap;
};

static void put(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	if (n)
		memcpy(b->p + b->n, p, n);
	b->n += n;
}

struct nent {
	uint8_t name[512];
	size_t name_len;
	const uint8_t *data; /* compressed */
	size_t data_len;
	uint32_t method, flags, crc;
	uint64_t usize;
	bool z64;            /* sizes and offset in a zip64 extra field */
};

/* The fields a local header and a central record share, from "version
 * needed to extract" to the name's length (at +4 and +6 of each). */
static void shared_fields(uint8_t *at, const struct nent *e)
{
	wr16(at, e->z64 ? 45 : 20);
	wr16(at + 2, e->flags);
	wr16(at + 4, e->method);
	wr32(at + 10, e->crc);
	wr32(at + 14, e->z64 ? 0xffffffff : (uint32_t)e->data_len);
	wr32(at + 18, e->z64 ? 0xffffffff : (uint32_t)e->usize);
	wr16(at + 22, (uint32_t)e->name_len);
}

static void build(struct buf *b, const struct nent *e, size_t n, const uint8_t *comment, size_t comment_len)
{
	size_t i, cd_off;
	uint64_t *offs = calloc(n + 1, sizeof(*offs));
	uint8_t h[46], ex[28];
	struct buf cd = { 0 };

	for (i = 0; i < n; i++) {
		offs[i] = b->n;
		memset(h, 0, 30);
		wr32(h, 0x04034b50);
		shared_fields(h + 4, &e[i]);
		wr16(h + 28, e[i].z64 ? 20 : 0);
		put(b, h, 30);
		put(b, e[i].name, e[i].name_len);
		if (e[i].z64) {
			wr16(ex, 1);
			wr16(ex + 2, 16);
			wr64(ex + 4, e[i].usize);
			wr64(ex + 12, e[i].data_len);
			put(b, ex, 20);
		}
		put(b, e[i].data, e[i].data_len);
	}
	cd_off = b->n;
	for (i = 0; i < n; i++) {
		memset(h, 0, 46);
		wr32(h, 0x02014b50);
		wr16(h + 4, 0x031e);
		shared_fields(h + 6, &e[i]);
		wr16(h + 30, e[i].z64 ? 28 : 0);
		wr32(h + 38, 0100644u << 16);
		wr32(h + 42, e[i].z64 ? 0xffffffff : (uint32_t)offs[i]);
		put(&cd, h, 46);
		put(&cd, e[i].name, e[i].name_len);
		if (e[i].z64) {
			wr16(ex, 1);
			wr16(ex + 2, 24);
			wr64(ex + 4, e[i].usize);
			wr64(ex + 12, e[i].data_len);
			wr64(ex + 20, offs[i]);
			put(&cd, ex, 28);
		}
	}
	put(b, cd.p, cd.n);
	memset(h, 0, 22);
	wr32(h, 0x06054b50);
	wr16(h + 8, (uint32_t)n);
	wr16(h + 10, (uint32_t)n);
	wr32(h + 12, (uint32_t)cd.n);
	wr32(h + 16, (uint32_t)cd_off);
	wr16(h + 20, (uint32_t)comment_len);
	put(b, h, 22);
	put(b, comment, comment_len);
	free(cd.p);
	free(offs);
}

/* ---- member bytes through zlib ---- */

static uint8_t *inflate_raw(const uint8_t *src, size_t len, uint64_t usize, size_t *out_len)
{
	z_stream s;
	uint8_t *out;
	int rc;

	if (usize > (64u << 20))
		return NULL;
	out = malloc(usize + 1);
	if (!out)
		return NULL;
	memset(&s, 0, sizeof(s));
	if (inflateInit2(&s, -MAX_WBITS) != Z_OK) {
		free(out);
		return NULL;
	}
	s.next_in = (Bytef *)src;
	s.avail_in = (uInt)len;
	s.next_out = out;
	s.avail_out = (uInt)usize + 1;
	rc = inflate(&s, Z_FINISH);
	*out_len = s.total_out;
	inflateEnd(&s);
	if (rc != Z_STREAM_END) {
		free(out);
		return NULL;
	}
	return out;
}

/* Entry i's uncompressed bytes as the walker reads them (stored or deflated). */
static uint8_t *walker_read(const uint8_t *d, const struct zent *z, size_t *len)
{
	uint8_t *p;

	if (!z->lh_ok || !z->data)
		return NULL;
	if (z->method == 0) {
		p = malloc(z->data_len + 1);
		memcpy(p, d + z->data, z->data_len);
		*len = z->data_len;
		return p;
	}
	if (z->method == 8)
		return inflate_raw(d + z->data, z->data_len, z->usize, len);
	return NULL;
}

/* ---- the mutator ---- */

static uint32_t rnd(unsigned int *seed) { return (uint32_t)rand_r(seed); }

static uint32_t interesting(unsigned int *seed, uint32_t old, bool wide)
{
	switch (rnd(seed) % 10) {
	case 0: return 0;
	case 1: return wide ? 0xffffffff : 0xffff;
	case 2: return old + 1;
	case 3: return old - 1;
	case 4: return old ^ (1u << (rnd(seed) % (wide ? 32 : 16)));
	case 5: return wide ? 0x7fffffff : 0x7fff;
	case 6: return old * 2;
	case 7: return old / 2;
	case 8: return 8;
	default: return wide ? rnd(seed) : rnd(seed) & 0xffff;
	}
}

/* A field of a local header, a central record or the EOCD set to an
 * interesting value, in place. */
static size_t mutate_field(uint8_t *d, size_t size, const struct zwalk *w, unsigned int *seed)
{
	static const uint8_t lh_fields[][2] = { { 4, 2 }, { 6, 2 }, { 8, 2 }, { 14, 4 }, { 18, 4 }, { 22, 4 }, { 26, 2 }, { 28, 2 } };
	static const uint8_t cd_fields[][2] = { { 6, 2 }, { 8, 2 }, { 10, 2 }, { 16, 4 }, { 20, 4 }, { 24, 4 },
						{ 28, 2 }, { 30, 2 }, { 32, 2 }, { 34, 2 }, { 38, 4 }, { 42, 4 } };
	static const uint8_t eocd_fields[][2] = { { 4, 2 }, { 6, 2 }, { 8, 2 }, { 10, 2 }, { 12, 4 }, { 16, 4 }, { 20, 2 } };
	size_t at, k;
	const uint8_t *f;

	switch (w->n ? rnd(seed) % 3 : 2) {
	case 0: {
		const struct zent *z = &w->e[rnd(seed) % w->n];
		if (!z->lh_ok)
			return size;
		k = rnd(seed) % (sizeof(lh_fields) / 2);
		f = lh_fields[k];
		at = z->lh;
		break;
	}
	case 1: {
		const struct zent *z = &w->e[rnd(seed) % w->n];
		k = rnd(seed) % (sizeof(cd_fields) / 2);
		f = cd_fields[k];
		at = z->cd;
		break;
	}
	default:
		k = rnd(seed) % (sizeof(eocd_fields) / 2);
		f = eocd_fields[k];
		at = w->eocd;
	}
	if (at + f[0] + f[1] > size)
		return size;
	if (f[1] == 2)
		wr16(d + at + f[0], interesting(seed, rd16(d + at + f[0]), false));
	else
		wr32(d + at + f[0], interesting(seed, rd32(d + at + f[0]), true));
	return size;
}

static bool is_record(const uint8_t *name, size_t n)
{
	return n > 17 && !memcmp(name + n - 17, ".dist-info/RECORD", 17);
}

static void hash_field(const char *algo, const uint8_t *data, size_t len, char *out)
{
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	const EVP_MD *m = EVP_get_digestbyname(algo);

	if (!m || !EVP_Digest(data, len, md, &mdlen, m, NULL)) {
		strcpy(out, "sha256=x");
		return;
	}
	/* cp_record_hash_text covers the sha2 family; md5 as the same text */
	if (!strcmp(algo, "md5")) {
		static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
		size_t i, o = (size_t)sprintf(out, "md5=");
		for (i = 0; i < mdlen; i += 3) {
			uint32_t v = (uint32_t)md[i] << 16 | (i + 1 < mdlen ? md[i + 1] << 8 : 0) | (i + 2 < mdlen ? md[i + 2] : 0);
			out[o++] = t[v >> 18 & 63];
			out[o++] = t[v >> 12 & 63];
			if (i + 1 < mdlen)
				out[o++] = t[v >> 6 & 63];
			if (i + 2 < mdlen)
				out[o++] = t[v & 63];
		}
		out[o] = 0;
		return;
	}
	cp_record_hash_text(m, md, out);
}

/* The entries whose data the walker found, as build() takes them;
 * *rec_at: RECORD's index among them (SIZE_MAX when it has none). */
static size_t rebuild_entries(const uint8_t *d, const struct zwalk *w, struct nent *e, size_t *rec_at)
{
	size_t n = 0, i;

	for (i = 0; i < w->n; i++) {
		const struct zent *z = &w->e[i];
		if (!z->data || z->name_len > sizeof(e[n].name))
			continue;
		memcpy(e[n].name, z->name, z->name_len);
		e[n].name_len = z->name_len;
		e[n].data = d + z->data;
		e[n].data_len = z->data_len;
		e[n].method = z->method;
		e[n].flags = z->flags & ~8u;
		e[n].crc = z->crc;
		e[n].usize = z->usize;
		if (is_record(z->name, z->name_len))
			*rec_at = n;
		n++;
	}
	return n;
}

/* Entry i renamed: a prefix that escapes or not, another entry's name, or
 * a character more. */
static void rename_entry(struct nent *e, size_t n, size_t i, unsigned int *seed)
{
	static const char *const pre[] = { "../", "/", "pkg/../../", "./", "pkg/", "a\\..\\" };
	const char *p = pre[rnd(seed) % 6];
	size_t pl = strlen(p);

	if (rnd(seed) & 1 && e[i].name_len + pl <= sizeof(e[i].name)) {
		memmove(e[i].name + pl, e[i].name, e[i].name_len);
		memcpy(e[i].name, p, pl);
		e[i].name_len += pl;
	} else if (rnd(seed) & 1) {
		size_t j = rnd(seed) % n;
		memcpy(e[i].name, e[j].name, e[j].name_len);
		e[i].name_len = e[j].name_len;
	} else if (e[i].name_len < sizeof(e[i].name)) {
		e[i].name[e[i].name_len++] = rnd(seed) & 1 ? '/' : 'x';
	}
}

/* Entry i dropped, duplicated, swapped, renamed or given zip64 fields
 * (op 0 to 4). */
static void mutate_entries(struct nent *e, size_t *n, size_t i, uint32_t op, unsigned int *seed)
{
	switch (op) {
	case 0: /* drop */
		memmove(&e[i], &e[i + 1], (*n - i - 1) * sizeof(*e));
		(*n)--;
		break;
	case 1: /* duplicate */
		memmove(&e[i + 1], &e[i], (*n - i) * sizeof(*e));
		(*n)++;
		break;
	case 2: { /* swap */
		size_t j = rnd(seed) % *n;
		struct nent t = e[i];
		e[i] = e[j];
		e[j] = t;
		break;
	}
	case 3: /* rename */
		rename_entry(e, *n, i, seed);
		break;
	default: /* zip64 fields */
		e[i].z64 = true;
		break;
	}
}

/* The central directory and end record copied, to be planted as the new
 * end record's comment (*len 0 when they would not fit in one). */
static uint8_t *cd_copy(const uint8_t *d, const struct zwalk *w, size_t *len)
{
	uint8_t *c = malloc(w->eocd - w->cd_off + 22 < 65535 && w->cd_off <= w->eocd ? w->eocd - w->cd_off + 22 : 1);

	if (w->cd_off <= w->eocd && w->eocd - w->cd_off + 22 < 65535) {
		memcpy(c, d + w->cd_off, w->eocd - w->cd_off + 22);
		*len = w->eocd - w->cd_off + 22;
	}
	return c;
}

/* RECORD's row [ls, le) with another hash algorithm, right for the
 * member's bytes as the walker reads them (RECORD as it was when the
 * member is not found). */
static void row_rehash(struct buf *rec, const uint8_t *rtext, size_t rlen, size_t ls, size_t le,
		       const uint8_t *d, const struct zwalk *w, unsigned int *seed)
{
	static const char *const algos[] = { "sha512", "sha384", "md5", "sha256", "sha1" };
	const char *a = algos[rnd(seed) % 5];
	size_t j, mlen = 0, c1 = ls;
	uint8_t *m = NULL;
	char h[200], row[1024];

	while (c1 < le && rtext[c1] != ',')
		c1++;
	for (j = 0; j < w->n && !m; j++)
		if (w->e[j].name_len == c1 - ls && !memcmp(w->e[j].name, rtext + ls, c1 - ls))
			m = walker_read(d, &w->e[j], &mlen);
	if (!m) {
		put(rec, rtext, rlen);
		return;
	}
	hash_field(a, m, mlen, h);
	snprintf(row, sizeof(row), ",%s,%zu", h, mlen);
	put(rec, rtext, c1);
	put(rec, row, strlen(row));
	put(rec, rtext + le, rlen - le);
	free(m);
}

/* RECORD's text into rec with its row [ls, le) changed one way or another. */
static void mutate_row(struct buf *rec, const uint8_t *rtext, size_t rlen, size_t ls, size_t le,
		       const uint8_t *d, const struct zwalk *w, unsigned int *seed)
{
	static const char miss[] = "pkg/missing.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n";
	const char *esc;
	char row[1024];
	size_t c;

	switch (rnd(seed) % 8) {
	case 0: /* duplicate row */
		put(rec, rtext, le + 1);
		put(rec, rtext + ls, rlen - ls);
		break;
	case 1: /* missing row */
		put(rec, rtext, ls);
		if (le + 1 < rlen)
			put(rec, rtext + le + 1, rlen - le - 1);
		break;
	case 2: /* stale hash: one character of the row changed */
		put(rec, rtext, rlen);
		if (le > ls)
			rec->p[ls + (le - ls) * 3 / 4] ^= 1;
		break;
	case 3: /* escaping path */
		put(rec, rtext, ls);
		esc = rnd(seed) & 1 ? "../" : "/";
		put(rec, esc, strlen(esc));
		put(rec, rtext + ls, rlen - ls);
		break;
	case 4: /* a row for a missing member */
		put(rec, rtext, rlen);
		put(rec, miss, strlen(miss));
		break;
	case 5: /* wrong size */
		c = le;
		while (c > ls && rtext[c - 1] != ',')
			c--;
		put(rec, rtext, c);
		snprintf(row, sizeof(row), "%u", rnd(seed) % 100000);
		put(rec, row, strlen(row));
		put(rec, rtext + le, rlen - le);
		break;
	default: /* another hash algorithm, right for the bytes */
		row_rehash(rec, rtext, rlen, ls, le, d, w, seed);
	}
}

/* Entry rec_at (RECORD) given a new text in rec: the walker's reading of
 * the old one with one of its first 512 rows changed. */
static void mutate_record(const uint8_t *d, const struct zwalk *w, struct nent *e, size_t rec_at, struct buf *rec,
			  unsigned int *seed)
{
	size_t rlen = 0, pos, line_start, k, lines[512], nlines = 0, ls, le;
	const struct zent *rz = NULL;
	uint8_t *rtext;

	if (rec_at == SIZE_MAX)
		return;
	for (k = 0; k < w->n; k++)
		if (is_record(w->e[k].name, w->e[k].name_len))
			rz = &w->e[k];
	if (!rz || !(rtext = walker_read(d, rz, &rlen)))
		return;
	for (pos = 0, line_start = 0; pos < rlen && nlines < 512; pos++)
		if (rtext[pos] == '\n') {
			lines[nlines++] = line_start;
			line_start = pos + 1;
		}
	if (nlines) {
		k = rnd(seed) % nlines;
		ls = le = lines[k];
		while (le < rlen && rtext[le] != '\n')
			le++;
		mutate_row(rec, rtext, rlen, ls, le, d, w, seed);
		e[rec_at].data = rec->p ? rec->p : (const uint8_t *)"";
		e[rec_at].data_len = rec->n;
		e[rec_at].usize = rec->n;
		e[rec_at].method = 0;
		e[rec_at].crc = (uint32_t)crc32(0, rec->p, (uInt)rec->n);
	}
	free(rtext);
}

/* The archive rebuilt from its entries, with structural changes and,
 * sometimes, a new RECORD. */
static size_t mutate_rebuild(uint8_t *d, size_t size, size_t max, const struct zwalk *w, unsigned int *seed)
{
	struct nent *e = calloc(MAXE + 2, sizeof(*e));
	struct buf b = { 0 }, rec = { 0 };
	size_t n, i, rec_at = SIZE_MAX, comment_len = 0;
	const uint8_t *comment = NULL;
	uint8_t *cdcopy = NULL;
	uint32_t op = rnd(seed) % 9;

	n = rebuild_entries(d, w, e, &rec_at);
	if (!n)
		goto out;
	i = rnd(seed) % n;
	if (op < 5) {
		mutate_entries(e, &n, i, op, seed);
	} else if (op == 5) { /* a second central directory in the comment */
		cdcopy = cd_copy(d, w, &comment_len);
		comment = comment_len ? cdcopy : NULL;
	} else { /* RECORD rows */
		mutate_record(d, w, e, rec_at, &rec, seed);
	}
	build(&b, e, n, comment, comment_len);
	if (b.n <= max) {
		memcpy(d, b.p, b.n);
		size = b.n;
	}
out:
	free(b.p);
	free(rec.p);
	free(cdcopy);
	free(e);
	return size;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	struct zwalk *w = malloc(sizeof(*w));
	uint32_t r = rnd(&seed) % 10;

	if (r < 2 || !walk(data, size, w)) {
		free(w);
		return LLVMFuzzerMutate(data, size, max_size);
	}
	if (r < 6)
		size = mutate_field(data, size, w, &seed);
	else
		size = mutate_rebuild(data, size, max_size, w, &seed);
	free(w);
	return size;
}

/* ---- the oracle ---- */

#define VIOLATION(...) (fprintf(stderr, "zip_fields oracle: " __VA_ARGS__), fputc('\n', stderr), abort())

static uint8_t *zip_read_all(zip_t *z, zip_uint64_t i, size_t *len)
{
	zip_stat_t st;
	zip_file_t *f;
	uint8_t *p;
	zip_int64_t got;

	if (zip_stat_index(z, i, 0, &st) || !(st.valid & ZIP_STAT_SIZE) || st.size > (256u << 20))
		return NULL;
	p = malloc(st.size + 1);
	f = zip_fopen_index(z, i, 0);
	if (!f) {
		free(p);
		return NULL;
	}
	got = zip_fread(f, p, st.size);
	zip_fclose(f);
	if (got < 0 || (zip_uint64_t)got != st.size) {
		free(p);
		return NULL;
	}
	*len = st.size;
	return p;
}

static bool escapes(const char *n)
{
	const char *p = n;

	if (n[0] == '/' || n[0] == '\\')
		return true;
	while (*p) {
		const char *s = p;
		while (*p && *p != '/' && *p != '\\')
			p++;
		if (p - s == 2 && s[0] == '.' && s[1] == '.')
			return true;
		if (*p)
			p++;
	}
	return false;
}

static bool listed(const char *name, const struct cp_repair_result *res, bool metadata_changed)
{
	size_t i, n = strlen(name);

	for (i = 0; i < res->next; i++)
		if (!strcmp(res->ext[i].path, name))
			return true;
	for (i = 0; i < res->nsources; i++)
		if (!strcmp(res->sources[i], name))
			return true;
	if (n >= 17 && !strcmp(name + n - 17, ".dist-info/RECORD"))
		return true;
	if (n >= 23 && !strcmp(name + n - 23, ".dist-info/cypatch.json"))
		return true;
	if (metadata_changed && n >= 19 && !strcmp(name + n - 19, ".dist-info/METADATA"))
		return true;
	return false;
}

/* libzip, zip_layout.c and the walker see the same members (names,
 * offsets, sizes), none escaping; the index of the one RECORD. */
static zip_uint64_t check_members(zip_t *z, const struct cp_zip_layout *l, const struct zwalk *w)
{
	zip_int64_t n = zip_get_num_entries(z, 0), i;
	const char *rec_name = NULL;
	zip_uint64_t rec_i = 0;

	if ((size_t)n != l->n || (size_t)n != w->n)
		VIOLATION("member counts differ: libzip %lld, zip_layout %zu, walker %zu", (long long)n, l->n, w->n);
	for (i = 0; i < n; i++) {
		zip_stat_t st;
		const char *raw = zip_get_name(z, (zip_uint64_t)i, ZIP_FL_ENC_RAW);
		const struct zent *e = &w->e[i];

		if (!raw || zip_stat_index(z, (zip_uint64_t)i, 0, &st))
			VIOLATION("libzip cannot stat member %lld", (long long)i);
		if (!cp_zip_span_named(&l->m[i], raw) || strlen(raw) != e->name_len || memcmp(raw, e->name, e->name_len))
			VIOLATION("member %lld: names differ (%s)", (long long)i, raw);
		if (l->m[i].off != e->off || !e->lh_ok)
			VIOLATION("member %s: offsets differ: zip_layout %llu, walker %llu", raw,
				  (unsigned long long)l->m[i].off, (unsigned long long)e->off);
		if (l->m[i].comp_size != st.comp_size || e->csize != st.comp_size || e->usize != st.size)
			VIOLATION("member %s: sizes differ", raw);
		if (escapes(raw))
			VIOLATION("member name %s escapes", raw);
		if (is_record((const uint8_t *)raw, strlen(raw))) {
			if (rec_name)
				VIOLATION("two RECORDs: %s and %s", rec_name, raw);
			rec_name = raw;
			rec_i = (zip_uint64_t)i;
		}
	}
	if (!rec_name)
		VIOLATION("no RECORD in the output");
	return rec_i;
}

/* Member i's bytes as libzip reads them (*alen), equal to the walker's
 * where it can inflate them (stored, deflated), and to its RECORD row. */
static uint8_t *check_row(zip_t *z, zip_uint64_t i, const char *name, struct cp_record *rec, const uint8_t *d,
			  const struct zwalk *w, size_t *alen)
{
	struct cp_record_row *row;
	uint8_t *a, *b, md[EVP_MAX_MD_SIZE];
	size_t blen = 0;
	unsigned int mdlen;
	char text[CP_RECORD_HASH_MAX], size_text[32];
	const EVP_MD *m;

	*alen = 0;
	if (!(row = cp_record_find(rec, name)))
		VIOLATION("member %s has no RECORD row", name);
	if (!(a = zip_read_all(z, i, alen)))
		VIOLATION("libzip cannot read member %s", name);
	if (w->e[i].method != 0 && w->e[i].method != 8)
		b = NULL; /* bzip2, LZMA: libzip's alone */
	else if (!(b = walker_read(d, &w->e[i], &blen)) || *alen != blen || memcmp(a, b, *alen))
		VIOLATION("member %s: libzip and the walker read different bytes", name);
	if (!(m = cp_record_algorithm(row->hash)))
		VIOLATION("member %s: RECORD hash %s unknown", name, row->hash);
	EVP_Digest(a, *alen, md, &mdlen, m, NULL);
	cp_record_hash_text(m, md, text);
	snprintf(size_text, sizeof(size_text), "%zu", *alen);
	if (strcmp(text, row->hash) || strcmp(size_text, row->size))
		VIOLATION("member %s: RECORD says %s,%s, the bytes %s,%s", name, row->hash, row->size, text,
			  size_text);
	free(b);
	return a;
}

/* Every member but RECORD matches its row; directories hold nothing; a
 * member repair did not list is the input's, byte for byte. */
static void check_contents(zip_t *z, const char *in_path, zip_uint64_t rec_i, const uint8_t *d,
			   const struct zwalk *w, const struct cp_repair_result *res)
{
	zip_int64_t n = zip_get_num_entries(z, 0), i;
	struct cp_record rec;
	cp_error err;
	zip_t *zin;
	uint8_t *rtext;
	size_t rlen;
	int zerr = 0;

	if (!(rtext = zip_read_all(z, rec_i, &rlen)))
		VIOLATION("libzip cannot read RECORD");
	if (cp_record_parse(&rec, (const char *)rtext, rlen, "RECORD", &err) != CP_OK)
		VIOLATION("the output's RECORD does not parse: %s", err.msg);
	if (!(zin = zip_open(in_path, ZIP_RDONLY, &zerr)))
		VIOLATION("libzip cannot open the input again");
	for (i = 0; i < n; i++) {
		const char *name = zip_get_name(z, (zip_uint64_t)i, 0);
		uint8_t *a;
		size_t alen;
		zip_int64_t j;

		if (name[strlen(name) - 1] == '/') {
			zip_stat_t st;
			if (zip_stat_index(z, (zip_uint64_t)i, 0, &st) || st.size)
				VIOLATION("directory member %s holds data (unchecked by RECORD)", name);
			continue;
		}
		if ((zip_uint64_t)i == rec_i)
			continue;
		a = check_row(z, (zip_uint64_t)i, name, &rec, d, w, &alen);
		j = zip_name_locate(zin, name, 0);
		if (!listed(name, res, res->metadata_changed)) {
			uint8_t *c;
			size_t clen = 0;
			if (j < 0)
				VIOLATION("member %s is not in the input", name);
			if (!(c = zip_read_all(zin, (zip_uint64_t)j, &clen)) || clen != alen || memcmp(c, a, alen))
				VIOLATION("member %s changed though repair did not touch it", name);
			free(c);
		}
		free(a);
	}
	zip_discard(zin);
	cp_record_free(&rec);
	free(rtext);
}

static void check_output(const char *in_path, const char *out_path, const struct cp_repair_result *res)
{
	int fd = open(out_path, O_RDONLY), zerr = 0;
	struct stat sb;
	uint8_t *d;
	struct zwalk *w = malloc(sizeof(*w));
	struct cp_zip_layout l;
	cp_error err;
	zip_t *z;

	if (fd < 0 || fstat(fd, &sb))
		VIOLATION("repair succeeded but %s cannot be opened", out_path);
	d = malloc((size_t)sb.st_size + 1);
	if (pread(fd, d, (size_t)sb.st_size, 0) != sb.st_size)
		VIOLATION("cannot read %s", out_path);
	if (!(z = zip_open(out_path, ZIP_RDONLY | ZIP_CHECKCONS, &zerr)))
		VIOLATION("libzip refuses the output (%d)", zerr);
	if (cp_zip_layout_read(fd, out_path, &l, &err) != CP_OK)
		VIOLATION("zip_layout refuses the output: %s", err.msg);
	if (!walk(d, (size_t)sb.st_size, w))
		VIOLATION("the walker finds no EOCD in the output");
	check_contents(z, in_path, check_members(z, &l, w), d, w, res);
	zip_discard(z);
	cp_zip_layout_free(&l);
	free(w);
	free(d);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char in[512], outdir[512];
	struct cp_repair_opts o = { 0 };
	struct cp_repair_result res;
	cp_error err;

	if (!in[0]) {
		snprintf(in, sizeof(in), "%s/pkg-1.0-cp311-cp311-linux_x86_64.whl", fuzz_dir());
		snprintf(outdir, sizeof(outdir), "%s/out", fuzz_dir());
		mkdir(outdir, 0700);
	}
	if (fuzz_write_file(in, data, size) < 0)
		return 0;
	o.layout = size & 1 ? "legacy" : "fallback";
	o.outdir = outdir;
	o.no_fsync = true;
	memset(&res, 0, sizeof(res));
	if (cp_repair_wheel(in, fuzz_rules(), &o, &res, &err) == CP_OK) {
		check_output(in, res.out, &res);
		unlink(res.out);
	}
	cp_repair_result_free(&res);
	unlink(in);
	return 0;
}
