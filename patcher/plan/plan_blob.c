/*
 * plan_blob.c - retargeting names inside a Cython 3.2+ string blob.
 *
 * The blob is rebuilt with the new names, encoded again with its own
 * algorithm and appended to the new segment; the instruction that loads it
 * is pointed at the copy. What the module knows about the blob's shape is
 * updated with it: the length of every entry that changed (an immediate in
 * code, a word of a .rodata template, or the immediate of a call the
 * compiler folded it into), the stored and decoded lengths the decoder
 * checks (immediates of the decoding function), and for an import-signature
 * constant whose signatures change length, the offset of its names (an
 * immediate of its import code).
 */
#include "plan/plan_internal.h"
#include "util/error.h"
#include "arch/frame.h"

#include <stdlib.h>
#include <string.h>

#define PYBYTES_SVAL 32 /* offsetof(PyBytesObject, ob_sval) on 64-bit CPython */

struct cp_blob_plan {
	uint8_t **val;  /* new bytes per entry, NULL while unchanged */
	size_t *len;
	bool dirty;
};

static const struct cp_blob *blob_of(const struct planner *pl, int b)
{
	return &pl->scan->blobs[b];
}

cp_status cp_plan_blob_begin(struct planner *pl)
{
	size_t i, n = pl->scan->nblobs;

	pl->blobs = calloc(n ? n : 1, sizeof(*pl->blobs));
	if (!pl->blobs)
		return cp_plan_oom(pl);
	for (i = 0; i < n; i++) {
		size_t k = blob_of(pl, (int)i)->nentries;

		pl->blobs[i].val = calloc(k ? k : 1, sizeof(uint8_t *));
		pl->blobs[i].len = calloc(k ? k : 1, sizeof(size_t));
		if (!pl->blobs[i].val || !pl->blobs[i].len)
			return cp_plan_oom(pl);
	}
	return CP_OK;
}

void cp_plan_blob_free(struct planner *pl)
{
	size_t i, k;

	for (i = 0; pl->blobs && i < pl->scan->nblobs; i++) {
		for (k = 0; pl->blobs[i].val && k < blob_of(pl, (int)i)->nentries; k++)
			free(pl->blobs[i].val[k]);
		free(pl->blobs[i].val);
		free(pl->blobs[i].len);
	}
	free(pl->blobs);
	pl->blobs = NULL;
}

static long find_entry(const struct cp_blob *b, const struct cp_loc *loc)
{
	size_t k;

	for (k = 0; k < b->nentries; k++)
		if (b->entry[k].offset == loc->offset && b->entry[k].length == loc->length)
			return (long)k;
	return -1;
}

/* The entry's bytes as planned so far. */
static const uint8_t *current(const struct planner *pl, int b, size_t k, size_t *len)
{
	const struct cp_blob_plan *bp = &pl->blobs[b];

	if (bp->val[k]) {
		*len = bp->len[k];
		return bp->val[k];
	}
	*len = blob_of(pl, b)->entry[k].length;
	return blob_of(pl, b)->data + blob_of(pl, b)->entry[k].offset;
}

static cp_status set_entry(struct planner *pl, int b, size_t k, const void *bytes, size_t len)
{
	struct cp_blob_plan *bp = &pl->blobs[b];
	uint8_t *copy = malloc(len ? len : 1);

	if (!copy)
		return cp_plan_oom(pl);
	memcpy(copy, bytes, len);
	free(bp->val[k]);
	bp->val[k] = copy;
	bp->len[k] = len;
	bp->dirty = true;
	pl->p->nchanged++;
	return CP_OK;
}

/* An import-signature constant (N signatures, then N names): rewrites the
 * signatures; *region and *new_region are where the names start before and
 * after. */
static cp_status remap_sigconst(struct planner *pl, const uint8_t *d, size_t n, uint8_t *out,
				size_t cap, size_t *outlen, size_t *region, size_t *new_region)
{
	size_t pieces = 1, i, half, start = 0, o = 0, k = 0;

	for (i = 0; i < n; i++)
		pieces += d[i] == 0;
	half = pieces / 2;
	*region = 0;
	for (i = 0; i <= n && k < half; i++) {
		size_t plen;

		if (i < n && d[i] != 0)
			continue;
		if (cp_plan_map_text(pl, (const char *)d + start, i - start, (char *)out + o, cap - o, &plen) < 0)
			return cp_fail(pl->err, CP_E_INTERNAL, "%s: a signature is too long", pl->img->path);
		o += plen + 1; /* keeps the NUL map_text wrote */
		*region = i + 1;
		start = i + 1;
		k++;
	}
	*new_region = o;
	if (o + (n - *region) > cap)
		return cp_fail(pl->err, CP_E_INTERNAL, "%s: a signature constant is too long", pl->img->path);
	memcpy(out + o, d + *region, n - *region);
	*outlen = o + (n - *region);
	return CP_OK;
}

