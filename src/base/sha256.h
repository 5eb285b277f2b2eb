// SPDX-License-Identifier: Apache-2.0
/* SHA-256 (FIPS 180-4), for hashing token secrets before they are stored. */
#ifndef TENQ_BASE_SHA256_H
#define TENQ_BASE_SHA256_H

#include <stddef.h>
#include <stdint.h>

void sha256(const void *data, size_t len, uint8_t out[32]);
/* The digest as 64 lowercase hex characters and a NUL. */
void sha256_hex(const void *data, size_t len, char out[65]);

#endif
