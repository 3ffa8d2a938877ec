/* rules.h - layouts and module mappings loaded from rules files. */
#ifndef CP_RULES_H
#define CP_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include "cypatch.h"

#define CP_MAX_LAYOUTS 8

/* One module pair: `from` in layout `a` corresponds to `to` in layout `b`. */
struct cp_module_pair {
	char *name[2];   /* [0] in layout[0], [1] in layout[1] */
	int layout[2];   /* indexes into cp_rules.layout */
	const char *file;
	int line;
};

/* A pair of mangled-name prefixes, checked against its module pair. */
struct cp_mangle_pair {
	char *prefix[2];
	int layout[2];
	const char *file;
	int line;
};

/* A C return type and the error value a stand-in for a function of that
 * type returns ([errors]: --tolerate-missing). */
struct cp_error_value {
	char *type;      /* as capsule signatures spell it: "CUresult" */
	long value;
};

struct cp_rules {
	char *layout[CP_MAX_LAYOUTS];
	size_t nlayout;
	struct cp_module_pair *mod;
	size_t nmod, capmod;
	struct cp_mangle_pair *mangle;
	size_t nmangle, capmangle;
	struct cp_error_value *errval;
	size_t nerrval, caperrval;
	char **files; /* names of loaded files, owned, for messages */
	size_t nfiles, capfiles;
	/* Indexes kept by the loader, so that a lookup does not read every
	 * module (rules.c): module names (slot: 2 * module + side + 1, 0
	 * free), and the proper dotted prefixes of them ("packages") with the
	 * one layout of the modules under each, or -1 when they have two. */
	size_t *name_slot, nname_slot;
	struct cp_package *pkg;
	size_t npkg, cappkg;
	size_t *pkg_slot, npkg_slot; /* package + 1, 0 free */
	size_t *mangle_slot, nmangle_slot; /* mangled prefixes: 2 * pair + side + 1 */
};

struct cp_package {
	char *name;
	int layout;
};

/* cp_rules_layout_index, with loading and freeing: public (cypatch.h). */

/* The [errors] entry of the return type of a function whose capsule
 * signature is sig ("CUresult (int *)"), or NULL when it names none. */
const struct cp_error_value *cp_rules_error_type(const cp_rules *r, const char *sig);

/* Layout index of a module name (exact match), or -1 when unmapped. */
int cp_rules_module_layout(const cp_rules *r, const char *module);

/* The name `module` has in layout `target`, or NULL when it has none. */
const char *cp_rules_map(const cp_rules *r, const char *module, int target);

/*
 * Layout index when `pkg` is a package prefix of modules of exactly one
 * layout and of none of another (cuda.bindings), else -1.
 */
int cp_rules_package_layout(const cp_rules *r, const char *pkg);

/* The layout of a module name or of a package prefix (cuda.bindings), with
 * the rules' own spelling of it in *module; -1 when unmapped. */
int cp_rules_name_layout(const cp_rules *r, const char *v, const char **module);

/* For a dotted name v[0, n) that the rules do not map and that lies in a
 * package of one layout's modules (cuda.bindings.cynvvm, which cuda-python
 * 12.8 added and the legacy layout never had): that package's layout, with
 * the rules' spelling of the package in *pkg; else -1. */
int cp_rules_unmapped_layout(const cp_rules *r, const char *v, size_t n, const char **pkg);

/* The layout of the module whose mangled prefix appears in an import
 * signature ("... __pyx_t_4cuda_5ccuda_..."), with its name in *module; -1
 * when none does. */
int cp_rules_signature_layout(const cp_rules *r, const char *sig, const char **module);

/* Whether name[0, n) is the first component of a mapped module ("cuda"). */
bool cp_rules_is_top_package(const cp_rules *r, const char *name, size_t n);

/* Whether text[0, n) holds the first component of any mapped module: a
 * cheap test before a file is read for its imports. */
bool cp_rules_mentioned(const cp_rules *r, const char *text, size_t n);

/* Writes Cython's mangled prefix of a dotted module path ("4cuda_5ccuda_")
 * preceded by "__pyx_t_" into buf; returns its length or -1 when too long. */
int cp_mangle_prefix(const char *module, char *buf, size_t size);

#endif
