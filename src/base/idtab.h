// SPDX-License-Identifier: Apache-2.0
/* A table from 64-bit ids to pointers, for ids handed out in increasing
 * order (job ids).
 *
 * Ids live in pages of 512 slots found through a directory, so inserting the
 * next id touches the page that the previous insert touched (no cache miss)
 * and costs 8 bytes per item.  A page that falls below 1/64 full once newer
 * pages exist moves its few survivors to a hash table and is freed, so a
 * handful of long-lived items cannot pin whole pages: memory stays within a
 * small factor of the live count whatever the pattern.
 */
#ifndef TENQ_BASE_IDTAB_H
#define TENQ_BASE_IDTAB_H

#include "htab.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IDTAB_PAGE_BITS 9
#define IDTAB_PAGE      (1u << IDTAB_PAGE_BITS)

typedef struct idtab_page {
    uint32_t live;
    void *slot[IDTAB_PAGE];
} idtab_page;

typedef struct idtab {
    idtab_page **dir; /* dir[i] holds page base_page + i, or NULL */
    uint64_t base_page;
    size_t ndir, capdir;
    uint64_t top_page; /* the highest page ever created */
    htab overflow;     /* items of freed sparse pages; slot hash = id */
    size_t len;
} idtab;

void *idtab_get(const idtab *t, uint64_t id);
/* Adds an item for an id that is not there; 0 or -1 (no memory). */
int idtab_put(idtab *t, uint64_t id, void *item);
/* Removes and returns the item (NULL when absent). */
void *idtab_del(idtab *t, uint64_t id);
void idtab_free(idtab *t);
size_t idtab_bytes(const idtab *t);
/* Calls fn for every item; fn must not change the table. */
void idtab_foreach(const idtab *t, void (*fn)(void *ctx, uint64_t id, void *item), void *ctx);

#endif
