/*
 * zip_layout.c - where each member of a zip archive lies (see
 * zip_layout.h). Field offsets are APPNOTE.TXT's (PKWARE, 6.3.x):
 * 4.3.7 local file header, 4.3.9 data descriptor, 4.3.12 central directory
 * record, 4.3.14-16 the zip64 and classic end records, 4.5.3 the zip64
 * extra field.
 */
#include "wheel/zip_layout.h"
#include "util/error.h"
#include "wheel/zip_bytes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LFH_SIG 0x04034b50u
#define LFH_LEN 30
#define DD_SIG 0x08074b50u
#define CDR_SIG 0x02014b50u
#define CDR_LEN 46
#define ZIP64_ID 0x0001
#define MAX_COMMENT 0xffff
#define U32_MAX 0xffffffffu
/* 100,000 members with long names need a few MiB. */
#define MAX_CD (256ull << 20)

static int read_at(int fd, uint8_t *buf, size_t n, uint64_t off)
{
	while (n) {
		ssize_t k = pread(fd, buf, n, (off_t)off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		buf += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

static cp_status bad(cp_error *err, const char *path, const char *what)
{
	return cp_fail(err, CP_E_INPUT, "%s: %s", path, what);
}

/* The zip64 extra field among xlen bytes of extra fields, its size in *n. */
static const uint8_t *zip64_field(const uint8_t *x, size_t xlen, size_t *n)
{
	size_t at = 0;

	while (at + 4 <= xlen) {
		size_t size = cp_get16(x + at + 2);

		if (at + 4 + size > xlen)
			return NULL;
		if (cp_get16(x + at) == ZIP64_ID) {
			*n = size;
			return x + at + 4;
		}
		at += 4 + size;
	}
	return NULL;
}

/* A central directory record's values, the zip64 field holding those
 * whose 32-bit field is all ones, in this order (4.5.3). */
struct record_values {
	uint64_t usize, csize, off;
	uint32_t disk;
	bool in64[4]; /* which of usize, csize, off, disk the zip64 field holds */
};

static bool record_values(const uint8_t *r, struct record_values *v)
{
	size_t zlen = 0, at = 0;
	const uint8_t *z = zip64_field(r + CDR_LEN + cp_get16(r + 28), cp_get16(r + 30), &zlen);
	uint64_t *wide[3] = { &v->usize, &v->csize, &v->off };
	int k;

	v->usize = cp_get32(r + 24);
	v->csize = cp_get32(r + 20);
	v->off = cp_get32(r + 42);
	v->disk = cp_get16(r + 34);
	for (k = 0; k < 3; k++) {
		v->in64[k] = *wide[k] == U32_MAX;
		if (!v->in64[k])
			continue;
		if (!z || at + 8 > zlen)
			return false;
		*wide[k] = cp_get64(z + at);
		at += 8;
	}
	v->in64[3] = v->disk == 0xffff;
	if (v->in64[3]) {
		if (!z || at + 4 > zlen)
			return false;
		v->disk = cp_get32(z + at);
	}
	return v->disk == 0;
}

/* The classic end record: its offset in the file (*at) and its fields. */
static cp_status find_end(int fd, const char *path, uint64_t size, uint64_t *at, uint8_t *end,
			  cp_error *err)
{
	static const size_t cap = MAX_COMMENT + CP_EOCD_LEN;
	size_t n = size < cap ? (size_t)size : cap, p;
	uint8_t *tail = malloc(cap);
	cp_status st = CP_OK;
	bool later = false;

	if (!tail)
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	if (n < CP_EOCD_LEN || read_at(fd, tail, n, size - n))
		st = bad(err, path, "no end of central directory");
	/* the last signature whose comment reaches the end of the file */
	for (p = n - CP_EOCD_LEN; !st; p--) {
		if (cp_get32(tail + p) == CP_EOCD_SIG && p + CP_EOCD_LEN + cp_get16(tail + p + 20) == n) {
			/* an end record in its comment, whose own comment does not
			 * reach the end: CPython's zipfile takes the last signature
			 * there is and reads another central directory than libzip
			 * and this reader (pip would install other bytes) */
			if (later)
				st = bad(err, path, "an end of central directory record in the archive comment");
			*at = size - n + p;
			memcpy(end, tail + p, CP_EOCD_LEN);
			break;
		}
		if (cp_get32(tail + p) == CP_EOCD_SIG)
			later = true;
		if (!p)
			st = bad(err, path, "no end of central directory");
	}
	free(tail);
	return st;
}

/* Where the central directory lies and how many records it holds. */
static cp_status find_directory(int fd, const char *path, struct cp_zip_layout *l, uint64_t *entries,
				cp_error *err)
{
	struct stat sb;
	uint8_t end[CP_EOCD_LEN] = { 0 }, loc[CP_LOC64_LEN], e64[CP_EOCD64_LEN];
	uint64_t at = 0, limit;
	cp_status st;

	if (fstat(fd, &sb))
		return cp_fail(err, CP_E_IO, "%s: %s", path, strerror(errno));
	st = find_end(fd, path, (uint64_t)sb.st_size, &at, end, err);
	if (st)
		return st;
	*entries = cp_get16(end + 10);
	l->cd_size = cp_get32(end + 12);
	l->cd_off = cp_get32(end + 16);
	limit = at;
	if (at >= CP_LOC64_LEN && !read_at(fd, loc, CP_LOC64_LEN, at - CP_LOC64_LEN) && cp_get32(loc) == CP_LOC64_SIG) {
		uint64_t z = cp_get64(loc + 8);

		if (cp_get32(loc + 4) || cp_get32(loc + 16) != 1 || z > at - CP_LOC64_LEN ||
		    at - CP_LOC64_LEN - z < CP_EOCD64_LEN || read_at(fd, e64, CP_EOCD64_LEN, z) || cp_get32(e64) != CP_EOCD64_SIG ||
		    cp_get32(e64 + 16) || cp_get32(e64 + 20))
			return bad(err, path, "a broken zip64 end of central directory");
		*entries = cp_get64(e64 + 32);
		l->cd_size = cp_get64(e64 + 40);
		l->cd_off = cp_get64(e64 + 48);
		limit = z;
	} else if (cp_get16(end + 4) || cp_get16(end + 6)) {
		return bad(err, path, "an archive of several disks");
	}
	if (l->cd_off > limit || l->cd_size > limit - l->cd_off)
		return bad(err, path, "the central directory lies outside the file");
	/* zipfile finds the directory by its size back from the end record and
	 * moves every offset by the difference (data prepended to the
	 * archive): only where there is none does it read what libzip does */
	if (l->cd_off + l->cd_size != limit)
		return bad(err, path, "bytes between the central directory and its end record");
	if (l->cd_size > MAX_CD || *entries > l->cd_size / CDR_LEN)
		return bad(err, path, "an implausible central directory");
	return CP_OK;
}

/* Each record of the central directory: where its member's local header is. */
static cp_status read_records(int fd, const char *path, struct cp_zip_layout *l, uint64_t entries,
			      cp_error *err)
{
	size_t at = 0, i;

	l->cd = malloc(l->cd_size ? (size_t)l->cd_size : 1);
	l->m = calloc(entries ? (size_t)entries : 1, sizeof(*l->m));
	if (!l->cd || !l->m)
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	if (read_at(fd, l->cd, (size_t)l->cd_size, l->cd_off))
		return bad(err, path, "the central directory cannot be read");
	for (i = 0; i < entries; i++) {
		const uint8_t *r = l->cd + at;
		struct cp_zip_span *s = &l->m[i];
		struct record_values v;

		if (l->cd_size - at < CDR_LEN || cp_get32(r) != CDR_SIG)
			return bad(err, path, "a broken central directory record");
		s->cd = r;
		s->cd_len = CDR_LEN + (size_t)cp_get16(r + 28) + cp_get16(r + 30) + cp_get16(r + 32);
		if (s->cd_len > l->cd_size - at)
			return bad(err, path, "a broken central directory record");
		if (!record_values(r, &v))
			return bad(err, path, "a central directory record without its zip64 fields");
		/* zipfile (so pip) refuses a member that needs a version past 6.3 */
		if (r[6] > 63)
			return bad(err, path, "a member needs a zip version past 6.3 to extract");
		s->off = v.off;
		s->comp_size = v.csize;
		if (s->off >= l->cd_off)
			return bad(err, path, "a member lies past the central directory");
		at += s->cd_len;
	}
	l->n = (size_t)entries;
	return CP_OK;
}

static int by_offset(const void *a, const void *b)
{
	const struct cp_zip_span *x = *(const struct cp_zip_span *const *)a,
				 *y = *(const struct cp_zip_span *const *)b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* Whether the local header h (its name at off + LFH_LEN) names its member
 * as its central record r does, as zipfile compares them: the name's bytes,
 * each decoded by its own header's UTF-8 bit (4.4.4 bit 11), else CP437. */
static bool same_local_name(int fd, const uint8_t *h, uint64_t off, const uint8_t *r)
{
	size_t n = cp_get16(r + 28), i;
	bool ascii = true;
	uint8_t *name;
	bool same;

	if (cp_get16(h + 26) != n)
		return false;
	name = malloc(n ? n : 1);
	same = name && !read_at(fd, name, n, off + LFH_LEN) && !memcmp(name, r + CDR_LEN, n);
	for (i = 0; same && i < n; i++)
		ascii = ascii && name[i] < 0x80;
	free(name);
	return same && (ascii || ((cp_get16(h + 6) ^ cp_get16(r + 8)) & 0x0800) == 0);
}

/* Whether the data descriptor after member s's data (its local header's
 * flag bit 3 says one follows) gives the central record's CRC-32 and
 * sizes: a reader that streams the archive takes them from it. Its
 * signature is optional and its sizes are 4 or 8 bytes (8 with a zip64
 * local header), so any of the four forms may be the one. */
static bool descriptor_agrees(int fd, const struct cp_zip_span *s)
{
	uint8_t d[28];
	uint64_t at = s->data + s->comp_size, room = s->off + s->len - at;
	size_t n = room < sizeof(d) ? (size_t)room : sizeof(d), sig, wide;
	struct record_values v;

	if (!record_values(s->cd, &v) || n < 12 || read_at(fd, d, n, at))
		return false;
	for (sig = 0; sig <= 4; sig += 4) {
		if (sig && cp_get32(d) != DD_SIG)
			continue;
		for (wide = 0; wide <= 1; wide++) {
			size_t w = wide ? 8 : 4;

			if (n < sig + 4 + 2 * w || cp_get32(d + sig) != cp_get32(s->cd + 16))
				continue;
			if ((wide ? cp_get64(d + sig + 4) : cp_get32(d + sig + 4)) == v.csize &&
			    (wide ? cp_get64(d + sig + 12) : cp_get32(d + sig + 8)) == v.usize)
				return true;
		}
	}
	return false;
}

/* Each member's range: to the next local header in the file, or the
 * central directory; it must begin with a local header and hold its data,
 * and a data descriptor after it must agree with the central record. */
static cp_status measure(int fd, const char *path, struct cp_zip_layout *l, cp_error *err)
{
	struct cp_zip_span **o = malloc((l->n ? l->n : 1) * sizeof(*o));
	cp_status st = CP_OK;
	uint8_t h[LFH_LEN];
	size_t i;

	if (!o)
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	for (i = 0; i < l->n; i++)
		o[i] = &l->m[i];
	qsort(o, l->n, sizeof(*o), by_offset);
	for (i = 0; !st && i < l->n; i++) {
		struct cp_zip_span *s = o[i];
		uint64_t next = i + 1 < l->n ? o[i + 1]->off : l->cd_off, head;

		s->len = next - s->off;
		if (!s->len)
			st = bad(err, path, "two members share their bytes");
		else if (s->len < LFH_LEN || read_at(fd, h, LFH_LEN, s->off) || cp_get32(h) != LFH_SIG)
			st = bad(err, path, "no local header where the central directory puts one");
		else if (head = LFH_LEN + (uint64_t)cp_get16(h + 26) + cp_get16(h + 28),
			 head > s->len || s->comp_size > s->len - head)
			st = bad(err, path, "a member's data runs into the next member");
		else if (!same_local_name(fd, h, s->off, s->cd))
			st = cp_fail(err, CP_E_INPUT, "%s: a local header names its member otherwise than the central directory: %.*s",
				     path, (int)cp_get16(s->cd + 28), (const char *)s->cd + CDR_LEN);
		else
			s->data = s->off + head;
		if (!st && (cp_get16(h + 6) & 0x0008) && !descriptor_agrees(fd, s))
			st = cp_fail(err, CP_E_INPUT,
				     "%s: a member's data descriptor disagrees with its central directory record: %.*s",
				     path, (int)cp_get16(s->cd + 28), (const char *)s->cd + CDR_LEN);
	}
	free(o);
	return st;
}

cp_status cp_zip_layout_read(int fd, const char *path, struct cp_zip_layout *l, cp_error *err)
{
	uint64_t entries = 0;
	cp_status st;

	memset(l, 0, sizeof(*l));
	st = find_directory(fd, path, l, &entries, err);
	if (!st)
		st = read_records(fd, path, l, entries, err);
	if (!st)
		st = measure(fd, path, l, err);
	if (st)
		cp_zip_layout_free(l);
	return st;
}

bool cp_zip_span_named(const struct cp_zip_span *s, const char *name)
{
	size_t n = cp_get16(s->cd + 28);

	return strlen(name) == n && !memcmp(s->cd + CDR_LEN, name, n);
}

uint32_t cp_zip_span_method(const struct cp_zip_span *s)
{
	return cp_get16(s->cd + 10);
}

uint32_t cp_zip_span_flags(const struct cp_zip_span *s)
{
	return cp_get16(s->cd + 8);
}

/* The record rebuilt with its offset in or out of the zip64 field: the
 * zip64 field first, then the other extra fields as they were. */
static size_t rebuild(const uint8_t *r, const struct record_values *v, uint64_t off, bool wide, uint8_t *out)
{
	size_t nlen = cp_get16(r + 28), xlen = cp_get16(r + 30), clen = cp_get16(r + 32), o = CDR_LEN + nlen, z = 0, at;
	const uint8_t *x = r + CDR_LEN + nlen;
	uint8_t f[28];

	if (v->in64[0])
		cp_put64(f + z, v->usize), z += 8;
	if (v->in64[1])
		cp_put64(f + z, v->csize), z += 8;
	if (wide)
		cp_put64(f + z, off), z += 8;
	if (v->in64[3])
		cp_put32(f + z, v->disk), z += 4;
	memcpy(out, r, o);
	if (z) {
		cp_put16(out + o, ZIP64_ID);
		cp_put16(out + o + 2, z);
		memcpy(out + o + 4, f, z);
		o += 4 + z;
	}
	for (at = 0; at + 4 <= xlen; at += 4 + (size_t)cp_get16(x + at + 2)) {
		size_t size = 4 + (size_t)cp_get16(x + at + 2);

		if (cp_get16(x + at) == ZIP64_ID || at + size > xlen)
			continue;
		memcpy(out + o, x + at, size);
		o += size;
	}
	if (o - CDR_LEN - nlen > 0xffff)
		return 0;
	cp_put16(out + 30, o - CDR_LEN - nlen);
	memcpy(out + o, x + xlen, clen);
	cp_put32(out + 42, wide ? U32_MAX : off);
	if (wide && cp_get16(out + 6) < 45)
		cp_put16(out + 6, 45); /* version needed: zip64 */
	return o + clen;
}

size_t cp_zip_record_moved(const struct cp_zip_span *s, uint64_t off, uint64_t zip64_at, uint8_t *out)
{
	const uint8_t *r = s->cd;
	struct record_values v;
	bool wide = off >= zip64_at;
	size_t zlen = 0;
	const uint8_t *z;

	if (!record_values(r, &v))
		return 0;
	if (wide != v.in64[2])
		return rebuild(r, &v, off, wide, out);
	memcpy(out, r, s->cd_len);
	if (!wide) {
		cp_put32(out + 42, off);
		return s->cd_len;
	}
	z = zip64_field(r + CDR_LEN + cp_get16(r + 28), cp_get16(r + 30), &zlen);
	cp_put64(out + (z - r) + 8 * (v.in64[0] + v.in64[1]), off);
	return s->cd_len;
}

void cp_zip_layout_free(struct cp_zip_layout *l)
{
	free(l->cd);
	free(l->m);
	memset(l, 0, sizeof(*l));
}
