/*
 * fallback_view.c - a file that `--target-layout fallback` patched, as the
 * loader sees it: the stub context (stub/fallback_abi.h) in read-only data,
 * the layouts it accepts, and its entry thunks, which stand for the API
 * functions whose calls were redirected to them. The thunks join the PLT
 * map, so that the scan pairs the redirected calls as it did before.
 */
#include "elf/image.h"
#include "util/error.h"
#include "stub/fallback_abi.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const api_names[CP_FB_NAPI] = {
	"PyImport_ImportModule", "PyImport_ImportModuleLevelObject", "PyCapsule_IsValid",
	"PyCapsule_GetPointer", "PyDict_GetItemString", "PyDict_GetItemStringRef", "PyCapsule_GetName",
	"PyErr_Clear", "PyErr_ExceptionMatches", "PyExc_ImportError", "PyImport_GetModuleDict",
	"PyObject_GetAttrString", "PyUnicode_FromStringAndSize", "PyTuple_New", "PyDict_New",
	"PyDict_SetItem", "_Py_Dealloc",
};

/* The context version 1 wrote (cypatch before stand-ins): 16 API slots, 4
 * thunks (the first four of api_names), no stand-ins. Read so that a file
 * it patched is still known as patched. */
struct cp_fb_ctx_v1 {
	char magic[16];
	uint32_t version, size;
	int64_t api[16];
	int64_t thunk[4];
	uint32_t nmod, mod_off, nrel, rel_off, nmangle, mangle_off, src_off, src_len;
	uint32_t built_off, other_off, ext_off, reserved;
};

const char *cp_fallback_api_name(int i)
{
	return i >= 0 && i < CP_FB_NAPI ? api_names[i] : "?";
}

bool cp_image_in_fallback(const cp_image *img, uint64_t va)
{
	return img->fallback.present && va >= img->fallback.ctx_va &&
	       va - img->fallback.ctx_va < img->fallback.ctx_size;
}

/* The NUL-terminated string at ctx + off, inside the context, or NULL. */
static const char *ctx_string(const uint8_t *ctx, uint32_t size, uint32_t off)
{
	if (off >= size || !memchr(ctx + off, 0, size - off))
		return NULL;
	return (const char *)ctx + off;
}

static cp_status add_thunks(cp_image *img, const int64_t *thunk, size_t n, cp_error *err)
{
	size_t i, cap = img->nplt;

	for (i = 0; i < n; i++) {
		uint64_t at = img->fallback.ctx_va + (uint64_t)thunk[i];

		if (!thunk[i] || !cp_image_section_at(img, at))
			continue;
		if (CP_GROW(img->plt, cap, img->nplt + 1))
			return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
		img->plt[img->nplt].addr = at;
		img->plt[img->nplt++].name = api_names[i];
	}
	if (img->nplt)
		qsort(img->plt, img->nplt, sizeof(*img->plt), cp_import_slot_cmp);
	return CP_OK;
}

/* The stand-in function and module names of a version 2 context
 * (n of them, their offsets at off): into the image's list. */
static cp_status read_names(cp_image *img, const uint8_t *ctx, uint32_t size, uint32_t n, uint32_t off,
			    bool module, cp_error *err)
{
	uint32_t i, at;

	if (off > size || n > (size - off) / 4)
		return CP_OK;
	for (i = 0; i < n; i++) {
		const char *name;

		memcpy(&at, ctx + off + 4 * i, 4);
		if (!(name = ctx_string(ctx, size, at)))
			continue;
		if (CP_GROW(img->fallback.standin, img->fallback.capstandin, img->fallback.nstandin + 1))
			return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
		img->fallback.standin[img->fallback.nstandin].name = name;
		img->fallback.standin[img->fallback.nstandin++].module = module;
	}
	return CP_OK;
}

/* A context at p (avail bytes to the section's end), at address va. */
static cp_status read_context(cp_image *img, const uint8_t *p, size_t avail, uint64_t va, cp_error *err)
{
	struct cp_fb_ctx h;
	struct cp_fb_ctx_v1 h1;
	const char *built, *other;
	cp_status st;

	if (avail < sizeof(h1))
		return CP_OK;
	memcpy(&h1, p, sizeof(h1));
	if (h1.version == 1 && h1.size >= sizeof(h1) && h1.size <= avail) {
		h.size = h1.size;
		h.built_off = h1.built_off;
		h.other_off = h1.other_off;
	} else if (avail >= sizeof(h)) {
		memcpy(&h, p, sizeof(h));
		if (h.version != CP_FB_VERSION || h.size < sizeof(h) || h.size > avail)
			return CP_OK;
	} else {
		return CP_OK;
	}
	built = ctx_string(p, h.size, h.built_off);
	other = ctx_string(p, h.size, h.other_off);
	if (!built || !other)
		return CP_OK;
	img->fallback.present = true;
	img->fallback.ctx_va = va;
	img->fallback.ctx_size = h.size;
	snprintf(img->fallback.layout[0], sizeof(img->fallback.layout[0]), "%s", built);
	snprintf(img->fallback.layout[1], sizeof(img->fallback.layout[1]), "%s", other);
	if (h1.version == 1)
		return add_thunks(img, h1.thunk, 4, err);
	st = read_names(img, p, h.size, h.nstand, h.stand_off, false, err);
	if (!st)
		st = read_names(img, p, h.size, h.nstmod, h.stmod_off, true, err);
	return st ? st : add_thunks(img, h.thunk, CP_FB_NTHUNKS, err);
}

cp_status cp_fallback_read(cp_image *img, cp_error *err)
{
	cp_status st = CP_OK;
	size_t i;

	for (i = 0; !st && i < img->nsec && !img->fallback.present; i++) {
		const struct cp_section *sec = &img->sec[i];
		/* only where emit.c puts it: a scan of every read-only section
		 * cost 0.15 s per GiB, twice per patch */
		const uint8_t *p = cp_section_is_rodata(sec) && sec->type != SHT_NOBITS &&
					   !strcmp(sec->name, CP_SECTION_NAME)
					   ? cp_image_bytes(img, sec->offset, sec->size) : NULL;
		size_t at = 0;

		/* contexts are 16-aligned in the new space (plan_fallback.c) */
		while (!st && p && at + 16 <= sec->size && !img->fallback.present) {
			const uint8_t *m = memmem(p + at, sec->size - at, CP_FB_MAGIC, 16);

			if (!m)
				break;
			at = (size_t)(m - p);
			if ((sec->addr + at) % 16 == 0)
				st = read_context(img, m, sec->size - at, sec->addr + at, err);
			at++;
		}
	}
	return st;
}
