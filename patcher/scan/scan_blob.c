/*
 * scan_blob.c - Cython 3.2+ string blobs: finding, decoding, splitting.
 *
 * Cython 3.2+ decodes its blob in one function (the module's constant
 * initialisation, often inlined into its exec function), which is the one
 * that calls PyUnicode_DecodeUTF8 on slices of it. The slices' lengths sit
 * in a local bit-field array (3.3: one for str and one for bytes constants)
 * read by an indexed load [rsp + i*4 + base]. The evaluator recovers those
 * arrays; a fit is a choice of array(s), counts (loop bounds, found among
 * the function's cmp immediates) and bit widths whose lengths add up to the
 * decoded length of a blob the function loads: a zlib, bz2 or zstd stream,
 * an LZSS stream whose length is an immediate there, or a plain literal.
 */
#include "scan/scan.h"
#include "cython/cython.h"
#include "util/error.h"
#include "arch/frame.h"
#include "util/names.h"

#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BLOB (64u << 20)
#define MAX_ENTRIES (1u << 20)

struct cand {
	uint64_t va;        /* a .rodata array (clang keeps the index there), or 0 */
	int64_t base;       /* else the frame array's offset */
	uint64_t n, sum;
	unsigned bits;      /* the field width */
	unsigned read_bits; /* the width the cells are known to */
	bool exact;         /* the count is a loop bound as compared */
};

struct cands {
	struct cand *v;
	size_t n, cap;
};

struct stream {
	enum cp_blob_algo algo;
	uint64_t va, length, consumed;
	uint64_t code;
};

struct fit {
	struct cand arr[2];
	int narr;
	const struct cp_frame_arglen *tail; /* entries folded into calls */
	size_t ntail;
	struct stream blob;
};

/* The counts of a function's loops (cp_dis_loop_count); known false where
 * it has none or more than count holds. */
struct loops {
	uint64_t count[64];
	size_t n;
	bool known;
};

/* What a search for a function's blob reads: its frame, its decoded
 * streams and its loops. */
struct search {
	const cp_scan *s;
	const struct cp_frame *f;
	const struct stream *st;
	size_t nst;
	const struct loops *loops;
};

static unsigned bit_length(uint64_t v)
{
	unsigned n = 0;

	while (v) {
		n++;
		v >>= 1;
	}
	return n;
}

/* The lengths in this array's first n cells. A cell is read to the widest
 * width at which all n are known: exactly the field width where code stores
 * the bit-fields with and/or (the bits above are the stack's), the whole
 * word where it copies a template (whose upper bits are zero). Cython sizes
 * the field by the largest length, which gives the width reported. */
/* Cell i of a candidate array: from the frame as code built it, or from
 * the file for a .rodata array (whose bits are all known). */
static bool cand_cell(const cp_image *img, const struct cp_frame *f, const struct cand *c,
		      size_t i, unsigned bits, uint32_t *out)
{
	const uint8_t *p;
	uint32_t v;

	if (!c->va)
		return cp_frame_cell(f, c->base, i, bits, out);
	p = cp_image_va_bytes(img, c->va + 4 * i, 4);
	if (!p)
		return false;
	memcpy(&v, p, 4);
	*out = bits >= 32 ? v : v & ((1u << bits) - 1);
	return true;
}

/* A .rodata array: all its bits are known, so the whole words are read
 * once (read cell by cell at every width, a mutated module took seconds). */
static bool rodata_fits(const cp_image *img, uint64_t va, uint64_t n, struct cand *c)
{
	const uint8_t *p = cp_image_va_bytes(img, va, 4 * n);
	uint64_t i, sum = 0, max = 0;
	uint32_t v;

	if (!p)
		return false;
	for (i = 0; i < n; i++) {
		memcpy(&v, p + 4 * i, 4);
		sum += v;
		if (v > max)
			max = v;
	}
	c->n = n;
	c->sum = sum;
	c->read_bits = 32;
	c->bits = bit_length(max);
	/* a .rodata array holds bit-fields: nothing above their width */
	return max && max < (1ull << 16);
}

static bool cells_fit(const cp_image *img, const struct cp_frame *f, uint64_t va, int64_t base,
		      uint64_t n, struct cand *c)
{
	unsigned w;

	c->va = va;
	c->base = base;
	if (va)
		return rodata_fits(img, va, n, c);
	for (w = 32; w >= 1; w--) {
		uint64_t i, sum = 0, max = 0;
		uint32_t v;

		for (i = 0; i < n; i++) {
			if (!cand_cell(img, f, c, (size_t)i, w, &v))
				break;
			sum += v;
			if (v > max)
				max = v;
		}
		if (i < n)
			continue;
		if (!max)
			return false;
		c->n = n;
		c->sum = sum;
		c->read_bits = w;
		c->bits = bit_length(max);
		return true;
	}
	return false;
}

static int push_cand(struct cands *cs, const struct cand *c)
{
	if (CP_GROW(cs->v, cs->cap, cs->n + 1))
		return -1;
	cs->v[cs->n++] = *c;
	return 0;
}

static bool seen_base(const struct cp_frame *f, size_t upto, int64_t base)
{
	size_t i;

	for (i = 0; i < upto; i++)
		if (f->loads[i].scale == 4 && f->loads[i].base == base)
			return true;
	return false;
}

/* The counts a loop bound allows: n and n + 1 (`i <= n - 1`), and the
 * length of a second loop [x, y). */
static size_t counts(const struct cp_frame *f, uint64_t *out, bool *exact, size_t max)
{
	size_t j, k, n = 0;

	for (j = 0; j < f->ncmps && n + 2 <= max; j++) {
		exact[n] = true;
		out[n++] = f->cmps[j];
		exact[n] = false;
		out[n++] = f->cmps[j] + 1;
		for (k = 0; k < f->ncmps && n < max; k++)
			if (f->cmps[j] > f->cmps[k]) {
				exact[n] = false;
				out[n++] = f->cmps[j] - f->cmps[k];
			}
	}
	return n;
}

static int try_counts(const cp_image *img, const struct cp_frame *f, uint64_t va, int64_t base,
		      const uint64_t *ns, const bool *exact, size_t nn, struct cands *cs)
{
	size_t j;

	for (j = 0; j < nn; j++) {
		struct cand c;

		if (ns[j] == 0 || ns[j] > MAX_ENTRIES)
			continue;
		if (!cells_fit(img, f, va, base, ns[j], &c))
			continue;
		c.exact = exact[j];
		if (push_cand(cs, &c))
			return -1;
	}
	return 0;
}

/* Whether va is the template an indexed frame array was copied from: the
 * code reads that array from the frame, never the template in place (read
 * as a second array, its cells and the bytes after fit a wrong split). */
static bool frame_template(const struct cp_frame *f, uint64_t va)
{
	size_t i;

	for (i = 0; i < f->nsnap; i++)
		if (f->snap[i].len && f->snap[i].known[0] && f->snap[i].src[0].va == va)
			return true;
	return false;
}

/* Candidates: every indexed frame array, and every .rodata array the
 * function loads, with every count its loop bounds allow. */
static int build_cands(const cp_image *img, const struct cp_frame *f, struct cands *cs)
{
	uint64_t ns[512];
	bool exact[512];
	size_t nn = counts(f, ns, exact, sizeof(ns) / sizeof(ns[0])), i;

	for (i = 0; i < f->nloads; i++)
		if (f->loads[i].scale == 4 && !seen_base(f, i, f->loads[i].base) &&
		    try_counts(img, f, 0, f->loads[i].base, ns, exact, nn, cs))
			return -1;
	for (i = 0; i < f->nleas; i++)
		if (f->leas[i] % 4 == 0 && !frame_template(f, f->leas[i]) &&
		    try_counts(img, f, f->leas[i], 0, ns, exact, nn, cs))
			return -1;
	return 0;
}


