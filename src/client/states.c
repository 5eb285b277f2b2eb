// SPDX-License-Identifier: Apache-2.0
/* The names of job states (tenq_state_name, tenq_state_parse) and which
 * of them are final. */
#include "tenq/tenq.h"

#include <string.h>

/* By tenq_state (include/tenq/tenq.h); tests/cli/test_client_http.c checks
 * that every state the server's engine names is here. */
static const char *const state_names[] = {"unknown",   "scheduled", "blocked", "ready",
                                          "leased",    "running",   "dead",    "succeeded",
                                          "cancelled", "merged",    "waiting"};
_Static_assert(sizeof state_names / sizeof state_names[0] == TENQ_STATE_WAITING + 1,
               "a name for every tenq_state");

const char *tenq_state_name(tenq_state s)
{
    return (unsigned)s < sizeof state_names / sizeof state_names[0] ? state_names[s] : "unknown";
}

tenq_state tenq_state_parse(const char *name)
{
    for (unsigned i = 1; name && i < sizeof state_names / sizeof state_names[0]; i++)
        if (!strcmp(state_names[i], name)) return (tenq_state)i;
    return TENQ_STATE_UNKNOWN;
}

bool tenq_state_finished(tenq_state s)
{
    return s == TENQ_STATE_SUCCEEDED || s == TENQ_STATE_CANCELLED || s == TENQ_STATE_MERGED ||
           s == TENQ_STATE_DEAD;
}
