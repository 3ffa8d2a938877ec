/*
 * rules.c - the rules loader.
 *
 * The format (docs/rules.md) is INI, read by libinih. inih reports no line
 * numbers to handlers in Debian's build, so the reader below counts the lines
 * it hands over; inih calls the handler right after reading each line.
 */
#include "rules/rules.h"
#include "util/error.h"
#include "util/names.h"

#include <errno.h>
#include <ini.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct load_ctx {
	cp_rules *rules;
	const char *file;   /* owned by rules->files */
	const char *text;   /* for cp_rules_load_string, else NULL */
	size_t pos;
	FILE *fp;
	int line;
	int too_long; /* the line that does not fit inih's buffer, or 0 */
	cp_error *err;
	cp_status status;
};

cp_rules *cp_rules_new(void)
{
	return calloc(1, sizeof(cp_rules));
}

void cp_rules_free(cp_rules *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nlayout; i++)
		free(r->layout[i]);
	for (i = 0; i < r->nmod; i++) {
		free(r->mod[i].name[0]);
		free(r->mod[i].name[1]);
	}
	for (i = 0; i < r->nmangle; i++) {
		free(r->mangle[i].prefix[0]);
		free(r->mangle[i].prefix[1]);
	}
	for (i = 0; i < r->nerrval; i++)
		free(r->errval[i].type);
	free(r->errval);
	for (i = 0; i < r->nfiles; i++)
		free(r->files[i]);
	for (i = 0; i < r->npkg; i++)
		free(r->pkg[i].name);
	free(r->pkg);
	free(r->pkg_slot);
	free(r->name_slot);
	free(r->mangle_slot);
	free(r->mod);
	free(r->mangle);
	free(r->files);
	free(r);
}

int cp_rules_layout_index(const cp_rules *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->nlayout; i++)
		if (strcmp(r->layout[i], name) == 0)
			return (int)i;
	return -1;
}

static const char *slot_name(const cp_rules *r, size_t v)
{
	return r->mod[(v - 1) / 2].name[(v - 1) % 2];
}

/* The name table's slot of name: the one holding it, or the free one
 * where it would go. */
static size_t *name_slot(const cp_rules *r, const char *name)
{
	size_t i = cp_name_hash(name, strlen(name)) & (r->nname_slot - 1);

	while (r->name_slot[i] && strcmp(slot_name(r, r->name_slot[i]), name) != 0)
		i = (i + 1) & (r->nname_slot - 1);
	return &r->name_slot[i];
}

/* Module m and side k, or -1 when no module has that name. */
static long find_name(const cp_rules *r, const char *name, int *k)
{
	size_t v;

	if (!r->nname_slot)
		return -1;
	v = *name_slot(r, name);
	if (!v)
		return -1;
	*k = (int)((v - 1) % 2);
	return (long)((v - 1) / 2);
}

static size_t *pkg_slot(const cp_rules *r, const char *name, size_t len)
{
	size_t i = cp_name_hash(name, len) & (r->npkg_slot - 1);

	while (r->pkg_slot[i] && (strncmp(r->pkg[r->pkg_slot[i] - 1].name, name, len) != 0 ||
				  r->pkg[r->pkg_slot[i] - 1].name[len] != '\0'))
		i = (i + 1) & (r->npkg_slot - 1);
	return &r->pkg_slot[i];
}

/* Doubles a table of slots (values v + 1, 0 free) to keep it at most half
 * full after `want` entries; `rehash` gives a value's new slot. */
static int grow_slots(cp_rules *r, size_t **slot, size_t *nslot, size_t want,
		      size_t *(*rehash)(const cp_rules *, size_t))
{
	size_t *old = *slot, nold = *nslot, i;

	if (2 * want <= nold)
		return 0;
	*nslot = nold ? 2 * nold : 64;
	*slot = calloc(*nslot, sizeof(**slot));
	if (!*slot) {
		*slot = old;
		*nslot = nold;
		return -1;
	}
	for (i = 0; i < nold; i++)
		if (old[i])
			*rehash(r, old[i]) = old[i];
	free(old);
	return 0;
}

