/*
 * scan.h - what a scan finds, shared by the scanner's parts and reporters.
 *
 * A reference is one use of a mapped module's name that the extension will
 * make at run time: the bytes that hold it (a literal in a section, or an
 * entry of a Cython 3.2+ string blob) and every site that points at them.
 */
#ifndef CP_SCAN_H
#define CP_SCAN_H

#include "util/key_index.h"
#include <stdbool.h>
#include <stdint.h>
#include "cython/blob.h"
#include "arch/code.h"
#include "scan/reach.h"
#include "elf/image.h"
#include "rules/rules.h"

enum cp_ref_kind {
	CP_K_CIMPORT,   /* provider module name passed to PyImport_ImportModule */
	CP_K_FUNCTION,  /* cimported function: capsule name and signature */
	CP_K_VARIABLE,  /* cimported module variable */
	CP_K_TYPE,      /* cimported extension type */
	CP_K_PYIMPORT,  /* Python-level import name in the string table */
	CP_K_FILENAME,  /* __pyx_f entry naming the provider's .pxd */
	CP_K_SIGNATURE, /* capsule signature carrying a mangled module path */
	CP_K_STRING,    /* any other string naming a mapped module */
	CP_K_FROMIMPORT, /* `from P import N` where P.N is mapped: names P and N */
	CP_K_UNMAPPED   /* a module of a one-layout provider package that the
			 * rules do not map (cuda.bindings.cynvvm): no other
			 * layout has it */
};

enum cp_site_kind {
	CP_SITE_CODE,   /* an instruction's RIP-relative operand */
	CP_SITE_RELOC,  /* a relocation whose addend is the string */
	CP_SITE_TABLE,  /* a string-table entry (pointer and stored length) */
	CP_SITE_INDEX   /* the blob's length index entry */
};

/* A site's text is made only for a report (cp_scan_describe_sites): a
 * module like cuda-python's driver has 20,000 sites, copied from string to
 * reference, and nothing but `show` prints them. */
struct cp_site {
	enum cp_site_kind kind;
	uint32_t detail;    /* RELOC, TABLE: the relocation's type; INDEX: the entry */
	uint64_t addr;      /* instruction, relocated word, or table entry */
	uint64_t len_addr;  /* address of a stored length, or 0 */
	uint8_t bits;       /* INDEX: the length field's width, 0 when not told */
};

#define CP_SITE_TEXT 96

/* Where the referenced bytes are. */
struct cp_loc {
	int blob;           /* index into cp_scan.blobs, or -1 for a literal */
	const char *section;
	uint64_t vaddr, offset, length; /* in the blob: offset into decoded data */
};

struct cp_ref {
	enum cp_ref_kind kind;
	int layout;         /* of the module referenced */
	char *module;       /* mapped module (or layout-specific package) */
	char *value;        /* the referenced string */
	struct cp_loc loc;
	struct cp_site *sites;
	size_t nsites, capsites;
	char (*site_text)[CP_SITE_TEXT]; /* per site, once described; else NULL */
	/* function and variable imports */
	char *name, *signature;
	uint64_t slot;
	/* from-imports: the package imported from (name is the imported name),
	 * and where the package's name lives (its sites are in `sites` too) */
	char *package;
	struct cp_loc package_loc;
	bool same_string;   /* package and name are one string ("cuda") */
	/* type imports */
	char *class_name;
	int64_t size;       /* -1 when not recovered */
	/* Python-level imports (pyimport, fromimport): the slots the module's
	 * imports load the package's name from (scan_names.c); pyslots_known
	 * is false when they cannot be told */
	uint64_t *pyslots;
	size_t npyslots;
	bool pyslots_known;
};

/* An absolute Python-level import: the call that makes it, and the slot
 * the module's name is loaded from (scan_pyimports.c). */
struct cp_import_call {
	uint64_t call, slot;
};

