/*
 * plan_fallback.c - the plan of `--target-layout fallback` (docs/fallback.md).
 *
 * No name is rewritten. Every call the extension makes to
 * PyImport_ImportModule, PyImport_ImportModuleLevelObject, PyCapsule_IsValid
 * and PyCapsule_GetPointer is redirected to a thunk in new code space that
 * passes the context's address as the argument after the function's own
 * and jumps to the stub's entry (the architecture writes it: cp_arch.thunk),
 * and the stub (patcher/stub/fallback_stub.c, compiled into a blob at build
 * time for the machine: cp_arch.stub) accepts both layouts. The context, in new read-only space, holds the
 * offsets of the GOT slots the stub calls through, the module pairs, the
 * mangled prefix pairs and the stub's Python helper.
 */
#include "plan/plan_internal.h"
#include "util/names.h"
#include "util/error.h"
#include "rules/rules.h"
#include "stub/fallback_abi.h"

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char cp_stub_helper[];

/* The API functions whose calls are redirected (the first CP_FB_NTHUNKS of
 * enum cp_fb_api, whose stub entries they are), with the argument that
 * carries the context: the one after their own. */
struct redirect {
	enum cp_fb_api api;
	unsigned ctx_arg;
};

static const struct redirect redirects[] = {
	{ CP_FB_IMPORT_MODULE, 1 },       /* (name) */
	{ CP_FB_IMPORT_LEVEL, 5 },        /* (name, globals, locals, fromlist, level) */
	{ CP_FB_CAPSULE_ISVALID, 2 },     /* (capsule, name) */
	{ CP_FB_CAPSULE_GETPOINTER, 2 },  /* (capsule, name) */
	{ CP_FB_DICT_GETITEMSTRING, 2 },  /* (dict, key): stand-ins only */
	{ CP_FB_DICT_GETITEMSTRINGREF, 3 }, /* (dict, key, result): stand-ins only */
};
#define NREDIRECTS (sizeof(redirects) / sizeof(redirects[0]))
/* The redirects every stub has: those before the stand-ins' lookups. */
#define NPLAIN_REDIRECTS 4
_Static_assert(CP_FB_DICT_GETITEMSTRING == NPLAIN_REDIRECTS, "the stand-ins' redirects come last");
_Static_assert(CP_FB_NTHUNKS == CP_STUB_NENTRIES, "one stub entry per redirected function");

struct site {
	uint64_t addr;
	int redirect;   /* index into redirects */
	bool load;      /* a load of the function's GOT slot (cp_arch.load_rewrite) */
};

struct fb {
	struct planner *pl;
	const struct cp_standins *standins; /* NULL: none */
	size_t nthunks;             /* thunks written: the first redirects */
	uint64_t slot[CP_FB_NAPI];  /* GOT slot per API, 0 when not imported */
	struct site *sites;
	size_t nsites, capsites;
	uint64_t bad_ref;           /* a redirected slot used otherwise than by a call or a load */
	bool need[NREDIRECTS];      /* which redirects this file needs */
	struct {                    /* redirect_of by a name's address (use_redirect) */
		const char *name;
		int redirect;
	} seen[512];
	bool oom;
	/* the context under construction */
	uint8_t *ctx;
	size_t len, cap;
	uint32_t ret_off;           /* its struct cp_fb_standin entries */
};

static bool in_plt(const cp_image *img, uint64_t addr)
{
	const struct cp_section *s = cp_image_section_at(img, addr);

	return s && !strncmp(s->name, ".plt", 4);
}

static int redirect_of(const char *name)
{
	size_t i;

	for (i = 0; name && i < NREDIRECTS; i++)
		if (!strcmp(name, cp_fallback_api_name(redirects[i].api)))
			return (int)i;
	return -1;
}

/* Whether the file needs calls to API function `api` redirected:
 * Python-level imports only with Python-level references; capsule checks
 * only when a cimported signature carries a mangled module path (the only
 * capsule names that differ between the layouts) or a function is stood
 * in for, as are then the capsule lookups. */