/* Cython computes the names' address as signatures + region (after the
 * PyBytes data offset): an add or lea with that immediate in the import
 * code that follows PyImport_ImportModule. */
static cp_status patch_field(struct planner *pl, uint64_t insn, uint8_t off, uint8_t size,
			     int64_t newv, const char *what)
{
	uint64_t foff;
	uint8_t bytes[8];

	if ((size != 1 && size != 4) || !cp_plan_field(pl, insn, off, size, newv, bytes, &foff)) {
		pl->inexpressible = true;
		return cp_fail(pl->err, CP_E_INPUT, "%s: %lld does not fit the %u-byte field of the "
			       "instruction at %#llx (%s); re-encoding it would move code",
			       pl->img->path, (long long)newv, size, (unsigned long long)insn, what);
	}
	return cp_plan_add_edit(pl, CP_EDIT_IMM, foff, bytes, size, insn, 0, what);
}

/* Whether the instruction at a reads, writes or takes the address of a
 * stack slot: the offset of a frame slot, however equal to the names'
 * offset, is none (random consumer seed 1138: `mov [rsp + 0x70], r10`
 * ends the pointer array right after a cydriver import whose names begin
 * at 0x70, and took the patch meant for `add rbp, 0x90`). */
static bool stack_operand(struct planner *pl, uint64_t a)
{
	struct cp_insn_facts f;
	const struct cp_stack_facts *st = &f.stack;

	if (!cp_dis_at(&pl->dis, pl->img, a))
		return false;
	cp_insn_facts(&pl->dis, &f);
	return st->spill_src >= 0 || st->fill_dst >= 0 || st->write || st->addr_taken;
}

static cp_status move_names(struct planner *pl, uint64_t call, size_t region, size_t new_region)
{
	static const char what[] = "offset of the cimported names in their signature constant";
	uint64_t start, end, a;
	unsigned len;

	if (!call || !cp_image_function(pl->img, call, &start, &end))
		return cp_fail(pl->err, CP_E_INPUT,
			       "%s: signatures of a cimported module change, and its import code was not found",
			       pl->img->path);
	for (a = call; a < end && a < call + 4096; a += len) {
		uint8_t off, size;
		int64_t v;

		if ((cp_dis_immediate(&pl->dis, pl->img, a, &off, &size, &v) ||
		     cp_dis_displacement(&pl->dis, pl->img, a, &off, &size, &v)) &&
		    (v == (int64_t)(region + PYBYTES_SVAL) || v == (int64_t)region) && !stack_operand(pl, a))
			return patch_field(pl, a, off, size,
					   (int64_t)new_region + (v == (int64_t)region ? 0 : PYBYTES_SVAL), what);
		len = cp_dis_size(&pl->dis, pl->img, a);
		if (!len)
			break;
	}
	return cp_fail(pl->err, CP_E_INPUT,
		       "%s: signatures of a cimported module change from %zu to %zu bytes, and no immediate "
		       "for the names' offset follows its import at %#llx",
		       pl->img->path, region, new_region, (unsigned long long)call);
}

static cp_status plan_sigconst(struct planner *pl, int b, size_t k)
{
	const struct cp_blob_entry *e = &blob_of(pl, b)->entry[k];
	size_t n, outlen = 0, region = 0, new_region = 0;
	const uint8_t *d = current(pl, b, k, &n);
	uint8_t *out = malloc(n * 2 + 4096);
	cp_status st;

	if (!out)
		return cp_plan_oom(pl);
	st = remap_sigconst(pl, d, n, out, n * 2 + 4096, &outlen, &region, &new_region);
	if (!st && new_region != region)
		st = move_names(pl, e->import_call, region, new_region);
	if (!st && (outlen != n || memcmp(out, d, n)))
		st = set_entry(pl, b, k, out, outlen);
	free(out);
	return st;
}

