// SPDX-License-Identifier: Apache-2.0
/* The fault VFS: every SQLite file of a store is opened through a thin VFS
 * of our own that forwards to the default one.  It exists for one reason:
 * tests give it a byte budget, after which writes fail with SQLITE_FULL, so
 * "the disk is full" is tested through SQLite's real error paths
 * (beanstalkd's "replaced by tests to simulate failures" seam, placed under
 * the database). */
#include "sqlite_vfs.h"

#include <stdio.h>
#include <string.h>

typedef struct fault_file {
    sqlite3_file base;
    sqlite3_file *real;
    long long *budget;
} fault_file;

#define REAL(f) (((fault_file *)(f))->real)

static int ff_close(sqlite3_file *f)
{
    return REAL(f)->pMethods->xClose(REAL(f));
}
static int ff_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off)
{
    return REAL(f)->pMethods->xRead(REAL(f), buf, amt, off);
}
static int ff_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off)
{
    long long *b = ((fault_file *)f)->budget;
    long long left = __atomic_load_n(b, __ATOMIC_RELAXED);
    if (left >= 0) {
        if (amt > left) return SQLITE_FULL;
        __atomic_fetch_sub(b, amt, __ATOMIC_RELAXED);
    }
    return REAL(f)->pMethods->xWrite(REAL(f), buf, amt, off);
}
static int ff_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    return REAL(f)->pMethods->xTruncate(REAL(f), size);
}
static int ff_sync(sqlite3_file *f, int flags)
{
    return REAL(f)->pMethods->xSync(REAL(f), flags);
}
static int ff_size(sqlite3_file *f, sqlite3_int64 *size)
{
    return REAL(f)->pMethods->xFileSize(REAL(f), size);
}
static int ff_lock(sqlite3_file *f, int l)
{
    return REAL(f)->pMethods->xLock(REAL(f), l);
}
static int ff_unlock(sqlite3_file *f, int l)
{
    return REAL(f)->pMethods->xUnlock(REAL(f), l);
}
static int ff_reserved(sqlite3_file *f, int *out)
{
    return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int ff_fcntl(sqlite3_file *f, int op, void *arg)
{
    return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int ff_sector(sqlite3_file *f)
{
    return REAL(f)->pMethods->xSectorSize(REAL(f));
}
static int ff_devchar(sqlite3_file *f)
{
    return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}
static int ff_shm_map(sqlite3_file *f, int pg, int sz, int ext, void volatile **pp)
{
    return REAL(f)->pMethods->xShmMap(REAL(f), pg, sz, ext, pp);
}
static int ff_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
    return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);
}
static void ff_shm_barrier(sqlite3_file *f)
{
    REAL(f)->pMethods->xShmBarrier(REAL(f));
}
static int ff_shm_unmap(sqlite3_file *f, int del)
{
    return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}
static int ff_fetch(sqlite3_file *f, sqlite3_int64 off, int amt, void **pp)
{
    /* No memory-mapped reads: keep every access visible to the shim. */
    (void)f;
    (void)off;
    (void)amt;
    *pp = NULL;
    return SQLITE_OK;
}
static int ff_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
    (void)f;
    (void)off;
    (void)p;
    return SQLITE_OK;
}

static const sqlite3_io_methods ff_methods = {
    3,           ff_close,       ff_read,      ff_write, ff_truncate, ff_sync,    ff_size,
    ff_lock,     ff_unlock,      ff_reserved,  ff_fcntl, ff_sector,   ff_devchar, ff_shm_map,
    ff_shm_lock, ff_shm_barrier, ff_shm_unmap, ff_fetch, ff_unfetch,
};

static int fv_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out)
{
    fault_vfs *q = vfs->pAppData;
    fault_file *ff = (fault_file *)f;
    ff->real = (sqlite3_file *)(ff + 1);
    ff->budget = &q->budget;
    ff->base.pMethods = NULL;
    int rc = q->real->xOpen(q->real, name, ff->real, flags, out);
    if (rc == SQLITE_OK) ff->base.pMethods = &ff_methods;
    return rc;
}

#define RV(v) (((fault_vfs *)(v)->pAppData)->real)
static int fv_delete(sqlite3_vfs *v, const char *n, int sync)
{
    return RV(v)->xDelete(RV(v), n, sync);
}
static int fv_access(sqlite3_vfs *v, const char *n, int flags, int *out)
{
    return RV(v)->xAccess(RV(v), n, flags, out);
}
static int fv_fullpath(sqlite3_vfs *v, const char *n, int len, char *out)
{
    return RV(v)->xFullPathname(RV(v), n, len, out);
}
static void *fv_dlopen(sqlite3_vfs *v, const char *n)
{
    return RV(v)->xDlOpen(RV(v), n);
}
static void fv_dlerror(sqlite3_vfs *v, int n, char *msg)
{
    RV(v)->xDlError(RV(v), n, msg);
}
static void (*fv_dlsym(sqlite3_vfs *v, void *h, const char *s))(void)
{
    return RV(v)->xDlSym(RV(v), h, s);
}
static void fv_dlclose(sqlite3_vfs *v, void *h)
{
    RV(v)->xDlClose(RV(v), h);
}
static int fv_random(sqlite3_vfs *v, int n, char *out)
{
    return RV(v)->xRandomness(RV(v), n, out);
}
static int fv_sleep(sqlite3_vfs *v, int us)
{
    return RV(v)->xSleep(RV(v), us);
}
static int fv_time(sqlite3_vfs *v, double *out)
{
    return RV(v)->xCurrentTime(RV(v), out);
}
static int fv_lasterr(sqlite3_vfs *v, int n, char *out)
{
    return RV(v)->xGetLastError(RV(v), n, out);
}
static int fv_time64(sqlite3_vfs *v, sqlite3_int64 *out)
{
    return RV(v)->xCurrentTimeInt64(RV(v), out);
}

int fault_vfs_register(fault_vfs *q)
{
    q->real = sqlite3_vfs_find(NULL);
    if (!q->real) return SQLITE_ERROR;
    memset(&q->vfs, 0, sizeof(q->vfs));
    q->vfs.iVersion = 2;
    q->vfs.szOsFile = (int)sizeof(fault_file) + q->real->szOsFile;
    q->vfs.mxPathname = q->real->mxPathname;
    snprintf(q->name, sizeof(q->name), "tenq-%p", (void *)q);
    q->vfs.zName = q->name;
    q->vfs.pAppData = q;
    q->vfs.xOpen = fv_open;
    q->vfs.xDelete = fv_delete;
    q->vfs.xAccess = fv_access;
    q->vfs.xFullPathname = fv_fullpath;
    q->vfs.xDlOpen = fv_dlopen;
    q->vfs.xDlError = fv_dlerror;
    q->vfs.xDlSym = fv_dlsym;
    q->vfs.xDlClose = fv_dlclose;
    q->vfs.xRandomness = fv_random;
    q->vfs.xSleep = fv_sleep;
    q->vfs.xCurrentTime = fv_time;
    q->vfs.xGetLastError = fv_lasterr;
    q->vfs.xCurrentTimeInt64 = fv_time64;
    q->budget = -1;
    return sqlite3_vfs_register(&q->vfs, 0);
}

void fault_vfs_unregister(fault_vfs *q)
{
    sqlite3_vfs_unregister(&q->vfs);
}