static enum cp_blob_algo magic_algo(const uint8_t *p, size_t n)
{
	if (n >= 2 && (p[0] & 0x0f) == 8 && ((p[0] << 8) | p[1]) % 31 == 0)
		return CP_BLOB_ZLIB;
	if (n >= 4 && memcmp(p, "BZh", 3) == 0 && p[3] >= '1' && p[3] <= '9')
		return CP_BLOB_BZ2;
	if (n >= 4 && p[0] == 0x28 && p[1] == 0xb5 && p[2] == 0x2f && p[3] == 0xfd)
		return CP_BLOB_ZSTD;
	return CP_BLOB_NONE;
}

static uint64_t rodata_avail(const cp_image *img, uint64_t va)
{
	const struct cp_section *sec = cp_image_section_at(img, va);

	if (!sec || !cp_section_is_rodata(sec))
		return 0;
	return sec->addr + sec->size - va;
}

/* Compressed streams (zlib, bz2, zstd) the function loads, with their sizes. */
static int find_streams(const cp_image *img, const struct cp_frame *f,
			struct stream **out, size_t *n)
{
	size_t i, cap = 0;

	*out = NULL;
	*n = 0;
	for (i = 0; i < f->nleas; i++) {
		uint64_t avail = rodata_avail(img, f->leas[i]);
		const uint8_t *p = avail ? cp_image_va_bytes(img, f->leas[i], avail) : NULL;
		enum cp_blob_algo algo = p ? magic_algo(p, avail) : CP_BLOB_NONE;
		size_t used = 0;
		long long len;

		if (algo == CP_BLOB_NONE)
			continue;
		len = cp_blob_decoded_size(algo, p, avail, MAX_BLOB, &used);
		if (len <= 0)
			continue;
		if (CP_GROW(*out, cap, *n + 1))
			return -1;
		(*out)[*n].algo = algo;
		(*out)[*n].va = f->leas[i];
		(*out)[*n].length = (uint64_t)len;
		(*out)[*n].consumed = used;
		(*out)[*n].code = f->lea_insn[i];
		(*n)++;
	}
	return 0;
}

/*
 * The blobs of exactly `len` decoded bytes that the function loads, one per
 * call: *it starts at 0 and is advanced past the candidate returned. In
 * order: decoded streams, then LZSS streams (3.3+; both lengths must be
 * immediates of the function), then plain literals ending in a NUL there.
 */
static bool next_blob(const cp_scan *s, const struct cp_frame *f, const struct stream *st,
		      size_t nst, uint64_t len, size_t *it, struct stream *out)
{
	bool lzss = cp_cython_at_least(s, 3, 3) &&
		    (cp_frame_has_imm(f, len) || cp_frame_has_imm(f, len - 1)) && len <= MAX_BLOB;

	for (; *it < nst; (*it)++)
		if (st[*it].length == len) {
			*out = st[(*it)++];
			return true;
		}
	for (; *it < nst + f->nleas; (*it)++) {
		size_t i = *it - nst;
		uint64_t avail = rodata_avail(s->img, f->leas[i]);
		const uint8_t *p = avail ? cp_image_va_bytes(s->img, f->leas[i], avail) : NULL;
		uint8_t *tmp;
		size_t used = 0;
		int rc;

		if (!lzss || !p || !(tmp = malloc(len)))
			continue;
		rc = cp_blob_decode(CP_BLOB_LZSS, p, avail, tmp, len, &used);
		free(tmp);
		if (rc == 0 && cp_frame_has_imm(f, used)) {
			out->algo = CP_BLOB_LZSS;
			out->va = f->leas[i];
			out->length = len;
			out->consumed = used;
			out->code = f->lea_insn[i];
			(*it)++;
			return true;
		}
	}
	for (; *it < nst + 2 * f->nleas; (*it)++) {
		size_t i = *it - nst - f->nleas;
		uint64_t avail = rodata_avail(s->img, f->leas[i]);
		const uint8_t *p = avail > len ? cp_image_va_bytes(s->img, f->leas[i], avail) : NULL;

		/* 3.3 keeps it in a static array, 16-aligned by the compilers of both
		 * machines (every plain 3.3 blob of the x86-64 and aarch64 corpora) */
		bool aligned = !cp_cython_at_least(s, 3, 3) || f->leas[i] % 16 == 0;

		if (p && p[len] == 0 && p[0] != 0 && aligned) {
			out->algo = CP_BLOB_NONE;
			out->va = f->leas[i];
			out->length = len;
			out->consumed = len + 1;
			out->code = f->lea_insn[i];
			(*it)++;
			return true;
		}
	}
	return false;
}

static bool utf8_valid(const uint8_t *p, uint64_t n)
{
	uint64_t i = 0;

	while (i < n) {
		unsigned c = p[i], k, need;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			need = 1;
		else if (c >= 0xe0 && c <= 0xef)
			need = 2;
		else if (c >= 0xf0 && c <= 0xf4)
			need = 3;
		else
			return false;
		if (n - i <= need)
			return false;
		for (k = 1; k <= need; k++)
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
		i += need + 1;
	}
	return true;
}

/* An import-signature constant's shape (see parse_sigconst): N signatures,
 * then N identifiers, NUL-separated; a bytes constant, never a str one. */
static bool sig_shaped(const uint8_t *p, uint64_t n)
{
	uint64_t i, start = 0;
	size_t pieces = 1, k = 0;

	for (i = 0; i < n; i++)
		pieces += p[i] == 0;
	if (pieces < 2 || pieces % 2 || !n || p[0] == 0)
		return false;
	for (i = 0; i <= n; i++) {
		if (i < n && p[i] != 0)
			continue;
		if (k < pieces / 2 ? memchr(p + start, '\n', (size_t)(i - start)) != NULL
				   : !cp_is_identifier((const char *)p + start, (size_t)(i - start)))
			return false;
		k++;
		start = i + 1;
	}
	return true;
}

/* Whether an entry can be a str constant. Cython encodes each one to UTF-8
 * (Code.py, generate_pystring_constants), so it is valid UTF-8; it may hold
 * a NUL (a '\0' literal: cuda-core 1.2.2's _linker has "\0" as its first
 * str constant), but never in the shape of an import-signature constant.
 * In a plain literal a NUL inside a str entry is still refused: there it is
 * more likely a fit running across unrelated C strings than a '\0'. */
static bool str_entry_ok(const uint8_t *p, uint64_t n, bool nul_ok)
{
	if (!utf8_valid(p, n))
		return false;
	if (!memchr(p, 0, (size_t)n))
		return true;
	return nul_ok && !sig_shaped(p, n);
}

/* 3.2 keeps str and bytes lengths in one array, read by two loops: str
 * entries up to the smaller bound, bytes entries from there to the array's
 * end. When the bytes loop was folded into calls (a tail), the array holds
 * str entries only. Otherwise the str bound is the largest loop bound in the
 * array's upper half below which every entry can be a str constant
 * (str_entry_ok; modules have far fewer bytes constants than str ones).
 * Both loops compare in one form, that of the array's own count (`exact`:
 * `i < n` as compared, else `i <= n - 1` unoptimised), and a bound in that
 * form is taken first: a bytes constant that is valid UTF-8 (cuda-core
 * 0.4.2's cuda_utils has b" " right after its str constants) would
 * otherwise let the str bound run one past its `i < n` as `n + 1`. */