cp_status cp_plan_blob_ref(struct planner *pl, const struct cp_ref *r)
{
	int b = r->loc.blob;
	long k = find_entry(blob_of(pl, b), &r->loc);
	char text[8192];
	size_t n, outlen;
	const uint8_t *d;
	int count;

	if (k < 0)
		return cp_fail(pl->err, CP_E_INTERNAL, "%s: a blob reference matches no entry", pl->img->path);
	if (r->kind == CP_K_FUNCTION || r->kind == CP_K_VARIABLE || r->kind == CP_K_TYPE)
		return CP_OK; /* their signature references carry the change */
	if (r->kind == CP_K_SIGNATURE && blob_of(pl, b)->entry[k].import_call)
		return plan_sigconst(pl, b, (size_t)k);
	d = current(pl, b, (size_t)k, &n);
	count = cp_plan_map_text(pl, (const char *)d, n, text, sizeof(text), &outlen);
	if (count < 0)
		return cp_fail(pl->err, CP_E_INPUT, "%s: a blob entry is too long to rewrite", pl->img->path);
	if (count == 0)
		return r->kind == CP_K_PYIMPORT && !pl->blobs[b].val[k] && (pl->inexpressible = true)
			       ? cp_fail(pl->err, CP_E_INPUT,
					 "%s: the Python-level name \"%s\" (blob entry %ld) names a package of "
					 "layout %s outside a from-import; strings alone cannot retarget it",
					 pl->img->path, r->value, k, pl->rules->layout[r->layout])
			       : CP_OK;
	return set_entry(pl, b, (size_t)k, text, outlen);
}

cp_status cp_plan_blob_from_import(struct planner *pl, const struct cp_ref *r, const char *parent,
				   const char *leaf)
{
	const struct cp_loc *locs[2] = { &r->package_loc, &r->loc };
	const char *vals[2] = { parent, leaf };
	int i;

	for (i = 0; i < 2; i++) {
		long k;
		cp_status st;

		if (locs[i]->blob < 0)
			return cp_fail(pl->err, CP_E_INPUT, "%s: from %s import %s: the names live apart "
				       "(blob and literal)", pl->img->path, r->package, r->name);
		k = find_entry(blob_of(pl, locs[i]->blob), locs[i]);
		if (k < 0)
			return cp_fail(pl->err, CP_E_INTERNAL, "%s: a blob name matches no entry", pl->img->path);
		st = set_entry(pl, locs[i]->blob, (size_t)k, vals[i], strlen(vals[i]));
		if (st)
			return st;
	}
	return CP_OK;
}

/* --- lengths ------------------------------------------------------------ */

static cp_status patch_imm(struct planner *pl, uint64_t insn, uint64_t mask, uint64_t oldv,
			   uint64_t newv, const char *what)
{
	uint8_t off, size, bytes[8];
	int64_t v, nv;
	uint64_t foff;
	bool byte_op;

	if (!cp_dis_immediate(&pl->dis, pl->img, insn, &off, &size, &v))
		return cp_fail(pl->err, CP_E_INPUT, "%s: the instruction at %#llx holds no immediate for length %llu",
			       pl->img->path, (unsigned long long)insn, (unsigned long long)oldv);
	/* `or al, 0xb3` holds the low 8 bits of a wider field (whose bit 8 an
	 * `and ax, 0xfe00` before it cleared): its immediate is not extended */
	byte_op = size == 1 && cp_dis_operand_size(&pl->dis, pl->img, insn) == 1;
	if (byte_op) {
		mask &= 0xff;
		v = (int64_t)(uint8_t)v;
	}
	if (((uint64_t)v & mask) != oldv)
		return cp_fail(pl->err, CP_E_INPUT, "%s: the instruction at %#llx does not hold length %llu "
			       "as the scan found", pl->img->path, (unsigned long long)insn,
			       (unsigned long long)oldv);
	if (newv & ~mask)
		return cp_fail(pl->err, CP_E_INPUT, "%s: length %llu does not fit the bits the instruction at %#llx "
			       "sets", pl->img->path, (unsigned long long)newv, (unsigned long long)insn);
	nv = (int64_t)(((uint64_t)v & ~mask) | newv);
	if (size == 1 && (mask <= 0xff || byte_op)) /* an 8-bit field stored whole, or or'ed in */
		nv = (int8_t)(uint8_t)nv;
	if (!cp_plan_field(pl, insn, off, size, nv, bytes, &foff))
		return cp_fail(pl->err, CP_E_INPUT, "%s: length %llu does not fit the %u-byte immediate at %#llx",
			       pl->img->path, (unsigned long long)newv, size, (unsigned long long)insn);
	return cp_plan_add_edit(pl, CP_EDIT_IMM, foff, bytes, size, insn, 0, what);
}

