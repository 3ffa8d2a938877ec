/*
 * image.h - an ELF file as bytes plus a parsed view of it.
 *
 * The bytes are the file, mapped read-only. The view (sections, segments,
 * symbols, relocations, the PLT) is read with <elf.h> types (elf_view.c,
 * relocs.c) by load.c after validate.c has checked every header and table
 * it will read; LIEF, an independent reader, cross-checks it in the test
 * suite. All access to the bytes goes through the bounds-checked helpers
 * below (image.c).
 */
#ifndef CP_IMAGE_H
#define CP_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "cypatch.h"
#include "arch/arch.h"

struct cp_section {
	const char *name;
	uint32_t type;   /* SHT_* */
	uint64_t flags;  /* SHF_* */
	uint64_t addr, offset, size;
	uint64_t entsize;
	uint32_t link;
};

/* A mapped section in the address index (cp_image_section_at): its range,
 * its index in img->sec, and the highest last address of any section up
 * to it (sections may overlap: that of a lower index wins, as in the
 * table). */
struct cp_mapped_section {
	uint64_t addr, size, reach;
	size_t sec;
};

struct cp_segment {
	uint32_t type, flags;
	uint64_t offset, vaddr, filesz, memsz, align;
};

struct cp_symbol {
	const char *name;
	uint64_t value, size;
	uint8_t type;    /* STT_* */
	bool dynamic;    /* from .dynsym */
	bool defined;
};

struct cp_reloc {
	uint64_t offset; /* r_offset: the virtual address patched */
	uint32_t type;   /* the machine's R_* */
	enum cp_reloc_kind kind; /* what type does (arch.h) */
	uint32_t sym;    /* .dynsym index */
	int64_t addend;
	uint64_t entry_off;  /* file offset of the Elf64_Rela, 0 for RELR */
};

/* A PLT stub or GOT slot and the imported function it reaches. */
struct cp_import_slot {
	uint64_t addr;
	const char *name;
};

/* qsort order of import slots by address (relocs.c). */
int cp_import_slot_cmp(const void *a, const void *b);

/* The names of the sections over the data and code cypatch adds (emit.c);
 * a fallback context is only ever in the first. */
#define CP_SECTION_NAME ".cypatch"
#define CP_CODE_SECTION_NAME ".cypatch.text"

/* A context of cypatch's fallback stubs found in the file. */
struct cp_fallback_view {
	bool present;
	uint64_t ctx_va, ctx_size;
	char layout[2][32];  /* built against, accepted besides */
	struct cp_standin_name {   /* what it may stand in for (strings in the image) */
		const char *name;
		bool module;       /* a whole cimported module, else a function */
	} *standin;
	size_t nstandin, capstandin;
};

struct cp_image {
	char *path;
	const struct cp_arch *arch; /* from e_machine (validate.c accepted it) */
	int fd;                  /* open while the image is: the output copies from it */
	const uint8_t *data;
	size_t size;
	struct timespec mtime;   /* the file's when mapped: cp_image_intact compares */
	struct cp_section *sec;
	size_t nsec;
	struct cp_mapped_section *mapped; /* the mapped sections by address */
	size_t nmapped;
	struct cp_segment *seg;
	size_t nseg;
	struct cp_symbol *sym;   /* sorted by value */
	size_t nsym;
	struct cp_reloc *rel;    /* .rela.dyn then .rela.plt */
	size_t nrel;
	struct cp_import_slot *got;  /* GOT slot -> imported name, sorted */
	size_t ngot;
	struct cp_import_slot *plt;  /* PLT stub -> imported name, sorted */
	size_t nplt;
	uint64_t *func;          /* function starts (.eh_frame_hdr, symbols), sorted */
	size_t nfunc;
	char **dynnames;         /* .dynsym names by index (into file bytes) */
	size_t ndynnames;
	struct cp_fallback_view fallback;
};

/* validate.c: checks the headers and tables before any parser reads them. */
cp_status cp_validate_elf(const char *path, const uint8_t *data, size_t size, const struct cp_arch **arch,
			  cp_error *err);

/* elf_view.c: sections, segments and symbols (names point into the file). */
cp_status cp_elf_read(cp_image *img, cp_error *err);

/* relocs.c: dynamic relocations, dynamic symbol names, GOT and PLT maps. */
cp_status cp_relocs_read(cp_image *img, cp_error *err);

/* A relative relocation by what it points at: its addend, and its index
 * in img->rel. */
struct cp_reloc_at {
	uint64_t addend;
	size_t i;
};

