/*
 * scan_imports.c - the cimport calls of Cython 0.29 to 3.1, from the calls
 * the code walk saw.
 *
 * Cython emits, per provider module, PyImport_ImportModule("module") and
 * then the imports from it; the module an import belongs to is therefore
 * the last one imported before it in code order. An import call is either
 * Cython's helper (module, name, &slot, signature) / (module, module_name,
 * class_name, size, ...), or that helper inlined, where the name reaches
 * PyDict_GetItemString or PyObject_GetAttrString and the signature
 * PyCapsule_IsValid.
 */
#include "scan/scan.h"
#include "util/error.h"
#include "util/names.h"

#include <stdlib.h>
#include <string.h>

static const char *cstr(const cp_scan *s, const struct cp_val *v)
{
	return v->kind == CP_V_ADDR ? cp_image_cstring(s->img, v->v, 4096) : NULL;
}

static bool is_writable_addr(const cp_scan *s, const struct cp_val *v)
{
	const struct cp_section *sec;

	if (v->kind != CP_V_ADDR)
		return false;
	sec = cp_image_section_at(s->img, v->v);
	return sec && cp_section_is_writable(sec);
}

static bool is_name(const char *p)
{
	return p && cp_is_identifier(p, strlen(p));
}

static bool is_dunder(const char *p)
{
	return strncmp(p, "__", 2) == 0;
}

uint64_t cp_scan_slot_symbol(const cp_scan *s, const char *module, const char *name, bool var)
{
	char mangled[512], sym[1024];
	const struct cp_symbol *y;

	if (cp_mangle_prefix(module, mangled, sizeof(mangled)) < 0)
		return 0;
	/* "__pyx_t_4cuda_..." -> "__pyx_f_4cuda_..." / "__pyx_vp_4cuda_..." */
	snprintf(sym, sizeof(sym), "%s%s%s", var ? "__pyx_vp_" : "__pyx_f_", mangled + 8, name);
	y = cp_image_symbol(s->img, sym);
	if (!y) {
		/* modules compiled as C++ (cuda-python's own) mangle the static: _ZL<len><name> */
		char cxx[1100];

		snprintf(cxx, sizeof(cxx), "_ZL%zu%s", strlen(sym), sym);
		y = cp_image_symbol(s->img, cxx);
	}
	return y ? y->value : 0;
}

static bool same_import(const struct cp_ref *r, enum cp_ref_kind kind, const char *module,
			const char *name, const char *sig)
{
	return r->kind == kind && r->name && strcmp(r->name, name) == 0 &&
	       ((!r->module && !module) || (r->module && module && strcmp(r->module, module) == 0)) &&
	       r->signature && strcmp(r->signature, sig) == 0;
}

/*
 * The function and variable refs by what they import, in s->cimports (a
 * key index): a module cimports thousands of functions (the generated
 * 3,000-function module's search of every ref for each was a quarter of
 * its patch's CPU), and cp_scan_add_import alone makes these refs.
 */
static uint64_t cimport_hash(enum cp_ref_kind kind, const char *module, const char *name, const char *sig)
{
	uint64_t h = cp_name_hash(name, strlen(name)) ^ (uint64_t)kind;

	h = h * 0x100000001b3ull ^ cp_name_hash(sig, strlen(sig));
	return module ? h * 0x100000001b3ull ^ cp_name_hash(module, strlen(module)) : h;
}

struct cimport {
	const cp_scan *s;
	enum cp_ref_kind kind;
	const char *module, *name, *sig;
};

static bool is_cimport(const void *ctx, size_t number)
{
	const struct cimport *c = ctx;

	return same_import(&c->s->refs[number - 1], c->kind, c->module, c->name, c->sig);
}

