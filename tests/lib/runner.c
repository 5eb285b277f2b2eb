// SPDX-License-Identifier: Apache-2.0
#include "runner.h"

#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_TESTS 1024

static struct {
    const char *name;
    test_fn fn;
    int timeout_s;
} tests[MAX_TESTS];
static int ntests;

void test_register(const char *name, test_fn fn, int timeout_s)
{
    if (ntests == MAX_TESTS) abort();
    tests[ntests].name = name;
    tests[ntests].fn = fn;
    tests[ntests].timeout_s = timeout_s;
    ntests++;
}

void test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "  %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    exit(1);
}

uint64_t test_seed(void)
{
    static uint64_t seed;
    if (seed) return seed;
    const char *s = getenv("TEST_SEED");
    if (s && *s) {
        seed = strtoull(s, NULL, 0);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = ((uint64_t)ts.tv_sec * 1000003u) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
    }
    if (!seed) seed = 1;
    fprintf(stderr, "  seed: TEST_SEED=%" PRIu64 "\n", seed);
    return seed;
}

static int run_forked(int i)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm((unsigned)tests[i].timeout_s);
        tests[i].fn();
        fflush(NULL);
        /* exit, not _exit: the atexit handlers run, LeakSanitizer's among
         * them, so a test's leaks fail it under ASan */
        exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
    if (WIFSIGNALED(st))
        fprintf(stderr, "  killed by signal %d%s\n", WTERMSIG(st),
                WTERMSIG(st) == SIGALRM ? " (timeout)" : "");
    return 1;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (int i = 0; i < ntests; i++) printf("%s\n", tests[i].name);
        return 0;
    }
    if (argc > 1) {
        /* Named tests run in-process, for debuggers. */
        int rc = 0;
        for (int a = 1; a < argc; a++) {
            int found = 0;
            for (int i = 0; i < ntests; i++) {
                if (strcmp(tests[i].name, argv[a]) != 0) continue;
                found = 1;
                tests[i].fn();
                printf("ok %s\n", tests[i].name);
            }
            if (!found) {
                fprintf(stderr, "no test named %s\n", argv[a]);
                rc = 2;
            }
        }
        return rc;
    }
    int failed = 0;
    for (int i = 0; i < ntests; i++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int rc = run_forked(i);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        printf("%s %s (%.0f ms)\n", rc ? "FAIL" : "ok", tests[i].name, ms);
        failed += rc;
    }
    printf("%d of %d tests passed\n", ntests - failed, ntests);
    return failed ? 1 : 0;
}
