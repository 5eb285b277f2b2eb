// SPDX-License-Identifier: Apache-2.0
/* A `tenq serve` per test (see server_proc.h). */
#include "server_proc.h"

#include "runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

char test_server_url[64];
static pid_t server_pid;
static char server_dir[64];

void test_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

int64_t test_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void test_server_kill(int sig)
{
    if (server_pid > 0) {
        kill(server_pid, sig);
        waitpid(server_pid, NULL, 0);
        server_pid = 0;
    }
}

void test_server_stop(void)
{
    test_server_kill(SIGTERM);
    if (server_dir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", server_dir);
        if (system(cmd) != 0) fprintf(stderr, "  could not remove %s\n", server_dir);
        server_dir[0] = 0;
    }
}

void test_server_start(const char *const *extra)
{
    const char *bin = getenv("TENQ_BIN");
    ASSERT_MSG(bin && *bin, "set TENQ_BIN to the tenq binary");
    test_server_stop(); /* the previous one, and its folder */
    snprintf(server_dir, sizeof server_dir, "/tmp/tenq-ctest-XXXXXX");
    ASSERT(mkdtemp(server_dir) != NULL);
    char store[128], portfile[128], log[128];
    snprintf(store, sizeof store, "sqlite:%s/t.db", server_dir);
    snprintf(portfile, sizeof portfile, "%s/port", server_dir);
    snprintf(log, sizeof log, "%s/log", server_dir);
    static bool registered;
    if (!registered) atexit(test_server_stop);
    registered = true;
    pid_t parent = getpid();
    server_pid = fork();
    ASSERT(server_pid >= 0);
    if (server_pid == 0) {
        /* the server dies with its test, even one killed by the runner's alarm */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(1);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        const char *argv[32] = {"tenq", "serve",       "--listen", "127.0.0.1:0",   "--store",
                                store,  "--port-file", portfile,   "--sqlite-sync", "normal"};
        int n = 10;
        for (int i = 0; extra && extra[i] && n < 30; i++) argv[n++] = extra[i];
        argv[n] = NULL;
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    for (int i = 0; i < 1000; i++) {
        FILE *f = fopen(portfile, "r");
        int port = 0;
        if (f) {
            if (fscanf(f, "%d", &port) != 1) port = 0;
            fclose(f);
        }
        if (port > 0) {
            snprintf(test_server_url, sizeof test_server_url, "http://127.0.0.1:%d", port);
            return;
        }
        int st;
        ASSERT_MSG(waitpid(server_pid, &st, WNOHANG) == 0, "the server exited (see its log)");
        test_sleep_ms(10);
    }
    test_fail(__FILE__, __LINE__, "the server did not start within 10 s");
}
