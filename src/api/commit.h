// SPDX-License-Identifier: Apache-2.0
/* Answering after commit (commit.c): the batch being built from the
 * engine's changes, handed to the store's writer, and the replies that wait
 * for its commit; rows written late; what a failed commit does.  See
 * docs/ARCHITECTURE.md, "The commit pipeline". */
#ifndef TENQ_API_COMMIT_H
#define TENQ_API_COMMIT_H

#include "base/htab.h"
#include "http.h"
#include "jbuf.h"
#include "read_ctx.h"

#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct server server;
struct event;
struct late_row;

/* What a request does once its changes are committed (srv_after_commit):
 * rc 0, or why they were not; req NULL when the client went away (then it
 * only frees ctx). */
typedef void (*commit_then)(server *s, http_req *req, void *ctx, int rc);

/* A reply held until the batch with its changes is committed, or a step
 * to take then (then, ctx). */
typedef struct pending {
    read_ctx held; /* the request; NULL when the client went away */
    int status;
    char *body;
    size_t len;
    commit_then then;
    void *ctx;
    struct pending *next;
} pending;

/* Ids of jobs that reached a final state in a batch (for waiters). */
typedef struct idvec {
    uint64_t *v;
    size_t n, cap;
} idvec;

/* A batch handed to the writer, and what waits for its commit. */
typedef struct inflight {
    uint64_t seq;
    uint64_t term; /* the term its changes were made under */
    pending *replies, *replies_tail;
    idvec done;
    struct inflight *next;
} inflight;

/* The calls up to the layers above, registered at start (server.c): a
 * queue got work (its long polls: waiters.c); a batch committed, with the
 * jobs it finished (their waiters: waiters.c); a write was refused because
 * another server leads (lead_loop.c steps down). */
typedef struct commit_hooks {
    void (*wake)(server *s, const char *queue);
    void (*finished)(server *s, const uint64_t *ids, size_t n);
    void (*refused)(server *s, const char *why);
} commit_hooks;

typedef struct commit_state {
    store_batch *batch;                 /* the batch being built */
    pending *cur, *cur_tail;            /* replies waiting for it */
    idvec cur_done;                     /* jobs finished in it */
    inflight *inflight, *inflight_tail; /* handed over, in order */
    uint64_t last_seq;
    bool chain_open; /* srv_hand_over gave the writer a part; srv_end_chain ends it */
    struct event *flush_ev, *store_ev, *resync_ev;
    struct event *writer_watch_ev; /* see watch_writer */
    /* job rows written late: leases and readiness not yet stored */
    htab late_rows;
    struct late_row *late_first, *late_last;
    struct event *late_ev;
    uint64_t n_ok, n_failed; /* commits, for /metrics */
    commit_hooks hooks;
} commit_state;

/* Its events made (0, or -1 when one could not be); off at a stop (nothing
 * more is written); freed. */
int srv_commit_start(server *s);
void srv_commit_timers_off(server *s);
void srv_commit_free(server *s);

/* After a handler changed the engine: collects its changes into the batch
 * being built and answers req with (status, body) once they are committed.
 * With nothing to commit it answers once everything handed over so far is
 * committed (at once if that is all done).  Takes the jbuf's text.  An
 * audited request's row goes into the same batch (audit.h). */
void srv_commit_reply(server *s, http_req *req, int status, jbuf *b);
/* The same, but answers at once: the changes commit with the batch being
 * built, after the answer.  Only for leases of at-least-once queues (see
 * docs/SEMANTICS.md "Durability"). */
void srv_commit_reply_now(server *s, http_req *req, int status, jbuf *b);
/* Collects the handler's changes and calls then(s, req, ctx, rc) once
 * they, and everything handed over before them, are committed (at once
 * when that is all done); the handler does not answer req itself.  req may
 * be NULL: a step of the server's own. */
void srv_after_commit(server *s, http_req *req, commit_then then, void *ctx);
/* Wakes the long polls of queues that just got work, before the caller
 * builds its reply and before the changes go into the batch: the woken
 * worker's lease leaves first (measured in W2: ARCHITECTURE.md).  Changes
 * are collected as before, and a queue woken twice costs one empty try. */
void srv_wake_first(server *s);
/* Collects the engine's changes without a reply (ticks). */
void srv_collect(server *s);
/* Inside a handler making many changes (a big batch of submits): hands
 * those made so far to the writer, which writes them while the handler
 * goes on but commits them only with the rest (store_commit_part): the
 * request is kept whole or not at all.  The handler must call
 * srv_end_chain after its srv_commit_reply, before it returns.  Does
 * nothing on a store that takes no chains. */
void srv_hand_over(server *s);
void srv_end_chain(server *s);

/* A flush of the batch being built at the end of this turn of the loop
 * (for rows written into it directly), or now. */
void srv_schedule_flush(server *s);
void srv_flush_now(server *s);
/* The leases waiting to be written: those granted before `before` written
 * (INT64_MAX: all), or all dropped. */
void srv_write_late_rows(server *s, int64_t before);
void srv_drop_late_rows(server *s);
/* What was not handed over yet answered rc (why: its message) and dropped:
 * its engine is being replaced. */
void srv_drop_uncommitted(server *s, int rc, const char *why);
/* A commit's outcome the store contradicts: writes stop and the engine is
 * loaded again from the store (why: for the log). */
void srv_reload(server *s, const char *why);
/* A stopping server exits its loop once nothing is left to commit. */
void srv_maybe_finish_stop(server *s);

#endif
