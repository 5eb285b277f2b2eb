// SPDX-License-Identifier: Apache-2.0
#include "idtab.h"

#include "hash.h"

#include <stdlib.h>
#include <string.h>

typedef struct ovf_item {
    uint64_t id;
    void *item;
} ovf_item;

static bool ovf_eq(const void *it, const void *key)
{
    return ((const ovf_item *)it)->id == *(const uint64_t *)key;
}

static idtab_page *page_of(const idtab *t, uint64_t page)
{
    if (page < t->base_page || page - t->base_page >= t->ndir) return NULL;
    return t->dir[page - t->base_page];
}

void *idtab_get(const idtab *t, uint64_t id)
{
    idtab_page *p = page_of(t, id >> IDTAB_PAGE_BITS);
    if (p) return p->slot[id & (IDTAB_PAGE - 1)];
    if (t->overflow.len == 0) return NULL;
    ovf_item *o = htab_find(&t->overflow, hash_u64(id), ovf_eq, &id);
    return o ? o->item : NULL;
}

/* Makes room in the directory for `page`; returns its slot or NULL. */
static idtab_page **dir_slot(idtab *t, uint64_t page)
{
    if (t->ndir == 0) {
        t->base_page = page;
    } else if (page < t->base_page) {
        return NULL; /* older than the directory: goes to the overflow */
    }
    size_t idx = (size_t)(page - t->base_page);
    if (idx >= t->capdir) {
        size_t ncap = t->capdir ? t->capdir * 2 : 64;
        while (ncap <= idx) ncap *= 2;
        idtab_page **nd = realloc(t->dir, ncap * sizeof(*nd));
        if (!nd) return NULL;
        memset(nd + t->capdir, 0, (ncap - t->capdir) * sizeof(*nd));
        t->dir = nd;
        t->capdir = ncap;
    }
    if (idx >= t->ndir) t->ndir = idx + 1;
    return &t->dir[idx];
}

static int ovf_put(idtab *t, uint64_t id, void *item)
{
    ovf_item *o = malloc(sizeof(*o));
    if (!o) return -1;
    o->id = id;
    o->item = item;
    if (htab_insert(&t->overflow, hash_u64(id), o) != 0) {
        free(o);
        return -1;
    }
    return 0;
}

int idtab_put(idtab *t, uint64_t id, void *item)
{
    uint64_t page = id >> IDTAB_PAGE_BITS;
    idtab_page *p = page_of(t, page);
    if (!p && page >= t->top_page) {
        idtab_page **slot = dir_slot(t, page);
        if (!slot) return -1;
        p = calloc(1, sizeof(*p));
        if (!p) return -1;
        *slot = p;
        t->top_page = page;
    }
    if (!p) {
        /* An old id whose page was retired (recovery loads out of order). */
        if (ovf_put(t, id, item) != 0) return -1;
    } else {
        p->slot[id & (IDTAB_PAGE - 1)] = item;
        p->live++;
    }
    t->len++;
    return 0;
}

/* Drops NULL pages at the front of the directory. */
static void dir_trim(idtab *t)
{
    size_t k = 0;
    while (k < t->ndir && !t->dir[k]) k++;
    if (k == 0) return;
    if (k < t->ndir / 2 && k < 4096) return; /* amortize the move */
    memmove(t->dir, t->dir + k, (t->ndir - k) * sizeof(*t->dir));
    memset(t->dir + t->ndir - k, 0, k * sizeof(*t->dir));
    t->ndir -= k;
    t->base_page += k;
    if (t->ndir == 0) t->base_page = t->top_page + 1;
}

/* A page below 1/64 full that is not the newest moves its items out. */
static void maybe_retire(idtab *t, uint64_t page, idtab_page *p)
{
    if (page == t->top_page) return;
    if (p->live >= IDTAB_PAGE / 64 && p->live > 0) return;
    for (uint32_t i = 0; i < IDTAB_PAGE && p->live; i++) {
        if (!p->slot[i]) continue;
        if (ovf_put(t, (page << IDTAB_PAGE_BITS) | i, p->slot[i]) != 0) return; /* keep the page */
        p->slot[i] = NULL;
        p->live--;
    }
    t->dir[page - t->base_page] = NULL;
    free(p);
    dir_trim(t);
}

void *idtab_del(idtab *t, uint64_t id)
{
    uint64_t page = id >> IDTAB_PAGE_BITS;
    idtab_page *p = page_of(t, page);
    void *item = NULL;
    if (p) {
        item = p->slot[id & (IDTAB_PAGE - 1)];
        if (!item) return NULL;
        p->slot[id & (IDTAB_PAGE - 1)] = NULL;
        p->live--;
        t->len--;
        maybe_retire(t, page, p);
        return item;
    }
    if (t->overflow.len == 0) return NULL;
    uint64_t h = hash_u64(id);
    ovf_item *o = htab_find(&t->overflow, h, ovf_eq, &id);
    if (!o) return NULL;
    item = o->item;
    htab_remove(&t->overflow, h, o);
    free(o);
    t->len--;
    return item;
}

void idtab_free(idtab *t)
{
    for (size_t i = 0; i < t->ndir; i++) free(t->dir[i]);
    free(t->dir);
    for (size_t i = 0; i < htab_cap(&t->overflow); i++) free(t->overflow.slots[i].item);
    htab_free(&t->overflow);
    memset(t, 0, sizeof(*t));
}

size_t idtab_bytes(const idtab *t)
{
    size_t pages = 0;
    for (size_t i = 0; i < t->ndir; i++) pages += t->dir[i] != NULL;
    return pages * sizeof(idtab_page) + t->capdir * sizeof(void *) + htab_bytes(&t->overflow) +
           t->overflow.len * sizeof(ovf_item);
}

void idtab_foreach(const idtab *t, void (*fn)(void *ctx, uint64_t id, void *item), void *ctx)
{
    for (size_t d = 0; d < t->ndir; d++) {
        idtab_page *p = t->dir[d];
        if (!p) continue;
        for (uint32_t i = 0; i < IDTAB_PAGE; i++)
            if (p->slot[i]) fn(ctx, ((t->base_page + d) << IDTAB_PAGE_BITS) | i, p->slot[i]);
    }
    for (size_t i = 0; i < htab_cap(&t->overflow); i++) {
        ovf_item *o = t->overflow.slots[i].item;
        if (o) fn(ctx, o->id, o->item);
    }
}
