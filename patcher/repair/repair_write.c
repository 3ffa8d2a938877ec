/*
 * repair_write.c - the repaired wheel written (see repair_job.h).
 *
 * The members go in three groups, each in the input's order: those that
 * cannot change (neither an extension still to patch nor a rewritten
 * source), then those that may, then the .dist-info, ending with the note
 * and RECORD (last, where installers and the wheel spec expect it). The first group needs nothing the
 * patching decides, so it is copied into the output on a second thread as
 * soon as the wheel is read: a 1 GB library is copied while the extensions
 * are patched. Unchanged members are copied as their bytes, in the kernel
 * (zip_splice.h); changed ones are written by libzip into a scratch
 * archive and copied from there. The result is read back and checked like
 * any input wheel before it is renamed into place.
 */
#include "util/cleanup_on_signal.h"
#include "util/error.h"
#include "repair/repair_job.h"
#include "util/write.h"
#include "wheel/zip_deflated.h"
#include "wheel/zip_source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static enum cp_repair_group group_of(const struct job *j, size_t i)
{
	const char *name = j->w->m[i].name;
	size_t n = strlen(j->w->dist_info);

	if (!strncmp(name, j->w->dist_info, n) && name[n] == '/')
		return CP_GROUP_DIST_INFO;
	if (j->data[i] || (cp_repair_is_extension(&j->w->m[i]) && !j->bet[i]))
		return CP_GROUP_MAYBE;
	return CP_GROUP_FIRST;
}

/* Fixed before the copy starts, so that its thread reads nothing the
 * patching writes; again after a lost bet. */
static void assign_groups(struct job *j)
{
	size_t i;

	for (i = 0; i < j->w->n; i++)
		j->group[i] = group_of(j, i);
}

static cp_status zip_failed(struct job *j, zip_t *z, const char *what)
{
	return cp_fail(j->err, CP_E_IO, "%s: %s: %s", j->res->out, what, zip_strerror(z));
}

/* Adds member i's new bytes under name, deflated (zip_deflated.h): as
 * *packed when its worker deflated them (the source takes them). */
static cp_status add_member(struct job *j, zip_t *z, size_t i, const char *name, const uint8_t *data,
			    size_t len, cp_deflated **packed)
{
	const struct cp_wheel_member *m = &j->w->m[i];
	zip_error_t ze;
	zip_source_t *src;
	zip_int64_t at;

	zip_error_init(&ze);
	if (packed && *packed) {
		src = cp_zip_source_of(*packed, &ze);
		*packed = NULL;
	} else {
		src = cp_zip_source_deflated(data, len, &ze);
	}
	if (!src) {
		cp_status st = cp_fail(j->err, CP_E_IO, "%s: %s: %s", j->res->out, name, zip_error_strerror(&ze));

		zip_error_fini(&ze);
		return st;
	}
	zip_error_fini(&ze);
	at = zip_file_add(z, name, src, ZIP_FL_ENC_GUESS);
	if (at < 0) {
		zip_source_free(src);
		return zip_failed(j, z, name);
	}
	if (zip_file_set_mtime(z, (zip_uint64_t)at, m->mtime, 0) ||
	    zip_file_set_external_attributes(z, (zip_uint64_t)at, 0, m->opsys, m->attr))
		return zip_failed(j, z, name);
	return CP_OK;
}

/* The changed members, in the order the output takes them, written by
 * libzip into fd (a scratch file, empty). */
static cp_status write_changed(struct job *j, int fd, const uint8_t *rec, size_t rec_len)
{
	enum cp_repair_group g;
	zip_error_t ze;
	zip_source_t *src;
	zip_t *z = NULL;
	cp_status st = CP_OK;
	size_t i;

	zip_error_init(&ze);
	src = cp_zip_source_writer(fd, &ze);
	if (src && !(z = zip_open_from_source(src, ZIP_CREATE | ZIP_TRUNCATE, &ze)))
		zip_source_free(src);
	if (!z)
		st = cp_fail(j->err, CP_E_IO, "%s: cannot create the archive: %s", j->dir, zip_error_strerror(&ze));
	zip_error_fini(&ze);
	for (g = CP_GROUP_MAYBE; g <= CP_GROUP_DIST_INFO; g++)
		for (i = 0; z && !st && i < j->w->n; i++)
			if (j->group[i] == g && j->data[i] && i != j->w->record_at)
				st = add_member(j, z, i, j->w->m[i].name, j->data[i], j->len[i], &j->packed[i]);
	if (z && !st)
		st = add_member(j, z, j->w->record_at, j->note_name, j->note, j->note_len, NULL);
	if (z && !st)
		st = add_member(j, z, j->w->record_at, j->w->m[j->w->record_at].name, rec, rec_len, NULL);
	if (z && !st && zip_close(z))
		st = zip_failed(j, z, "writing the archive failed");
	if (z && st)
		zip_discard(z);
	return st;
}

/* Where the changed members come from: the scratch archive, the next one. */
struct changed {
	int fd;
	struct cp_zip_layout l;
	size_t next;
};