static void split_single(const struct cp_frame *f, struct cp_blob *b, size_t narr, bool tail,
			 bool nul_ok, bool exact)
{
	size_t j, k, best = narr;
	bool found = false;
	int pass;

	for (pass = 0; !tail && !found && pass < 2; pass++)
		for (j = 0; j < 2 * f->ncmps; j++) {
			/* the bound as compared: `i < n`, or `i <= n - 1` unoptimised */
			size_t cand = (size_t)f->cmps[j / 2] + j % 2;
			bool ok = cand > narr / 2 && cand < narr && (!found || cand > best) &&
				  (pass == 1 || (j % 2 == 0) == exact);

			for (k = 0; ok && k < cand; k++)
				ok = str_entry_ok(b->data + b->entry[k].offset, b->entry[k].length, nul_ok);
			if (ok) {
				best = cand;
				found = true;
			}
		}
	b->nstr = best;
	for (j = 0; j < narr; j++)
		b->entry[j].is_bytes = j >= best;
}

/* Whether the module's own name is among the str constants. Cython keeps
 * it there only when something Python-visible needs it (`__module__` of a
 * class or function): cuda-core 1.2.2's _resource_handles, all cdef
 * functions, has none. The name is the fully qualified one (`pkg.sub.mod`),
 * while s->modname comes from PyInit_<mod> and is only its last part: a
 * module inside a package matches an entry that ends in "." followed by it. */
static bool names_module(const cp_scan *s, const struct cp_blob *b)
{
	size_t k, n = strlen(s->modname);

	if (!n)
		return true;
	for (k = 0; k < b->nstr; k++) {
		const uint8_t *d = b->data + b->entry[k].offset;
		uint64_t len = b->entry[k].length;

		if (len < n || memcmp(d + len - n, s->modname, n))
			continue;
		if (len == n || d[len - n - 1] == '.')
			return true;
	}
	return false;
}

/* Whether a bytes entry has the shape of an import-signature constant,
 * which Cython writes for the functions of every module cimported: a
 * module that only cimports may hold nothing else that names it. */
static bool holds_sigconst(const struct cp_blob *b)
{
	size_t k;

	for (k = b->nstr; k < b->nentries; k++)
		if (sig_shaped(b->data + b->entry[k].offset, b->entry[k].length))
			return true;
	return false;
}

/* Whether a plain literal [va, va + n] can be what the decoder reads: where
 * a decoding call's data pointer is an address the code made (a lea of
 * the literal plus an offset known on the loop's first pass), one of them
 * lies inside it. Other literals the function loads (module names, the
 * provider's capsule names) can fit the lengths too, and their bytes are
 * not what the module decodes. The empty constant ("", length 0) is made
 * from a literal of its own, and says nothing. */
static bool decoder_reads(const struct cp_frame *f, uint64_t va, uint64_t n)
{
	size_t i;
	bool seen = false;

	for (i = 0; i < f->ncalls; i++) {
		const struct cp_frame_call *c = &f->calls[i];

		if (!c->name || (strcmp(c->name, "PyUnicode_DecodeUTF8") &&
				 strcmp(c->name, "PyBytes_FromStringAndSize")) ||
		    !(c->addr_known & 1) || ((c->known & 2) && c->arg[1] == 0))
			continue;
		if (c->addr[0] >= va && c->addr[0] <= va + n)
			return true;
		seen = true;
	}
	return !seen;
}

/* The entries of a fit's length arrays, laid out from *pos on: each
 * cell's length, and where the cell is (a .rodata word, or the
 * instruction that stored it in the frame). false when a cell is unknown or
 * runs past the decoded length. */
static bool array_entries(const cp_scan *s, const struct cp_frame *f, const struct fit *fit, struct cp_blob *b,
			  size_t *k, uint64_t *pos)
{
	uint64_t i;
	int a;

	for (a = 0; a < fit->narr; a++) {
		for (i = 0; i < fit->arr[a].n; i++, (*k)++) {
			struct cp_blob_entry *e = &b->entry[*k];
			const struct cp_frame_src *src;
			uint32_t len;

			if (!cand_cell(s->img, f, &fit->arr[a], (size_t)i, fit->arr[a].read_bits, &len) ||
			    len > fit->blob.length - *pos)
				return false;
			e->offset = *pos;
			e->length = len;
			if (fit->arr[a].va) {
				e->cell_va = fit->arr[a].va + 4 * i;
			} else if ((src = cp_frame_src_at(f, fit->arr[a].base, (size_t)i))) {
				e->cell_insn = src->insn;
				e->cell_va = src->va;
			}
			e->is_bytes = fit->narr == 2 && a == 1;
			*pos += len;
		}
	}
	return true;
}

/* The entries whose lengths the compiler folded into calls, after the
 * arrays' (one-entry loops). */
static bool tail_entries(const struct fit *fit, struct cp_blob *b, size_t *k, uint64_t *pos)
{
	uint64_t i;

	for (i = 0; i < fit->ntail; i++, (*k)++) {
		struct cp_blob_entry *e = &b->entry[*k];

		if (fit->tail[i].len > fit->blob.length - *pos)
			return false;
		e->offset = *pos;
		e->length = fit->tail[i].len;
		e->is_bytes = fit->tail[i].is_bytes;
		e->cell_insn = fit->tail[i].set;
		e->ptr_insn = fit->tail[i].ptr_set;
		e->call_insn = fit->tail[i].insn;
		e->folded = true;
		*pos += e->length;
	}
	return true;
}

/* Which entries are str constants (b->nstr), and whether they are valid
 * UTF-8 (str_entry_ok). */
static bool split_str(const cp_scan *s, const struct cp_frame *f, const struct fit *fit, struct cp_blob *b)
{
	size_t k;

	if (fit->narr == 2 || cp_cython_at_least(s, 3, 3))
		b->nstr = fit->arr[0].n; /* 3.3: the str array, then bytes ones */
	else
		split_single(f, b, (size_t)fit->arr[0].n, fit->ntail > 0, fit->blob.algo != CP_BLOB_NONE,
			     fit->arr[0].exact);
	for (k = 0; k < b->nstr; k++)
		if (!str_entry_ok(b->data + b->entry[k].offset, b->entry[k].length,
				  fit->blob.algo != CP_BLOB_NONE))
			return false;
	return true;
}

/* Reads the lengths of a fit's entries and decodes its blob into b;
 * false when the fit does not hold (sum, decoding, UTF-8 of str entries).
 * *named tells whether its str constants hold the module's name: a fit on
 * a decoded stream (whose decoded length the lengths add up to) holds
 * without it, one on a plain literal that merely ends in a NUL holds only
 * with it or with an import-signature constant among its bytes entries. */
static bool load_fit(const cp_scan *s, const struct cp_frame *f, const struct fit *fit,
		     struct cp_blob *b, bool *named)
{
	const uint8_t *src = cp_image_va_bytes(s->img, fit->blob.va, fit->blob.consumed);
	size_t used = 0, total = 0, k = 0;
	uint64_t pos = 0;
	int a;

