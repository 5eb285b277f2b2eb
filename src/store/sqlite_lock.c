// SPDX-License-Identifier: Apache-2.0
/* One server per SQLite file.  The server that opens a database holds an
 * exclusive flock() on the file itself until it closes it; a second one,
 * from another process, is refused with the holder's pid and command line
 * (found in /proc/locks), so two servers can never both schedule from one
 * file (a second `make run`, or a restart that overlaps the old process).
 *
 * flock() locks are apart from the fcntl() locks SQLite takes, so they do
 * not disturb each other; the descriptor stays open until every SQLite
 * connection to the file is closed (closing any descriptor of a file drops
 * the process's fcntl locks on it). */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* The pid holding a flock on the file of fd, from /proc/locks; 0 if none
 * is found. */
static int flock_holder(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0) return 0;
    char want[64];
    snprintf(want, sizeof want, "%02x:%02x:%llu", major(st.st_dev), minor(st.st_dev),
             (unsigned long long)st.st_ino);
    FILE *f = fopen("/proc/locks", "r");
    if (!f) return 0;
    char line[256];
    int pid = 0;
    while (!pid && fgets(line, sizeof line, f)) {
        char kind[16], dev[64];
        int p;
        /* "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF" ("->" marks waiters) */
        if (strstr(line, "->")) continue;
        if (sscanf(line, "%*d: %15s %*s %*s %d %63s", kind, &p, dev) == 3 &&
            !strcmp(kind, "FLOCK") && !strcmp(dev, want))
            pid = p;
    }
    fclose(f);
    return pid;
}

/* What process pid runs, for people: its command line, spaces between. */
static void command_of(int pid, char *out, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    size_t n = fread(out, 1, len - 1, f);
    fclose(f);
    out[n] = 0;
    for (size_t i = 0; i + 1 < n; i++)
        if (!out[i]) out[i] = ' ';
}

int store_sqlite_lock(const char *path, int *fd_out, char *errbuf, size_t errlen)
{
    *fd_out = -1;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(errbuf, errlen, "cannot open %s: %s", path, strerror(errno));
        return TENQ_EIO;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
        *fd_out = fd;
        return 0;
    }
    int err = errno;
    if (err != EWOULDBLOCK) {
        snprintf(errbuf, errlen, "cannot lock %s: %s", path, strerror(err));
        close(fd);
        return TENQ_EIO;
    }
    int pid = flock_holder(fd);
    char cmd[512] = "";
    if (pid) command_of(pid, cmd, sizeof cmd);
    char who[640];
    if (pid && cmd[0])
        snprintf(who, sizeof who, "process %d (%s)", pid, cmd);
    else if (pid)
        snprintf(who, sizeof who, "process %d", pid);
    else
        snprintf(who, sizeof who, "another process");
    snprintf(errbuf, errlen,
             "%s is in use by %s: one tenq server per SQLite file (stop that one first; for "
             "several servers, use PostgreSQL)",
             path, who);
    close(fd);
    return TENQ_EUNAVAILABLE;
}
