// SPDX-License-Identifier: Apache-2.0
/* The SQLite backend's errors as tenq's (sq_map_rc, sq_fail, with the
 * store's message), and the two calls every file of the backend makes:
 * a statement run alone (sq_exec) and the wall clock (sq_now_ms). */
#include "sqlite.h"

#include <time.h>

int sq_map_rc(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_DONE:
    case SQLITE_ROW: return 0;
    case SQLITE_FULL: return TENQ_ENOSPACE;
    case SQLITE_CORRUPT: return TENQ_ECORRUPT;
    case SQLITE_NOTADB: return TENQ_ENOT_TENQ;
    case SQLITE_CONSTRAINT: return TENQ_ECONSTRAINT;
    case SQLITE_NOMEM: return TENQ_ENOMEM;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return TENQ_EUNAVAILABLE;
    default: return TENQ_EIO;
    }
}

int sq_fail(store_t *s, sqlite3 *db, int rc, const char *what)
{
    store_set_err(s, "sqlite: %s: %s", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    return sq_map_rc(rc);
}

int sq_exec(sqlite3 *db, const char *sql)
{
    return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

int64_t sq_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