static size_t *rehash_name(const cp_rules *r, size_t v)
{
	return name_slot(r, slot_name(r, v));
}

static size_t *rehash_pkg(const cp_rules *r, size_t v)
{
	const char *n = r->pkg[v - 1].name;

	return pkg_slot(r, n, strlen(n));
}

/* Indexes module m's names, and the packages above them. */
static int index_module(cp_rules *r, size_t m)
{
	int k;

	if (grow_slots(r, &r->name_slot, &r->nname_slot, 2 * (m + 1), rehash_name))
		return -1;
	for (k = 0; k < 2; k++) {
		const char *name = r->mod[m].name[k], *dot;

		*name_slot(r, name) = 2 * m + (size_t)k + 1;
		for (dot = strchr(name, '.'); dot; dot = strchr(dot + 1, '.')) {
			size_t len = (size_t)(dot - name), *slot;

			if (grow_slots(r, &r->pkg_slot, &r->npkg_slot, r->npkg + 1, rehash_pkg))
				return -1;
			slot = pkg_slot(r, name, len);
			if (*slot) {
				struct cp_package *p = &r->pkg[*slot - 1];

				if (p->layout != r->mod[m].layout[k])
					p->layout = -1;
				continue;
			}
			if (CP_GROW(r->pkg, r->cappkg, r->npkg + 1))
				return -1;
			r->pkg[r->npkg].name = strndup(name, len);
			if (!r->pkg[r->npkg].name)
				return -1;
			r->pkg[r->npkg].layout = r->mod[m].layout[k];
			*slot = ++r->npkg;
		}
	}
	return 0;
}

int cp_rules_module_layout(const cp_rules *r, const char *module)
{
	int k;
	long m = find_name(r, module, &k);

	return m < 0 ? -1 : r->mod[m].layout[k];
}

const char *cp_rules_map(const cp_rules *r, const char *module, int target)
{
	int k;
	long m = find_name(r, module, &k);

	return m >= 0 && r->mod[m].layout[!k] == target ? r->mod[m].name[!k] : NULL;
}

int cp_rules_package_layout(const cp_rules *r, const char *pkg)
{
	int k;
	size_t v;

	if (find_name(r, pkg, &k) >= 0 || !r->npkg_slot)
		return -1; /* a module itself, not only a package */
	v = *pkg_slot(r, pkg, strlen(pkg));
	/* -1 also when shared by two layouts: it says nothing */
	return v ? r->pkg[v - 1].layout : -1;
}

int cp_mangle_prefix(const char *module, char *buf, size_t size)
{
	size_t used = 0;
	const char *p = module;
	int n;

	n = snprintf(buf, size, "__pyx_t_");
	if (n < 0 || (size_t)n >= size)
		return -1;
	used = (size_t)n;
	while (*p) {
		size_t len = strcspn(p, ".");

		n = snprintf(buf + used, size - used, "%zu%.*s_", len, (int)len, p);
		if (n < 0 || (size_t)n >= size - used)
			return -1;
		used += (size_t)n;
		p += len;
		if (*p == '.')
			p++;
	}
	return (int)used;
}

static int is_dotted_name(const char *s)
{
	return cp_is_dotted_name(s, strlen(s));
}

static int is_identifier(const char *s)
{
	return cp_is_identifier(s, strlen(s));
}

static int fail_at(struct load_ctx *c, const char *fmt, const char *arg)
{
	char what[400];

	if (c->status != CP_OK)
		return 0; /* keep the first error */
	snprintf(what, sizeof(what), fmt, arg);
	c->status = cp_fail(c->err, CP_E_RULES, "%s:%d: %s", c->file, c->line, what);
	return 0;
}