static bool needed(const cp_scan *s, const struct cp_standins *stand, enum cp_fb_api api)
{
	bool standing = stand && stand->nfunc;
	size_t i;

	if (api == CP_FB_IMPORT_MODULE)
		return true;
	if (api == CP_FB_DICT_GETITEMSTRING || api == CP_FB_DICT_GETITEMSTRINGREF)
		return standing;
	if ((api == CP_FB_CAPSULE_ISVALID || api == CP_FB_CAPSULE_GETPOINTER) && standing)
		return true;
	for (i = 0; i < s->nrefs; i++) {
		enum cp_ref_kind k = s->refs[i].kind;

		if (!cp_ref_is_live(&s->refs[i]))
			continue;
		if (api == CP_FB_IMPORT_LEVEL && (k == CP_K_PYIMPORT || k == CP_K_FROMIMPORT))
			return true;
		if ((api == CP_FB_CAPSULE_ISVALID || api == CP_FB_CAPSULE_GETPOINTER) && k == CP_K_SIGNATURE)
			return true;
	}
	return false;
}

static void add_site(struct fb *f, uint64_t addr, int redirect, bool load)
{
	if (CP_GROW(f->sites, f->capsites, f->nsites + 1)) {
		f->oom = true;
		return;
	}
	f->sites[f->nsites].addr = addr;
	f->sites[f->nsites].redirect = redirect;
	f->sites[f->nsites++].load = load;
}

/* redirect_of(name), remembered by the name's address: the uses of one
 * imported function share its name in the image's table, and a module
 * has a hundred thousand of them. A slot taken by another name is
 * overwritten. */
static int use_redirect(struct fb *f, const char *name)
{
	const size_t n = sizeof(f->seen) / sizeof(f->seen[0]);
	size_t h = (size_t)(((uint64_t)(uintptr_t)name * 0x9e3779b97f4a7c15ull) >> 32) % n;

	if (f->seen[h].name != name) {
		f->seen[h].name = name;
		f->seen[h].redirect = redirect_of(name);
	}
	return f->seen[h].redirect;
}

/* A call of a redirected function goes to its thunk instead. A load of
 * a redirected function's GOT slot takes the thunk's address instead where
 * the machine can say so (so whatever the register feeds calls the stub);
 * any other use of the slot is refused. Uses inside the PLT (its own
 * jumps through the slots) stay: looked up only for a use of a redirected
 * function's name or slot, a few among the module's hundred thousand. */
static void on_use(struct fb *f, const struct cp_slot_use *u)
{
	const cp_image *img = f->pl->img;
	size_t i;

	if (u->name) {
		int r = use_redirect(f, u->name);

		if (r >= 0 && f->need[r] && !in_plt(img, u->addr))
			add_site(f, u->addr, r, false);
		return;
	}
	for (i = 0; i < NREDIRECTS; i++) {
		if (!f->need[i] || !f->slot[redirects[i].api] || u->slot != f->slot[redirects[i].api])
			continue;
		if (in_plt(img, u->addr))
			return;
		if (u->ref == CP_REF_LOAD && img->arch->load_rewrite)
			add_site(f, u->addr, (int)i, true);
		else if (!f->bad_ref)
			f->bad_ref = u->addr;
	}
}

static cp_status find_slots(struct fb *f)
{
	const cp_image *img = f->pl->img;
	size_t i, k;

	for (i = 0; i < img->ngot; i++)
		for (k = 0; k < CP_FB_NAPI; k++)
			if (!f->slot[k] && !strcmp(img->got[i].name, cp_fallback_api_name(k)))
				f->slot[k] = img->got[i].addr;
	/* a redirected function reached through a data relocation would
	 * bypass the stub */
	for (i = 0; i < img->nrel; i++) {
		const struct cp_reloc *r = &img->rel[i];

		if (r->kind == CP_RELOC_JUMP_SLOT || r->kind == CP_RELOC_GLOB_DAT || r->sym >= img->ndynnames)
			continue;
		if (r->sym && redirect_of(img->dynnames[r->sym]) >= 0 && f->need[redirect_of(img->dynnames[r->sym])])
			return cp_fail(f->pl->err, CP_E_INPUT, "%s: %s is referenced by a data relocation at "
				       "%#llx; the fallback stub cannot see those uses", img->path,
				       img->dynnames[r->sym], (unsigned long long)r->offset);
	}
	return CP_OK;
}

