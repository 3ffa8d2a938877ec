/*
 * zip_source.c - libzip sources over a file descriptor (see zip_source.h).
 */
#include "wheel/zip_source.h"
#include "util/write.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A streamed read or write moves a MiB per system call; a read that does
 * not follow the last one (a header, the central directory) reads 64 KiB,
 * so that checking an archive of many small members reads little. */
#define BIG (1u << 20)
#define SMALL (64u << 10)

struct source {
	int fd;
	zip_error_t error;
	uint8_t *buf;
	uint64_t buf_at;  /* file offset of buf[0] */
	size_t buf_len;   /* bytes held: read ahead, or written and not yet flushed */
	uint64_t pos;     /* where the next read or write goes */
	uint64_t end;     /* the file's size: at open (reader), so far (writer) */
};

static zip_int64_t fail(struct source *s, int zip_code, int sys)
{
	zip_error_set(&s->error, zip_code, sys);
	return -1;
}

static struct source *source_new(int fd, zip_error_t *ze)
{
	struct source *s = calloc(1, sizeof(*s));

	if (s && !(s->buf = malloc(BIG))) {
		free(s);
		s = NULL;
	}
	if (!s) {
		zip_error_set(ze, ZIP_ER_MEMORY, 0);
		return NULL;
	}
	s->fd = fd;
	zip_error_init(&s->error);
	return s;
}

static zip_int64_t source_free(struct source *s)
{
	zip_error_fini(&s->error);
	free(s->buf);
	free(s);
	return 0;
}

static zip_source_t *wrap(struct source *s, zip_source_callback fn, zip_error_t *ze)
{
	zip_source_t *src;

	if (!s)
		return NULL;
	src = zip_source_function_create(fn, s, ze);
	if (!src)
		source_free(s);
	return src;
}

/* ---- reading ---- */

static zip_int64_t stat_fd(struct source *s, void *data, zip_uint64_t len)
{
	zip_stat_t *st = data;
	struct stat sb;

	if (len < sizeof(*st))
		return fail(s, ZIP_ER_INVAL, 0);
	if (fstat(s->fd, &sb))
		return fail(s, ZIP_ER_READ, errno);
	zip_stat_init(st);
	s->end = (uint64_t)sb.st_size;
	st->size = (zip_uint64_t)sb.st_size;
	st->mtime = sb.st_mtime;
	st->valid = ZIP_STAT_SIZE | ZIP_STAT_MTIME;
	return (zip_int64_t)sizeof(*st);
}

static ssize_t pread_at(const struct source *s, void *buf, size_t n)
{
	ssize_t got;

	do
		got = pread(s->fd, buf, n, (off_t)s->pos);
	while (got < 0 && errno == EINTR);
	return got;
}

/* The bytes at s->pos into the buffer: a MiB when reading on from the
 * last fill, 64 KiB otherwise. */
static zip_int64_t fill(struct source *s)
{
	ssize_t got = pread_at(s, s->buf, s->pos == s->buf_at + s->buf_len ? BIG : SMALL);

	if (got < 0)
		return fail(s, ZIP_ER_READ, errno);
	s->buf_at = s->pos;
	s->buf_len = (size_t)got;
	return got;
}

/* Straight into the caller's buffer: libzip passes it through when a
 * member is read raw, and a copy through ours would cost a memcpy of the
 * member (0.07 s per GB). */
static zip_int64_t read_direct(struct source *s, uint8_t *out, zip_uint64_t len)
{
	ssize_t got = pread_at(s, out, len);

	if (got < 0)
		return fail(s, ZIP_ER_READ, errno);
	s->pos += (uint64_t)got;
	return got;
}

static zip_int64_t read_at(struct source *s, uint8_t *out, zip_uint64_t len)
{
	zip_uint64_t done = 0;

	while (done < len) {
		uint64_t off = s->pos - s->buf_at, n;

		if ((s->pos < s->buf_at || off >= s->buf_len) && len - done >= SMALL) {
			zip_int64_t got = read_direct(s, out + done, len - done);

			if (got <= 0)
				return got < 0 ? -1 : (zip_int64_t)done;
			done += (zip_uint64_t)got;
			continue;
		}
		if (s->pos < s->buf_at || off >= s->buf_len) {
			zip_int64_t got = fill(s);

			if (got < 0)
				return -1;
			if (got == 0)
				break; /* end of file */
			continue;
		}
		n = s->buf_len - off < len - done ? s->buf_len - off : len - done;
		memcpy(out + done, s->buf + off, n);
		done += n;
		s->pos += n;
	}
	return (zip_int64_t)done;
}

/* libzip seeks before every read: against the size taken at open. */
static zip_int64_t seek_to(struct source *s, void *data, zip_uint64_t len)
{
	zip_int64_t to = zip_source_seek_compute_offset(s->pos, s->end, data, len, &s->error);

	if (to < 0)
		return -1;
	s->pos = (uint64_t)to;
	return 0;
}

