/*
 * wheel.c - reading and checking a wheel (see wheel.h).
 */
#include "wheel.h"
#include "error.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static cp_status bad(const struct cp_wheel *w, cp_error *err, const char *what, const char *name)
{
	return cp_fail(err, CP_E_INPUT, "%s: %s: %s", w->path, what, name);
}

/* A name that extracts inside the target directory: relative, no "..",
 * no empty component, no backslash (a separator on Windows). */
static bool safe_name(const char *name)
{
	const char *c = name;

	if (!*name || *name == '/' || strchr(name, '\\') || (name[0] && name[1] == ':'))
		return false;
	while (*c) {
		const char *slash = strchr(c, '/');
		size_t n = slash ? (size_t)(slash - c) : strlen(c);

		if ((n == 2 && !strncmp(c, "..", 2)) || (n == 1 && *c == '.') || (n == 0 && slash))
			return false;
		if (!slash)
			break;
		c = slash + 1;
	}
	return true;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static cp_status check_names(struct cp_wheel *w, cp_error *err)
{
	char **names = malloc((w->n ? w->n : 1) * sizeof(char *));
	cp_status st = CP_OK;
	size_t i;

	if (!names)
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	for (i = 0; i < w->n; i++)
		names[i] = w->m[i].name;
	qsort(names, w->n, sizeof(char *), by_name);
	for (i = 1; !st && i < w->n; i++)
		if (!strcmp(names[i], names[i - 1]))
			st = bad(w, err, "a member name appears twice", names[i]);
	free(names);
	return st;
}

static cp_status read_member(struct cp_wheel *w, zip_uint64_t i, cp_error *err)
{
	struct cp_wheel_member *m = &w->m[i];
	zip_stat_t sb;

	zip_stat_init(&sb);
	if (zip_stat_index(w->zip, i, 0, &sb) || !(sb.valid & ZIP_STAT_NAME) || !(sb.valid & ZIP_STAT_SIZE))
		return cp_fail(err, CP_E_INPUT, "%s: member %llu cannot be read: %s", w->path,
			       (unsigned long long)i, zip_strerror(w->zip));
	m->name = strdup(sb.name);
	if (!m->name)
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	m->size = sb.size;
	m->comp_size = sb.valid & ZIP_STAT_COMP_SIZE ? sb.comp_size : 0;
	m->comp_method = sb.valid & ZIP_STAT_COMP_METHOD ? sb.comp_method : 0;
	m->mtime = sb.valid & ZIP_STAT_MTIME ? sb.mtime : 0;
	m->dir = m->name[0] && m->name[strlen(m->name) - 1] == '/';
	if (zip_file_get_external_attributes(w->zip, i, 0, &m->opsys, &m->attr))
		return bad(w, err, "unreadable attributes", m->name);
	if (!safe_name(m->name))
		return bad(w, err, "a member name leaves the target directory", m->name);
	if (m->opsys == ZIP_OPSYS_UNIX && ((m->attr >> 16) & S_IFMT) == S_IFLNK)
		return bad(w, err, "a member is a symbolic link", m->name);
	if (m->size > CP_WHEEL_MAX_MEMBER ||
	    (m->size > (64u << 20) && m->size / CP_WHEEL_MAX_RATIO > m->comp_size))
		return bad(w, err, "a member declares an implausible size", m->name);
	return CP_OK;
}

/* The one top-level "*.dist-info/RECORD". */
static cp_status find_record(struct cp_wheel *w, cp_error *err)
{
	size_t i, found = 0;

	for (i = 0; i < w->n; i++) {
		const char *name = w->m[i].name, *slash = strchr(name, '/');

		if (!slash || strcmp(slash, "/RECORD") || slash - name < 11 || strncmp(slash - 10, ".dist-info", 10))
			continue;
		found++;
		w->record_at = i;
	}
	if (found != 1)
		return cp_fail(err, CP_E_INPUT, "%s: not a wheel: %s", w->path,
			       found ? "more than one .dist-info/RECORD" : "no .dist-info/RECORD");
	w->dist_info = strndup(w->m[w->record_at].name, strlen(w->m[w->record_at].name) - 7);
	return w->dist_info ? CP_OK : cp_fail(err, CP_E_INTERNAL, "out of memory");
}

static cp_status hash_member(struct cp_wheel *w, size_t i, char *hash, uint64_t *size, cp_error *err)
{
	zip_file_t *f = zip_fopen_index(w->zip, i, 0);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	uint8_t buf[65536], digest[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	zip_int64_t got;
	cp_status st = CP_OK;

	*size = 0;
	if (!f || !md || !EVP_DigestInit_ex(md, EVP_sha256(), NULL))
		st = bad(w, err, "a member cannot be read", w->m[i].name);
	while (!st && (got = zip_fread(f, buf, sizeof(buf))) > 0) {
		*size += (uint64_t)got;
		if (*size > w->m[i].size || !EVP_DigestUpdate(md, buf, (size_t)got))
			st = bad(w, err, "a member holds more than it declares", w->m[i].name);
	}
	if (!st && got < 0)
		st = bad(w, err, "a member is corrupt", w->m[i].name);
	if (!st && EVP_DigestFinal_ex(md, digest, &n))
		cp_record_hash_text(digest, hash);
	EVP_MD_CTX_free(md);
	if (f)
		zip_fclose(f);
	return st;
}

/* Every member is in RECORD with its hash and size, and nothing else is. */
static cp_status check_record(struct cp_wheel *w, cp_error *err)
{
	const char *record = w->m[w->record_at].name;
	size_t i, dl = strlen(w->dist_info);
	uint8_t *text;
	size_t len;
	cp_status st = cp_wheel_read(w, w->record_at, &text, &len, err);

	if (!st) {
		st = cp_record_parse(&w->record, (const char *)text, len, record, err);
		free(text);
	}
	for (i = 0; !st && i < w->n; i++) {
		const char *name = w->m[i].name;
		struct cp_record_row *row;
		char hash[64], size[32];
		uint64_t n;

		if (w->m[i].dir || i == w->record_at ||
		    (!strncmp(name, w->dist_info, dl) && (!strcmp(name + dl, "/RECORD.jws") || !strcmp(name + dl, "/RECORD.p7s"))))
			continue;
		row = cp_record_find(&w->record, name);
		if (!row)
			return bad(w, err, "RECORD does not list", name);
		st = hash_member(w, i, hash, &n, err);
		snprintf(size, sizeof(size), "%llu", (unsigned long long)n);
		if (!st && (strcmp(row->hash, hash) || strcmp(row->size, size)))
			st = bad(w, err, "RECORD does not match", name);
	}
	for (i = 0; !st && i < w->record.n; i++)
		if (strcmp(w->record.rows[i].path, record) && w->record.rows[i].hash[0] &&
		    zip_name_locate(w->zip, w->record.rows[i].path, 0) < 0)
			st = bad(w, err, "RECORD lists a file the wheel does not have", w->record.rows[i].path);
	return st;
}

cp_status cp_wheel_open(const char *path, struct cp_wheel **out, cp_error *err)
{
	struct cp_wheel *w = calloc(1, sizeof(*w));
	uint64_t total = 0;
	zip_int64_t n;
	int zerr = 0;
	cp_status st = CP_OK;
	size_t i;

	*out = NULL;
	if (!w || !(w->path = strdup(path))) {
		free(w);
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	}
	w->zip = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &zerr);
	if (!w->zip) {
		zip_error_t ze;

		zip_error_init_with_code(&ze, zerr);
		st = zerr == ZIP_ER_EXISTS
			     ? cp_fail(err, CP_E_INPUT, "%s: a member name appears twice (libzip: %s)", path,
				       zip_error_strerror(&ze))
			     : cp_fail(err, CP_E_INPUT, "%s: not a readable zip archive: %s", path,
				       zip_error_strerror(&ze));
		zip_error_fini(&ze);
	}
	n = st ? 0 : zip_get_num_entries(w->zip, 0);
	if (!st && (n <= 0 || !(w->m = calloc((size_t)n, sizeof(*w->m)))))
		st = cp_fail(err, CP_E_INPUT, "%s: an empty archive is not a wheel", path);
	w->n = st ? 0 : (size_t)n;
	for (i = 0; !st && i < w->n; i++) {
		st = read_member(w, i, err);
		total += w->m[i].size;
	}
	if (!st && total > CP_WHEEL_MAX_TOTAL)
		st = cp_fail(err, CP_E_INPUT, "%s: the members declare %llu bytes in all, more than cypatch unpacks",
			     path, (unsigned long long)total);
	if (!st)
		st = check_names(w, err);
	if (!st)
		st = find_record(w, err);
	if (!st)
		st = check_record(w, err);
	if (st) {
		cp_wheel_close(w);
		return st;
	}
	*out = w;
	return CP_OK;
}

void cp_wheel_close(struct cp_wheel *w)
{
	size_t i;

	if (!w)
		return;
	if (w->zip)
		zip_discard(w->zip);
	for (i = 0; i < w->n; i++)
		free(w->m[i].name);
	free(w->m);
	free(w->dist_info);
	cp_record_free(&w->record);
	free(w->path);
	free(w);
}

cp_status cp_wheel_read(struct cp_wheel *w, size_t i, uint8_t **data, size_t *len, cp_error *err)
{
	zip_file_t *f = zip_fopen_index(w->zip, i, 0);
	uint8_t *buf = malloc(w->m[i].size + 1);
	zip_int64_t got = -1;

	*data = NULL;
	if (f && buf)
		got = zip_fread(f, buf, w->m[i].size + 1);
	if (f)
		zip_fclose(f);
	if (got < 0 || (uint64_t)got != w->m[i].size) {
		free(buf);
		return bad(w, err, "a member cannot be read in full", w->m[i].name);
	}
	*data = buf;
	*len = (size_t)got;
	return CP_OK;
}