cp_status cp_scan_add_import(cp_scan *s, const char *module, const char *name,
			     const char *sig, uint64_t slot, const struct cp_loc *loc,
			     const uint64_t *site_addrs, size_t nsites, cp_error *err)
{
	enum cp_ref_kind kind = strchr(sig, '(') ? CP_K_FUNCTION : CP_K_VARIABLE;
	const char *mm;
	struct cp_ref *r;
	size_t i;
	struct cimport c = { s, kind, module, name, sig };
	uint64_t h = cimport_hash(kind, module, name, sig);
	int lay = module ? cp_rules_name_layout(s->rules, module, &mm) : -1;

	/* a module of one layout's package that the rules do not map
	 * (cuda.bindings.cynvvm): check judges its functions too */
	if (lay < 0 && module)
		lay = cp_rules_unmapped_layout(s->rules, module, strlen(module), &mm);
	if (lay < 0 && (lay = cp_rules_signature_layout(s->rules, sig, &mm)) < 0)
		return CP_OK; /* not from a mapped module */
	if (cp_key_index_lookup(&s->cimports, h, is_cimport, &c))
		return CP_OK; /* imported already */
	r = cp_scan_add_ref(s, kind, err);
	if (!r)
		return err->code;
	if (!cp_key_index_insert(&s->cimports, h, s->nrefs))
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	r->layout = lay;
	r->module = module ? strdup(module) : NULL;
	r->name = strdup(name);
	r->value = strdup(name);
	r->signature = strdup(sig);
	r->slot = slot;
	r->loc = *loc;
	if ((module && !r->module) || !r->name || !r->value || !r->signature)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	for (i = 0; i < nsites; i++) {
		struct cp_site site;
		cp_status st;

		if (!site_addrs[i])
			continue;
		cp_scan_code_site(site_addrs[i], &site);
		st = cp_ref_add_site(r, &site, err);
		if (st)
			return st;
	}
	return CP_OK;
}

static struct cp_loc literal_loc(const cp_scan *s, uint64_t va)
{
	struct cp_loc loc = { -1, NULL, va, 0, 0 };
	const struct cp_section *sec = cp_image_section_at(s->img, va);
	const char *p = cp_image_cstring(s->img, va, 4096);

	if (sec) {
		loc.section = sec->name;
		loc.offset = sec->offset + (va - sec->addr);
	}
	loc.length = p ? strlen(p) : 0;
	return loc;
}

static cp_status add_capsule_import(cp_scan *s, const char *module, const struct cp_val *name,
				    const struct cp_val *sig, uint64_t slot, cp_error *err)
{
	const char *n = cstr(s, name), *g = cstr(s, sig);
	uint64_t sites[2] = { name->origin, sig->origin };
	struct cp_loc loc;

	if (!is_name(n) || !g || !*g || is_dunder(n))
		return CP_OK;
	loc = literal_loc(s, sig->v);
	if (!slot && module)
		slot = cp_scan_slot_symbol(s, module, n, !strchr(g, '('));
	return cp_scan_add_import(s, module, n, g, slot, &loc, sites, 2, err);
}

/* An inlined type import names module and class together in its error
 * paths ("%.200s.%.200s is not a type object", "... size changed"): a call
 * within a few after the lookup whose arguments hold both, in that order. */
static bool names_both(const cp_scan *s, size_t at, uint64_t module_va, uint64_t class_va)
{
	size_t i;
	int k;

	for (i = at + 1; i < s->ncalls && i <= at + 8; i++)
		for (k = 0; k + 1 < CP_MAX_ARGS; k++)
			if (s->calls[i].arg[k].kind == CP_V_ADDR && s->calls[i].arg[k].v == module_va &&
			    s->calls[i].arg[k + 1].kind == CP_V_ADDR && s->calls[i].arg[k + 1].v == class_va)
				return true;
	return false;
}

static cp_status add_type_import(cp_scan *s, const char *module, const struct cp_val *cls,
				 int64_t size, cp_error *err)
{
	const char *c = cstr(s, cls), *mm;
	struct cp_ref *r;
	struct cp_site site;
	size_t i;
	int lay;

	if (!module || !is_name(c) || is_dunder(c) || (lay = cp_rules_name_layout(s->rules, module, &mm)) < 0)
		return CP_OK;
	for (i = 0; i < s->nrefs; i++)
		if (s->refs[i].kind == CP_K_TYPE && !strcmp(s->refs[i].class_name, c) &&
		    !strcmp(s->refs[i].module, module))
			return CP_OK;
	r = cp_scan_add_ref(s, CP_K_TYPE, err);
	if (!r)
		return err->code;
	r->layout = lay;
	r->module = strdup(module);
	r->class_name = strdup(c);
	r->value = strdup(c);
	r->size = size;
	r->loc = literal_loc(s, cls->v);
	if (!r->module || !r->class_name || !r->value)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	cp_scan_code_site(cls->origin, &site);
	return cp_ref_add_site(r, &site, err);
}

