/*
 * record.c - RECORD rows (see record.h).
 */
#include "record.h"
#include "error.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cp_record_hash_text(const uint8_t digest[32], char *out)
{
	unsigned char b64[48];
	int n = EVP_EncodeBlock(b64, digest, 32), i;

	while (n > 0 && b64[n - 1] == '=')
		n--;
	for (i = 0; i < n; i++)
		b64[i] = b64[i] == '+' ? '-' : b64[i] == '/' ? '_' : b64[i];
	sprintf(out, "sha256=%.*s", n, (const char *)b64);
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
	if (!path || !hash || !size || CP_GROW(r->rows, r->cap, r->n + 1)) {
		free(path);
		free(hash);
		free(size);
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	}
	r->rows[r->n].path = path;
	r->rows[r->n].hash = hash;
	r->rows[r->n++].size = size;
	return CP_OK;
}

cp_status cp_record_parse(struct cp_record *r, const char *text, size_t len, const char *what, cp_error *err)
{
	const char *p = text, *end = text + len;
	size_t line = 0;

	memset(r, 0, sizeof(*r));
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *stop = eol ? eol : end;
		char *path, *hash, *size;

		line++;
		if (stop > p && stop[-1] == '\r')
			stop--;
		if (stop == p) {
			p = eol ? eol + 1 : end;
			continue;
		}
		path = field(&p, stop);
		hash = field(&p, stop);
		size = field(&p, stop);
		if (path && !path[0]) {
			free(path), free(hash), free(size);
			return cp_fail(err, CP_E_INPUT, "%s: line %zu has no path", what, line);
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
	memset(r, 0, sizeof(*r));
}

struct cp_record_row *cp_record_find(struct cp_record *r, const char *path)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (!strcmp(r->rows[i].path, path))
			return &r->rows[i];
	return NULL;
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
	char hash[64], size[32];

	if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL))
		return cp_fail(err, CP_E_INTERNAL, "%s: hashing failed", path);
	cp_record_hash_text(md, hash);
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
