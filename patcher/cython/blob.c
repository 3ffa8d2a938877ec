/*
 * blob.c - zlib, bz2 and zstd through their libraries, and Cython's LZSS.
 *
 * The LZSS format, as Cython 3.3 writes it: a flag byte (bit set: literal
 * byte follows; clear: back-reference) governs the next eight items, low bit
 * first. A back-reference is two bytes lo, hi: with lo < 0x80 the distance
 * is lo and the length hi; with hi < 0x80 the distance is 0x80 plus a 9-bit
 * value (hi bits 5..6 above lo's seven bits) and the length hi & 0x1f; else
 * the distance is 0x80 plus a 14-bit value and the length a third byte.
 * Lengths are stored minus 3. The copy source starts at
 * out - distance - length. Decoding stops once outlen bytes are out.
 */
#include "cython/blob.h"

#include <bzlib.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

const char *cp_blob_algo_name(enum cp_blob_algo algo)
{
	switch (algo) {
	case CP_BLOB_NONE: return "none";
	case CP_BLOB_ZLIB: return "zlib";
	case CP_BLOB_BZ2: return "bz2";
	case CP_BLOB_ZSTD: return "zstd";
	case CP_BLOB_LZSS: return "lzss";
	}
	return "unknown";
}

static int lzss_backref(const uint8_t *src, size_t srclen, size_t *pos,
			size_t *dist, size_t *len)
{
	uint32_t lo, hi;

	if (*pos + 2 > srclen)
		return -1;
	lo = src[(*pos)++];
	hi = src[(*pos)++];
	if (!(lo & 0x80)) {
		*dist = lo;
		*len = hi;
	} else if (!(hi & 0x80)) {
		*dist = 0x80 + (((hi << 2) & 0x180) | (lo & 0x7f));
		*len = hi & 0x1f;
	} else {
		if (*pos >= srclen)
			return -1;
		*dist = 0x80 + (((hi & 0x7f) << 7) | (lo & 0x7f));
		*len = src[(*pos)++];
	}
	*len += 3;
	return 0;
}

static int lzss_decode(const uint8_t *src, size_t srclen, uint8_t *out, size_t outlen,
		       size_t *consumed)
{
	size_t pos = 0, o = 0;

	if (outlen == 0)
		return -1;
	for (;;) {
		unsigned flags, bit;

		if (pos >= srclen)
			return -1;
		flags = src[pos++];
		for (bit = 0; bit < 8; bit++, flags >>= 1) {
			if (flags & 1) {
				if (pos >= srclen)
					return -1;
				out[o++] = src[pos++];
			} else {
				size_t dist, len, from, k;

				if (lzss_backref(src, srclen, &pos, &dist, &len))
					return -1;
				if (dist + len > o || len > outlen - o)
					return -1;
				from = o - dist - len;
				for (k = 0; k < len; k++) /* may overlap: byte by byte */
					out[o + k] = out[from + k];
				o += len;
			}
			if (o >= outlen) {
				*consumed = pos;
				return 0;
			}
		}
	}
}

/* Inflates at most outlen bytes; returns the count or -1. */
static long long zlib_run(const uint8_t *src, size_t srclen, uint8_t *out, size_t outlen,
			  size_t *consumed)
{
	z_stream z;
	int rc;
	long long n;

	memset(&z, 0, sizeof(z));
	if (inflateInit(&z) != Z_OK)
		return -1;
	z.next_in = (Bytef *)src;
	z.avail_in = srclen > UINT_MAX ? UINT_MAX : (uInt)srclen;
	z.next_out = out;
	z.avail_out = outlen > UINT_MAX ? UINT_MAX : (uInt)outlen;
	rc = inflate(&z, Z_FINISH);
	n = rc == Z_STREAM_END ? (long long)z.total_out : -1;
	*consumed = z.total_in;
	inflateEnd(&z);
	return n;
}

