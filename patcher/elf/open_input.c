/*
 * open_input.c - opening an input file without blocking on it.
 *
 * open(2) of a FIFO with no writer waits for one, forever: `cypatch show
 * FIFO` hung. O_NONBLOCK makes that open return at once, and fstat then
 * refuses anything but a regular file before a byte is read.
 */
#include "elf/open_input.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int cp_open_regular(const char *path, struct stat *sb)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	int flags;

	if (fd < 0)
		return -1;
	if (fstat(fd, sb) || !S_ISREG(sb->st_mode)) {
		close(fd);
		return errno = ENOTSUP, -1;
	}
	/* regular files ignore it; cleared so that no reader meets EAGAIN */
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}