	memset(b, 0, sizeof(*b));
	for (a = 0; a < fit->narr; a++)
		total += fit->arr[a].n;
	total += fit->ntail;
	if (!src || !total)
		return false;
	if (fit->blob.algo == CP_BLOB_NONE && !decoder_reads(f, fit->blob.va, fit->blob.length))
		return false;
	b->data = malloc(fit->blob.length ? fit->blob.length : 1);
	b->entry = calloc(total, sizeof(*b->entry));
	if (!b->data || !b->entry ||
	    cp_blob_decode(fit->blob.algo, src, fit->blob.consumed, b->data, fit->blob.length, &used) ||
	    !array_entries(s, f, fit, b, &k, &pos) || !tail_entries(fit, b, &k, &pos))
		goto bad;
	/* every module has a few dozen constants: refuse degenerate fits */
	if (pos != fit->blob.length || total < 4 || pos < 32)
		goto bad;
	b->nentries = total;
	if (!split_str(s, f, fit, b))
		goto bad;
	*named = names_module(s, b);
	if (!*named && fit->blob.algo == CP_BLOB_NONE && !holds_sigconst(b))
		goto bad;
	b->algo = fit->blob.algo;
	b->vaddr = fit->blob.va;
	b->stored_length = fit->blob.consumed;
	b->length = fit->blob.length;
	b->str_bits = fit->arr[0].bits;
	b->bytes_bits = fit->narr == 2 ? fit->arr[1].bits : fit->arr[0].bits;
	b->code = fit->blob.code;
	return true;
bad:
	free(b->data);
	free(b->entry);
	memset(b, 0, sizeof(*b));
	return false;
}

static bool loops_run(const struct loops *l, uint64_t n)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (l->count[i] == n)
			return true;
	return false;
}

/* Whether nstr str constants agree with the decoder's loops: Cython 3.3
 * decodes them in a loop over their own length array, so where the loops
 * are known, nstr is one of their counts. */
static bool str_count_loops(const cp_scan *s, const struct loops *l, uint64_t nstr)
{
	return !cp_cython_at_least(s, 3, 3) || !l->known || loops_run(l, nstr);
}

/* Whether a fit's str count (split_str: its first array's) agrees with
 * the loops. clang places 3.3's bytes array right after the str one:
 * without this, a str array one entry longer and a bytes array one
 * shorter fit the same lengths. */
static bool loop_agrees(const struct search *q, const struct fit *fit)
{
	return str_count_loops(q->s, q->loops, fit->arr[0].n);
}

/* How much a fit says (load_fit's result on top: a fit whose str constants
 * name the module beats any that does not): a decoded stream beats an LZSS stream whose lengths
 * are immediates, which beats a plain literal that merely ends in a NUL;
 * then two arrays (3.3) over one, then a str count that a loop runs
 * (loop_agrees), then a fit whose entry count is a loop bound too, then
 * one whose arrays' counts are loop bounds as compared, then the fit that
 * explains more entries and more bytes. */
static uint64_t score(const struct search *q, const struct fit *fit, uint64_t len)
{
	uint64_t rank = fit->blob.algo == CP_BLOB_NONE ? 1 : fit->blob.algo == CP_BLOB_LZSS ? 2 : 3;
	uint64_t n = fit->ntail;
	int a;

	for (a = 0; a < fit->narr; a++)
		n += fit->arr[a].n;
	if (n > 0xfffff)
		n = 0xfffff;
	if (len > 0xffffff)
		len = 0xffffff;
	return rank << 60 | (uint64_t)(fit->narr == 2) << 59 | (uint64_t)loop_agrees(q, fit) << 58 |
	       (uint64_t)cp_frame_has_imm(q->f, n) << 57 |
	       (uint64_t)(fit->arr[0].exact && (fit->narr < 2 || fit->arr[1].exact)) << 56 |
	       n << 24 | len;
}

static void consider(const struct search *q, struct fit *fit, struct cp_blob *best, uint64_t *best_score)
{
	struct cp_blob b;
	uint64_t len = 0;
	size_t it = 0;
	const uint64_t named_bit = 1ull << 62;
	uint64_t sc;
	bool named;
	int a;

	for (a = 0; a < fit->narr; a++)
		len += fit->arr[a].sum;
	for (a = 0; a < (int)fit->ntail; a++)
		len += fit->tail[a].len;
	while (next_blob(q->s, q->f, q->st, q->nst, len, &it, &fit->blob)) {
		sc = score(q, fit, len);
		if ((sc | named_bit) <= *best_score || !load_fit(q->s, q->f, fit, &b, &named))
			continue;
		if (named)
			sc |= named_bit;
		if (sc <= *best_score) {
			free(b.data);
			free(b.entry);
			continue;
		}
		free(best->data);
		free(best->entry);
		*best = b;
		*best_score = sc;
	}
}

/* The constant-length decoding calls: entries whose loop the compiler
 * folded into calls (GCC: a one-entry loop; clang: the whole bytes loop,
 * unrolled). */
static size_t folded_calls(const struct cp_frame *f, struct cp_frame_arglen *out, size_t max)
{
	size_t i, n = 0;

	for (i = 0; i < f->narglens && n < max; i++)
		if (f->arglens[i].len)
			out[n++] = f->arglens[i];
	return n;
}

/* A fit as it is, and with each run of consecutive folded calls appended. */
static void consider_tails(const struct search *q, struct fit *fit, struct cp_blob *best, uint64_t *best_score)
{
	struct cp_frame_arglen calls[16];
	size_t n = folded_calls(q->f, calls, 16), from, k;

	fit->tail = NULL;
	fit->ntail = 0;
	consider(q, fit, best, best_score);
	for (from = 0; from < n; from++)
		for (k = 1; from + k <= n; k++) {
			fit->tail = calls + from;
			fit->ntail = k;
			consider(q, fit, best, best_score);
		}
}

/* Tries every fit of one function, keeping the best: two arrays (3.3) and
 * one (3.2). */
static bool search(const struct search *q, const struct cands *cs, struct cp_blob *best)
{
	uint64_t best_score = 0;
	struct fit fit;
	size_t i, j;

	memset(best, 0, sizeof(*best));
	memset(&fit, 0, sizeof(fit));
	if (cp_cython_at_least(q->s, 3, 3)) {
		fit.narr = 2;
		for (i = 0; i < cs->n; i++)
			for (j = 0; j < cs->n; j++) {
				if (cs->v[i].base == cs->v[j].base && cs->v[i].va == cs->v[j].va)
					continue;
				fit.arr[0] = cs->v[i];
				fit.arr[1] = cs->v[j];
				consider_tails(q, &fit, best, &best_score);
			}
	}
	fit.narr = 1;
	for (i = 0; i < cs->n; i++) {
		fit.arr[0] = cs->v[i];
		consider_tails(q, &fit, best, &best_score);
	}
	return best_score > 0;
}

/* clang unrolls 3.2's loop over the bytes entries into a call per entry,
 * the entry's length and offset immediates of it, and keeps the lengths in
 * the array too, where nothing reads them any more: where the function's
 * bytes-making calls, in order, carry exactly the lengths of the entries
 * after the str ones, those entries are folded into them (the calls'
 * immediates patched), their template cells kept (patched as well: what a
 * scan of the output reads). unrolled_at: whether the calls from the j-th
 * on are those entries'. */
static bool unrolled_at(const struct cp_frame *f, const struct cp_blob *b, size_t j)
{
	size_t k;

	for (k = b->nstr; k < b->nentries; k++, j++)
		if (j == f->narglens || !f->arglens[j].is_bytes || f->arglens[j].len != b->entry[k].length ||
		    !f->arglens[j].set || !f->arglens[j].ptr_set)
			return false;
	return true;
}