/* Whether the input's member i gives way to a new one written last:
 * RECORD, and the note an earlier repair left; or is left out: the
 * signature of the RECORD that changes (--drop-signature). */
static bool replaced(const struct job *j, size_t i)
{
	return i == j->w->record_at || (j->note_name && !strcmp(j->w->m[i].name, j->note_name)) ||
	       cp_wheel_is_signature(j->w, i);
}

/* A signed wheel whose RECORD changes: its signature would no longer
 * match, and cypatch has no key to sign with. Refused unless asked to
 * leave the signature out (to be signed again after, as with auditwheel). */
static cp_status check_unsigned(const struct job *j)
{
	size_t i;

	for (i = 0; i < j->w->n; i++)
		if (cp_wheel_is_signature(j->w, i) && !j->o->drop_signature)
			return cp_fail(j->err, CP_E_INPUT,
				       "%s: signed (%s): its RECORD would change and cypatch cannot sign it; "
				       "--drop-signature writes the wheel without the signature, to be signed again",
				       j->w->path, j->w->m[i].name);
	return CP_OK;
}

/* Span s of the archive fd appended, after checking that it is the member
 * `name` (libzip's index and the layout's agree). */
static cp_status splice_member(struct job *j, int fd, const struct cp_zip_span *s, const char *name,
			       cp_error *err)
{
	if (!s || !cp_zip_span_named(s, name))
		return cp_fail(err, CP_E_INTERNAL, "%s: %s: the central directory and libzip disagree", j->w->path,
			       name);
	return cp_zip_splice_add(j->out.z, fd, s, err);
}

static cp_status from_changed(struct job *j, struct changed *c, const char *name, cp_error *err)
{
	const struct cp_zip_span *s = c && c->next < c->l.n ? &c->l.m[c->next++] : NULL;

	return splice_member(j, c ? c->fd : -1, s, name, err);
}

/* The members of group g appended: from the input as they were, or from
 * the scratch archive c when they changed. */
static cp_status add_group(struct job *j, enum cp_repair_group g, struct changed *c, cp_error *err)
{
	cp_status st = CP_OK;
	size_t i;

	for (i = 0; !st && i < j->w->n; i++) {
		const char *name = j->w->m[i].name;

		/* only .dist-info members give way; the first group, copied
		 * on the other thread, must not read the note's name */
		if (j->group[i] != g || (g == CP_GROUP_DIST_INFO && replaced(j, i)))
			continue;
		if (j->data[i]) {
			st = from_changed(j, c, name, err);
		} else {
			st = splice_member(j, j->w->fd, &j->w->layout.m[i], j->w->m[i].raw_name, err);
		}
	}
	return st;
}

static void *copy_first(void *arg)
{
	struct job *j = arg;
	struct output *out = &j->out;

	out->ahead_st = add_group(j, CP_GROUP_FIRST, NULL, &out->ahead_err);
	if (!out->ahead_st)
		out->ahead_st = cp_zip_splice_flush(out->z, &out->ahead_err);
	return NULL;
}

static cp_status open_output(struct job *j)
{
	struct output *out = &j->out;
	cp_status st = cp_write_open(j->res->out, 0644, out->tmp, sizeof(out->tmp), &out->fd, j->err);

	if (!st)
		st = cp_zip_splice_new(out->fd, j->res->out, CP_ZIP64_AT, &out->z, j->err); /* named in messages */
	if (st)
		cp_repair_drop_output(j);
	return st;
}

cp_status cp_repair_start_output(struct job *j)
{
	size_t i;
	bool maybe = j->res->metadata_changed;
	cp_status st;

	assign_groups(j);
	for (i = 0; i < j->w->n; i++)
		maybe |= j->group[i] == CP_GROUP_MAYBE;
	if (!maybe)
		return CP_OK; /* untouched unless a bet is lost: nothing to begin */
	st = open_output(j);
	if (!st)
		j->out.copying = !cp_cleanup_thread(&j->out.ahead, copy_first, j);
	return st; /* no thread: the first group is added when the rest is */
}

/* The first group in place: the copy's thread joined, or the copy made
 * here when there was none. */
static cp_status first_group(struct job *j)
{
	struct output *out = &j->out;

	if (out->copying) {
		pthread_join(out->ahead, NULL);
		out->copying = false;
		if (out->ahead_st)
			*j->err = out->ahead_err;
		return out->ahead_st;
	}
	return add_group(j, CP_GROUP_FIRST, NULL, j->err);
}

/* The changed members written into a scratch archive in the private
 * directory (removed at once: it lives as long as its descriptor). */
static cp_status scratch(struct job *j, struct changed *c, const uint8_t *rec, size_t rec_len)
{
	char path[4200];
	cp_status st;

	snprintf(path, sizeof(path), "%s/changed.zip", j->dir);
	c->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (c->fd < 0)
		return cp_fail(j->err, CP_E_IO, "%s: cannot write there: %s", j->dir, strerror(errno));
	unlink(path);
	st = write_changed(j, c->fd, rec, rec_len);
	return st ? st : cp_zip_layout_read(c->fd, path, &c->l, j->err);
}