static long long bz2_run(const uint8_t *src, size_t srclen, uint8_t *out, size_t outlen,
			 size_t *consumed)
{
	bz_stream b;
	int rc;
	long long n;

	memset(&b, 0, sizeof(b));
	if (BZ2_bzDecompressInit(&b, 0, 0) != BZ_OK)
		return -1;
	b.next_in = (char *)src;
	b.avail_in = srclen > UINT_MAX ? UINT_MAX : (unsigned)srclen;
	b.next_out = (char *)out;
	b.avail_out = outlen > UINT_MAX ? UINT_MAX : (unsigned)outlen;
	rc = BZ2_bzDecompress(&b);
	n = rc == BZ_STREAM_END ? (long long)b.total_out_lo32 : -1;
	*consumed = b.total_in_lo32;
	BZ2_bzDecompressEnd(&b);
	return n;
}

static long long zstd_run(const uint8_t *src, size_t srclen, uint8_t *out, size_t outlen,
			  size_t *consumed)
{
	size_t frame = ZSTD_findFrameCompressedSize(src, srclen);
	size_t n;

	if (ZSTD_isError(frame))
		return -1;
	n = ZSTD_decompress(out, outlen, src, frame);
	if (ZSTD_isError(n))
		return -1;
	*consumed = frame;
	return (long long)n;
}

static long long run(enum cp_blob_algo algo, const uint8_t *src, size_t srclen,
		     uint8_t *out, size_t outlen, size_t *consumed)
{
	switch (algo) {
	case CP_BLOB_ZLIB: return zlib_run(src, srclen, out, outlen, consumed);
	case CP_BLOB_BZ2: return bz2_run(src, srclen, out, outlen, consumed);
	case CP_BLOB_ZSTD: return zstd_run(src, srclen, out, outlen, consumed);
	default: return -1;
	}
}

int cp_blob_decode(enum cp_blob_algo algo, const uint8_t *src, size_t srclen,
		   uint8_t *out, size_t outlen, size_t *consumed)
{
	if (algo == CP_BLOB_LZSS)
		return lzss_decode(src, srclen, out, outlen, consumed);
	if (algo == CP_BLOB_NONE) {
		if (srclen < outlen)
			return -1;
		memcpy(out, src, outlen);
		*consumed = outlen;
		return 0;
	}
	return run(algo, src, srclen, out, outlen, consumed) == (long long)outlen ? 0 : -1;
}

long long cp_blob_decoded_size(enum cp_blob_algo algo, const uint8_t *src,
			       size_t srclen, size_t limit, size_t *consumed)
{
	uint8_t *tmp;
	long long n;

	if (algo != CP_BLOB_ZLIB && algo != CP_BLOB_BZ2 && algo != CP_BLOB_ZSTD)
		return -1;
	tmp = malloc(limit ? limit : 1);
	if (!tmp)
		return -1;
	n = run(algo, src, srclen, tmp, limit, consumed);
	free(tmp);
	return n;
}

/* --- encoding ------------------------------------------------------------ */

#define LZSS_MAX_DIST (0x80 + 0x3fff)
#define LZSS_MAX_LEN (255 + 3)
#define LZSS_HASH (1u << 15)
#define LZSS_CHAIN 64

struct lzss_out {
	uint8_t *buf;
	size_t n, cap, flag_at;
	unsigned nitems;
};

static int lzss_put(struct lzss_out *o, uint8_t b)
{
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 256;
		uint8_t *p = realloc(o->buf, cap);

		if (!p)
			return -1;
		o->buf = p;
		o->cap = cap;
	}
	o->buf[o->n++] = b;
	return 0;
}

/* Starts a new flag byte every eight items; sets the item's bit for a literal. */
static int lzss_item(struct lzss_out *o, int literal)
{
	if (o->nitems % 8 == 0) {
		o->flag_at = o->n;
		if (lzss_put(o, 0))
			return -1;
	}
	if (literal)
		o->buf[o->flag_at] |= (uint8_t)(1u << (o->nitems % 8));
	o->nitems++;
	return 0;
}

/* A back-reference: the copy ends `dist` bytes before the current output. */
static int lzss_ref(struct lzss_out *o, size_t dist, size_t len)
{
	size_t l3 = len - 3;

	if (lzss_item(o, 0))
		return -1;
	if (dist < 0x80)
		return lzss_put(o, (uint8_t)dist) || lzss_put(o, (uint8_t)l3);
	dist -= 0x80;
	if (dist < 0x200 && l3 <= 0x1f)
		return lzss_put(o, (uint8_t)(0x80 | (dist & 0x7f))) ||
		       lzss_put(o, (uint8_t)(((dist >> 2) & 0x60) | l3));
	return lzss_put(o, (uint8_t)(0x80 | (dist & 0x7f))) || lzss_put(o, (uint8_t)(0x80 | (dist >> 7))) ||
	       lzss_put(o, (uint8_t)l3);
}

