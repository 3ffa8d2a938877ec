/*
 * so_files.c - the cross-checks' inputs (see so_files.h).
 */
#define _XOPEN_SOURCE 700
#include "so_files.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

/* nftw has no user pointer, so the walk's state is file-scope; the
 * cross-checks are single-threaded programs. */
static struct {
	int (*check)(const char *path);
	size_t files;
	int bad;
} walk;

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);

	return n >= k && !strcmp(s + n - k, tail);
}

/* Member i of z into a new file at path; 0 when it is there whole. */
static int unpack(zip_t *z, zip_int64_t i, const char *path)
{
	char buf[1 << 16];
	zip_file_t *f = zip_fopen_index(z, (zip_uint64_t)i, 0);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600), bad = !f || fd < 0;
	zip_int64_t got;

	while (!bad && (got = zip_fread(f, buf, sizeof(buf))) != 0)
		bad = got < 0 || write(fd, buf, (size_t)got) != (ssize_t)got;
	if (f)
		zip_fclose(f);
	if (fd >= 0)
		close(fd);
	return bad;
}

/* Every *.so member of the wheel, checked from a scratch copy. */
static int wheel(const char *whl)
{
	char dir[] = "/tmp/so_files.XXXXXX", path[4200];
	zip_int64_t i, n;
	zip_t *z;
	int zerr;

	if (!mkdtemp(dir) || !(z = zip_open(whl, ZIP_RDONLY, &zerr))) {
		fprintf(stderr, "so_files: %s: cannot unpack\n", whl);
		rmdir(dir);
		return 1;
	}
	n = zip_get_num_entries(z, 0);
	for (i = 0; i < n && !walk.bad; i++) {
		const char *name = zip_get_name(z, (zip_uint64_t)i, 0), *base;

		if (!name || !ends_with(name, ".so"))
			continue;
		base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
		snprintf(path, sizeof(path), "%s/%lld-%s", dir, (long long)i, base);
		walk.files++;
		walk.bad = unpack(z, i, path) ? 1 : walk.check(path);
		if (walk.bad)
			fprintf(stderr, "so_files: (%s of %s)\n", name, whl);
		unlink(path);
	}
	zip_discard(z);
	rmdir(dir);
	return walk.bad;
}

static int visit(const char *path, const struct stat *st, int kind, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (kind != FTW_F)
		return 0;
	if (ends_with(path, ".whl"))
		return wheel(path);
	if (!ends_with(path, ".so"))
		return 0;
	walk.files++;
	walk.bad = walk.check(path);
	return walk.bad;
}

static void each(const char *path);

/* Each line of the list file is a path, as if named on the command line. */
static void listed(const char *list)
{
	char line[4200];
	FILE *f = fopen(list, "r");

	if (!f) {
		perror(list);
		walk.bad = 1;
		return;
	}
	while (!walk.bad && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (line[0])
			each(line);
	}
	fclose(f);
}

static void each(const char *path)
{
	struct stat st;

	if (path[0] == '@') {
		listed(path + 1);
		return;
	}
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (nftw(path, visit, 16, FTW_PHYS) < 0 && !walk.bad) {
			perror(path);
			walk.bad = 1;
		}
		return;
	}
	if (ends_with(path, ".whl")) {
		walk.bad = wheel(path);
		return;
	}
	walk.files++;
	walk.bad = walk.check(path);
}

int so_files_each(char **paths, int n, int (*check)(const char *path), size_t *files)
{
	int i;

	walk.check = check;
	walk.files = 0;
	walk.bad = 0;
	for (i = 0; i < n && !walk.bad; i++)
		each(paths[i]);
	*files = walk.files;
	return walk.bad;
}
