/*
 * predict.c - `cypatch check`: what importing an extension will do under a
 * site-packages directory, decided from the files alone (see cypatch.h).
 */
#include "cypatch.h"
#include "util/cleanup_on_signal.h"
#include "util/error.h"
#include "predict/exports.h"
#include "elf/image.h"
#include "predict/import_time.h"
#include "predict/import_chain.h"
#include "releases/releases.h"
#include "rules/rules.h"
#include "scan/scan.h"
#include "wheel/wheel.h"
#include "wheel/wheel_name.h"
#include "util/cores.h"
#include "util/write.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct ctx {
	const cp_rules *rules;
	const char *site;     /* the site-packages directory, or NULL: ... */
	const cp_releases *kb; /* ... a release of the knowledge base */
	size_t rel;
	const char *suffix;   /* the consumer's ".cpython-311-x86_64-linux-gnu.so" */
	char ext[64];         /* the target interpreter's, or "" when not known */
	unsigned cuda_major;  /* of the site's cuda-bindings (or cuda-python), or 0 */
	json_t *failures;
	json_t *deferred;     /* imports that do not run at import time */
	json_t *stood_in;     /* what the stub stands in for under this site */
	cp_error *err;
	struct cp_chain *chain; /* a wheel's modules, for what runs before an extension */
	struct read_exports *read; /* each provider file's exports, read once */
	size_t nread;
};

/* The exports of a provider file, as provider_exports found them (a
 * trampoline's are its counterpart's). A wheel's extensions cimport the
 * same few providers, and reading one (a cuda-bindings module of 30 MB,
 * whose Cython 3.2 build keeps its exports in its string blob) is most of
 * what check of a wheel costs. */
struct read_exports {
	char *file;
	char ext[64];  /* ctx's when read: where a trampoline's counterpart is found */
	struct cp_exports ex;
};

static bool is_dir(const char *p)
{
	struct stat sb;

	return !stat(p, &sb) && S_ISDIR(sb.st_mode);
}

static bool is_file(const char *p)
{
	struct stat sb;

	return !stat(p, &sb) && S_ISREG(sb.st_mode);
}

/* When the target interpreter is not known (an abi3 consumer checked
 * against a tree that does not name its Python): the one file
 * "<name>.cpython-*.so" in dir, if there is exactly one. */
static bool one_interpreter_file(const char *dir, const char *name, int len, char *out, size_t n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	if (!d)
		return false;
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);

		if (!strncmp(e->d_name, name, (size_t)len) && !strncmp(e->d_name + len, ".cpython-", 9) &&
		    l > 3 && !strcmp(e->d_name + l - 3, ".so") &&
		    (size_t)snprintf(out, n, "%s/%s", dir, e->d_name) < n && is_file(out))
			found++;
	}
	closedir(d);
	if (found == 1)
		return true;
	out[0] = '\0';
	return false;
}

/* resolve() in a release of the knowledge base: an extension's file is
 * "release:MODULE" (read_exports takes its capsules from the base). */
static bool resolve_in_release(const struct ctx *c, const char *module, char *file, size_t n, char *missing,
			       size_t mn)
{
	const char *dot;
	char prefix[1024];
	enum cp_release_module m;

	file[0] = '\0';
	for (dot = strchr(module, '.');; dot = strchr(dot + 1, '.')) {
		size_t len = dot ? (size_t)(dot - module) : strlen(module);

		if (len >= sizeof(prefix) || (size_t)snprintf(missing, mn, "%.*s", (int)len, module) >= mn)
			return false;
		memcpy(prefix, module, len);
		prefix[len] = '\0';
		m = cp_releases_module(c->kb, c->rel, prefix);
		if (m == CP_RELMOD_ABSENT || (dot && m == CP_RELMOD_EXTENSION))
			return false;
		if (!dot)
			break;
	}
	return m != CP_RELMOD_EXTENSION || (size_t)snprintf(file, n, "release:%s", module) < n;
}

/* Where `module` would be imported from under the site: its extension
 * file, "" for a Python module or package, or NULL with *missing set to
 * the first name the import system would not find. */
