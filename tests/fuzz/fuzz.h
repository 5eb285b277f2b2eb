// SPDX-License-Identifier: Apache-2.0
/* What the fuzz targets share: the entry point libFuzzer (or driver.c)
 * calls, and a check that stops the run with the input's verdict when a
 * property does not hold (libFuzzer then keeps the input as a crash). */
#ifndef TENQ_FUZZ_H
#define TENQ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
