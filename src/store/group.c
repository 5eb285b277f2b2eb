// SPDX-License-Identifier: Apache-2.0
/* A group of batches folded for one transaction (store_group_build): every
 * job once, as its insert or its latest update (its columns: columns.h),
 * deletes last; the other rows in order. */
#include "internal.h"

#include "base/hash.h"
#include "base/htab.h"
#include "base/xalloc.h"

typedef struct fold_ent {
    uint64_t id;
    bool ins; /* in g->ins, else g->upd */
    size_t idx;
} fold_ent;

static bool fold_eq(const void *item, const void *key)
{
    return ((const fold_ent *)item)->id == *(const uint64_t *)key;
}

/* Folds a later write of the job into its row (columns.h): a number as it
 * is now, a string as the write carries it (NEW: an insert's alone; KEPT:
 * unless the write left it out). */
#define FROM_N_KEY(f) r->f = x->f;
#define FROM_N_NEW(f)                                                                              \
    if (all) r->f = x->f;
#define FROM_N_ALWAYS(f) r->f = x->f;
#define FROM_N_KEPT(f)   r->f = x->f;
#define FROM_S_NEW(f)                                                                              \
    if (all) r->f = bstr(b, x->f);
#define FROM_S_ALWAYS(f) r->f = bstr(b, x->f);
#define FROM_S_KEPT(f)                                                                             \
    if (x->f != SNULL || all) r->f = bstr(b, x->f);
#define FROM_X_ALWAYS(f)
#define FROM(column, type, kind, when, hot, field, flag)                                           \
    STORE_JC_CAT(STORE_JC_CAT(FROM_, STORE_JK_CLASS(kind)), _##when)(field)

static void row_from(group_row *r, const store_batch *b, const batch_row *x, bool all)
{
    r->fields |= x->fields;
    r->plain = x->plain;
    STORE_JOB_COLUMNS_TABLE(FROM)
}

static bool id_eq(const void *item, const void *key)
{
    return *(const uint64_t *)item == *(const uint64_t *)key;
}

/* Leaves out the attempts, edges and steps of jobs the group deletes. */
static void drop_attempts_of(store_group *g, htab *gone)
{
    size_t k = 0;
    for (size_t i = 0; i < g->nother; i++) {
        const store_op *o = g->other[i];
        bool step = o->kind == OP_STEP || o->kind == OP_STEP_DONE;
        uint64_t id = o->kind == OP_DEP ? o->u.dep.child
                      : step            ? o->u.step.job_id
                                        : o->u.attempt.job_id;
        if ((o->kind == OP_ATTEMPT || o->kind == OP_DEP || step) &&
            htab_find(gone, hash_u64(id), id_eq, &id))
            continue;
        g->other[k] = o;
        g->other_b[k++] = g->other_b[i];
    }
    g->nother = k;
}

void store_group_build(store_group *g, store_batch *const *batches, size_t n)
{
    memset(g, 0, sizeof(*g));
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += batches[i]->n;
    g->ins = xcalloc(total + 1, sizeof(group_row));
    g->upd = xcalloc(total + 1, sizeof(group_row));
    g->del = xcalloc(total + 1, sizeof(uint64_t));
    g->other = xcalloc(total + 1, sizeof(*g->other));
    g->other_b = xcalloc(total + 1, sizeof(*g->other_b));
    g->inbox_done = xcalloc(total + 1, sizeof(uint64_t));
    g->tx_id = xcalloc(total + 1, sizeof(uint64_t));
    g->tx_token = xcalloc(total + 1, sizeof(uint64_t));
    fold_ent *ents = xcalloc(total + 1, sizeof(fold_ent));
    size_t nent = 0;
    htab seen = {0};
    uint64_t *gone = NULL; /* deleted in this group (made at the first delete) */
    size_t ngone = 0;
    htab gone_set = {0};
    for (size_t i = 0; i < n; i++) {
        const store_batch *b = batches[i];
        for (size_t k = 0; k < b->n; k++) {
            const store_op *o = &b->ops[k];
            if (o->kind == OP_INBOX_DONE) {
                g->inbox_done[g->ninbox++] = o->u.tx.id;
                continue;
            }
            if (o->kind == OP_TX_DONE) {
                g->tx_id[g->ntx] = o->u.tx.id;
                g->tx_token[g->ntx++] = o->u.tx.token;
                continue;
            }
            if (o->kind > OP_JOB_DELETE) {
                g->other[g->nother] = o;
                g->other_b[g->nother++] = b;
                continue;
            }
            uint64_t id = o->kind == OP_JOB_DELETE ? o->u.id : o->u.job.id;
            uint64_t h = hash_u64(id);
            fold_ent *f = htab_find(&seen, h, fold_eq, &id);
            if (o->kind == OP_JOB_DELETE) {
                if (f) (f->ins ? g->ins : g->upd)[f->idx].dropped = true;
                if (!f || !f->ins) g->del[g->ndel++] = id; /* never written: nothing to delete */
                /* nor its attempts of this group: a job written before loses
                 * its rows by the delete (a trigger), one never written has none */
                if (!gone) gone = xcalloc(total + 1, sizeof(uint64_t));
                gone[ngone] = id;
                htab_insert(&gone_set, h, &gone[ngone++]);
                if (f) htab_remove(&seen, h, f);
                continue;
            }
            if (f) {
                row_from(&(f->ins ? g->ins : g->upd)[f->idx], b, &o->u.job, false);
                continue;
            }
            bool ins = o->kind == OP_JOB_INSERT;
            group_row *r = ins ? &g->ins[g->nins] : &g->upd[g->nupd];
            row_from(r, b, &o->u.job, ins);
            f = &ents[nent++];
            f->id = id;
            f->ins = ins;
            f->idx = ins ? g->nins++ : g->nupd++;
            htab_insert(&seen, h, f);
        }
    }
    htab_free(&seen);
    free(ents);
    if (ngone) drop_attempts_of(g, &gone_set);
    htab_free(&gone_set);
    free(gone);
}

void store_group_free(store_group *g)
{
    free(g->ins);
    free(g->upd);
    free(g->del);
    free(g->other);
    free(g->other_b);
    free(g->inbox_done);
    free(g->tx_id);
    free(g->tx_token);
    memset(g, 0, sizeof(*g));
}