static int add_layout(struct load_ctx *c, const char *name)
{
	cp_rules *r = c->rules;

	if (!is_identifier(name))
		return fail_at(c, "layout name '%s' is not an identifier", name);
	if (cp_rules_layout_index(r, name) >= 0)
		return 1; /* several files may declare the same layouts */
	if (r->nlayout == CP_MAX_LAYOUTS)
		return fail_at(c, "more than %s layouts", "8");
	r->layout[r->nlayout] = strdup(name);
	if (!r->layout[r->nlayout])
		return fail_at(c, "%s", "out of memory");
	r->nlayout++;
	return 1;
}

/* Parses "modules A B" / "mangled A B" into the two layout indexes. */
static int section_layouts(struct load_ctx *c, const char *section,
			   const char *kind, int lay[2])
{
	char a[64], b[64], extra[8];
	size_t klen = strlen(kind);

	if (strncmp(section, kind, klen) != 0 || section[klen] != ' ')
		return 0;
	if (sscanf(section + klen, " %63s %63s %7s", a, b, extra) != 2)
		return fail_at(c, "section [%s] must name exactly two layouts", section);
	lay[0] = cp_rules_layout_index(c->rules, a);
	lay[1] = cp_rules_layout_index(c->rules, b);
	if (lay[0] < 0)
		return fail_at(c, "layout '%s' is not declared in [layouts]", a);
	if (lay[1] < 0)
		return fail_at(c, "layout '%s' is not declared in [layouts]", b);
	if (lay[0] == lay[1])
		return fail_at(c, "section [%s] maps a layout onto itself", section);
	return 1;
}

/* Refuses a module that is already mapped, on either side (duplicates and
 * chains a -> b -> c, which includes cycles a -> b -> a). */
static int check_module_unmapped(struct load_ctx *c, const char *name)
{
	const cp_rules *r = c->rules;
	char what[400];
	int k;
	long i = find_name(r, name, &k);

	if (i < 0)
		return 1;
	snprintf(what, sizeof(what),
		 "module '%s' is already mapped at %s:%d (a module may be mapped once; "
		 "mapping it again would make a duplicate, a chain or a cycle)",
		 name, r->mod[i].file, r->mod[i].line);
	return fail_at(c, "%s", what);
}

static int add_module(struct load_ctx *c, const int lay[2], const char *a, const char *b)
{
	cp_rules *r = c->rules;
	struct cp_module_pair *m;

	if (!is_dotted_name(a))
		return fail_at(c, "'%s' is not a dotted module name", a);
	if (!is_dotted_name(b))
		return fail_at(c, "'%s' is not a dotted module name", b);
	if (strcmp(a, b) == 0)
		return fail_at(c, "module '%s' is mapped onto itself", a);
	if (!check_module_unmapped(c, a) || !check_module_unmapped(c, b))
		return 0;
	if (CP_GROW(r->mod, r->capmod, r->nmod + 1))
		return fail_at(c, "%s", "out of memory");
	m = &r->mod[r->nmod];
	m->name[0] = strdup(a);
	m->name[1] = strdup(b);
	if (!m->name[0] || !m->name[1]) {
		free(m->name[0]);
		free(m->name[1]);
		return fail_at(c, "%s", "out of memory");
	}
	m->layout[0] = lay[0];
	m->layout[1] = lay[1];
	m->file = c->file;
	m->line = c->line;
	r->nmod++;
	if (index_module(r, r->nmod - 1))
		return fail_at(c, "%s", "out of memory");
	return 1;
}

/* The dotted module name whose mangled prefix (cp_mangle_prefix) is
 * `mangled`, or 0 when it is none's. The mangling is one to one (each part
 * is an identifier, which starts with no digit, after its decimal length),
 * so the module a prefix can be is found by name instead of by mangling
 * every module. */
static int demangle(const char *mangled, char *buf, size_t size)
{
	const char *p = mangled;
	size_t used = 0;

	if (strncmp(p, "__pyx_t_", 8) != 0)
		return 0;
	p += 8;
	while (*p) {
		size_t len = 0;

		if (*p < '0' || *p > '9')
			return 0;
		while (*p >= '0' && *p <= '9' && len < size)
			len = 10 * len + (size_t)(*p++ - '0');
		if (len == 0 || len >= size || strnlen(p, len + 1) < len + 1 || p[len] != '_' ||
		    used + len + 2 > size)
			return 0;
		if (used)
			buf[used++] = '.';
		memcpy(buf + used, p, len);
		used += len;
		p += len + 1;
	}
	if (!used)
		return 0;
	buf[used] = '\0';
	return 1;
}

