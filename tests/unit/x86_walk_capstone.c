/*
 * x86_walk_capstone.c - the reference for x86-64's code walk: the capstone
 * walk that patcher/arch/x86_64/x86_64_walk.c (Zydis) replaced, kept as it was
 * (cp_code_ref's text aside) so that walk_reference.c can prove the two
 * report the same on every module.
 */
#include "arch/x86_64/x86_64.h"
#include "util/error.h"

#include <stdio.h>
#include <string.h>

static const int clobbered[9] = { R_RAX, R_RCX, R_RDX, R_RSI, R_RDI, R_R8, R_R9, R_R10, R_R11 };

struct walk {
	const cp_image *img;
	const struct cp_code_visitor *v;
	struct cp_val reg[16];
	struct cp_val hoisted[16]; /* last address lea'd into each callee-saved register */
	size_t next_func; /* index into img->func of the next function start */
};

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
	w->v->on_ref(w->v->ctx, &r);
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
	memset(c.arg, 0, sizeof(c.arg));
	for (i = 0; i < 6; i++)
		c.arg[i] = w->reg[cp_x86_64_arg_regs[i]];
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
		*name = cp_callee_name(w->img, *target);
	} else if (cp_x86_rip_target(in, &t, &opi)) {
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
	bool has_rip = cp_x86_rip_target(in, &target, &opi);

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
	w->next_func = cp_image_func_after(w->img, addr);
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
		size_t room = size, before;

		/* no instruction is read across a function start (as the walk) */
		enter(w, addr);
		if (w->next_func < w->img->nfunc && w->img->func[w->next_func] - addr < room)
			room = (size_t)(w->img->func[w->next_func] - addr);
		before = room;
		if (!cs_disasm_iter(x86_dis(d)->handle, &code, &room, &addr, x86_dis(d)->insn)) {
			code++;
			size--;
			addr++;
			reset(w);
			continue;
		}
		size -= before - room;
		step(w, x86_dis(d)->handle, x86_dis(d)->insn);
	}
}

cp_status ref_x86_code_walk(const cp_image *img, uint64_t start, uint64_t end,
			    const struct cp_code_visitor *v, cp_error *err);

cp_status ref_x86_code_walk(const cp_image *img, uint64_t start, uint64_t end,
			    const struct cp_code_visitor *v, cp_error *err)
{
	struct walk w;
	cp_dis d = { NULL, NULL }; /* the walk decodes through capstone itself */
	size_t i;
	cp_status st = cp_x86_dis_open(&d, err);

	if (st)
		return st;
	memset(&w, 0, sizeof(w));
	w.img = img;
	w.v = v;
	for (i = 0; i < img->nsec; i++) {
		uint64_t a, b;

		if (cp_walk_span(&img->sec[i], start, end, &a, &b))
			walk_range(&w, &d, &img->sec[i], a, b);
	}
	cp_x86_dis_close(&d);
	return CP_OK;
}