static void fold_unrolled(const struct cp_frame *f, struct cp_blob *b)
{
	size_t k, j;

	for (k = b->nstr; k < b->nentries; k++)
		if (b->entry[k].folded || !b->entry[k].cell_va)
			return;
	for (j = 0; b->nstr < b->nentries && j < f->narglens && !unrolled_at(f, b, j); j++)
		;
	if (b->nstr == b->nentries || j == f->narglens)
		return;
	for (k = b->nstr; k < b->nentries; k++, j++) {
		b->entry[k].cell_insn = f->arglens[j].set;
		b->entry[k].ptr_insn = f->arglens[j].ptr_set;
		b->entry[k].call_insn = f->arglens[j].insn;
		b->entry[k].folded = true;
	}
}

/* The counts of the loops of the function [start, end). */
static cp_status loop_counts(const cp_scan *s, uint64_t start, uint64_t end, struct loops *l, cp_error *err)
{
	cp_dis d = { NULL, NULL };
	uint64_t a, imm, count;
	unsigned len;
	bool full = false;
	cp_status st = cp_dis_open(&d, s->img, err);

	l->n = 0;
	for (a = start; !st && a < end; a += len ? len : 1) {
		len = cp_dis_size(&d, s->img, a);
		if (!cp_dis_loop_count(&d, s->img, a, &imm, &count) || loops_run(l, count))
			continue;
		if (l->n == sizeof(l->count) / sizeof(l->count[0]))
			full = true;
		else
			l->count[l->n++] = count;
	}
	cp_dis_close(&d);
	l->known = l->n > 0 && !full;
	return st;
}

/*
 * A blob whose str count no loop runs (str_count_loops; the bound one more
 * or one less than the array: a count that lies) decodes other strings
 * than the blob holds, and the module does not import as its blob says:
 * *ok false, and why says so.
 */
static void str_loop_runs(const cp_scan *s, const struct cp_blob *b, const struct loops *l, bool *ok, char *why,
			  size_t n)
{
	*ok = str_count_loops(s, l, b->nstr);
	if (!*ok)
		snprintf(why, n, "the string blob at %#llx holds %zu str constants, and no loop of its decoder runs "
			 "%zu times: a count that lies, so the module does not import as its blob says",
			 (unsigned long long)b->vaddr, b->nstr, b->nstr);
}

static void free_blob(struct cp_blob *b)
{
	free(b->data);
	free(b->entry);
}

/* Keeps b, decoded by the function at start. */
static cp_status add_blob(cp_scan *s, struct cp_blob *b, uint64_t start, cp_error *err)
{
	const struct cp_section *sec = cp_image_section_at(s->img, b->vaddr);

	b->func = start;
	b->section = sec ? sec->name : "?";
	b->offset = sec ? sec->offset + (b->vaddr - sec->addr) : 0;
	if (CP_GROW(s->blobs, s->capblobs, s->nblobs + 1)) {
		free_blob(b);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	}
	s->blobs[s->nblobs++] = *b;
	return CP_OK;
}

/* The blob the function at start decodes, kept in s; why says why one it
 * decodes was refused. */
static cp_status scan_function(cp_scan *s, uint64_t start, uint64_t end, char *why, size_t whyn, cp_error *err)
{
	struct cp_frame f;
	struct cands cs = { NULL, 0, 0 };
	struct stream *st = NULL;
	struct loops loops;
	struct search q = { s, &f, NULL, 0, &loops };
	struct cp_blob b;
	bool ok;
	cp_status rc = cp_scan_frame(s, start, end, &f, err);

	if (rc)
		return rc;
	rc = loop_counts(s, start, end, &loops, err);
	if (!rc && (build_cands(s->img, &f, &cs) || find_streams(s->img, &f, &st, &q.nst)))
		rc = cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	q.st = st;
	if (!rc && search(&q, &cs, &b)) {
		str_loop_runs(s, &b, &loops, &ok, why, whyn);
		if (ok) {
			fold_unrolled(&f, &b);
			rc = add_blob(s, &b, start, err);
		} else {
			free_blob(&b);
		}
	}
	free(cs.v);
	free(st);
	cp_frame_free(&f);
	return rc;
}

cp_status cp_scan_blobs(cp_scan *s, cp_error *err)
{
	uint64_t done[16];
	size_t ndone = 0, i, k;
	char why[sizeof(s->incomplete) - 64] = "";

	if (!cp_cython_at_least(s, 3, 2))
		return CP_OK;
	for (i = 0; i < s->ncalls; i++) {
		uint64_t start, end;
		cp_status st;

		if (!s->calls[i].name || strcmp(s->calls[i].name, "PyUnicode_DecodeUTF8") != 0 ||
		    !cp_image_function(s->img, s->calls[i].addr, &start, &end))
			continue;
		for (k = 0; k < ndone && done[k] != start; k++)
			;
		if (k < ndone || ndone == sizeof(done) / sizeof(done[0]))
			continue;
		done[ndone++] = start;
		st = scan_function(s, start, end, why, sizeof(why), err);
		if (st)
			return st;
	}
	if (s->nblobs)
		return CP_OK;
	if (why[0]) { /* a blob found and refused */
		if (!s->incomplete[0])
			snprintf(s->incomplete, sizeof(s->incomplete), "%s", why);
		return cp_scan_note(s, err, "%s; names inside it are not reported", why);
	}
	if (!s->incomplete[0])
		snprintf(s->incomplete, sizeof(s->incomplete), "Cython %s module whose string blob was not "
			 "recovered; the names inside it cannot be seen", s->cython);
	return cp_scan_note(s, err, "Cython %s module: no string blob was recovered; "
			    "names inside it are not reported", s->cython);
}

/* An import-signature constant: N signatures (an empty one repeats the one
 * before), then N names, NUL-separated, no NUL at the end. */
struct sigconst {
	size_t entry;
	char **piece;
	size_t npiece;
};

static void free_sigconst(struct sigconst *c)
{
	size_t i;

	for (i = 0; i < c->npiece; i++)
		free(c->piece[i]);
	free(c->piece);
}

static bool parse_sigconst(const uint8_t *d, uint64_t len, struct sigconst *c)
{
	uint64_t i, start = 0;
	size_t n = 1, k, half;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < len; i++)
		n += d[i] == 0;
	if (n < 2 || n % 2 || !len || d[0] == 0)
		return false;
	c->piece = calloc(n, sizeof(char *));
	if (!c->piece)
		return false;
	for (i = 0; i <= len; i++) {
		if (i < len && d[i] != 0)
			continue;
		c->piece[c->npiece] = cp_strndup((const char *)d + start, (size_t)(i - start));
		if (!c->piece[c->npiece++])
			goto bad;
		start = i + 1;
	}
	half = n / 2;
	for (k = half; k < n; k++)
		if (!cp_is_identifier(c->piece[k], strlen(c->piece[k])))
			goto bad;
	for (k = 0; k < half; k++)
		if (strchr(c->piece[k], '\n'))
			goto bad;
	return true;
bad:
	free_sigconst(c);
	return false;
}

bool cp_blob_sigconst_pairs(const uint8_t *d, uint64_t len,
			    bool (*fn)(void *ctx, const char *sig, const char *name), void *ctx)
{
	struct sigconst c;
	const char *sig = NULL;
	size_t k, half;
	bool ok = true;

	if (!parse_sigconst(d, len, &c))
		return false;
	half = c.npiece / 2;
	for (k = 0; ok && k < half; k++) {
		if (c.piece[k][0])
			sig = c.piece[k];
		ok = sig && fn(ctx, sig, c.piece[half + k]);
	}
	free_sigconst(&c);
	return ok;
}

/* The first load on the way from the block's import (the nearest after
 * its call that it falls through to), or NULL. Loads laid out in between
 * belong to other paths: GCC for aarch64 puts the previous import's error
 * path right after this import's jump to its success path. */
