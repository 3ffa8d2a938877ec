/*
 * repair_job.h - one wheel's repair, shared by repair.c (what changes:
 * extensions, sources, METADATA, the bets on large libraries) and
 * repair_write.c (the archive written, checked and renamed into place).
 */
#ifndef CP_REPAIR_JOB_H
#define CP_REPAIR_JOB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zip.h>
#include "cypatch.h"
#include "wheel/wheel.h"
#include "wheel/zip_deflated.h"
#include "wheel/zip_layout.h"
#include "wheel/zip_splice.h"

/* The bets settled on a second thread (repair.c, BET_BYTES). */
struct settler {
	zip_t *z;             /* its own reader of the wheel */
	pthread_t thread;
	bool running;
	cp_error err;
	cp_status st;
	bool lost;
};

/* The output under way (repair_write.c). */
struct output {
	int fd;               /* the temporary file, or -1 */
	char tmp[4200];
	cp_zip_splice *z;
	pthread_t ahead;      /* copying the members that cannot change */
	bool copying;
	cp_error ahead_err;
	cp_status ahead_st;
};

/* Where a member goes in the output (repair_write.c). */
enum cp_repair_group { CP_GROUP_FIRST, CP_GROUP_MAYBE, CP_GROUP_DIST_INFO };

struct job {
	const struct cp_repair_opts *o;
	const cp_rules *rules;
	struct cp_wheel *w;
	struct cp_repair_result *res;
	cp_error *err;
	char dir[4096];          /* private unpacking directory */
	uint8_t **data;          /* per member: new bytes, or NULL to copy */
	size_t *len;
	cp_deflated **packed;    /* per patched extension: data deflated by its
				  * worker (or NULL: deflated when written) */
	uint8_t *note;           /* cypatch.json */
	size_t note_len;
	char *note_name;
	bool *bet;               /* per member: bet not to be an extension (BET_BYTES) */
	bool *lost;              /* per member: a bet lost, the member to patch */
	enum cp_repair_group *group;
	unsigned walk_cores;     /* each extension's code walk's (cp_patch_opts) */
	struct settler s;
	struct output out;
};

/* repair.c */
bool cp_repair_is_extension(const struct cp_wheel_member *m);
bool cp_repair_untouched(const struct job *j);
/* Waits for the settler (or settles here when it could not start);
 * *lost when a member bet on is an extension after all. Its error goes to
 * err. */
cp_status cp_repair_settle(struct job *j, bool *lost, cp_error *err);
/* The lost bets' members patched now. */
cp_status cp_repair_pay(struct job *j);
/* <dist-info>/cypatch.json and RECORD for what changed. */
cp_status cp_repair_note(struct job *j);
cp_status cp_repair_record(struct job *j, uint8_t **rec, size_t *rec_len);
/* From the output as written (path: the temporary file, or the input
 * where nothing else changes): METADATA's cuda-python / cuda-bindings
 * requirement made the releases it binds under (requires.h); *again when
 * METADATA changed, so that the archive is written (again). */
cp_status cp_repair_requires(struct job *j, const char *path, bool *again);

/* repair_write.c */
/* When anything may change: the output's temporary file, and the members
 * that cannot change copied into it on a second thread. */
cp_status cp_repair_start_output(struct job *j);
/* The repaired wheel (or the input copied when nothing changed) renamed
 * into place, once the bets are settled. */
cp_status cp_repair_write(struct job *j, const char *wheel);
/* The output abandoned: the copy stopped, the temporary file removed. */
void cp_repair_drop_output(struct job *j);

#endif
