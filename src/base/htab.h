// SPDX-License-Identifier: Apache-2.0
/* An open-addressing hash table of pointers (linear probing, backward-shift
 * deletion, power-of-two capacity, at most 3/4 full).
 *
 * The table stores each item's 64-bit hash beside its pointer, so a probe
 * compares hashes before it touches an item.  It does not own the items and
 * never frees them.  Keys live inside the items; lookups take an `eq`
 * callback that compares an item with a key.
 */
#ifndef TENQ_BASE_HTAB_H
#define TENQ_BASE_HTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct htab_slot {
    uint64_t hash;
    void *item; /* NULL: empty */
} htab_slot;

typedef struct htab {
    htab_slot *slots;
    size_t mask; /* capacity - 1, or 0 when no array yet */
    size_t len;
} htab;

typedef bool (*htab_eq_fn)(const void *item, const void *key);

static inline void *htab_find(const htab *t, uint64_t hash, htab_eq_fn eq, const void *key)
{
    if (!t->slots) return NULL;
    for (size_t i = hash & t->mask;; i = (i + 1) & t->mask) {
        const htab_slot *s = &t->slots[i];
        if (!s->item) return NULL;
        if (s->hash == hash && eq(s->item, key)) return s->item;
    }
}

/* Adds an item (the caller has checked it is not there yet).
 * Returns 0, or -1 when memory runs out (the table is unchanged). */
int htab_insert(htab *t, uint64_t hash, void *item);
/* Removes exactly this item; returns whether it was there. */
bool htab_remove(htab *t, uint64_t hash, const void *item);
/* Frees the slot array (not the items). */
void htab_free(htab *t);
/* Bytes used by the slot array. */
size_t htab_bytes(const htab *t);

/* Iteration: for (size_t i = 0; i < htab_cap(t); i++) if (t->slots[i].item) ... */
static inline size_t htab_cap(const htab *t)
{
    return t->slots ? t->mask + 1 : 0;
}

#endif