static bool resolve(const struct ctx *c, const char *module, char *file, size_t n, char *missing, size_t mn)
{
	char path[4400], probe[4400];
	const char *p = module;
	/* importlib.machinery.EXTENSION_SUFFIXES of the target interpreter */
	const char *suffixes[] = { c->ext, ".abi3.so", ".so" };
	size_t k;

	if (c->kb)
		return resolve_in_release(c, module, file, n, missing, mn);
	file[0] = '\0';
	if ((size_t)snprintf(path, sizeof(path), "%s", c->site) >= sizeof(path))
		return false;
	for (;;) {
		const char *dot = strchr(p, '.');
		int len = (int)(dot ? (size_t)(dot - p) : strlen(p));

		if ((size_t)snprintf(missing, mn, "%.*s", (int)(p - module) + len, module) >= mn)
			return false;
		if (dot) { /* a package: a directory, with or without __init__ */
			if ((size_t)snprintf(probe, sizeof(probe), "%s/%.*s", path, len, p) >= sizeof(probe) ||
			    !is_dir(probe))
				return false;
			memcpy(path, probe, sizeof(path));
			p = dot + 1;
			continue;
		}
		for (k = 0; k < 3; k++)
			if (suffixes[k][0] &&
			    (size_t)snprintf(probe, sizeof(probe), "%s/%s%s", path, p, suffixes[k]) < sizeof(probe) &&
			    is_file(probe))
				return (size_t)snprintf(file, n, "%s", probe) < n;
		if (!c->ext[0] && one_interpreter_file(path, p, len, probe, sizeof(probe)))
			return (size_t)snprintf(file, n, "%s", probe) < n;
		if ((size_t)snprintf(probe, sizeof(probe), "%s/%s.py", path, p) < sizeof(probe) && is_file(probe))
			return true;
		return (size_t)snprintf(probe, sizeof(probe), "%s/%s", path, p) < sizeof(probe) && is_dir(probe);
	}
}

static void fail(struct ctx *c, const char *fmt, const char *a, const char *b, const char *d, const char *e)
{
	char msg[16384];

	snprintf(msg, sizeof(msg), fmt, a, b, d, e);
	json_array_append_new(c->failures, json_string(msg));
}

/* The exports of one provider file (exports.c: the same that `show
 * --exports` lists). */
static cp_status read_exports(struct ctx *c, const char *file, struct cp_exports *ex)
{
	if (c->kb)
		return cp_exports_of_release(c->kb, c->rel, file + strlen("release:"), ex, c->err);
	return cp_exports_of_file(file, c->rules, ex, c->err);
}

/* The capsules the provider `module` (in `file`) exports. A trampoline
 * (12.6.2 to 12.9's cuda.ccuda: `from cuda.bindings.cydriver cimport *`,
 * `__pyx_capi__ = cydriver.__pyx_capi__`) has none of its own and passes
 * on those of its counterpart in the other layout. */
static cp_status follow_trampoline(struct ctx *c, const char *module, const char *file, struct cp_exports *ex)
{
	int lay = cp_rules_module_layout(c->rules, module);
	const char *other = lay >= 0 ? cp_rules_map(c->rules, module, !lay) : NULL;
	char target[4096], missing[4096];
	cp_status st = read_exports(c, file, ex);

	if (!st && !ex->n && other && resolve(c, other, target, sizeof(target), missing, sizeof(missing)) && target[0])
		st = read_exports(c, target, ex);
	return st;
}

/* The exports of `module`, found in `file`: read the first time, then
 * kept until cp_predict returns. */
static cp_status provider_exports(struct ctx *c, const char *module, const char *file,
				  const struct cp_exports **out)
{
	struct read_exports *more, *r;
	cp_status st;
	size_t i;

	for (i = 0; i < c->nread; i++)
		if (!strcmp(c->read[i].file, file) && !strcmp(c->read[i].ext, c->ext)) {
			*out = &c->read[i].ex;
			return CP_OK;
		}
	more = realloc(c->read, (c->nread + 1) * sizeof(*more));
	if (!more)
		return cp_fail(c->err, CP_E_INTERNAL, "out of memory");
	c->read = more;
	r = &c->read[c->nread];
	memset(r, 0, sizeof(*r));
	if (!(r->file = strdup(file)))
		return cp_fail(c->err, CP_E_INTERNAL, "out of memory");
	memcpy(r->ext, c->ext, sizeof(r->ext));
	st = follow_trampoline(c, module, file, &r->ex);
	if (st) {
		cp_exports_free(&r->ex);
		free(r->file);
		return st;
	}
	c->nread++;
	*out = &r->ex;
	return CP_OK;
}

static void forget_exports(struct ctx *c)
{
	size_t i;

	for (i = 0; i < c->nread; i++) {
		cp_exports_free(&c->read[i].ex);
		free(c->read[i].file);
	}
	free(c->read);
	c->read = NULL;
	c->nread = 0;
}

/* Signatures equal, or (fallback) equal up to mapped prefix pairs. */
static bool same_signature(const cp_rules *r, const char *a, const char *b, bool fallback)
{
	size_t i, k;

	if (!strcmp(a, b))
		return true;
	while (fallback && (*a || *b)) {
		for (i = 0; i < r->nmangle; i++) {
			for (k = 0; k < 2; k++) {
				const char *p = r->mangle[i].prefix[k], *q = r->mangle[i].prefix[!k];

				if (!strncmp(a, p, strlen(p)) && !strncmp(b, q, strlen(q))) {
					a += strlen(p);
					b += strlen(q);
					goto next;
				}
			}
		}
		if (*a != *b)
			return false;
		a++, b++;
next:;
	}
	return fallback;
}

/* The module a cimport binds to: the built name, else (fallback) its
 * counterpart; NULL after recording the failure. */
