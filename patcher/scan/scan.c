/*
 * scan.c - the scan: from a loaded image to its list of references.
 *
 * Order matters: the code walk comes first (the calls name the function
 * that decodes a Cython 3.2+ blob, and literal tails count only where code
 * points at them), then blobs, literals and their relocation sites, the
 * import calls, and last the references inside blobs.
 */
#include "scan/scan.h"
#include "cython/cython.h"
#include "util/error.h"
#include "util/names.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool has_table_site(const struct cp_string *str)
{
	size_t i;

	for (i = 0; i < str->nsites; i++)
		if (str->sites[i].kind == CP_SITE_TABLE)
			return true;
	return false;
}

static bool has_code_site(const struct cp_string *str)
{
	size_t i;

	for (i = 0; i < str->nsites; i++)
		if (str->sites[i].kind == CP_SITE_CODE)
			return true;
	return false;
}

/* The role of a literal: what the extension does with it. */
static enum cp_ref_kind literal_kind(const cp_scan *s, const struct cp_string *str, bool exact)
{
	const char *pkg;

	if (str->path_form)
		return CP_K_FILENAME;
	if (str->mangled)
		return CP_K_SIGNATURE;
	if (!exact && str->package &&
	    cp_rules_unmapped_layout(s->rules, (const char *)s->img->data + str->off, str->len, &pkg) == str->layout)
		return CP_K_UNMAPPED;
	if (!exact)
		return CP_K_STRING;
	if (has_table_site(str))
		return CP_K_PYIMPORT;
	/* Cython 3.0 builds its string table in code (lea + immediates). */
	if (cp_cython_is(s, 3, 0) && has_code_site(str) &&
	    !(str->roles & (1u << CP_K_CIMPORT)))
		return CP_K_PYIMPORT;
	return CP_K_STRING;
}

static cp_status add_literal_ref(cp_scan *s, const struct cp_string *str, enum cp_ref_kind kind,
				 cp_error *err)
{
	const char *value = (const char *)s->img->data + str->off;
	struct cp_ref *r = cp_scan_add_ref(s, kind, err);

	if (!r)
		return err->code;
	r->layout = str->layout;
	r->value = cp_strndup(value, str->len);
	r->module = str->package && r->value ? strdup(r->value) : strdup(str->module);
	r->loc.section = str->section;
	r->loc.vaddr = str->va;
	r->loc.offset = str->off;
	r->loc.length = str->len;
	if (!r->module || !r->value)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	return cp_ref_add_sites(r, str->sites, str->nsites, err);
}

static cp_status literal_refs(cp_scan *s, cp_error *err)
{
	size_t i;
	cp_status st;

	for (i = 0; i < s->nstrs; i++) {
		const struct cp_string *str = &s->strs[i];
		enum cp_ref_kind kind = literal_kind(s, str, str->exact);

		/* an import of it (a cimport too) is judged as the module it is */
		if ((str->roles & (1u << CP_K_CIMPORT)) && kind != CP_K_UNMAPPED) {
			st = add_literal_ref(s, str, CP_K_CIMPORT, err);
			if (st)
				return st;
			if (kind == CP_K_STRING)
				continue;
		}
		st = add_literal_ref(s, str, kind, err);
		if (st)
			return st;
	}
	return CP_OK;
}

/*
 * A literal that names a mapped module and that no instruction, relocation
 * or table the scan reads points at is used some way the scan does not
 * follow (gcc -mcmodel=large builds addresses from the GOT and 64-bit
 * offsets): the scan cannot vouch for the module then. A file cypatch
 * wrote (it has the .cypatch section) keeps the literals it moved, dead.
 */
static cp_status unreached_literals(cp_scan *s, cp_error *err)
{
	size_t i;

	if (s->incomplete[0] || cp_image_section(s->img, CP_SECTION_NAME))
		return CP_OK;
	for (i = 0; i < s->nstrs; i++) {
		const struct cp_string *str = &s->strs[i];

		if (str->nsites)
			continue;
		snprintf(s->incomplete, sizeof(s->incomplete),
			 "\"%.60s\" (%s %#llx) names %s, and nothing the scan reads points at it "
			 "(code it cannot follow, such as gcc -mcmodel=large)",
			 (const char *)s->img->data + str->off, str->section, (unsigned long long)str->va,
			 str->module);
		return cp_scan_note(s, err, "%s", s->incomplete);
	}
	return CP_OK;
}

/* Whether text can be what Cython passes PyImport_ImportModule: a dotted
 * name (non-ASCII bytes are not judged). */
static bool module_name_ok(const char *text)
{
	size_t i, n = strlen(text);

	for (i = 0; i < n; i++)
		if ((unsigned char)text[i] >= 0x80)
			return true;
	return cp_is_dotted_name(text, n);
}

/* How far before its call an import's name must have been made for the
 * walk's value to be the one the call gets: the few instructions that
 * load it (lea; or adrp, add) in one straight run. Further back, a value
 * the walk carried over a jump can be another path's (nvmath 0.6.0's
 * copy_kernel imports with r12 set on a path the walk did not take). */
