/*
 * so_files.c - the cross-checks' inputs (see so_files.h).
 */
#define _XOPEN_SOURCE 700
#include "so_files.h"

#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* nftw has no user pointer, so the walk's state is file-scope; the
 * cross-checks are single-threaded programs. */
static struct {
	int (*check)(const char *path);
	size_t files;
	int bad;
} walk;

static int visit(const char *path, const struct stat *st, int kind, struct FTW *ftw)
{
	size_t len = strlen(path);

	(void)st;
	(void)ftw;
	if (kind != FTW_F || len < 3 || strcmp(path + len - 3, ".so"))
		return 0;
	walk.files++;
	walk.bad = walk.check(path);
	return walk.bad;
}

int so_files_each(char **paths, int n, int (*check)(const char *path), size_t *files)
{
	int i;

	walk.check = check;
	walk.files = 0;
	walk.bad = 0;
	for (i = 0; i < n && !walk.bad; i++) {
		struct stat st;

		if (stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			if (nftw(paths[i], visit, 16, FTW_PHYS) < 0 && !walk.bad) {
				perror(paths[i]);
				walk.bad = 1;
			}
			continue;
		}
		walk.files++;
		walk.bad = check(paths[i]);
	}
	*files = walk.files;
	return walk.bad;
}
