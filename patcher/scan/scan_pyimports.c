/*
 * scan_pyimports.c - what the module's Python-level imports pass as the
 * module's name.
 *
 * `from numba import cuda` and `cp.cuda.Stream` leave the name "cuda" in a
 * module just as `from cuda import cuda` does; only the import tells them
 * apart. Cython passes the package's string object to
 * PyImport_ImportModuleLevelObject, from __Pyx_Import inlined or not.
 * Without module state each string object lives in a fixed slot, so the
 * name is a load of that slot where the call is made, or an argument of a
 * function that passes it on (__Pyx_Import), loaded where that is called.
 * This pass lists those slots (and the C strings of imports by C string);
 * when some import's name cannot be followed, or the function that passes
 * it on is reached otherwise than by a call, it says so, and every pair of
 * names is then taken for an import (scan_names.c).
 */
#include "scan/scan.h"
#include "util/error.h"
#include "scan/reach.h"

#include <stdlib.h>
#include <string.h>

/* CPython's entry points that import; by_cstring: the name is a C string.
 * Each begins with "Py": the walk keeps a call only if it does
 * (scan_code.c, wanted_call).
 * (PyImport_GetModule only reads sys.modules: __Pyx_ImportFrom looks up
 * "<module>.<name>" there, a name made at run time.) */
static const struct {
	const char *name;
	bool by_cstring, has_level;
} entries[] = {
	{ "PyImport_ImportModuleLevelObject", false, true },
	{ "PyImport_Import", false, false },
	{ "PyImport_ImportModule", true, false },
	{ "PyImport_ImportModuleLevel", true, false },
	{ "PyImport_ImportModuleNoBlock", true, false },
};

static int entry_of(const char *name)
{
	size_t i;

	for (i = 0; name && i < sizeof(entries) / sizeof(entries[0]); i++)
		if (!strcmp(name, entries[i].name))
			return (int)i;
	return -1;
}

bool cp_scan_is_import_call(const char *name)
{
	return entry_of(name) >= 0;
}

/* A function that passes its argument name_arg on as an import's name
 * (__Pyx_Import), and its level: its argument level_arg, or the constant
 * level (-1: not known). */
struct forwarder {
	uint64_t start;
	int name_arg, level_arg;
	int64_t level;
};

struct pass {
	cp_scan *s;
	struct forwarder *fw;
	size_t nfw, capfw;
	cp_reach *reach;        /* opened when first needed */
	bool oom;
};

static void unknown(cp_scan *s, uint64_t at, const char *why)
{
	if (!s->import_names_unknown[0] && at)
		snprintf(s->import_names_unknown, sizeof(s->import_names_unknown), "%s at %#llx", why,
			 (unsigned long long)at);
	else if (!s->import_names_unknown[0])
		snprintf(s->import_names_unknown, sizeof(s->import_names_unknown), "%s", why);
}

static void add_slot(struct pass *p, uint64_t slot)
{
	cp_scan *s = p->s;
	size_t i;

	for (i = 0; i < s->nimport_slots; i++)
		if (s->import_slots[i] == slot)
			return;
	if (CP_GROW(s->import_slots, s->capimport_slots, s->nimport_slots + 1)) {
		p->oom = true;
		return;
	}
	s->import_slots[s->nimport_slots++] = slot;
}

/* What register reg holds at the call: the walk's value when it knew it,
 * else the value found backwards over the function's branches. */
static cp_status value_at(struct pass *p, uint64_t call, int reg, const struct cp_val *val,
			  struct cp_reach_val *out, cp_error *err)
{
	cp_status st;

	if (val && val->kind == CP_V_LOAD) {
		out->kind = CP_REACH_SLOT;
		out->v = val->v;
		return CP_OK;
	}
	if (val && val->kind == CP_V_IMM) {
		out->kind = CP_REACH_IMM;
		out->v = val->v;
		return CP_OK;
	}
	if (!p->reach) {
		st = cp_reach_open(p->s->img, p->s->jumps, p->s->njumps, &p->reach, err);
		if (st)
			return st;
	}
	return cp_reach_value(p->reach, call, reg, out, err);
}

