/*
 * pep508.c - a recursive-descent reading of PEP 508's grammar (see
 * pep508.h), with the marker variables and the dotted aliases that
 * packaging (pip's parser) accepts.
 */
#include "repair/pep508.h"

#include <ctype.h>
#include <string.h>

struct in {
	const char *s;
	size_t n, i;
};

static bool at_end(const struct in *p)
{
	return p->i >= p->n;
}

static char peek(const struct in *p)
{
	return at_end(p) ? '\0' : p->s[p->i];
}

static void wsp(struct in *p)
{
	while (peek(p) == ' ' || peek(p) == '\t')
		p->i++;
}

/* The literal word w at the cursor, consumed. */
static bool lit(struct in *p, const char *w)
{
	size_t k = strlen(w);

	if (p->n - p->i < k || memcmp(p->s + p->i, w, k))
		return false;
	p->i += k;
	return true;
}

static bool alnum(char c)
{
	return isalnum((unsigned char)c) != 0;
}

/* identifier: letterOrDigit ((letterOrDigit | - _ .)* letterOrDigit)? */
static bool identifier(struct in *p, struct cp_pep508_span *span)
{
	size_t start = p->i;

	while (alnum(peek(p)) || (peek(p) && strchr("-_.", peek(p))))
		p->i++;
	span->start = start;
	span->end = p->i;
	return p->i > start && alnum(p->s[start]) && alnum(p->s[p->i - 1]);
}

static bool extras(struct in *p, struct cp_pep508_span *span)
{
	struct cp_pep508_span e;

	span->start = span->end = p->i;
	if (!lit(p, "["))
		return true;
	wsp(p);
	if (!lit(p, "]")) {
		do {
			wsp(p);
			if (!identifier(p, &e))
				return false;
			wsp(p);
		} while (lit(p, ","));
		if (!lit(p, "]"))
			return false;
	}
	span->end = p->i;
	return true;
}

static bool version_cmp(struct in *p)
{
	static const char *const ops[] = { "===", "<=", "!=", "==", ">=", "~=", "<", ">" };
	size_t k;

	wsp(p);
	for (k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
		if (lit(p, ops[k]))
			return true;
	return false;
}

/* version_one: version_cmp wsp* version (letterOrDigit - _ . * + !)+ */
static bool version_one(struct in *p, struct cp_pep508_span *span)
{
	size_t start;

	wsp(p);
	span->start = p->i;
	if (!version_cmp(p))
		return false;
	wsp(p);
	start = p->i;
	while (alnum(peek(p)) || (peek(p) && strchr("-_.*+!", peek(p))))
		p->i++;
	span->end = p->i;
	return p->i > start;
}

static bool versionspec(struct in *p, struct cp_pep508 *out)
{
	bool paren = lit(p, "(");

	do {
		if (out->nspecs == CP_PEP508_MAX_SPECS || !version_one(p, &out->specs[out->nspecs]))
			return false;
		out->nspecs++;
		wsp(p);
	} while (lit(p, ","));
	return !paren || lit(p, ")");
}

static bool python_str(struct in *p)
{
	char q = peek(p);

	if (q != '\'' && q != '"')
		return false;
	for (p->i++; !at_end(p) && peek(p) != q; p->i++)
		if ((unsigned char)peek(p) < 0x20)
			return false;
	return lit(p, q == '"' ? "\"" : "'");
}

static bool env_var(struct in *p)
{
	static const char *const vars[] = {
		"python_version", "python_full_version", "os_name", "sys_platform", "platform_release",
		"platform_system", "platform_version", "platform_machine", "platform_python_implementation",
		"implementation_name", "implementation_version", "extra", "python_implementation",
		"os.name", "sys.platform", "platform.version", "platform.machine",
		"platform.python_implementation",
	};
	size_t start = p->i, k;

	while (alnum(peek(p)) || peek(p) == '_' || peek(p) == '.')
		p->i++;
	for (k = 0; k < sizeof(vars) / sizeof(vars[0]); k++)
		if (p->i - start == strlen(vars[k]) && !memcmp(p->s + start, vars[k], p->i - start))
			return true;
	return false;
}

static bool marker_var(struct in *p)
{
	wsp(p);
	return peek(p) == '\'' || peek(p) == '"' ? python_str(p) : env_var(p);
}

static bool marker_op(struct in *p)
{
	size_t at = p->i;

	if (version_cmp(p))
		return true;
	p->i = at;
	wsp(p);
	if (lit(p, "in"))
		return true;
	if (!lit(p, "not") || (peek(p) != ' ' && peek(p) != '\t'))
		return false;
	wsp(p);
	return lit(p, "in");
}

static bool marker_or(struct in *p, unsigned depth);

static bool marker_expr(struct in *p, unsigned depth)
{
	wsp(p);
	if (lit(p, "(")) {
		if (!marker_or(p, depth + 1))
			return false;
		wsp(p);
		return lit(p, ")");
	}
	return marker_var(p) && marker_op(p) && marker_var(p);
}

/* A keyword (and, or) between two operands, consumed with the space before it. */
static bool keyword(struct in *p, const char *w)
{
	size_t at = p->i;

	wsp(p);
	if (lit(p, w))
		return true;
	p->i = at;
	return false;
}

static bool marker_and(struct in *p, unsigned depth)
{
	if (!marker_expr(p, depth))
		return false;
	while (keyword(p, "and"))
		if (!marker_expr(p, depth))
			return false;
	return true;
}

static bool marker_or(struct in *p, unsigned depth)
{
	if (depth > 64) /* nesting a line cannot need; bounds the recursion */
		return false;
	if (!marker_and(p, depth))
		return false;
	while (keyword(p, "or"))
		if (!marker_and(p, depth))
			return false;
	return true;
}

/* urlspec: '@' wsp* URI, the URI up to white space. */
static bool urlspec(struct in *p)
{
	size_t start;

	wsp(p);
	start = p->i;
	while (!at_end(p) && peek(p) != ' ' && peek(p) != '\t')
		p->i++;
	return p->i > start;
}

bool cp_pep508_parse(const char *text, size_t n, struct cp_pep508 *out)
{
	struct in p = { text, n, 0 };

	memset(out, 0, sizeof(*out));
	wsp(&p);
	if (!identifier(&p, &out->name))
		return false;
	wsp(&p);
	if (!extras(&p, &out->extras))
		return false;
	wsp(&p);
	if (lit(&p, "@")) {
		out->url = true;
		if (!urlspec(&p))
			return false;
		if (at_end(&p))
			return (out->marker = n), true;
		if (peek(&p) != ' ' && peek(&p) != '\t') /* the URL and its marker need a space between */
			return false;
		wsp(&p);
	} else if (peek(&p) != ';' && !at_end(&p)) {
		if (!versionspec(&p, out))
			return false;
		wsp(&p);
	}
	out->marker = p.i;
	if (lit(&p, ";") && !marker_or(&p, 0))
		return false;
	wsp(&p);
	return at_end(&p);
}