#define NAME_REACH 32

/*
 * Cython calls PyImport_ImportModule with a literal module name (a cimport,
 * a type's module). A call whose name was made right before it and is no
 * module name, or lies in code (an aarch64 ADD that writes another
 * register than its ADRP's leaves the page address: code bytes, the empty
 * name), fails at import, and the module's imports are then not what its
 * strings say: nothing written from it can work.
 */
static cp_status unnamed_imports(cp_scan *s, cp_error *err)
{
	size_t i;

	for (i = 0; i < s->nblocks && !s->incomplete[0]; i++) {
		const struct cp_import_block *b = &s->blocks[i];
		const struct cp_section *sec = cp_image_section_at(s->img, b->name_va);
		const char *m = b->module;

		if (!m || b->name_origin > b->call || b->call - b->name_origin > NAME_REACH ||
		    (module_name_ok(m) && sec && !cp_section_is_code(sec)))
			continue;
		snprintf(s->incomplete, sizeof(s->incomplete), "the import at %#llx (PyImport_ImportModule) names "
			 "\"%.40s\" at %#llx, which is no module name: the module fails at import",
			 (unsigned long long)b->call, m, (unsigned long long)b->name_va);
		return cp_scan_note(s, err, "%s", s->incomplete);
	}
	return CP_OK;
}

static cp_status check_module(cp_scan *s, cp_error *err)
{
	size_t i;
	bool init = false;

	for (i = 0; i < s->img->nsym && !init; i++) {
		init = s->img->sym[i].dynamic && s->img->sym[i].defined &&
		       strncmp(s->img->sym[i].name, "PyInit_", 7) == 0;
		if (init)
			snprintf(s->modname, sizeof(s->modname), "%s", s->img->sym[i].name + 7);
	}
	/* no export, no module: a large library need not be searched */
	if (init)
		cp_cython_version(s);
	if (!s->is_cython || !init)
		return cp_fail(err, CP_E_INPUT,
			       "%s: not a Cython extension module (%s)", s->path,
			       !init ? "no PyInit_ function is exported"
				     : "no _cython_X_Y_Z ABI name in its data");
	return CP_OK;
}

bool cp_scan_is_module(const cp_image *img)
{
	cp_scan s;
	cp_error err;

	memset(&s, 0, sizeof(s));
	s.img = img;
	s.path = img->path;
	return check_module(&s, &err) == CP_OK;
}

/*
 * Every reference the scan reports starts from a name in the file: a
 * literal the string search finds (module, path form, package, mangled
 * prefix: the rules' needles), an import's module or signature, which are
 * such literals too, or a `from P import N` pair, whose P is a C string of
 * its own. Before Cython 3.2 every one of them is plain bytes in a section
 * the process maps, read through an address (cp_image_section_at);
 * 3.2+ compresses them into its blob, and a module whose version is only
 * guessed may be one. So a module of a known earlier version, not written
 * by cypatch, with none of those bytes in any such section, maps nothing,
 * and its code need not be read to say so. tests/unit/nothing_crosscheck.c
 * holds it against the full scan on every corpus and real-wheel module.
 */
cp_status cp_scan_maps_nothing(const cp_image *img, const cp_rules *rules, bool *nothing, cp_error *err)
{
	cp_scan s;
	cp_error not_module;
	bool found;

	*nothing = false;
	memset(&s, 0, sizeof(s));
	s.img = img;
	s.path = img->path;
	if (img->fallback.present || cp_image_section(img, CP_SECTION_NAME) || check_module(&s, &not_module) ||
	    s.cy_patch < 0 || cp_cython_at_least(&s, 3, 2))
		return CP_OK;
	if (cp_scan_strings_anywhere(img, rules, &found, err))
		return err->code;
	*nothing = !found;
	return CP_OK;
}

/* One entry per search window of each section, each true (a needle may
 * be there) until the string search finds it empty. */
static bool alloc_windows(cp_scan *s, const cp_image *img)
{
	size_t i, n = 0;

	s->window_at = calloc(img->nsec + 1, sizeof(*s->window_at));
	if (!s->window_at)
		return false;
	for (i = 0; i < img->nsec; i++) {
		s->window_at[i] = n;
		n += (size_t)((img->sec[i].size + CP_SEARCH_WINDOW - 1) / CP_SEARCH_WINDOW);
	}
	s->window_at[img->nsec] = n;
	s->nwindow_sec = img->nsec;
	s->window_hit = malloc(n ? n : 1);
	if (!s->window_hit)
		return false;
	memset(s->window_hit, true, n);
	return true;
}

bool cp_scan_window_hit(const cp_scan *s, size_t sec, uint64_t from)
{
	size_t k;

	if (sec >= s->nwindow_sec)
		return true;
	k = s->window_at[sec] + (size_t)(from / CP_SEARCH_WINDOW);
	return k >= s->window_at[sec + 1] || s->window_hit[k];
}

