/*
 * wheel.c - reading and checking a wheel (see wheel.h).
 */
#include "wheel/wheel.h"
#include "wheel/wheel_name.h"
#include "util/error.h"
#include "util/find.h"
#include "elf/open_input.h"
#include "util/write.h"
#include "wheel/zip_source.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static cp_status bad(const struct cp_wheel *w, cp_error *err, const char *what, const char *name)
{
	return cp_fail(err, CP_E_INPUT, "%s: %s: %s", w->path, what, name);
}

/* A name that extracts inside the target directory: relative, no "..",
 * no empty component, no backslash (a separator on Windows). */
static bool safe_name(const char *name)
{
	const char *c = name;

	if (!*name || *name == '/' || strchr(name, '\\') || (name[0] && name[1] == ':'))
		return false;
	while (*c) {
		const char *slash = strchr(c, '/');
		size_t n = slash ? (size_t)(slash - c) : strlen(c);

		if ((n == 2 && !strncmp(c, "..", 2)) || (n == 1 && *c == '.') || (n == 0 && slash))
			return false;
		if (!slash)
			break;
		c = slash + 1;
	}
	return true;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static cp_status check_names(struct cp_wheel *w, cp_error *err)
{
	char **names = malloc((w->n ? w->n : 1) * sizeof(char *));
	cp_status st = CP_OK;
	size_t i;

	if (!names)
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	for (i = 0; i < w->n; i++)
		names[i] = w->m[i].name;
	qsort(names, w->n, sizeof(char *), by_name);
	for (i = 1; !st && i < w->n; i++)
		if (!strcmp(names[i], names[i - 1]))
			st = bad(w, err, "a member name appears twice", names[i]);
	free(names);
	return st;
}

static cp_status read_member(struct cp_wheel *w, zip_uint64_t i, cp_error *err)
{
	struct cp_wheel_member *m = &w->m[i];
	zip_stat_t sb;

	zip_stat_init(&sb);
	if (zip_stat_index(w->zip, i, 0, &sb) || !(sb.valid & ZIP_STAT_NAME) || !(sb.valid & ZIP_STAT_SIZE))
		return cp_fail(err, CP_E_INPUT, "%s: member %llu cannot be read: %s", w->path,
			       (unsigned long long)i, zip_strerror(w->zip));
	m->name = strdup(sb.name);
	/* as the archive holds it: libzip turns a CP437 name into UTF-8 */
	m->raw_name = strdup(zip_get_name(w->zip, i, ZIP_FL_ENC_RAW) ?: sb.name);
	if (!m->name || !m->raw_name)
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	m->size = sb.size;
	m->comp_size = sb.valid & ZIP_STAT_COMP_SIZE ? sb.comp_size : 0;
	m->comp_method = sb.valid & ZIP_STAT_COMP_METHOD ? sb.comp_method : 0;
	m->crc = sb.valid & ZIP_STAT_CRC ? sb.crc : 0;
	m->mtime = sb.valid & ZIP_STAT_MTIME ? sb.mtime : 0;
	m->dir = m->name[0] && m->name[strlen(m->name) - 1] == '/';
	if (zip_file_get_external_attributes(w->zip, i, 0, &m->opsys, &m->attr))
		return bad(w, err, "unreadable attributes", m->name);
	if (!safe_name(m->name))
		return bad(w, err, "a member name leaves the target directory", m->name);
	/* what CPython's zipfile (pip) reads: stored, deflate, bzip2, LZMA; an
	 * empty member of another method passed libzip, which inflates nothing */
	if (m->comp_method != ZIP_CM_STORE && m->comp_method != ZIP_CM_DEFLATE && m->comp_method != ZIP_CM_BZIP2 &&
	    m->comp_method != ZIP_CM_LZMA)
		return bad(w, err, "a member's compression method is not stored, deflate, bzip2 or LZMA", m->name);
	/* a directory is never read or listed in RECORD: bytes in one would
	 * pass unchecked (its CRC-32 too) into the repaired wheel */
	if (m->dir && m->size)
		return bad(w, err, "a directory member holds data", m->name);
	if (m->opsys == ZIP_OPSYS_UNIX && ((m->attr >> 16) & S_IFMT) == S_IFLNK)
		return bad(w, err, "a member is a symbolic link", m->name);
	if (m->size > CP_WHEEL_MAX_MEMBER ||
	    (m->size > (64u << 20) && m->size / CP_WHEEL_MAX_RATIO > m->comp_size))
		return bad(w, err, "a member declares an implausible size", m->name);
	return CP_OK;
}

/* Whether name lies in a top-level "*.dist-info" directory of n bytes. */
static bool in_dist_info(const char *name, size_t *n)
{
	const char *slash = strchr(name, '/');

	*n = slash ? (size_t)(slash - name) : 0;
	return *n > 10 && !strncmp(slash - 10, ".dist-info", 10);
}

/* One .dist-info directory, as pip asks: with two, which one is the
 * package's? */
static cp_status one_dist_info(struct cp_wheel *w, cp_error *err)
{
	const char *first = NULL;
	size_t i, n, fn = 0;

	for (i = 0; i < w->n; i++) {
		if (!in_dist_info(w->m[i].name, &n))
			continue;
		if (!first) {
			first = w->m[i].name;
			fn = n;
		} else if (n != fn || strncmp(first, w->m[i].name, n)) {
			return cp_fail(err, CP_E_INPUT, "%s: not a wheel: more than one .dist-info directory: %.*s, %.*s",
				       w->path, (int)fn, first, (int)n, w->m[i].name);
		}
	}
	return CP_OK;
}

/* The one top-level "*.dist-info/RECORD". */
static cp_status find_record(struct cp_wheel *w, cp_error *err)
{
	size_t i, found = 0;
	cp_status st = one_dist_info(w, err);

	if (st)
		return st;

	for (i = 0; i < w->n; i++) {
		const char *name = w->m[i].name, *slash = strchr(name, '/');

		if (!slash || strcmp(slash, "/RECORD") || slash - name < 11 || strncmp(slash - 10, ".dist-info", 10))
			continue;
		found++;
		w->record_at = i;
	}
	if (found != 1)
		return cp_fail(err, CP_E_INPUT, "%s: not a wheel: %s", w->path,
			       found ? "more than one .dist-info/RECORD" : "no .dist-info/RECORD");
	w->dist_info = strndup(w->m[w->record_at].name, strlen(w->m[w->record_at].name) - 7);
	return w->dist_info ? CP_OK : cp_fail(err, CP_E_INTERNAL, "out of memory");
}

/* Where stream_member puts the bytes besides the hash (NULL: nowhere). */
typedef int (*member_sink)(void *ctx, const uint8_t *p, size_t n);

/* A member's bytes as they are read: counted, hashed, passed on. */
struct reading {
	struct cp_wheel *w;
	size_t i;
	member_sink sink;
	void *ctx;
	EVP_MD_CTX *md;
	uint64_t size;
	uint64_t raw; /* compressed bytes read so far */
	uint32_t crc; /* of the bytes taken so far */
};

static cp_status take(struct reading *r, const uint8_t *p, size_t n, cp_error *err)
{
	struct cp_wheel *w = r->w;

	r->size += n;
	r->crc = libdeflate_crc32(r->crc, p, n);
	if (r->size > w->m[r->i].size || !EVP_DigestUpdate(r->md, p, n))
		return bad(w, err, "a member holds more than it declares", w->m[r->i].name);
	if (r->sink && r->sink(r->ctx, p, n))
		return cp_fail(err, CP_E_IO, "%s: %s: cannot unpack it: %s", w->path, w->m[r->i].name,
			       cp_write_strerror(errno));
	return CP_OK;
}

/* Through libzip, which inflates whatever method and checks the CRC-32. */
static cp_status read_by_libzip(struct reading *r, zip_file_t *f, cp_error *err)
{
	uint8_t buf[65536];
	zip_int64_t got;
	cp_status st = CP_OK;

	while (!st && (got = zip_fread(f, buf, sizeof(buf))) > 0)
		st = take(r, buf, (size_t)got, err);
	if (!st && got < 0)
		st = bad(r->w, err, "a member is corrupt", r->w->m[r->i].name);
	return st;
}

#define RAW_IN (1u << 18)
#define RAW_OUT (1u << 18)

/* The compressed bytes libzip gave are the ones zip_layout.c found for
 * the member, where repair copies unchanged members from: an archive with
 * two central directories (a second in the end record's comment) can show
 * the two readers two members of one name, size and CRC-32, and RECORD
 * would be checked on one and the other written. `spare` holds RAW_IN. */
static cp_status same_bytes(struct reading *r, const uint8_t *p, size_t n, uint8_t *spare, cp_error *err)
{
	const struct cp_zip_span *s = &r->w->layout.m[r->i];

	if (n > s->comp_size || r->raw > s->comp_size - n ||
	    pread(r->w->fd, spare, n, (off_t)(s->data + r->raw)) != (ssize_t)n || memcmp(p, spare, n))
		return bad(r->w, err, "the central directory and libzip disagree", r->w->m[r->i].name);
	r->raw += n;
	return CP_OK;
}

/*
 * A deflated member of at most WHOLE bytes is read whole and inflated by
 * libdeflate, twice as fast as zlib (a repair reads every shared object of
 * a wheel: numpy's are 40 MB); libdeflate inflates only whole buffers, so
 * a larger one (a 1 GB library) streams through zlib in read_raw, in
 * bounded memory.
 */
#define WHOLE (32u << 20)

/* same_bytes over n bytes, RAW_IN at a time; then libzip must have no
 * more to give than the central directory's compressed size. */
static cp_status same_all(struct reading *r, zip_file_t *f, const uint8_t *p, size_t n, uint8_t *spare,
			  cp_error *err)
{
	uint8_t more;
	size_t k, c;
	cp_status st = CP_OK;

	for (k = 0; !st && k < n; k += c) {
		c = n - k < RAW_IN ? n - k : RAW_IN;
		st = same_bytes(r, p + k, c, spare, err);
	}
	if (!st && zip_fread(f, &more, 1) != 0)
		st = bad(r->w, err, "the central directory and libzip disagree", r->w->m[r->i].name);
	return st;
}

/* The member's compressed bytes read into in (comp of them), checked by
 * same_all, and inflated into out (its declared size). */
static cp_status inflate_whole(struct reading *r, zip_file_t *f, uint8_t *in, uint64_t comp, uint8_t *out,
			       uint8_t *spare, cp_error *err)
{
	const struct cp_wheel_member *m = &r->w->m[r->i];
	struct libdeflate_decompressor *d;
	enum libdeflate_result lr;
	zip_int64_t got = 0;
	size_t n = 0;
	cp_status st;

	while (n < comp && (got = zip_fread(f, in + n, comp - n)) > 0)
		n += (size_t)got;
	if (got < 0 || n != comp)
		return bad(r->w, err, "a member is corrupt", m->name);
	if ((st = same_all(r, f, in, n, spare, err)))
		return st;
	if (!(d = libdeflate_alloc_decompressor()))
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", r->w->path);
	lr = libdeflate_deflate_decompress(d, in, n, out, m->size, &n);
	libdeflate_free_decompressor(d);
	if (lr == LIBDEFLATE_INSUFFICIENT_SPACE)
		return bad(r->w, err, "a member holds more than it declares", m->name);
	if (lr != LIBDEFLATE_SUCCESS)
		return bad(r->w, err, "a member is corrupt", m->name);
	if ((st = take(r, out, n, err)))
		return st;
	if (r->crc != m->crc)
		return bad(r->w, err, "a member's CRC-32 does not match its bytes", m->name);
	return CP_OK;
}

/* Holds the compressed and the inflated bytes, at most 2 * WHOLE. */
static cp_status read_whole(struct reading *r, zip_file_t *f, cp_error *err)
{
	uint64_t comp = r->w->layout.m[r->i].comp_size, size = r->w->m[r->i].size;
	uint8_t *buf;
	cp_status st;

	assert(comp <= WHOLE && size <= WHOLE);
	if (!(buf = malloc(comp + size + RAW_IN)))
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", r->w->path);
	st = inflate_whole(r, f, buf, comp, buf + comp, buf + comp + size, err);
	free(buf);
	return st;
}

/* A deflated or stored member read raw and inflated here, without
 * libzip's extra copy; its CRC-32 is checked here too. */
static cp_status read_raw(struct reading *r, zip_file_t *f, bool deflated, cp_error *err)
{
	uint8_t *in = malloc(2 * RAW_IN + RAW_OUT), *out = in + RAW_IN, *spare = out + RAW_OUT;
	z_stream zs;
	zip_int64_t got = 0;
	int zr = Z_OK;
	cp_status st = CP_OK;

	memset(&zs, 0, sizeof(zs));
	if (!in || (deflated && inflateInit2(&zs, -MAX_WBITS) != Z_OK)) {
		free(in);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", r->w->path);
	}
	while (!st && zr != Z_STREAM_END && (got = zip_fread(f, in, RAW_IN)) > 0) {
		st = same_bytes(r, in, (size_t)got, spare, err);
		if (st)
			break;
		if (!deflated) {
			st = take(r, in, (size_t)got, err);
			continue;
		}
		zs.next_in = in;
		zs.avail_in = (uInt)got;
		do {
			zs.next_out = out;
			zs.avail_out = RAW_OUT;
			zr = inflate(&zs, Z_NO_FLUSH);
			if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
				st = bad(r->w, err, "a member is corrupt", r->w->m[r->i].name);
			else
				st = take(r, out, RAW_OUT - zs.avail_out, err);
		} while (!st && zs.avail_out == 0 && zr != Z_STREAM_END);
	}
	if (!st && (got < 0 || (deflated && zr != Z_STREAM_END)))
		st = bad(r->w, err, "a member is corrupt", r->w->m[r->i].name);
	/* RECORD's hash vouches for the bytes, but zipfile and pip check the
	 * CRC-32 the archive declares: a wrong one would be copied as it is */
	if (!st && r->crc != r->w->m[r->i].crc)
		st = bad(r->w, err, "a member's CRC-32 does not match its bytes", r->w->m[r->i].name);
	if (deflated)
		inflateEnd(&zs);
	free(in);
	return st;
}

/* Members of a method read_raw does not know are compared as libzip
 * gives them compressed, then read through libzip. */
static cp_status compare_raw(struct reading *r, zip_t *z, cp_error *err)
{
	zip_file_t *f = zip_fopen_index(z, r->i, ZIP_FL_COMPRESSED);
	uint8_t *buf = malloc(2 * RAW_IN);
	zip_int64_t got = 0;
	cp_status st = f && buf ? CP_OK : bad(r->w, err, "a member cannot be read", r->w->m[r->i].name);

	while (!st && (got = zip_fread(f, buf, RAW_IN)) > 0)
		st = same_bytes(r, buf, (size_t)got, buf + RAW_IN, err);
	if (!st && got < 0)
		st = bad(r->w, err, "a member is corrupt", r->w->m[r->i].name);
	if (f)
		zip_fclose(f);
	free(buf);
	return st;
}

/* Member i read whole through z: its digest by md (RECORD's form) into hash,
 * its size into *size, its bytes to sink when there is one. */
static cp_status stream_member(struct cp_wheel *w, zip_t *z, size_t i, const EVP_MD *md, member_sink sink,
			       void *ctx, char *hash, uint64_t *size, cp_error *err)
{
	int32_t method = w->m[i].comp_method;
	bool raw = method == ZIP_CM_DEFLATE || method == ZIP_CM_STORE;
	zip_file_t *f = zip_fopen_index(z, i, raw ? ZIP_FL_COMPRESSED : 0);
	struct reading r = { w, i, sink, ctx, EVP_MD_CTX_new(), 0, 0, 0 };
	uint8_t digest[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	cp_status st = CP_OK;

	if (!f || !r.md || !EVP_DigestInit_ex(r.md, md, NULL))
		st = bad(w, err, "a member cannot be read", w->m[i].name);
	if (!st && !raw)
		st = compare_raw(&r, z, err);
	if (!st && method == ZIP_CM_DEFLATE && w->m[i].size <= WHOLE && w->layout.m[i].comp_size <= WHOLE)
		st = read_whole(&r, f, err);
	else if (!st)
		st = raw ? read_raw(&r, f, method == ZIP_CM_DEFLATE, err) : read_by_libzip(&r, f, err);
	/* what RECORD's size vouches for must be what the archive declares */
	if (!st && r.size != w->m[i].size)
		st = bad(w, err, "a member holds less than it declares", w->m[i].name);
	if (!st && EVP_DigestFinal_ex(r.md, digest, &n))
		cp_record_hash_text(md, digest, hash);
	*size = r.size;
	EVP_MD_CTX_free(r.md);
	if (f)
		zip_fclose(f);
	return st;
}

/* The digest member i's RECORD row is in (sha256 without a row or hash:
 * matches_row refuses those). */
static const EVP_MD *row_md(struct cp_wheel *w, size_t i)
{
	const struct cp_record_row *row = cp_record_find(&w->record, w->m[i].name);
	const EVP_MD *md = row ? cp_record_algorithm(row->hash) : NULL;

	return md ? md : EVP_sha256();
}

static cp_status hash_member(struct cp_wheel *w, size_t i, char *hash, uint64_t *size, cp_error *err)
{
	return stream_member(w, w->zip, i, row_md(w, i), NULL, NULL, hash, size, err);
}

/* The hash and size read agree with member i's RECORD row. */
static cp_status matches_row(struct cp_wheel *w, size_t i, const char *hash, uint64_t n, cp_error *err)
{
	const struct cp_record_row *row = cp_record_find(&w->record, w->m[i].name);
	char size[32];

	snprintf(size, sizeof(size), "%llu", (unsigned long long)n);
	if (!row || strcmp(row->hash, hash) || strcmp(row->size, size))
		return bad(w, err, "RECORD does not match", w->m[i].name);
	return CP_OK;
}

/* Member i of w holds the compressed bytes of the member of the same name
 * in src (a wheel this one was written from, already checked): same CRC-32,
 * sizes and method, and the same RECORD row. Hashing it again would cost
 * what inflating the whole wheel costs. */
static bool same_as_source(struct cp_wheel *w, size_t i, const struct cp_wheel *src, zip_int64_t at,
			   const struct cp_record_row *row)
{
	const struct cp_record_row *was = cp_record_find(&((struct cp_wheel *)src)->record, w->m[i].name);
	zip_stat_t a, b;

	if (at < 0 || !was || zip_stat_index(w->zip, i, 0, &a) || zip_stat_index(src->zip, (zip_uint64_t)at, 0, &b))
		return false;
	return a.crc == b.crc && a.size == b.size && a.comp_size == b.comp_size &&
	       a.comp_method == b.comp_method && !strcmp(row->hash, was->hash) && !strcmp(row->size, was->size);
}

/* Every row names a path inside the wheel (an installer writes, or
 * removes on uninstall, what RECORD lists: `../../etc/cron.d/x` is not
 * the package's) and a hash this reader verifies. */
static cp_status check_rows(struct cp_wheel *w, const char *where, cp_error *err)
{
	cp_status st = CP_OK;
	size_t i;

	for (i = 0; !st && i < w->record.n; i++) {
		const struct cp_record_row *row = &w->record.rows[i];

		if (!safe_name(row->path))
			st = cp_fail(err, CP_E_INPUT, "%s names a path outside the wheel: %s", where, row->path);
		if (!st)
			st = cp_record_check_hash(row->hash, where, row->path, err);
	}
	return st;
}

bool cp_wheel_is_signature(const struct cp_wheel *w, size_t i)
{
	const char *name = w->m[i].name;
	size_t dl = strlen(w->dist_info);

	assert(i < w->n);
	return !strncmp(name, w->dist_info, dl) && (!strcmp(name + dl, "/RECORD.jws") || !strcmp(name + dl, "/RECORD.p7s"));
}

/* Every member is in RECORD with its hash and size, and nothing else is;
 * the members copied[] marks are compared with src instead of hashed. */
static cp_status check_record(struct cp_wheel *w, const struct cp_wheel *src, const bool *copied,
			      bool (*defer)(const char *name), cp_error *err)
{
	const char *record = w->m[w->record_at].name;
	size_t i;
	uint8_t *text;
	size_t len;
	char *where = NULL; /* "<wheel>: <RECORD>", what errors about a row name */
	cp_status st = cp_wheel_read(w, w->record_at, &text, &len, err);

	if (!st && asprintf(&where, "%s: %s", w->path, record) < 0)
		st = cp_fail(err, CP_E_INTERNAL, "out of memory");
	if (!st)
		st = cp_record_parse(&w->record, (const char *)text, len, where, err);
	free(text);
	if (!st)
		st = check_rows(w, where, err);
	free(where);
	for (i = 0; !st && i < w->n; i++) {
		const char *name = w->m[i].name;
		struct cp_record_row *row;
		char hash[CP_RECORD_HASH_MAX];
		zip_int64_t at;
		uint64_t n;

		if (w->m[i].dir || i == w->record_at || cp_wheel_is_signature(w, i))
			continue;
		row = cp_record_find(&w->record, name);
		if (!row)
			return bad(w, err, "RECORD does not list", name);
		at = src ? zip_name_locate(src->zip, name, 0) : -1;
		if (at >= 0 && copied[at]) {
			if (!same_as_source(w, i, src, at, row))
				st = bad(w, err, "a copied member differs from the original", name);
			continue;
		}
		if (defer && defer(name)) {
			w->unchecked[i] = true; /* checked when read through (read_through) */
			continue;
		}
		st = hash_member(w, i, hash, &n, err);
		if (!st)
			st = matches_row(w, i, hash, n, err);
	}
	for (i = 0; !st && i < w->record.n; i++)
		if (strcmp(w->record.rows[i].path, record) && w->record.rows[i].hash[0] &&
		    zip_name_locate(w->zip, w->record.rows[i].path, 0) < 0)
			st = bad(w, err, "RECORD lists a file the wheel does not have", w->record.rows[i].path);
	return st;
}

static cp_status open_wheel(const char *path, const char *name, const struct cp_wheel *src, const bool *copied,
			    bool (*defer)(const char *name), struct cp_wheel **out, cp_error *err);

cp_status cp_wheel_open(const char *path, struct cp_wheel **out, cp_error *err)
{
	return open_wheel(path, path, NULL, NULL, NULL, out, err);
}

cp_status cp_wheel_open_named(const char *path, const char *name, struct cp_wheel **out, cp_error *err)
{
	return open_wheel(path, name, NULL, NULL, NULL, out, err);
}

cp_status cp_wheel_open_copy(const char *path, const struct cp_wheel *src, const bool *copied,
			     struct cp_wheel **out, cp_error *err)
{
	return open_wheel(path, NULL, src, copied, NULL, out, err);
}

cp_status cp_wheel_open_deferring(const char *path, bool (*defer)(const char *name), struct cp_wheel **out,
				  cp_error *err)
{
	return open_wheel(path, path, NULL, NULL, defer, out, err);
}

/* A libzip handle on fd, read a MiB at a time (zip_source.h); NULL with
 * ze set on failure. */
static zip_t *open_zip(int fd, int flags, zip_error_t *ze)
{
	zip_source_t *src = cp_zip_source_reader(fd, ze);
	zip_t *z = src ? zip_open_from_source(src, flags, ze) : NULL;

	if (src && !z)
		zip_source_free(src);
	return z;
}

static cp_status open_archive(struct cp_wheel *w, cp_error *err)
{
	zip_error_t ze;
	struct stat sb;
	cp_status st = CP_OK;

	zip_error_init(&ze);
	w->fd = cp_open_regular(w->path, &sb);
	if (w->fd < 0 && errno == ENOTSUP)
		st = cp_fail(err, CP_E_INPUT, "%s: not a regular file", w->path);
	else if (w->fd < 0)
		st = cp_fail(err, CP_E_INPUT, "%s: not a readable zip archive: %s", w->path, strerror(errno));
	if (!st && !(w->zip = open_zip(w->fd, ZIP_RDONLY | ZIP_CHECKCONS, &ze))) {
		st = zip_error_code_zip(&ze) == ZIP_ER_EXISTS
			     ? cp_fail(err, CP_E_INPUT, "%s: a member name appears twice (libzip: %s)", w->path,
				       zip_error_strerror(&ze))
			     : cp_fail(err, CP_E_INPUT, "%s: not a readable zip archive: %s", w->path,
				       zip_error_strerror(&ze));
	}
	zip_error_fini(&ze);
	return st;
}

/* zip_layout.c's reading of the archive lists libzip's members, name for
 * name in one order, with the same method and compressed size (and
 * same_bytes compares their bytes as they are read). */
static cp_status same_members(struct cp_wheel *w, cp_error *err)
{
	size_t i;

	if (w->layout.n != w->n)
		return cp_fail(err, CP_E_INPUT, "%s: the central directory and libzip disagree", w->path);
	for (i = 0; i < w->n; i++) {
		const struct cp_zip_span *s = &w->layout.m[i];

		uint32_t flags = cp_zip_span_flags(s);

		if (!cp_zip_span_named(s, w->m[i].raw_name) || s->comp_size != w->m[i].comp_size ||
		    cp_zip_span_method(s) != (uint32_t)w->m[i].comp_method)
			return bad(w, err, "the central directory and libzip disagree", w->m[i].name);
		/* zipfile (so pip) reads the central record's bits 0, 6 (encrypted)
		 * and 5 (patched data) and refuses the member; a copied member
		 * would carry them into the repaired wheel unread */
		if (flags & (CP_ZIP_FLAG_ENCRYPTED | CP_ZIP_FLAG_STRONG_ENCRYPTION))
			return bad(w, err, "an encrypted member", w->m[i].name);
		if (flags & CP_ZIP_FLAG_PATCHED_DATA)
			return bad(w, err, "a member of compressed patched data", w->m[i].name);
	}
	return CP_OK;
}

/* name: the file name checked against the .dist-info, or NULL for none (a
 * copy being checked has a temporary name and src's metadata). */
static cp_status open_wheel(const char *path, const char *name, const struct cp_wheel *src, const bool *copied,
			    bool (*defer)(const char *name), struct cp_wheel **out, cp_error *err)
{
	struct cp_wheel *w = calloc(1, sizeof(*w));
	uint64_t total = 0;
	zip_int64_t n;
	cp_status st;
	size_t i;

	*out = NULL;
	if (!w || !(w->path = strdup(path))) {
		free(w);
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	}
	w->fd = -1;
	st = open_archive(w, err);
	n = st ? 0 : zip_get_num_entries(w->zip, 0);
	if (!st && (n <= 0 || !(w->m = calloc((size_t)n, sizeof(*w->m)))))
		st = cp_fail(err, CP_E_INPUT, "%s: an empty archive is not a wheel", path);
	w->n = st ? 0 : (size_t)n;
	for (i = 0; !st && i < w->n; i++) {
		st = read_member(w, i, err);
		total += w->m[i].size;
	}
	if (!st && total > CP_WHEEL_MAX_TOTAL)
		st = cp_fail(err, CP_E_INPUT, "%s: the members declare %llu bytes in all, more than cypatch unpacks",
			     path, (unsigned long long)total);
	if (!st)
		st = cp_zip_layout_read(w->fd, w->path, &w->layout, err);
	if (!st)
		st = same_members(w, err);
	if (!st)
		st = check_names(w, err);
	if (!st)
		st = find_record(w, err);
	if (!st && !(w->unchecked = calloc(w->n, sizeof(*w->unchecked))))
		st = cp_fail(err, CP_E_INTERNAL, "out of memory");
	if (!st)
		st = check_record(w, src, copied, defer, err);
	/* pip refuses a wheel whose file name and .dist-info disagree */
	if (!st && name)
		st = cp_wheel_name_check(name, w->dist_info, err);
	if (st) {
		cp_wheel_close(w);
		return st;
	}
	*out = w;
	return CP_OK;
}

void cp_wheel_close(struct cp_wheel *w)
{
	size_t i;

	if (!w)
		return;
	if (w->zip)
		zip_discard(w->zip);
	if (w->fd >= 0)
		close(w->fd);
	for (i = 0; i < w->n; i++) {
		free(w->m[i].name);
		free(w->m[i].raw_name);
	}
	free(w->m);
	cp_zip_layout_free(&w->layout);
	free(w->unchecked);
	free(w->dist_info);
	cp_record_free(&w->record);
	free(w->path);
	free(w);
}

/* A member into memory: take() keeps it within the size it declares. */
struct memory {
	uint8_t *buf;
	size_t len;
};

static int memory_sink(void *ctx, const uint8_t *p, size_t n)
{
	struct memory *m = ctx;

	memcpy(m->buf + m->len, p, n);
	m->len += n;
	return 0;
}

/* Through stream_member, as every read is: its CRC-32 and the other
 * reader's bytes are checked (zip_fread of exactly the declared size never
 * reaches the end where libzip checks the CRC-32). */
cp_status cp_wheel_read(struct cp_wheel *w, size_t i, uint8_t **data, size_t *len, cp_error *err)
{
	struct memory m = { malloc(w->m[i].size + 1), 0 };
	char hash[CP_RECORD_HASH_MAX];
	uint64_t n;
	cp_status st;

	*data = NULL;
	if (!m.buf)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", w->path);
	st = stream_member(w, w->zip, i, EVP_sha256(), memory_sink, &m, hash, &n, err);
	if (st) {
		free(m.buf);
		return st;
	}
	*data = m.buf;
	*len = m.len;
	return CP_OK;
}

static int write_sink(void *ctx, const uint8_t *p, size_t n)
{
	return cp_write_all(*(int *)ctx, p, n);
}

/* Member i through sink, whole, and against RECORD where that was
 * deferred to this read. */
static cp_status read_through(struct cp_wheel *w, zip_t *z, size_t i, member_sink sink, void *ctx,
			      cp_error *err)
{
	char hash[CP_RECORD_HASH_MAX];
	uint64_t n;
	cp_status st = stream_member(w, z, i, row_md(w, i), sink, ctx, hash, &n, err);

	if (!st && w->unchecked[i])
		st = matches_row(w, i, hash, n, err);
	if (!st)
		w->unchecked[i] = false;
	return st;
}

/* A needle searched across the pieces: the tail of one piece is kept so
 * that a match may straddle two. */
struct finder {
	const char *needle;
	size_t n;
	uint8_t carry[64];
	size_t ncarry;
	bool found;
};

static int find_sink(void *ctx, const uint8_t *p, size_t len)
{
	struct finder *f = ctx;
	uint8_t joint[2 * sizeof(f->carry)];
	size_t keep = f->n - 1, head = len < keep ? len : keep, total, drop;

	if (f->found)
		return 0;
	/* a match across the pieces seen so far and this one */
	memcpy(joint, f->carry, f->ncarry);
	memcpy(joint + f->ncarry, p, head);
	total = f->ncarry + head;
	f->found = memmem(joint, total, f->needle, f->n) || cp_find_first(p, len, f->needle, f->n);
	/* the last `keep` bytes seen so far */
	if (len >= keep) {
		memcpy(f->carry, p + len - keep, keep);
		f->ncarry = keep;
	} else {
		drop = total > keep ? total - keep : 0;
		memmove(f->carry, joint + drop, total - drop);
		f->ncarry = total - drop;
	}
	return 0;
}

static cp_status finder_init(struct finder *f, const char *needle, cp_error *err)
{
	memset(f, 0, sizeof(*f));
	f->needle = needle;
	f->n = strlen(needle);
	if (f->n == 0 || f->n > sizeof(f->carry))
		return cp_fail(err, CP_E_INTERNAL, "cp_wheel: a needle of %zu bytes", f->n);
	return CP_OK;
}

cp_status cp_wheel_contains_in(struct cp_wheel *w, zip_t *z, size_t i, const char *needle, bool *found,
			       cp_error *err)
{
	struct finder f;
	cp_status st = finder_init(&f, needle, err);

	if (!st)
		st = read_through(w, z, i, find_sink, &f, err);
	*found = f.found;
	return st;
}

/* Written out and searched on the way. */
struct extracting {
	int fd;
	struct finder f;
};

static int extract_sink(void *ctx, const uint8_t *p, size_t n)
{
	struct extracting *x = ctx;

	find_sink(&x->f, p, n);
	return write_sink(&x->fd, p, n);
}

cp_status cp_wheel_extract(struct cp_wheel *w, zip_t *z, size_t i, int fd, const char *needle, bool *found,
			   cp_error *err)
{
	struct extracting x = { .fd = fd };
	cp_status st = finder_init(&x.f, needle, err);

	if (!st)
		st = read_through(w, z, i, extract_sink, &x, err);
	*found = x.f.found;
	return st;
}

cp_status cp_wheel_reader(struct cp_wheel *w, zip_t **z, cp_error *err)
{
	zip_error_t ze;

	zip_error_init(&ze);
	*z = open_zip(w->fd, ZIP_RDONLY, &ze);
	if (!*z)
		cp_fail(err, CP_E_IO, "%s: cannot read it again: %s", w->path, zip_error_strerror(&ze));
	zip_error_fini(&ze);
	return *z ? CP_OK : err->code;
}

cp_status cp_wheel_head_contains(struct cp_wheel *w, size_t i, size_t n, const char *needle, bool *found,
				 cp_error *err)
{
	zip_file_t *f = zip_fopen_index(w->zip, i, 0);
	uint8_t *buf = malloc(n);
	zip_int64_t got = -1;

	*found = false;
	if (f && buf)
		got = zip_fread(f, buf, n);
	if (got >= 0)
		*found = cp_find_first(buf, (size_t)got, needle, strlen(needle)) != NULL;
	if (f)
		zip_fclose(f);
	free(buf);
	return got < 0 ? bad(w, err, "a member cannot be read", w->m[i].name) : CP_OK;
}

cp_status cp_wheel_read_metadata(struct cp_wheel *w, size_t *at, uint8_t **data, size_t *len, char *where,
				 size_t wheren, cp_error *err)
{
	size_t n = strlen(w->dist_info);

	*data = NULL;
	snprintf(where, wheren, "%s: %s/METADATA", w->path, w->dist_info);
	for (*at = 0; *at < w->n; (*at)++)
		if (!strncmp(w->m[*at].name, w->dist_info, n) && !strcmp(w->m[*at].name + n, "/METADATA"))
			return cp_wheel_read(w, *at, data, len, err);
	return cp_fail(err, CP_E_INPUT, "%s: no %s/METADATA", w->path, w->dist_info);
}
