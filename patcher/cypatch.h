/*
 * cypatch.h - public interface of libcypatch: everything the cypatch
 * command uses, and nothing else.
 *
 * libcypatch reads a compiled Cython extension module, reports every
 * reference it holds to modules that a rule set maps between two layouts
 * of a provider package, such as cuda-python's legacy (cuda.ccudart) and
 * bindings (cuda.bindings.cyruntime) layouts, and rewrites them to bind to
 * one layout (or injects a fallback stub that binds to either). It does the
 * same to every extension of a wheel, predicts from the files whether an
 * extension binds under a site-packages, and proves it by importing it.
 *
 * Data flows one way: load (cp_image_open) -> scan (cp_scan_run) -> plan
 * -> emit -> re-scan -> write; cp_patch_file runs the whole of it for one
 * file, cp_repair_wheel for each extension of a wheel.
 *
 * Every function that can fail returns a cp_status and fills a cp_error;
 * the library prints nothing but a dry run's plan (to the FILE it is given)
 * and the one line of an interrupting signal (cp_cleanup_begin). Handles
 * (cp_rules, cp_image, cp_scan) are opaque; options and results are plain
 * structs that the caller fills or reads. The sections follow the commands.
 */
#ifndef CYPATCH_H
#define CYPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CYPATCH_VERSION "0.1.0"

/* check's and verify's results are jansson documents (json_t). */
struct json_t;

/* ---- Errors ---- */

/* Status codes double as the command-line exit codes (docs/exit-codes.md). */
typedef enum cp_status {
	CP_OK = 0,
	CP_E_FAILED = 1,    /* check / verify: it does not bind as asked */
	CP_E_INPUT = 2,     /* the input file is unreadable or not what we handle */
	CP_E_RULES = 3,     /* a rules file is malformed or inconsistent */
	CP_E_USAGE = 64,    /* bad command line */
	CP_E_INTERNAL = 70, /* a bug or an exhausted resource */
	CP_E_IO = 2         /* the output cannot be written: exit code 2 as for a bad
			     * input file, since it is also a file the caller named
			     * (read-only directory, full file system) */
} cp_status;

typedef struct cp_error {
	cp_status code;
	char msg[512];
} cp_error;

#if defined(__GNUC__)
#define CP_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CP_PRINTF(a, b)
#endif

/* Records code and message in err (which may be NULL) and returns code. */
cp_status cp_fail(cp_error *err, cp_status code, const char *fmt, ...) CP_PRINTF(3, 4);

/* ---- Rules: layouts and module mappings, from rules/ *.rules files ---- */

typedef struct cp_rules cp_rules;

cp_rules *cp_rules_new(void);
void cp_rules_free(cp_rules *rules);
cp_status cp_rules_load_file(cp_rules *rules, const char *path, cp_error *err);
cp_status cp_rules_load_string(cp_rules *rules, const char *name,
			       const char *text, cp_error *err);

/* Index of a layout by name, or -1. */
int cp_rules_layout_index(const cp_rules *r, const char *name);

/* ---- `cypatch show`: load, scan, report ---- */

typedef struct cp_image cp_image;
typedef struct cp_scan cp_scan;

/* An ELF file, validated before any parser sees it. */
cp_status cp_image_open(const char *path, cp_image **out, cp_error *err);
void cp_image_close(cp_image *img);

/* CP_OK unless the file was truncated while mapped (what was read of it
 * since is zeros) or changed otherwise (its size or mtime moved; a
 * truncation can show as an mtime alone to an fstat that races it):
 * nothing made of it may be trusted. */
cp_status cp_image_intact(const cp_image *img, cp_error *err);

/* The verdict on a reading of img (NULL: none was opened) that ended in
 * st: when the file changed while it was read, that is the error (in err),
 * whatever else the reading concluded from the changing bytes; else st. */
cp_status cp_image_settle(const cp_image *img, cp_status st, cp_error *err);

/* Every reference the image holds to a mapped module. */
cp_status cp_scan_run(const cp_image *img, const cp_rules *rules,
		      cp_scan **out, cp_error *err);
void cp_scan_free(cp_scan *scan);

/* The text of each code site (the instruction), which only a report needs:
 * the scan leaves it out. */
cp_status cp_scan_describe_sites(cp_scan *scan, const cp_image *img, cp_error *err);

/* A person's view and the stable JSON form (docs/json.md). The scan
 * borrows section names from the image: report before cp_image_close.
 * The text view lists "string" references (messages, docstrings naming a
 * mapped module) only when `all` is set; it counts them otherwise. */
cp_status cp_scan_write_text(const cp_scan *scan, FILE *out, int all, cp_error *err);
cp_status cp_scan_write_json(const cp_scan *scan, FILE *out, cp_error *err);

/* ---- `cypatch show --exports`: what a provider exports ---- */