static unsigned lzss_hash(const uint8_t *p)
{
	return ((unsigned)p[0] * 2654435761u ^ (unsigned)p[1] * 40503u ^ p[2]) & (LZSS_HASH - 1);
}

/* Longest earlier match for position i that ends at or before i. */
static size_t lzss_match(const uint8_t *src, size_t n, size_t i, const int64_t *head,
			 const int64_t *prev, size_t *from)
{
	size_t best = 0, chain = 0;
	int64_t j;

	if (i + 3 > n)
		return 0;
	for (j = head[lzss_hash(src + i)]; j >= 0 && chain < LZSS_CHAIN; j = prev[j], chain++) {
		size_t max = n - i, len = 0;

		if (i - (size_t)j > LZSS_MAX_DIST + LZSS_MAX_LEN)
			break;
		if (max > LZSS_MAX_LEN)
			max = LZSS_MAX_LEN;
		if (max > i - (size_t)j) /* the copy may not overlap the output */
			max = i - (size_t)j;
		while (len < max && src[(size_t)j + len] == src[i + len])
			len++;
		if (len >= 3 && len > best && i - (size_t)j - len <= LZSS_MAX_DIST) {
			best = len;
			*from = (size_t)j;
		}
	}
	return best;
}

static int lzss_encode(const uint8_t *src, size_t n, uint8_t **out, size_t *outlen)
{
	struct lzss_out o = { NULL, 0, 0, 0, 0 };
	int64_t *head = malloc(LZSS_HASH * sizeof(int64_t)), *prev = malloc((n ? n : 1) * sizeof(int64_t));
	size_t i = 0, k;
	int rc = -1;

	if (!head || !prev)
		goto done;
	for (k = 0; k < LZSS_HASH; k++)
		head[k] = -1;
	while (i < n) {
		size_t from = 0, len = lzss_match(src, n, i, head, prev, &from), end = i + (len ? len : 1);

		if (len ? lzss_ref(&o, i - from - len, len) : (lzss_item(&o, 1) || lzss_put(&o, src[i])))
			goto done;
		for (; i < end; i++) {
			if (i + 3 <= n) {
				unsigned h = lzss_hash(src + i);

				prev[i] = head[h];
				head[h] = (int64_t)i;
			}
		}
	}
	*out = o.buf;
	*outlen = o.n;
	o.buf = NULL;
	rc = 0;
done:
	free(o.buf);
	free(head);
	free(prev);
	return rc;
}

int cp_blob_encode(enum cp_blob_algo algo, const uint8_t *src, size_t n, uint8_t **out,
		   size_t *outlen)
{
	size_t cap;
	uint8_t *buf;

	*out = NULL;
	if (algo == CP_BLOB_LZSS)
		return n ? lzss_encode(src, n, out, outlen) : -1;
	cap = n + n / 8 + 1024;
	if (algo == CP_BLOB_ZSTD)
		cap = ZSTD_compressBound(n);
	buf = malloc(cap);
	if (!buf)
		return -1;
	switch (algo) {
	case CP_BLOB_NONE:
		memcpy(buf, src, n);
		*outlen = n;
		break;
	case CP_BLOB_ZLIB: {
		uLongf z = cap;

		if (compress2(buf, &z, src, n, 9) != Z_OK)
			goto bad;
		*outlen = z;
		break;
	}
	case CP_BLOB_BZ2: {
		unsigned z = cap > UINT_MAX ? UINT_MAX : (unsigned)cap;

		if (n > UINT_MAX || BZ2_bzBuffToBuffCompress((char *)buf, &z, (char *)src, (unsigned)n, 9, 0, 0) != BZ_OK)
			goto bad;
		*outlen = z;
		break;
	}
	case CP_BLOB_ZSTD: {
		size_t z = ZSTD_compress(buf, cap, src, n, 19);

		if (ZSTD_isError(z))
			goto bad;
		*outlen = z;
		break;
	}
	default:
		goto bad;
	}
	*out = buf;
	return 0;
bad:
	free(buf);
	return -1;
}