/* One entry of a blob's length index. */
struct cp_blob_entry {
	uint64_t offset, length;
	bool is_bytes;
	uint64_t cell_insn; /* the instruction that wrote the cell */
	uint64_t cell_va;   /* the template word it was copied from, or 0 */
	bool folded;        /* the length is an immediate of a call (cell_insn), and
			     * cell_va, where set, an unread copy of it */
	uint64_t ptr_insn;  /* folded: the instruction that points at the entry's data */
	uint64_t call_insn; /* folded: the call that reads it */
	uint64_t import_call; /* import-signature constants: their module's PyImport_ImportModule call */
	bool import_unsure;   /* loaded after an import, as another constant is, and which is its is not known */
};

struct cp_blob {
	enum cp_blob_algo algo;
	const char *section;
	uint64_t vaddr, offset, stored_length; /* the (compressed) literal */
	uint8_t *data;      /* decoded */
	uint64_t length;
	struct cp_blob_entry *entry;
	size_t nentries, nstr;
	unsigned str_bits, bytes_bits;  /* bit-field widths of the index */
	uint64_t code;      /* the lea that loads the blob */
	uint64_t func;      /* function that decodes it */
};

/* A literal string the scan looks at: a needle's occurrence. */
struct cp_string {
	uint64_t va, off, len;   /* the string from va to its NUL */
	const char *section;
	int layout;
	const char *module;      /* the needle it holds (rules-owned) */
	uint64_t needle_at;      /* va of the needle inside it */
	bool exact;              /* the string is the needle, nothing more */
	bool package;            /* the needle is a layout-specific package */
	bool path_form;          /* "cuda/bindings/cydriver.pxd" */
	bool mangled;            /* holds a mangled prefix */
	struct cp_site *sites;
	size_t nsites, capsites;
	unsigned roles;          /* 1 << enum cp_ref_kind */
};

/* A RIP-relative reference into an allocated data section. */
struct cp_xref {
	uint64_t target, addr;
};

/* A reference (an address, a load or a store) the instruction at addr
 * makes from the address the instruction at base made: what moves with
 * base when base is rewritten (aarch64's add x0, x26, #8 after x26's). */
struct cp_derived {
	uint64_t addr, base, target;
};

/* A call seen by the code walk, reduced to what the import passes need. */
struct cp_scan_call {
	uint64_t addr;
	const char *name;
	struct cp_val arg[CP_MAX_ARGS];
};

/* A use of an imported function the walk saw, in the walk's order: a
 * call or tail jump that names it (name), or an instruction whose
 * PC-relative operand is a GOT slot (slot, ref). What the fallback plan
 * redirects, kept so that it need not walk the code again. */
struct cp_slot_use {
	uint64_t addr;
	const char *name;          /* a call: the function's name, else NULL */
	uint64_t slot;             /* an operand: the GOT slot */
	enum cp_insn_ref_kind ref; /* an operand: how it is used */
};

/* An instruction that reaches the start of one of the image's functions,
 * in the walk's order: a call (with the walk's values of the argument
 * registers), a jump, or an operand (the function's address taken). What
 * the import-name pass follows into functions that pass their argument on
 * as an import's name (scan_pyimports.c). */
enum cp_func_use_kind { CP_FUSE_CALL, CP_FUSE_JUMP, CP_FUSE_REF };

struct cp_func_use {
	uint64_t addr, target;
	enum cp_func_use_kind kind;
	struct cp_val arg[CP_MAX_ARGS]; /* CP_FUSE_CALL */
};

/* What the walk's findings in a stretch of code depend on besides its
 * bytes: the import block still open (scan_code.c), normalised so that
 * two walks that will find the same from here on compare equal. */
#define CP_WALK_PENDING 8
struct cp_walk_state {
	uint64_t block;      /* the open block's import call; 0: none, or it is full */
	size_t nloads;
	bool clean;
	uint64_t last_break, func_end;
	size_t npending;     /* above CP_WALK_PENDING: not kept, equal to none */
	uint64_t pending[CP_WALK_PENDING];
};

