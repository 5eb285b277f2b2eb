// SPDX-License-Identifier: Apache-2.0
/* The names of job states (tenq_state_name, tenq_state_parse) and which
 * of them are finished: the rows of tenq/states.h, by libtenq's value. */
#include "tenq/tenq.h"

#include <string.h>

static const struct {
    const char *name;
    bool finished;
} states[TENQ_STATE_ABI_END] = {[TENQ_STATE_UNKNOWN] = {"unknown", false},
#define STATE_ROW_(name, word, abi, kind, finished, help) [abi] = {#word, finished},
                                TENQ_STATE_TABLE(STATE_ROW_)
#undef STATE_ROW_
};

const char *tenq_state_name(tenq_state s)
{
    return (unsigned)s < TENQ_STATE_ABI_END && states[s].name ? states[s].name : "unknown";
}

tenq_state tenq_state_parse(const char *name)
{
    for (unsigned i = 1; name && i < TENQ_STATE_ABI_END; i++)
        if (states[i].name && !strcmp(states[i].name, name)) return (tenq_state)i;
    return TENQ_STATE_UNKNOWN;
}

bool tenq_state_finished(tenq_state s)
{
    return (unsigned)s < TENQ_STATE_ABI_END && states[s].finished;
}
