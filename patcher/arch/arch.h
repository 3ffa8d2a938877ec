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

#include <stdint.h>

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

	/* Relocations. */
	uint32_t reloc_relative; /* the type RELR entries stand for */
	enum cp_reloc_kind (*reloc_kind)(uint32_t type);
	const char *(*reloc_name)(uint32_t type);

	/* Reading code (decoder, code walk, frame evaluation). */

	/* Writing code (re-encoding operands, branches, thunks, the stub). */
};

/* The architecture of machine e_machine, or NULL when unsupported. */
const struct cp_arch *cp_arch_for_machine(unsigned e_machine);

/* The names of the supported machines, for messages: "x86-64". */
const char *cp_arch_supported(void);

extern const struct cp_arch cp_arch_x86_64;

#endif
