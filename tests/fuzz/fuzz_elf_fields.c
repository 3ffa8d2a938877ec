/*
 * fuzz_elf_fields.c - the whole patch pipeline on ELF files mutated field by
 * field (a custom mutator: the ELF header, program and section headers,
 * dynamic entries, relocations, RELR words and symbols, each field set to a
 * value that means something in this file: another entry's, a section's
 * address or offset, the file's size, a neighbour, a type of another kind),
 * or by whole entries (swapped, copied, retyped), or cut at a section's
 * edge. Byte-level mutation (libFuzzer's own) is kept for a tenth of the
 * inputs.
 *
 * The oracle is more than "no crash". A run that reports success must have
 * written an output that
 *   - loads (the validation of every header and table),
 *   - scanned in full, without the check's shortcuts, holds no live
 *     reference of the other layout (a retarget by strings) or the
 *     fallback context (fallback, or a retarget through the stub), and as
 *     many references of each binding kind as the input,
 *   - is left alone by a second run to the same layout (CP_ALREADY);
 * and a refusal must be the input's fault: an internal error (exit 70) on
 * a damaged file aborts too. CPython importing the outputs is the judge of
 * scripts/fuzz_replay_elf, which replays this harness's corpus through the
 * command line.
 */
#include "fuzz_input.h"
#include "cypatch.h"
#include "rules/rules.h"
#include "scan/scan.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

static const char *const layouts[] = { "legacy", "bindings", "fallback" };

/* ---- the mutator ---------------------------------------------------- */

struct rng {
	uint64_t s;
};

static uint64_t next(struct rng *r)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return r->s;
}

static size_t below(struct rng *r, size_t n)
{
	return n ? (size_t)(next(r) % n) : 0;
}

/* A table of fixed-size entries inside the file. */
struct table {
	size_t off, entsize, n;
	const uint8_t *fields; /* pairs: offset, width */
	size_t nfields;
	const uint32_t *types; /* values that mean something for field 0 (or NULL) */
	size_t ntypes;
};

static const uint8_t ehdr_fields[] = { 16, 2, 18, 2, 20, 4, 24, 8, 32, 8, 40, 8, 48, 4,
				       52, 2, 54, 2, 56, 2, 58, 2, 60, 2, 62, 2 };
static const uint8_t phdr_fields[] = { 0, 4, 4, 4, 8, 8, 16, 8, 24, 8, 32, 8, 40, 8, 48, 8 };
static const uint8_t shdr_fields[] = { 4, 4, 0, 4, 8, 8, 16, 8, 24, 8, 32, 8, 40, 4, 44, 4, 48, 8, 56, 8 };
static const uint8_t dyn_fields[] = { 0, 8, 8, 8 };
static const uint8_t rela_fields[] = { 8, 8, 0, 8, 16, 8 };
static const uint8_t relr_fields[] = { 0, 8 };
static const uint8_t sym_fields[] = { 4, 1, 0, 4, 5, 1, 6, 2, 8, 8, 16, 8 };

static const uint32_t pt_types[] = { PT_NULL, PT_LOAD, PT_DYNAMIC, PT_INTERP, PT_NOTE, PT_PHDR, PT_TLS,
				     PT_GNU_EH_FRAME, PT_GNU_STACK, PT_GNU_RELRO, 0x6474e553 /* GNU_PROPERTY */ };
static const uint32_t sht_types[] = { SHT_NULL, SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_HASH,
				      SHT_DYNAMIC, SHT_NOTE, SHT_NOBITS, SHT_REL, SHT_DYNSYM, SHT_INIT_ARRAY,
				      SHT_FINI_ARRAY, 19 /* RELR */, SHT_GNU_HASH, SHT_GNU_versym };
