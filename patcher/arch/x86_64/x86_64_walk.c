/*
 * x86_64_walk.c - x86-64's linear code walk and its register tracker (see
 * arch/code.h).
 *
 * The walk is the one pass that reads every instruction of a module (a
 * real one holds a million), so it decodes with Zydis, which gives an
 * instruction's operands and the registers it writes without formatting
 * its text; capstone, which the rest of arch/x86_64 reads single
 * instructions with, takes about four times as long per instruction here.
 * tests/unit/walk_reference.c proves on every corpus and real module that
 * this walk reports what the capstone walk it replaced reported.
 */
#include "arch/x86_64/zydis.h"
#include "util/error.h"
#include "util/sort.h"

#include <assert.h>
#include <string.h>

static const int clobbered[9] = { R_RAX, R_RCX, R_RDX, R_RSI, R_RDI, R_R8, R_R9, R_R10, R_R11 };

struct walk {
	const cp_image *img;
	const struct cp_code_visitor *v;
	struct cp_val reg[16];
	struct cp_val hoisted[16]; /* last address lea'd into each callee-saved register */
	size_t next_func; /* index into img->func of the next function start */
	size_t next_cut;  /* index into v->cuts of the next cut */
};

/* A register no longer known is all zero, as after reset(): what a copy
 * of it carries, and what a call's arguments record, is then the same
 * whether the walk stepped an instruction that cannot make anything known
 * or passed over it (operands_matter). */
static void reset(struct walk *w)
{
	memset(w->reg, 0, sizeof(w->reg));
}