/* The entry's length in its template word. */
static cp_status patch_cell(struct planner *pl, const struct cp_blob_entry *e, uint64_t mask, size_t newlen,
			    const char *what)
{
	uint64_t off;
	const uint8_t *p;
	uint32_t w;

	if (!cp_plan_file_off(pl, e->cell_va, 4, &off) || !(p = cp_image_bytes(pl->img, off, 4)))
		return cp_fail(pl->err, CP_E_INPUT, "%s: a length template lies outside the file", pl->img->path);
	memcpy(&w, p, 4);
	w = (uint32_t)((w & ~mask) | newlen);
	return cp_plan_add_edit(pl, CP_EDIT_WORD, off, &w, 4, e->cell_va, 0, what);
}

static cp_status patch_entry_length(struct planner *pl, const struct cp_blob *b, size_t k, size_t newlen)
{
	const struct cp_blob_entry *e = &b->entry[k];
	unsigned bits = e->is_bytes ? b->bytes_bits : b->str_bits;
	uint64_t mask = bits >= 32 ? 0xffffffffull : (1ull << bits) - 1;
	char what[96];
	cp_status st;

	snprintf(what, sizeof(what), "length of blob entry %zu: %llu -> %zu", k,
		 (unsigned long long)e->length, newlen);
	if (e->folded) {
		st = patch_imm(pl, e->cell_insn, 0xffffffffull, e->length, newlen, what);
		if (st || !e->cell_va)
			return st;
	}
	if (newlen > mask)
		return cp_fail(pl->err, CP_E_INPUT,
			       "%s: blob entry %zu needs length %zu, and its %u-bit length field holds at most %llu",
			       pl->img->path, k, newlen, bits, (unsigned long long)mask);
	if (e->cell_va)
		return patch_cell(pl, e, mask, newlen, what);
	return patch_imm(pl, e->cell_insn, mask, e->length, newlen, what);
}

/* --- the decoder's checks ---------------------------------------------- */

/*
 * Where the blob's lengths reach its decoder, found by data flow, never by
 * value alone: a module-exec frame of 248 bytes (`sub rsp, 0xf8`) and an
 * int constant (`mov edi, 0xd3; call PyLong_FromLong`) have both equalled a
 * blob's length, and rewriting them crashed CPython or changed a constant.
 *
 * - zlib, bz2, zstd: the stored length is the length argument of
 *   PyMemoryView_FromMemory(s, len, flags), passed by the decoding function
 *   itself (__Pyx_DecompressString inlined), or by a function it calls with
 *   the length as an argument (-O0).
 * - LZSS: the decoded length is the size of the output buffer,
 *   PyBytes_FromStringAndSize(NULL, len), reached the same way. The stored
 *   length (the input consumed) and the last index are, when the decoder is
 *   a function of its own (__Pyx_DecompressString_LZSS(s, 655, 857), -O0),
 *   its arguments that it compares; when it is inlined, the `cmp reg, imm`
 *   of its decode loop, between the allocation and the next call to
 *   anything but memcpy/memmove/PyBytes_AsString or a function that calls
 *   nothing that returns (PyBytes_AS_STRING out of line at -Os, its
 *   assert's stub at -O2).
 *
 * Each site is the instruction whose immediate made the argument register's
 * value (cp_frame_call.arg_imm).
 */
struct len_sites {
	struct { uint64_t insn, oldv, newv; } v[16];
	int n;
	bool full;
};

static void add_site(struct len_sites *ls, uint64_t insn, uint64_t oldv, uint64_t newv)
{
	int i;

	for (i = 0; i < ls->n; i++)
		if (ls->v[i].insn == insn)
			return;
	if (ls->n == (int)(sizeof(ls->v) / sizeof(ls->v[0]))) {
		ls->full = true;
		return;
	}
	ls->v[ls->n].insn = insn;
	ls->v[ls->n].oldv = oldv;
	ls->v[ls->n++].newv = newv;
}

/* Whether call c is `name` with argument `arg` holding v (and a NULL first
 * argument when null_first: an allocation). */
static bool call_is(const struct cp_frame_call *c, const char *name, int arg, uint64_t v, bool null_first)
{
	return c->name && !strcmp(c->name, name) && (c->known >> arg & 1) && c->arg[arg] == v &&
	       (!null_first || ((c->known & 1) && c->arg[0] == 0));
}

