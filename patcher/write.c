/*
 * write.c - atomic output: a temporary file in the target's directory,
 * written and fsynced, then renamed over the target. A crash leaves either
 * the old file or the new one, never a part of either.
 */
#include "write.h"
#include "error.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void dir_of(const char *path, char *dir, size_t n)
{
	char copy[4096];

	snprintf(copy, sizeof(copy), "%s", path);
	snprintf(dir, n, "%s", dirname(copy));
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

cp_status cp_write_temp(const char *target, const uint8_t *data, size_t len, mode_t mode,
			char *tmp, size_t tmpsz, cp_error *err)
{
	char dir[4096];
	int fd, saved;

	dir_of(target, dir, sizeof(dir));
	if ((size_t)snprintf(tmp, tmpsz, "%s/.cypatch-XXXXXX", dir) >= tmpsz)
		return cp_fail(err, CP_E_IO, "%s: path too long", target);
	fd = mkstemp(tmp);
	if (fd < 0)
		return cp_fail(err, CP_E_IO, "%s: cannot create a file in %s: %s", target, dir, strerror(errno));
	if (write_all(fd, data, len) || fchmod(fd, mode & 07777) || fsync(fd)) {
		saved = errno;
		close(fd);
		unlink(tmp);
		return cp_fail(err, CP_E_IO, "%s: writing the output failed: %s", target, strerror(saved));
	}
	if (close(fd)) {
		saved = errno;
		unlink(tmp);
		return cp_fail(err, CP_E_IO, "%s: writing the output failed: %s", target, strerror(saved));
	}
	return CP_OK;
}

cp_status cp_write_commit(const char *tmp, const char *target, cp_error *err)
{
	char dir[4096];
	int fd;

	if (rename(tmp, target)) {
		int saved = errno;

		unlink(tmp);
		return cp_fail(err, CP_E_IO, "%s: cannot replace it: %s", target, strerror(saved));
	}
	dir_of(target, dir, sizeof(dir));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	return CP_OK;
}

cp_status cp_write_copy(const char *src, const char *target, mode_t mode, cp_error *err)
{
	char dir[4096], tmp[4200], buf[1 << 16];
	int in = open(src, O_RDONLY | O_CLOEXEC), fd = -1, saved = 0;
	ssize_t n = 0;

	dir_of(target, dir, sizeof(dir));
	snprintf(tmp, sizeof(tmp), "%s/.cypatch-XXXXXX", dir);
	if (in < 0)
		return cp_fail(err, CP_E_INPUT, "%s: cannot open: %s", src, strerror(errno));
	fd = mkstemp(tmp);
	if (fd < 0) {
		saved = errno;
		close(in);
		return cp_fail(err, CP_E_IO, "%s: cannot create a file in %s: %s", target, dir, strerror(saved));
	}
	while ((n = read(in, buf, sizeof(buf))) > 0 && !write_all(fd, (const uint8_t *)buf, (size_t)n))
		;
	saved = errno;
	if (n != 0 || fchmod(fd, mode & 07777) || fsync(fd) || close(fd)) {
		if (!saved)
			saved = errno;
		close(in);
		unlink(tmp);
		return cp_fail(err, CP_E_IO, "%s: writing the copy failed: %s", target, strerror(saved));
	}
	close(in);
	return cp_write_commit(tmp, target, err);
}