static cp_status need(struct fb *f, enum cp_fb_api api, const char *why)
{
	if (f->slot[api])
		return CP_OK;
	return cp_fail(f->pl->err, CP_E_INPUT, "%s: the fallback stub needs %s (%s), which the extension "
		       "does not import; use --target-layout legacy or bindings instead", f->pl->img->path,
		       cp_fallback_api_name(api), why);
}

static bool called(const struct fb *f, enum cp_fb_api api)
{
	size_t i;

	for (i = 0; i < f->nsites; i++)
		if (redirects[f->sites[i].redirect].api == api)
			return true;
	return false;
}

static cp_status check_needs(struct fb *f)
{
	static const enum cp_fb_api always[] = {
		CP_FB_ERR_CLEAR, CP_FB_ERR_MATCHES, CP_FB_EXC_IMPORTERROR, CP_FB_MODULE_DICT,
		CP_FB_GETATTRSTRING, CP_FB_UNICODE, CP_FB_TUPLE_NEW, CP_FB_DICT_NEW,
		CP_FB_DICT_GETITEMSTRING, CP_FB_DICT_SETITEM, CP_FB_DEALLOC,
	};
	cp_status st = CP_OK;
	size_t i;

	for (i = 0; !st && i < sizeof(always) / sizeof(always[0]); i++)
		st = need(f, always[i], "its import path");
	for (i = 0; !st && i < f->nsites; i++)
		if (redirects[f->sites[i].redirect].api == CP_FB_CAPSULE_ISVALID ||
		    redirects[f->sites[i].redirect].api == CP_FB_CAPSULE_GETPOINTER)
			st = need(f, CP_FB_CAPSULE_GETNAME, "its capsule check") ||
			     need(f, CP_FB_CAPSULE_ISVALID, "its capsule check");
	if (!st && f->standins && f->standins->nfunc && !called(f, CP_FB_DICT_GETITEMSTRING) &&
	    !called(f, CP_FB_DICT_GETITEMSTRINGREF))
		st = cp_fail(f->pl->err, CP_E_INPUT, "%s: no call of PyDict_GetItemString(Ref) to stand in for "
			     "missing functions through", f->pl->img->path);
	if (!st && f->bad_ref)
		st = cp_fail(f->pl->err, CP_E_INPUT, "%s: the instruction at %#llx reads the GOT slot of a "
			     "function the fallback stub replaces; only calls and jumps can be redirected",
			     f->pl->img->path, (unsigned long long)f->bad_ref);
	return st;
}

/* --- the context ----------------------------------------------------- */

static uint32_t put(struct fb *f, const void *bytes, size_t n)
{
	size_t at = f->len;

	if (CP_GROW(f->ctx, f->cap, f->len + n)) {
		f->oom = true;
		return 0;
	}
	memcpy(f->ctx + at, bytes, n);
	f->len += n;
	return (uint32_t)at;
}

static uint32_t put_str(struct fb *f, const char *s)
{
	return put(f, s, strlen(s) + 1);
}

static void set_word(struct fb *f, uint32_t at, uint32_t v)
{
	if (!f->oom)
		memcpy(f->ctx + at, &v, 4);
}

/* An array of n words; returns where it starts. */
static uint32_t put_words(struct fb *f, size_t n)
{
	uint32_t zero = 0, at = f->len;
	size_t i;

	while (f->len % 4)
		put(f, "", 1);
	at = (uint32_t)f->len;
	for (i = 0; i < n; i++)
		put(f, &zero, 4);
	return at;
}

/* The helper's source: MAP and EXT, then fallback_helper.py. */
static char *helper_source(struct fb *f)
{
	const cp_rules *r = f->pl->rules;
	size_t i, k, n = strlen(cp_stub_helper) + strlen(f->pl->scan->modname) + 64;
	char *src, *o;

	for (i = 0; i < r->nmod; i++)
		n += 2 * (strlen(r->mod[i].name[0]) + strlen(r->mod[i].name[1]) + 8);
	src = malloc(n);
	if (!src)
		return NULL;
	o = src + sprintf(src, "MAP = {");
	for (i = 0; i < r->nmod; i++)
		for (k = 0; k < 2; k++)
			o += sprintf(o, "'%s': '%s', ", r->mod[i].name[k], r->mod[i].name[!k]);
	sprintf(o, "}\nEXT = '%s'\n%s", f->pl->scan->modname, cp_stub_helper);
	return src;
}

