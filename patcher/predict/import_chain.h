/*
 * import_chain.h - `check` of a wheel: the Python code that importing one
 * of its extension modules runs first. CPython imports every package on
 * the module's dotted path before the module (running each __init__.py),
 * and those import the wheel's own modules in turn, .py files and
 * extensions alike; any of them may fail before the extension is reached
 * (a package rewritten for a layout the site lacks, an __init__.py that
 * raises without cuda.bindings).
 *
 * The wheel's modules are indexed from its member names; the statements of
 * each .py file are those pystmt.h reads (what runs at import time and is
 * not guarded). Followed, in the order CPython runs them and each module
 * once (a module being imported counts as imported, so cycles end): a
 * statement importing a module of the wheel (absolute, or relative and
 * resolving inside it; a wheel of per-CUDA-major trees, pkg/cu12/ and
 * pkg/cu13/, whose package puts the installed major's tree on its
 * __path__ as cuda-core's does, holds pkg/cu12/x as pkg.x too), and what
 * an extension of the wheel imports of the wheel's modules (its cimported modules and Python-level names; a name
 * it uses only inside a function counts too). A statement importing a
 * mapped module (or a layout-specific package, or naming one in `from P
 * import n`) fails when the caller's resolver does not find it; one of a
 * fallback block fails when its other import fails too. An extension of
 * the wheel fails where its own prediction does. Anything else (a module
 * the wheel does not hold and the rules do not map, `importlib` calls) is
 * left alone.
 */
#ifndef CP_IMPORT_CHAIN_H
#define CP_IMPORT_CHAIN_H

#include <jansson.h>
#include <stdbool.h>
#include "cypatch.h"
#include "wheel/wheel.h"

struct cp_chain;

/* Whether `module` imports under the site; else the first dotted name the
 * import system would not find, into missing. */
typedef bool (*cp_chain_resolve)(void *ctx, const char *module, char *missing, size_t mn);

/* The index of w's modules, its Python sources read; major: the CUDA
 * major whose tree the package imports, or 0. */
cp_status cp_chain_open(struct cp_wheel *w, const cp_rules *rules, unsigned major, struct cp_chain **out,
			cp_error *err);

/* A member inside a per-CUDA-major tree (cuda-core: pkg/cu12/...,
 * pkg/cu13/...; the package imports the one for the installed major, and
 * the others cannot be imported): the tree's major, when the wheel has
 * another tree beside it, with the length of "pkg/" in *head (when not
 * NULL); else 0. */
unsigned cp_chain_tree_major(const struct cp_wheel *w, const char *name, size_t *head);

/* The modules the extension `member` of the wheel imports when its init
 * runs, in order (its scan's: the cimported ones, then its body's); those
 * of the wheel are followed. */
cp_status cp_chain_note_imports(struct cp_chain *ch, const char *member, const char *const *modules, size_t n,
				cp_error *err);

/* exts: the predictions for the wheel's extensions ({"file": member,
 * "failures": [...], "skipped"?}). For each not skipped, the first failure
 * of the code its import runs first (its own failures aside), put at the
 * head of its "failures", and the import statements that lead there as
 * "via". */
cp_status cp_chain_predict(struct cp_chain *ch, json_t *exts, cp_chain_resolve resolve, void *ctx, cp_error *err);

void cp_chain_free(struct cp_chain *ch);

#endif
