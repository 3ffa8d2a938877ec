/*
 * aarch64_encode.c - writing aarch64 code (see arch/aarch64/encode.h): the
 * PC-relative immediates of ADR, ADRP, B, BL, B.cond, CBZ/CBNZ, TBZ/TBNZ
 * and LDR (literal), the :lo12: immediates of ADD and of unsigned-offset
 * loads and stores, the immediates of ADD/SUB and MOVZ/MOVN/MOVK, BL and B
 * in place of BLR and BR, and the fallback stub's thunks. Encodings are the
 * Arm A64 ISA's; every word is little-endian in the file.
 */
#include "arch/aarch64/encode.h"

#define PAGE 4096u

/* Classes: (insn & mask) == value. */
#define ADR_MASK 0x9f000000u
#define ADR_OP 0x10000000u
#define ADRP_OP 0x90000000u
#define B_MASK 0x7c000000u      /* B and BL: bit 31 tells them apart */
#define B_OP 0x14000000u
#define BCOND_MASK 0xff000010u
#define BCOND_OP 0x54000000u
#define CB_MASK 0x7e000000u     /* CBZ, CBNZ; TBZ, TBNZ */
#define CB_OP 0x34000000u
#define TB_OP 0x36000000u
#define LDLIT_MASK 0x3b000000u  /* LDR, LDRSW, PRFM (literal), SIMD&FP too */
#define LDLIT_OP 0x18000000u
#define ADDSUB_MASK 0x1f800000u /* ADD, ADDS, SUB, SUBS (immediate) */
#define ADDSUB_OP 0x11000000u
#define MOVW_MASK 0x1f800000u   /* MOVN, MOVZ, MOVK */
#define MOVW_OP 0x12800000u
#define LDST_MASK 0x3b000000u   /* load/store register, unsigned offset */
#define LDST_OP 0x39000000u
#define BR_MASK 0xfffffc1fu
#define BR_OP 0xd61f0000u
#define BLR_OP 0xd63f0000u
#define BL_WORD 0x94000000u
#define B_WORD 0x14000000u
#define BRK_0 0xd4200000u
#define MOVZ_W0 0x52800000u    /* movz w0, #imm16 */
#define MOVK_W0_16 0x72a00000u /* movk w0, #imm16, lsl #16 */
#define RET_WORD 0xd65f03c0u   /* ret */

#define MOVN 0u
#define MOVZ 2u
#define MOVK 3u

