// SPDX-License-Identifier: Apache-2.0
/* Hash functions.
 *
 * hash_bytes() is SipHash-1-3 keyed with a per-process secret: names, lane
 * keys and dedup keys come from clients, so a fixed hash would let one craft
 * collisions and turn O(1) lookups into O(n).  hash_u64() mixes integers we
 * assign ourselves (job ids) and needs no key.
 */
#ifndef TENQ_BASE_HASH_H
#define TENQ_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct hash_key {
    uint64_t k0, k1;
} hash_key;

uint64_t hash_bytes(const hash_key *key, const void *data, size_t len);

/* Combine a hash with more bytes (for composite keys). */
static inline uint64_t hash_combine(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
}

static inline uint64_t hash_u64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

#endif