static size_t *mangle_slot(const cp_rules *r, const char *prefix)
{
	size_t i = cp_name_hash(prefix, strlen(prefix)) & (r->nmangle_slot - 1);

	while (r->mangle_slot[i] &&
	       strcmp(r->mangle[(r->mangle_slot[i] - 1) / 2].prefix[(r->mangle_slot[i] - 1) % 2], prefix) != 0)
		i = (i + 1) & (r->nmangle_slot - 1);
	return &r->mangle_slot[i];
}

static size_t *rehash_mangle(const cp_rules *r, size_t v)
{
	return mangle_slot(r, r->mangle[(v - 1) / 2].prefix[(v - 1) % 2]);
}

/* A mangled pair must be exactly the mangling of one module pair. */
static int add_mangle(struct load_ctx *c, const int lay[2], const char *a, const char *b)
{
	cp_rules *r = c->rules;
	char pa[512], pb[512], name[512];
	struct cp_mangle_pair *m;
	const struct cp_module_pair *p = NULL;
	long i = -1;
	int side, k;

	if (demangle(a, name, sizeof(name)))
		i = find_name(r, name, &side);
	if (i >= 0) {
		p = &r->mod[i];
		k = p->layout[0] == lay[0] ? 0 : 1;
		if (side != k || p->layout[k] != lay[0] || p->layout[!k] != lay[1] ||
		    cp_mangle_prefix(p->name[k], pa, sizeof(pa)) < 0 ||
		    cp_mangle_prefix(p->name[!k], pb, sizeof(pb)) < 0 ||
		    strcmp(pa, a) != 0 || strcmp(pb, b) != 0)
			p = NULL;
	}
	if (!p)
		return fail_at(c, "mangled pair for '%s' matches no module pair declared before it", a);
	if (r->nmangle_slot && *mangle_slot(r, a))
		return fail_at(c, "mangled prefix '%s' is listed twice", a);
	if (CP_GROW(r->mangle, r->capmangle, r->nmangle + 1))
		return fail_at(c, "%s", "out of memory");
	m = &r->mangle[r->nmangle];
	m->prefix[0] = strdup(a);
	m->prefix[1] = strdup(b);
	if (!m->prefix[0] || !m->prefix[1]) {
		free(m->prefix[0]);
		free(m->prefix[1]);
		return fail_at(c, "%s", "out of memory");
	}
	m->layout[0] = lay[0];
	m->layout[1] = lay[1];
	m->file = c->file;
	m->line = c->line;
	r->nmangle++;
	if (grow_slots(r, &r->mangle_slot, &r->nmangle_slot, 2 * r->nmangle, rehash_mangle))
		return fail_at(c, "%s", "out of memory");
	for (k = 0; k < 2; k++) {
		size_t *slot = mangle_slot(r, m->prefix[k]);

		if (!*slot) /* a pair may repeat its first prefix as its second */
			*slot = 2 * (r->nmangle - 1) + (size_t)k + 1;
	}
	return 1;
}

/* [errors]: TYPE = VALUE, a C type name and a decimal integer. */
static int add_error_value(struct load_ctx *c, const char *type, const char *value)
{
	cp_rules *r = c->rules;
	char *end;
	long v;
	size_t i;

	if (!is_identifier(type))
		return fail_at(c, "error type '%s' is not an identifier", type);
	errno = 0;
	v = strtol(value, &end, 10);
	if (!*value || *end || errno || v < INT32_MIN || v > INT32_MAX)
		return fail_at(c, "error value '%s' is not a 32-bit decimal integer", value);
	for (i = 0; i < r->nerrval; i++)
		if (!strcmp(r->errval[i].type, type))
			return fail_at(c, "error type '%s' is listed twice", type);
	if (CP_GROW(r->errval, r->caperrval, r->nerrval + 1) || !(r->errval[r->nerrval].type = strdup(type)))
		return fail_at(c, "%s", "out of memory");
	r->errval[r->nerrval++].value = v;
	return 1;
}

