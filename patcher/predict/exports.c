/*
 * exports.c - a provider's exported capsules (see exports.h).
 */
#include "predict/exports.h"
#include "releases/releases.h"
#include "arch/code.h"
#include "util/error.h"
#include "scan/scan.h"

#include <stdlib.h>
#include <string.h>

#define EXPORT_ARGS 3 /* __Pyx_ExportFunction(name, f, sig) and the like */

struct call {
	uint64_t addr, target;
	const char *name;
	struct cp_val arg[EXPORT_ARGS];
};

struct walk {
	struct call *v;
	size_t n, cap;
	bool oom;
};

static void on_call(void *ctx, const struct cp_call *c)
{
	struct walk *w = ctx;

	if (CP_GROW(w->v, w->cap, w->n + 1)) {
		w->oom = true;
		return;
	}
	w->v[w->n].addr = c->addr;
	w->v[w->n].target = c->target;
	w->v[w->n].name = c->name;
	memcpy(w->v[w->n].arg, c->arg, sizeof(w->v[w->n].arg));
	w->n++;
}

static const char *string_arg(const cp_image *img, const struct cp_val *v)
{
	return v->kind == CP_V_ADDR ? cp_image_cstring(img, v->v, 4096) : NULL;
}

/* name NULL: a capsule whose key is a Python string object (variables,
 * __Pyx_ExportVoidPtr before Cython 3.2), known by its signature only. */
static cp_status add(struct cp_exports *e, const char *name, const char *sig, bool variable, cp_error *err)
{
	if (name && cp_exports_find(e, name))
		return CP_OK;
	if (CP_GROW(e->v, e->cap, e->n + 1) || !(e->v[e->n].sig = strdup(sig)) ||
	    (name && !(e->v[e->n].name = strdup(name))))
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	if (!name)
		e->v[e->n].name = NULL;
	e->v[e->n].variable = variable;
	e->n++;
	return CP_OK;
}

/* Which of the helpers fn (a function start) is, or -1. */
static int helper_of(const uint64_t *h, size_t nh, uint64_t fn)
{
	size_t i;

	for (i = 0; i < nh; i++)
		if (h[i] == fn)
			return (int)i;
	return -1;
}

/* Whether the helper whose PyCapsule_New is call i (ending at end) keys
 * the capsule with a Python string (PyDict_SetItem: __Pyx_ExportVoidPtr
 * before Cython 3.2) rather than a C string. */
static bool keys_by_object(const struct walk *w, size_t i, uint64_t end)
{
	const struct call *best = NULL;
	size_t k;

	for (k = 0; k < w->n; k++) {
		const struct call *c = &w->v[k];

		if (c->name && c->addr > w->v[i].addr && c->addr < end && (!best || c->addr < best->addr) &&
		    (!strcmp(c->name, "PyDict_SetItem") || !strcmp(c->name, "PyDict_SetItemString")))
			best = c;
	}
	return best && !strcmp(best->name, "PyDict_SetItem");
}

cp_status cp_exports_read(const cp_image *img, struct cp_exports *out, cp_error *err)
{
	struct cp_code_visitor v = { .on_call = on_call };
	struct walk w = { NULL, 0, 0, false };
	uint64_t helpers[16];
	bool helper_var[16];
	size_t i, nh = 0;
	cp_status st;

	memset(out, 0, sizeof(*out));
	v.ctx = &w;
	st = cp_code_walk(img, 0, 0, &v, err);
	if (!st && w.oom)
		st = cp_fail(err, CP_E_INTERNAL, "out of memory");
	/* the functions that create the capsules; where one was inlined, the
	 * capsule's signature and the dict key are literals at its own calls */
	for (i = 0; !st && i < w.n; i++) {
		uint64_t start, end;
		const char *sig;

		if (!w.v[i].name || strcmp(w.v[i].name, "PyCapsule_New"))
			continue;
		sig = string_arg(img, &w.v[i].arg[1]);
		if (sig) {
			size_t k;

			for (k = i + 1; k < w.n && k < i + 8; k++) {
				if (w.v[k].name && !strcmp(w.v[k].name, "PyDict_SetItemString") &&
				    string_arg(img, &w.v[k].arg[1])) {
					st = add(out, string_arg(img, &w.v[k].arg[1]), sig, false, err);
					break;
				}
				if (w.v[k].name && !strcmp(w.v[k].name, "PyDict_SetItem")) {
					st = add(out, NULL, sig, true, err);
					break;
				}
			}
		} else if (cp_image_function(img, w.v[i].addr, &start, &end) && nh < 16 &&
			   helper_of(helpers, nh, start) < 0) {
			helper_var[nh] = keys_by_object(&w, i, end);
			helpers[nh++] = start;
		}
	}
	for (i = 0; !st && i < w.n; i++) {
		const char *name = string_arg(img, &w.v[i].arg[0]), *sig = string_arg(img, &w.v[i].arg[2]);
		int h = w.v[i].target ? helper_of(helpers, nh, w.v[i].target) : -1;

		/* a Python string key is an object, not text */
		if (h >= 0 && sig)
			st = add(out, helper_var[h] ? NULL : name, sig, helper_var[h], err);
	}
	free(w.v);
	if (st)
		cp_exports_free(out);
	return st;
}

