// SPDX-License-Identifier: Apache-2.0
/* The dashboard: static files compiled into the binary (dashboard/ in the
 * source tree, embedded by tools/embed.c), served at / and /ui/NAME.  It
 * uses only the public API, with the token the user types in; states.js is
 * made from the table of states (api_spec.c). */
#include "auth.h"
#include "handlers.h"
#include "http.h"
#include "jbuf.h"
#include "reply.h"
#include "server.h"

#include "base/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct asset {
    const char *name;
    const unsigned char *data;
    size_t len;
} asset;
extern const asset dashboard_assets[];

static const char *content_type(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot) return "application/octet-stream";
    if (!strcmp(dot, ".html")) return "text/html; charset=utf-8";
    if (!strcmp(dot, ".js")) return "text/javascript; charset=utf-8";
    if (!strcmp(dot, ".css")) return "text/css; charset=utf-8";
    if (!strcmp(dot, ".svg")) return "image/svg+xml";
    if (!strcmp(dot, ".png")) return "image/png";
    if (!strcmp(dot, ".json")) return "application/json";
    return "application/octet-stream";
}

/* The page may talk to this server only; no framing by others. */
static const char headers[] = "Cache-Control: no-cache\r\n"
                              "X-Content-Type-Options: nosniff\r\n"
                              "X-Frame-Options: DENY\r\n"
                              "Referrer-Policy: no-referrer\r\n"
                              "Content-Security-Policy: default-src 'self'; img-src 'self' data:; "
                              "style-src 'self'; script-src 'self'; connect-src 'self'; "
                              "frame-ancestors 'none'\r\n";

void h_dashboard(server *s, http_req *req, const principal *who, const char **args)
{
    (void)s;
    (void)who;
    const char *name = args[0] ? args[0] : "index.html";
    if (!strcmp(name, "states.js")) { /* made from the table of states */
        jbuf b;
        jb_init(&b);
        api_spec_states_js(&b);
        size_t len;
        char *js = jb_take(&b, &len);
        http_reply(req, 200, content_type(name), headers, js, len);
        free(js);
        return;
    }
    for (const asset *a = dashboard_assets; a->name; a++) {
        if (strcmp(a->name, name) != 0) continue;
        http_reply(req, 200, content_type(name), headers, (const char *)a->data, a->len);
        return;
    }
    reply_error(req, TENQ_ENOT_FOUND, NULL, "no such file: %s", name);
}