static bool has_cmpval(const struct cp_frame *f, uint64_t v)
{
	size_t i;

	for (i = 0; i < f->ncmpvals; i++)
		if (f->cmpvals[i] == v)
			return true;
	return false;
}

/* What a length needs: the call it reaches and which of its arguments. */
struct sink {
	const char *name;
	int arg;
	bool null_first;
	uint64_t oldv, newv;
};

/* A call of the decoder to a function of the module that passes the length
 * on to the sink: its argument's immediate, and (LZSS) the other
 * arguments it compares, which hold `others` values. */
static cp_status through_callee(struct planner *pl, const struct cp_frame_call *c, const struct sink *sk,
				const uint64_t *oldo, const uint64_t *newo, int nothers,
				struct len_sites *ls, bool *hit)
{
	uint64_t start, end;
	struct cp_frame cf;
	cp_status st;
	size_t k;
	int i, j;

	for (i = 0; i < CP_MAX_ARGS; i++) {
		if (!(c->known >> i & 1) || c->arg[i] != sk->oldv || !c->arg_imm[i])
			continue;
		if (!cp_image_function(pl->img, c->target, &start, &end) || start != c->target)
			return CP_OK;
		st = cp_frame_eval_callee(pl->img, start, end, &cf, pl->err);
		if (st)
			return st;
		for (k = 0; k < cf.ncalls; k++)
			if (call_is(&cf.calls[k], sk->name, sk->arg, CP_FRAME_ARG(i), sk->null_first))
				break;
		if (k < cf.ncalls) {
			*hit = true;
			add_site(ls, c->arg_imm[i], sk->oldv, sk->newv);
			for (j = 0; j < CP_MAX_ARGS; j++) {
				int o;

				if (j == i || !(c->known >> j & 1) || !c->arg_imm[j] ||
				    !has_cmpval(&cf, CP_FRAME_ARG(j)))
					continue;
				for (o = 0; o < nothers; o++)
					if (c->arg[j] == oldo[o])
						add_site(ls, c->arg_imm[j], oldo[o], newo[o]);
			}
		}
		cp_frame_free(&cf);
	}
	return CP_OK;
}

/* Whether the inlined LZSS decoder goes on past a call: the match copy
 * (memcpy/memmove), the buffer (PyBytes_AsString, limited API) or a
 * function that calls nothing that returns (cp_dis_calls_nothing). */
static bool decoder_call(struct planner *pl, const struct cp_insn_facts *f)
{
	const char *name;

	if (f->direct && cp_dis_calls_nothing(&pl->dis, pl->img, f->target))
		return true; /* PyBytes_AS_STRING, kept out of line at -O0 */
	name = cp_insn_callee(pl->img, f);
	return name && (!strcmp(name, "memcpy") || !strcmp(name, "memmove") || !strcmp(name, "PyBytes_AsString"));
}

/* The value compared at a, if it is one of the old values, as a site. */
static void check_site(struct planner *pl, uint64_t a, const uint64_t *oldo, const uint64_t *newo, int nothers,
		       struct len_sites *ls)
{
	uint8_t off, size;
	int64_t v;
	int o;

	if (!cp_insn_is_cmp_reg_imm(&pl->dis) || !cp_insn_immediate(&pl->dis, &off, &size, &v))
		return;
	for (o = 0; o < nothers; o++)
		if ((uint64_t)v == oldo[o])
			add_site(ls, a, oldo[o], newo[o]);
}

/* The inlined LZSS loop's checks: every `cmp reg, imm` of the function
 * [start, end) that control reaches from the allocation call at `from`
 * without another call than decoder_call's. The branches are followed, not
 * the addresses: clang -Os lays the check of the input consumed out past
 * the loop's error paths. Too many branches to follow fill ls (a refusal). */
