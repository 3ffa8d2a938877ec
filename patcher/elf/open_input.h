/* open_input.h - opening an input file without blocking on it. */
#ifndef CP_OPEN_INPUT_H
#define CP_OPEN_INPUT_H

#include <sys/stat.h>

/* Opens path read-only and returns its descriptor, with its status in
 * *sb; or -1 with errno set: ENOTSUP where path is not a regular file (a
 * FIFO, a device, a folder). Never waits for a FIFO's writer. */
int cp_open_regular(const char *path, struct stat *sb);

#endif
