// SPDX-License-Identifier: Apache-2.0
/* Results back to the caller's thread: the writer's commits and the
 * reader's reads are posted here (store_post_result) and handed over on
 * the caller's loop (store_dispatch) when the event fd says so: a commit
 * to on_commit, a read to its own deliver (reader.c). */
#include "internal.h"

#include <unistd.h>

void store_post_result(store_t *s, store_result *r)
{
    pthread_mutex_lock(&s->lock);
    r->next = NULL;
    if (s->results_tail)
        s->results_tail->next = r;
    else
        s->results = r;
    s->results_tail = r;
    pthread_mutex_unlock(&s->lock);
    uint64_t one = 1;
    ssize_t w = write(s->efd, &one, sizeof one);
    (void)w; /* the counter cannot overflow in practice; a failed wake is retried by the next */
}

size_t store_dispatch(store_t *s)
{
    uint64_t cnt;
    ssize_t r = read(s->efd, &cnt, sizeof cnt);
    (void)r;
    pthread_mutex_lock(&s->lock);
    store_result *list = s->results;
    s->results = s->results_tail = NULL;
    pthread_mutex_unlock(&s->lock);
    size_t n = 0;
    while (list) {
        store_result *x = list;
        list = x->next;
        if (x->kind == 0) {
            if (x->seq == s->sync_seq) {
                s->sync_rc = x->rc;
                s->sync_done = true;
            }
            if (s->on_commit) s->on_commit(s->on_commit_ctx, x->seq, x->rc);
        } else {
            x->deliver(x);
        }
        free(x);
        n++;
    }
    return n;
}

int store_event_fd(const store_t *s)
{
    return s->efd;
}

void store_on_commit(store_t *s, store_commit_fn fn, void *ctx)
{
    s->on_commit = fn;
    s->on_commit_ctx = ctx;
}
