/*
 * arch.h - the instruction set, as the rest of cypatch may see it.
 *
 * Each supported machine is one `struct cp_arch` (arch/<machine>/), chosen
 * from e_machine when an image is opened (cp_image.arch). Nothing outside
 * arch/<machine>/ names a register, an opcode or a relocation type of its
 * own: it asks the image's arch. The model is lld's TargetInfo: facts and
 * bytes come back, the planner records the edits.
 */
#ifndef CP_ARCH_H
#define CP_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cypatch.h"

struct cp_image;
struct cp_dis;
struct cp_insn_facts;
struct cp_code_visitor;
struct cp_frame;

/* What a dynamic relocation does, as far as cypatch cares. */
enum cp_reloc_kind {
	CP_RELOC_OTHER,
	CP_RELOC_RELATIVE,  /* base + addend */
	CP_RELOC_JUMP_SLOT, /* a function's PLT slot (lazy binding) */
	CP_RELOC_GLOB_DAT,  /* a symbol's GOT slot */
};

struct cp_arch {
	const char *name;        /* as `show` prints it: "x86-64" */
	uint16_t e_machine;      /* EM_* */
	unsigned user_va_bits;   /* the user address space Linux maps, in bits */

	/* Relocations. */
	uint32_t reloc_relative; /* the type RELR entries stand for */
	enum cp_reloc_kind (*reloc_kind)(uint32_t type);
	const char *(*reloc_name)(uint32_t type);

	/* The PLT: plt_jump answers whether the bytes at d (n of them, at
	 * address addr) are a PLT entry's jump through a GOT slot, which slot,
	 * and how many bytes the jump takes; entries are looked for every
	 * plt_step bytes. */
	unsigned plt_step;
	bool (*plt_jump)(const uint8_t *d, size_t n, uint64_t addr, uint64_t *slot, unsigned *len);

	/* Reading code (decoder, code walk, frame evaluation; arch/code.h and
	 * arch/frame.h say what each does). */
	const char *triplet;     /* the GNU triplet of its Linux: "x86_64-linux-gnu" */
	unsigned max_insn;       /* the longest instruction, in bytes */
	const int8_t *arg_regs;  /* the integer argument registers, ABI order */
	unsigned nargs;
	int8_t ret_reg;          /* the register a function returns a pointer in */
	uint32_t caller_saved;   /* registers a call may change, a bit each */
	cp_status (*dis_open)(struct cp_dis *d, cp_error *err);
	void (*dis_close)(struct cp_dis *d);
	bool (*dis_next)(struct cp_dis *d, const uint8_t **code, size_t *size, uint64_t *addr);
	bool (*insn_pcrel)(const struct cp_dis *d, uint8_t *disp_off, uint8_t *size, uint64_t *target);
	bool (*insn_reaches)(const struct cp_dis *d, uint64_t *target);
	bool (*insn_immediate)(const struct cp_dis *d, uint8_t *off, uint8_t *size, int64_t *value);
	bool (*insn_is_cmp_reg_imm)(const struct cp_dis *d);
	unsigned (*insn_operand_size)(const struct cp_dis *d);
	bool (*insn_displacement)(const struct cp_dis *d, uint8_t *off, uint8_t *size, int64_t *value);
	unsigned (*insn_size)(const struct cp_dis *d);
	void (*insn_describe)(const struct cp_dis *d, char *buf, size_t n);
	void (*insn_facts)(const struct cp_dis *d, struct cp_insn_facts *f);
	void (*insn_flow)(const struct cp_dis *d, struct cp_insn_facts *f);
	bool (*calls_nothing)(struct cp_dis *d, const struct cp_image *img, uint64_t addr);
	cp_status (*code_walk)(const struct cp_image *img, uint64_t start, uint64_t end,
			       const struct cp_code_visitor *v, cp_error *err);
	/* Whether what code_walk reports for a function depends only on that
	 * function's bytes and the image's tables, so that a function whose
	 * bytes changed can be walked again alone (x86-64's linear walk; not
	 * aarch64's, which solves each function with the jumps into it from
	 * anywhere). */
	bool walk_local;
	cp_status (*frame_eval)(const struct cp_image *img, uint64_t start, uint64_t end, bool callee,
				struct cp_frame *f, cp_error *err);