struct blob_ctx {
	struct cp_exports *out;
	cp_error *err;
	cp_status st;
};

/* Whether a signature is a function's (Cython's "RET (ARGS)" or
 * "RET *(ARGS)", then " except ..." or " noexcept" or " nogil") rather than
 * a variable's type (which may be a pointer to a function: "RET (*)(ARGS)"). */
static bool function_signature(const char *sig)
{
	const char *p = strchr(sig, '(');

	return p && p[1] != '*';
}

static bool add_pair(void *ctx, const char *sig, const char *name)
{
	struct blob_ctx *b = ctx;

	b->st = add(b->out, name, sig, !function_signature(sig), b->err);
	return !b->st;
}

cp_status cp_exports_from_blob(const struct cp_scan *scan, struct cp_exports *out, cp_error *err)
{
	struct blob_ctx b = { out, err, CP_OK };
	size_t i, k;

	for (i = 0; !b.st && i < scan->nblobs; i++) {
		const struct cp_blob *bl = &scan->blobs[i];

		for (k = 0; !b.st && k < bl->nentries; k++) {
			const struct cp_blob_entry *e = &bl->entry[k];

			/* an import's constant is read right after its import; one
			 * the scan cannot tell from another import's could be the
			 * export list or not, and neither guess is safe for check */
			if (e->is_bytes && e->import_unsure)
				return cp_fail(err, CP_E_INPUT, "%s: blob entry %zu is an import-signature constant "
					       "that may list the module's exports or an import's; which is not known",
					       scan->path, k);
			if (e->is_bytes && !e->import_call)
				cp_blob_sigconst_pairs(bl->data + e->offset, e->length, add_pair, &b);
		}
	}
	return b.st;
}

cp_status cp_exports_of_release(const cp_releases *kb, size_t rel, const char *module, struct cp_exports *out,
				cp_error *err)
{
	cp_status st = CP_OK;
	size_t i;

	memset(out, 0, sizeof(*out));
	for (i = 0; !st && i < kb->nitem; i++) {
		const struct cp_release_item *it = &kb->item[i];

		if ((it->kind == CP_REL_FUNCTION || it->kind == CP_REL_VARIABLE) && !strcmp(it->module, module) &&
		    cp_releases_has(kb, i, rel))
			st = add(out, it->name, it->sig, it->kind == CP_REL_VARIABLE, err);
	}
	return st;
}

void cp_exports_free(struct cp_exports *e)
{
	size_t i;

	for (i = 0; i < e->n; i++) {
		free(e->v[i].name);
		free(e->v[i].sig);
	}
	free(e->v);
	memset(e, 0, sizeof(*e));
}

const struct cp_export *cp_exports_find(const struct cp_exports *e, const char *name)
{
	size_t i;

	for (i = 0; i < e->n; i++)
		if (e->v[i].name && !strcmp(e->v[i].name, name))
			return &e->v[i];
	return NULL;
}

cp_status cp_exports_of_file(const char *file, const cp_rules *rules, struct cp_exports *out, cp_error *err)
{
	cp_image *img = NULL;
	cp_scan *scan = NULL;
	cp_error serr = { CP_OK, "" };
	cp_status st = cp_image_open(file, &img, err);

	if (!st)
		st = cp_exports_read(img, out, err);
	/* a provider the scan cannot read has the exports its calls show */
	if (!st && cp_scan_is_module(img) && cp_scan_run(img, rules, &scan, &serr) == CP_OK) {
		if (scan->nblobs)
			st = cp_exports_from_blob(scan, out, err);
		cp_scan_free(scan);
	}
	st = cp_image_settle(img, st, err);
	cp_image_close(img);
	return st;
}