/*
 * The names whose Python-level imports are the helper's business: every
 * mapped module and every package above one (cuda, cuda.bindings). Not only
 * those the scan reported: whether `from cuda import cuda` is made cannot
 * always be told from the strings (a Cython 3.0 table may reach "cuda"
 * through a neighbour's address), and the helper steps in only when the
 * import itself fails, so a name too many costs nothing.
 */
static size_t related_cap(const cp_rules *r)
{
	size_t i, n = 0;
	int side;
	const char *c;

	for (i = 0; i < r->nmod; i++)
		for (side = 0; side < 2; side++)
			for (n++, c = r->mod[i].name[side]; (c = strchr(c, '.')) != NULL; c++)
				n++;
	return n;
}

/* Each name once, in the order first met; a hash set of those kept (index
 * + 1, 0 free) finds one met before, where a scan of them all made this
 * quadratic in the rules. Returns SIZE_MAX when out of memory. */
static size_t count_related(const cp_rules *r, char (*names)[128], size_t max)
{
	size_t i, n = 0, nslot, *slot;
	int side;

	for (nslot = 64; nslot < 2 * max; nslot *= 2)
		;
	slot = calloc(nslot, sizeof(*slot));
	if (!slot)
		return SIZE_MAX;
	for (i = 0; i < r->nmod; i++)
		for (side = 0; side < 2; side++) {
			const char *m = r->mod[i].name[side], *dot = m;

			do {
				size_t len = (dot = strchr(dot + 1, '.')) ? (size_t)(dot - m) : strlen(m);
				size_t k = cp_name_hash(m, len) & (nslot - 1);

				if (len >= sizeof(names[0]))
					continue;
				while (slot[k] && (strncmp(names[slot[k] - 1], m, len) != 0 ||
						   names[slot[k] - 1][len] != '\0'))
					k = (k + 1) & (nslot - 1);
				if (!slot[k] && n < max) {
					snprintf(names[n++], sizeof(names[0]), "%.*s", (int)len, m);
					slot[k] = n;
				}
			} while (dot);
		}
	free(slot);
	return n;
}

/* The stand-ins' names, and their return types (the code is placed later:
 * finish). */
static void put_standins(struct fb *f, struct cp_fb_ctx *h)
{
	const struct cp_standins *st = f->standins;
	struct cp_fb_standin e;
	uint32_t names, mods;
	size_t i;

	if (!st)
		return;
	h->nstand = (uint32_t)st->nfunc;
	h->stand_off = names = put_words(f, st->nfunc);
	h->nstmod = (uint32_t)st->nmodule;
	h->stmod_off = mods = put_words(f, st->nmodule);
	while (f->len % 8)
		put(f, "", 1);
	h->nret = (uint32_t)st->nret;
	h->ret_off = f->ret_off = (uint32_t)f->len;
	memset(&e, 0, sizeof(e));
	for (i = 0; i < st->nret; i++)
		put(f, &e, sizeof(e));
	for (i = 0; i < st->nfunc; i++)
		set_word(f, names + (uint32_t)(4 * i), put_str(f, st->func[i]));
	for (i = 0; i < st->nmodule; i++)
		set_word(f, mods + (uint32_t)(4 * i), put_str(f, st->module[i]));
	for (i = 0; i < st->nret; i++)
		set_word(f, f->ret_off + (uint32_t)(sizeof(e) * i + offsetof(struct cp_fb_standin, type_off)),
			 put_str(f, st->ret[i]->type));
}