static const struct cp_block_load *first_load(const struct cp_import_block *b)
{
	const struct cp_block_load *first = NULL;
	size_t j;

	for (j = 0; j < b->nloads; j++)
		if (b->loads[j].clean && b->loads[j].at > b->call && (!first || b->loads[j].at < first->at))
			first = &b->loads[j];
	return first;
}

/*
 * Cython 3.2+ loads the constant from the module's string table right after
 * importing the provider: string_tab + 8 * entry. One import has one
 * constant. A block holds every load the walk met after its import, which
 * can run on into code after later imports, and into code laid out after
 * the import that runs elsewhere (GCC puts a provider's export function,
 * which loads the module's own export-list constant, after the import
 * code). So a constant is tied to the block whose first load reads it;
 * a constant no first load reads is only loosely the block's whose import
 * comes nearest before a load of it (limited-API builds import "types" just
 * before, and load other slots of the table later), among the blocks whose
 * first load reads no other constant: that block's constant is known. When
 * two loose constants would go to one block, which is its constant is not
 * known from the code as walked, and neither is given it (unsure).
 */
struct tie {
	const struct cp_import_block *blk; /* NULL: no import's, or unsure */
	bool first;                        /* blk's first load reads it */
	bool unsure;                       /* an import's, but which is not known */
};

static bool decompressor_import(const cp_scan *s, const struct cp_import_block *b);

/* Whether block b's first load reads the slot of one of the constants. */
static bool owned(const struct cp_import_block *b, uint64_t base, const struct sigconst *c, size_t nc)
{
	const struct cp_block_load *f = first_load(b);
	size_t m;

	for (m = 0; f && m < nc; m++)
		if (f->target == base + 8 * c[m].entry)
			return true;
	return false;
}

static const struct cp_import_block *first_reader(const cp_scan *s, uint64_t want)
{
	size_t i;

	for (i = 0; i < s->nblocks; i++) {
		const struct cp_block_load *f = first_load(&s->blocks[i]);

		if (!decompressor_import(s, &s->blocks[i]) && f && f->target == want)
			return &s->blocks[i];
	}
	return NULL;
}

static const struct cp_import_block *nearest_reader(const cp_scan *s, uint64_t base, const struct sigconst *c,
						    size_t nc, uint64_t want)
{
	const struct cp_import_block *best = NULL;
	uint64_t best_gap = UINT64_MAX;
	size_t i, j;

	for (i = 0; i < s->nblocks; i++) {
		const struct cp_import_block *b = &s->blocks[i];

		if (decompressor_import(s, b) || owned(b, base, c, nc))
			continue;
		for (j = 0; j < b->nloads; j++) {
			const struct cp_block_load *l = &b->loads[j];
			uint64_t gap = l->at > b->call ? l->at - b->call : UINT64_MAX - 1;

			if (l->clean && l->target == want && gap < best_gap) {
				best = b;
				best_gap = gap;
			}
		}
	}
	return best;
}

/* The tie of every constant (t: nc of them) for a string table at base. */
static void tie_all(const cp_scan *s, uint64_t base, const struct sigconst *c, size_t nc, struct tie *t)
{
	size_t m, j;

	for (m = 0; m < nc; m++) {
		t[m].blk = first_reader(s, base + 8 * c[m].entry);
		t[m].first = t[m].blk != NULL;
		t[m].unsure = false;
		if (!t[m].blk)
			t[m].blk = nearest_reader(s, base, c, nc, base + 8 * c[m].entry);
	}
	for (m = 0; m < nc; m++)
		for (j = m + 1; j < nc; j++)
			if (t[m].blk && !t[m].first && !t[j].first && t[j].blk == t[m].blk)
				t[m].unsure = t[j].unsure = true;
	for (m = 0; m < nc; m++)
		if (t[m].unsure)
			t[m].blk = NULL;
}

/* How well a table address fits: constants whose slot is the first load
 * after an import count before those some later load reads. */
static size_t fit(const cp_scan *s, uint64_t base, const struct sigconst *c, size_t nc, struct tie *t)
{
	size_t score = 0, m;

	tie_all(s, base, c, nc, t);
	for (m = 0; m < nc; m++)
		if (t[m].blk)
			score += t[m].first ? nc + 1 : 1;
	return score;
}

/* The import __Pyx_DecompressString makes (zlib, bz2, compression.zstd) to
 * decode a blob, inlined into the function that decodes it: the loads after
 * it read the module state, never an import-signature constant (in
 * cuda-bindings 12.9.10's driver, the base that mapped a constant onto one
 * of them gave 19 functions to "zlib"). */
static bool decompressor_import(const cp_scan *s, const struct cp_import_block *b)
{
	size_t i;

	for (i = 0; b->module && i < s->nblobs; i++) {
		const char *m = s->blobs[i].algo == CP_BLOB_ZLIB  ? "zlib"
				: s->blobs[i].algo == CP_BLOB_BZ2  ? "bz2"
				: s->blobs[i].algo == CP_BLOB_ZSTD ? "compression.zstd"
								   : NULL;
		uint64_t start, end;

		if (m && !strcmp(b->module, m) && cp_image_function(s->img, s->blobs[i].func, &start, &end) &&
		    b->call >= start && b->call < end)
			return true;
	}
	return false;
}

/* Whether the function that decodes the blob takes the address `base`
 * (lea): its loops store string i at string_tab + 8 * i, so GCC and clang
 * materialise the table's address there, unless it is reached through a
 * module-state pointer. */
static bool decoder_takes(const cp_scan *s, const struct cp_blob *b, uint64_t base)
{
	uint64_t start, end;
	size_t first, n, i;

	if (!cp_image_function(s->img, b->func, &start, &end))
		return false;
	n = cp_scan_xrefs_to(s, base, &first);
	for (i = first; i < first + n; i++)
		if (s->xrefs[i].addr >= start && s->xrefs[i].addr < end)
			return true;
	return false;
}

/* The table's address: the one base that maps the constants best onto
 * loads of import blocks, a base the decoding function takes before any
 * other. Scores alone can tie: cuda-core 0.4.2's cuda_utils holds three
 * signature constants, two of them for its exports (never loaded after an
 * import), and the base that maps the variable-export constant onto the
 * first load after the inlined `import zlib` scored as much as the table's. */
static uint64_t solve_table_base(const cp_scan *s, const struct cp_blob *b,
				 const struct sigconst *c, size_t nc, struct tie *t)
{
	/* a base that gives every constant (two or more) to the first load
	 * after an import is the table's, whatever the decoder takes: clang's
	 * exec function takes &table[1] to read entries from, not the table */
	const size_t perfect = nc >= 2 ? nc * (nc + 1) : SIZE_MAX;
	uint64_t best = 0;
	size_t bestscore = 0, i, j, k;
	bool best_taken = false;

	for (i = 0; i < s->nblocks; i++)
		for (j = 0; j < s->blocks[i].nloads && !decompressor_import(s, &s->blocks[i]); j++)
			for (k = 0; k < nc; k++) {
				uint64_t base = s->blocks[i].loads[j].target - 8 * c[k].entry;
				size_t score = fit(s, base, c, nc, t);
				bool taken;

				if (!score || bestscore == perfect || (best_taken && score <= bestscore && score != perfect) ||
				    base == best)
					continue;
				taken = decoder_takes(s, b, base);
				if (score == perfect || (taken && !best_taken) || (taken == best_taken && score > bestscore)) {
					bestscore = score;
					best = base;
					best_taken = taken;
				}
			}
	return best;
}

