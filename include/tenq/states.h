// SPDX-License-Identifier: Apache-2.0
/* tenq job states, shared by the server, the client library, the CLI and
 * (through GET /v1/spec and the dashboard's states.js) every client.
 *
 * One row per state, in the order of a job's life: the states that are not
 * finished first, then dead, then the final ones (the engine's enum follows
 * this order).
 *   NAME      the enum suffix (TENQ_STATE_NAME, ENGINE_NAME); its text is
 *             the CLI's column head
 *   word      the protocol's word, as a C token (and the field of a count)
 *   abi       libtenq's tenq_state value: append-only, never renumbered
 *   LIVE      LIVE: counted (engine_counts, GET /v1/stats), kept among the
 *             store's live rows; FINAL: kept as history only
 *   finished  1: the job moves no further by itself (what tenq_wait() and a
 *             client's wait() wait for); dead is finished and live: it
 *             waits in the morgue for a person
 *   help      a sentence for people
 * docs/ARCHITECTURE.md, "How to add a state", names what else to touch. */
#ifndef TENQ_STATES_H
#define TENQ_STATES_H

#define TENQ_STATE_TABLE(XX)                                                                       \
    XX(SCHEDULED, scheduled, 1, LIVE, 0, "waits for its run_at (a delay, a retry's backoff)")      \
    XX(BLOCKED, blocked, 2, LIVE, 0, "waits behind the job before it in its lane")                 \
    XX(WAITING, waiting, 10, LIVE, 0, "waits for its parents, a step's event or its children")     \
    XX(READY, ready, 3, LIVE, 0, "can be leased (a limit may hold it back)")                       \
    XX(LEASED, leased, 4, LIVE, 0, "handed to a worker, not yet started")                          \
    XX(RUNNING, running, 5, LIVE, 0, "its worker started it")                                      \
    XX(DEAD, dead, 6, LIVE, 1, "failed its last attempt: in the morgue until requeued or deleted") \
    XX(SUCCEEDED, succeeded, 7, FINAL, 1, "succeeded")                                             \
    XX(CANCELLED, cancelled, 8, FINAL, 1, "cancelled")                                             \
    XX(MERGED, merged, 9, FINAL, 1, "merged into another job of its lane")                         \
    XX(EXPIRED, expired, 11, FINAL, 1, "not started by its expire_at: ended without running")

/* The number of a libtenq value past the last one (tenq_state's size). */
#define TENQ_STATE_ABI_END 12

/* For a consumer that takes only the LIVE (or FINAL) rows:
 * TENQ_STATE_IF_LIVE(kind, ...) expands to what follows kind for a LIVE
 * row, else to nothing. */
#define TENQ_STATE_IF_LIVE(kind, ...) TENQ_STATE_IF_LIVE_##kind(__VA_ARGS__)
#define TENQ_STATE_IF_LIVE_LIVE(...)  __VA_ARGS__
#define TENQ_STATE_IF_LIVE_FINAL(...)
#define TENQ_STATE_IF_FINAL(kind, ...) TENQ_STATE_IF_FINAL_##kind(__VA_ARGS__)
#define TENQ_STATE_IF_FINAL_LIVE(...)
#define TENQ_STATE_IF_FINAL_FINAL(...) __VA_ARGS__

#endif