static cp_status loop_checks(struct planner *pl, uint64_t start, uint64_t end, uint64_t from, const uint64_t *oldo,
			     const uint64_t *newo, int nothers, struct len_sites *ls)
{
	uint64_t todo[64], a;
	size_t ntodo = 0;
	uint8_t *seen = calloc((size_t)((end - start + 7) / 8), 1);
	struct cp_insn_facts f;
	unsigned len;

	if (!seen)
		return cp_plan_oom(pl);
	todo[ntodo++] = from + cp_dis_size(&pl->dis, pl->img, from);
	while (ntodo) {
		for (a = todo[--ntodo]; a >= start && a < end && !(seen[(a - start) / 8] >> (a - start) % 8 & 1);) {
			seen[(a - start) / 8] |= (uint8_t)(1u << (a - start) % 8);
			if (!cp_dis_at(&pl->dis, pl->img, a) || !(len = cp_insn_size(&pl->dis)))
				break;
			cp_insn_flow(&pl->dis, &f);
			check_site(pl, a, oldo, newo, nothers, ls);
			if (f.flow == CP_FLOW_COND && f.direct && ntodo < sizeof(todo) / sizeof(todo[0]))
				todo[ntodo++] = f.target;
			else if (f.flow == CP_FLOW_COND)
				ls->full = true;
			if (f.flow == CP_FLOW_JUMP && f.direct)
				a = f.target;
			else if (f.flow == CP_FLOW_NEXT || f.flow == CP_FLOW_COND ||
				 (f.flow == CP_FLOW_CALL && decoder_call(pl, &f)))
				a += len;
			else
				break;
		}
	}
	free(seen);
	return CP_OK;
}

/* What the blob's lengths must reach: the sink's argument and, for LZSS,
 * the other values its decoder compares (input consumed, last index,
 * output length), old and new. */
struct totals {
	struct sink sk;
	uint64_t oldo[3], newo[3];
	int nothers;
};

static void make_totals(const struct cp_blob *b, uint64_t newlen, uint64_t newstored, struct totals *t)
{
	memset(t, 0, sizeof(*t));
	t->sk.arg = 1;
	if (b->algo == CP_BLOB_LZSS) {
		t->sk.name = "PyBytes_FromStringAndSize";
		t->sk.null_first = true;
		t->sk.oldv = b->length;
		t->sk.newv = newlen;
		t->oldo[t->nothers] = b->stored_length;
		t->newo[t->nothers++] = newstored;
		t->oldo[t->nothers] = b->length - 1;
		t->newo[t->nothers++] = newlen - 1;
		t->oldo[t->nothers] = b->length;
		t->newo[t->nothers++] = newlen;
	} else {
		t->sk.name = "PyMemoryView_FromMemory";
		t->sk.null_first = false;
		t->sk.oldv = b->stored_length;
		t->sk.newv = newstored;
	}
}

/* The sites of the decoder's calls (and of the callees it passes the
 * length to) that carry the blob's lengths. */
static cp_status total_sites(struct planner *pl, const struct cp_blob *b, const struct totals *t,
			     struct len_sites *ls, bool *hit)
{
	uint64_t start, end;
	struct cp_frame f;
	cp_status st;
	size_t k;

	if (!cp_image_function(pl->img, b->func, &start, &end))
		return cp_fail(pl->err, CP_E_INPUT, "%s: the blob's decoder was not found", pl->img->path);
	st = cp_frame_eval(pl->img, start, end, &f, pl->err);
	if (st)
		return st;
	for (k = 0; !st && k < f.ncalls; k++) {
		const struct cp_frame_call *c = &f.calls[k];

		if (call_is(c, t->sk.name, t->sk.arg, t->sk.oldv, t->sk.null_first) && c->arg_imm[t->sk.arg]) {
			*hit = true;
			add_site(ls, c->arg_imm[t->sk.arg], t->sk.oldv, t->sk.newv);
			if (b->algo == CP_BLOB_LZSS)
				st = loop_checks(pl, start, end, c->insn, t->oldo, t->newo, t->nothers, ls);
		} else if (c->target && !c->name) {
			st = through_callee(pl, c, &t->sk, t->oldo, t->newo, t->nothers, ls, hit);
		}
	}
	cp_frame_free(&f);
	return st;
}

/* An LZSS decode loop's compare of the output position (cmp rdx, LEN - 1;
 * jbe: i <= LEN - 1) must stop it where the blob ends, or the decoder
 * writes past its output or short of it and the import fails. */
static cp_status loop_stops_at_end(struct planner *pl, const struct cp_blob *b, const struct len_sites *ls)
{
	uint64_t imm, count;
	int i;

	for (i = 0; i < ls->n; i++) {
		if ((ls->v[i].oldv != b->length && ls->v[i].oldv != b->length - 1) ||
		    !cp_dis_loop_count(&pl->dis, pl->img, ls->v[i].insn, &imm, &count) || count == b->length)
			continue;
		return cp_fail(pl->err, CP_E_INPUT, "%s: the LZSS decoder's loop at %#llx stops after %llu bytes, and "
			       "its blob decodes to %llu", pl->img->path, (unsigned long long)ls->v[i].insn,
			       (unsigned long long)count, (unsigned long long)b->length);
	}
	return CP_OK;
}

