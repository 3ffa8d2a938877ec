/*
 * pep440.c - PEP 440 versions and version specifiers (pep440.h): parsing
 * in the normalised and the permitted spellings, the order, and each
 * operator's rule (==, !=, <=, >=, <, >, ~=, ===, and == with ".*").
 */
#include "releases/pep440.h"

#include <ctype.h>
#include <stdint.h>
#include <string.h>

#define MAX_PARTS 8
#define NONE INT64_MIN

struct version {
	int64_t epoch;
	int64_t rel[MAX_PARTS];
	int nrel;
	int pre_kind;      /* 0 a, 1 b, 2 rc; -1 none */
	int64_t pre, post, dev; /* NONE when absent */
};

static bool number(const char **p, const char *end, int64_t *out)
{
	int64_t v = 0;
	const char *s = *p;

	while (*p < end && isdigit((unsigned char)**p) && v < INT64_MAX / 10 - 9)
		v = v * 10 + (*(*p)++ - '0');
	*out = v;
	return *p > s && (*p == end || !isdigit((unsigned char)**p));
}

static bool word(const char **p, const char *end, const char *w)
{
	size_t n = strlen(w), i;

	if ((size_t)(end - *p) < n)
		return false;
	for (i = 0; i < n; i++)
		if (tolower((unsigned char)(*p)[i]) != w[i])
			return false;
	*p += n;
	return true;
}

static void separator(const char **p, const char *end)
{
	if (*p < end && (**p == '.' || **p == '-' || **p == '_'))
		(*p)++;
}

/* The pre-release part: a, alpha, b, beta, rc, c, pre, preview. */
static void pre_part(const char **p, const char *end, struct version *v)
{
	static const struct { const char *w; int kind; } pres[] = {
		{ "alpha", 0 }, { "a", 0 }, { "beta", 1 }, { "b", 1 }, { "rc", 2 }, { "c", 2 },
		{ "preview", 2 }, { "pre", 2 },
	};
	const char *q = *p;
	size_t i;

	separator(&q, end);
	for (i = 0; i < sizeof(pres) / sizeof(pres[0]); i++)
		if (word(&q, end, pres[i].w)) {
			v->pre_kind = pres[i].kind;
			separator(&q, end);
			if (!(q < end && isdigit((unsigned char)*q) && number(&q, end, &v->pre)))
				v->pre = 0;
			*p = q;
			return;
		}
}

/* A suffix ".post1", ".dev0" (or "-1" for post): *out its number. */
static void numbered_part(const char **p, const char *end, const char *w, int64_t *out)
{
	const char *q = *p;
	int64_t n = 0;

	if (!strcmp(w, "post") && q + 1 < end && *q == '-' && isdigit((unsigned char)q[1])) {
		q++;
		if (number(&q, end, &n)) {
			*out = n;
			*p = q;
		}
		return;
	}
	separator(&q, end);
	if (!word(&q, end, w))
		return;
	separator(&q, end);
	if (!(q < end && isdigit((unsigned char)*q) && number(&q, end, &n)))
		n = 0;
	*out = n;
	*p = q;
}

/* Parses s[0, n); *wild set (when not NULL) where it ends in ".*". */
static bool parse(const char *s, size_t n, struct version *v, bool *wild)
{
	const char *p = s, *end = s + n;
	int64_t x;

	memset(v, 0, sizeof(*v));
	v->pre_kind = -1;
	v->pre = v->post = v->dev = NONE;
	if (wild)
		*wild = false;
	if (p < end && (*p == 'v' || *p == 'V'))
		p++;
	if (!number(&p, end, &x))
		return false;
	if (p < end && *p == '!') {
		v->epoch = x;
		p++;
		if (!number(&p, end, &x))
			return false;
	}
	v->rel[v->nrel++] = x;
	while (p + 1 < end && *p == '.' && isdigit((unsigned char)p[1])) {
		p++;
		if (!number(&p, end, &x) || v->nrel == MAX_PARTS)
			return false;
		v->rel[v->nrel++] = x;
	}
	if (wild && end - p == 2 && p[0] == '.' && p[1] == '*') {
		*wild = true;
		return true;
	}
	pre_part(&p, end, v);
	numbered_part(&p, end, "post", &v->post);
	numbered_part(&p, end, "dev", &v->dev);
	if (p < end && *p == '+') {
		for (p++; p < end && (isalnum((unsigned char)*p) || *p == '.' || *p == '-' || *p == '_'); p++)
			;
	}
	return p == end;
}

static int cmp64(int64_t a, int64_t b)
{
	return (a > b) - (a < b);
}

static int release_cmp(const struct version *a, const struct version *b)
{
	int i, n = a->nrel > b->nrel ? a->nrel : b->nrel, c;

	for (i = 0; i < n; i++)
		if ((c = cmp64(i < a->nrel ? a->rel[i] : 0, i < b->nrel ? b->rel[i] : 0)) != 0)
			return c;
	return 0;
}