static cp_status build_context(struct fb *f)
{
	const cp_rules *r = f->pl->rules;
	struct cp_fb_ctx h;
	size_t cap = related_cap(r), i, k, nrel;
	char (*rel)[128] = calloc(cap ? cap : 1, sizeof(*rel));
	uint32_t mods, rels, mangles;
	char *src = rel ? helper_source(f) : NULL;
	int built = -1;

	if (!src) {
		free(rel);
		return cp_plan_oom(f->pl);
	}
	nrel = count_related(r, rel, cap);
	if (nrel == SIZE_MAX) {
		free(rel);
		free(src);
		return cp_plan_oom(f->pl);
	}
	for (i = 0; i < r->nlayout; i++)
		if (f->pl->scan->layouts_seen & (1u << i))
			built = built < 0 ? (int)i : built;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, CP_FB_MAGIC, sizeof(h.magic));
	h.version = CP_FB_VERSION;
	put(f, &h, sizeof(h));
	h.nmod = (uint32_t)(2 * r->nmod);
	h.mod_off = mods = put_words(f, 2 * h.nmod);
	h.nrel = (uint32_t)nrel;
	h.rel_off = rels = put_words(f, nrel);
	h.nmangle = (uint32_t)r->nmangle;
	h.mangle_off = mangles = put_words(f, 2 * r->nmangle);
	for (i = 0; i < r->nmod; i++)
		for (k = 0; k < 2; k++) {
			set_word(f, mods + (uint32_t)(16 * i + 8 * k), put_str(f, r->mod[i].name[k]));
			set_word(f, mods + (uint32_t)(16 * i + 8 * k + 4), put_str(f, r->mod[i].name[!k]));
		}
	for (i = 0; i < nrel; i++)
		set_word(f, rels + (uint32_t)(4 * i), put_str(f, rel[i]));
	for (i = 0; i < r->nmangle; i++)
		for (k = 0; k < 2; k++)
			set_word(f, mangles + (uint32_t)(8 * i + 4 * k), put_str(f, r->mangle[i].prefix[k]));
	h.src_len = (uint32_t)strlen(src);
	h.src_off = put_str(f, src);
	h.built_off = put_str(f, built >= 0 ? r->layout[built] : "");
	h.other_off = put_str(f, built >= 0 ? r->layout[!built] : "");
	h.ext_off = put_str(f, f->pl->scan->modname);
	put_standins(f, &h);
	h.size = (uint32_t)f->len;
	free(src);
	free(rel);
	if (f->oom)
		return cp_plan_oom(f->pl);
	memcpy(f->ctx, &h, sizeof(h));
	return CP_OK;
}

/* --- code: the stub, its thunks, the call sites ----------------------- */

/* The call or jmp at addr made a direct branch to `to` of the same
 * length, or the load of a GOT slot there made the address `to`. */
static cp_status redirect_site(struct fb *f, const struct site *s, uint64_t to, const char *what)
{
	struct planner *pl = f->pl;
	uint64_t addr = s->addr, off;
	unsigned len = cp_dis_size(&pl->dis, pl->img, addr);
	const uint8_t *b = len ? cp_image_va_bytes(pl->img, addr, len) : NULL;
	uint8_t out[16];
	uint8_t at = 0, size = (uint8_t)len;
	bool ok = b && len <= sizeof(out);

	if (ok && s->load)
		ok = pl->img->arch->load_rewrite(b, len, out);
	else if (ok)
		ok = pl->img->arch->branch_rewrite(b, len, out, &at, &size);
	if (!ok)
		return cp_fail(pl->err, CP_E_INPUT, "%s: the %s at %#llx has a form the fallback stub "
			       "cannot redirect", pl->img->path, s->load ? "load" : "call", (unsigned long long)addr);
	if (!cp_plan_file_off(pl, addr, len, &off))
		return cp_fail(pl->err, CP_E_INPUT, "%s: the %s at %#llx lies outside the file",
			       pl->img->path, s->load ? "load" : "call", (unsigned long long)addr);
	if (cp_plan_add_edit(pl, s->load ? CP_EDIT_DISP : CP_EDIT_BRANCH, off, out, len, addr, to, what))
		return pl->err->code;
	pl->p->edits[pl->p->nedits - 1].site_end = addr + size;
	pl->p->edits[pl->p->nedits - 1].disp_at = at;
	return CP_OK;
}

/* The stub, then room for one thunk per redirected function and one
 * stand-in per return type (written once placed: finish); the call sites
 * point at the thunks. */