static void add_call(struct pass *p, uint64_t call, uint64_t slot)
{
	cp_scan *s = p->s;
	size_t i;

	for (i = 0; i < s->nimport_calls; i++)
		if (s->import_calls[i].call == call && s->import_calls[i].slot == slot)
			return;

	if (CP_GROW(s->import_calls, s->capimport_calls, s->nimport_calls + 1)) {
		p->oom = true;
		return;
	}
	s->import_calls[s->nimport_calls].call = call;
	s->import_calls[s->nimport_calls++].slot = slot;
}

/* An import named from `name`: its slot is one an absolute import loads,
 * unless the level is known to be relative (`from .cuda import X`, which
 * passes "cuda" with level 1). */
static void named(struct pass *p, uint64_t call, const struct cp_reach_val *name, int64_t level)
{
	if (name->kind != CP_REACH_SLOT) {
		unknown(p->s, call, "an import whose module name was not followed");
	} else if (level == 0 || level == -1) {
		add_slot(p, name->v);
		add_call(p, call, name->v);
	}
}

static int64_t level_of(const struct cp_reach_val *v)
{
	return v->kind == CP_REACH_IMM && v->v < 64 ? (int64_t)v->v : -1;
}

static cp_status add_forwarder(struct pass *p, uint64_t call, int name_arg, const struct cp_reach_val *level)
{
	uint64_t start, end;
	size_t k;

	if (!cp_image_function(p->s->img, call, &start, &end)) {
		unknown(p->s, call, "an import whose module name was not followed");
		return CP_OK;
	}
	for (k = 0; k < p->nfw && p->fw[k].start != start; k++)
		;
	if (k < p->nfw)
		return CP_OK;
	if (CP_GROW(p->fw, p->capfw, p->nfw + 1)) {
		p->oom = true;
		return CP_OK;
	}
	p->fw[p->nfw].start = start;
	p->fw[p->nfw].name_arg = name_arg;
	p->fw[p->nfw].level_arg = level->kind == CP_REACH_ARG ? (int)level->v : -1;
	p->fw[p->nfw++].level = level_of(level);
	return CP_OK;
}

/* A call of an import entry point: PyImport_ImportModuleLevelObject(name,
 * globals, locals, fromlist, level) or PyImport_Import(name). */
static cp_status entry_call(struct pass *p, const struct cp_scan_call *c, bool has_level, cp_error *err)
{
	struct cp_reach_val name, level = { CP_REACH_IMM, 0 };
	cp_status st = value_at(p, c->addr, cp_arg_reg(p->s->img, 0), &c->arg[0], &name, err);

	if (!st && has_level)
		st = value_at(p, c->addr, cp_arg_reg(p->s->img, 4), &c->arg[4], &level, err);
	if (st)
		return st;
	if (name.kind == CP_REACH_ARG)
		return add_forwarder(p, c->addr, (int)name.v, &level);
	named(p, c->addr, &name, level_of(&level));
	return CP_OK;
}

/* The forwarders' callers: every call of a forwarder, and anything else
 * that reaches it (a jump, its address taken), from the walk's uses of
 * function starts (struct cp_func_use). */
struct callers {
	struct pass *p;
	cp_error *err;
	cp_status st;
};

static const struct forwarder *forwarder_at(const struct pass *p, uint64_t addr)
{
	size_t i;

	for (i = 0; i < p->nfw; i++)
		if (p->fw[i].start == addr)
			return &p->fw[i];
	return NULL;
}

/* A call of fw at addr (or a tail jump to it), with the walk's values of
 * the argument registers when it has them (arg, or NULL). */