static const uint32_t dt_tags[] = { DT_NULL, DT_NEEDED, DT_HASH, DT_STRTAB, DT_SYMTAB, DT_RELA, DT_RELASZ,
				    DT_RELAENT, DT_STRSZ, DT_INIT, DT_FINI, DT_SONAME, DT_JMPREL, DT_PLTRELSZ,
				    DT_INIT_ARRAY, DT_INIT_ARRAYSZ, DT_GNU_HASH, DT_VERSYM, DT_VERNEED,
				    DT_FLAGS, DT_FLAGS_1, 35 /* RELRSZ */, 36 /* RELR */, 37 /* RELRENT */ };
static const uint32_t r_types[] = { R_X86_64_NONE, R_X86_64_64, R_X86_64_PC32, R_X86_64_GLOB_DAT,
				    R_X86_64_JUMP_SLOT, R_X86_64_RELATIVE, R_X86_64_DTPMOD64, R_X86_64_TPOFF64,
				    R_X86_64_IRELATIVE, R_X86_64_COPY };

static uint64_t get(const uint8_t *p, size_t w)
{
	uint64_t v = 0;

	memcpy(&v, p, w);
	return v;
}

static void put(uint8_t *p, size_t w, uint64_t v)
{
	memcpy(p, &v, w);
}

static bool table_ok(const struct table *t, size_t size)
{
	return t->n && t->entsize && t->off <= size && t->n <= (size - t->off) / t->entsize;
}

/* The tables of this file that lie inside it. */
static size_t find_tables(const uint8_t *d, size_t size, struct table *t, size_t cap)
{
	Elf64_Ehdr ehdr, *eh = &ehdr;
	size_t n = 0, i;
	struct table sh;

	memcpy(&ehdr, d, sizeof(ehdr));
	t[n++] = (struct table){ 0, 64, 1, ehdr_fields, sizeof(ehdr_fields) / 2, NULL, 0 };
	t[n] = (struct table){ eh->e_phoff, 56, eh->e_phnum, phdr_fields, sizeof(phdr_fields) / 2, pt_types,
			       sizeof(pt_types) / 4 };
	n += table_ok(&t[n], size);
	sh = (struct table){ eh->e_shoff, 64, eh->e_shnum, shdr_fields, sizeof(shdr_fields) / 2, sht_types,
			     sizeof(sht_types) / 4 };
	if (!table_ok(&sh, size))
		return n;
	t[n++] = sh;
	for (i = 1; i < sh.n && n < cap; i++) {
		Elf64_Shdr shdr, *s = &shdr;
		struct table x = { 0, 0, 0, NULL, 0, NULL, 0 };

		memcpy(&shdr, d + sh.off + i * 64, sizeof(shdr));

		switch (s->sh_type) {
		case SHT_DYNAMIC:
			x = (struct table){ s->sh_offset, 16, 0, dyn_fields, 2, dt_tags, sizeof(dt_tags) / 4 };
			break;
		case SHT_RELA:
			x = (struct table){ s->sh_offset, 24, 0, rela_fields, 3, r_types, sizeof(r_types) / 4 };
			break;
		case 19:
			x = (struct table){ s->sh_offset, 8, 0, relr_fields, 1, NULL, 0 };
			break;
		case SHT_SYMTAB:
		case SHT_DYNSYM:
			x = (struct table){ s->sh_offset, 24, 0, sym_fields, 6, NULL, 0 };
			break;
		default:
			continue;
		}
		x.n = s->sh_size / x.entsize;
		if (table_ok(&x, size))
			t[n++] = x;
	}
	return n;
}

/* A value of this file: a section's or segment's address, offset or size. */
static uint64_t landmark(const uint8_t *d, size_t size, const struct table *t, size_t nt, struct rng *r)
{
	const struct table *x = &t[below(r, nt)];
	size_t e = below(r, x->n), f = below(r, x->nfields);
	const uint8_t *p = d + x->off + e * x->entsize + x->fields[2 * f];

	if (below(r, 4) == 0)
		return size - below(r, 64);
	return get(p, x->fields[2 * f + 1]);
}

