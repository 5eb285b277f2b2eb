// SPDX-License-Identifier: Apache-2.0
/* The leadership as the loop sees it (serving.h). */
#include "serving.h"

#include "lead.h"
#include "server.h"

#include <stdio.h>

bool srv_serving(server *s)
{
    return s->lead.leading && !s->lead.resyncing && lead_valid(s);
}

void srv_not_leader(server *s, http_req *req)
{
    char url[256];
    if (lead_leader(s, url, sizeof url)) {
        char hdrs[1200], body[600];
        snprintf(hdrs, sizeof hdrs, "Location: %s%s%s%s\r\nTenq-Leader: %s\r\n", url, req->path,
                 *req->query ? "?" : "", req->query, url);
        int n = snprintf(body, sizeof body,
                         "{\"error\":{\"code\":\"not_leader\",\"message\":\"this server is a "
                         "standby; the leader is %s\",\"leader\":\"%s\"}}",
                         url, url);
        http_reply(req, 307, "application/json", hdrs, body, (size_t)n);
        return;
    }
    static const char body[] = "{\"error\":{\"code\":\"not_leader\",\"message\":\"this server "
                               "does not lead the store, and no leader is known yet: try "
                               "again\"}}";
    http_reply(req, 503, "application/json", "Retry-After: 1\r\n", body, sizeof body - 1);
}
