/*
 * record.c - RECORD rows (see record.h).
 */
#include "wheel/record.h"
#include "util/error.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The algorithms RECORD may use (the wheel spec: hashlib's, sha256 or
 * stronger), and those it names that are weaker. */
static const struct {
	const char *name;
	const EVP_MD *(*md)(void);
} strong[] = { { "sha256", EVP_sha256 }, { "sha384", EVP_sha384 }, { "sha512", EVP_sha512 } };
static const char *const weak[] = { "md5", "sha1", "sha224" };

/* Whether hash is "<name>=...". */
static bool named(const char *hash, const char *name)
{
	size_t n = strlen(name);

	return !strncmp(hash, name, n) && hash[n] == '=';
}

const EVP_MD *cp_record_algorithm(const char *hash)
{
	size_t i;

	for (i = 0; i < sizeof(strong) / sizeof(strong[0]); i++)
		if (named(hash, strong[i].name))
			return strong[i].md();
	return NULL;
}

cp_status cp_record_check_hash(const char *hash, const char *what, const char *path, cp_error *err)
{
	size_t i;

	if (!hash[0] || cp_record_algorithm(hash))
		return CP_OK;
	for (i = 0; i < sizeof(weak) / sizeof(weak[0]); i++)
		if (named(hash, weak[i]))
			return cp_fail(err, CP_E_INPUT, "%s uses %s, weaker than sha256 (the wheel spec's least): %s",
				       what, weak[i], path);
	return cp_fail(err, CP_E_INPUT, "%s names a hash that is not sha256, sha384 or sha512: %s", what, path);
}

void cp_record_hash_text(const EVP_MD *md, const uint8_t *digest, char *out)
{
	unsigned char b64[4 * (EVP_MAX_MD_SIZE / 3 + 1) + 1];
	const char *name = "sha256";
	int n = EVP_EncodeBlock(b64, digest, EVP_MD_get_size(md)), i;
	size_t k;

	for (k = 0; k < sizeof(strong) / sizeof(strong[0]); k++)
		if (strong[k].md() == md)
			name = strong[k].name;
	while (n > 0 && b64[n - 1] == '=')
		n--;
	for (i = 0; i < n; i++)
		b64[i] = b64[i] == '+' ? '-' : b64[i] == '/' ? '_' : b64[i];
	snprintf(out, CP_RECORD_HASH_MAX, "%s=%.*s", name, n, (const char *)b64);
}

/* FNV-1a: the index's hash of a path. */
static size_t path_hash(const char *s)
{
	uint64_t h = 14695981039346656037ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return (size_t)h;
}

/* The slot of path: where its row's index is, or the free one it would take. */
static size_t *slot_of(const struct cp_record *r, const char *path)
{
	size_t at = path_hash(path) & (r->nslots - 1);

	while (r->slot[at] && strcmp(r->rows[r->slot[at] - 1].path, path))
		at = (at + 1) & (r->nslots - 1);
	return &r->slot[at];
}

/* Room in the index for one row more: twice the slots, filled again, when
 * it would be half full (short probes). */
static bool index_room(struct cp_record *r)
{
	size_t n = r->nslots ? r->nslots : 64, i;

	while (n <= 2 * (r->n + 1))
		n *= 2;
	if (n == r->nslots)
		return true;
	free(r->slot);
	r->nslots = n;
	if (!(r->slot = calloc(n, sizeof(*r->slot)))) {
		r->nslots = 0;
		return false;
	}
	for (i = 0; i < r->n; i++)
		*slot_of(r, r->rows[i].path) = i + 1;
	return true;
}

/* One CSV field from *p up to a comma or the line's end. */
static char *field(const char **p, const char *end)
{
	const char *s = *p;
	char *out = malloc((size_t)(end - s) + 1), *o = out;

	if (!out)
		return NULL;
	if (s < end && *s == '"') {
		for (s++; s < end; s++) {
			if (*s == '"' && s + 1 < end && s[1] == '"')
				*o++ = *s++;
			else if (*s == '"')
				break;
			else
				*o++ = *s;
		}
		if (s < end)
			s++;
	}
	while (s < end && *s != ',')
		*o++ = *s++;
	*o = '\0';
	*p = s < end ? s + 1 : s;
	return out;
}

static cp_status add_row(struct cp_record *r, char *path, char *hash, char *size, cp_error *err)
{
	if (!path || !hash || !size || !index_room(r) || CP_GROW(r->rows, r->cap, r->n + 1)) {
		free(path);
		free(hash);
		free(size);
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	}
	*slot_of(r, path) = r->n + 1;
	r->rows[r->n].path = path;
	r->rows[r->n].hash = hash;
	r->rows[r->n++].size = size;
	return CP_OK;
}

/* Whether s[0, n) is UTF-8 (RFC 3629: shortest forms, no surrogates,
 * nothing past U+10FFFF). */
