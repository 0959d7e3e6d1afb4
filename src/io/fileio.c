/* fileio.c — atomic writes, non-blocking opens of inputs, the output-folder
 * lock and stale temporary files (fileio.h). */
#define _GNU_SOURCE
#include "fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static void fsync_parent_dir(const char *path) {
    size_t n = strlen(path);
    char *dir = malloc(n + 2);
    if (!dir) return;
    memcpy(dir, path, n + 1);
    char *slash = strrchr(dir, '/');
    if (!slash) strcpy(dir, ".");
    else if (slash == dir) dir[1] = 0;
    else *slash = 0;
    int fd = open(dir, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
    if (fd >= 0) {
        (void)fsync(fd); /* best effort: not every file system can fsync a folder */
        close(fd);
    }
    free(dir);
}

/* A fresh temporary file next to path, never an existing file or a link:
 * O_EXCL | O_NOFOLLOW. A leftover of an earlier process with our pid (pids
 * are reused) is removed only if it is a plain file. */
static int open_tmp(const char *path, char *tmp, size_t cap, tt_status *st) {
    if ((size_t)snprintf(tmp, cap, "%s.tmp.%ld", path, (long)getpid()) >= cap)
        return tt_fail(st, TT_EINVAL, "path too long: '%.200s...'", path);
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0) return fd;
        if (errno != EEXIST) break;
        struct stat sb;
        if (attempt == 0 && lstat(tmp, &sb) == 0 && S_ISREG(sb.st_mode) && unlink(tmp) == 0) continue;
        errno = EEXIST;
        return -tt_fail(st, TT_EIO, "cannot write '%.300s': '%.300s' exists and is not a plain file", path, tmp);
    }
    return -tt_fail(st, TT_EIO, "cannot write '%.300s': %s", path, strerror(errno));
}

int tt_write_atomic(const char *path, tt_write_body body, const void *ctx, tt_status *st) {
    if (!path || !*path) return tt_fail(st, TT_EINVAL, "no output path given");
    size_t cap = strlen(path) + 32;
    char *tmp = malloc(cap);
    if (!tmp) return tt_fail(st, TT_ENOMEM, "out of memory");
    int fd = open_tmp(path, tmp, cap, st);
    if (fd < 0) {
        free(tmp);
        return -fd;
    }
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        return tt_fail(st, TT_EIO, "cannot write '%.300s': %s", path, strerror(e));
    }
    int rc = body(f, ctx, st);
    if (!rc) {
        errno = 0;
        if (fflush(f) != 0 || ferror(f))
            rc = tt_fail(st, TT_EIO, "cannot write '%.300s': %s", path, errno ? strerror(errno) : "write error");
        else if (fsync(fileno(f)) != 0 && errno != EINVAL && errno != ENOTSUP)
            rc = tt_fail(st, TT_EIO, "cannot write '%.300s': fsync: %s", path, strerror(errno));
    }
    errno = 0;
    if (fclose(f) != 0 && !rc)
        rc = tt_fail(st, TT_EIO, "cannot write '%.300s': %s", path, errno ? strerror(errno) : "close error");
    if (!rc && rename(tmp, path) != 0) rc = tt_fail(st, TT_EIO, "cannot replace '%.300s': %s", path, strerror(errno));
    if (rc) unlink(tmp);
    else fsync_parent_dir(path);
    free(tmp);
    return rc;
}

typedef struct {
    const void *data;
    size_t n;
} buf_ctx;

static int buf_body(FILE *f, const void *ctx, tt_status *st) {
    const buf_ctx *b = ctx;
    if (b->n && fwrite(b->data, 1, b->n, f) != b->n) return tt_fail(st, TT_EIO, "write error (disk full?)");
    return TT_OK;
}

int tt_write_atomic_buf(const char *path, const void *data, size_t n, tt_status *st) {
    buf_ctx b = {data, n};
    return tt_write_atomic(path, buf_body, &b, st);
}