static void fw_called(struct callers *cs, const struct forwarder *fw, uint64_t addr, const struct cp_val *arg)
{
	const cp_image *img = cs->p->s->img;
	struct cp_reach_val name, level;
	int64_t lv = fw->level;

	cs->st = value_at(cs->p, addr, cp_arg_reg(img, fw->name_arg), arg ? &arg[fw->name_arg] : NULL, &name,
			  cs->err);
	if (!cs->st && fw->level_arg >= 0) {
		cs->st = value_at(cs->p, addr, cp_arg_reg(img, fw->level_arg), arg ? &arg[fw->level_arg] : NULL,
				  &level, cs->err);
		lv = level_of(&level);
	}
	if (!cs->st && name.kind == CP_REACH_ARG)
		cs->st = add_forwarder(cs->p, addr, (int)name.v, fw->level_arg >= 0 ? &level : &(struct cp_reach_val){
			CP_REACH_IMM, (uint64_t)fw->level });
	else if (!cs->st)
		named(cs->p, addr, &name, lv);
}

/* A use of a forwarder's start: a call, or a jump to its first
 * instruction, which is a tail call whose arguments are in their registers
 * at the jump (__Pyx_ImportDottedModule ends in `jmp __Pyx_Import`); a
 * jump from inside it, or its address taken, is not followed. */
static void fw_used(struct callers *cs, const struct cp_func_use *u)
{
	const struct forwarder *fw = forwarder_at(cs->p, u->target);
	uint64_t start, end;

	if (!fw || cs->st)
		return;
	if (u->kind == CP_FUSE_CALL)
		fw_called(cs, fw, u->addr, u->arg);
	else if (u->kind == CP_FUSE_REF)
		unknown(cs->p->s, u->addr, "the address of a function that imports taken");
	else if (cp_image_function(cs->p->s->img, u->addr, &start, &end) && start != u->target)
		fw_called(cs, fw, u->addr, NULL);
	else
		unknown(cs->p->s, u->addr, "a jump into a function that imports");
}

cp_status cp_scan_import_names(cp_scan *s, cp_error *err)
{
	struct pass p;
	cp_status st = CP_OK;
	size_t i, seen = 0;
	int round;

	memset(&p, 0, sizeof(p));
	p.s = s;
	if (s->shared_import[0])
		unknown(s, 0, "imports made by the shared utility module");
	for (i = 0; !st && i < s->ncalls && !s->import_names_unknown[0]; i++) {
		int e = entry_of(s->calls[i].name);

		if (e < 0 || (entries[e].by_cstring && s->calls[i].arg[0].kind == CP_V_ADDR))
			continue; /* an import by C string: cp_scan_imports_cstring */
		if (entries[e].by_cstring)
			unknown(s, s->calls[i].addr, "an import by a C string not followed");
		else
			st = entry_call(&p, &s->calls[i], entries[e].has_level, err);
	}
	/* forwarders' callers, until no new forwarder (a function passing its
	 * argument on to one, as __Pyx_ImportDottedModule does) turns up */
	for (round = 0; !st && p.nfw > seen && !s->import_names_unknown[0]; round++) {
		struct callers cs = { &p, err, CP_OK };
		size_t k;

		if (round == 4) {
			unknown(s, 0, "imports passed on through more than four functions");
			break;
		}
		seen = p.nfw;
		for (k = 0; k < s->nfuses && !cs.st; k++)
			fw_used(&cs, &s->fuses[k]);
		st = cs.st;
	}
	cp_reach_close(p.reach);
	free(p.fw);
	if (!st && p.oom)
		st = cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	return st;
}

bool cp_scan_imports_cstring(const cp_scan *s, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < s->ncalls; i++) {
		int e = entry_of(s->calls[i].name);
		const char *c;

		if (e < 0 || !entries[e].by_cstring || s->calls[i].arg[0].kind != CP_V_ADDR)
			continue;
		c = cp_image_cstring(s->img, s->calls[i].arg[0].v, 4096);
		if (c && strlen(c) == len && !memcmp(c, name, len))
			return true;
	}
	return false;
}

bool cp_scan_is_import_slot(const cp_scan *s, uint64_t slot)
{
	size_t i;

	for (i = 0; i < s->nimport_slots; i++)
		if (s->import_slots[i] == slot)
			return true;
	return false;
}