static uint32_t get_word(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void put_word(uint8_t *b, uint32_t w)
{
	b[0] = (uint8_t)w;
	b[1] = (uint8_t)(w >> 8);
	b[2] = (uint8_t)(w >> 16);
	b[3] = (uint8_t)(w >> 24);
}

/* Whether the signed d fits bits bits. */
static bool fits(int64_t d, unsigned bits)
{
	return d >= -((int64_t)1 << (bits - 1)) && d < ((int64_t)1 << (bits - 1));
}

/* insn with its bits-wide field at bit lo set to the word offset to
 * target (a multiple of 4 that fits). */
static bool word_offset(uint32_t insn, uint64_t pc, uint64_t target, unsigned lo, unsigned bits,
			uint32_t *out)
{
	int64_t d = (int64_t)(target - pc);
	uint32_t mask = ((1u << bits) - 1) << lo;

	if (d % 4 || !fits(d / 4, bits))
		return false;
	*out = (insn & ~mask) | (((uint32_t)(d / 4) << lo) & mask);
	return true;
}

/* ADR and ADRP: a 21-bit immediate, immlo in bits 30:29, immhi in 23:5. */
static bool adr(uint32_t insn, uint64_t pc, uint64_t target, uint32_t *out)
{
	int64_t d = (int64_t)(target - pc);
	uint32_t imm;

	if ((insn & ADR_MASK) == ADRP_OP)
		d = (int64_t)((target & ~(uint64_t)(PAGE - 1)) - (pc & ~(uint64_t)(PAGE - 1))) / PAGE;
	if (!fits(d, 21))
		return false;
	imm = (uint32_t)d & 0x1fffff;
	*out = (insn & ~(3u << 29 | 0x7ffffu << 5)) | (imm & 3) << 29 | (imm >> 2) << 5;
	return true;
}

bool cp_a64_pcrel(uint32_t insn, uint64_t pc, uint64_t target, uint32_t *out)
{
	if (pc % 4)
		return false;
	if ((insn & ADR_MASK) == ADR_OP || (insn & ADR_MASK) == ADRP_OP)
		return adr(insn, pc, target, out);
	if ((insn & B_MASK) == B_OP)
		return word_offset(insn, pc, target, 0, 26, out);
	if ((insn & BCOND_MASK) == BCOND_OP || (insn & CB_MASK) == CB_OP || (insn & LDLIT_MASK) == LDLIT_OP)
		return word_offset(insn, pc, target, 5, 19, out);
	if ((insn & CB_MASK) == TB_OP)
		return word_offset(insn, pc, target, 5, 14, out);
	return false;
}

/* The log2 of the access size of an unsigned-offset load or store (its
 * immediate's scale), or -1 for an unallocated encoding. */
static int ldst_scale(uint32_t insn)
{
	unsigned size = insn >> 30, opc = (insn >> 22) & 3;
	bool simd = insn >> 26 & 1;

	if (simd && opc >= 2)
		return size ? -1 : 4; /* the 128-bit q register */
	if (!simd && size == 3 && opc == 3)
		return -1;
	return (int)size;
}

/* insn's imm12 (bits 21:10) set to v. */
static uint32_t with_imm12(uint32_t insn, uint32_t v)
{
	return (insn & ~(0xfffu << 10)) | v << 10;
}

static bool ldst_offset(uint32_t insn, uint64_t off, uint32_t *out)
{
	int scale = ldst_scale(insn);

	if (scale < 0 || off % (1u << scale) || off >> scale > 0xfff)
		return false;
	*out = with_imm12(insn, (uint32_t)(off >> scale));
	return true;
}

bool cp_a64_lo12(uint32_t insn, uint64_t target, uint32_t *out)
{
	uint32_t lo = (uint32_t)(target & (PAGE - 1));

	if ((insn & ADDSUB_MASK) == ADDSUB_OP && !(insn & 1u << 30) && !(insn & 1u << 29)) {
		if (insn & 1u << 22)
			return false; /* ADD ..., LSL #12 holds no :lo12: */
		*out = with_imm12(insn, lo);
		return true;
	}
	if ((insn & LDST_MASK) == LDST_OP)
		return ldst_offset(insn, lo, out);
	return false;
}

/* ADD/SUB (immediate): imm12, or imm12 << 12 when the low bits are 0. */
static bool addsub_imm(uint32_t insn, uint64_t v, uint32_t *out)
{
	if (v <= 0xfff)
		*out = with_imm12(insn & ~(1u << 22), (uint32_t)v);
	else if (!(v & 0xfff) && v >> 12 <= 0xfff)
		*out = with_imm12(insn | 1u << 22, (uint32_t)(v >> 12));
	else
		return false;
	return true;
}

/* The hw (0..nhw-1) whose 16 bits hold all of v, or -1. */
static int movw_hw(uint64_t v, unsigned nhw)
{
	unsigned hw;

	for (hw = 0; hw < nhw; hw++)
		if (!(v & ~((uint64_t)0xffff << 16 * hw)))
			return (int)hw;
	return -1;
}

/* MOVZ, MOVN: v is the value the register gets, made by MOVZ or else by
 * MOVN (the operation may change between them); MOVK: v is imm16 << 16 *
 * hw, its own hw kept (it replaces those bits only). */
static bool movw_imm(uint32_t insn, uint64_t v, uint32_t *out)
{
	unsigned opc = (insn >> 29) & 3, nhw = insn >> 31 ? 4 : 2;
	uint64_t width = nhw == 4 ? ~0ull : 0xffffffffull;
	int hw;

	if (opc == MOVK) {
		hw = (int)((insn >> 21) & 3);
		if (v & ~((uint64_t)0xffff << 16 * hw))
			return false;
	} else if (opc != MOVN && opc != MOVZ) {
		return false;
	} else if (v & ~width) {
		return false;
	} else if ((hw = movw_hw(v, nhw)) >= 0) {
		opc = MOVZ;
	} else if ((hw = movw_hw(~v & width, nhw)) >= 0) {
		opc = MOVN;
		v = ~v & width;
	} else {
		return false;
	}
	*out = (insn & ~(3u << 29 | 3u << 21 | 0xffffu << 5)) | opc << 29 | (uint32_t)hw << 21 |
	       (uint32_t)((v >> 16 * hw) & 0xffff) << 5;
	return true;
}

bool cp_a64_imm(uint32_t insn, int64_t value, uint32_t *out)
{
	if ((insn & MOVW_MASK) == MOVW_OP)
		return movw_imm(insn, (uint64_t)value, out);
	if (value < 0)
		return false;
	if ((insn & ADDSUB_MASK) == ADDSUB_OP)
		return addsub_imm(insn, (uint64_t)value, out);
	if ((insn & LDST_MASK) == LDST_OP)
		return ldst_offset(insn, (uint64_t)value, out);
	return false;
}

bool cp_a64_adrp_pair(uint8_t adrp[4], uint64_t adrp_pc, uint8_t lo[4], uint64_t target)
{
	uint32_t a = get_word(adrp), l = get_word(lo), na, nl;

	if ((a & ADR_MASK) != ADRP_OP || ((l >> 5) & 31) != (a & 31) ||
	    !cp_a64_pcrel(a, adrp_pc, target, &na) || !cp_a64_lo12(l, target, &nl))
		return false;
	put_word(adrp, na);
	put_word(lo, nl);
	return true;
}

bool cp_a64_standalone(uint32_t insn, uint64_t pc, uint64_t target, uint32_t *out)
{
	unsigned rd = insn & 31;

	/* ADD/SUB xD, xN, #imm, 64-bit, no flags: ADR xD (31 is sp there,
	 * xzr in ADR) */
	if ((insn & ADDSUB_MASK) == ADDSUB_OP && insn >> 31 && !(insn & 1u << 29))
		return rd != 31 && adr(ADR_OP | rd, pc, target, out);
	/* LDR xT / wT / LDRSW xT, [xN, #imm]: LDR (literal), opc 1, 0, 2 */
	switch (insn & 0xffc00000u) {
	case 0xf9400000u: return word_offset(LDLIT_OP | 1u << 30 | rd, pc, target, 5, 19, out);
	case 0xb9400000u: return word_offset(LDLIT_OP | rd, pc, target, 5, 19, out);
	case 0xb9800000u: return word_offset(LDLIT_OP | 2u << 30 | rd, pc, target, 5, 19, out);
	default: return false;
	}
}

bool cp_a64_pcrel_put(uint8_t *field, uint64_t insn, unsigned insn_size, uint64_t target)
{
	uint32_t w = get_word(field), nw;

	/* an ADRP's page serves every instruction that completes it */
	if (insn_size != 4 || (w & ADR_MASK) == ADRP_OP ||
	    (!cp_a64_pcrel(w, insn, target, &nw) && !cp_a64_standalone(w, insn, target, &nw)))
		return false;
	put_word(field, nw);
	return true;
}

bool cp_a64_field_put(uint8_t *field, unsigned size, int64_t value)
{
	uint32_t nw;

	if (size != 4 || !cp_a64_imm(get_word(field), value, &nw))
		return false;
	put_word(field, nw);
	return true;
}

bool cp_a64_branch_rewrite(const uint8_t *insn, unsigned len, uint8_t *out, uint8_t *field_at,
			   uint8_t *branch_size)
{
	uint32_t w, nw;

	if (len != 4)
		return false;
	w = get_word(insn);
	if ((w & B_MASK) == B_OP)
		nw = w & ~0x3ffffffu;
	else if ((w & BR_MASK) == BLR_OP)
		nw = BL_WORD;
	else if ((w & BR_MASK) == BR_OP)
		nw = B_WORD;
	else
		return false;
	put_word(out, nw);
	*field_at = 0;
	*branch_size = 4;
	return true;
}

bool cp_a64_load_rewrite(const uint8_t *insn, unsigned len, uint8_t *out)
{
	uint32_t w;

	if (len != 4)
		return false;
	w = get_word(insn);
	/* LDR xT, [xN, #imm] and LDR xT, label: ADR xT, . */
	if ((w & 0xffc00000u) != 0xf9400000u && (w & 0xff000000u) != 0x58000000u)
		return false;
	put_word(out, ADR_OP | (w & 31));
	return true;
}

bool cp_a64_thunk(uint8_t *out, uint64_t at, unsigned arg, uint64_t ctx, uint64_t entry,
		  uint64_t *jump)
{
	uint32_t adr, b;

	/* ADR, not ADRP + ADD: one instruction that reaches ctx, which the
	 * check decodes back (the stub's context lies beside its code) */
	if (arg > 7 || !cp_a64_pcrel(ADR_OP | arg, at, ctx, &adr) || !cp_a64_pcrel(B_WORD, at + 4, entry, &b))
		return false;
	put_word(out, adr);
	put_word(out + 4, b);
	put_word(out + 8, BRK_0);
	put_word(out + 12, BRK_0);
	*jump = at + 4;
	return true;
}

bool cp_a64_standin(uint8_t *out, long value)
{
	uint32_t v = (uint32_t)value;

	if (value < INT32_MIN || value > INT32_MAX)
		return false;
	put_word(out, MOVZ_W0 | (v & 0xffffu) << 5);
	put_word(out + 4, MOVK_W0_16 | (v >> 16) << 5);
	put_word(out + 8, RET_WORD);
	put_word(out + 12, BRK_0);
	return true;
}