static const char *file_kind(mode_t m) {
    if (S_ISDIR(m)) return "a folder";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

int tt_open_regular(const char *path, int *fd_out, uint64_t *size, tt_status *st) {
    *fd_out = -1;
    if (!path || !*path) return tt_fail(st, TT_EINVAL, "empty file name");
    /* O_NONBLOCK: opening a FIFO without a writer would wait forever */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return tt_fail(st, TT_EIO, "cannot open '%.300s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return tt_fail(st, TT_EIO, "cannot stat '%.300s': %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return tt_fail(st, TT_EIO, "'%.300s' is %s, not a regular file", path, file_kind(sb.st_mode));
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    *fd_out = fd;
    if (size) *size = (uint64_t)sb.st_size;
    return TT_OK;
}

int tt_read_all(int fd, uint64_t size, char **buf, tt_status *st) {
    *buf = NULL;
    char *b = size < SIZE_MAX ? malloc((size_t)size + 1) : NULL;
    size_t got = 0;
    while (b && got < size) {
        ssize_t r = read(fd, b + got, (size_t)size - got);
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (!b) return tt_fail(st, TT_ENOMEM, "out of memory (reading a file)");
    if (got != size) {
        free(b);
        return tt_fail(st, TT_EIO, "read error");
    }
    b[got] = 0;
    *buf = b;
    return TT_OK;
}

int tt_same_file(const char *a, const char *b) {
    struct stat sa, sb;
    if (stat(a, &sa) != 0 || stat(b, &sb) != 0) return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int tt_dir_lock(const char *dir, tt_dir_lock_t *lk, tt_status *st) {
    lk->fd = -1;
    char path[4200];
    if ((size_t)snprintf(path, sizeof path, "%s/.tinytrain.lock", dir) >= sizeof path)
        return tt_fail(st, TT_EINVAL, "output folder path too long");
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
    if (fd < 0) return tt_fail(st, TT_EIO, "cannot lock output folder '%.300s': %s", dir, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return tt_fail(st, TT_EIO, "cannot lock output folder '%.300s': .tinytrain.lock is not a regular file", dir);
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e == EWOULDBLOCK || e == EAGAIN) {
            char buf[32] = "";
            ssize_t k = pread(fd, buf, sizeof buf - 1, 0);
            close(fd);
            long pid = k > 0 ? strtol(buf, NULL, 10) : 0;
            if (pid > 0)
                return tt_fail(st, TT_EBUSY, "output folder '%.300s' is in use by another tinytrain run (pid %ld)", dir, pid);
            return tt_fail(st, TT_EBUSY, "output folder '%.300s' is in use by another tinytrain run", dir);
        }
        if (e == ENOSYS || e == EINVAL || e == ENOTSUP || e == ENOLCK) { /* no locks here: go on unlocked */
            close(fd);
            return TT_OK;
        }
        close(fd);
        return tt_fail(st, TT_EIO, "cannot lock output folder '%.300s': %s", dir, strerror(e));
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) { /* the pid is only for the message */
    }
    lk->fd = fd;
    return TT_OK;
}

void tt_dir_unlock(tt_dir_lock_t *lk) {
    if (lk->fd >= 0) close(lk->fd); /* closing releases the flock */
    lk->fd = -1;
}

int tt_remove_stale_tmp(const char *dir, const char *const *names, int n) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        for (int i = 0; i < n; i++) {
            size_t ln = strlen(names[i]);
            if (strncmp(e->d_name, names[i], ln) != 0 || strncmp(e->d_name + ln, ".tmp.", 5) != 0) continue;
            const char *p = e->d_name + ln + 5;
            char *end = NULL;
            long pid = strtol(p, &end, 10);
            if (pid <= 0 || *end || end == p) continue;
            if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive (or unknown) */
            char path[4200];
            if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path) continue;
            struct stat sb;
            if (lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) && unlink(path) == 0) removed++;
        }
    }
    closedir(d);
    return removed;
}
