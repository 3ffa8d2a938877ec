/*
 * cleanup_on_signal.h - a registry of paths to remove on a fatal signal.
 *
 * SIGTERM, SIGINT or SIGHUP while a command writes would leave its
 * temporary file (a full-size `.cypatch-*` beside the target) or repair's
 * private folder behind. A command that writes declares its output with
 * cp_cleanup_begin; the temporary paths it creates are registered before
 * anyone else could see them; on one of those signals the handler removes
 * every registered path (files first, then folders), prints
 * `cypatch: OUTPUT: interrupted by SIGxxx` and exits 2. The signals are
 * taken by the thread that declared the output only: cp_cleanup_thread
 * starts the others with them blocked, so that holding them
 * (cp_cleanup_hold) across a creation and its registration leaves no
 * moment where a file exists unregistered.
 *
 * SIGXFSZ (a file size limit, `ulimit -f`) is ignored from cp_cleanup_begin
 * on: the write then fails with EFBIG and the ordinary error path removes
 * the temporary file and says so (cp_write_strerror).
 */
#ifndef CP_CLEANUP_ON_SIGNAL_H
#define CP_CLEANUP_ON_SIGNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include "cypatch.h"

/* cp_cleanup_begin and cp_cleanup_end, which a command calls around its
 * writing, are public (cypatch.h). cp_cleanup_begin installs the handlers
 * once; a signal ignored when cypatch started, as under nohup, stays
 * ignored. cp_cleanup_end also releases what cp_cleanup_committing held. */

/* Registers path (a folder when dir: removed after the files). False when
 * every slot is taken: the path is then not removed on a signal. */
bool cp_cleanup_add(const char *path, bool dir);

/* Unregisters path (after it was renamed or removed). */
void cp_cleanup_remove(const char *path);

/* The handled signals blocked in the calling thread (old: the mask to
 * give back to cp_cleanup_release). */
void cp_cleanup_hold(sigset_t *old);
void cp_cleanup_release(const sigset_t *old);

/* Called just before target is renamed into place: when target is the
 * declared output, the signals stay held until cp_cleanup_end, so that a
 * signal after the rename is not told as an interruption. */
void cp_cleanup_committing(const char *target);

/* pthread_create, the new thread with the handled signals blocked. */
int cp_cleanup_thread(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