/* Where the walk stood at a place: its findings before it, its state. */
struct cp_walk_at {
	size_t ncalls, nuses, nfuses, nderived, nblocks;
	struct cp_walk_state state;
};

/* A unit of the walk (a function, or the code of a walked section before
 * its first function) and where the walk stood when it entered it: what
 * lets the check walk only the functions an edit changed (scan_splice.c). */
struct cp_walk_mark {
	uint64_t start, end;
	struct cp_walk_at at;
};

/* A place inside a large function (the first instruction at or after
 * each CP_WALK_CUT bytes of it) and where the walk stood there, with its
 * tracker's state: what lets the check take the input's findings again
 * after the last byte an edit changed in a function, once the walks agree. */
#define CP_WALK_CUT (8u << 10)
struct cp_walk_point {
	uint64_t addr;
	struct cp_walk_at at;
	struct cp_code_state regs;
};

/* A load of a writable, non-GOT address: what it reads, and where. */
struct cp_block_load {
	uint64_t target, at;
	bool clean;    /* reached from the import with no call, jmp or ret between (scan_code.c) */
};

struct cp_import_block {
	uint64_t call;           /* PyImport_ImportModule call address */
	uint64_t name_va;        /* the address its name argument held, or 0 ... */
	uint64_t name_origin;    /* ... and the instruction that made it */
	char *module;
	struct cp_block_load *loads; /* the loads the walk met after it */
	size_t nloads, caploads;
};

struct cp_scan {
	char *path;
	char cython[32];         /* "3.3.1", or "" when not found */
	int cy_major, cy_minor, cy_patch;
	bool is_cython;
	char modname[128];       /* from PyInit_<name> */
	const char *arch;
	const cp_rules *rules;
	const cp_image *img;     /* valid during cp_scan_run only */
	struct cp_ref *refs;
	size_t nrefs, caprefs;
	struct cp_blob *blobs;
	size_t nblobs, capblobs;
	struct cp_string *strs;
	size_t nstrs, capstrs;
	struct cp_key_index str_index; /* strs by va (scan_result.c) */
	struct cp_key_index cimports; /* function and variable refs by what
				      * they import (scan_imports.c) */
	struct cp_scan_call *calls;
	size_t ncalls, capcalls;
	struct cp_xref *xrefs;     /* RIP-relative references into data, by target */
	size_t nxrefs, capxrefs;
	struct cp_derived *derived; /* references made from another's address */
	size_t nderived, capderived;
	struct cp_jump *jumps;     /* every direct jump, by target (for reach.h) */
	size_t njumps, capjumps;
	struct cp_slot_use *uses;  /* uses of imported functions, by address */
	size_t nuses, capuses;
	struct cp_func_use *fuses; /* uses of the image's function starts */
	size_t nfuses, capfuses;
	struct cp_walk_mark *marks; /* the walk's units, in its order; NULL when
				     * the walk cannot be taken apart */
	size_t nmarks;
	uint64_t *cuts;          /* where points are recorded (with marks), ascending */
	size_t ncuts;
	struct cp_walk_point *points; /* in address order */
	size_t npoints, cappoints;
	struct cp_import_block *blocks;
	size_t nblocks, capblocks;
	char **pynames;          /* the module's Python-level names (string table or blob) */
	size_t npynames;
	/* the slots whose string objects Python-level imports pass as the
	 * module's name (scan_pyimports.c), and those names (scan_names.c);
	 * import_names_unknown says why they are not all known, or "" */
	uint64_t *import_slots;
	size_t nimport_slots, capimport_slots;
	struct cp_import_call *import_calls;
	size_t nimport_calls, capimport_calls;
	char **not_imported;     /* packages of name pairs shown not imported */
	size_t nnot_imported;
	char import_names_unknown[128];
	char **notes;            /* what the scan could not settle */
	/* why the scan cannot vouch that it saw every reference (a string
	 * blob it could not recover), or "": nothing may be patched or passed
	 * as needing nothing then (patch.c) */
	char incomplete[256];
	/* the module (Cython 3.3's shared utility module, --shared) whose
	 * import helpers make this module's Python-level imports, or "": the
	 * fallback stub cannot see those calls */
	char shared_import[128];
	size_t nnotes, capnotes;
	unsigned layouts_seen;   /* bit per layout */
	bool fallback;           /* fallback stubs injected by cypatch */
	char fallback_layout[2][32]; /* built against, accepted besides */
	struct cp_scan_standin {     /* what the stub stands in for (docs/tolerate.md) */
		char name[128];
		bool module;         /* a cimported module, else a function */
	} *standin;
	size_t nstandin;
	/* per section, per CP_SEARCH_WINDOW of it: whether a needle begins
	 * there (before any filter); section i's first at window_at[i] */
	bool *window_hit;
	size_t *window_at;       /* nwindow_sec + 1 entries */
	size_t nwindow_sec;
	const struct cp_scan_skip *skip; /* windows the string search passes over, or NULL */
	unsigned threads;        /* the code walk's, whatever the size (0: by size) */
	unsigned cores;          /* by size: at most this many (0: cp_cores()) */
	/* the functions whose frames the scan evaluated (scan_frames.c), and
	 * the check's frames made ahead */
	struct cp_frame_fn {
		uint64_t start, end;
	} *frame_fns;
	size_t nframe_fns, capframe_fns;
	struct cp_frames_ahead *frames_ahead;
};

