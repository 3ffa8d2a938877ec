/*
 * walk_reference.c - x86-64's code walk (Zydis, patcher/arch/x86_64/x86_64_walk.c)
 * against the capstone walk it replaced (x86_walk_capstone.c): for every
 * x86-64 Cython extension module given (what the scan walks; capstone 4
 * misreads some AVX-512 instructions that OpenBLAS, a provider's
 * dependency, holds, and Zydis reads them right), both walk all code with a visitor that records
 * everything they report, in order (every PC-relative operand, every call
 * with its argument values, every jump, every end of a block), and the two
 * records must be the same, event by event. Exits 1 on the first
 * difference, naming the file, the event and the address.
 *
 * usage: walk_reference FILE|DIR...  (directories: every *.so below)
 */
#include "arch/code.h"
#include "elf/image.h"
#include "scan/scan.h"
#include "so_files.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cp_status ref_x86_code_walk(const cp_image *img, uint64_t start, uint64_t end,
			    const struct cp_code_visitor *v, cp_error *err);

enum ev_kind { EV_REF, EV_CALL, EV_JUMP, EV_END };

struct ev {
	enum ev_kind kind;
	uint64_t addr, target;
	uint8_t size, disp_off, ref;
	const char *name;
	struct cp_val arg[6];
};

struct rec {
	struct ev *v;
	size_t n, cap;
	bool oom;
};

static struct ev *add(struct rec *r, enum ev_kind kind, uint64_t addr, uint64_t target)
{
	struct ev *e;

	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 4096;
		struct ev *v = realloc(r->v, cap * sizeof(*v));

		if (!v) {
			r->oom = true;
			return NULL;
		}
		r->v = v;
		r->cap = cap;
	}
	e = &r->v[r->n++];
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->addr = addr;
	e->target = target;
	return e;
}

static void on_ref(void *ctx, const struct cp_code_ref *r)
{
	struct ev *e = add(ctx, EV_REF, r->addr, r->target);

	if (e) {
		e->size = r->size;
		e->disp_off = r->disp_off;
		e->ref = (uint8_t)r->kind;
	}
}

static void on_call(void *ctx, const struct cp_call *c)
{
	struct ev *e = add(ctx, EV_CALL, c->addr, c->target);
	int i;

	if (!e)
		return;
	e->name = c->name;
	for (i = 0; i < 6; i++)
		e->arg[i] = c->arg[i];
}

static void on_jump(void *ctx, uint64_t addr, uint64_t target)
{
	add(ctx, EV_JUMP, addr, target);
}

static void on_end(void *ctx, uint64_t addr)
{
	add(ctx, EV_END, addr, 0);
}

static bool same_val(const struct cp_val *x, const struct cp_val *y)
{
	return x->kind == y->kind && (x->kind == CP_V_UNKNOWN || (x->v == y->v && x->origin == y->origin));
}

static bool same_ev(const struct ev *x, const struct ev *y)
{
	int i;

	if (x->kind != y->kind || x->addr != y->addr || x->target != y->target || x->size != y->size ||
	    x->disp_off != y->disp_off || x->ref != y->ref ||
	    strcmp(x->name ? x->name : "", y->name ? y->name : ""))
		return false;
	for (i = 0; i < 6; i++)
		if (!same_val(&x->arg[i], &y->arg[i]))
			return false;
	return true;
}

static const char *const kinds[] = { "operand", "call", "jump", "end" };

static size_t files, walked, events;

static int check_file(const char *path)
{
	struct rec a = { NULL, 0, 0, false }, b = { NULL, 0, 0, false };
	struct cp_code_visitor va = { .on_ref = on_ref, .on_call = on_call, .ctx = &a, .on_jump = on_jump, .on_end = on_end };
	struct cp_code_visitor vb = { .on_ref = on_ref, .on_call = on_call, .ctx = &b, .on_jump = on_jump, .on_end = on_end };
	cp_image *img = NULL;
	cp_error err;
	size_t i;
	int bad = 0;

	if (cp_image_open(path, &img, &err))
		return 0; /* not an ELF file the patcher reads */
	if (img->arch->e_machine == EM_X86_64 && cp_scan_is_module(img)) {
		if (cp_code_walk(img, 0, 0, &va, &err) || ref_x86_code_walk(img, 0, 0, &vb, &err) || a.oom || b.oom) {
			fprintf(stderr, "walk_reference: %s: %s\n", path, a.oom || b.oom ? "out of memory" : err.msg);
			bad = 1;
		}
		for (i = 0; !bad && i < a.n && i < b.n; i++)
			if (!same_ev(&a.v[i], &b.v[i])) {
				fprintf(stderr, "walk_reference: %s: event %zu differs: Zydis %s at %#llx, capstone %s at "
					"%#llx\n", path, i, kinds[a.v[i].kind], (unsigned long long)a.v[i].addr,
					kinds[b.v[i].kind], (unsigned long long)b.v[i].addr);
				for (int k = 0; k < 6; k++)
					fprintf(stderr, "  arg%d zydis %d %llx %llx capstone %d %llx %llx\n", k, a.v[i].arg[k].kind,
						(unsigned long long)a.v[i].arg[k].v, (unsigned long long)a.v[i].arg[k].origin,
						b.v[i].arg[k].kind, (unsigned long long)b.v[i].arg[k].v,
						(unsigned long long)b.v[i].arg[k].origin);
				fprintf(stderr, "  target %llx %llx name %s %s size %d %d\n", (unsigned long long)a.v[i].target, (unsigned long long)b.v[i].target, a.v[i].name, b.v[i].name, a.v[i].size, b.v[i].size);
				bad = 1;
			}
		if (!bad && a.n != b.n) {
			fprintf(stderr, "walk_reference: %s: %zu events from Zydis, %zu from capstone\n", path, a.n, b.n);
			bad = 1;
		}
		walked++;
		events += a.n;
	}
	free(a.v);
	free(b.v);
	cp_image_close(img);
	return bad;
}

int main(int argc, char **argv)
{
	int bad;

	if (argc < 2) {
		fprintf(stderr, "usage: walk_reference FILE|DIR...\n");
		return 64;
	}
	bad = so_files_each(argv + 1, argc - 1, check_file, &files);
	if (bad)
		return 1;
	if (!walked) {
		fprintf(stderr, "walk_reference: none of the %zu files is an x86-64 Cython module\n", files);
		return 1;
	}
	printf("walk_reference: %zu x86-64 modules of %zu files walked both ways, %zu events the same\n", walked, files,
	       events);
	return 0;
}