/* Cython's helpers that make Python-level imports: imported from another
 * module (a shared utility module), they make the imports there. */
static void note_shared_import(cp_scan *s, const struct sigconst *c, const struct cp_import_block *blk)
{
	size_t k;

	for (k = c->npiece / 2; k < c->npiece && !s->shared_import[0]; k++)
		if (!strncmp(c->piece[k], "__Pyx_Import", 12) || !strncmp(c->piece[k], "__Pyx__Import", 13))
			snprintf(s->shared_import, sizeof(s->shared_import), "%s",
				 blk && blk->module ? blk->module : "another module");
}

/* Whether the walk read anything from memory on the straight way from
 * b's import to the next call. */
static bool reads_before_a_call(const struct cp_import_block *b)
{
	return first_load(b) != NULL;
}

/*
 * A mapped module's import (a cimport) whose constant no load right after
 * it reads, while a constant is tied to no import: which functions come
 * from which module is then a guess (module state reads the string table
 * through a register), and the scan says it cannot vouch for them.
 *
 * Where some constant is tied (the module reads its table at fixed
 * addresses), an import that reads nothing before its next call imports no
 * functions: the table is writable, so its constant cannot be loaded before
 * the import's call, and __Pyx_ImportFunction needs it. Such an import is a
 * type-only cimport (cuda-core 1.2.2's `cimport cuda.bindings.driver`, whose
 * next call is __Pyx_ImportType), and a loose constant is then the module's
 * own export list, never its.
 */
static cp_status check_ties(cp_scan *s, const struct tie *t, size_t nc, cp_error *err)
{
	size_t i, k;
	bool loose = false, fixed = false;
	const char *mm;

	for (k = 0; k < nc; k++) {
		loose = loose || !t[k].first;
		fixed = fixed || t[k].first;
	}
	for (i = 0; loose && i < s->nblocks && !s->incomplete[0]; i++) {
		bool has = false;

		if (!s->blocks[i].module || cp_rules_name_layout(s->rules, s->blocks[i].module, &mm) < 0)
			continue;
		for (k = 0; k < nc && !has; k++)
			has = t[k].blk == &s->blocks[i] && t[k].first;
		if (has || (fixed && !reads_before_a_call(&s->blocks[i])))
			continue;
		snprintf(s->incomplete, sizeof(s->incomplete), "no import-signature constant is read right after "
			 "the import of %s, so which cimported functions are its is not known", s->blocks[i].module);
		return cp_scan_note(s, err, "%s", s->incomplete);
	}
	return CP_OK;
}

/* Which constant each state read is, for a string table at offset `table`
 * of the module state: the one whose slot the read's word is, each
 * constant read once (pick[i] for read i); false when one is none's. */
static bool state_fit(const struct sigconst *c, size_t nc, const int64_t *off, size_t nr, int64_t table,
		      size_t *pick)
{
	size_t i, m, j;

	for (i = 0; i < nr; i++) {
		for (m = 0; m < nc && off[i] != table + 8 * (int64_t)c[m].entry; m++)
			;
		for (j = 0; m < nc && j < i; j++)
			if (pick[j] == m)
				return false;
		if (m == nc)
			return false;
		pick[i] = m;
	}
	return true;
}

/*
 * Module state (scan_state.c): when no load at a fixed address ties any
 * constant, the imports of mapped modules that read a state word right
 * after them are given the constants whose table slots those words are,
 * for the one table offset that gives every such import a constant of its
 * own; with none or more than one, nothing is tied, and check_ties says
 * which functions are whose is not known.
 */
static cp_status tie_by_state(cp_scan *s, const struct sigconst *c, size_t nc, struct tie *t, cp_error *err)
{
	const struct cp_import_block **blk;
	int64_t *off;
	size_t *pick, *kept, i, k, nr = 0, found = 0;
	const char *mm;
	cp_dis d;
	cp_status st;

	for (k = 0; k < nc; k++)
		if (t[k].blk || t[k].unsure)
			return CP_OK; /* a table at a fixed address */
	if (!nc || cp_dis_open(&d, s->img, err))
		return nc ? err->code : CP_OK;
	blk = calloc(s->nblocks + 1, sizeof(*blk));
	off = calloc(s->nblocks + 1, sizeof(*off));
	pick = calloc(s->nblocks + 1, sizeof(*pick));
	kept = calloc(s->nblocks + 1, sizeof(*kept));
	st = blk && off && pick && kept ? CP_OK : cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	for (i = 0; !st && i < s->nblocks; i++)
		if (s->blocks[i].module && cp_rules_name_layout(s->rules, s->blocks[i].module, &mm) >= 0 &&
		    cp_scan_state_read(s, &d, s->blocks[i].call, &off[nr]))
			blk[nr++] = &s->blocks[i];
	cp_dis_close(&d);
	for (k = 0; !st && nr && k < nc; k++)
		if (state_fit(c, nc, off, nr, off[0] - 8 * (int64_t)c[k].entry, pick) && found++ == 0)
			memcpy(kept, pick, nr * sizeof(*kept));
	for (i = 0; !st && found == 1 && i < nr; i++) {
		t[kept[i]].blk = blk[i];
		t[kept[i]].first = true;
	}
	free(blk);
	free(off);
	free(pick);
	free(kept);
	return st;
}

/* The last address stored at frame offset off between two calls, when it
 * is a writable one. */
static bool slot_store(const cp_scan *s, const struct cp_frame *f, int64_t off, uint64_t after, uint64_t before,
		       uint64_t *va)
{
	size_t i;
	bool have = false;
	uint64_t v = 0;

	for (i = 0; i < f->nastores; i++)
		if (f->astores[i].off == off && f->astores[i].insn > after && f->astores[i].insn < before) {
			v = f->astores[i].va;
			have = true;
		}
	if (!have || !cp_scan_is_data_slot(s, v))
		return false;
	if (va)
		*va = v;
	return true;
}

/* Where the array whose first entry store a made ends its life: the next
 * store to that entry's frame offset (the frame reused for something
 * else), or before. */
static uint64_t array_until(const struct cp_frame *f, const struct cp_frame_astore *a, uint64_t before)
{
	size_t i;

	for (i = 0; i < f->nastores; i++)
		if (f->astores[i].off == a->off && f->astores[i].insn > a->insn && f->astores[i].insn < before)
			before = f->astores[i].insn;
	return before;
}

/*
 * Where a tied constant's names bind, when no symbol says (a stripped
 * module): Cython 3.2+ passes `{&slot_0, ..., &slot_n-1, NULL}`, a local
 * array it builds right after the import, in the order of the names. The
 * slots are the one run of n consecutive 8-byte frame stores of writable
 * addresses made between this import and the next one, each entry the
 * last stored before the frame's first entry is stored to again (GCC
 * reuses the frame: cuda-core 1.2.2's cp314 _memory_pool writes function
 * addresses over it later); none when there is not exactly one such run.
 */