static const char *bind_module(struct ctx *c, const cp_scan *s, const char *module, char *file, size_t n)
{
	char missing[4096], missing2[4096];
	const char *other = s->fallback ? cp_rules_map(c->rules, module, !cp_rules_module_layout(c->rules, module))
					: NULL;

	if (resolve(c, module, file, n, missing, sizeof(missing)))
		return module;
	if (other && resolve(c, other, file, n, missing2, sizeof(missing2)))
		return other;
	if (cp_scan_stands_in(s, module, true)) {
		json_array_append_new(c->stood_in, json_string(module));
		file[0] = '\0';
		return module; /* the stub's empty module: every function stood in for */
	}
	if (other)
		fail(c, "ImportError: %s: neither %s nor %s can be imported (cypatch fallback)%s", s->modname, module,
		     other, "");
	else
		fail(c, "ModuleNotFoundError: No module named '%s'%s%s%s", missing, "", "", "");
	return NULL;
}

/* Whether refs[i] is the first of a module the extension cimports: a
 * mapped one, or one of a layout's package that the rules do not map
 * (cuda.bindings.cynvvm) from which it takes functions or variables. */
static bool cimport_ref(const cp_scan *s, size_t i)
{
	const struct cp_ref *m = &s->refs[i];
	size_t k;
	bool takes = m->kind == CP_K_CIMPORT;

	if (!cp_ref_is_live(m) || (m->kind != CP_K_CIMPORT && (m->kind != CP_K_UNMAPPED || !cp_ref_may_import(m))))
		return false;
	for (k = 0; k < s->nrefs && !takes; k++)
		takes = (s->refs[k].kind == CP_K_FUNCTION || s->refs[k].kind == CP_K_VARIABLE) && s->refs[k].module &&
			!strcmp(s->refs[k].module, m->value);
	for (k = 0; k < i && takes && m->kind == CP_K_UNMAPPED; k++) /* its name may be met twice */
		if (s->refs[k].kind == CP_K_UNMAPPED && cp_ref_is_live(&s->refs[k]) && !strcmp(s->refs[k].value, m->value))
			return false;
	return takes;
}

/* The module cimport ref m binds to (its file in file, "" for none), or
 * NULL. An unmapped module's import is judged by check_pyimports: here
 * only its functions, where it imports. */
static const char *cimported_as(struct ctx *c, const cp_scan *s, const struct cp_ref *m, char *file, size_t n)
{
	char missing[4096];

	if (m->kind != CP_K_UNMAPPED)
		return bind_module(c, s, m->value, file, n);
	if (cp_scan_stands_in(s, m->value, true)) {
		file[0] = '\0';
		return m->value;
	}
	return resolve(c, m->value, file, n, missing, sizeof(missing)) ? m->value : NULL;
}

static cp_status check_cimports(struct ctx *c, const cp_scan *s, json_t *bound)
{
	size_t i, j;
	cp_status st = CP_OK;

	for (i = 0; !st && i < s->nrefs; i++) {
		static const struct cp_exports none; /* a Python module's */
		const struct cp_ref *m = &s->refs[i];
		const struct cp_exports *ex = &none;
		char file[4096];
		const char *as;

		if (!cimport_ref(s, i) || !(as = cimported_as(c, s, m, file, sizeof(file))))
			continue;
		if (m->kind == CP_K_CIMPORT)
			json_object_set_new(bound, m->value, json_string(as));
		if (file[0])
			st = provider_exports(c, as, file, &ex);
		for (j = 0; !st && j < s->nrefs; j++) {
			const struct cp_ref *f = &s->refs[j];
			const struct cp_export *e;
			const char *what = f->kind == CP_K_FUNCTION ? "function" : "variable";
			size_t k;

			if ((f->kind != CP_K_FUNCTION && f->kind != CP_K_VARIABLE) || !f->module ||
			    strcmp(f->module, m->value))
				continue;
			e = cp_exports_find(ex, f->name);
			for (k = 0; !e && f->kind == CP_K_VARIABLE && k < ex->n; k++) /* keys unknown: by signature */
				if (!ex->v[k].name && same_signature(c->rules, f->signature, ex->v[k].sig, s->fallback))
					e = &ex->v[k];
			if (!e && f->kind == CP_K_FUNCTION && cp_scan_stands_in(s, f->name, false) &&
			    cp_rules_error_type(c->rules, f->signature)) {
				char full[1024];

				snprintf(full, sizeof(full), "%s.%s", f->module, f->name);
				json_array_append_new(c->stood_in, json_string(full));
			} else if (!e) {
				char fmt[200];

				snprintf(fmt, sizeof(fmt), "ImportError: %%s does not export expected C %s %%s%%s%%s", what);
				fail(c, fmt, as, f->name, "", "");
			} else if (!same_signature(c->rules, f->signature, e->sig, s->fallback)) {
				char head[600];

				snprintf(head, sizeof(head), "TypeError: C %s %s.%s", what, as, f->name);
				fail(c, "%s has wrong signature (expected %s, got %s)%s", head, f->signature, e->sig, "");
			}
		}
	}
	return st;
}

