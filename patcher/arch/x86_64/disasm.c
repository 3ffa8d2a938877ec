/*
 * disasm.c - the linear code walk and its register tracker.
 */
#include "arch/x86_64/disasm.h"
#include "util/error.h"

#include <stdio.h>
#include <string.h>

enum { R_RAX, R_RCX, R_RDX, R_RBX, R_RSP, R_RBP, R_RSI, R_RDI,
       R_R8, R_R9, R_R10, R_R11, R_R12, R_R13, R_R14, R_R15 };

const int cp_arg_regs[6] = { R_RDI, R_RSI, R_RDX, R_RCX, R_R8, R_R9 };
static const int clobbered[9] = { R_RAX, R_RCX, R_RDX, R_RSI, R_RDI, R_R8, R_R9, R_R10, R_R11 };

struct walk {
	const cp_image *img;
	const struct cp_code_visitor *v;
	struct cp_val reg[16];
	struct cp_val hoisted[16]; /* last address lea'd into each callee-saved register */
	size_t next_func; /* index into img->func of the next function start */
};

cp_status cp_dis_open(cp_dis *d, cp_error *err)
{
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &d->handle) != CS_ERR_OK)
		return cp_fail(err, CP_E_INTERNAL, "capstone: cannot open an x86-64 handle");
	cs_option(d->handle, CS_OPT_DETAIL, CS_OPT_ON);
	d->insn = cs_malloc(d->handle);
	if (!d->insn) {
		cs_close(&d->handle);
		return cp_fail(err, CP_E_INTERNAL, "capstone: out of memory");
	}
	return CP_OK;
}

void cp_dis_close(cp_dis *d)
{
	if (d->insn)
		cs_free(d->insn, 1);
	d->insn = NULL;
	cs_close(&d->handle);
}

int cp_reg64(x86_reg r)
{
	switch (r) {
	case X86_REG_RAX: case X86_REG_EAX: case X86_REG_AX: case X86_REG_AL: case X86_REG_AH: return R_RAX;
	case X86_REG_RCX: case X86_REG_ECX: case X86_REG_CX: case X86_REG_CL: case X86_REG_CH: return R_RCX;
	case X86_REG_RDX: case X86_REG_EDX: case X86_REG_DX: case X86_REG_DL: case X86_REG_DH: return R_RDX;
	case X86_REG_RBX: case X86_REG_EBX: case X86_REG_BX: case X86_REG_BL: case X86_REG_BH: return R_RBX;
	case X86_REG_RSP: case X86_REG_ESP: case X86_REG_SP: case X86_REG_SPL: return R_RSP;
	case X86_REG_RBP: case X86_REG_EBP: case X86_REG_BP: case X86_REG_BPL: return R_RBP;
	case X86_REG_RSI: case X86_REG_ESI: case X86_REG_SI: case X86_REG_SIL: return R_RSI;
	case X86_REG_RDI: case X86_REG_EDI: case X86_REG_DI: case X86_REG_DIL: return R_RDI;
	case X86_REG_R8: case X86_REG_R8D: case X86_REG_R8W: case X86_REG_R8B: return R_R8;
	case X86_REG_R9: case X86_REG_R9D: case X86_REG_R9W: case X86_REG_R9B: return R_R9;
	case X86_REG_R10: case X86_REG_R10D: case X86_REG_R10W: case X86_REG_R10B: return R_R10;
	case X86_REG_R11: case X86_REG_R11D: case X86_REG_R11W: case X86_REG_R11B: return R_R11;
	case X86_REG_R12: case X86_REG_R12D: case X86_REG_R12W: case X86_REG_R12B: return R_R12;
	case X86_REG_R13: case X86_REG_R13D: case X86_REG_R13W: case X86_REG_R13B: return R_R13;
	case X86_REG_R14: case X86_REG_R14D: case X86_REG_R14W: case X86_REG_R14B: return R_R14;
	case X86_REG_R15: case X86_REG_R15D: case X86_REG_R15W: case X86_REG_R15B: return R_R15;
	default: return -1;
	}
}

