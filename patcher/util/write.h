/* write.h - replacing a file atomically. */
#ifndef CP_WRITE_H
#define CP_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "cypatch.h"

/* strerror(e), but for EFBIG under a file size limit (ulimit -f):
 * "file size limit exceeded (SIGXFSZ)". */
const char *cp_write_strerror(int e);

/* write(2) until all n bytes are written or it fails (-1, errno set). */
int cp_write_all(int fd, const uint8_t *p, size_t n);

/* pwrite(2) until all n bytes are at off, or it fails (-1, errno set). */
int cp_write_all_at(int fd, const uint8_t *p, uint64_t n, uint64_t off);

/* Bytes [from, from + n) of file `in` into `out` at offset `to`:
 * copy_file_range, in the kernel (a reflink where the file system shares
 * extents), or read and written where the kernel cannot. 0, or -1 with
 * errno set (EIO when `in` ends before from + n). */
int cp_write_copy_range(int in, uint64_t from, int out, uint64_t to, uint64_t n);

/* The whole of file `in` into `out`, as cp_write_copy_range. */
int cp_write_copy_fd(int in, int out);

/* Refuses (CP_E_IO) to replace a file that the caller could not write
 * itself and whose owner it cannot keep (not root, not the owner): the
 * rename would hand another user's file to the caller. Call it before
 * writing anything. */
cp_status cp_write_may_replace(const char *target, cp_error *err);

/* An empty file beside `target` (same directory, so that rename is
 * atomic) with mode bits `mode`, and the owner and group of the file
 * `target` when there is one (as far as the caller may give them), open for writing as *fd; its path goes to
 * tmp (size tmpsz). */
cp_status cp_write_open(const char *target, mode_t mode, char *tmp, size_t tmpsz, int *fd,
			cp_error *err);

/* Flushes fd to disk (when sync) and closes it; on failure, tmp is removed.
 * Without sync (--no-fsync) the rename stays atomic for every reader, but a
 * power loss may leave the output empty: what cp and patchelf give. */
cp_status cp_write_close(int fd, const char *tmp, const char *target, bool sync, cp_error *err);

/* When sync, starts writing fd's dirty pages to disk and returns: the disk
 * works while the caller checks the output; cp_write_close's fsync waits. */
void cp_write_start_writeback(int fd, bool sync);

/* Closes fd and removes tmp: the output is abandoned. */
void cp_write_discard(int fd, const char *tmp);

/* A new file beside `target` (same directory, so that rename is atomic),
 * holding data, with mode bits `mode`: a scratch copy read back at once,
 * so not flushed to disk. Its path goes to tmp (size tmpsz). Nothing is
 * left behind on failure. */
cp_status cp_write_temp(const char *target, const uint8_t *data, size_t len, mode_t mode,
			char *tmp, size_t tmpsz, cp_error *err);

/* Renames tmp over target and flushes the directory (when sync); unlinks
 * tmp on failure. */
cp_status cp_write_commit(const char *tmp, const char *target, bool sync, cp_error *err);

/* Copies src to target through a temporary file and a rename. */
cp_status cp_write_copy(const char *src, const char *target, mode_t mode, bool sync, cp_error *err);

#endif
