/*
 * scan_names.c - `from P import N` where P.N is a mapped module.
 *
 * `from cuda import cuda` leaves only the names "cuda" and "cuda" in the
 * binary, neither of which names a layout; the pair does. The module's
 * Python-level names are its string table (0.29 and 3.1: pointer and length
 * entries behind relocations; 3.0: built in code from literals; 3.2+: the
 * blob's str entries). A mapped module P.N whose parts are both names, and
 * which is not itself a name (then it is an import of its own), is reported.
 * When P and N are the same string (`from cuda import cuda`), the name alone
 * also fits `import cuda.x` (which binds "cuda"): that case is reported only
 * when no name and no other from-import begins with "P.", and a module doing
 * `from cuda import cuda, cudart` shows only the second.
 */
#include "scan.h"
#include "error.h"
#include "names.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>

struct pyname {
	const char *value;  /* borrowed: file bytes or blob data, NUL-free */
	size_t len;
	struct cp_loc loc;
	struct cp_site site;
};

struct names {
	struct pyname *v;
	size_t n, cap;
};

static int push(struct names *ns, const char *v, size_t len, const struct cp_loc *loc,
		const struct cp_site *site)
{
	if (!cp_is_dotted_name(v, len))
		return 0;
	if (CP_GROW(ns->v, ns->cap, ns->n + 1))
		return -1;
	ns->v[ns->n].value = v;
	ns->v[ns->n].len = len;
	ns->v[ns->n].loc = *loc;
	ns->v[ns->n].site = *site;
	ns->n++;
	return 0;
}

static int literal_name(cp_scan *s, struct names *ns, uint64_t va, const struct cp_site *site)
{
	const struct cp_section *sec = cp_image_section_at(s->img, va);
	const char *p = cp_image_cstring(s->img, va, 4096);
	struct cp_loc loc = { -1, NULL, va, 0, 0 };

	if (!p || !sec || !cp_section_is_rodata(sec))
		return 0;
	loc.section = sec->name;
	loc.offset = sec->offset + (va - sec->addr);
	loc.length = strlen(p);
	return push(ns, p, loc.length, &loc, site);
}

/* 0.29 and 3.1: table entries (pointer, then the length with the NUL). */
static int table_names(cp_scan *s, struct names *ns)
{
	size_t i;

	for (i = 0; i < s->img->nrel; i++) {
		const struct cp_reloc *r = &s->img->rel[i];
		const char *p;
		struct cp_site site;

		memset(&site, 0, sizeof(site));
		if (r->type != R_X86_64_RELATIVE || !(p = cp_image_cstring(s->img, (uint64_t)r->addend, 4096)) ||
		    !cp_scan_table_length(s, s->img, r->offset, strlen(p), &site.len_addr))
			continue;
		site.kind = CP_SITE_TABLE;
		site.addr = r->offset;
		snprintf(site.text, sizeof(site.text), "R_X86_64_RELATIVE at %#llx (string table entry, length follows)",
			 (unsigned long long)r->offset);
		if (literal_name(s, ns, (uint64_t)r->addend, &site))
			return -1;
	}
	return 0;
}

/* 3.0 builds its table in code: every literal code loads is a candidate. */
static int code_names(cp_scan *s, struct names *ns)
{
	size_t i;

	for (i = 0; i < s->nxrefs; i++) {
		struct cp_site site;

		if (i && s->xrefs[i].target == s->xrefs[i - 1].target)
			continue;
		cp_scan_code_site(s, s->xrefs[i].addr, &site);
		if (literal_name(s, ns, s->xrefs[i].target, &site))
			return -1;
	}
	return 0;
}

static int blob_names(cp_scan *s, struct names *ns)
{
	size_t b, k;

	for (b = 0; b < s->nblobs; b++) {
		const struct cp_blob *bl = &s->blobs[b];

		for (k = 0; k < bl->nstr; k++) {
			const struct cp_blob_entry *e = &bl->entry[k];
			struct cp_loc loc = { (int)b, bl->section, 0, e->offset, e->length };
			struct cp_site site;

			memset(&site, 0, sizeof(site));
			site.kind = CP_SITE_INDEX;
			site.addr = e->cell_insn;
			snprintf(site.text, sizeof(site.text), "length index entry %zu", k);
			if (push(ns, (const char *)bl->data + e->offset, e->length, &loc, &site))
				return -1;
		}
	}
	return 0;
}

