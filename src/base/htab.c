// SPDX-License-Identifier: Apache-2.0
#include "htab.h"

#include <stdlib.h>

static int resize(htab *t, size_t ncap)
{
    htab_slot *ns = calloc(ncap, sizeof(*ns));
    if (!ns) return -1;
    size_t nmask = ncap - 1;
    for (size_t i = 0; t->slots && i <= t->mask; i++) {
        htab_slot s = t->slots[i];
        if (!s.item) continue;
        size_t j = s.hash & nmask;
        while (ns[j].item) j = (j + 1) & nmask;
        ns[j] = s;
    }
    free(t->slots);
    t->slots = ns;
    t->mask = nmask;
    return 0;
}

int htab_insert(htab *t, uint64_t hash, void *item)
{
    if (!t->slots || (t->len + 1) * 4 > (t->mask + 1) * 3) {
        if (resize(t, t->slots ? (t->mask + 1) * 2 : 16) != 0) return -1;
    }
    size_t i = hash & t->mask;
    while (t->slots[i].item) i = (i + 1) & t->mask;
    t->slots[i].hash = hash;
    t->slots[i].item = item;
    t->len++;
    return 0;
}

bool htab_remove(htab *t, uint64_t hash, const void *item)
{
    if (!t->slots) return false;
    size_t i = hash & t->mask;
    for (;; i = (i + 1) & t->mask) {
        if (!t->slots[i].item) return false;
        if (t->slots[i].item == item) break;
    }
    /* Backward-shift: pull later members of the probe run into the hole so
     * that lookups never need tombstones. */
    size_t hole = i;
    for (size_t j = (i + 1) & t->mask; t->slots[j].item; j = (j + 1) & t->mask) {
        size_t home = t->slots[j].hash & t->mask;
        /* Move j into the hole unless its home lies cyclically in (hole, j]. */
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            t->slots[hole] = t->slots[j];
            hole = j;
        }
    }
    t->slots[hole].item = NULL;
    t->slots[hole].hash = 0;
    t->len--;
    /* Give memory back after a burst (a shrink that fails changes nothing). */
    if (t->mask + 1 > 64 && t->len * 8 < t->mask + 1) resize(t, (t->mask + 1) / 2);
    return true;
}

void htab_free(htab *t)
{
    free(t->slots);
    t->slots = NULL;
    t->mask = 0;
    t->len = 0;
}

size_t htab_bytes(const htab *t)
{
    return htab_cap(t) * sizeof(htab_slot);
}