static uint64_t new_value(const uint8_t *d, size_t size, const struct table *t, size_t nt, const struct table *x,
			  size_t f, uint64_t old, struct rng *r)
{
	size_t w = x->fields[2 * f + 1];
	uint64_t ones = w == 8 ? ~0ull : (1ull << (8 * w)) - 1;
	static const int64_t steps[] = { 1, -1, 8, -8, 16, 0x1000, -0x1000, 0x10000 };

	switch (below(r, 8)) {
	case 0:
		return below(r, 2) ? 0 : ones;
	case 1:
		return old + (uint64_t)steps[below(r, sizeof(steps) / sizeof(steps[0]))];
	case 2:
		return x->types && f == 0 ? x->types[below(r, x->ntypes)] : old ^ (1ull << below(r, 8 * w));
	case 3: /* the same field of another entry */
		return get(d + x->off + below(r, x->n) * x->entsize + x->fields[2 * f], w);
	case 4:
		return 1ull << below(r, 8 * w);
	case 5:
		return old * 2;
	default:
		return landmark(d, size, t, nt, r);
	}
}

static void mutate_field(uint8_t *d, size_t size, const struct table *t, size_t nt, struct rng *r)
{
	const struct table *x = &t[below(r, nt)];
	size_t e = below(r, x->n), f = below(r, x->nfields);
	uint8_t *p = d + x->off + e * x->entsize + x->fields[2 * f];
	size_t w = x->fields[2 * f + 1];

	/* relocation types live in the low half of r_info */
	if (x->fields == rela_fields && f == 0) {
		put(p, 4, x->types[below(r, x->ntypes)]);
		return;
	}
	put(p, w, new_value(d, size, t, nt, x, f, get(p, w), r));
}

static void mutate_entry(uint8_t *d, const struct table *t, size_t nt, struct rng *r)
{
	const struct table *x = &t[below(r, nt)];
	size_t a = below(r, x->n), b = below(r, x->n);
	uint8_t tmp[64];

	if (x->entsize > sizeof(tmp) || a == b)
		return;
	memcpy(tmp, d + x->off + a * x->entsize, x->entsize);
	if (below(r, 2))
		memcpy(d + x->off + a * x->entsize, d + x->off + b * x->entsize, x->entsize);
	memcpy(d + x->off + b * x->entsize, tmp, x->entsize);
}

/* The file cut where a section begins or ends. */
static size_t cut(const uint8_t *d, size_t size, struct rng *r)
{
	Elf64_Ehdr eh;
	Elf64_Shdr s;
	struct table sh;
	uint64_t at;

	memcpy(&eh, d, sizeof(eh));
	sh = (struct table){ eh.e_shoff, 64, eh.e_shnum, NULL, 0, NULL, 0 };
	if (!table_ok(&sh, size))
		return size;
	memcpy(&s, d + sh.off + below(r, sh.n) * 64, sizeof(s));
	at = s.sh_offset + (below(r, 2) ? s.sh_size : 0);
	return at > 64 && at < size ? (size_t)at : size;
}

size_t LLVMFuzzerCustomMutator(uint8_t *d, size_t size, size_t max_size, unsigned int seed)
{
	struct rng r = { seed * 2654435761u + 1 };
	struct table t[64];
	size_t nt, k, rounds;

	if (size < sizeof(Elf64_Ehdr) || memcmp(d, ELFMAG, SELFMAG) || d[EI_CLASS] != ELFCLASS64 ||
	    below(&r, 10) == 0)
		return LLVMFuzzerMutate(d, size, max_size);
	nt = find_tables(d, size, t, sizeof(t) / sizeof(t[0]));
	rounds = 1 + below(&r, 3);
	for (k = 0; k < rounds; k++) {
		switch (below(&r, 8)) {
		case 0:
			mutate_entry(d, t, nt, &r);
			break;
		case 1:
			if (below(&r, 4) == 0)
				return cut(d, size, &r);
			/* fall through */
		default:
			mutate_field(d, size, t, nt, &r);
		}
		nt = find_tables(d, size, t, sizeof(t) / sizeof(t[0]));
	}
	return size;
}