static cp_status pointer_slots(cp_scan *s, const struct cp_import_block *blk, size_t n, uint64_t *slots,
			       bool *found, cp_error *err)
{
	uint64_t start, end, next = UINT64_MAX, *run;
	struct cp_frame f;
	size_t i, k, runs = 0;
	cp_status st;

	*found = false;
	if (!blk || !n || !cp_image_function(s->img, blk->call, &start, &end))
		return CP_OK;
	for (i = 0; i < s->nblocks; i++)
		if (s->blocks[i].call > blk->call && s->blocks[i].call < next)
			next = s->blocks[i].call;
	run = malloc((n + 1) * sizeof(*run));
	if (!run)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	st = cp_scan_frame(s, start, end, &f, err);
	if (st) {
		free(run);
		return st;
	}
	for (i = 0; i < f.nastores; i++) {
		const struct cp_frame_astore *a = &f.astores[i];
		uint64_t until;
		size_t m = 0;

		if (a->insn <= blk->call || a->insn >= next)
			continue;
		until = array_until(&f, a, next);
		/* the first of a run: nothing slot-like stored right before it */
		if (slot_store(s, &f, a->off - 8, blk->call, until, NULL))
			continue;
		for (k = 0; k <= n && slot_store(s, &f, a->off + 8 * (int64_t)k, blk->call, until, &run[m]); k++)
			m++;
		if (m != n)
			continue;
		if (runs++ == 0)
			memcpy(slots, run, n * sizeof(*slots));
		else if (memcmp(slots, run, n * sizeof(*slots)))
			runs = 2;
	}
	cp_frame_free(&f);
	free(run);
	*found = runs == 1;
	return CP_OK;
}

static cp_status emit_sigconst(cp_scan *s, size_t bi, const struct sigconst *c, const struct tie *t,
			       cp_error *err)
{
	const struct cp_import_block *blk = t->blk;
	struct cp_blob *b = &s->blobs[bi];
	struct cp_blob_entry *e = &b->entry[c->entry];
	size_t half = c->npiece / 2, k;
	const char *sig = NULL;
	struct cp_loc loc = { (int)bi, b->section, 0, e->offset, e->length };
	uint64_t sites[2] = { b->code, e->cell_insn };
	cp_status st;

	uint64_t *ptrs = calloc(half ? half : 1, sizeof(*ptrs));
	bool have_ptrs = false;

	if (!ptrs)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	if (blk)
		e->import_call = blk->call;
	e->import_unsure = t->unsure;
	note_shared_import(s, c, blk);
	st = pointer_slots(s, blk, half, ptrs, &have_ptrs, err);
	for (k = 0; !st && k < half; k++) {
		const char *module = blk ? blk->module : NULL;
		const char *mm;
		uint64_t slot;

		if (*c->piece[k])
			sig = c->piece[k];
		if (!module && cp_rules_signature_layout(s->rules, sig, &mm) >= 0)
			module = mm;
		slot = module ? cp_scan_slot_symbol(s, module, c->piece[half + k], !strchr(sig, '(')) : 0;
		if (!slot && module && have_ptrs)
			slot = ptrs[k];
		st = cp_scan_add_import(s, module, c->piece[half + k], sig, slot, &loc, sites, e->cell_insn ? 2 : 1,
					err);
	}
	free(ptrs);
	return st;
}

static cp_status add_blob_ref(cp_scan *s, size_t bi, size_t k, enum cp_ref_kind kind,
			      const char *module, int layout, const char *value, cp_error *err)
{
	const struct cp_blob *b = &s->blobs[bi];
	const struct cp_blob_entry *e = &b->entry[k];
	struct cp_ref *r = cp_scan_add_ref(s, kind, err);
	struct cp_site site;

	if (!r)
		return err->code;
	r->layout = layout;
	r->module = strdup(module);
	r->value = strdup(value);
	r->loc.blob = (int)bi;
	r->loc.section = b->section;
	r->loc.offset = e->offset;
	r->loc.length = e->length;
	if (!r->module || !r->value)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	memset(&site, 0, sizeof(site));
	site.kind = CP_SITE_INDEX;
	site.addr = e->cell_insn;
	site.len_addr = e->cell_va;
	site.detail = (uint32_t)k;
	site.bits = (uint8_t)(e->is_bytes ? b->bytes_bits : b->str_bits);
	if (cp_ref_add_site(r, &site, err))
		return err->code;
	cp_scan_code_site(b->code, &site);
	return cp_ref_add_site(r, &site, err);
}

/* The layout of a mapped module named inside text (on name boundaries, as
 * the string search has them), with the module in *module; -1 if none. */
static int prose_layout(const cp_scan *s, const char *text, size_t n, const char **module)
{
	size_t i, len;
	int k;

	for (i = 0; i < s->rules->nmod; i++)
		for (k = 0; k < 2; k++) {
			const char *m = s->rules->mod[i].name[k], *p = text, *hit;

			len = strlen(m);
			while ((hit = memmem(p, n - (size_t)(p - text), m, len)) != NULL) {
				if (cp_name_on_boundary(text, n, (size_t)(hit - text), len)) {
					*module = m;
					return s->rules->mod[i].layout[k];
				}
				p = hit + 1;
			}
		}
	return -1;
}

static cp_status blob_refs(cp_scan *s, size_t bi, cp_error *err)
{
	struct cp_blob *b = &s->blobs[bi];
	struct sigconst *consts = NULL;
	struct tie *ties = NULL;
	size_t nc = 0, cap = 0, k;
	uint64_t base;
	cp_status st = CP_OK;

	for (k = 0; !st && k < b->nentries; k++) {
		const struct cp_blob_entry *e = &b->entry[k];
		char *v = cp_strndup((const char *)b->data + e->offset, e->length);
		const char *module;
		int lay;

		if (!v)
			return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
		if (!e->is_bytes && (lay = cp_rules_name_layout(s->rules, v, &module)) >= 0)
			st = add_blob_ref(s, bi, k, CP_K_PYIMPORT, module, lay, v, err);
		else if (!e->is_bytes && (lay = cp_rules_unmapped_layout(s->rules, v, strlen(v), &module)) >= 0)
			st = add_blob_ref(s, bi, k, CP_K_UNMAPPED, v, lay, v, err);
		else if (e->is_bytes && (lay = cp_rules_signature_layout(s->rules, v, &module)) >= 0)
			st = add_blob_ref(s, bi, k, CP_K_SIGNATURE, module, lay, v, err);
		else if (!e->is_bytes && (lay = prose_layout(s, v, strlen(v), &module)) >= 0)
			/* any other text naming a module: rewritten as literals are */
			st = add_blob_ref(s, bi, k, CP_K_STRING, module, lay, v, err);
		if (!st && e->is_bytes) {
			if (CP_GROW(consts, cap, nc + 1)) {
				st = cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
			} else if (parse_sigconst(b->data + e->offset, e->length, &consts[nc])) {
				consts[nc++].entry = k;
			} else if (cp_rules_signature_layout(s->rules, v, &module) < 0 &&
				   (lay = prose_layout(s, (const char *)b->data + e->offset, e->length, &module)) >= 0) {
				st = add_blob_ref(s, bi, k, CP_K_STRING, module, lay, v, err);
			}
		}
		free(v);
		if (st)
			break;
	}
	if (!st && !(ties = calloc(nc ? nc : 1, sizeof(*ties))))
		st = cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	base = st ? 0 : solve_table_base(s, b, consts, nc, ties);
	if (!st) {
		tie_all(s, base, consts, nc, ties);
		st = tie_by_state(s, consts, nc, ties, err);
	}
	if (!st)
		st = check_ties(s, ties, nc, err);
	for (k = 0; !st && k < nc; k++)
		st = emit_sigconst(s, bi, &consts[k], &ties[k], err);
	for (k = 0; k < nc; k++)
		free_sigconst(&consts[k]);
	free(consts);
	free(ties);
	return st;
}

cp_status cp_scan_blob_refs(cp_scan *s, cp_error *err)
{
	size_t i;
	cp_status st;

	for (i = 0; i < s->nblobs; i++) {
		st = blob_refs(s, i, err);
		if (st)
			return st;
	}
	return CP_OK;
}
