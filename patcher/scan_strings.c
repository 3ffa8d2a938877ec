/*
 * scan_strings.c - literals that hold a mapped module's name.
 *
 * The needles come from the rules: every module name, its path form (the
 * __pyx_f table names "cuda/bindings/cydriver.pxd"), every package prefix
 * that belongs to one layout only (cuda.bindings), and every module's
 * mangled prefix (__pyx_t_4cuda_8bindings_8cydriver_). A match counts when
 * it stands on name boundaries; its enclosing C string becomes a candidate,
 * and so does the needle itself when the linker merged it as the tail of a
 * longer string and code points at the tail.
 */
#include "scan.h"
#include "error.h"

#include <ctype.h>
#include <elf.h>
#include <stdlib.h>
#include <string.h>

enum needle_form { N_MODULE, N_PACKAGE, N_PATH, N_MANGLED };

struct needle {
	char text[512];
	size_t len;
	int layout;
	const char *module; /* rules-owned name */
	enum needle_form form;
};

struct needles {
	struct needle *v;
	size_t n, cap;
};

static bool name_char(int c)
{
	return isalnum(c) || c == '_';
}

static int add_needle(struct needles *ns, const char *text, int layout, const char *module,
		      enum needle_form form)
{
	size_t i, len = strlen(text);

	if (len == 0 || len >= sizeof(ns->v[0].text))
		return 0;
	for (i = 0; i < ns->n; i++)
		if (strcmp(ns->v[i].text, text) == 0)
			return 0;
	if (CP_GROW(ns->v, ns->cap, ns->n + 1))
		return -1;
	memcpy(ns->v[ns->n].text, text, len + 1);
	ns->v[ns->n].len = len;
	ns->v[ns->n].layout = layout;
	ns->v[ns->n].module = module;
	ns->v[ns->n].form = form;
	ns->n++;
	return 0;
}

static int add_packages(struct needles *ns, const cp_rules *r, const char *module)
{
	char pkg[512];
	const char *dot;

	for (dot = strchr(module, '.'); dot; dot = strchr(dot + 1, '.')) {
		size_t n = (size_t)(dot - module);
		int lay;

		if (n >= sizeof(pkg))
			return 0;
		memcpy(pkg, module, n);
		pkg[n] = '\0';
		lay = cp_rules_package_layout(r, pkg);
		if (lay >= 0 && add_needle(ns, pkg, lay, module, N_PACKAGE))
			return -1;
	}
	return 0;
}

static int add_module_needles(struct needles *ns, const cp_rules *r, const char *m, int lay)
{
	char buf[512];
	size_t i;

	if (add_needle(ns, m, lay, m, N_MODULE) || add_packages(ns, r, m))
		return -1;
	snprintf(buf, sizeof(buf), "%s", m);
	for (i = 0; buf[i]; i++)
		if (buf[i] == '.')
			buf[i] = '/';
	if (add_needle(ns, buf, lay, m, N_PATH))
		return -1;
	if (cp_mangle_prefix(m, buf, sizeof(buf)) > 0 && add_needle(ns, buf, lay, m, N_MANGLED))
		return -1;
	return 0;
}

static int build_needles(struct needles *ns, const cp_rules *r)
{
	size_t i;
	int k;

	for (i = 0; i < r->nmod; i++)
		for (k = 0; k < 2; k++)
			if (add_module_needles(ns, r, r->mod[i].name[k], r->mod[i].layout[k]))
				return -1;
	return 0;
}

static bool on_boundary(const struct needle *n, const uint8_t *d, size_t size, size_t pos)
{
	int before = pos ? d[pos - 1] : 0;
	int after = pos + n->len < size ? d[pos + n->len] : 0;

	if (n->form == N_MANGLED)
		return true;
	if (name_char(before) || before == '.' || before == '/')
		return false;
	return !name_char(after);
}