static bool utf8(const unsigned char *s, size_t n)
{
	size_t i = 0, k, len;
	uint32_t c;

	while (i < n) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		len = (s[i] & 0xe0) == 0xc0 ? 2 : (s[i] & 0xf0) == 0xe0 ? 3 : (s[i] & 0xf8) == 0xf0 ? 4 : 0;
		if (!len || len > n - i)
			return false;
		c = s[i] & (0x7f >> len);
		for (k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			c = c << 6 | (s[i + k] & 0x3f);
		}
		if (c < (len == 2 ? 0x80u : len == 3 ? 0x800u : 0x10000u) || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			return false;
		i += len;
	}
	return true;
}

cp_status cp_record_parse(struct cp_record *r, const char *text, size_t len, const char *what, cp_error *err)
{
	const char *p = text, *end = text + len;
	size_t line = 0;

	memset(r, 0, sizeof(*r));
	/* pip reads RECORD as UTF-8 (PEP 376) and fails on anything else */
	if (!utf8((const unsigned char *)text, len))
		return cp_fail(err, CP_E_INPUT, "%s: not UTF-8 text", what);
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *stop = eol ? eol : end;
		char *path, *hash, *size;
		const char *sized;

		line++;
		if (stop > p && stop[-1] == '\r')
			stop--;
		if (stop == p) {
			p = eol ? eol + 1 : end;
			continue;
		}
		bool commas;

		path = field(&p, stop);
		commas = p[-1] == ',';
		hash = field(&p, stop);
		commas = commas && p[-1] == ',';
		sized = p;
		size = field(&p, stop);
		/* PEP 376: path, hash, size; a shorter row (no hash, so never
		 * compared with a member) for a file the wheel lacks passed, and
		 * pip refuses a longer one */
		if (!commas || (p > sized && p[-1] == ',')) {
			free(path), free(hash), free(size);
			return cp_fail(err, CP_E_INPUT, "%s: line %zu has not three fields", what, line);
		}
		if (path && !path[0]) {
			free(path), free(hash), free(size);
			return cp_fail(err, CP_E_INPUT, "%s: line %zu has no path", what, line);
		}
		if (path && r->n && cp_record_find(r, path)) {
			cp_fail(err, CP_E_INPUT, "%s lists a file twice: %s", what, path);
			free(path), free(hash), free(size);
			return err->code;
		}
		if (add_row(r, path, hash, size, err))
			return err->code;
		p = eol ? eol + 1 : end;
	}
	return CP_OK;
}

void cp_record_free(struct cp_record *r)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		free(r->rows[i].path);
		free(r->rows[i].hash);
		free(r->rows[i].size);
	}
	free(r->rows);
	free(r->slot);
	memset(r, 0, sizeof(*r));
}

struct cp_record_row *cp_record_find(struct cp_record *r, const char *path)
{
	size_t at;

	if (!r->nslots)
		return NULL;
	at = *slot_of(r, path);
	return at ? &r->rows[at - 1] : NULL;
}

cp_status cp_record_copy(struct cp_record *dst, const struct cp_record *src, cp_error *err)
{
	cp_status st = CP_OK;
	size_t i;

	memset(dst, 0, sizeof(*dst));
	for (i = 0; !st && i < src->n; i++)
		st = add_row(dst, strdup(src->rows[i].path), strdup(src->rows[i].hash), strdup(src->rows[i].size), err);
	if (st)
		cp_record_free(dst);
	return st;
}

cp_status cp_record_set(struct cp_record *r, const char *path, const uint8_t *data, size_t len, cp_error *err)
{
	struct cp_record_row *row = cp_record_find(r, path);
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char hash[CP_RECORD_HASH_MAX], size[32];

	if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL))
		return cp_fail(err, CP_E_INTERNAL, "%s: hashing failed", path);
	cp_record_hash_text(EVP_sha256(), md, hash);
	snprintf(size, sizeof(size), "%zu", len);
	if (!row)
		return add_row(r, strdup(path), strdup(hash), strdup(size), err);
	free(row->hash);
	free(row->size);
	row->hash = strdup(hash);
	row->size = strdup(size);
	return row->hash && row->size ? CP_OK : cp_fail(err, CP_E_INTERNAL, "out of memory");
}

/* A path as a CSV field: quoted when it holds a comma or a quote. */
static size_t put_path(char *o, const char *path)
{
	size_t n = 0;

	if (!strpbrk(path, ",\"\r\n"))
		return (size_t)sprintf(o, "%s", path);
	o[n++] = '"';
	for (; *path; path++) {
		if (*path == '"')
			o[n++] = '"';
		o[n++] = *path;
	}
	o[n++] = '"';
	return n;
}

char *cp_record_format(const struct cp_record *r, size_t *len)
{
	size_t i, cap = 1, n = 0;
	char *out;

	for (i = 0; i < r->n; i++)
		cap += 2 * strlen(r->rows[i].path) + strlen(r->rows[i].hash) + strlen(r->rows[i].size) + 6;
	out = malloc(cap);
	if (!out)
		return NULL;
	for (i = 0; i < r->n; i++) {
		n += put_path(out + n, r->rows[i].path);
		n += (size_t)sprintf(out + n, ",%s,%s\n", r->rows[i].hash, r->rows[i].size);
	}
	out[n] = '\0';
	*len = n;
	return out;
}