/* The sites that carry a blob's lengths to its decoder, with their new
 * values; an error where the decoder's use of a length cannot be found,
 * which is also what a decoder that disagrees with its blob shows. */
static cp_status decoder_sites(struct planner *pl, const struct cp_blob *b, uint64_t newlen, uint64_t newstored,
			       struct len_sites *ls)
{
	struct totals t;
	bool hit = false;
	cp_status st;
	int i;

	memset(ls, 0, sizeof(*ls));
	make_totals(b, newlen, newstored, &t);
	st = total_sites(pl, b, &t, ls, &hit);
	if (st)
		return st;
	if (!hit || ls->full)
		return cp_fail(pl->err, CP_E_INPUT, "%s: the blob's %s length %llu reaches %s from no immediate "
			       "cypatch can follow", pl->img->path, b->algo == CP_BLOB_LZSS ? "decoded" : "stored",
			       (unsigned long long)t.sk.oldv, t.sk.name);
	/* LZSS: the input consumed is checked too, or a changed blob would fail
	 * to decode ("LZSS string data decompression failed") */
	if (b->algo == CP_BLOB_LZSS) {
		for (i = 0; i < ls->n && ls->v[i].oldv != b->stored_length; i++)
			;
		if (i == ls->n)
			return cp_fail(pl->err, CP_E_INPUT, "%s: the LZSS decoder's check of the input consumed "
				       "(%llu bytes) was not found", pl->img->path,
				       (unsigned long long)b->stored_length);
		return loop_stops_at_end(pl, b, ls);
	}
	return CP_OK;
}

static cp_status patch_totals(struct planner *pl, const struct cp_blob *b, uint64_t newlen,
			      uint64_t newstored)
{
	struct len_sites ls;
	cp_status st;
	int i;

	if (b->algo == CP_BLOB_NONE)
		return CP_OK;
	st = decoder_sites(pl, b, newlen, newstored, &ls);
	for (i = 0; !st && i < ls.n; i++)
		st = patch_imm(pl, ls.v[i].insn, 0xffffffffull, ls.v[i].oldv, ls.v[i].newv,
			       "blob length checked by its decoder");
	return st;
}

cp_status cp_plan_blob_check_decoders(struct planner *pl)
{
	struct len_sites ls;
	cp_status st = CP_OK;
	size_t i;

	for (i = 0; !st && i < pl->scan->nblobs; i++) {
		const struct cp_blob *b = &pl->scan->blobs[i];

		if (b->algo != CP_BLOB_NONE)
			st = decoder_sites(pl, b, b->length, b->stored_length, &ls);
	}
	return st;
}

/*
 * A folded entry's data pointer can hold its offset as a constant: from the
 * blob's start ([r13 + 0x15c]) or from the first folded entry
 * (lea rdi, [r13 + 0xb3]; add rdi, rbp: clang), or advance by the previous
 * entry's length (add rbx, 0x91, which GCC schedules before that entry's
 * call). The instructions from the previous folded entry's setup to this
 * entry's call that carry the old offset, either way, get the new one; the
 * previous entry's own length (`skip`) is patch_entry_length's.
 */
static cp_status patch_offset(struct planner *pl, const struct cp_blob *b, size_t k, uint64_t newoff,
			      uint64_t run_old, uint64_t run_new, uint64_t from, uint64_t skip)
{
	const struct cp_blob_entry *e = &b->entry[k];
	uint64_t a, oldrel = e->offset - run_old, newrel = newoff - run_new;
	unsigned len;
	char what[96];
	cp_status st;

	snprintf(what, sizeof(what), "offset of blob entry %zu: %llu -> %llu", k,
		 (unsigned long long)e->offset, (unsigned long long)newoff);
	for (a = from; a < e->call_insn; a += len) {
		uint8_t off, size;
		int64_t v;

		if (a != skip && (cp_dis_displacement(&pl->dis, pl->img, a, &off, &size, &v) ||
		     cp_dis_immediate(&pl->dis, pl->img, a, &off, &size, &v)) && v > 0 &&
		    (uint64_t)v != e->length && ((uint64_t)v == e->offset || (uint64_t)v == oldrel) &&
		    ((uint64_t)v == e->offset ? newoff : newrel) != (uint64_t)v) {
			st = patch_field(pl, a, off, size,
					 (int64_t)((uint64_t)v == e->offset ? newoff : newrel), what);
			if (st)
				return st;
		}
		len = cp_dis_size(&pl->dis, pl->img, a);
		if (!len)
			break;
	}
	return CP_OK;
}