/* The address a relative relocation puts at va (a pointer in
 * .data.rel.ro), or 0 when none does. A linear search: for the rare load
 * of such a pointer into a vector register (arch frame evaluators). */
uint64_t cp_image_relative_at(const cp_image *img, uint64_t va);

/* The image's relative relocations sorted by addend, those of one addend
 * in the image's order: a new array (*n entries) the caller frees, or
 * NULL when out of memory. */
struct cp_reloc_at *cp_image_relatives_by_addend(const cp_image *img, size_t *n);

/* fallback_view.c: a fallback stub context, whose entry thunks then count
 * as PLT entries of the functions they stand for. */
cp_status cp_fallback_read(cp_image *img, cp_error *err);

/* Whether va lies in the fallback stub's context (its own names). */
bool cp_image_in_fallback(const cp_image *img, uint64_t va);

/* The name of fallback stub API i (enum cp_fb_api). */
const char *cp_fallback_api_name(int i);

/* functions.c: function start addresses from .eh_frame_hdr and symbols. */
cp_status cp_functions_read(cp_image *img, cp_error *err);

/* cp_image_intact (public, cypatch.h): CP_OK unless the file was truncated
 * while mapped (map_guard.h). */

/* Bytes [off, off+len) of the file, or NULL when outside it. */
const uint8_t *cp_image_bytes(const cp_image *img, uint64_t off, uint64_t len);

/* File offset of [va, va+len) when it lies inside one section's file bytes. */
bool cp_image_va_to_off(const cp_image *img, uint64_t va, uint64_t len, uint64_t *off);

/* Bytes at virtual address va, length len, or NULL. */
const uint8_t *cp_image_va_bytes(const cp_image *img, uint64_t va, uint64_t len);

/* The allocated section holding va, or NULL. */
const struct cp_section *cp_image_section_at(const cp_image *img, uint64_t va);

/* A section by name, or NULL. */
const struct cp_section *cp_image_section(const cp_image *img, const char *name);

/* The NUL-terminated string at va (at most max bytes), or NULL. */
const char *cp_image_cstring(const cp_image *img, uint64_t va, size_t max);

/* Name of the imported function called through PLT stub or GOT slot addr. */
const char *cp_image_plt_name(const cp_image *img, uint64_t addr);
const char *cp_image_got_name(const cp_image *img, uint64_t addr);

/* A defined symbol whose value is exactly addr, or NULL. */
const struct cp_symbol *cp_image_symbol_at(const cp_image *img, uint64_t addr);

/* A defined symbol by name, or NULL. */
const struct cp_symbol *cp_image_symbol(const cp_image *img, const char *name);

/* The index in img->func of the first function start above addr: the
 * function holding addr, when there is one, is the one before it. */
size_t cp_image_func_after(const cp_image *img, uint64_t addr);

/* [start, end) of the function holding addr; false when unknown. */
bool cp_image_function(const cp_image *img, uint64_t addr, uint64_t *start, uint64_t *end);

/* The caller has read [off, off+len) and will rarely come back: its pages
 * leave the process (they stay in the page cache, and come back on the next
 * read). Keeps the resident size of a pass over a 1 GiB section small. */
void cp_image_done_with(const cp_image *img, uint64_t off, uint64_t len);

/* The window of a pass over a large section (cp_image_search,
 * scan_strings.c): its pages are handed back behind it. */
#define CP_SEARCH_WINDOW ((uint64_t)32 << 20)

/* The first occurrence of needle in section sec at or after `from` (an
 * offset into the section), or NULL; searched a window at a time, with
 * cp_image_done_with behind it, so that a pass over a large section keeps
 * little resident. */
const uint8_t *cp_image_search(const cp_image *img, const struct cp_section *sec, uint64_t from,
			       const void *needle, size_t n);

/* Allocated and owning its addresses: not a TLS template without bytes
 * (.tbss), whose addresses overlap the sections after it. */
bool cp_section_is_mapped(const struct cp_section *s);
bool cp_section_is_code(const struct cp_section *s);
bool cp_section_is_rodata(const struct cp_section *s);   /* allocated, not exec, not writable */
bool cp_section_is_writable(const struct cp_section *s);
/* CUDA's fatbinary (.nv_fatbin, and __nv_relfatbin for relocatable device
 * code): nvcc's device code, most of the bytes of a RAPIDS-sized module. No
 * C compiler puts Cython's data there, and no byte of it may be rewritten. */
bool cp_section_is_device_code(const struct cp_section *s);
/* Allocated, not code, with bytes, not device code: where the C
 * compiler's data (Cython's strings among it) can sit. */
bool cp_section_is_data(const struct cp_section *s);

#endif