/* When the imports of r's package run: at import time unless every call
 * that imports it is known and runs later (import_time.h). */
static cp_status ref_when(const cp_scan *s, cp_import_time *t, const struct cp_ref *r, enum cp_when *out,
			  cp_error *err)
{
	size_t i, k, n = 0;
	enum cp_when w, first = CP_WHEN_AT_IMPORT;
	cp_status st = CP_OK;

	*out = CP_WHEN_AT_IMPORT;
	if (!r->pyslots_known || !r->npyslots)
		return CP_OK;
	for (i = 0; !st && i < s->nimport_calls; i++)
		for (k = 0; !st && k < r->npyslots; k++) {
			if (s->import_calls[i].slot != r->pyslots[k])
				continue;
			st = cp_import_time_of(t, s->import_calls[i].call, &w, err);
			if (!st && w == CP_WHEN_AT_IMPORT)
				return CP_OK;
			first = n++ ? first : w;
		}
	if (!st && n)
		*out = first;
	return st;
}

static void defer(struct ctx *c, const struct cp_ref *r, enum cp_when w)
{
	char line[600];

	if (r->kind == CP_K_FROMIMPORT)
		snprintf(line, sizeof(line), "from %s import %s (%s)", r->package, r->name, cp_when_text(w));
	else
		snprintf(line, sizeof(line), "import %s (%s)", r->value, cp_when_text(w));
	json_array_append_new(c->deferred, json_string(line));
}

/* Whether check judges reference r as an import: `import a.b.c` and `from
 * P import N` of mapped modules, and any import of a module only one
 * layout has (unmapped: a cimport of one too). */
static bool judged_import(const cp_rules *rules, const struct cp_ref *r)
{
	if (!cp_ref_is_live(r))
		return false;
	switch (r->kind) {
	case CP_K_FROMIMPORT:
		return true;
	case CP_K_UNMAPPED:
		return cp_ref_may_import(r);
	case CP_K_PYIMPORT:
		return r->module && cp_rules_module_layout(rules, r->value) >= 0;
	default:
		return false;
	}
}

/* The imports judged_import takes, those made at import time; the others
 * are listed as deferred. */
static cp_status check_pyimports(struct ctx *c, const cp_scan *s, const enum cp_when *when)
{
	char file[4096], missing[4096], full[1024];
	cp_status st = CP_OK;
	size_t i;

	for (i = 0; !st && i < s->nrefs; i++) {
		const struct cp_ref *r = &s->refs[i];
		const char *other;
		enum cp_when w = when[i];

		if (!judged_import(c->rules, r))
			continue;
		if (w != CP_WHEN_AT_IMPORT) {
			defer(c, r, w);
			continue;
		}
		if (r->kind != CP_K_FROMIMPORT) {
			other = s->fallback && r->kind == CP_K_PYIMPORT ? cp_rules_map(c->rules, r->value, !r->layout)
									 : NULL;
			if (resolve(c, r->value, file, sizeof(file), missing, sizeof(missing)) ||
			    (other && resolve(c, other, file, sizeof(file), full, sizeof(full))))
				continue;
			if (r->kind == CP_K_UNMAPPED && cp_scan_stands_in(s, r->value, true))
				json_array_append_new(c->stood_in, json_string(r->value));
			else if (other)
				fail(c, "ImportError: %s: neither %s nor %s can be imported (cypatch fallback)%s",
				     s->modname, r->value, other, "");
			else
				fail(c, "ModuleNotFoundError: No module named '%s'%s%s%s", missing, "", "", "");
			continue;
		}
		snprintf(full, sizeof(full), "%s.%s", r->package, r->name);
		other = s->fallback ? cp_rules_map(c->rules, r->module, !r->layout) : NULL;
		if (resolve(c, full, file, sizeof(file), missing, sizeof(missing)) ||
		    (other && resolve(c, other, file, sizeof(file), full, sizeof(full))))
			continue;
		if (other)
			fail(c, "ImportError: %s: neither %s nor %s can be imported (cypatch fallback)%s", s->modname,
			     r->module, other, "");
		else if (resolve(c, r->package, file, sizeof(file), missing, sizeof(missing)))
			fail(c, "ImportError: cannot import name %s%s%s%s", r->name, "", "", "");
		else
			fail(c, "ModuleNotFoundError: No module named '%s'%s%s%s", missing, "", "", "");
	}
	return st;
}

