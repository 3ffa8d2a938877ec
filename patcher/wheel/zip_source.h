/*
 * zip_source.h - libzip sources over a file descriptor, buffered.
 *
 * libzip's own file source reads 4 KiB at a time with a seek before each
 * read and writes 4 KiB at a time: copying a 1 GB member into a new
 * archive took 3.5 s in 785,000 system calls (docs/performance.md). These
 * read and write a MiB at a time with pread/pwrite; a read of 64 KiB or
 * more goes straight into the caller's buffer.
 */
#ifndef CP_ZIP_SOURCE_H
#define CP_ZIP_SOURCE_H

#include <zip.h>

/* A read-only source over fd, an open regular file (fd stays the
 * caller's). NULL, with ze set, on failure. */
zip_source_t *cp_zip_source_reader(int fd, zip_error_t *ze);

/* A source that writes a new archive into fd, an empty regular file open
 * for writing (fd stays the caller's): for zip_open_from_source with
 * ZIP_CREATE | ZIP_TRUNCATE. NULL, with ze set, on failure. */
zip_source_t *cp_zip_source_writer(int fd, zip_error_t *ze);

#endif