static void reset(struct walk *w)
{
	memset(w->reg, 0, sizeof(w->reg));
}

static bool callee_saved(int r)
{
	return r == R_RBX || r == R_RBP || (r >= R_R12 && r <= R_R15);
}

/*
 * After a return or an unconditional jump the next instruction starts a
 * block reached from elsewhere. Compilers hoist string addresses into
 * callee-saved registers once per function and reuse them across blocks
 * (GCC keeps "mov rdi, r13; call PyImport_ImportModule" in several blocks,
 * while an error path in between reuses r13), so those registers get back
 * the last address a lea put in them; everything else is forgotten.
 */
static void end_block(struct walk *w)
{
	int r;

	reset(w);
	for (r = 0; r < 16; r++)
		if (callee_saved(r) && w->hoisted[r].kind == CP_V_ADDR)
			w->reg[r] = w->hoisted[r];
}

/* The target of a RIP-relative memory operand, if the instruction has one. */
static bool rip_target(const cs_insn *in, uint64_t *target, int *opi)
{
	const cs_x86 *x = &in->detail->x86;
	int i;

	for (i = 0; i < x->op_count; i++) {
		const cs_x86_op *op = &x->operands[i];

		if (op->type == X86_OP_MEM && op->mem.base == X86_REG_RIP &&
		    op->mem.index == X86_REG_INVALID) {
			*target = in->address + in->size + (uint64_t)op->mem.disp;
			*opi = i;
			return true;
		}
	}
	return false;
}

/* "mnemonic operands", cut to the buffer. */
static void describe(const cs_insn *in, char *buf, size_t n)
{
	size_t m = strlen(in->mnemonic);

	if (n == 0)
		return;
	if (m >= n)
		m = n - 1;
	memcpy(buf, in->mnemonic, m);
	buf[m] = '\0';
	if (m + 1 < n) {
		size_t k = strlen(in->op_str);

		/* memcpy, not strncpy: GCC -O3 rejects the truncation (-Werror) */
		if (k > n - m - 2)
			k = n - m - 2;
		buf[m] = ' ';
		memcpy(buf + m + 1, in->op_str, k);
		buf[m + 1 + k] = '\0';
	}
}

static void emit_ref(struct walk *w, const cs_insn *in, uint64_t target, enum cp_insn_ref_kind kind)
{
	struct cp_code_ref r;

	if (!w->v->on_ref)
		return;
	memset(&r, 0, sizeof(r));
	r.addr = in->address;
	r.size = (uint8_t)in->size;
	r.disp_off = in->detail->x86.encoding.disp_offset;
	r.target = target;
	r.kind = kind;
	describe(in, r.text, sizeof(r.text));
	w->v->on_ref(w->v->ctx, &r);
}

static const char *callee_name(const cp_image *img, uint64_t target)
{
	const struct cp_symbol *s;
	const char *n = cp_image_plt_name(img, target);

	if (n)
		return n;
	s = cp_image_symbol_at(img, target);
	return s ? s->name : NULL;
}

static void emit_call(struct walk *w, const cs_insn *in, uint64_t target, const char *name)
{
	struct cp_call c;
	int i;

	if (!w->v->on_call)
		return;
	c.addr = in->address;
	c.target = target;
	c.name = name;
	for (i = 0; i < 6; i++)
		c.arg[i] = w->reg[cp_arg_regs[i]];
	w->v->on_call(w->v->ctx, &c);
}

/* A call or jmp: its target, and the name it reaches. */
static void branch_target(struct walk *w, const cs_insn *in, uint64_t *target, const char **name)
{
	const cs_x86 *x = &in->detail->x86;
	uint64_t t;
	int opi;

	*target = 0;
	*name = NULL;
	if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
		*target = (uint64_t)x->operands[0].imm;
		*name = callee_name(w->img, *target);
	} else if (rip_target(in, &t, &opi)) {
		*name = cp_image_got_name(w->img, t);
	}
}