static bool named(const struct cp_scan_call *c, const char *n)
{
	return c->name && strcmp(c->name, n) == 0;
}

/*
 * An inlined __Pyx_ImportType passes the size it expects to its error and
 * warning calls right after the class name ("%.200s.%.200s size changed ...
 * Expected %zd": PyErr_Format, PyErr_WarnFormat, PyOS_snprintf). The first
 * such call within a few after the lookup gives it; -1 when none does.
 */
static int64_t inlined_type_size(const cp_scan *s, size_t at, uint64_t class_va)
{
	size_t i;
	int k;

	for (i = at + 1; i < s->ncalls && i <= at + 8; i++) {
		const struct cp_scan_call *c = &s->calls[i];

		if (named(c, "PyImport_ImportModule"))
			break;
		for (k = 0; k + 1 < CP_MAX_ARGS; k++)
			if (c->arg[k].kind == CP_V_ADDR && c->arg[k].v == class_va &&
			    c->arg[k + 1].kind == CP_V_IMM && c->arg[k + 1].v > 0 && c->arg[k + 1].v < (1u << 24))
				return (int64_t)c->arg[k + 1].v;
	}
	return -1;
}

/* Cython's helpers: (module, name, &slot, sig) and (module, module_name,
 * class_name, size, ...). */
static cp_status helper_call(cp_scan *s, const char *module, const struct cp_scan_call *c,
			     cp_error *err)
{
	const char *a1 = cstr(s, &c->arg[1]);

	if (is_writable_addr(s, &c->arg[2]) && c->arg[3].kind == CP_V_ADDR)
		return add_capsule_import(s, module, &c->arg[1], &c->arg[3], c->arg[2].v, err);
	if (a1 && c->arg[2].kind == CP_V_ADDR && c->arg[3].kind == CP_V_IMM &&
	    module && strcmp(a1, module) == 0)
		return add_type_import(s, a1, &c->arg[2], (int64_t)c->arg[3].v, err);
	return CP_OK;
}

cp_status cp_scan_imports(cp_scan *s, cp_error *err)
{
	const char *module = NULL;
	uint64_t module_va = 0;
	const struct cp_val *pending = NULL;
	bool after_import = false;
	size_t i;
	cp_status st = CP_OK;

	for (i = 0; !st && i < s->ncalls; i++) {
		const struct cp_scan_call *c = &s->calls[i];

		if (named(c, "PyImport_ImportModule")) {
			struct cp_string *str = c->arg[0].kind == CP_V_ADDR ? cp_scan_string_at(s, c->arg[0].v) : NULL;

			module = cstr(s, &c->arg[0]);
			module_va = c->arg[0].kind == CP_V_ADDR ? c->arg[0].v : 0;
			if (str)
				str->roles |= 1u << CP_K_CIMPORT;
			after_import = true;
			pending = NULL;
			continue;
		}
		if (named(c, "PyObject_GetAttrString") && after_import && c->arg[1].kind == CP_V_ADDR &&
		    names_both(s, i, module_va, c->arg[1].v))
			st = add_type_import(s, module, &c->arg[1],
					     c->arg[1].kind == CP_V_ADDR ? inlined_type_size(s, i, c->arg[1].v) : -1,
					     err);
		else if (named(c, "PyDict_GetItemString"))
			pending = &c->arg[1];
		else if (named(c, "PyCapsule_IsValid") && pending)
			st = add_capsule_import(s, module, pending, &c->arg[1], 0, err);
		else if (!c->name || strstr(c->name, "__Pyx_Import")) /* C++: _ZL27__Pyx_Import... */
			st = helper_call(s, module, c, err);
		/* only the first attribute lookup after an import is a type's */
		if (named(c, "PyObject_GetAttrString"))
			after_import = false;
	}
	return st;
}
