/*
 * facts_reference.c - x86-64's cp_dis (Zydis decodes, patcher/arch/x86_64/
 * x86_64_decode.c and x86_64_facts.c) against the capstone reading it replaced
 * (x86_facts_capstone.c): every function of every x86-64 Cython extension
 * module given is decoded linearly by both, and for every instruction both
 * must decode the same bytes or neither, to the same length, with the same
 * facts (struct cp_insn_facts, every field). So capstone, which now decodes
 * an instruction only when asked about its fields or text, finds the
 * instruction Zydis decoded wherever it found one before. Exits 1 on the
 * first difference, naming the file, the instruction and the field.
 *
 * usage: facts_reference FILE|DIR...  (directories: every *.so below)
 */
#include "arch/code.h"
#include "elf/image.h"
#include "scan/scan.h"
#include "so_files.h"

#include <capstone/capstone.h>
#include <elf.h>
#include <stdio.h>
#include <string.h>

void ref_x86_insn_facts(csh h, const cs_insn *in, struct cp_insn_facts *f);

struct both {
	cp_dis dis;
	csh h;
	cs_insn *in;
};

static size_t files, modules, insns;

/* The first field in which the facts differ, or NULL. */
static const char *differs(const struct cp_insn_facts *a, const struct cp_insn_facts *b)
{
	const struct cp_stack_facts *x = &a->stack, *y = &b->stack;

	if (a->addr != b->addr || a->size != b->size)
		return "length";
	if (a->flow != b->flow || a->cond != b->cond || a->nop != b->nop)
		return "flow";
	if (a->direct != b->direct || a->target != b->target || a->via_slot != b->via_slot || a->slot != b->slot)
		return "target";
	if (a->regs_known != b->regs_known || a->writes != b->writes || a->moves_sp != b->moves_sp)
		return "registers written";
	if (a->imm_reg != b->imm_reg || (a->imm_reg >= 0 && a->imm != b->imm))
		return "constant";
	if (a->load_reg != b->load_reg || (a->load_reg >= 0 && a->load_addr != b->load_addr))
		return "load";
	if (a->copy_dst != b->copy_dst || a->copy_src != b->copy_src)
		return "copy";
	if (a->addr_reg != b->addr_reg || (a->addr_reg >= 0 && a->addr_val != b->addr_val))
		return "address";
	if (a->test_reg != b->test_reg)
		return "test";
	if (x->spill_src != y->spill_src || x->fill_dst != y->fill_dst ||
	    (x->spill_src >= 0 && x->spill_disp != y->spill_disp) || (x->fill_dst >= 0 && x->fill_disp != y->fill_disp))
		return "spill or fill";
	if (x->write != y->write || x->addr_taken != y->addr_taken ||
	    ((x->write || x->addr_taken) && x->disp != y->disp) || (x->write && x->size != y->size))
		return "stack write";
	return NULL;
}

/* Both readings of [start, end); 0 when they agree. */
static int check_function(const char *path, struct both *b, const uint8_t *code, size_t n, uint64_t start)
{
	const uint8_t *zp = code, *cp = code;
	size_t zn = n, cn = n;
	uint64_t za = start, ca = start;

	while (zn) {
		uint64_t at = za;
		bool zok = cp_dis_next(&b->dis, &zp, &zn, &za);
		bool cok = cs_disasm_iter(b->h, &cp, &cn, &ca, b->in);
		struct cp_insn_facts zf, cf;
		const char *what = NULL;

		if (zok != cok || za != ca) {
			fprintf(stderr, "facts_reference: %s: %#llx: %s\n", path, (unsigned long long)at,
				zok != cok ? (zok ? "Zydis decodes it, capstone does not" : "capstone decodes it, Zydis does not")
					   : "the decoders read different lengths");
			return 1;
		}
		if (!zok) { /* neither: step over the byte, as the analyses do */
			zp++, zn--, za++;
			cp = zp, cn = zn, ca = za;
			continue;
		}
		cp_insn_facts(&b->dis, &zf);
		ref_x86_insn_facts(b->h, b->in, &cf);
		if ((what = differs(&zf, &cf))) {
			fprintf(stderr, "facts_reference: %s: %#llx (%s %s): the %s differ\n", path,
				(unsigned long long)b->in->address, b->in->mnemonic, b->in->op_str, what);
			return 1;
		}
		insns++;
	}
	return 0;
}

static int check_module(const char *path, const cp_image *img, struct both *b)
{
	cp_error err;
	size_t i;
	int bad = 0;

	if (cp_dis_open(&b->dis, img, &err)) {
		fprintf(stderr, "facts_reference: %s: %s\n", path, err.msg);
		return 1;
	}
	for (i = 0; !bad && i < img->nfunc; i++) {
		const struct cp_section *s;
		const uint8_t *code;
		uint64_t start, end;

		if (!cp_image_function(img, img->func[i], &start, &end) || start != img->func[i] ||
		    !(s = cp_image_section_at(img, start)) || end - start > s->size - (start - s->addr))
			continue;
		code = cp_image_bytes(img, s->offset + (start - s->addr), end - start);
		if (code)
			bad = check_function(path, b, code, end - start, start);
	}
	cp_dis_close(&b->dis);
	return bad;
}

static int check_file(const char *path)
{
	struct both b;
	cp_image *img = NULL;
	cp_error err;
	int bad = 0;

	if (cp_image_open(path, &img, &err))
		return 0; /* not an ELF file the patcher reads */
	if (img->arch->e_machine == EM_X86_64 && cp_scan_is_module(img)) {
		memset(&b, 0, sizeof(b));
		if (cs_open(CS_ARCH_X86, CS_MODE_64, &b.h) != CS_ERR_OK || cs_option(b.h, CS_OPT_DETAIL, CS_OPT_ON) ||
		    !(b.in = cs_malloc(b.h))) {
			fprintf(stderr, "facts_reference: capstone did not start\n");
			bad = 1;
		} else {
			bad = check_module(path, img, &b);
			modules++;
		}
		if (b.in)
			cs_free(b.in, 1);
		if (b.h)
			cs_close(&b.h);
	}
	cp_image_close(img);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: facts_reference FILE|DIR...\n");
		return 64;
	}
	if (so_files_each(argv + 1, argc - 1, check_file, &files))
		return 1;
	if (!insns) {
		fprintf(stderr, "facts_reference: none of the %zu files holds an x86-64 Cython module's function\n",
			files);
		return 1;
	}
	printf("facts_reference: %zu instructions of %zu x86-64 modules (%zu files) read the same by both decoders, "
	       "with the same facts\n",
	       insns, modules, files);
	return 0;
}
