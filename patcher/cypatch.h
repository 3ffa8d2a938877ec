/*
 * cypatch.h - public interface of libcypatch.
 *
 * libcypatch reads a compiled Cython extension module and reports (later:
 * rewrites) every reference it holds to modules that a rule set maps between
 * two layouts of a provider package, such as cuda-python's legacy
 * (cuda.ccudart) and bindings (cuda.bindings.cyruntime) layouts.
 *
 * Data flows one way: load (cp_image_open) -> scan (cp_scan_run) -> report.
 * Every function that can fail returns a cp_status and fills a cp_error;
 * nothing in the library prints.
 */
#ifndef CYPATCH_H
#define CYPATCH_H

#include <stdio.h>

#define CYPATCH_VERSION "0.1.0"

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

typedef struct cp_rules cp_rules;
typedef struct cp_image cp_image;
typedef struct cp_scan cp_scan;

/* Rules: layouts and module mappings, from rules/ *.rules files. */
cp_rules *cp_rules_new(void);
void cp_rules_free(cp_rules *rules);
cp_status cp_rules_load_file(cp_rules *rules, const char *path, cp_error *err);
cp_status cp_rules_load_string(cp_rules *rules, const char *name,
			       const char *text, cp_error *err);

/* Load: an ELF file, validated before any parser sees it. */
cp_status cp_image_open(const char *path, cp_image **out, cp_error *err);
void cp_image_close(cp_image *img);

/* Scan: every reference the image holds to a mapped module. */
cp_status cp_scan_run(const cp_image *img, const cp_rules *rules,
		      cp_scan **out, cp_error *err);
void cp_scan_free(cp_scan *scan);
size_t cp_scan_count(const cp_scan *scan);

/* Report: a person's view and the stable JSON form (docs/json.md). The scan
 * borrows section names from the image: report before cp_image_close.
 * The text view lists "string" references (messages, docstrings naming a
 * mapped module) only when `all` is set; it counts them otherwise. */
cp_status cp_scan_write_text(const cp_scan *scan, FILE *out, int all, cp_error *err);
cp_status cp_scan_write_json(const cp_scan *scan, FILE *out, cp_error *err);

#endif
