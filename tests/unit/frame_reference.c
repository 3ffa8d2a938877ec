/*
 * frame_reference.c - x86-64's frame evaluator (Zydis,
 * patcher/arch/x86_64/x86_64_frame_eval.c) against the capstone evaluator it
 * replaced (x86_frame_capstone.c): for every function of every x86-64
 * Cython extension module given, both evaluate it, plainly and with the
 * arguments seeded (cp_frame_eval_callee), and everything a frame tells its
 * readers must be the same: the snapshots of indexed arrays (bytes, known
 * bits, sources), the indexed loads, the immediates and compared values,
 * the constant lengths, every call with its known arguments, the address
 * stores, the leas and the addresses. Exits 1 on the first difference,
 * naming the file, the function and the field.
 *
 * usage: frame_reference FILE|DIR...  (directories: every *.so below)
 */
#include "arch/code.h"
#include "arch/frame.h"
#include "elf/image.h"
#include "scan/scan.h"
#include "so_files.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cp_status cp_x86_frame_eval(const cp_image *img, uint64_t start, uint64_t end, bool seed_args,
			    struct cp_frame *f, cp_error *err);
cp_status ref_x86_frame_eval(const cp_image *img, uint64_t start, uint64_t end, bool seed_args,
			     struct cp_frame *f, cp_error *err);

/* Seeded, only functions up to this size: cp_frame_eval_callee evaluates
 * the helpers a decoder calls (plan/plan_blob.c), and the big functions,
 * evaluated plainly, hold every instruction form; seeding them too would
 * double the test's time (minutes on the provider releases). */
#define SEED_MAX 16384

static size_t files, modules, functions, facts;

static bool same_mem(const void *a, const void *b, size_t n)
{
	return n == 0 || !memcmp(a, b, n);
}

static bool same_snaps(const struct cp_frame *a, const struct cp_frame *b)
{
	size_t i;

	if (a->nsnap != b->nsnap)
		return false;
	for (i = 0; i < a->nsnap; i++) {
		const struct cp_frame_snap *x = &a->snap[i], *y = &b->snap[i];

		if (x->base != y->base || x->len != y->len || !same_mem(x->val, y->val, x->len) ||
		    !same_mem(x->known, y->known, x->len) || !same_mem(x->src, y->src, x->len * sizeof(*x->src)))
			return false;
	}
	return true;
}

/* The same values in the same order; the first difference is printed. */
static bool same_values(const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
	size_t i;

	for (i = 0; i < na && i < nb; i++)
		if (a[i] != b[i]) {
			fprintf(stderr, "  value %zu: Zydis %#llx, capstone %#llx\n", i, (unsigned long long)a[i],
				(unsigned long long)b[i]);
			return false;
		}
	return na == nb;
}

static bool same_calls(const struct cp_frame *a, const struct cp_frame *b)
{
	size_t i;

	if (a->ncalls != b->ncalls)
		return false;
	for (i = 0; i < a->ncalls; i++) {
		const struct cp_frame_call *x = &a->calls[i], *y = &b->calls[i];

		if (x->insn != y->insn || x->target != y->target || x->known != y->known ||
		    strcmp(x->name ? x->name : "", y->name ? y->name : "") ||
		    memcmp(x->arg, y->arg, sizeof(x->arg)) || memcmp(x->arg_imm, y->arg_imm, sizeof(x->arg_imm)) ||
		    x->addr_known != y->addr_known || memcmp(x->addr, y->addr, sizeof(x->addr))) {
			fprintf(stderr, "  call %zu at %#llx: Zydis target %#llx %s known %#x; capstone target %#llx %s known %#x\n",
				i, (unsigned long long)x->insn, (unsigned long long)x->target, x->name ? x->name : "-", x->known,
				(unsigned long long)y->target, y->name ? y->name : "-", y->known);
			return false;
		}
	}
	return true;
}

static bool same_arglens(const struct cp_frame *a, const struct cp_frame *b)
{
	size_t i;

	if (a->narglens != b->narglens)
		return false;
	for (i = 0; i < a->narglens; i++) {
		const struct cp_frame_arglen *x = &a->arglens[i], *y = &b->arglens[i];

		if (x->insn != y->insn || x->len != y->len || x->set != y->set || x->ptr_set != y->ptr_set ||
		    x->is_bytes != y->is_bytes)
			return false;
	}
	return true;
}

