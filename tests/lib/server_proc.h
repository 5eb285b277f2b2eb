// SPDX-License-Identifier: Apache-2.0
/* A `tenq serve` per test, for the C tests that talk to a real server
 * (test_client, test_worker_api): SQLite in a fresh temporary folder, a free
 * port, the log in the folder.  The server dies with its test. */
#ifndef TENQ_TEST_SERVER_PROC_H
#define TENQ_TEST_SERVER_PROC_H

#include <stdint.h>

/* "http://127.0.0.1:PORT" of the running server. */
extern char test_server_url[64];

/* Starts $TENQ_BIN serve with extra flags (NULL-terminated, may be NULL),
 * stopping the previous one first; fails the test when it does not start. */
void test_server_start(const char *const *extra);
/* Sends sig to the server and reaps it (its folder stays). */
void test_server_kill(int sig);
/* SIGTERM, then removes its folder (also run at exit). */
void test_server_stop(void);

void test_sleep_ms(int ms);
int64_t test_now_ms(void); /* monotonic */

#endif