/* When each import check_pyimports judges runs (else at import time). */
static cp_status import_times(const struct ctx *c, const cp_image *img, const cp_scan *s, enum cp_when **out,
			      cp_error *err)
{
	cp_import_time *t = NULL;
	cp_status st = CP_OK;
	size_t i;

	*out = calloc(s->nrefs ? s->nrefs : 1, sizeof(**out));
	if (!*out)
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	for (i = 0; !st && i < s->nrefs; i++) {
		(*out)[i] = CP_WHEN_AT_IMPORT;
		if (!judged_import(c->rules, &s->refs[i]))
			continue;
		if (!t)
			st = cp_import_time_open(img, s->modname, &t, err);
		if (!st)
			st = ref_when(s, t, &s->refs[i], &(*out)[i], err);
	}
	cp_import_time_close(t);
	return st;
}

/*
 * The suffix the target interpreter gives its own extensions: the
 * consumer's when it names an interpreter (.cpython-311-x86_64-linux-gnu.so),
 * else (an abi3 consumer, .abi3.so) the one of the site's interpreter, from
 * its path (lib/python3.11/site-packages) and the consumer's machine (its
 * arch's triplet).
 */
static void interpreter_suffix(struct ctx *c, const char *triplet)
{
	const char *p = c->site ? strstr(c->site, "/python3.") : NULL;
	unsigned minor;
	char tail;

	c->ext[0] = '\0';
	if (!strncmp(c->suffix, ".cpython-", 9)) {
		snprintf(c->ext, sizeof(c->ext), "%s", c->suffix);
		return;
	}
	if (p && sscanf(p, "/python3.%u%c", &minor, &tail) == 2 && tail == '/' && minor < 100)
		snprintf(c->ext, sizeof(c->ext), ".cpython-3%u-%s.so", minor, triplet);
}

/* An extension read and scanned once, then judged under each site or
 * release: what the judgement needs of it, its image closed (a wheel's
 * extensions are more than the files cypatch maps at once). */
struct unit {
	char *label;         /* the path, or the wheel's member name */
	cp_scan *scan;       /* its references (the walk freed) */
	enum cp_when *when;  /* when each reference's import runs */
	char **imports;      /* the modules its init imports, in order (chain_of) */
	size_t nimports;
	const char *triplet; /* its machine's */
	unsigned tree;       /* the CUDA major of its tree (pkg/cu12/), or 0 */
};

/* What check reads of its input: its Cython extensions, and for a wheel
 * the wheel (its Python code is read for each judgement). */
struct units {
	struct unit *v;
	size_t n;
	struct cp_wheel *w;
	struct cp_chain *chain[4]; /* a wheel's modules, by the CUDA major ... */
	unsigned major[4];         /* ... whose tree the package imports */
	size_t nchain;
};

static void unit_free(struct unit *x)
{
	size_t i;

	for (i = 0; i < x->nimports; i++)
		free(x->imports[i]);
	free(x->imports);
	free(x->when);
	free(x->label);
	cp_scan_free(x->scan);
}

static void units_free(struct units *u)
{
	size_t i;

	for (i = 0; i < u->n; i++)
		unit_free(&u->v[i]);
	free(u->v);
	for (i = 0; i < u->nchain; i++)
		cp_chain_free(u->chain[i]);
	cp_wheel_close(u->w);
	memset(u, 0, sizeof(*u));
}

/* The modules the extension's init imports: the cimported ones first,
 * then those of its body (what import_chain.h follows). */
static cp_status unit_imports(const cp_scan *s, struct unit *x, cp_error *err)
{
	size_t i;

	x->imports = calloc(s->nblocks + s->npynames + 1, sizeof(char *));
	if (!x->imports)
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	for (i = 0; i < s->nblocks + s->npynames; i++) {
		const char *m = i < s->nblocks ? s->blocks[i].module : s->pynames[i - s->nblocks];

		if (m && !(x->imports[x->nimports++] = strdup(m)))
			return cp_fail(err, CP_E_INTERNAL, "out of memory");
	}
	return CP_OK;
}

/* Reads and scans one extension file into x (*module false, x empty,
 * when it is no Cython module); a scan that notes what it could not
 * follow is an error. */
static cp_status scan_unit(const struct ctx *c, const char *file, const char *label, unsigned tree, struct unit *x,
			   bool *module, cp_error *err)
{
	cp_image *img = NULL;
	cp_status st = cp_image_open(file, &img, err);

	*x = (struct unit){ NULL, NULL, NULL, NULL, 0, NULL, tree };
	*module = !st && cp_scan_is_module(img);
	if (!st && !*module) {
		cp_image_close(img);
		return CP_OK;
	}
	if (!st)
		st = cp_scan_run(img, c->rules, &x->scan, err);
	/* a prediction from what the scan could not see would be a guess */
	if (!st && x->scan->incomplete[0])
		st = cp_fail(err, CP_E_INPUT, "%s: %s", label, x->scan->incomplete);
	if (!st)
		st = import_times(c, img, x->scan, &x->when, err);
	if (!st)
		st = unit_imports(x->scan, x, err);
	st = cp_image_settle(img, st, err);
	if (!st) {
		x->triplet = img->arch->triplet;
		if (!(x->label = strdup(label)))
			st = cp_fail(err, CP_E_INTERNAL, "out of memory");
	}
	if (st)
		unit_free(x);
	else
		cp_scan_free_walk(x->scan);
	cp_image_close(img);
	return st;
}

