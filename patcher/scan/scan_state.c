/*
 * scan_state.c - which module-state word an import reads its
 * import-signature constant from.
 *
 * A module-state build (CYTHON_USE_MODULE_STATE) keeps its string table in
 * the module's state, not at a fixed address: after
 * `PyImport_ImportModule("M")` and its error check, Cython reads the
 * constant as `__pyx_mstate_global->__pyx_string_tab[k]`, which is
 * PyModule_GetState(PyState_FindModule(&moduledef)) and a load at a fixed
 * offset from its result. No load the code walk records has an address
 * then, so this reads forward from the import: the calls before the load
 * (the module lookup, the state lookup, or at -O0 Cython's helper that
 * wraps PyModule_GetState), the registers (and stack slots) that hold the
 * state's address, and the offset of the first word read through one.
 */
#include "scan/scan.h"
#include "util/error.h"

#include <string.h>

#define MAX_INSNS 256 /* from the import to the constant's load */
#define MAX_CALLS 3   /* the module lookup, the state lookup, a spare */
#define MAX_SPILLS 4
#define HELPER_INSNS 64

/* Where the state's address is held: registers (a bit each) and stack
 * slots (-O0 spills it between the call and the load). */
struct holders {
	uint32_t regs;
	int32_t spill[MAX_SPILLS];
	size_t nspill;
};

/* Whether the function at start (a short local helper, as -O0 leaves
 * Cython's __Pyx__PyModule_GetState) calls PyModule_GetState. */
static bool wraps_get_state(const cp_image *img, cp_dis *d, uint64_t start)
{
	uint64_t a = start, fstart, fend;
	struct cp_insn_facts f;
	int n;

	if (!cp_image_function(img, start, &fstart, &fend) || fstart != start)
		return false;
	for (n = 0; n < HELPER_INSNS && a < fend && cp_dis_at(d, img, a); n++, a += f.size) {
		const char *name;

		cp_insn_flow(d, &f);
		name = f.flow == CP_FLOW_CALL || f.flow == CP_FLOW_JUMP ? cp_insn_callee(img, &f) : NULL;
		if (name && !strcmp(name, "PyModule_GetState"))
			return true;
	}
	return false;
}

/* Whether the call returns the module state's address. */
static bool returns_state(const cp_image *img, cp_dis *d, const struct cp_insn_facts *f)
{
	const char *name = cp_insn_callee(img, f);

	if (name && !strcmp(name, "PyModule_GetState"))
		return true;
	return f->direct && !cp_image_plt_name(img, f->target) && wraps_get_state(img, d, f->target);
}

static bool spilled(const struct holders *h, int32_t disp)
{
	size_t i;

	for (i = 0; i < h->nspill; i++)
		if (h->spill[i] == disp)
			return true;
	return false;
}

/* What an instruction other than a call or branch does to the holders. */
static void step(struct holders *h, const struct cp_insn_facts *f)
{
	uint32_t before = h->regs;
	const struct cp_stack_facts *st = &f->stack;
	size_t i, k = 0;

	h->regs = f->regs_known ? h->regs & ~f->writes : 0;
	if (f->copy_dst >= 0 && ((before >> f->copy_src) & 1))
		h->regs |= 1u << f->copy_dst;
	if (st->fill_dst >= 0 && spilled(h, st->fill_disp))
		h->regs |= 1u << st->fill_dst;
	for (i = 0; i < h->nspill; i++) /* a slot written over no longer holds it */
		if (!(st->write && (st->disp == INT32_MIN || st->disp == h->spill[i])) &&
		    !(st->spill_src >= 0 && st->spill_disp == h->spill[i]))
			h->spill[k++] = h->spill[i];
	h->nspill = k;
	if (st->spill_src >= 0 && ((before >> st->spill_src) & 1) && h->nspill < MAX_SPILLS)
		h->spill[h->nspill++] = st->spill_disp;
}

bool cp_scan_state_read(const cp_scan *s, cp_dis *d, uint64_t call, int64_t *off)
{
	const cp_image *img = s->img;
	const int ret = img->arch->ret_reg;
	struct holders h;
	struct cp_insn_facts f;
	uint64_t a = call, start, end;
	int n, calls = 0;

	memset(&h, 0, sizeof(h));
	if (!cp_image_function(img, call, &start, &end) || !cp_dis_at(d, img, a))
		return false;
	cp_insn_flow(d, &f);
	for (n = 0, a += f.size; n < MAX_INSNS && a >= start && a < end && cp_dis_at(d, img, a); n++) {
		const char *name;

		cp_insn_facts(d, &f);
		if (f.based_dst >= 0 && ((h.regs >> f.based_base) & 1)) {
			*off = f.based_disp;
			return true;
		}
		switch (f.flow) {
		case CP_FLOW_CALL:
			name = cp_insn_callee(img, &f);
			/* the next import's, or more calls than the lookups make */
			if ((name && cp_scan_is_import_call(name)) || ++calls > MAX_CALLS)
				return false;
			h.regs = returns_state(img, d, &f) ? 1u << ret : 0;
			a += f.size;
			continue;
		case CP_FLOW_JUMP:
			if (!f.direct)
				return false;
			a = f.target;
			continue;
		case CP_FLOW_RET: case CP_FLOW_HALT: case CP_FLOW_TRAP:
			return false;
		default: /* a conditional branch leaves for the error path */
			break;
		}
		step(&h, &f);
		a += f.size;
	}
	return false;
}