	/* Writing code (re-encoding operands, branches, thunks, the stub):
	 * every machine provides them but insn_completes and load_rewrite.
	 * Bytes and facts come back; where a field sits in an instruction is
	 * the decoder's answer, and recording the edit is the planner's. */

	/* A PC-relative operand re-encoded: field (pcrel_size bytes) holds
	 * the operand's current bytes and is rewritten so that the
	 * instruction of insn_size bytes at insn reaches target; false, the
	 * field untouched, when target is out of reach or the form cannot.
	 * reach says how far, for messages ("a 32-bit displacement"). */
	uint8_t pcrel_size;
	bool (*pcrel_put)(uint8_t *field, uint64_t insn, unsigned insn_size, uint64_t target);
	const char *reach;

	/* Whether the decoded instruction completes an address from a
	 * register (aarch64's ADD after an ADRP): the code walk, not the
	 * instruction, knows its target, and pcrel_put (the field being the
	 * whole instruction) makes it reach one by itself. NULL where every
	 * reference is PC-relative on its own. */
	bool (*insn_completes)(const struct cp_dis *d);

	/* An immediate or displacement field of size bytes, holding its
	 * current bytes, set to value; false, the field untouched, when value
	 * does not fit it. */
	bool (*field_put)(uint8_t *field, unsigned size, int64_t value);

	/* The call or jump insn[0, len) as a direct one in the same bytes
	 * (out[0, len)): its PC-relative field at *field_at left for
	 * pcrel_put, and *branch_size the length of the branch that holds it
	 * (less than len when padding follows); false for a form that cannot
	 * become one. */
	bool (*branch_rewrite)(const uint8_t *insn, unsigned len, uint8_t *out, uint8_t *field_at,
			       uint8_t *branch_size);

	/* A load of a pointer from memory (a GOT slot: -fno-plt on aarch64)
	 * as an instruction of the same len bytes that puts an address in
	 * the same register instead: its PC-relative field left for
	 * pcrel_put. Whatever the register then feeds (a blr, a copy kept
	 * for later calls) gets that address. False for another form; NULL
	 * where the planner refuses such loads. */
	bool (*load_rewrite)(const uint8_t *insn, unsigned len, uint8_t *out);

	/* A thunk of thunk_size bytes at address at (out): passes address
	 * ctx as argument arg (0-based, the C calling convention's) and jumps
	 * to entry; trap bytes after. *jump is where its jump sits (the load
	 * of ctx is at at). False when arg has no register or a target is
	 * out of reach. */
	unsigned thunk_size;
	bool (*thunk)(uint8_t *out, uint64_t at, unsigned arg, uint64_t ctx, uint64_t entry,
		      uint64_t *jump);

	/* A stand-in of thunk_size bytes (out): a function that returns the
	 * int value, whatever its arguments (--tolerate-missing); false when
	 * value does not fit. */
	bool (*standin)(uint8_t *out, long value);

	/* The fallback stub (patcher/stub/) compiled for this machine. */
	const struct cp_stub *stub;
};

/* The fallback stub as a flat blob (patcher/stub/embed_stub.cmake writes
 * one per machine): where its entries are, per redirected function in the
 * order of stub/fallback_abi.h's enum cp_fb_api. */
#define CP_STUB_NENTRIES 6
struct cp_stub {
	const uint8_t *code;
	size_t size;
	unsigned long entry[CP_STUB_NENTRIES];
};

/* The architecture of machine e_machine, or NULL when unsupported. */
const struct cp_arch *cp_arch_for_machine(unsigned e_machine);

/* The names of the supported machines, read from the table, for messages
 * ("x86-64"; "x86-64 and aarch64"): written into buf (n bytes), returned. */
const char *cp_arch_supported(char *buf, size_t n);

extern const struct cp_arch cp_arch_x86_64;
extern const struct cp_arch cp_arch_aarch64;

#endif
