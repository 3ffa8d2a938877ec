/*
 * so_files.h - the cross-checks' inputs: every file named, every *.so
 * below each directory named, and every *.so member of each wheel (*.whl)
 * named or below, unpacked into a scratch file for its check; an argument
 * @LIST names a file that lists such paths, one to a line.
 */
#ifndef CP_TEST_SO_FILES_H
#define CP_TEST_SO_FILES_H

#include <stddef.h>

/* check(path) for each file, in order, until one returns non-zero, which
 * is returned (1 when a directory cannot be walked); *files counts the
 * files checked. */
int so_files_each(char **paths, int n, int (*check)(const char *path), size_t *files);

#endif