static bool same_astores(const struct cp_frame *a, const struct cp_frame *b)
{
	size_t i;

	if (a->nastores != b->nastores)
		return false;
	for (i = 0; i < a->nastores; i++) {
		const struct cp_frame_astore *x = &a->astores[i], *y = &b->astores[i];

		if (x->off != y->off || x->va != y->va || x->insn != y->insn || x->resolved != y->resolved ||
		    x->next_known != y->next_known || x->next != y->next || x->next_insn != y->next_insn)
			return false;
	}
	return true;
}

static bool same_loads(const struct cp_frame *a, const struct cp_frame *b)
{
	size_t i;

	if (a->nloads != b->nloads)
		return false;
	for (i = 0; i < a->nloads; i++) {
		const struct cp_frame_load *x = &a->loads[i], *y = &b->loads[i];

		if (x->insn != y->insn || x->base != y->base || x->scale != y->scale || x->width != y->width)
			return false;
	}
	return true;
}

/* The first field in which the frames differ, or NULL. */
static const char *differs(const struct cp_frame *a, const struct cp_frame *b)
{
	if (!same_snaps(a, b))
		return "snapshots";
	if (!same_loads(a, b))
		return "indexed loads";
	if (!same_values(a->imms, a->nimms, b->imms, b->nimms))
		return "immediates";
	if (!same_values(a->cmps, a->ncmps, b->cmps, b->ncmps))
		return "compared immediates";
	if (a->ncmpvals != b->ncmpvals || !same_mem(a->cmpvals, b->cmpvals, a->ncmpvals * sizeof(*a->cmpvals)))
		return "compared values";
	if (!same_arglens(a, b))
		return "constant lengths";
	if (!same_calls(a, b))
		return "calls";
	if (!same_astores(a, b))
		return "address stores";
	if (a->nleas != b->nleas || !same_mem(a->leas, b->leas, a->nleas * sizeof(*a->leas)) ||
	    !same_mem(a->lea_insn, b->lea_insn, a->nleas * sizeof(*a->lea_insn)))
		return "leas";
	if (a->naddrs != b->naddrs || !same_mem(a->addrs, b->addrs, a->naddrs * sizeof(*a->addrs)))
		return "addresses";
	return NULL;
}

/* Both evaluations of [start, end); 0 when they agree. */
static int check_function(const char *path, const cp_image *img, uint64_t start, uint64_t end, bool seed)
{
	struct cp_frame a, b;
	const char *what = NULL;
	cp_error err;
	int bad = 0;

	if (cp_x86_frame_eval(img, start, end, seed, &a, &err) || ref_x86_frame_eval(img, start, end, seed, &b, &err)) {
		fprintf(stderr, "frame_reference: %s: %#llx: %s\n", path, (unsigned long long)start, err.msg);
		return 1;
	}
	if ((what = differs(&a, &b))) {
		fprintf(stderr, "frame_reference: %s: the function at %#llx%s: the %s differ (Zydis %zu calls, %zu "
				"loads; capstone %zu, %zu)\n",
			path, (unsigned long long)start, seed ? " (arguments seeded)" : "", what, a.ncalls, a.nloads,
			b.ncalls, b.nloads);
		bad = 1;
	}
	facts += a.nsnap + a.nloads + a.nimms + a.ncmpvals + a.narglens + a.ncalls + a.nastores + a.nleas + a.naddrs;
	cp_frame_free(&a);
	cp_frame_free(&b);
	return bad;
}

static int check_file(const char *path)
{
	cp_image *img = NULL;
	cp_error err;
	size_t i;
	int bad = 0;

	if (cp_image_open(path, &img, &err))
		return 0; /* not an ELF file the patcher reads */
	if (img->arch->e_machine == EM_X86_64 && cp_scan_is_module(img)) {
		for (i = 0; !bad && i < img->nfunc; i++) {
			uint64_t start, end;

			if (!cp_image_function(img, img->func[i], &start, &end) || start != img->func[i])
				continue;
			bad = check_function(path, img, start, end, false) ||
			      (end - start <= SEED_MAX && check_function(path, img, start, end, true));
			functions++;
		}
		modules++;
	}
	cp_image_close(img);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: frame_reference FILE|DIR...\n");
		return 64;
	}
	if (so_files_each(argv + 1, argc - 1, check_file, &files))
		return 1;
	if (!functions) {
		fprintf(stderr, "frame_reference: none of the %zu files holds an x86-64 Cython module's function\n",
			files);
		return 1;
	}
	printf("frame_reference: %zu functions of %zu x86-64 modules (%zu files) evaluated both ways, both plainly "
	       "and with arguments seeded; %zu facts the same\n",
	       functions, modules, files, facts);
	return 0;
}
