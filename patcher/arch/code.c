/*
 * code.c - reading code through the image's architecture (see code.h):
 * the image-side half of the decoder (which bytes an address holds) and
 * the dispatch to struct cp_arch.
 */
#include "arch/code.h"
#include "arch/frame.h"

#include <elf.h>
#include <string.h>

cp_status cp_dis_open_arch(cp_dis *d, const struct cp_arch *arch, cp_error *err)
{
	d->arch = arch;
	d->impl = NULL;
	return arch->dis_open(d, err);
}

cp_status cp_dis_open(cp_dis *d, const cp_image *img, cp_error *err)
{
	return cp_dis_open_arch(d, img->arch, err);
}

void cp_dis_close(cp_dis *d)
{
	if (d->arch && d->impl)
		d->arch->dis_close(d);
	d->impl = NULL;
}

bool cp_dis_next(cp_dis *d, const uint8_t **code, size_t *size, uint64_t *addr)
{
	return d->arch->dis_next(d, code, size, addr);
}

bool cp_dis_bytes(cp_dis *d, const uint8_t *code, size_t n, uint64_t addr)
{
	return d->arch->dis_next(d, &code, &n, &addr);
}

bool cp_dis_at(cp_dis *d, const cp_image *img, uint64_t addr)
{
	const struct cp_section *s = cp_image_section_at(img, addr);
	const uint8_t *code;
	size_t size;

	if (!s || !cp_section_is_code(s))
		return false;
	size = s->addr + s->size - addr;
	if (size > d->arch->max_insn)
		size = d->arch->max_insn;
	code = cp_image_va_bytes(img, addr, size);
	return code && cp_dis_bytes(d, code, size, addr);
}

bool cp_insn_pcrel(const cp_dis *d, uint8_t *disp_off, uint8_t *size, uint64_t *target)
{
	return d->arch->insn_pcrel(d, disp_off, size, target);
}

bool cp_insn_reaches(const cp_dis *d, uint64_t *target)
{
	return d->arch->insn_reaches(d, target);
}

bool cp_insn_immediate(const cp_dis *d, uint8_t *imm_off, uint8_t *imm_size, int64_t *value)
{
	return d->arch->insn_immediate(d, imm_off, imm_size, value);
}

bool cp_insn_is_cmp_reg_imm(const cp_dis *d)
{
	return d->arch->insn_is_cmp_reg_imm(d);
}

unsigned cp_insn_operand_size(const cp_dis *d)
{
	return d->arch->insn_operand_size(d);
}

bool cp_insn_displacement(const cp_dis *d, uint8_t *disp_off, uint8_t *disp_size, int64_t *value)
{
	return d->arch->insn_displacement(d, disp_off, disp_size, value);
}

unsigned cp_insn_size(const cp_dis *d)
{
	return d->arch->insn_size(d);
}

void cp_insn_describe(const cp_dis *d, char *buf, size_t n)
{
	d->arch->insn_describe(d, buf, n);
}

void cp_insn_facts(const cp_dis *d, struct cp_insn_facts *f)
{
	d->arch->insn_facts(d, f);
}

void cp_insn_flow(const cp_dis *d, struct cp_insn_facts *f)
{
	d->arch->insn_flow(d, f);
}

bool cp_dis_rip_operand(cp_dis *d, const cp_image *img, uint64_t addr, uint8_t *disp_off,
			uint8_t *size, uint64_t *target)
{
	return cp_dis_at(d, img, addr) && cp_insn_pcrel(d, disp_off, size, target);
}

bool cp_dis_reaches(cp_dis *d, const cp_image *img, uint64_t addr, uint64_t *target)
{
	return cp_dis_at(d, img, addr) && cp_insn_reaches(d, target);
}

bool cp_dis_immediate(cp_dis *d, const cp_image *img, uint64_t addr, uint8_t *imm_off,
		      uint8_t *imm_size, int64_t *value)
{
	return cp_dis_at(d, img, addr) && cp_insn_immediate(d, imm_off, imm_size, value);
}

bool cp_dis_is_cmp_reg_imm(cp_dis *d, const cp_image *img, uint64_t addr)
{
	return cp_dis_at(d, img, addr) && cp_insn_is_cmp_reg_imm(d);
}

