// SPDX-License-Identifier: Apache-2.0
/* A small test runner in the manner of libuv's: one function per behaviour,
 * each run in a forked child with a timeout, so a crash or a hang fails only
 * its own test.  `./test_x name` runs one test in-process (for gdb and
 * valgrind); `./test_x --list` lists them. */
#ifndef TENQ_TEST_RUNNER_H
#define TENQ_TEST_RUNNER_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*test_fn)(void);
void test_register(const char *name, test_fn fn, int timeout_s);

#define TEST_T(name, timeout)                                                                      \
    static void test_##name(void);                                                                 \
    __attribute__((constructor)) static void register_##name(void)                                 \
    {                                                                                              \
        test_register(#name, test_##name, timeout);                                                \
    }                                                                                              \
    static void test_##name(void)
#define TEST(name) TEST_T(name, 60)

_Noreturn void test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define ASSERT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) test_fail(__FILE__, __LINE__, "assertion failed: %s", #cond);                 \
    } while (0)
#define ASSERT_MSG(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) test_fail(__FILE__, __LINE__, __VA_ARGS__);                                   \
    } while (0)
#define ASSERT_EQ(a, b)                                                                            \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_) test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_);     \
    } while (0)
#define ASSERT_STR(a, b)                                                                           \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        if (!a_ || !b_ || strcmp(a_, b_) != 0)                                                     \
            test_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b,                    \
                      a_ ? a_ : "(null)", b_ ? b_ : "(null)");                                     \
    } while (0)

/* A seed for randomized tests: TEST_SEED in the environment, else from the
 * clock; printed so that a failure can be replayed. */
uint64_t test_seed(void);

#endif
