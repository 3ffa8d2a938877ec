/*
 * fallback_stub.c - the code cypatch injects into a fallback-patched
 * extension (docs/fallback.md).
 *
 * It is compiled at cypatch's build time into one position-independent,
 * relocation-free blob (stub.ld, embed_stub.cmake) and copied into the
 * extension as it is. It runs inside CPython, so it includes no header but
 * the context's: the few facts of CPython's ABI it relies on are below, and
 * tests/unit/test_stub_abi.c checks them against Python.h.
 *
 * Each entry is reached from a thunk that cypatch writes,
 *     lea <next argument register>, [rip + context]; jmp entry
 * so each takes the redirected function's arguments plus the context.
 * Python API calls go through the extension's own GOT slots.
 */
#include <stddef.h>
#include <stdint.h>
#include "fallback_abi.h"

/* CPython's object header (3.9 to 3.13, default builds). */
typedef struct object {
	intptr_t refcnt;
	struct object *type;
} object;

#define TP_CALL_OFFSET 128    /* offsetof(PyTypeObject, tp_call) */
#define TP_GETATTRO_OFFSET 144 /* offsetof(PyTypeObject, tp_getattro) */
#define TP_FLAGS_OFFSET 168   /* offsetof(PyTypeObject, tp_flags) */
#define LIST_SUBCLASS (1ul << 25)  /* Py_TPFLAGS_LIST_SUBCLASS */
#define TUPLE_SUBCLASS (1ul << 26) /* Py_TPFLAGS_TUPLE_SUBCLASS */
#define SIZE_OFFSET 16        /* offsetof(PyVarObject, ob_size) */
#define TUPLE_ITEMS_OFFSET 24 /* offsetof(PyTupleObject, ob_item) */
#define LIST_ITEMS_OFFSET 24  /* offsetof(PyListObject, ob_item) */

typedef object *(*ternary_fn)(object *, object *, object *);
typedef object *(*binary_fn)(object *, object *);
typedef object *(*import_fn)(const char *);
typedef object *(*level_fn)(object *, object *, object *, object *, int);
typedef int (*isvalid_fn)(object *, const char *);
typedef void *(*getpointer_fn)(object *, const char *);
typedef const char *(*getname_fn)(object *);
typedef void (*void_fn)(void);
typedef int (*matches_fn)(object *);
typedef object *(*getattr_fn)(object *, const char *);
typedef object *(*unicode_fn)(const char *, intptr_t);
typedef object *(*tuple_fn)(intptr_t);
typedef object *(*dict_fn)(void);
typedef object *(*getitem_fn)(object *, const char *);
typedef int (*getitemref_fn)(object *, const char *, object **);
typedef int (*setitem_fn)(object *, object *, object *);
typedef void (*dealloc_fn)(object *);

typedef const struct cp_fb_ctx ctx_t;

/* The function (or, for data, the variable's address) in slot i. */
static void *api(ctx_t *c, int i)
{
	return *(void *const *)((const char *)c + c->api[i]);
}

static const char *str(ctx_t *c, uint32_t off)
{
	return (const char *)c + off;
}

static uint32_t word(ctx_t *c, uint32_t off, uint32_t i)
{
	return ((const uint32_t *)((const char *)c + off))[i];
}

static intptr_t length(const char *s)
{
	intptr_t n = 0;

	while (s[n])
		n++;
	return n;
}