unsigned cp_dis_operand_size(cp_dis *d, const cp_image *img, uint64_t addr)
{
	return cp_dis_at(d, img, addr) ? cp_insn_operand_size(d) : 0;
}

bool cp_dis_displacement(cp_dis *d, const cp_image *img, uint64_t addr, uint8_t *disp_off,
			 uint8_t *disp_size, int64_t *value)
{
	return cp_dis_at(d, img, addr) && cp_insn_displacement(d, disp_off, disp_size, value);
}

unsigned cp_dis_size(cp_dis *d, const cp_image *img, uint64_t addr)
{
	return cp_dis_at(d, img, addr) ? cp_insn_size(d) : 0;
}

bool cp_dis_describe(cp_dis *d, const cp_image *img, uint64_t addr, char *buf, size_t n)
{
	buf[0] = '\0';
	if (!cp_dis_at(d, img, addr))
		return false;
	cp_insn_describe(d, buf, n);
	return true;
}

/* The branch on a compare's flags: the first branch of the few
 * instructions after it (clang for aarch64 schedules a store between; a
 * compiler puts nothing there that sets the flags, or the compare would be
 * dead). */
static bool branch_after(cp_dis *d, const cp_image *img, uint64_t addr, struct cp_insn_facts *f)
{
	unsigned k, len;

	for (k = 0; k < 4; k++) {
		if (!cp_dis_at(d, img, addr) || !(len = cp_insn_size(d)))
			return false;
		cp_insn_flow(d, f);
		if (f->flow != CP_FLOW_NEXT || cp_insn_is_cmp_reg_imm(d))
			return f->flow == CP_FLOW_COND;
		addr += len;
	}
	return false;
}

bool cp_dis_loop_count(cp_dis *d, const cp_image *img, uint64_t addr, uint64_t *imm, uint64_t *count)
{
	struct cp_insn_facts f;
	uint8_t off, size;
	int64_t v;
	unsigned len;

	if (!cp_dis_is_cmp_reg_imm(d, img, addr) || !cp_insn_immediate(d, &off, &size, &v) || v < 0 ||
	    !(len = cp_insn_size(d)) || !branch_after(d, img, addr + len, &f) || f.cond == CP_COND_OTHER)
		return false;
	*imm = (uint64_t)v;
	*count = (uint64_t)v + (f.cond == CP_COND_LE || f.cond == CP_COND_GT);
	return true;
}

bool cp_dis_calls_nothing(cp_dis *d, const cp_image *img, uint64_t addr)
{
	return d->arch->calls_nothing(d, img, addr);
}

int cp_arg_reg(const cp_image *img, unsigned i)
{
	return i < img->arch->nargs ? img->arch->arg_regs[i] : -1;
}

cp_status cp_code_walk(const cp_image *img, uint64_t start, uint64_t end,
		       const struct cp_code_visitor *v, cp_error *err)
{
	return img->arch->code_walk(img, start, end, v, err);
}

cp_status cp_frame_eval(const cp_image *img, uint64_t start, uint64_t end, struct cp_frame *f,
			cp_error *err)
{
	return img->arch->frame_eval(img, start, end, false, f, err);
}

cp_status cp_frame_eval_callee(const cp_image *img, uint64_t start, uint64_t end, struct cp_frame *f,
			       cp_error *err)
{
	return img->arch->frame_eval(img, start, end, true, f, err);
}

static bool same_section(const struct cp_section *x, const struct cp_section *y)
{
	return !strcmp(x->name, y->name) && x->type == y->type && x->flags == y->flags && x->addr == y->addr &&
	       x->offset == y->offset && x->size == y->size;
}

/* Whether [va, va + size) meets none of a's allocated sections: where
 * what an output adds (the fallback stub's code, data and thunks: above
 * the image, or in a segment's padding) may lie without changing what the
 * walk of a's code reads there. */
static bool outside(const cp_image *a, uint64_t va, uint64_t size)
{
	size_t i;

	for (i = 0; i < a->nsec; i++) {
		const struct cp_section *s = &a->sec[i];

		if ((s->flags & SHF_ALLOC) && va < s->addr + s->size && s->addr < va + (size ? size : 1))
			return false;
	}
	return true;
}