static void on_call(struct walk *w, const cs_insn *in)
{
	uint64_t target;
	const char *name;
	size_t i;

	branch_target(w, in, &target, &name);
	emit_call(w, in, target, name);
	for (i = 0; i < sizeof(clobbered) / sizeof(clobbered[0]); i++)
		w->reg[clobbered[i]].kind = CP_V_UNKNOWN;
}

/* A jmp to an imported function is a tail call; any other ends the block. */
static void on_jmp(struct walk *w, const cs_insn *in)
{
	uint64_t target;
	const char *name;

	branch_target(w, in, &target, &name);
	if (name && (!target || cp_image_plt_name(w->img, target)))
		emit_call(w, in, target, name);
	end_block(w);
}

static void set(struct walk *w, int r, uint8_t kind, uint64_t v, uint64_t origin)
{
	w->reg[r].kind = kind;
	w->reg[r].v = v;
	w->reg[r].origin = origin;
}

/* mov/lea into a whole register: the cases the tracker follows. Returns
 * true when it set the destination itself. */
static bool track_move(struct walk *w, const cs_insn *in, bool has_rip, uint64_t target)
{
	const cs_x86 *x = &in->detail->x86;
	const cs_x86_op *dst = &x->operands[0], *src = &x->operands[1];
	int d;

	if (x->op_count != 2 || dst->type != X86_OP_REG || dst->size < 4)
		return false;
	d = cp_reg64(dst->reg);
	if (d < 0)
		return false;
	if (in->id == X86_INS_LEA && has_rip) {
		set(w, d, CP_V_ADDR, target, in->address);
		if (callee_saved(d) && dst->size == 8)
			w->hoisted[d] = w->reg[d];
		return true;
	}
	if (in->id != X86_INS_MOV && in->id != X86_INS_MOVABS)
		return false;
	if (src->type == X86_OP_IMM) {
		set(w, d, CP_V_IMM, (uint64_t)src->imm, in->address);
		return true;
	}
	if (src->type == X86_OP_REG && cp_reg64(src->reg) >= 0) {
		w->reg[d] = w->reg[cp_reg64(src->reg)];
		return true;
	}
	if (src->type == X86_OP_MEM && has_rip && dst->size == 8) {
		set(w, d, CP_V_LOAD, target, in->address);
		return true;
	}
	/* mov r, [r2 + disp] with r2 an address (unoptimised code reaches the
	 * module state as lea rax, [rip + state]; mov rax, [rax + off]) */
	if (src->type == X86_OP_MEM && dst->size == 8 && src->mem.index == X86_REG_INVALID &&
	    cp_reg64(src->mem.base) >= 0 && w->reg[cp_reg64(src->mem.base)].kind == CP_V_ADDR) {
		struct cp_code_ref r;
		uint64_t t = w->reg[cp_reg64(src->mem.base)].v + (uint64_t)src->mem.disp;

		memset(&r, 0, sizeof(r));
		r.addr = in->address;
		r.size = (uint8_t)in->size;
		r.target = t;
		r.kind = CP_REF_LOAD;
		if (w->v->on_ref)
			w->v->on_ref(w->v->ctx, &r);
		set(w, d, CP_V_LOAD, t, in->address);
		return true;
	}
	return false;
}

/* xor r, r zeroes r. */
static bool track_zero(struct walk *w, const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	if (in->id != X86_INS_XOR || x->op_count != 2 || x->operands[0].type != X86_OP_REG ||
	    x->operands[1].type != X86_OP_REG || x->operands[0].reg != x->operands[1].reg ||
	    cp_reg64(x->operands[0].reg) < 0)
		return false;
	set(w, cp_reg64(x->operands[0].reg), CP_V_IMM, 0, in->address);
	return true;
}