/* PEP 440's order past the release: X.devN < X.aN < X.bN < X.rcN < X <
 * X.postN.devM < X.postN, each by its number. */
static int suffix_cmp(const struct version *a, const struct version *b)
{
	int64_t pa = a->pre_kind >= 0 ? a->pre_kind * (INT64_MAX / 4) + a->pre :
		     a->post == NONE && a->dev != NONE ? NONE : INT64_MAX;
	int64_t pb = b->pre_kind >= 0 ? b->pre_kind * (INT64_MAX / 4) + b->pre :
		     b->post == NONE && b->dev != NONE ? NONE : INT64_MAX;
	int c;

	if ((c = cmp64(pa, pb)) != 0 || (c = cmp64(a->post, b->post)) != 0)
		return c;
	return cmp64(a->dev == NONE ? INT64_MAX : a->dev, b->dev == NONE ? INT64_MAX : b->dev);
}

static int version_cmp(const struct version *a, const struct version *b)
{
	int c = cmp64(a->epoch, b->epoch);

	if (!c)
		c = release_cmp(a, b);
	return c ? c : suffix_cmp(a, b);
}

int cp_pep440_compare(const char *a, const char *b, bool *ok)
{
	struct version x, y;

	*ok = parse(a, strlen(a), &x, NULL) && parse(b, strlen(b), &y, NULL);
	return *ok ? version_cmp(&x, &y) : 0;
}

static bool is_pre(const struct version *v)
{
	return v->pre_kind >= 0 || v->dev != NONE;
}

/* == V.* : v's release starts with V's (zero-padded to V's length). */
static bool prefix_match(const struct version *v, const struct version *w)
{
	int i;

	if (v->epoch != w->epoch)
		return false;
	for (i = 0; i < w->nrel; i++)
		if ((i < v->nrel ? v->rel[i] : 0) != w->rel[i])
			return false;
	return true;
}

/* One specifier: 1 v satisfies it, 0 not, -1 not a specifier. *pre set
 * where it names a pre-release. */
static int one(const char *s, size_t n, const struct version *v, const char *vtext, bool *pre)
{
	static const char *const ops[] = { "===", "~=", "==", "!=", "<=", ">=", "<", ">" };
	struct version w;
	size_t i, k;
	bool wild;
	int c;

	for (k = 0; k < sizeof(ops) / sizeof(ops[0]) && strncmp(s, ops[k], strlen(ops[k])); k++)
		;
	if (k == sizeof(ops) / sizeof(ops[0]))
		return -1;
	i = strlen(ops[k]);
	while (i < n && isspace((unsigned char)s[i]))
		i++;
	if (k == 0) /* ===: the text itself */
		return strlen(vtext) == n - i && !strncmp(vtext, s + i, n - i);
	if (!parse(s + i, n - i, &w, &wild) || (wild && k != 2 && k != 3) || (k == 1 && w.nrel < 2))
		return -1;
	*pre = *pre || is_pre(&w);
	if (wild)
		return prefix_match(v, &w) == (k == 2);
	c = version_cmp(v, &w);
	switch (k) {
	case 1: /* ~=: >= w, == w's release less its last part .* */
		w.nrel--;
		return c >= 0 && prefix_match(v, &w);
	case 2: return c == 0; /* local labels are not compared */
	case 3: return c != 0;
	case 4: return c <= 0;
	case 5: return c >= 0;
	case 6: /* no pre-release of w itself unless w is one */
		return c < 0 && (is_pre(&w) || !is_pre(v) || release_cmp(v, &w) != 0 || v->epoch != w.epoch);
	default: /* >: no post-release of w unless w is one */
		return c > 0 && (w.post != NONE || v->post == NONE || release_cmp(v, &w) != 0);
	}
}

/* Whether s[0, n) is blank. */
static bool blank(const char *s, size_t n)
{
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	return !n;
}

int cp_pep440_satisfies(const char *spec, size_t n, const char *v)
{
	struct version x;
	size_t i = 0, j, e;
	bool pre = false, all = true;
	int r;

	if (!parse(v, strlen(v), &x, NULL))
		return -1;
	if (blank(spec, n))
		return !is_pre(&x);
	for (i = 0; i <= n; i = j + 1) {
		while (i < n && isspace((unsigned char)spec[i]))
			i++;
		for (j = i; j < n && spec[j] != ','; j++)
			;
		for (e = j; e > i && isspace((unsigned char)spec[e - 1]); e--)
			;
		if (e == i) /* an empty clause: ",," or a "," at either end */
			return -1;
		r = one(spec + i, e - i, &x, v, &pre);
		if (r < 0)
			return -1;
		all = all && r;
	}
	return all && (!is_pre(&x) || pre);
}