/* The scan's passes, in order: the code walk first, then what reads it. */
static cp_status passes(cp_scan *s, const struct cp_scan_skip *skip, cp_error *err)
{
	cp_status st = check_module(s, err);

	if (!st)
		cp_scan_frames_ahead(s, cp_scan_cores(s) >= 2);
	if (!st)
		st = skip && skip->code ? cp_scan_code_from(s, skip->code, skip->code_img, skip->full_check, err)
					: cp_scan_code(s, err);
	if (!st)
		st = unnamed_imports(s, err);
	if (!st)
		cp_scan_frames_guess(s);
	if (!st)
		st = cp_scan_blobs(s, err);
	if (!st)
		st = cp_scan_strings(s, err);
	if (!st)
		st = cp_scan_relocs(s, err);
	if (!st)
		st = cp_scan_imports(s, err);
	if (!st)
		st = literal_refs(s, err);
	if (!st)
		st = cp_scan_blob_refs(s, err);
	if (!st)
		st = cp_scan_from_imports(s, err);
	if (!st)
		st = unreached_literals(s, err);
	return st;
}

static cp_status run(const cp_image *img, const cp_rules *rules, const struct cp_scan_skip *skip,
		     unsigned threads, unsigned cores, cp_scan **out, cp_error *err)
{
	cp_scan *s = calloc(1, sizeof(*s));
	cp_status st;
	size_t i;

	*out = NULL;
	if (!s || !(s->path = strdup(img->path)) || !alloc_windows(s, img)) {
		if (s) {
			free(s->path);
			free(s->window_at);
		}
		free(s);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	}
	s->skip = skip;
	s->threads = threads;
	s->cores = cores;
	s->img = img;
	s->rules = rules;
	s->arch = img->arch->name;
	st = passes(s, skip, err);
	cp_scan_frames_end(s);
	if (st) {
		cp_scan_free(s);
		return st;
	}
	for (i = 0; i < s->nrefs; i++)
		if (s->refs[i].layout >= 0 && cp_ref_is_live(&s->refs[i]))
			s->layouts_seen |= 1u << s->refs[i].layout;
	s->fallback = img->fallback.present;
	memcpy(s->fallback_layout, img->fallback.layout, sizeof(s->fallback_layout));
	if (img->fallback.nstandin && !(s->standin = calloc(img->fallback.nstandin, sizeof(*s->standin)))) {
		cp_scan_free(s);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	}
	for (i = 0; i < img->fallback.nstandin; i++) {
		snprintf(s->standin[i].name, sizeof(s->standin[i].name), "%s", img->fallback.standin[i].name);
		s->standin[i].module = img->fallback.standin[i].module;
	}
	s->nstandin = img->fallback.nstandin;
	s->img = NULL;
	*out = s;
	return CP_OK;
}

cp_status cp_scan_run(const cp_image *img, const cp_rules *rules, cp_scan **out, cp_error *err)
{
	return run(img, rules, NULL, 0, 0, out, err);
}

cp_status cp_scan_run_cores(const cp_image *img, const cp_rules *rules, unsigned cores, cp_scan **out,
			    cp_error *err)
{
	return run(img, rules, NULL, 0, cores, out, err);
}

cp_status cp_scan_run_threads(const cp_image *img, const cp_rules *rules, unsigned threads, cp_scan **out,
			      cp_error *err)
{
	return run(img, rules, NULL, threads, 0, out, err);
}

cp_status cp_scan_run_skipping(const cp_image *img, const cp_rules *rules, const struct cp_scan_skip *skip,
			       cp_scan **out, cp_error *err)
{
	return run(img, rules, skip, 0, 0, out, err);
}

void cp_scan_free(cp_scan *s)
{
	size_t i;

	if (!s)
		return;
	free(s->window_hit);
	free(s->window_at);
	free(s->standin);
	for (i = 0; i < s->nrefs; i++) {
		struct cp_ref *r = &s->refs[i];

		free(r->module);
		free(r->value);
		free(r->name);
		free(r->signature);
		free(r->class_name);
		free(r->package);
		free(r->pyslots);
		free(r->sites);
		free(r->site_text);
	}
	for (i = 0; i < s->nblobs; i++) {
		free(s->blobs[i].data);
		free(s->blobs[i].entry);
	}
	for (i = 0; i < s->nstrs; i++)
		free(s->strs[i].sites);
	for (i = 0; i < s->nnotes; i++)
		free(s->notes[i]);
	for (i = 0; i < s->npynames; i++)
		free(s->pynames[i]);
	free(s->pynames);
	for (i = 0; i < s->nnot_imported; i++)
		free(s->not_imported[i]);
	free(s->not_imported);
	free(s->import_slots);
	free(s->import_calls);
	free(s->refs);
	free(s->blobs);
	free(s->strs);
	cp_key_index_free(&s->str_index);
	cp_key_index_free(&s->cimports);
	cp_scan_free_walk(s);
	cp_scan_frames_end(s);
	free(s->frame_fns);
	free(s->notes);
	free(s->path);
	free(s);
}
