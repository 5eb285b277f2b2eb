// SPDX-License-Identifier: Apache-2.0
/* The fault VFS of the SQLite backend (sqlite_vfs.c). */
#ifndef TENQ_STORE_SQLITE_VFS_H
#define TENQ_STORE_SQLITE_VFS_H

#include <sqlite3.h>

typedef struct fault_vfs {
    sqlite3_vfs vfs;
    sqlite3_vfs *real; /* the default VFS, which does the work */
    char name[64];     /* this VFS's name, for sqlite3_open_v2 */
    long long budget;  /* bytes writes may still take; -1: no limit (atomic) */
} fault_vfs;

/* Registers q (not the default VFS) under a name of its own, with no
 * budget: SQLITE_OK or SQLite's error. */
int fault_vfs_register(fault_vfs *q);
/* After every connection through it is closed. */
void fault_vfs_unregister(fault_vfs *q);

#endif