const struct cp_error_value *cp_rules_error_type(const cp_rules *r, const char *sig)
{
	size_t i, n;

	for (i = 0; sig && i < r->nerrval; i++) {
		n = strlen(r->errval[i].type);
		if (!strncmp(sig, r->errval[i].type, n) && !strncmp(sig + n, " (", 2))
			return &r->errval[i];
	}
	return NULL;
}

static int on_entry(void *user, const char *section, const char *name, const char *value)
{
	struct load_ctx *c = user;
	int lay[2];

	if (c->status != CP_OK)
		return 0;
	if (strcmp(section, "layouts") == 0)
		return add_layout(c, name);
	if (strncmp(section, "modules ", 8) == 0)
		return section_layouts(c, section, "modules", lay) &&
		       add_module(c, lay, name, value);
	if (strncmp(section, "mangled ", 8) == 0)
		return section_layouts(c, section, "mangled", lay) &&
		       add_mangle(c, lay, name, value);
	if (strcmp(section, "errors") == 0)
		return add_error_value(c, name, value);
	if (!*section)
		return fail_at(c, "entry '%s' stands outside any section", name);
	return fail_at(c, "unknown section [%s]", section);
}

/* The next character of the file or the string, or EOF. */
static int next_char(struct load_ctx *c)
{
	if (c->fp)
		return getc(c->fp);
	return c->text[c->pos] ? (unsigned char)c->text[c->pos++] : EOF;
}

/* An ini_reader over either a FILE or a string; counts lines. It hands
 * inih whole lines only: inih would take the rest of a line longer than
 * its buffer for the next line and count it as one, so that every line
 * number after it was one off. Such a line stops the parse instead, and
 * parse() names it. */
static char *read_line(char *str, int num, void *stream)
{
	struct load_ctx *c = stream;
	size_t n = 0;
	int ch = EOF;

	if (num <= 1 || c->too_long)
		return NULL;
	while (n + 1 < (size_t)num && (ch = next_char(c)) != EOF) {
		str[n++] = (char)ch;
		if (ch == '\n')
			break;
	}
	str[n] = '\0';
	if (n == 0)
		return NULL;
	c->line++;
	if (ch != '\n' && n + 1 == (size_t)num && (ch = next_char(c)) != EOF && ch != '\n') {
		c->too_long = c->line;
		return NULL;
	}
	return str;
}

static const char *remember_file(cp_rules *r, const char *name)
{
	char *copy = strdup(name);

	if (!copy || CP_GROW(r->files, r->capfiles, r->nfiles + 1)) {
		free(copy);
		return NULL;
	}
	r->files[r->nfiles++] = copy;
	return copy;
}

static cp_status parse(struct load_ctx *c)
{
	int bad = ini_parse_stream(read_line, c, on_entry, c);

	if (c->status != CP_OK)
		return c->status;
	if (bad > 0)
		return cp_fail(c->err, CP_E_RULES,
			       "%s:%d: syntax error (expected '[section]', 'name = value' or a comment)",
			       c->file, bad);
	if (bad < 0)
		return cp_fail(c->err, CP_E_INTERNAL, "%s: out of memory while parsing", c->file);
	if (c->too_long)
		return cp_fail(c->err, CP_E_RULES, "%s:%d: line longer than %d characters", c->file,
			       c->too_long, INI_MAX_LINE - 1);
	if (c->fp && ferror(c->fp))
		return cp_fail(c->err, CP_E_RULES, "%s: cannot read rules file", c->file);
	if (c->rules->nlayout < 2)
		return cp_fail(c->err, CP_E_RULES, "%s: declares fewer than two layouts", c->file);
	return CP_OK;
}