static zip_int64_t reader_cb(void *ud, void *data, zip_uint64_t len, zip_source_cmd_t cmd)
{
	struct source *s = ud;

	switch (cmd) {
	case ZIP_SOURCE_OPEN: {
		zip_stat_t st;

		s->pos = 0;
		return stat_fd(s, &st, sizeof(st)) < 0 ? -1 : 0;
	}
	case ZIP_SOURCE_READ:
		return read_at(s, data, len);
	case ZIP_SOURCE_CLOSE:
		return 0;
	case ZIP_SOURCE_SEEK:
		return seek_to(s, data, len);
	case ZIP_SOURCE_TELL:
		return (zip_int64_t)s->pos;
	case ZIP_SOURCE_STAT:
		return stat_fd(s, data, len);
	case ZIP_SOURCE_ERROR:
		return zip_error_to_data(&s->error, data, len);
	case ZIP_SOURCE_FREE:
		return source_free(s);
	case ZIP_SOURCE_SUPPORTS:
		return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE,
						      ZIP_SOURCE_SEEK, ZIP_SOURCE_TELL, ZIP_SOURCE_STAT,
						      ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE, -1);
	default:
		return fail(s, ZIP_ER_OPNOTSUPP, 0);
	}
}

zip_source_t *cp_zip_source_reader(int fd, zip_error_t *ze)
{
	return wrap(source_new(fd, ze), reader_cb, ze);
}

/* ---- writing ---- */

static zip_int64_t flush(struct source *s)
{
	if (s->buf_len && cp_write_all_at(s->fd, s->buf, s->buf_len, s->buf_at))
		return fail(s, ZIP_ER_WRITE, errno);
	s->buf_len = 0;
	return 0;
}

/* Appended to the buffer while the writes follow each other; a write
 * elsewhere (libzip going back to a local header) flushes first. */
static zip_int64_t write_at(struct source *s, const uint8_t *p, zip_uint64_t len)
{
	if (s->buf_len && s->pos != s->buf_at + s->buf_len && flush(s))
		return -1;
	if (!s->buf_len)
		s->buf_at = s->pos;
	if (s->buf_len + len > BIG) {
		if (flush(s))
			return -1;
		s->buf_at = s->pos;
	}
	if (len >= BIG) {
		if (cp_write_all_at(s->fd, p, len, s->pos))
			return fail(s, ZIP_ER_WRITE, errno);
	} else {
		memcpy(s->buf + s->buf_len, p, len);
		s->buf_len += len;
	}
	s->pos += len;
	if (s->pos > s->end)
		s->end = s->pos;
	return (zip_int64_t)len;
}

static zip_int64_t truncate_all(struct source *s)
{
	s->buf_len = 0;
	s->pos = s->end = 0;
	return ftruncate(s->fd, 0) ? fail(s, ZIP_ER_WRITE, errno) : 0;
}

static zip_int64_t writer_cb(void *ud, void *data, zip_uint64_t len, zip_source_cmd_t cmd)
{
	struct source *s = ud;

	switch (cmd) {
	case ZIP_SOURCE_STAT:
		/* no archive yet: libzip starts a new one */
		return fail(s, ZIP_ER_READ, ENOENT);
	case ZIP_SOURCE_BEGIN_WRITE:
		return truncate_all(s);
	case ZIP_SOURCE_WRITE:
		return write_at(s, data, len);
	case ZIP_SOURCE_SEEK_WRITE:
		return flush(s) ? -1 : seek_to(s, data, len);
	case ZIP_SOURCE_TELL_WRITE:
		return (zip_int64_t)s->pos;
	case ZIP_SOURCE_COMMIT_WRITE:
		return flush(s);
	case ZIP_SOURCE_ROLLBACK_WRITE:
	case ZIP_SOURCE_REMOVE:
		return truncate_all(s);
	case ZIP_SOURCE_ERROR:
		return zip_error_to_data(&s->error, data, len);
	case ZIP_SOURCE_FREE:
		return source_free(s);
	case ZIP_SOURCE_SUPPORTS:
		/* libzip opens only what also claims the reading commands */
		return zip_source_make_command_bitmap(
			ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_SEEK, ZIP_SOURCE_TELL,
			ZIP_SOURCE_STAT, ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE, ZIP_SOURCE_BEGIN_WRITE,
			ZIP_SOURCE_WRITE, ZIP_SOURCE_COMMIT_WRITE, ZIP_SOURCE_ROLLBACK_WRITE,
			ZIP_SOURCE_SEEK_WRITE, ZIP_SOURCE_TELL_WRITE, ZIP_SOURCE_REMOVE, -1);
	default:
		/* the reading commands: a new archive is never read back */
		return fail(s, ZIP_ER_OPNOTSUPP, 0);
	}
}

zip_source_t *cp_zip_source_writer(int fd, zip_error_t *ze)
{
	return wrap(source_new(fd, ze), writer_cb, ze);
}