/* One capsule of a provider's __pyx_capi__. */
struct cp_export {
	char *name;   /* NULL when the key is a Python string object (variables) */
	char *sig;
	bool variable; /* __Pyx_ExportVoidPtr's, not __Pyx_ExportFunction's */
};

struct cp_exports {
	struct cp_export *v;
	size_t n, cap;
};

/* The exports of one provider file, as `check` reads them: from the calls
 * that make the capsules, and (Cython 3.2+) from the signature constants of
 * its string blob. Fills out (free it with cp_exports_free, also on
 * failure); fails when the file cannot be read. */
cp_status cp_exports_of_file(const char *file, const cp_rules *rules, struct cp_exports *out,
			     cp_error *err);
void cp_exports_free(struct cp_exports *e);

/* ---- `cypatch --target-layout`: one extension through the pipeline ---- */

struct cp_patch_opts {
	const char *layout;   /* a layout of the rules, or "fallback" */
	bool no_fallback;     /* refuse what strings cannot express */
	bool keep_build_id;   /* leave the GNU build-id as it was */
	bool no_fsync;        /* rename without waiting for the disk (util/write.h) */
	bool full_check;      /* the check walks all of the output's code, not only
			       * the functions that changed, and fails if the two
			       * walks differ (scan/scan_splice.c); a module whose
			       * bytes name no mapped module is scanned in full
			       * too (cp_scan_maps_nothing) */
	FILE *dry_run;        /* when set: print the plan there, write nothing */
	unsigned walk_cores;  /* the code walk's threads at most (0: the cores
			       * this process may run on; fewer for small code) */
	const char *tolerate; /* --tolerate-missing: a release specifier whose
			       * releases' missing cimported functions and
			       * modules the stub stands in for (docs/tolerate.md) */
	const struct cp_releases *releases; /* the knowledge base; with tolerate */
	unsigned tolerate_major; /* with tolerate: only releases of this CUDA major
			       * (a wheel's pkg/cu12/ tree), or 0 for all */
	bool check_tolerance; /* with tolerate: the output must bind under every
			       * release of the range (cp_tolerance_holds)
			       * before it replaces anything; repair checks the
			       * whole wheel instead */
};

enum cp_patch_outcome {
	CP_PATCHED,        /* written */
	CP_PLANNED,        /* dry run: printed */
	CP_ALREADY,        /* already binds as asked: nothing written */
	CP_NOTHING_MAPPED, /* references no mapped module: nothing written */
	CP_NOT_EXTENSION   /* an ELF file but no Cython extension module: nothing
			    * written; err holds the scan's message */
};

/* Where the time goes (docs/performance.md): filled by cp_patch_file. */
enum cp_stage {
	CP_STAGE_LOAD,   /* map, validate, read sections, relocations, functions */
	CP_STAGE_SCAN,   /* code walk, strings, blobs, imports */
	CP_STAGE_PLAN,   /* retarget or fallback plan, placement */
	CP_STAGE_EMIT,   /* the delta and the build-id */
	CP_STAGE_WRITE,  /* the kernel's copy of the input, the delta's bytes */
	CP_STAGE_CHECK,  /* the output loaded and scanned again */
	CP_STAGE_SYNC,   /* fsync, rename */
	CP_NSTAGES
};

const char *cp_stage_name(enum cp_stage s);

struct cp_patch_result {
	enum cp_patch_outcome outcome;
	bool fallback;          /* the fallback stub was (or is) the means */
	char covered[512];      /* what strings could not express, when the stub covers it */
	size_t nchanged, nedits;
	unsigned long long new_bytes;
	bool build_id;          /* the build-id was recomputed */
	char layouts[2][32];    /* fallback: built against, accepted besides */
	size_t standin_funcs, standin_modules; /* what the stub stands in for */
	double seconds[CP_NSTAGES];
};

/* Patches `in` into `out` (which may be `in`): load, scan, plan (retarget,
 * or fallback stubs), emit, re-sign, write a temporary file, scan it again,
 * and rename it over the output. Nothing is written unless the output
 * passed that re-scan; `out` is replaced atomically. */
cp_status cp_patch_file(const char *in, const char *out, const cp_rules *rules,
			const struct cp_patch_opts *o, struct cp_patch_result *res, cp_error *err);

/* ---- `cypatch repair`: a wheel in, a repaired wheel out ---- */

struct cp_repair_opts {
	const char *layout;     /* legacy, bindings or fallback */
	const char *outdir;     /* -w DIR */
	bool no_fallback, keep_build_id;
	bool no_fsync;          /* rename without waiting for the disk (util/write.h) */
	bool full_check;        /* as struct cp_patch_opts's */
	const char *tolerate;   /* --tolerate-missing (struct cp_patch_opts) */
	const struct cp_releases *kb; /* the knowledge base --tolerate-missing and
				 * METADATA's cuda-python / cuda-bindings
				 * requirement are judged from; NULL: neither */
	bool keep_requires;     /* leave that requirement as it is */
	bool keep_sources;      /* leave the Python sources' import statements alone */
	bool drop_signature;    /* write a signed wheel that changes without its
				 * RECORD.jws / RECORD.p7s (else refused) */
};