/* The longest needle, in bytes with its NUL: how far a needle that
 * begins in a window may reach past it. */
#define CP_NEEDLE_MAX 512

/* What the check knows of the output from the input's scan (emit/rescan.c):
 * which windows of a section the string search may pass over (they hold no
 * needle in the input and no edit touched them), and the input's scan and
 * image, whose walk's findings are taken for every function whose bytes
 * are the same (scan_splice.c); full_check walks all code again as well
 * and fails when the two differ. */
struct cp_scan_skip {
	bool (*window)(const void *ctx, size_t sec, uint64_t from, uint64_t to);
	const void *ctx;
	const struct cp_scan *code;
	const cp_image *code_img;
	bool full_check;
};

/* As cp_scan_run, with the code walk on at most `cores` threads (0: as
 * many as this process may run on), one per core where the code is large
 * enough to share. */
cp_status cp_scan_run_cores(const cp_image *img, const cp_rules *rules, unsigned cores, cp_scan **out,
			    cp_error *err);

/* As cp_scan_run, with the code walk on `threads` threads whatever the
 * code's size (1: the calling thread alone; 0: cp_scan_run's choice, one
 * per core where the code is large enough to share). */
cp_status cp_scan_run_threads(const cp_image *img, const cp_rules *rules, unsigned threads, cp_scan **out,
			      cp_error *err);

/* As cp_scan_run, but the string search passes over the windows skip
 * names. */
cp_status cp_scan_run_skipping(const cp_image *img, const cp_rules *rules, const struct cp_scan_skip *skip,
			       cp_scan **out, cp_error *err);

/* Whether the scan found a needle beginning in the window of section sec
 * that holds offset `from` (true when it did not search there). */
bool cp_scan_window_hit(const cp_scan *s, size_t sec, uint64_t from);

/* Whether img is a Cython extension module (exports PyInit_, names a
 * Cython ABI): what cp_scan_run refuses first when it is not. */
bool cp_scan_is_module(const cp_image *img);

/* Whether img, a Cython extension module, can hold no reference to a
 * mapped module whatever its code does, told from its bytes before any
 * code is read; false whenever that cannot be shown. */
cp_status cp_scan_maps_nothing(const cp_image *img, const cp_rules *rules, bool *nothing, cp_error *err);

/* scan_frames.c: before the walk, the thread that makes frames ahead: the
 * check's scan gives it the functions whose frames the input's scan
 * evaluated; a scan of the input (when it may use two cores: cores) gives
 * it those it guesses its later passes will evaluate from what a run of its
 * walk found (walked: the scan that
 * holds the run's calls; called by the thread that walked it) and, after
 * the walk, from all; the frame of [start, end), made ahead or now
 * (cp_frame_eval), and noted; the end of what was made ahead (cp_scan_free
 * does it). */
