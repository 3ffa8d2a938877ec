/*
 * fallback_abi.h - the contract between cypatch and the fallback stub it
 * injects (fallback_stub.c): the read-only context the stub reads.
 *
 * cypatch writes one context per patched extension into new read-only
 * space. Every entry thunk passes its address to the stub as an extra
 * argument, so the stub needs no relocation and no writable memory. Offsets
 * are from the context's own address; strings are NUL-terminated.
 */
#ifndef CP_FALLBACK_ABI_H
#define CP_FALLBACK_ABI_H

#include <stdint.h>

#define CP_FB_MAGIC "cypatch-fallback"  /* 16 bytes, no NUL in the context */
#define CP_FB_VERSION 2

/* The CPython API the stub calls, through the extension's own GOT slots. */
enum cp_fb_api {
	CP_FB_IMPORT_MODULE,       /* PyImport_ImportModule (redirected) */
	CP_FB_IMPORT_LEVEL,        /* PyImport_ImportModuleLevelObject (redirected) */
	CP_FB_CAPSULE_ISVALID,     /* PyCapsule_IsValid (redirected) */
	CP_FB_CAPSULE_GETPOINTER,  /* PyCapsule_GetPointer (redirected) */
	CP_FB_DICT_GETITEMSTRING,  /* PyDict_GetItemString (redirected with stand-ins;
				    * the stub calls it too) */
	CP_FB_DICT_GETITEMSTRINGREF, /* PyDict_GetItemStringRef (redirected with stand-ins) */
	CP_FB_CAPSULE_GETNAME,     /* PyCapsule_GetName */
	CP_FB_ERR_CLEAR,           /* PyErr_Clear */
	CP_FB_ERR_MATCHES,         /* PyErr_ExceptionMatches */
	CP_FB_EXC_IMPORTERROR,     /* PyExc_ImportError (data: the slot holds &PyExc_ImportError) */
	CP_FB_MODULE_DICT,         /* PyImport_GetModuleDict */
	CP_FB_GETATTRSTRING,       /* PyObject_GetAttrString */
	CP_FB_UNICODE,             /* PyUnicode_FromStringAndSize */
	CP_FB_TUPLE_NEW,           /* PyTuple_New */
	CP_FB_DICT_NEW,            /* PyDict_New */
	CP_FB_DICT_SETITEM,        /* PyDict_SetItem */
	CP_FB_DEALLOC,             /* _Py_Dealloc */
	CP_FB_NAPI
};

/* The first CP_FB_NTHUNKS functions above are the redirected ones. */
#define CP_FB_NTHUNKS 6

struct cp_fb_ctx {
	char magic[16];
	uint32_t version;
	uint32_t size;                 /* bytes of context, strings included */
	int64_t api[CP_FB_NAPI];       /* GOT slot address minus context address; 0: absent */
	int64_t thunk[CP_FB_NTHUNKS];  /* entry thunk of api[i] minus context address (cypatch reads it) */
	uint32_t nmod, mod_off;        /* {built name, other name} uint32 offset pairs */
	uint32_t nrel, rel_off;        /* names whose Python-level imports go to the helper */
	uint32_t nmangle, mangle_off;  /* {prefix, prefix} pairs equal in capsule signatures */
	uint32_t src_off, src_len;     /* the helper's Python source */
	uint32_t built_off, other_off; /* layout names, for `cypatch show` */
	uint32_t ext_off;              /* the extension's module name */
	/* Stand-ins (--tolerate-missing, docs/tolerate.md): the cimported
	 * functions and modules an installed release may lack, and per return
	 * type the code that returns its error. */
	uint32_t nstand, stand_off;    /* function names, uint32 offsets */
	uint32_t nstmod, stmod_off;    /* module names, uint32 offsets */
	uint32_t nret, ret_off;        /* struct cp_fb_standin entries */
};

/* A return type ("CUresult", matched with the " (" after it against a
 * capsule signature) and the stand-in that returns its error. */
struct cp_fb_standin {
	uint32_t type_off;
	uint32_t reserved;
	int64_t code;                  /* its address minus the context's */
};

#endif
