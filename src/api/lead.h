// SPDX-License-Identifier: Apache-2.0
/* The leadership of the store, its thread (lead.c; the loop's side is
 * lead_loop.c): campaigns, renewals, terms, and a loader thread that loads
 * each new term's engine while renewals go on.  The threads know nothing
 * of what a term loads (lead_hooks.load: term_load.c) nor of what the loop
 * does with it (lead_hooks.news: lead_loop.c). */
#ifndef TENQ_API_LEAD_H
#define TENQ_API_LEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct server server;

typedef struct lead_hooks {
    /* On the loader thread: what a term serves with, loaded from the store
     * (never NULL, for load_free), with *rc 0 or why the load failed. */
    void *(*load)(server *s, uint64_t term, int *rc);
    void (*load_free)(void *loaded); /* NULL: nothing */
    /* On the loop: the threads have news (lead_take_news says what). */
    void (*news)(server *s);
} lead_hooks;

/* What the threads told the loop since it last looked. */
typedef struct lead_news {
    uint64_t leading; /* the term this server leads under; 0: none */
    void *loaded;     /* what was loaded for that term (the caller's now), or NULL */
    bool other;       /* another server leads (its leadership not expired) */
    bool inbox;       /* an application's transaction committed to the inbox */
    char why[300];    /* why the leadership was lost */
} lead_news;

/* This start's node name (random, 16 hex digits), made before the store is
 * opened: the store's connections carry it from the first. */
void lead_node_name(char *out, size_t len);
/* Makes this start's holder of the leadership (its name and the address it
 * advertises stay readable until lead_free): 0, or -1 (logged). */
int lead_open(server *s, const char *node, const char *listen_host, const lead_hooks *hooks);
/* The first campaign, before the loop runs: true when this server leads
 * (and its load has ended: lead_take_news has it). */
bool lead_campaign_first(server *s);
/* Starts the leadership's thread: 0, or -1 (logged). */
int lead_run(server *s);
/* The news (hooks.news was called, or a first campaign ended). */
void lead_take_news(server *s, lead_news *n);
/* Ends the threads (resign: give the leadership up first); lead_free frees
 * what is left.  Both may be called more than once. */
void lead_stop(server *s, bool resign);
void lead_free(server *s);
/* The leadership is certain now (SQLite: always). */
bool lead_valid(const server *s);
/* After a failed commit, every batch reported: a new term, a new engine. */
void lead_reload(server *s);
/* Something says the leadership may be lost: the thread looks now. */
void lead_recheck(server *s);
/* The leader's URL when another server leads and its URL is known. */
bool lead_leader(server *s, char *url, size_t len);
const char *lead_node(const server *s);
const char *lead_advertise(const server *s);

#endif