static const struct pyname *find(const struct names *ns, const char *v, size_t len)
{
	size_t i;

	for (i = 0; i < ns->n; i++)
		if (ns->v[i].len == len && !memcmp(ns->v[i].value, v, len))
			return &ns->v[i];
	return NULL;
}

/* Some name, or some reported from-import, begins with "pkg.". */
static bool prefix_used(const cp_scan *s, const struct names *ns, const char *pkg, size_t len)
{
	size_t i;

	for (i = 0; i < ns->n; i++)
		if (ns->v[i].len > len && ns->v[i].value[len] == '.' && !memcmp(ns->v[i].value, pkg, len))
			return true;
	for (i = 0; i < s->nrefs; i++)
		if (s->refs[i].kind == CP_K_FROMIMPORT && strlen(s->refs[i].package) == len &&
		    !memcmp(s->refs[i].package, pkg, len))
			return true;
	return false;
}

static cp_status report(cp_scan *s, const struct names *ns, const char *m, int layout,
			bool same, cp_error *err)
{
	const char *dot = strrchr(m, '.');
	const struct pyname *pkg, *name;
	struct cp_ref *r;

	if (!dot || find(ns, m, strlen(m)) || !(pkg = find(ns, m, (size_t)(dot - m))) ||
	    !(name = find(ns, dot + 1, strlen(dot + 1))))
		return CP_OK;
	if ((pkg == name) != same || (same && prefix_used(s, ns, pkg->value, pkg->len)))
		return CP_OK;
	r = cp_scan_add_ref(s, CP_K_FROMIMPORT, err);
	if (!r)
		return err->code;
	r->layout = layout;
	r->module = strdup(m);
	r->value = strdup(m);
	r->name = cp_strndup(name->value, name->len);
	r->package = cp_strndup(pkg->value, pkg->len);
	r->loc = name->loc;
	r->package_loc = pkg->loc;
	r->same_string = pkg == name;
	if (!r->module || !r->value || !r->name || !r->package)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	if (cp_ref_add_site(r, &name->site, err))
		return err->code;
	return cp_ref_add_site(r, &pkg->site, err);
}

cp_status cp_scan_from_imports(cp_scan *s, cp_error *err)
{
	struct names ns = { NULL, 0, 0 };
	cp_status st = CP_OK;
	size_t i;
	int k, rc, pass;

	if (s->cy_major == 3 && s->cy_minor >= 2)
		rc = blob_names(s, &ns);
	else if (s->cy_major == 3 && s->cy_minor == 0)
		rc = code_names(s, &ns);
	else
		rc = table_names(s, &ns);
	if (rc) {
		free(ns.v);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	}
	s->pynames = calloc(ns.n ? ns.n : 1, sizeof(char *));
	for (i = 0; s->pynames && i < ns.n; i++)
		if ((s->pynames[s->npynames] = cp_strndup(ns.v[i].value, ns.v[i].len)) != NULL)
			s->npynames++;
	if (!s->pynames) {
		free(ns.v);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	}
	for (pass = 0; pass < 2; pass++)
		for (i = 0; !st && i < s->rules->nmod; i++)
			for (k = 0; !st && k < 2; k++)
				st = report(s, &ns, s->rules->mod[i].name[k], s->rules->mod[i].layout[k],
					    pass == 1, err);
	free(ns.v);
	return st;
}

bool cp_scan_from_candidate(const cp_scan *s, const char *module, size_t *pkglen)
{
	const char *dot = strrchr(module, '.');

	if (!dot || !cp_scan_has_pyname(s, module, (size_t)(dot - module)) ||
	    !cp_scan_has_pyname(s, dot + 1, strlen(dot + 1)))
		return false;
	*pkglen = (size_t)(dot - module);
	return true;
}

bool cp_scan_has_pyname(const cp_scan *s, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < s->npynames; i++)
		if (strlen(s->pynames[i]) == len && !memcmp(s->pynames[i], name, len))
			return true;
	return false;
}
