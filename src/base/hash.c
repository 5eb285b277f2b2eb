// SPDX-License-Identifier: Apache-2.0
/* SipHash-1-3, written from the description in Aumasson & Bernstein,
 * "SipHash: a fast short-input PRF" (2012): one compression round per 8-byte
 * word, three finalization rounds. */
#include "hash.h"

#include <string.h>

static inline uint64_t rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = rotl(v1, 13);                                                                         \
        v1 ^= v0;                                                                                  \
        v0 = rotl(v0, 32);                                                                         \
        v2 += v3;                                                                                  \
        v3 = rotl(v3, 16);                                                                         \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = rotl(v3, 21);                                                                         \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = rotl(v1, 17);                                                                         \
        v1 ^= v2;                                                                                  \
        v2 = rotl(v2, 32);                                                                         \
    } while (0)

uint64_t hash_bytes(const hash_key *key, const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t v0 = 0x736f6d6570736575ULL ^ key->k0;
    uint64_t v1 = 0x646f72616e646f6dULL ^ key->k1;
    uint64_t v2 = 0x6c7967656e657261ULL ^ key->k0;
    uint64_t v3 = 0x7465646279746573ULL ^ key->k1;
    size_t whole = len & ~(size_t)7;
    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m;
        memcpy(&m, p + i, 8); /* little-endian hosts only; x86-64 and arm64 */
        v3 ^= m;
        SIPROUND;
        v0 ^= m;
    }
    uint64_t b = (uint64_t)len << 56;
    size_t left = len - whole;
    for (size_t i = 0; i < left; i++) b |= (uint64_t)p[whole + i] << (8 * i);
    v3 ^= b;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}