static cp_status plan_code(struct fb *f, uint64_t *code, uint64_t thunk[NREDIRECTS])
{
	const struct cp_arch *arch = f->pl->img->arch;
	size_t n = (arch->stub->size + 15) & ~(size_t)15, i, k;
	size_t nret = f->standins ? f->standins->nret : 0;
	size_t len = n + (f->nthunks + nret) * arch->thunk_size;
	uint8_t *buf = calloc(1, len);
	cp_status st = CP_OK;

	if (!buf)
		return cp_plan_oom(f->pl);
	memcpy(buf, arch->stub->code, arch->stub->size);
	*code = cp_plan_append_code(f->pl, buf, len, 16, nret ? "fallback stub (patcher/stub/fallback_stub.c), its "
				    "thunks and stand-ins" : "fallback stub (patcher/stub/fallback_stub.c) and its thunks");
	free(buf);
	if (!*code)
		return cp_plan_oom(f->pl);
	for (i = 0; i < NREDIRECTS; i++)
		thunk[i] = i < f->nthunks ? *code + n + i * arch->thunk_size : 0;
	for (k = 0; !st && k < f->nsites; k++) {
		char what[200];

		snprintf(what, sizeof(what), "%s %s -> fallback stub", cp_fallback_api_name(redirects[f->sites[k].redirect].api),
			 f->sites[k].load ? "GOT load" : "call");
		st = redirect_site(f, &f->sites[k], thunk[f->sites[k].redirect], what);
	}
	return st;
}

/* Once placed: each stand-in's code, after the thunks, and its offset
 * from the context. */
static cp_status finish_standins(struct fb *f, struct cp_chunk *dc, struct cp_chunk *cc, uint64_t ctx, uint64_t code)
{
	const struct cp_arch *arch = f->pl->img->arch;
	size_t n = (arch->stub->size + 15) & ~(size_t)15, i;

	for (i = 0; f->standins && i < f->standins->nret; i++) {
		size_t at = n + (f->nthunks + i) * arch->thunk_size;
		int64_t rel = (int64_t)(code + at - ctx);

		assert(at + arch->thunk_size <= cc->len);
		if (!arch->standin(cc->bytes + at, f->standins->ret[i]->value))
			return cp_fail(f->pl->err, CP_E_RULES, "the error value %ld of %s does not fit a stand-in",
				       f->standins->ret[i]->value, f->standins->ret[i]->type);
		memcpy(dc->bytes + f->ret_off + sizeof(struct cp_fb_standin) * i + offsetof(struct cp_fb_standin, code),
		       &rel, 8);
	}
	return CP_OK;
}

/* Once placed: the context's GOT and thunk offsets, the thunks, and what
 * the check decodes again there (the load of the context, the jump). */
static cp_status finish(struct fb *f, uint64_t ctx_p, uint64_t code_p, const uint64_t thunk_p[NREDIRECTS])
{
	const struct cp_arch *arch = f->pl->img->arch;
	struct cp_plan *p = f->pl->p;
	struct cp_chunk *cc = &p->space[CP_SPACE_CODE].chunks[0];
	struct cp_chunk *dc = &p->space[CP_SPACE_DATA].chunks[p->space[CP_SPACE_DATA].nchunks - 1];
	uint64_t ctx = cp_plan_real_address(p, ctx_p), code = cp_plan_real_address(p, code_p), jump;
	size_t i;

	for (i = 0; i < CP_FB_NAPI; i++) {
		int64_t rel = f->slot[i] ? (int64_t)(f->slot[i] - ctx) : 0;

		memcpy(dc->bytes + offsetof(struct cp_fb_ctx, api) + 8 * i, &rel, 8);
	}
	for (i = 0; i < f->nthunks; i++) {
		uint64_t t = cp_plan_real_address(p, thunk_p[i]), entry = code + arch->stub->entry[redirects[i].api];
		int64_t rel = (int64_t)(t - ctx);

		/* the segments placed on either side of a huge .bss */
		if (!arch->thunk(cc->bytes + (t - code), t, redirects[i].ctx_arg, ctx, entry, &jump))
			return cp_fail(f->pl->err, CP_E_INPUT, "%s: the fallback stub's thunk at %#llx cannot reach its "
				       "context at %#llx with %s", f->pl->img->path,
				       (unsigned long long)t, (unsigned long long)ctx, arch->reach);
		memcpy(dc->bytes + offsetof(struct cp_fb_ctx, thunk) + 8 * redirects[i].api, &rel, 8);
		if (cp_plan_expect(f->pl, t, ctx) || cp_plan_expect(f->pl, jump, entry))
			return f->pl->err->code;
	}
	return finish_standins(f, dc, cc, ctx, code);
}