/* ---- the oracle ----------------------------------------------------- */

static void fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_elf_fields: %s: %s\n", what, detail);
	abort();
}

static size_t count_live(const cp_scan *s, enum cp_ref_kind k)
{
	size_t i, n = 0;

	for (i = 0; i < s->nrefs; i++)
		n += s->refs[i].kind == k && cp_ref_is_live(&s->refs[i]);
	return n;
}

static cp_scan *scan_file(const char *path, cp_image **img)
{
	cp_scan *s = NULL;
	cp_error err;

	if (cp_image_open(path, img, &err) != CP_OK) {
		*img = NULL;
		return NULL;
	}
	if (cp_scan_run(*img, fuzz_rules(), &s, &err) != CP_OK) {
		cp_image_close(*img);
		*img = NULL;
		return NULL;
	}
	return s;
}

/* The output, read in full by a fresh load and scan. */
static void output_holds(const char *in, const char *out, const char *layout, bool stub)
{
	static const enum cp_ref_kind binding[] = { CP_K_CIMPORT, CP_K_FUNCTION, CP_K_VARIABLE, CP_K_TYPE };
	/* a retarget the strings cannot express goes through the stub */
	int target = stub ? -1 : cp_rules_layout_index(fuzz_rules(), layout);
	cp_image *a, *b;
	cp_scan *sa = scan_file(in, &a), *sb = scan_file(out, &b);
	size_t i;
	char msg[256];

	if (!sa)
		fail("the input was patched but does not scan again", in);
	if (!sb)
		fail("the patched output does not load or scan", out);
	for (i = 0; target >= 0 && i < sb->nrefs; i++) {
		const struct cp_ref *r = &sb->refs[i];

		if (r->layout >= 0 && r->layout != target && cp_ref_is_live(r)) {
			snprintf(msg, sizeof(msg), "%s \"%s\"", cp_ref_kind_name(r->kind), r->value);
			fail("the output still holds a reference of the other layout", msg);
		}
	}
	if (target < 0 && !sb->fallback)
		fail("the fallback output has no fallback context", out);
	for (i = 0; i < sizeof(binding) / sizeof(binding[0]); i++)
		if (count_live(sa, binding[i]) != count_live(sb, binding[i])) {
			snprintf(msg, sizeof(msg), "%s: %zu in the input, %zu in the output",
				 cp_ref_kind_name(binding[i]), count_live(sa, binding[i]), count_live(sb, binding[i]));
			fail("a binding kind changed its number of references", msg);
		}
	cp_scan_free(sa);
	cp_scan_free(sb);
	cp_image_close(a);
	cp_image_close(b);
}

static bool internal(const cp_error *err)
{
	return err->code == CP_E_INTERNAL && !strstr(err->msg, "out of memory");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char in[512], out[512], again[512];
	struct cp_patch_opts o = { 0 };
	struct cp_patch_result res;
	cp_error err;

	snprintf(in, sizeof(in), "%s/in.so", fuzz_dir());
	snprintf(out, sizeof(out), "%s/out.so", fuzz_dir());
	snprintf(again, sizeof(again), "%s/again.so", fuzz_dir());
	if (fuzz_write_file(in, data, size) < 0)
		return 0;
	o.layout = layouts[size % 3];
	o.no_fsync = true;
	if (cp_patch_file(in, out, fuzz_rules(), &o, &res, &err) != CP_OK) {
		if (internal(&err))
			fail("an internal error on an input", err.msg);
	} else if (res.outcome == CP_PATCHED) {
		output_holds(in, out, o.layout, res.fallback);
		if (cp_patch_file(out, again, fuzz_rules(), &o, &res, &err) != CP_OK)
			fail("a second run refuses the output", err.msg);
		if (res.outcome != CP_ALREADY)
			fail("a second run to the same layout patches again", o.layout);
	}
	unlink(again);
	unlink(out);
	unlink(in);
	return 0;
}