/* The next allocated section from *i on (advancing *i past it), or NULL. */
static const struct cp_section *next_alloc(const cp_image *img, size_t *i)
{
	while (*i < img->nsec && !(img->sec[*i].flags & SHF_ALLOC))
		(*i)++;
	return *i < img->nsec ? &img->sec[(*i)++] : NULL;
}

/* b's allocated sections are a's, and those it adds lie outside all of
 * a's (what is not loaded, the walk does not read). */
static bool sections_extend(const cp_image *a, const cp_image *b)
{
	size_t i = 0, k = 0;
	const struct cp_section *x, *y;

	while ((x = next_alloc(a, &i)))
		if (!(y = next_alloc(b, &k)) || !same_section(x, y))
			return false;
	while ((y = next_alloc(b, &k)))
		if (!outside(a, y->addr, y->size))
			return false;
	return true;
}

/* b's function starts are a's, and any it adds lie outside a's sections
 * (both lists rise). */
static bool funcs_extend(const cp_image *a, const cp_image *b)
{
	size_t i = 0, k;

	for (k = 0; k < b->nfunc; k++) {
		if (i < a->nfunc && a->func[i] == b->func[k])
			i++;
		else if (!outside(a, b->func[k], 0))
			return false;
	}
	return i == a->nfunc;
}

static bool same_name(const char *x, const char *y)
{
	return !strcmp(x ? x : "", y ? y : "");
}

/* y's slots are x's, and any it adds lie outside a's sections (the stub's
 * thunks read as PLT entries). */
static bool slots_extend(const cp_image *a, const struct cp_import_slot *x, size_t nx,
			 const struct cp_import_slot *y, size_t ny)
{
	size_t i;

	if (ny < nx)
		return false;
	for (i = 0; i < nx; i++)
		if (x[i].addr != y[i].addr || !same_name(x[i].name, y[i].name))
			return false;
	for (; i < ny; i++)
		if (!outside(a, y[i].addr, 0))
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

bool cp_code_walk_tables_same(const cp_image *a, const cp_image *b)
{
	return a->arch == b->arch && sections_extend(a, b) && funcs_extend(a, b) &&
	       slots_extend(a, a->got, a->ngot, b->got, b->ngot) && slots_extend(a, a->plt, a->nplt, b->plt, b->nplt) &&
	       same_symbols(a, b);
}

bool cp_is_noreturn_name(const char *name)
{
	static const char *const names[] = { "__assert_fail", "abort", "Py_FatalError", "_Py_FatalErrorFunc",
					     "__stack_chk_fail", "__cxa_throw", "_exit", "exit" };
	size_t i;

	for (i = 0; name && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

const char *cp_callee_name(const cp_image *img, uint64_t target)
{
	const struct cp_symbol *s;
	const char *n = cp_image_plt_name(img, target);

	if (n)
		return n;
	s = cp_image_symbol_at(img, target);
	return s ? s->name : NULL;
}

const char *cp_insn_callee(const cp_image *img, const struct cp_insn_facts *f)
{
	if (f->via_slot)
		return cp_image_got_name(img, f->slot);
	return f->direct ? cp_callee_name(img, f->target) : NULL;
}

void cp_insn_facts_none(struct cp_insn_facts *f, uint64_t addr, uint8_t size)
{
	memset(f, 0, sizeof(*f));
	f->addr = addr;
	f->size = size;
	f->writes = ~0u;
	f->imm_reg = f->load_reg = f->copy_dst = f->copy_src = f->addr_reg = f->test_reg = -1;
	f->based_dst = f->based_base = -1;
	f->stack.spill_src = f->stack.fill_dst = -1;
}

bool cp_walk_span(const struct cp_section *s, uint64_t start, uint64_t end, uint64_t *a, uint64_t *b)
{
	if (!cp_section_is_code(s) || strncmp(s->name, ".plt", 4) == 0)
		return false;
	*a = s->addr;
	*b = s->addr + s->size;
	if (end) {
		*a = start > *a ? start : *a;
		*b = end < *b ? end : *b;
	}
	return *a < *b;
}