static void forget(struct walk *w, int r)
{
	w->reg[r] = (struct cp_val){ CP_V_UNKNOWN, 0, 0 };
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

/* A near branch's target given in the instruction, when it is. */
static bool imm_target(const struct zin *z, uint64_t *target)
{
	const ZydisDecodedOperand *op = &z->op[0];

	if (z->in.operand_count_visible != 1 || op->type != ZYDIS_OPERAND_TYPE_IMMEDIATE)
		return false;
	*target = cp_zimm(z, op);
	return true;
}

static bool near(const struct zin *z, ZydisMnemonic m)
{
	return z->in.mnemonic == m && z->in.meta.branch_type != ZYDIS_BRANCH_TYPE_FAR;
}

static void emit_ref(struct walk *w, const struct zin *z, uint64_t target, enum cp_insn_ref_kind kind)
{
	struct cp_code_ref r;

	if (!w->v->on_ref)
		return;
	memset(&r, 0, sizeof(r));
	r.addr = z->addr;
	r.size = z->in.length;
	r.disp_off = z->in.raw.disp.offset;
	r.target = target;
	r.kind = kind;
	w->v->on_ref(w->v->ctx, &r);
}

static void emit_call(struct walk *w, const struct zin *z, uint64_t target, const char *name)
{
	struct cp_call c;
	int i;

	if (!w->v->on_call)
		return;
	c.addr = z->addr;
	c.target = target;
	c.name = name;
	memset(c.arg, 0, sizeof(c.arg));
	for (i = 0; i < X86_64_NARGS; i++)
		c.arg[i] = w->reg[cp_x86_64_arg_regs[i]];
	w->v->on_call(w->v->ctx, &c);
}

/* A call or jmp: its target, and the name it reaches. */
static void branch_target(struct walk *w, const struct zin *z, uint64_t *target, const char **name)
{
	uint64_t t;
	int opi;

	*target = 0;
	*name = NULL;
	if (imm_target(z, target))
		*name = cp_callee_name(w->img, *target);
	else if (cp_zrip_target(z, &t, &opi))
		*name = cp_image_got_name(w->img, t);
}

static void on_call(struct walk *w, const struct zin *z)
{
	uint64_t target;
	const char *name;
	size_t i;

	branch_target(w, z, &target, &name);
	emit_call(w, z, target, name);
	for (i = 0; i < sizeof(clobbered) / sizeof(clobbered[0]); i++)
		forget(w, clobbered[i]);
}

/* A jmp to an imported function is a tail call; any other ends the block. */
static void on_jmp(struct walk *w, const struct zin *z)
{
	uint64_t target;
	const char *name;

	branch_target(w, z, &target, &name);
	if (name && (!target || cp_image_plt_name(w->img, target)))
		emit_call(w, z, target, name);
	end_block(w);
}

static void set(struct walk *w, int r, uint8_t kind, uint64_t v, uint64_t origin)
{
	w->reg[r].kind = kind;
	w->reg[r].v = v;
	w->reg[r].origin = origin;
}

/* mov r, [r2 + disp] with r2 an address (unoptimised code reaches the
 * module state as lea rax, [rip + state]; mov rax, [rax + off]). */
static bool track_based_load(struct walk *w, const struct zin *z, int d)
{
	const ZydisDecodedOperand *src = &z->op[1];
	struct cp_code_ref r;
	int b = cp_zreg64(src->mem.base);
	uint64_t t;

	if (src->mem.index != ZYDIS_REGISTER_NONE || b < 0 || w->reg[b].kind != CP_V_ADDR)
		return false;
	t = w->reg[b].v + (uint64_t)src->mem.disp.value;
	memset(&r, 0, sizeof(r));
	r.addr = z->addr;
	r.size = z->in.length;
	r.target = t;
	r.kind = CP_REF_LOAD;
	if (w->v->on_ref)
		w->v->on_ref(w->v->ctx, &r);
	set(w, d, CP_V_LOAD, t, z->addr);
	return true;
}

/* mov/lea into a whole register: the cases the tracker follows. Returns
 * true when it set the destination itself. */
static bool track_move(struct walk *w, const struct zin *z, bool has_rip, uint64_t target)
{
	const ZydisDecodedOperand *dst = &z->op[0], *src = &z->op[1];
	int d;

	if (z->in.operand_count_visible != 2 || dst->type != ZYDIS_OPERAND_TYPE_REGISTER || dst->size < 32)
		return false;
	d = cp_zreg64(dst->reg.value);
	if (d < 0)
		return false;
	if (z->in.mnemonic == ZYDIS_MNEMONIC_LEA && has_rip) {
		set(w, d, CP_V_ADDR, target, z->addr);
		if (callee_saved(d) && dst->size == 64)
			w->hoisted[d] = w->reg[d];
		return true;
	}
	if (z->in.mnemonic != ZYDIS_MNEMONIC_MOV)
		return false;
	if (src->type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
		/* what the register holds: a 32-bit move zero-extends */
		set(w, d, CP_V_IMM, dst->size == 32 ? (uint32_t)src->imm.value.u : src->imm.value.u, z->addr);
		return true;
	}
	if (src->type == ZYDIS_OPERAND_TYPE_REGISTER && cp_zreg64(src->reg.value) >= 0) {
		w->reg[d] = w->reg[cp_zreg64(src->reg.value)];
		return true;
	}
	if (src->type != ZYDIS_OPERAND_TYPE_MEMORY || dst->size != 64)
		return false;
	if (has_rip) {
		set(w, d, CP_V_LOAD, target, z->addr);
		return true;
	}
	return track_based_load(w, z, d);
}

/* xor r, r zeroes r. */
static bool track_zero(struct walk *w, const struct zin *z)
{
	const ZydisDecodedOperand *a = &z->op[0], *b = &z->op[1];

	if (z->in.mnemonic != ZYDIS_MNEMONIC_XOR || z->in.operand_count_visible != 2 ||
	    a->type != ZYDIS_OPERAND_TYPE_REGISTER || b->type != ZYDIS_OPERAND_TYPE_REGISTER ||
	    a->reg.value != b->reg.value || cp_zreg64(a->reg.value) < 0)
		return false;
	set(w, cp_zreg64(a->reg.value), CP_V_IMM, 0, z->addr);
	return true;
}

/* Every register it writes, explicit or implied, is no longer known. */
static void clear_written(struct walk *w, const struct zin *z)
{
	int i, r;

	for (i = 0; i < z->in.operand_count; i++)
		if ((r = cp_zwritten(&z->op[i])) >= 0)
			forget(w, r);
}

static enum cp_insn_ref_kind ref_kind(const struct zin *z, int opi)
{
	switch (z->in.mnemonic) {
	case ZYDIS_MNEMONIC_LEA:
		return CP_REF_LEA;
	case ZYDIS_MNEMONIC_MOV: case ZYDIS_MNEMONIC_MOVZX: case ZYDIS_MNEMONIC_MOVSX: case ZYDIS_MNEMONIC_MOVSXD:
		return opi == 0 ? CP_REF_STORE : CP_REF_LOAD;
	default:
		return CP_REF_OTHER;
	}
}

static bool is_jump(const struct zin *z)
{
	return z->in.meta.category == ZYDIS_CATEGORY_COND_BR || z->in.meta.category == ZYDIS_CATEGORY_UNCOND_BR;
}

static void step(struct walk *w, const struct zin *z)
{
	uint64_t target = 0, to;
	int opi = -1;
	bool has_rip = cp_zrip_target(z, &target, &opi);

	if (has_rip && !near(z, ZYDIS_MNEMONIC_CALL) && !near(z, ZYDIS_MNEMONIC_JMP))
		emit_ref(w, z, target, ref_kind(z, opi));
	if (near(z, ZYDIS_MNEMONIC_CALL)) {
		on_call(w, z);
		return;
	}
	if (w->v->on_jump && is_jump(z) && imm_target(z, &to))
		w->v->on_jump(w->v->ctx, z->addr, to);
	if (near(z, ZYDIS_MNEMONIC_JMP)) {
		on_jmp(w, z);
		if (w->v->on_end)
			w->v->on_end(w->v->ctx, z->addr);
		return;
	}
	if (near(z, ZYDIS_MNEMONIC_RET) || z->in.mnemonic == ZYDIS_MNEMONIC_UD2 || z->in.mnemonic == ZYDIS_MNEMONIC_HLT) {
		end_block(w);
		if (w->v->on_end)
			w->v->on_end(w->v->ctx, z->addr);
		return;
	}
	if (track_move(w, z, has_rip, target) || track_zero(w, z))
		return;
	clear_written(w, z);
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

/* Whether any register holds a value the tracker follows. */
static bool any_known(const struct walk *w)
{
	int r;

	for (r = 0; r < 16; r++)
		if (w->reg[r].kind != CP_V_UNKNOWN)
			return true;
	return false;
}

/* An operand of the form [rip + disp]: in 64-bit mode only ModRM's mod 0,
 * r/m 5 encodes it. */
static bool rip_modrm(const ZydisDecodedInstruction *in)
{
	return (in->attributes & ZYDIS_ATTRIB_HAS_MODRM) && in->raw.modrm.mod == 0 && in->raw.modrm.rm == 5;
}

/*
 * Whether step() can read anything in the instruction's operands. The
 * operands are a third of the decode's time, and most instructions are
 * arithmetic or moves whose only effect here is to forget the registers
 * they write, or to copy one: when no register is known, there is nothing
 * to forget or copy. A mov or lea still matters when it names an address
 * ([rip + disp]), a mov when it sets a constant.
 */
static bool operands_matter(const struct walk *w, const ZydisDecodedInstruction *in)
{
	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_CALL: case ZYDIS_MNEMONIC_JMP: case ZYDIS_MNEMONIC_RET: case ZYDIS_MNEMONIC_UD2:
	case ZYDIS_MNEMONIC_HLT: case ZYDIS_MNEMONIC_XOR:
		return true;
	case ZYDIS_MNEMONIC_MOV:
		return rip_modrm(in) || in->raw.imm[0].size || any_known(w);
	default:
		break;
	}
	return in->meta.category == ZYDIS_CATEGORY_COND_BR || in->meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
	       rip_modrm(in) || any_known(w);
}

static void state_of(const struct walk *w, struct cp_code_state *st)
{
	int r;

	_Static_assert(CP_CODE_STATE_VALS == 32, "the registers, then the hoisted addresses");
	for (r = 0; r < 16; r++) {
		st->kind[r] = w->reg[r].kind;
		st->v[r] = w->reg[r].v;
		st->origin[r] = w->reg[r].origin;
		st->kind[16 + r] = w->hoisted[r].kind;
		st->v[16 + r] = w->hoisted[r].v;
		st->origin[16 + r] = w->hoisted[r].origin;
	}
}

static void load_state(struct walk *w, const struct cp_code_state *st)
{
	int r;

	for (r = 0; r < 16; r++) {
		w->reg[r] = (struct cp_val){ st->kind[r], st->v[r], st->origin[r] };
		w->hoisted[r] = (struct cp_val){ st->kind[16 + r], st->v[16 + r], st->origin[16 + r] };
	}
}

/* At the first instruction at or after a cut: the visitor is told where
 * the walk stands; true when it stops the walk. A cut that the function it
 * lies in ends after, inside its last instruction, is passed over: a walk
 * begun at the next function (a thread's run, a unit walked again) does
 * not meet it, and the point would be that function's start. */
static bool at_cut(struct walk *w, uint64_t addr)
{
	const struct cp_code_visitor *v = w->v;
	uint64_t here = w->next_func ? w->img->func[w->next_func - 1] : 0; /* enter() has passed it */
	struct cp_code_state st;
	bool late;

	if (w->next_cut >= v->ncuts || v->cuts[w->next_cut] > addr)
		return false;
	do
		late = v->cuts[w->next_cut++] < here;
	while (w->next_cut < v->ncuts && v->cuts[w->next_cut] <= addr);
	if (late)
		return false;
	state_of(w, &st);
	return v->on_cut(v->ctx, addr, &st);
}

/* Bytes from addr that one instruction may take: up to the next function
 * start, which an instruction never crosses (enter() has passed the starts
 * up to addr). */
static size_t room(const struct walk *w, uint64_t addr, size_t left)
{
	const cp_image *img = w->img;
	uint64_t next;

	if (w->next_func >= img->nfunc)
		return left;
	next = img->func[w->next_func];
	assert(next > addr);
	return next - addr < left ? (size_t)(next - addr) : left;
}

/*
 * A linear sweep that starts again at every function start: bytes before
 * one that do not decode up to it (data, padding) are stepped over one at a
 * time, so an instruction is never read across it. That makes a function's
 * walk the same whether the sweep came from the section's start or began
 * at the function (walk_local: the threaded walk and the check's splice).
 */
static bool walk_range(struct walk *w, const ZydisDecoder *dec, const struct cp_section *s, uint64_t start,
		       uint64_t end, const struct cp_code_state *from)
{
	const uint8_t *code = cp_image_bytes(w->img, s->offset + (start - s->addr), end - start);
	size_t pos = 0, size = end - start;
	ZydisDecoderContext ctx;
	struct zin z;

	if (!code)
		return false;
	reset(w);
	memset(w->hoisted, 0, sizeof(w->hoisted));
	if (from)
		load_state(w, from);
	w->next_func = cp_image_func_after(w->img, start);
	w->next_cut = w->v->on_cut ? cp_first_key_at_least(w->v->cuts, w->v->ncuts, sizeof(uint64_t), 0, start) : 0;
	while (pos < size) {
		enter(w, start + pos);
		if (w->v->on_cut && at_cut(w, start + pos))
			return true;
		/* the operand slots past the instruction's are not zeroed:
		 * nothing reads them */
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(dec, &ctx, code + pos, room(w, start + pos, size - pos),
								&z.in))) {
			pos++;
			reset(w);
			continue;
		}
		z.addr = start + pos;
		pos += z.in.length;
		if (!operands_matter(w, &z.in))
			continue;
		/* Zydis fails this only for bad arguments (not seen); if it
		 * ever does, the registers are forgotten, as after a byte
		 * that does not decode */
		if (ZYAN_SUCCESS(ZydisDecoderDecodeOperands(dec, &ctx, &z.in, z.op, z.in.operand_count)))
			step(w, &z);
		else
			reset(w);
	}
	return false;
}

cp_status cp_x86_code_walk(const cp_image *img, uint64_t start, uint64_t end,
			   const struct cp_code_visitor *v, cp_error *err)
{
	struct walk w;
	ZydisDecoder dec;
	size_t i;

	if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return cp_fail(err, CP_E_INTERNAL, "%s: the x86-64 decoder did not start", img->path);
	memset(&w, 0, sizeof(w));
	w.img = img;
	w.v = v;
	for (i = 0; i < img->nsec; i++) {
		uint64_t a, b;

		if (cp_walk_span(&img->sec[i], start, end, &a, &b) &&
		    walk_range(&w, &dec, &img->sec[i], a, b, a == start ? v->from : NULL))
			break; /* stopped at a cut */
	}
	return CP_OK;
}