struct cp_frame;
void cp_scan_frames_ahead(cp_scan *s, bool cores);
void cp_scan_frames_guess_from(const cp_scan *s, const cp_scan *walked);
void cp_scan_frames_guess(cp_scan *s);
cp_status cp_scan_frame(cp_scan *s, uint64_t start, uint64_t end, struct cp_frame *f, cp_error *err);
void cp_scan_frames_end(cp_scan *s);

/* scan_threads.c: the threads the scan may run at once (struct cp_scan's
 * threads, else its cores). */
unsigned cp_scan_cores(const cp_scan *s);

/* scan_strings.c: literals holding a mapped name, outside blobs. */
cp_status cp_scan_strings(cp_scan *s, cp_error *err);

/* scan_strings.c: whether any needle of the rules, or a mapped module's
 * package as a whole C string, is anywhere in the sections the process
 * maps, boundaries or not (true also when a needle was too long to
 * search); a fallback stub's context, which names every mapped module,
 * aside. */
cp_status cp_scan_strings_anywhere(const cp_image *img, const cp_rules *rules, bool *found, cp_error *err);

/* scan_threads.c: the code walk (scan_code.c), on several threads where
 * the code is large: sites of strings, calls, import blocks, jumps and
 * uses of imported functions. */
cp_status cp_scan_code(cp_scan *s, cp_error *err);

/* scan_code.c: frees what the code walk added to s (cp_scan_free does). */
void cp_scan_free_walk(cp_scan *s);

/* scan_splice.c: the code walk's findings for s's image from `from`, the
 * scan of from_img: the functions whose bytes differ are walked again, the
 * rest taken; the whole code is walked when the two images' tables differ
 * or the architecture's walk is not local. The calls' names point into
 * from_img, which must outlive s. */
cp_status cp_scan_code_from(cp_scan *s, const cp_scan *from, const cp_image *from_img, bool full_check,
			    cp_error *err);

/* scan_code.c: references from relocations (tables of pointers). */
cp_status cp_scan_relocs(cp_scan *s, cp_error *err);

/* scan_imports.c: classifies calls into cimport/function/variable/type. */
cp_status cp_scan_imports(cp_scan *s, cp_error *err);

/* scan_blob.c: finds, decodes and splits a Cython 3.2+ string blob. */
cp_status cp_scan_blobs(cp_scan *s, cp_error *err);

/* scan_blob.c: each (signature, name) of an import-signature constant
 * (N signatures, an empty one repeating the one before, then N names,
 * NUL-separated: Cython 3.2+'s imports and exports), passed to fn until it
 * returns false; false when the bytes are not such a constant. */
bool cp_blob_sigconst_pairs(const uint8_t *d, uint64_t len,
			    bool (*fn)(void *ctx, const char *sig, const char *name), void *ctx);

/* scan_state.c: the offset (*off) in the module state of the first word
 * read through a PyModule_GetState result on the way from the import call
 * at `call`, before any other import or more calls than Cython's module
 * and state lookups make; false when there is none (d: a decoder of s's
 * image). */
bool cp_scan_state_read(const cp_scan *s, cp_dis *d, uint64_t call, int64_t *off);

/* scan_blob.c: references inside the blobs (Python-level names, function
 * and variable imports). */
cp_status cp_scan_blob_refs(cp_scan *s, cp_error *err);

/* scan_pyimports.c: the slots Python-level imports load the module's name
 * from (s->import_slots), or why not all are known. */
cp_status cp_scan_import_names(cp_scan *s, cp_error *err);

/* scan_pyimports.c: whether slot is one an import loads its name from. */
bool cp_scan_is_import_slot(const cp_scan *s, uint64_t slot);

/* scan_pyimports.c: whether `name` is a CPython import entry point. */
bool cp_scan_is_import_call(const char *name);