/* What refuses a fallback before any code is read. */
static cp_status check_scan(const cp_image *img, const cp_scan *scan, const struct cp_standins *standins,
			    cp_error *err)
{
	size_t k;

	if (standins && (standins->nfunc || standins->nmodule) && scan->shared_import[0])
		return cp_fail(err, CP_E_INPUT, "%s: the cimports are made by %s (Cython's shared utility module), "
			       "where the stub cannot stand in for what a release lacks", img->path,
			       scan->shared_import);

	if (scan->rules->nlayout != 2)
		return cp_fail(err, CP_E_RULES, "%s: fallback needs rules with exactly two layouts, not %zu",
			       img->path, scan->rules->nlayout);
	for (k = 0; !scan->fallback && scan->shared_import[0] && k < scan->nrefs; k++)
		if ((scan->refs[k].kind == CP_K_PYIMPORT || scan->refs[k].kind == CP_K_FROMIMPORT) &&
		    cp_ref_is_live(&scan->refs[k]))
			return cp_fail(err, CP_E_INPUT, "%s: the Python-level import of %s is made by %s (Cython's "
				       "shared utility module), where the fallback stub cannot see it",
				       img->path, scan->refs[k].module, scan->shared_import);
	return CP_OK;
}

/* The GOT slots, and the calls to redirect (from the scan's walk). */
static cp_status find_sites(struct fb *f)
{
	cp_status st = find_slots(f);
	size_t i;

	/* any Python-level import may be `from cuda import cuda` (the strings
	 * cannot always tell): the helper sees them all, and acts on failures */
	if (f->slot[CP_FB_IMPORT_LEVEL])
		f->need[CP_FB_IMPORT_LEVEL] = true;
	for (i = 0; !st && i < f->pl->scan->nuses; i++)
		on_use(f, &f->pl->scan->uses[i]);
	if (!st && f->oom)
		st = cp_plan_oom(f->pl);
	if (!st && !f->nsites)
		st = cp_fail(f->pl->err, CP_E_INPUT, "%s: no import or capsule call to redirect", f->pl->img->path);
	return st;
}

/* The context and the code appended, placed and finished. */
static cp_status plan_stubs(struct fb *f)
{
	uint64_t code = 0, ctx = 0, thunk[NREDIRECTS];
	cp_status st = check_needs(f);

	if (!st)
		st = build_context(f);
	if (!st) {
		ctx = cp_plan_append(f->pl, f->ctx, f->len, 16, "fallback context: GOT offsets, module pairs, "
				     "mangled prefixes, helper source");
		if (!ctx)
			st = cp_plan_oom(f->pl);
	}
	if (!st)
		st = plan_code(f, &code, thunk);
	if (!st)
		st = cp_plan_place(f->pl);
	if (!st)
		st = finish(f, ctx, code, thunk);
	if (!st)
		st = cp_plan_check_overlaps(f->pl);
	return st;
}

cp_status cp_plan_fallback(const cp_image *img, const cp_scan *scan, int serve,
			   const struct cp_standins *standins, struct cp_plan *plan, cp_error *err)
{
	struct planner pl;
	struct fb f;
	cp_status st;
	size_t k;

	cp_plan_start(&pl, img, scan, plan, -1, err);
	memset(&f, 0, sizeof(f));
	f.pl = &pl;
	f.standins = standins;
	f.nthunks = standins && standins->nfunc ? NREDIRECTS : NPLAIN_REDIRECTS;
	st = check_scan(img, scan, standins, err);
	if (st || scan->fallback)
		return st; /* already patched: an empty plan */
	st = cp_plan_refuse_unmapped(img, scan, serve, err);
	if (st)
		return st;
	for (k = 0; k < NREDIRECTS; k++)
		f.need[k] = needed(scan, standins, redirects[k].api);
	st = cp_dis_open(&pl.dis, img, err);
	if (st)
		return st;
	st = cp_plan_blob_check_decoders(&pl);
	if (!st)
		st = find_sites(&f);
	if (!st)
		st = plan_stubs(&f);
	plan->nchanged = f.nsites;
	cp_dis_close(&pl.dis);
	free(f.sites);
	free(f.ctx);
	if (st)
		cp_plan_free(plan);
	return st;
}
