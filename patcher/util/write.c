/*
 * write.c - atomic output: a temporary file in the target's directory,
 * written and fsynced, then renamed over the target. A crash leaves either
 * the old file or the new one, never a part of either. Without the fsync
 * (--no-fsync) readers still see one or the other, but after a power loss
 * the new one may be empty. A replaced file keeps its owner and group.
 */
#include "util/write.h"
#include "util/cleanup_on_signal.h"
#include "util/error.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static void dir_of(const char *path, char *dir, size_t n)
{
	char copy[4096];

	snprintf(copy, sizeof(copy), "%s", path);
	snprintf(dir, n, "%s", dirname(copy));
}

const char *cp_write_strerror(int e)
{
	struct rlimit rl;

	/* SIGXFSZ is ignored while writing (cleanup_on_signal.h): a write past
	 * RLIMIT_FSIZE fails with EFBIG instead of killing cypatch */
	if (e == EFBIG && !getrlimit(RLIMIT_FSIZE, &rl) && rl.rlim_cur != RLIM_INFINITY)
		return "file size limit exceeded (SIGXFSZ)";
	return strerror(e);
}

int cp_write_all(int fd, const uint8_t *p, size_t n)
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

cp_status cp_write_may_replace(const char *target, cp_error *err)
{
	struct stat sb;

	if (stat(target, &sb) || geteuid() == 0 || sb.st_uid == geteuid())
		return CP_OK; /* a new file, or one whose owner we can keep */
	if (!faccessat(AT_FDCWD, target, W_OK, AT_EACCESS))
		return CP_OK; /* writable: it becomes ours, as an editor's save does */
	return cp_fail(err, CP_E_IO, "%s: not writable by this user, and it would be replaced by a file "
		       "this user owns", target);
}

/* The replaced file's owner and group, then the mode: fchown clears the
 * set-user-ID bit, so fchmod comes after. A caller that may write the file
 * but not give it away (cp_write_may_replace) keeps what it can. */
static int keep_owner(int fd, const char *target, mode_t mode)
{
	struct stat sb;

	if (!stat(target, &sb) && fchown(fd, sb.st_uid, sb.st_gid) && errno == EPERM)
		(void)!fchown(fd, (uid_t)-1, sb.st_gid);
	return fchmod(fd, mode & 07777);
}

cp_status cp_write_open(const char *target, mode_t mode, char *tmp, size_t tmpsz, int *fd,
			cp_error *err)
{
	char dir[4096];
	sigset_t old;
	int saved;

	dir_of(target, dir, sizeof(dir));
	if ((size_t)snprintf(tmp, tmpsz, "%s/.cypatch-XXXXXX", dir) >= tmpsz)
		return cp_fail(err, CP_E_IO, "%s: path too long", target);
	/* registered before a signal can be taken (cleanup_on_signal.h) */
	cp_cleanup_hold(&old);
	*fd = mkstemp(tmp);
	saved = errno;
	if (*fd >= 0)
		cp_cleanup_add(tmp, false);
	cp_cleanup_release(&old);
	if (*fd < 0)
		return cp_fail(err, CP_E_IO, "%s: cannot create a file in %s: %s", target, dir, strerror(saved));
	if (keep_owner(*fd, target, mode)) {
		int saved = errno;

		cp_write_discard(*fd, tmp);
		return cp_fail(err, CP_E_IO, "%s: writing the output failed: %s", target, cp_write_strerror(saved));
	}
	return CP_OK;
}

cp_status cp_write_close(int fd, const char *tmp, const char *target, bool sync, cp_error *err)
{
	int saved;

	if ((!sync || fsync(fd) == 0) && close(fd) == 0)
		return CP_OK;
	saved = errno;
	close(fd); /* after a failed fsync; EBADF after a failed close */
	unlink(tmp);
	cp_cleanup_remove(tmp);
	return cp_fail(err, CP_E_IO, "%s: writing the output failed: %s", target, cp_write_strerror(saved));
}