/* x appended to u (taken: freed on failure). */
static cp_status keep_unit(struct units *u, struct unit *x, cp_error *err)
{
	struct unit *more = realloc(u->v, (u->n + 1) * sizeof(*more));

	if (!more) {
		unit_free(x);
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	}
	u->v = more;
	u->v[u->n++] = *x;
	return CP_OK;
}

/* One extension file, kept in u when it is a Cython module. */
static cp_status read_unit(const struct ctx *c, const char *file, const char *label, unsigned tree,
			   struct units *u, cp_error *err)
{
	struct unit x;
	bool module;
	cp_status st = scan_unit(c, file, label, tree, &x, &module, err);

	return st || !module ? st : keep_unit(u, &x, err);
}

/* One extension: its prediction appended to exts, when it references a
 * layout. */
static cp_status predict_unit(struct ctx *c, const struct unit *x, json_t *exts)
{
	json_t *bound = json_object();
	const char *base = strrchr(x->label, '/');
	cp_status st = CP_OK;

	c->failures = json_array();
	c->deferred = json_array();
	c->stood_in = json_array();
	c->suffix = strchr(base ? base + 1 : x->label, '.');
	if (!c->suffix)
		c->suffix = ".so";
	interpreter_suffix(c, x->triplet);
	if (x->scan->layouts_seen) {
		st = check_cimports(c, x->scan, bound);
		if (!st)
			st = check_pyimports(c, x->scan, x->when);
		if (!st)
			json_array_append_new(exts, json_pack("{s:s, s:s, s:b, s:O, s:O, s:O, s:O}", "file", x->label,
							      "module", x->scan->modname, "fallback",
							      x->scan->fallback, "binds", bound, "failures",
							      c->failures, "deferred", c->deferred, "stood_in",
							      c->stood_in));
	}
	json_decref(bound);
	json_decref(c->failures);
	json_decref(c->deferred);
	json_decref(c->stood_in);
	return st;
}

/* The major version of the cuda-bindings installed in the site (else of
 * cuda-python, which held cuda.bindings itself up to 12.6), from its
 * dist-info directory's name; 0 when neither is there. */
static unsigned site_cuda_major(const char *site)
{
	static const char *const dists[] = { "cuda_bindings-", "cuda_python-" };
	unsigned found[2] = { 0, 0 }, v;
	DIR *d = opendir(site);
	struct dirent *e;
	size_t k;

	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL)
		for (k = 0; k < 2; k++)
			if (!strncmp(e->d_name, dists[k], strlen(dists[k])) && strstr(e->d_name, ".dist-info") &&
			    sscanf(e->d_name + strlen(dists[k]), "%u.", &v) == 1)
				found[k] = v;
	closedir(d);
	return found[0] ? found[0] : found[1];
}

/* The prediction just appended to exts, for a module of a tree the
 * package does not import under the site: replaced by why it is skipped. */
static void skip_tree(json_t *exts, unsigned tree, unsigned major)
{
	json_t *e = json_array_get(exts, json_array_size(exts) - 1);
	char why[160];

	snprintf(why, sizeof(why), "a tree for CUDA %u; the package imports the one for CUDA %u", tree, major);
	json_object_set_new(e, "binds", json_object());
	json_object_set_new(e, "failures", json_array());
	json_object_set_new(e, "skipped", json_string(why));
}

/* resolve() for import_chain.h */
static bool resolves(void *ctx, const char *module, char *missing, size_t mn)
{
	char file[4096];

	return resolve(ctx, module, file, sizeof(file), missing, mn);
}

/*
 * The step after every extension's own prediction: the Python code its
 * import runs first (its packages' __init__.py and what they import of the
 * wheel), whose failure is the extension's too (import_chain.h).
 */
static cp_status predict_python(struct ctx *c, json_t *exts, cp_error *err)
{
	return cp_chain_predict(c->chain, exts, resolves, c, err);
}

/*
 * A wheel's extension members are scanned on every core at once (at most
 * MAX_READERS): each worker takes the next member, extracts it through its
 * own reader of the archive into its own scratch file and scans it into the
 * member's slot. The units are then kept in the wheel's order, and the
 * first failure in that order is the one told, as reading them one at a
 * time would.
 */
#define MAX_READERS 8

struct member_scan {
	size_t member;   /* index into the wheel */
	struct unit x;
	bool module;
	cp_status st;
	cp_error err;
};

struct wheel_read {
	const struct ctx *c;
	struct cp_wheel *w;
	const char *path;
	char dir[32];
	struct member_scan *m;
	size_t n;
	atomic_size_t next;
};

static void scratch_name(const struct wheel_read *r, unsigned k, char *out, size_t n)
{
	snprintf(out, n, "%s/%u.so", r->dir, k);
}