struct cp_repair_member {
	char *path;
	struct cp_patch_result r;
};

struct cp_repair_result {
	char out[4096];                   /* the wheel written */
	bool untouched;                   /* nothing needed: copied as it was */
	struct cp_repair_member *ext;     /* every *.so member, in order */
	size_t next, capext;
	size_t npatched;
	bool metadata_changed;
	char requires_kept[512];          /* why the requirement was left: what check
					   * cannot predict for the output; "" if not */
	char **sources;                   /* Python sources whose imports were rewritten */
	size_t nsources, capsources;
	int statements, left;             /* import statements rewritten; of other shapes */
};

/* Every extension member (*.so) that references a mapped layout goes
 * through cp_patch_file; every other member is copied with its compressed
 * bytes untouched; RECORD is rewritten for what changed, and
 * <dist-info>/cypatch.json says what cypatch did. Same input, same bytes.
 * Free res with cp_repair_result_free, also on failure. */
cp_status cp_repair_wheel(const char *wheel, const cp_rules *rules, const struct cp_repair_opts *o,
			  struct cp_repair_result *res, cp_error *err);
void cp_repair_result_free(struct cp_repair_result *res);

/* ---- `cypatch check`: will it bind under that site-packages? ---- */

/* The import of an extension (or of each extension of a wheel) against a
 * site-packages directory, predicted from the files alone: every cimported
 * module resolved the way the import system resolves it, every cimported
 * function and variable looked up among the provider's exported capsules
 * (trampolines followed), fallback stubs honoured, and every failure
 * written as the message CPython would raise. Not predicted: type sizes,
 * and what a provider's own import would raise. *result: the prediction
 * (json_decref it); *ok when everything binds. */
cp_status cp_predict(const char *path, const cp_rules *rules, const char *site,
		     struct json_t **result, bool *ok, cp_error *err);

/* `check --release`: cp_predict's answer under each release rels[0, nrels)
 * of the knowledge base (releases.h), from what the base holds of each
 * (its modules and their capsules) instead of files: {"date", "releases":
 * [{"distribution", "version", "extensions": [as cp_predict's], "ok"}],
 * "ok"}. `as`, when not NULL, is the file name path will have (a
 * wheel's, which says what it is). */
struct cp_releases;
cp_status cp_predict_releases(const char *path, const char *as, const cp_rules *rules, const struct cp_releases *kb,
			      const size_t *rels, size_t nrels, struct json_t **result, bool *ok, cp_error *err);

/* Whether path (a wheel, or an extension; `as`, when not NULL, is the file
 * name it will have, which says which) binds under each release of the
 * knowledge base that ships for its CPython: *v (malloc'd, *n of them, in
 * the base's order; its strings are the base's). */
struct cp_release_verdict;
cp_status cp_release_verdicts(const char *path, const char *as, const cp_rules *rules, const struct cp_releases *kb,
			      struct cp_release_verdict **v, size_t *n, cp_error *err);

/* --tolerate-missing SPEC: CP_OK when path (named `as`: a wheel's or an
 * extension's file name) binds under every release SPEC names that ships
 * for it; else the first failure, as check --release tells it. */
cp_status cp_tolerance_holds(const char *path, const char *as, const cp_rules *rules, const struct cp_releases *kb,
			     const char *spec, cp_error *err);

/* ---- `cypatch verify`: proof by loading ---- */

struct cp_verify_opts {
	const char *python;  /* the interpreter whose site-packages decide */
	bool gpu;
	int timeout_s;
};

/* The extension (or every patched extension of a wheel, unpacked) is
 * imported by the interpreter under test in a child process with a time
 * limit; each cimported function and variable slot must hold the pointer
 * its provider exports; with gpu, cuInit, cuDeviceGetCount and
 * cudaGetDeviceCount are called through those slots and a device must be
 * counted. *result: the child's report plus "ok" and "why" (json_decref
 * it); *ok when it all bound (and, with gpu, the calls succeeded and
 * counted a device). */
cp_status cp_verify(const char *path, const cp_rules *rules, const struct cp_verify_opts *o,
		    struct json_t **result, bool *ok, cp_error *err);

/* ---- Signals: a command that writes removes its temporaries ---- */

/* The calling thread writes `output` from now on: SIGTERM, SIGINT or SIGHUP
 * removes the temporary files registered since, prints `cypatch: OUTPUT:
 * interrupted by SIGxxx` and exits 2 (util/cleanup_on_signal.h). */
void cp_cleanup_begin(const char *output);

/* The output is written (or abandoned): a signal from now on has its
 * default action. */
void cp_cleanup_end(void);

#endif