void cp_write_start_writeback(int fd, bool sync)
{
	if (sync)
		sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
}

void cp_write_discard(int fd, const char *tmp)
{
	close(fd);
	unlink(tmp);
	cp_cleanup_remove(tmp);
}

cp_status cp_write_temp(const char *target, const uint8_t *data, size_t len, mode_t mode,
			char *tmp, size_t tmpsz, cp_error *err)
{
	int fd;
	cp_status st = cp_write_open(target, mode, tmp, tmpsz, &fd, err);

	if (st)
		return st;
	if (cp_write_all(fd, data, len)) {
		int saved = errno;

		cp_write_discard(fd, tmp);
		return cp_fail(err, CP_E_IO, "%s: writing the output failed: %s", target, cp_write_strerror(saved));
	}
	return cp_write_close(fd, tmp, target, false, err);
}

cp_status cp_write_commit(const char *tmp, const char *target, bool sync, cp_error *err)
{
	char dir[4096];
	int fd;

	cp_cleanup_committing(target);
	if (rename(tmp, target)) {
		int saved = errno;

		unlink(tmp);
		cp_cleanup_remove(tmp);
		return cp_fail(err, CP_E_IO, "%s: cannot replace it: %s", target, strerror(saved));
	}
	cp_cleanup_remove(tmp);
	if (!sync)
		return CP_OK;
	dir_of(target, dir, sizeof(dir));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	return CP_OK;
}

int cp_write_all_at(int fd, const uint8_t *p, uint64_t n, uint64_t off)
{
	while (n > 0) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		off += (uint64_t)w;
		n -= (uint64_t)w;
	}
	return 0;
}

/* copy_file_range cannot join these two files: the kernel's errors that
 * say so, rather than that the copy failed. */
static bool no_kernel_copy(int e)
{
	return e == EXDEV || e == EINVAL || e == ENOSYS || e == EOPNOTSUPP || e == EBADF;
}

int cp_write_copy_range(int in, uint64_t from, int out, uint64_t to, uint64_t n)
{
	loff_t at = (loff_t)from, put = (loff_t)to;
	const loff_t end = (loff_t)(from + n);
	uint8_t buf[1 << 16];
	ssize_t k;

	while (at < end) {
		k = copy_file_range(in, &at, out, &put, (size_t)(end - at), 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k == 0)
			return errno = EIO, -1; /* the input ended early: it changed under us */
		if (k < 0 && no_kernel_copy(errno))
			break;
		if (k < 0)
			return -1;
	}
	/* no copy_file_range between these files: through a buffer */
	while (at < end) {
		k = pread(in, buf, (size_t)(end - at) < sizeof(buf) ? (size_t)(end - at) : sizeof(buf), at);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k == 0 ? (errno = EIO, -1) : -1;
		if (cp_write_all_at(out, buf, (uint64_t)k, (uint64_t)put))
			return -1;
		at += k;
		put += k;
	}
	return 0;
}

int cp_write_copy_fd(int in, int out)
{
	struct stat sb;

	if (fstat(in, &sb))
		return -1;
	return cp_write_copy_range(in, 0, out, 0, (uint64_t)sb.st_size);
}

cp_status cp_write_copy(const char *src, const char *target, mode_t mode, bool sync, cp_error *err)
{
	char tmp[4200];
	int in = open(src, O_RDONLY | O_CLOEXEC), fd;
	cp_status st;

	if (in < 0)
		return cp_fail(err, CP_E_INPUT, "%s: cannot open: %s", src, strerror(errno));
	st = cp_write_open(target, mode, tmp, sizeof(tmp), &fd, err);
	if (!st && cp_write_copy_fd(in, fd)) {
		int saved = errno;

		cp_write_discard(fd, tmp);
		st = cp_fail(err, CP_E_IO, "%s: writing the copy failed: %s", target, cp_write_strerror(saved));
	} else if (!st) {
		st = cp_write_close(fd, tmp, target, sync, err);
	}
	close(in);
	return st ? st : cp_write_commit(tmp, target, sync, err);
}
