/*
 * releases.h - what cypatch knows of every cuda-python and cuda-bindings
 * release (rules/releases.txt, made by scripts/releases from the
 * releases' wheels and compiled in): the modules each ships and the
 * capsules its extensions export to cimporting modules.
 */
#ifndef CP_RELEASES_H
#define CP_RELEASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cypatch.h"

struct cp_release {
	const char *dist;            /* "cuda-python" or "cuda-bindings" */
	const char *version;
	const char *requires_python; /* its Requires-Python, "any" when it has none */
};

enum cp_release_kind {
	CP_REL_EXTENSION,  /* a module that is an extension */
	CP_REL_PYTHON,     /* a Python module or package */
	CP_REL_FUNCTION,   /* a capsule of a function */
	CP_REL_VARIABLE,   /* a capsule of a variable */
};

/* One line of the file: a module, or a capsule of `module`, and the
 * releases that have it (bits of cp_releases.sets by release index). */
struct cp_release_item {
	enum cp_release_kind kind;
	const char *module;
	const char *name;  /* the capsule's; NULL for a module */
	const char *sig;   /* the capsule's signature; NULL for a module */
};

typedef struct cp_releases {
	char *text;                  /* a copy of the file, cut into the strings */
	const char *date;            /* the day the releases were listed */
	struct cp_release *rel;      /* in the file's order: by distribution, oldest first */
	size_t nrel;
	struct cp_release_item *item;
	size_t nitem;
	size_t words;                /* 64-bit words of each item's release set */
	uint64_t *sets;              /* nitem * words */
	size_t cap;                  /* the file's lines: room for that many releases and items */
} cp_releases;

/* Whether a wheel binds under one release (check's prediction for it:
 * cp_release_verdicts). */
struct cp_release_verdict {
	const char *dist;    /* "cuda-python" or "cuda-bindings" */
	const char *version;
	bool binds;
};

/* Parses the file's text (len bytes); a line it cannot read is an error
 * naming its number. */
cp_status cp_releases_parse(const char *text, size_t len, cp_releases **out, cp_error *err);
void cp_releases_free(cp_releases *r);

/* Whether release index `rel` has item `i`. */
bool cp_releases_has(const cp_releases *r, size_t i, size_t rel);

/* What a release ships under a module name: an extension, a Python module
 * or package with an __init__, a directory of modules only (a namespace
 * package), or nothing. */
enum cp_release_module { CP_RELMOD_ABSENT, CP_RELMOD_EXTENSION, CP_RELMOD_PYTHON, CP_RELMOD_DIRECTORY };

enum cp_release_module cp_releases_module(const cp_releases *r, size_t rel, const char *name);

/* Whether name[0, n) is cuda-python (*python) or cuda-bindings, as PEP
 * 503 compares names. */
bool cp_releases_dist(const char *name, size_t n, bool *python);

/* Sets pick[i] for each release i that spec names: "all", or a
 * distribution and PEP 440 specifiers ("cuda-bindings>=12.9,<14",
 * "cuda-python"); false when spec is neither. */
bool cp_releases_select(const cp_releases *r, const char *spec, bool *pick);

/* cp_releases_select for the value spec of option `option`: a usage error
 * naming both when spec is neither. */
cp_status cp_releases_pick(const cp_releases *r, const char *option, const char *spec, bool *pick, cp_error *err);

/* Whether release rel ships for CPython 3.minor (its Requires-Python
 * admits it); for an abi3 consumer (abi3), for 3.minor or a later one. */
bool cp_releases_ships_for(const cp_releases *r, size_t rel, unsigned minor, bool abi3);

/* The index of DIST VERSION, or -1. */
long cp_releases_find(const cp_releases *r, const char *dist, const char *version);

#endif