/* The members written as the input's compressed bytes. */
static cp_status copied_members(struct job *j, bool **copied)
{
	size_t i;

	*copied = calloc(j->w->n, sizeof(**copied));
	if (!*copied)
		return cp_fail(j->err, CP_E_INTERNAL, "out of memory");
	for (i = 0; i < j->w->n; i++)
		(*copied)[i] = !j->data[i] && !replaced(j, i);
	return CP_OK;
}

/* The written archive checked like any input wheel: the members copied as
 * compressed bytes against the input's, the rest hashed against RECORD. */
static cp_status check_output(struct job *j)
{
	struct cp_wheel *check = NULL;
	bool *copied = NULL;
	cp_status st = copied_members(j, &copied);

	if (!st) {
		st = cp_wheel_open_copy(j->out.tmp, j->w, copied, &check, j->err);
		if (st)
			snprintf(j->err->msg, sizeof(j->err->msg), "%s: the repaired wheel failed its check",
				 j->w->path);
		cp_wheel_close(check);
	}
	free(copied);
	return st;
}

/* The whole archive in the temporary file, checked. */
static cp_status write_temp(struct job *j)
{
	struct changed c = { .fd = -1 };
	uint8_t *rec = NULL;
	size_t rec_len = 0;
	cp_status st = check_unsigned(j);

	if (!st)
		st = cp_repair_note(j);
	if (!st)
		st = cp_repair_record(j, &rec, &rec_len);
	if (!st && !j->out.z) {
		assign_groups(j);
		st = open_output(j);
	}
	if (!st)
		st = scratch(j, &c, rec, rec_len); /* while the first group is copied */
	if (!st)
		st = first_group(j);
	if (!st)
		st = add_group(j, CP_GROUP_MAYBE, &c, j->err);
	if (!st)
		st = add_group(j, CP_GROUP_DIST_INFO, &c, j->err);
	if (!st)
		st = from_changed(j, &c, j->note_name, j->err);
	if (!st)
		st = from_changed(j, &c, j->w->m[j->w->record_at].name, j->err);
	if (!st && c.next != c.l.n)
		st = cp_fail(j->err, CP_E_INTERNAL, "%s: a changed member was left out", j->w->path);
	if (!st)
		st = cp_zip_splice_finish(j->out.z, j->err);
	if (!st)
		cp_write_start_writeback(j->out.fd, !j->o->no_fsync); /* while the check reads */
	if (!st)
		st = check_output(j);
	cp_zip_layout_free(&c.l);
	if (c.fd >= 0)
		close(c.fd);
	free(rec);
	return st;
}

static cp_status commit_temp(struct job *j)
{
	struct output *out = &j->out;
	bool sync = !j->o->no_fsync;
	cp_status st = cp_write_close(out->fd, out->tmp, j->res->out, sync, j->err);

	out->fd = -1;
	return st ? st : cp_write_commit(out->tmp, j->res->out, sync, j->err);
}

void cp_repair_drop_output(struct job *j)
{
	struct output *out = &j->out;

	if (out->copying) {
		cp_zip_splice_stop(out->z);
		pthread_join(out->ahead, NULL);
		out->copying = false;
	}
	cp_zip_splice_free(out->z);
	out->z = NULL;
	if (out->fd >= 0)
		cp_write_discard(out->fd, out->tmp);
	out->fd = -1;
}

/* METADATA's requirement from the archive as written (the input, where
 * nothing else changed); written (again) when it changes. */
static cp_status requires_again(struct job *j, const char *wheel)
{
	bool again;
	cp_status st = cp_repair_requires(j, j->out.z ? j->out.tmp : wheel, &again);

	if (!st && again) {
		cp_repair_drop_output(j);
		st = write_temp(j);
	}
	return st;
}

/* Written while the settler reads what was bet on; a lost bet patches
 * that member and writes the archive again. */
cp_status cp_repair_write(struct job *j, const char *wheel)
{
	cp_error later; /* the first error is the one told */
	bool lost = false;
	cp_status st = CP_OK, settled;

	if (!cp_repair_untouched(j))
		st = write_temp(j);
	else
		cp_repair_drop_output(j); /* nothing changed: a copy that began is not wanted */
	settled = cp_repair_settle(j, &lost, st ? &later : j->err);
	st = st ? st : settled;
	if (!st && lost) {
		cp_repair_drop_output(j);
		st = cp_repair_pay(j);
		if (!st && !cp_repair_untouched(j))
			st = write_temp(j);
	}
	if (!st && j->o->kb && !j->o->keep_requires)
		st = requires_again(j, wheel);
	/* the wheel as written binds under every release of the range */
	if (!st && j->o->tolerate)
		st = cp_tolerance_holds(j->out.z ? j->out.tmp : wheel, j->res->out, j->rules, j->o->kb, j->o->tolerate,
					j->err);
	if (st) {
		cp_repair_drop_output(j);
		return st;
	}
	if (!j->out.z) {
		j->res->untouched = true;
		return cp_write_copy(wheel, j->res->out, 0644, !j->o->no_fsync, j->err);
	}
	st = commit_temp(j);
	cp_repair_drop_output(j);
	return st;
}
