// SPDX-License-Identifier: Apache-2.0
/* The store's tokens into the server's (auth_load.c), and the admin token
 * TENQ_ADMIN_TOKEN makes. */
#ifndef TENQ_API_AUTH_LOAD_H
#define TENQ_API_AUTH_LOAD_H

#include "store/store.h"

#include <stddef.h>

typedef struct server server;

/* Tokens as a load collects them (token_list_add as a store_token_fn):
 * copies, freed by token_list_free. */
typedef struct token_list {
    store_token *v;
    size_t n, cap;
} token_list;
void token_list_add(void *ctx, const store_token *t);
void token_list_free(token_list *l);

/* Tokens as the store has them (revoked ones too), merged into this
 * server's. */
void srv_merge_tokens(server *s, const store_token *v, size_t n);
/* A standby's: the store's tokens as they are now, merged (the leader it
 * may become loads them again); 0 or the store's error (logged). */
int srv_load_tokens(server *s);
/* The TENQ_ADMIN_TOKEN one, made when missing (a leader writes it into the
 * batch being built): 0, or -1 when it names another role's token. */
int srv_ensure_admin_token(server *s);

#endif