static void clear_written(struct walk *w, csh h, const cs_insn *in)
{
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0, i;

	if (cs_regs_access(h, in, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		return;
	for (i = 0; i < nwr; i++) {
		int r = cp_reg64((x86_reg)wr[i]);

		if (r >= 0)
			w->reg[r].kind = CP_V_UNKNOWN;
	}
}

static enum cp_insn_ref_kind ref_kind(const cs_insn *in, int opi)
{
	if (in->id == X86_INS_LEA)
		return CP_REF_LEA;
	if (in->id == X86_INS_MOV || in->id == X86_INS_MOVZX || in->id == X86_INS_MOVSX ||
	    in->id == X86_INS_MOVSXD)
		return opi == 0 ? CP_REF_STORE : CP_REF_LOAD;
	return CP_REF_OTHER;
}

static void step(struct walk *w, csh h, const cs_insn *in)
{
	uint64_t target = 0;
	int opi = -1;
	bool has_rip = rip_target(in, &target, &opi);

	if (has_rip && in->id != X86_INS_CALL && in->id != X86_INS_JMP)
		emit_ref(w, in, target, ref_kind(in, opi));
	if (in->id == X86_INS_CALL) {
		on_call(w, in);
		return;
	}
	if (w->v->on_jump && cs_insn_group(h, in, CS_GRP_JUMP) && in->detail->x86.op_count == 1 &&
	    in->detail->x86.operands[0].type == X86_OP_IMM)
		w->v->on_jump(w->v->ctx, in->address, (uint64_t)in->detail->x86.operands[0].imm);
	if (in->id == X86_INS_JMP) {
		on_jmp(w, in);
		if (w->v->on_end)
			w->v->on_end(w->v->ctx, in->address);
		return;
	}
	if (in->id == X86_INS_RET || in->id == X86_INS_UD2 || in->id == X86_INS_HLT) {
		end_block(w);
		if (w->v->on_end)
			w->v->on_end(w->v->ctx, in->address);
		return;
	}
	if (track_move(w, in, has_rip, target) || track_zero(w, in))
		return;
	clear_written(w, h, in);
}

/* Resets the tracker when the walk enters a new function. */
static void enter(struct walk *w, uint64_t addr)
{
	const cp_image *img = w->img;

	while (w->next_func < img->nfunc && img->func[w->next_func] <= addr) {
		w->next_func++;
		reset(w);
		memset(w->hoisted, 0, sizeof(w->hoisted));
	}
}

static void seek_func(struct walk *w, uint64_t addr)
{
	size_t lo = 0, hi = w->img->nfunc;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->img->func[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	w->next_func = lo;
}

static void walk_range(struct walk *w, cp_dis *d, const struct cp_section *s,
		       uint64_t start, uint64_t end)
{
	const uint8_t *code = cp_image_bytes(w->img, s->offset + (start - s->addr), end - start);
	size_t size = end - start;
	uint64_t addr = start;

	if (!code)
		return;
	reset(w);
	memset(w->hoisted, 0, sizeof(w->hoisted));
	seek_func(w, start);
	while (size > 0) {
		if (!cs_disasm_iter(d->handle, &code, &size, &addr, d->insn)) {
			code++;
			size--;
			addr++;
			reset(w);
			continue;
		}
		enter(w, d->insn->address);
		step(w, d->handle, d->insn);
	}
}

cp_status cp_code_walk(const cp_image *img, uint64_t start, uint64_t end,
		       const struct cp_code_visitor *v, cp_error *err)
{
	struct walk w;
	cp_dis d;
	size_t i;
	cp_status st = cp_dis_open(&d, err);

	if (st)
		return st;
	memset(&w, 0, sizeof(w));
	w.img = img;
	w.v = v;
	for (i = 0; i < img->nsec; i++) {
		const struct cp_section *s = &img->sec[i];
		uint64_t a = s->addr, b = s->addr + s->size;

		if (!cp_section_is_code(s) || strncmp(s->name, ".plt", 4) == 0)
			continue;
		if (end) {
			a = start > a ? start : a;
			b = end < b ? end : b;
		}
		if (a < b)
			walk_range(&w, &d, s, a, b);
	}
	cp_dis_close(&d);
	return CP_OK;
}

static bool same_sections(const cp_image *a, const cp_image *b)
{
	size_t i;

	if (a->nsec != b->nsec)
		return false;
	for (i = 0; i < a->nsec; i++) {
		const struct cp_section *x = &a->sec[i], *y = &b->sec[i];

		if (strcmp(x->name, y->name) || x->type != y->type || x->flags != y->flags || x->addr != y->addr ||
		    x->offset != y->offset || x->size != y->size)
			return false;
	}
	return true;
}

/* The walked sections' bytes (same_sections holds). */
static bool same_code_bytes(const cp_image *a, const cp_image *b)
{
	size_t i;

	for (i = 0; i < a->nsec; i++) {
		const struct cp_section *s = &a->sec[i];
		const uint8_t *x, *y;

		if (!cp_section_is_code(s))
			continue;
		x = cp_image_bytes(a, s->offset, s->size);
		y = cp_image_bytes(b, s->offset, s->size);
		if (!x || !y || memcmp(x, y, s->size))
			return false;
	}
	return true;
}

static bool same_name(const char *x, const char *y)
{
	return !strcmp(x ? x : "", y ? y : "");
}

static bool same_slots(const struct cp_import_slot *x, size_t nx, const struct cp_import_slot *y, size_t ny)
{
	size_t i;

	if (nx != ny)
		return false;
	for (i = 0; i < nx; i++)
		if (x[i].addr != y[i].addr || !same_name(x[i].name, y[i].name))
			return false;
	return true;
}

static bool same_symbols(const cp_image *a, const cp_image *b)
{
	size_t i;

	if (a->nsym != b->nsym)
		return false;
	for (i = 0; i < a->nsym; i++)
		if (a->sym[i].value != b->sym[i].value || a->sym[i].defined != b->sym[i].defined ||
		    !same_name(a->sym[i].name, b->sym[i].name))
			return false;
	return true;
}

bool cp_code_walk_same(const cp_image *a, const cp_image *b)
{
	return same_sections(a, b) && a->nfunc == b->nfunc &&
	       (!a->nfunc || !memcmp(a->func, b->func, a->nfunc * sizeof(*a->func))) &&
	       same_slots(a->got, a->ngot, b->got, b->ngot) && same_slots(a->plt, a->nplt, b->plt, b->nplt) &&
	       same_symbols(a, b) && same_code_bytes(a, b);
}

static bool decode_at(cp_dis *d, const cp_image *img, uint64_t addr);

bool cp_dis_describe(cp_dis *d, const cp_image *img, uint64_t addr, char *buf, size_t n)
{
	buf[0] = '\0';
	if (!decode_at(d, img, addr))
		return false;
	describe(d->insn, buf, n);
	return true;
}

static bool decode_at(cp_dis *d, const cp_image *img, uint64_t addr)
{
	const struct cp_section *s = cp_image_section_at(img, addr);
	const uint8_t *code;
	size_t size;
	uint64_t a = addr;

	if (!s || !cp_section_is_code(s))
		return false;
	size = s->addr + s->size - addr;
	if (size > 16)
		size = 16;
	code = cp_image_va_bytes(img, addr, size);
	return code && cs_disasm_iter(d->handle, &code, &size, &a, d->insn);
}

bool cp_dis_rip_operand(cp_dis *d, const cp_image *img, uint64_t addr, uint8_t *disp_off,
			uint8_t *size, uint64_t *target)
{
	int opi;

	if (!decode_at(d, img, addr) || !rip_target(d->insn, target, &opi) ||
	    !d->insn->detail->x86.encoding.disp_offset || d->insn->detail->x86.encoding.disp_size != 4)
		return false;
	*disp_off = d->insn->detail->x86.encoding.disp_offset;
	*size = (uint8_t)d->insn->size;
	return true;
}

bool cp_dis_reaches(cp_dis *d, const cp_image *img, uint64_t addr, uint64_t *target)
{
	const cs_x86 *x;
	int opi;

	if (!decode_at(d, img, addr))
		return false;
	x = &d->insn->detail->x86;
	if ((d->insn->id == X86_INS_CALL || d->insn->id == X86_INS_JMP) && x->op_count == 1 &&
	    x->operands[0].type == X86_OP_IMM) {
		*target = (uint64_t)x->operands[0].imm;
		return true;
	}
	return rip_target(d->insn, target, &opi);
}

/* Functions that do not return, which a compiler may call from the middle
 * of a loop (an assert's cold stub). */
static bool is_noreturn_name(const char *name)
{
	static const char *const names[] = { "__assert_fail", "abort", "Py_FatalError", "_Py_FatalErrorFunc",
					     "__stack_chk_fail", "__cxa_throw", "_exit", "exit" };
	size_t i;

	for (i = 0; name && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

bool cp_dis_calls_nothing(cp_dis *d, const cp_image *img, uint64_t addr)
{
	uint64_t start, end, target;
	unsigned i;

	if (!cp_image_function(img, addr, &start, &end) || start != addr)
		return false;
	for (i = 0; i < 256 && addr < end && decode_at(d, img, addr); i++) {
		bool call = cs_insn_group(d->handle, d->insn, CS_GRP_CALL);
		bool jmp = d->insn->id == X86_INS_JMP;

		if (call || jmp) {
			if (!cp_dis_reaches(d, img, addr, &target))
				return false; /* through a register */
			if ((call || target < start || target >= end) && !is_noreturn_name(cp_image_plt_name(img, target)))
				return false;
		}
		addr += d->insn->size;
	}
	return addr >= end;
}

bool cp_dis_immediate(cp_dis *d, const cp_image *img, uint64_t addr, uint8_t *imm_off,
		      uint8_t *imm_size, int64_t *value)
{
	const cs_x86 *x;
	int i;

	if (!decode_at(d, img, addr))
		return false;
	x = &d->insn->detail->x86;
	if (!x->encoding.imm_offset || !x->encoding.imm_size)
		return false;
	for (i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_IMM) {
			*imm_off = x->encoding.imm_offset;
			*imm_size = x->encoding.imm_size;
			*value = x->operands[i].imm;
			return true;
		}
	return false;
}

bool cp_dis_is_cmp_reg_imm(cp_dis *d, const cp_image *img, uint64_t addr)
{
	const cs_x86 *x;
	int r;

	if (!decode_at(d, img, addr) || d->insn->id != X86_INS_CMP)
		return false;
	x = &d->insn->detail->x86;
	if (x->op_count != 2 || x->operands[0].type != X86_OP_REG || x->operands[1].type != X86_OP_IMM)
		return false;
	r = cp_reg64(x->operands[0].reg);
	return r >= 0 && r != R_RSP && r != R_RBP;
}

unsigned cp_dis_operand_size(cp_dis *d, const cp_image *img, uint64_t addr)
{
	if (!decode_at(d, img, addr) || d->insn->detail->x86.op_count == 0)
		return 0;
	return d->insn->detail->x86.operands[0].size;
}

bool cp_dis_displacement(cp_dis *d, const cp_image *img, uint64_t addr, uint8_t *disp_off,
			 uint8_t *disp_size, int64_t *value)
{
	const cs_x86 *x;
	int i;

	if (!decode_at(d, img, addr))
		return false;
	x = &d->insn->detail->x86;
	if (!x->encoding.disp_offset || !x->encoding.disp_size)
		return false;
	for (i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_MEM && x->operands[i].mem.base != X86_REG_RIP &&
		    (x->operands[i].mem.base != X86_REG_INVALID || x->operands[i].mem.index != X86_REG_INVALID)) {
			*disp_off = x->encoding.disp_offset;
			*disp_size = x->encoding.disp_size;
			*value = x->operands[i].mem.disp;
			return true;
		}
	return false;
}

unsigned cp_dis_size(cp_dis *d, const cp_image *img, uint64_t addr)
{
	return decode_at(d, img, addr) ? d->insn->size : 0;
}