/* Every instruction that reaches the blob's start moves to its copy at
 * `to`: the one that feeds its decoder, and any other (aarch64 builds its
 * address again for the bytes entries: add x21, x21, #0xa0); one that
 * reaches inside it is refused (its place in the new blob is not known). */
static cp_status redirect_blob(struct planner *pl, const struct cp_blob *b, uint64_t to, const char *what)
{
	const cp_scan *s = pl->scan;
	cp_status st = cp_plan_redirect_code(pl, b->code, b->vaddr, b->stored_length, to, what);
	size_t i;

	for (i = 0; !st && i < s->nxrefs; i++) {
		const struct cp_xref *x = &s->xrefs[i];

		if (x->addr == b->code || x->target < b->vaddr || x->target - b->vaddr >= b->stored_length)
			continue;
		if (x->target != b->vaddr)
			return cp_fail(pl->err, CP_E_INPUT, "%s: the instruction at %#llx reaches inside string blob "
				       "%d (+%#llx)", pl->img->path, (unsigned long long)x->addr,
				       (int)(b - s->blobs), (unsigned long long)(x->target - b->vaddr));
		st = cp_plan_redirect_code(pl, x->addr, b->vaddr, b->stored_length, to, what);
	}
	return st;
}

/* Where a folded entry's call is set up: the first of the instructions
 * that set its pointer and its length, and the call. */
static uint64_t setup_of(const struct cp_blob_entry *e)
{
	uint64_t a = e->call_insn;

	if (e->ptr_insn && e->ptr_insn < a)
		a = e->ptr_insn;
	if (e->cell_insn && e->cell_insn < a)
		a = e->cell_insn;
	return a;
}

static cp_status rebuild(struct planner *pl, int bi)
{
	const struct cp_blob *b = blob_of(pl, bi);
	const struct cp_blob_plan *bp = &pl->blobs[bi];
	size_t total = 0, k, pos = 0, enclen = 0;
	uint64_t run_old = 0, run_new = 0, run_from = 0, run_skip = 0;
	uint8_t *data, *enc = NULL;
	uint64_t to;
	cp_status st = CP_OK;
	char what[96];

	for (k = 0; k < b->nentries; k++)
		total += bp->val[k] ? bp->len[k] : b->entry[k].length;
	data = malloc(total + 1);
	if (!data)
		return cp_plan_oom(pl);
	for (k = 0; !st && k < b->nentries; k++) {
		size_t n;
		const uint8_t *d = current(pl, bi, k, &n);

		if (b->entry[k].folded) {
			if (!run_from) {
				run_old = b->entry[k].offset;
				run_new = pos;
			}
			st = patch_offset(pl, b, k, pos, run_old, run_new, run_from ? run_from : b->entry[k].call_insn,
					  run_skip);
			run_from = setup_of(&b->entry[k]);
			run_skip = b->entry[k].cell_insn;
		}
		memcpy(data + pos, d, n);
		pos += n;
		if (!st && n != b->entry[k].length)
			st = patch_entry_length(pl, b, k, n);
	}
	if (!st && cp_blob_encode(b->algo, data, total, &enc, &enclen))
		st = cp_plan_oom(pl);
	if (!st && b->algo == CP_BLOB_NONE) { /* a C string: keep its NUL */
		uint8_t *e2 = realloc(enc, enclen + 1);

		if (!e2)
			st = cp_plan_oom(pl);
		else {
			enc = e2;
			enc[enclen++] = 0;
		}
	}
	if (!st) {
		snprintf(what, sizeof(what), "string blob %d (%s, %zu -> %zu bytes decoded)", bi,
			 cp_blob_algo_name(b->algo), (size_t)b->length, total);
		/* aligned as the compiler aligns the array it replaces (16, ABI) */
		to = cp_plan_append(pl, enc, enclen, 16, what);
		st = to ? redirect_blob(pl, b, to, what) : cp_plan_oom(pl);
	}
	if (!st)
		st = patch_totals(pl, b, total, enclen);
	free(data);
	free(enc);
	return st;
}

cp_status cp_plan_blob_end(struct planner *pl)
{
	size_t i;
	cp_status st = CP_OK;

	for (i = 0; !st && i < pl->scan->nblobs; i++)
		if (pl->blobs[i].dirty)
			st = rebuild(pl, (int)i);
	cp_plan_blob_free(pl);
	return st;
}