/* Member m extracted into worker k's scratch file and scanned. */
static cp_status scan_member(struct wheel_read *r, zip_t *z, unsigned k, struct member_scan *m)
{
	const char *name = r->w->m[m->member].name;
	char tmp[64];
	bool found;
	cp_status st;
	int fd;

	scratch_name(r, k, tmp, sizeof(tmp));
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return cp_fail(&m->err, CP_E_IO, "%s: cannot write there: %s", r->dir, strerror(errno));
	st = cp_wheel_extract(r->w, z, m->member, fd, "PyInit_", &found, &m->err);
	if (close(fd) && !st)
		st = cp_fail(&m->err, CP_E_IO, "%s: cannot write there: %s", r->dir, strerror(errno));
	if (!st) /* every .so, as a bad one is an error (found is not asked) */
		st = scan_unit(r->c, tmp, name, cp_chain_tree_major(r->w, name, NULL), &m->x, &m->module, &m->err);
	if (st)
		cp_fail_about_member(&m->err, st, tmp, r->path, name);
	unlink(tmp);
	return st;
}

struct reader {
	struct wheel_read *r;
	unsigned k;
	pthread_t thread;
	bool running;
};

static void *read_members(void *arg)
{
	struct reader *me = arg;
	struct wheel_read *r = me->r;
	cp_error err = { CP_OK, "" };
	zip_t *z = NULL;
	cp_status zst = cp_wheel_reader(r->w, &z, &err);
	size_t k;

	while ((k = atomic_fetch_add(&r->next, 1)) < r->n) {
		r->m[k].st = zst ? zst : scan_member(r, z, me->k, &r->m[k]);
		if (zst)
			r->m[k].err = err;
	}
	if (z)
		zip_discard(z);
	return NULL;
}

/* The members that may be extensions, into r->m. */
static cp_status list_members(struct wheel_read *r, cp_error *err)
{
	size_t i;

	r->m = calloc(r->w->n ? r->w->n : 1, sizeof(*r->m));
	if (!r->m)
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	for (i = 0; i < r->w->n; i++)
		if (!r->w->m[i].dir && strstr(r->w->m[i].name, ".so"))
			r->m[r->n++].member = i;
	return CP_OK;
}

/* Runs the workers (the calling thread is one) over r->m. */
static void run_readers(struct wheel_read *r)
{
	struct reader w[MAX_READERS];
	unsigned n = cp_cores(), k;
	char tmp[64];

	n = n < 1 ? 1 : n > MAX_READERS ? MAX_READERS : n;
	if (n > r->n)
		n = r->n ? (unsigned)r->n : 1;
	for (k = 0; k < n; k++) {
		scratch_name(r, k, tmp, sizeof(tmp));
		cp_cleanup_add(tmp, false);
		w[k] = (struct reader){ r, k, 0, false };
	}
	for (k = 1; k < n; k++)
		w[k].running = !cp_cleanup_thread(&w[k].thread, read_members, &w[k]);
	read_members(&w[0]);
	for (k = 1; k < n; k++)
		if (w[k].running)
			pthread_join(w[k].thread, NULL);
	for (k = 0; k < n; k++) {
		scratch_name(r, k, tmp, sizeof(tmp));
		cp_cleanup_remove(tmp);
	}
}

/* The slots kept in the wheel's order; the first failure told. */
static cp_status keep_members(struct wheel_read *r, struct units *u, cp_error *err)
{
	cp_status st = CP_OK;
	size_t k;

	for (k = 0; k < r->n; k++) {
		struct member_scan *m = &r->m[k];

		if (!st && m->st) {
			st = m->st;
			*err = m->err;
		} else if (!st && m->module) {
			st = keep_unit(u, &m->x, err);
			continue;
		}
		unit_free(&m->x);
	}
	return st;
}

/* Every extension member of a wheel (path, named as), read into u. */
static cp_status read_wheel(const struct ctx *c, const char *path, const char *as, struct units *u, cp_error *err)
{
	struct wheel_read r = { c, NULL, path, "/tmp/cypatch-check-XXXXXX", NULL, 0, 0 };
	cp_status st = cp_wheel_open_named(path, as, &u->w, err);
	bool made = !st && mkdtemp(r.dir);

	r.w = u->w;
	if (!st && !made)
		st = cp_fail(err, CP_E_IO, "cannot create a temporary directory");
	if (made)
		cp_cleanup_add(r.dir, true);
	if (!st)
		st = list_members(&r, err);
	if (!st) {
		run_readers(&r);
		st = keep_members(&r, u, err);
	}
	if (made) {
		rmdir(r.dir);
		cp_cleanup_remove(r.dir);
	}
	free(r.m);
	return st;
}

/* What check reads of path (a wheel or an extension: its name says which,
 * or `as`, the name it will have), into u. */