static int same(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

static int starts(const char *s, const char *prefix)
{
	while (*prefix && *s == *prefix)
		s++, prefix++;
	return !*prefix;
}

/* Py_INCREF / Py_DECREF; immortal objects (3.12+) have a negative low word. */
static void incref(object *o)
{
	if ((int32_t)o->refcnt >= 0)
		o->refcnt++;
}

static void decref(ctx_t *c, object *o)
{
	if (!o || (int32_t)o->refcnt < 0)
		return;
	if (--o->refcnt == 0)
		((dealloc_fn)api(c, CP_FB_DEALLOC))(o);
}

static object *call(object *f, object *args)
{
	ternary_fn fn = *(ternary_fn *)((char *)f->type + TP_CALL_OFFSET);

	return fn ? fn(f, args, NULL) : NULL;
}

/* A new tuple of n references (stolen; NULL items fail the whole). */
static object *tuple(ctx_t *c, int n, object **items)
{
	object *t = ((tuple_fn)api(c, CP_FB_TUPLE_NEW))(n);
	int i, ok = t != NULL;

	for (i = 0; i < n; i++) {
		ok = ok && items[i];
		if (t && items[i])
			((object **)((char *)t + TUPLE_ITEMS_OFFSET))[i] = items[i];
		else
			decref(c, items[i]);
	}
	if (!ok) {
		decref(c, t);
		return NULL;
	}
	return t;
}

static object *text(ctx_t *c, const char *s)
{
	return ((unicode_fn)api(c, CP_FB_UNICODE))(s, length(s));
}

/* Runs the helper's source in a fresh namespace and calls fn(*args). */
static object *helper(ctx_t *c, const char *fn, object *args)
{
	object *builtins, *exec, *ns, *r = NULL, *f, *a[2];

	if (!args)
		return NULL;
	/* sys.modules["builtins"], borrowed: every Cython build imports both
	 * functions (PyImport_AddModule became PyImport_AddModuleRef in 3.13) */
	builtins = ((dict_fn)api(c, CP_FB_MODULE_DICT))();
	builtins = builtins ? ((getitem_fn)api(c, CP_FB_DICT_GETITEMSTRING))(builtins, "builtins") : NULL;
	exec = builtins ? ((getattr_fn)api(c, CP_FB_GETATTRSTRING))(builtins, "exec") : NULL;
	ns = exec ? ((dict_fn)api(c, CP_FB_DICT_NEW))() : NULL;
	if (ns) {
		a[0] = ((unicode_fn)api(c, CP_FB_UNICODE))(str(c, c->src_off), c->src_len);
		a[1] = ns;
		incref(ns);
		r = call(exec, tuple(c, 2, a));
	}
	if (r) {
		decref(c, r);
		f = ((getitem_fn)api(c, CP_FB_DICT_GETITEMSTRING))(ns, fn);
		r = f ? call(f, args) : NULL;
	}
	decref(c, ns);
	decref(c, exec);
	decref(c, args);
	return r;
}

/* The other layout's name for a module name, or NULL when unmapped. */
static const char *mapped(ctx_t *c, const char *name)
{
	uint32_t i;

	for (i = 0; i < c->nmod; i++)
		if (same(name, str(c, word(c, c->mod_off, 2 * i))))
			return str(c, word(c, c->mod_off, 2 * i + 1));
	return NULL;
}

/* Whether name is one of the n strings whose offsets are at off. */
static int listed(ctx_t *c, const char *name, uint32_t n, uint32_t off)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (same(name, str(c, word(c, off, i))))
			return 1;
	return 0;
}

/* Whether the pending error is an ImportError; cleared when it is. */
static int clear_import_error(ctx_t *c)
{
	if (!((matches_fn)api(c, CP_FB_ERR_MATCHES))(*(object **)api(c, CP_FB_EXC_IMPORTERROR)))
		return 0;
	((void_fn)api(c, CP_FB_ERR_CLEAR))();
	return 1;
}

/* PyImport_ImportModule: the built name first, then the other layout's;
 * a cimported module that may be stood in for, when neither imports, is
 * the helper's empty one (its functions are then stood in for). */
object *cp_fb_import_module(const char *name, ctx_t *c)
{
	object *m, *a[2];
	const char *alt = mapped(c, name);
	int stand = listed(c, name, c->nstmod, c->stmod_off);

	m = ((import_fn)api(c, CP_FB_IMPORT_MODULE))(name);
	if (m || (!alt && !stand) || !clear_import_error(c))
		return m;
	if (alt) {
		a[0] = text(c, name);
		a[1] = text(c, alt);
		m = helper(c, "module", tuple(c, 2, a));
		if (m || !stand || !clear_import_error(c))
			return m;
	}
	a[0] = text(c, name);
	return helper(c, "standin", tuple(c, 1, a));
}

/* Whether a Python-level import name concerns the mapped modules. The name
 * is a str object; a one-entry dict compares it without reading its bytes. */
static int related(ctx_t *c, object *name, int *failed)
{
	object *d = ((dict_fn)api(c, CP_FB_DICT_NEW))();
	uint32_t i;
	int found = 0;

	*failed = !d || ((setitem_fn)api(c, CP_FB_DICT_SETITEM))(d, name, name) < 0;
	for (i = 0; !*failed && !found && i < c->nrel; i++)
		found = ((getitem_fn)api(c, CP_FB_DICT_GETITEMSTRING))(d, str(c, word(c, c->rel_off, i))) != NULL;
	decref(c, d);
	return found;
}

/* Whether module m has every name of fromlist (a tuple or a list of str),
 * as __import__ leaves it: the fast path's answer. */
static int has_all(ctx_t *c, object *m, object *fromlist)
{
	unsigned long flags;
	object **items, *a;
	intptr_t i, n;

	if (!fromlist)
		return 1;
	flags = *(unsigned long *)((char *)fromlist->type + TP_FLAGS_OFFSET);
	if (!(flags & (LIST_SUBCLASS | TUPLE_SUBCLASS)))
		return 1; /* None: `import a.b.c` */
	n = *(intptr_t *)((char *)fromlist + SIZE_OFFSET);
	items = flags & TUPLE_SUBCLASS ? (object **)((char *)fromlist + TUPLE_ITEMS_OFFSET)
				       : *(object ***)((char *)fromlist + LIST_ITEMS_OFFSET);
	for (i = 0; i < n; i++) {
		binary_fn get = *(binary_fn *)((char *)m->type + TP_GETATTRO_OFFSET);

		a = get ? get(m, items[i]) : NULL;
		if (!a) {
			((void_fn)api(c, CP_FB_ERR_CLEAR))();
			return 0;
		}
		decref(c, a);
	}
	return 1;
}