static cp_status add_string(cp_scan *s, const struct cp_section *sec, uint64_t start,
			    uint64_t end, uint64_t at, const struct needle *n, cp_error *err)
{
	struct cp_string *str = cp_scan_string_at(s, sec->addr + start);

	if (str) {
		/* a longer needle at the same place says more (module over package) */
		if (str->needle_at == sec->addr + at && str->package && n->form == N_MODULE) {
			str->module = n->module;
			str->layout = n->layout;
			str->package = false;
			str->exact = start == at && end - start == n->len;
		}
		return CP_OK;
	}
	if (CP_GROW(s->strs, s->capstrs, s->nstrs + 1))
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	str = &s->strs[s->nstrs++];
	memset(str, 0, sizeof(*str));
	str->va = sec->addr + start;
	str->off = sec->offset + start;
	str->len = end - start;
	str->section = sec->name;
	str->layout = n->layout;
	str->module = n->module;
	str->needle_at = sec->addr + at;
	str->exact = start == at && end - start == n->len;
	str->package = n->form == N_PACKAGE;
	str->path_form = n->form == N_PATH;
	str->mangled = n->form == N_MANGLED;
	return CP_OK;
}

/* One match: its enclosing C string, and the needle as a merged tail. */
static cp_status on_match(cp_scan *s, const struct cp_section *sec, const uint8_t *d,
			  size_t pos, const struct needle *n, cp_error *err)
{
	size_t start = pos, end;
	const uint8_t *nul = memchr(d + pos, 0, sec->size - pos);
	size_t first;
	cp_status st;

	if (!nul)
		return CP_OK;
	end = (size_t)(nul - d);
	while (start > 0 && d[start - 1] != 0)
		start--;
	st = add_string(s, sec, start, end, pos, n, err);
	if (st || start == pos || end != pos + n->len || n->form != N_MODULE)
		return st;
	if (cp_scan_xrefs_to(s, sec->addr + pos, &first) == 0)
		return CP_OK;
	return add_string(s, sec, pos, end, pos, n, err);
}

static cp_status scan_section(cp_scan *s, const struct cp_section *sec,
			      const struct needles *ns, cp_error *err)
{
	const uint8_t *d = cp_image_bytes(s->img, sec->offset, sec->size);
	size_t i;

	if (!d)
		return CP_OK;
	for (i = 0; i < ns->n; i++) {
		const struct needle *n = &ns->v[i];
		const uint8_t *p = d;

		while ((p = memmem(p, sec->size - (size_t)(p - d), n->text, n->len)) != NULL) {
			size_t pos = (size_t)(p - d);
			cp_status st;

			p++;
			if (!on_boundary(n, d, sec->size, pos) ||
			    cp_in_blob(s, sec->addr + pos, n->len) ||
			    cp_image_in_fallback(s->img, sec->addr + pos))
				continue;
			st = on_match(s, sec, d, pos, n, err);
			if (st)
				return st;
		}
	}
	return CP_OK;
}

cp_status cp_scan_strings(cp_scan *s, cp_error *err)
{
	struct needles ns = { NULL, 0, 0 };
	cp_status st = CP_OK;
	size_t i;

	if (build_needles(&ns, s->rules)) {
		free(ns.v);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	}
	for (i = 0; !st && i < s->img->nsec; i++) {
		const struct cp_section *sec = &s->img->sec[i];

		if ((sec->flags & SHF_ALLOC) && !(sec->flags & SHF_EXECINSTR) &&
		    sec->type == SHT_PROGBITS)
			st = scan_section(s, sec, &ns, err);
	}
	free(ns.v);
	return st;
}

int cp_scan_name_layout(const cp_scan *s, const char *v, const char **module)
{
	const cp_rules *r = s->rules;
	size_t i;
	int k, lay;

	for (i = 0; i < r->nmod; i++)
		for (k = 0; k < 2; k++)
			if (strcmp(r->mod[i].name[k], v) == 0) {
				*module = r->mod[i].name[k];
				return r->mod[i].layout[k];
			}
	lay = cp_rules_package_layout(r, v);
	if (lay >= 0)
		*module = v;
	return lay;
}

int cp_scan_signature_layout(const cp_scan *s, const char *sig, const char **module)
{
	const cp_rules *r = s->rules;
	char buf[512];
	size_t i;
	int k;

	for (i = 0; i < r->nmod; i++)
		for (k = 0; k < 2; k++)
			if (cp_mangle_prefix(r->mod[i].name[k], buf, sizeof(buf)) > 0 &&
			    strstr(sig, buf)) {
				*module = r->mod[i].name[k];
				return r->mod[i].layout[k];
			}
	return -1;
}