/* scan_pyimports.c: whether an import by C string names exactly `name`. */
bool cp_scan_imports_cstring(const cp_scan *s, const char *name, size_t len);

/* scan_names.c: `from P import N` of mapped modules, from the module's
 * Python-level names (string table or blob). */
cp_status cp_scan_from_imports(cp_scan *s, cp_error *err);

/* scan_names.c: whether the module's Python-level names fit `from P import
 * N` for the mapped module P.N (both P and N are names), with P's length in
 * *pkglen; reported or not (`from cuda import cuda` is not when a name
 * begins with "cuda.", nor when "P.N" is a name itself). */
bool cp_scan_from_candidate(const cp_scan *s, const char *module, size_t *pkglen);

/* scan_names.c: whether `name` is one of the module's Python-level names. */
bool cp_scan_has_pyname(const cp_scan *s, const char *name, size_t len);

/* scan_code.c: the code references to exactly va, as [*first, *first+n). */
size_t cp_scan_xrefs_to(const cp_scan *s, uint64_t va, size_t *first);

/* scan_code.c: the length a Cython string-table entry stores right after
 * its pointer at `where`, for a string of len bytes (with the NUL): 8 bytes
 * (0.29, 3.0: Py_ssize_t) or 2 (3.1: unsigned short). Returns the width and
 * sets *at to its address, or returns 0 when the entry holds no such length. */
unsigned cp_scan_table_length(const cp_scan *s, const cp_image *img, uint64_t where, uint64_t len,
			      uint64_t *at);

/* scan_code.c: whether va lies in writable data (not code): where a
 * string object's slot or a cimported function's slot can be. */
bool cp_scan_is_data_slot(const cp_scan *s, uint64_t va);

/* scan_code.c: a code site for the instruction at addr. */
void cp_scan_code_site(uint64_t addr, struct cp_site *site);

/* scan_imports.c: the slot a cimported function or variable binds to, from
 * the symbol table (0 when the file is stripped). */
uint64_t cp_scan_slot_symbol(const cp_scan *s, const char *module, const char *name, bool var);

/* scan_imports.c: adds a function or variable import reference. */
cp_status cp_scan_add_import(cp_scan *s, const char *module, const char *name,
			     const char *sig, uint64_t slot, const struct cp_loc *loc,
			     const uint64_t *site_addrs, size_t nsites, cp_error *err);

/* scan_result.c: whether something points at the reference (a moved name leaves
 * its old literal behind, with no site: dead bytes, not a reference). */
bool cp_ref_is_live(const struct cp_ref *r);
/* Whether the fallback stub in the file stands in for the cimported
 * function (or, with module, the cimported module) `name`. */
bool cp_scan_stands_in(const cp_scan *s, const char *name, bool module);
/* Whether a Python-level name may be what an import imports: false only
 * when the slots imports load names from are known and none is its. */
bool cp_ref_may_import(const struct cp_ref *r);

/* scan_result.c: what the passes add to a scan, and the lookups they share. */
struct cp_string *cp_scan_string_at(const cp_scan *s, uint64_t va);
/* A new string at va (none is there yet), zeroed but for va; NULL when
 * memory is exhausted. */
struct cp_string *cp_scan_add_string(cp_scan *s, uint64_t va, cp_error *err);
struct cp_ref *cp_scan_add_ref(cp_scan *s, enum cp_ref_kind kind, cp_error *err);
cp_status cp_ref_add_site(struct cp_ref *r, const struct cp_site *site, cp_error *err);
cp_status cp_ref_add_sites(struct cp_ref *r, const struct cp_site *sites, size_t n, cp_error *err);
cp_status cp_scan_note(cp_scan *s, cp_error *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
char *cp_strndup(const char *s, size_t n);
bool cp_in_blob(const cp_scan *s, uint64_t va, uint64_t len);
const char *cp_ref_kind_name(enum cp_ref_kind k);
const char *cp_site_kind_name(enum cp_site_kind k);

#endif