static cp_status read_units(const struct ctx *c, const char *path, const char *as, struct units *u, cp_error *err)
{
	memset(u, 0, sizeof(*u));
	if (cp_wheel_name_is(as ? as : path))
		return read_wheel(c, path, as ? as : path, u, err);
	return read_unit(c, path, path, 0, u, err);
}

/* The index of the wheel's modules for the CUDA major c names, with what
 * each extension's init imports, made once (a wheel's Python sources are
 * read for each major, not each release). */
static cp_status chain_of(struct ctx *c, struct units *u, cp_error *err)
{
	size_t i, k;
	cp_status st;

	for (i = 0; i < u->nchain && u->major[i] != c->cuda_major; i++)
		;
	if (i == sizeof(u->chain) / sizeof(u->chain[0]))
		return cp_fail(err, CP_E_INTERNAL, "more CUDA majors than check keeps");
	if (i == u->nchain) {
		st = cp_chain_open(u->w, c->rules, c->cuda_major, &u->chain[i], err);
		for (k = 0; !st && k < u->n; k++)
			st = cp_chain_note_imports(u->chain[i], u->v[k].label, (const char *const *)u->v[k].imports,
						   u->v[k].nimports, err);
		if (st) {
			cp_chain_free(u->chain[i]);
			u->chain[i] = NULL;
			return st;
		}
		u->major[u->nchain++] = c->cuda_major;
	}
	c->chain = u->chain[i];
	return CP_OK;
}

/* The extensions' predictions under c's site or release, then (a wheel)
 * the Python code each import runs first; *ok whether every one binds. */

static cp_status predict_units(struct ctx *c, const char *path, struct units *u, json_t **out, bool *ok,
			       cp_error *err)
{
	json_t *exts = json_array(), *e;
	cp_status st = u->w ? chain_of(c, u, err) : CP_OK;
	size_t i;

	for (i = 0; !st && i < u->n; i++) {
		size_t before = json_array_size(exts);

		st = predict_unit(c, &u->v[i], exts);
		if (!st && json_array_size(exts) > before && u->v[i].tree && c->cuda_major &&
		    u->v[i].tree != c->cuda_major)
			skip_tree(exts, u->v[i].tree, c->cuda_major);
	}
	if (!st && c->chain)
		st = predict_python(c, exts, err);
	c->chain = NULL;
	forget_exports(c);
	if (!st && !json_array_size(exts))
		st = cp_fail(err, CP_E_INPUT, "%s: references no module the rules map; nothing to check", path);
	if (st) {
		json_decref(exts);
		return st;
	}
	*ok = true;
	json_array_foreach(exts, i, e)
		*ok = *ok && !json_array_size(json_object_get(e, "failures"));
	*out = exts;
	return CP_OK;
}

cp_status cp_predict(const char *path, const cp_rules *rules, const char *site, json_t **result, bool *ok,
		     cp_error *err)
{
	struct ctx c = { rules, site, NULL, 0, NULL, "", site_cuda_major(site), NULL, NULL, NULL, err, NULL, NULL, 0 };
	struct units u;
	json_t *exts = NULL;
	cp_status st;

	*result = NULL;
	*ok = false;
	if (!is_dir(site))
		return cp_fail(err, CP_E_USAGE, "%s: not a directory", site);
	st = read_units(&c, path, NULL, &u, err);
	if (!st)
		st = predict_units(&c, path, &u, &exts, ok, err);
	units_free(&u);
	if (!st)
		*result = json_pack("{s:s, s:o, s:b}", "site", site, "extensions", exts, "ok", *ok);
	return st;
}

cp_status cp_predict_releases(const char *path, const char *as, const cp_rules *rules, const cp_releases *kb,
			      const size_t *rels, size_t nrels, json_t **result, bool *ok, cp_error *err)
{
	struct ctx c = { rules, NULL, kb, 0, NULL, "", 0, NULL, NULL, NULL, err, NULL, NULL, 0 };
	json_t *cells = json_array(), *exts = NULL;
	struct units u;
	cp_status st = read_units(&c, path, as, &u, err);
	bool binds = false;
	size_t i;

	*result = NULL;
	*ok = true;
	for (i = 0; !st && i < nrels; i++) {
		c.rel = rels[i];
		c.cuda_major = (unsigned)strtoul(kb->rel[rels[i]].version, NULL, 10);
		st = predict_units(&c, path, &u, &exts, &binds, err);
		if (st)
			break;
		json_array_append_new(cells, json_pack("{s:s, s:s, s:o, s:b}", "distribution", kb->rel[rels[i]].dist,
						       "version", kb->rel[rels[i]].version, "extensions", exts, "ok",
						       binds));
		*ok = *ok && binds;
	}
	units_free(&u);
	if (st) {
		json_decref(cells);
		*ok = false;
		return st;
	}
	*result = json_pack("{s:s, s:o, s:b}", "date", kb->date, "releases", cells, "ok", *ok);
	return CP_OK;
}