cp_status cp_rules_load_file(cp_rules *rules, const char *path, cp_error *err)
{
	struct load_ctx c = { rules, NULL, NULL, 0, NULL, 0, 0, err, CP_OK };
	struct stat sb;
	cp_status st;

	c.file = remember_file(rules, path);
	if (!c.file)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", path);
	c.fp = fopen(path, "r");
	if (!c.fp)
		return cp_fail(err, CP_E_RULES, "%s: cannot open rules file", path);
	/* glibc opens a folder for reading; its first read fails (EISDIR) */
	if (!fstat(fileno(c.fp), &sb) && S_ISDIR(sb.st_mode)) {
		fclose(c.fp);
		return cp_fail(err, CP_E_RULES, "%s: is a folder, not a rules file", path);
	}
	st = parse(&c);
	fclose(c.fp);
	return st;
}

cp_status cp_rules_load_string(cp_rules *rules, const char *name, const char *text,
			       cp_error *err)
{
	struct load_ctx c = { rules, NULL, text, 0, NULL, 0, 0, err, CP_OK };

	c.file = remember_file(rules, name);
	if (!c.file)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", name);
	return parse(&c);
}

int cp_rules_name_layout(const cp_rules *r, const char *v, const char **module)
{
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

/* Whether v[0, n) is a dotted Python name: identifiers joined by dots. */
static bool dotted_name(const char *v, size_t n)
{
	size_t i;
	bool start = true;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c == '.' && !start) {
			start = true;
			continue;
		}
		if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!start && c >= '0' && c <= '9')))
			return false;
		start = false;
	}
	return n && !start;
}

int cp_rules_unmapped_layout(const cp_rules *r, const char *v, size_t n, const char **pkg)
{
	char head[512];
	size_t len, slot;
	int k;

	if (!r->npkg_slot || n >= sizeof(head) || !dotted_name(v, n))
		return -1;
	for (len = n; len > 0; len--) {
		if (len < n && v[len] != '.')
			continue;
		memcpy(head, v, len);
		head[len] = '\0';
		/* mapped, a package of mapped modules, or a mapped module's
		 * attribute (cuda.bindings.driver.CUlinkState) */
		if (find_name(r, head, &k) >= 0 || (len == n && *pkg_slot(r, v, n)))
			return -1;
		if (len == n)
			continue;
		slot = *pkg_slot(r, v, len);
		if (slot && r->pkg[slot - 1].layout >= 0) {
			*pkg = r->pkg[slot - 1].name;
			return r->pkg[slot - 1].layout;
		}
	}
	return -1;
}

int cp_rules_signature_layout(const cp_rules *r, const char *sig, const char **module)
{
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

/* The first component of module i's name on side k ("cuda"), as a length. */
static size_t top_len(const cp_rules *r, size_t i, int k)
{
	return strcspn(r->mod[i].name[k], ".");
}

/* Whether module i's first component on side k is name[0, n). */
static bool top_is(const cp_rules *r, size_t i, int k, const char *name, size_t n)
{
	return top_len(r, i, k) == n && !memcmp(r->mod[i].name[k], name, n);
}

/* Whether module i's first component on side k appeared before it. */
static bool top_seen(const cp_rules *r, size_t i, int k)
{
	size_t j;
	int m;

	for (j = 0; j <= i; j++)
		for (m = 0; m < 2 && (j < i || m < k); m++)
			if (top_is(r, j, m, r->mod[i].name[k], top_len(r, i, k)))
				return true;
	return false;
}

bool cp_rules_is_top_package(const cp_rules *r, const char *name, size_t n)
{
	size_t i;
	int k;

	for (i = 0; i < r->nmod; i++)
		for (k = 0; k < 2; k++)
			if (top_is(r, i, k, name, n))
				return true;
	return false;
}

bool cp_rules_mentioned(const cp_rules *r, const char *text, size_t n)
{
	size_t i;
	int k;

	for (i = 0; i < r->nmod; i++)
		for (k = 0; k < 2; k++)
			if (!top_seen(r, i, k) && memmem(text, n, r->mod[i].name[k], top_len(r, i, k)))
				return true;
	return false;
}