/* PyImport_ImportModuleLevelObject: absolute imports of mapped names try
 * the real import first; the helper decides when it fails or leaves a
 * name of the fromlist missing. Everything else goes straight through. */
object *cp_fb_import_level(object *name, object *globals, object *locals, object *fromlist, int level,
			   ctx_t *c)
{
	level_fn real = (level_fn)api(c, CP_FB_IMPORT_LEVEL);
	object *m, *a[2];
	int failed = 0, n = 1;

	if (level != 0 || !related(c, name, &failed))
		return failed ? NULL : real(name, globals, locals, fromlist, level);
	m = real(name, globals, locals, fromlist, level);
	if (m && has_all(c, m, fromlist))
		return m;
	if (!m && !clear_import_error(c))
		return NULL;
	if (m)
		decref(c, m);
	incref(name);
	a[0] = name;
	if (fromlist) {
		incref(fromlist);
		a[n++] = fromlist;
	}
	return helper(c, "level", tuple(c, n, a));
}

/* At a and b, the two prefixes of one mapped pair (either way round):
 * steps over both. */
static int skip_pair(ctx_t *c, const char **a, const char **b)
{
	uint32_t i;

	for (i = 0; i < 2 * c->nmangle; i++) {
		const char *p = str(c, word(c, c->mangle_off, i));
		const char *q = str(c, word(c, c->mangle_off, i ^ 1));

		if (starts(*a, p) && starts(*b, q)) {
			*a += length(p);
			*b += length(q);
			return 1;
		}
	}
	return 0;
}

/* Signatures equal once each mapped prefix pair counts as equal. */
static int equivalent(ctx_t *c, const char *a, const char *b)
{
	while (*a || *b) {
		if (skip_pair(c, &a, &b))
			continue;
		if (*a != *b)
			return 0;
		a++, b++;
	}
	return 1;
}

/* The capsule's own name when it matches sig up to the mapped prefixes. */
static const char *equivalent_name(ctx_t *c, object *cap, const char *sig)
{
	const char *n;

	if (!sig || ((isvalid_fn)api(c, CP_FB_CAPSULE_ISVALID))(cap, sig))
		return NULL;
	n = ((getname_fn)api(c, CP_FB_CAPSULE_GETNAME))(cap);
	if (!n) {
		((void_fn)api(c, CP_FB_ERR_CLEAR))();
		return NULL;
	}
	return equivalent(c, n, sig) ? n : NULL;
}

/*
 * Stand-ins. A cimported function listed in the context that the module's
 * __pyx_capi__ lacks is looked up as a sentinel, PyExc_ImportError's class
 * object (a borrowed, never freed object no capsule check is ever given);
 * the capsule checks that follow take the sentinel as a capsule of the
 * stand-in for the signature's return type. Nothing else is answered.
 */
static object *sentinel(ctx_t *c)
{
	return *(object **)api(c, CP_FB_EXC_IMPORTERROR);
}

/* The stand-in for a function of signature sig, or NULL. */
static void *standin(ctx_t *c, const char *sig)
{
	const struct cp_fb_standin *e = (const struct cp_fb_standin *)((const char *)c + c->ret_off);
	uint32_t i;

	for (i = 0; sig && i < c->nret; i++)
		if (starts(sig, str(c, e[i].type_off)) && starts(sig + length(str(c, e[i].type_off)), " ("))
			return (char *)c + e[i].code;
	return NULL;
}

object *cp_fb_dict_getitemstring(object *d, const char *key, ctx_t *c)
{
	object *v = ((getitem_fn)api(c, CP_FB_DICT_GETITEMSTRING))(d, key);

	return v || !listed(c, key, c->nstand, c->stand_off) ? v : sentinel(c);
}

int cp_fb_dict_getitemstringref(object *d, const char *key, object **out, ctx_t *c)
{
	int r = ((getitemref_fn)api(c, CP_FB_DICT_GETITEMSTRINGREF))(d, key, out);

	if (r != 0 || !listed(c, key, c->nstand, c->stand_off))
		return r;
	*out = sentinel(c);
	incref(*out);
	return 1;
}

int cp_fb_capsule_isvalid(object *cap, const char *sig, ctx_t *c)
{
	if (cap == sentinel(c))
		return standin(c, sig) != NULL;
	return ((isvalid_fn)api(c, CP_FB_CAPSULE_ISVALID))(cap, sig) || equivalent_name(c, cap, sig);
}

void *cp_fb_capsule_getpointer(object *cap, const char *sig, ctx_t *c)
{
	const char *n;

	if (cap == sentinel(c) && standin(c, sig))
		return standin(c, sig);
	n = equivalent_name(c, cap, sig);
	return ((getpointer_fn)api(c, CP_FB_CAPSULE_GETPOINTER))(cap, n ? n : sig);
}
