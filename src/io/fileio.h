/* fileio.h — how tinytrain touches the file system where data could be
 * lost: the one atomic writer (every file the program writes: checkpoints,
 * exports, loss.csv, loss.svg), opening an input without blocking on a FIFO
 * or device, the exclusive lock on a run's output folder, and the removal of
 * temporary files left behind by a killed process.
 *
 * Promises (docs/RELIABILITY.md):
 *   - a file written with tt_write_atomic is either the old file or the new
 *     one, whole, after a crash or power loss: the data goes to
 *     <path>.tmp.<pid>, created with O_EXCL | O_NOFOLLOW (a planted file or
 *     link there is never followed or reused), is fsync'ed, renamed over
 *     <path>, and the folder is fsync'ed;
 *   - an input that is not a regular file is refused at once (never blocks);
 *   - one process at a time trains into an output folder (tt_dir_lock). */
#ifndef TT_FILEIO_H
#define TT_FILEIO_H

#include <stdio.h>

#include "tt.h"

/* Writes path atomically: body(f, ctx, st) writes the contents to f and
 * returns a status. On any failure nothing is left but the old file. */
typedef int (*tt_write_body)(FILE *f, const void *ctx, tt_status *st);
int tt_write_atomic(const char *path, tt_write_body body, const void *ctx, tt_status *st);
/* The same for a buffer. */
int tt_write_atomic_buf(const char *path, const void *data, size_t n, tt_status *st);

/* Opens path for reading if it is a regular file (without blocking on a
 * FIFO): *fd and *size set, or an error naming what path is instead. */
int tt_open_regular(const char *path, int *fd, uint64_t *size, tt_status *st);

/* Reads the size bytes of fd (opened by tt_open_regular, which gave size)
 * into a new buffer *buf (free() it) with a NUL after them, and closes fd
 * in every case. TT_ENOMEM, or TT_EIO when the file ends early or a read
 * fails; the caller words the message. */
int tt_read_all(int fd, uint64_t size, char **buf, tt_status *st);

/* 1 if a and b are the same existing file (device + inode), else 0. */
int tt_same_file(const char *a, const char *b);

/* The exclusive lock of an output folder for the whole run: a lock file
 * (dir/.tinytrain.lock) held with flock and holding the owner's pid. A
 * second run gets TT_EBUSY: "output folder 'D' is in use by another
 * tinytrain run (pid N)". Released by tt_dir_unlock or by the process
 * ending (also kill -9). Where the file system cannot lock (flock
 * unsupported), the run goes on unlocked. */
typedef struct {
    int fd;
} tt_dir_lock_t;
int tt_dir_lock(const char *dir, tt_dir_lock_t *lk, tt_status *st);
void tt_dir_unlock(tt_dir_lock_t *lk);

/* Removes dir/<name>.tmp.<pid> for each of names[0..n) whose process no
 * longer runs (a kill during a save); only regular files, never a link.
 * Call with the folder locked. Returns how many were removed. */
int tt_remove_stale_tmp(const char *dir, const char *const *names, int n);

#endif
