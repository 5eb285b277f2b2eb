// SPDX-License-Identifier: Apache-2.0
/* Reading a request's parts (request.c): its JSON body, the members of an
 * object, query parameters, a path's id.  The req_* functions answer a
 * refusal themselves (400 naming the field, or 404 for an id) and return
 * false (NULL, 0); the obj_* ones put it in an engine_err instead. */
#ifndef TENQ_API_REQUEST_H
#define TENQ_API_REQUEST_H

#include "http.h"

#include "engine/engine.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* The body as a JSON object; replies 400 itself and returns NULL on error. */
json_t *req_body(http_req *req);
/* The first key of obj not in allowed (NULL-terminated), or NULL. */
const char *obj_unknown_field(json_t *obj, const char *const *allowed);
/* Checks that every key of obj is in the NULL-terminated list; replies 400 otherwise. */
bool req_only_fields(http_req *req, json_t *obj, const char *const *allowed);
/* A string or an integer member (absent or null: not given, *out NULL or
 * unchanged): 0, or the refusal in err.  req_str and req_int reply it. */
int obj_str(json_t *obj, const char *key, bool required, const char **out, engine_err *err);
int obj_int(json_t *obj, const char *key, long long min, long long max, long long *out,
            bool *present, engine_err *err);
bool req_str(http_req *req, json_t *obj, const char *key, const char **out, bool required);
bool req_int(http_req *req, json_t *obj, const char *key, long long *out, bool *present,
             long long min, long long max);
bool req_bool(http_req *req, json_t *obj, const char *key, bool *out, bool *present);
/* Refuses (400 naming it) a member of obj that is null.  For the bodies
 * where leaving a field out widens what the request acts on (a filter's
 * "any", a pause's "every tenant"): an explicit null, an unset variable in
 * the client, must not widen it too. */
bool req_no_null(http_req *req, json_t *obj);
/* Names read from a request, each checked by its kind's one rule
 * (engine_check_name; SEMANTICS.md, "Names"), replying 400 naming the
 * field otherwise.  req_name reads a member of obj (absent: *out NULL; null
 * or not a string: refused); req_query_name a query parameter (absent:
 * *out NULL) into buf, read whole: a value cut to fit buf is longer than
 * any name, so the rule refuses it. */
#define QUERY_NAME_BUF (ENGINE_KEY_MAX + 2)
bool req_name_ok(http_req *req, engine_name_kind kind, const char *field, const char *s);
bool req_name(http_req *req, json_t *obj, const char *key, engine_name_kind kind, const char **out);
bool req_query_name(http_req *req, const char *name, engine_name_kind kind,
                    char buf[QUERY_NAME_BUF], const char **out);
/* A numeric query parameter from lo to hi (dflt when absent); replies 400
 * and returns false when it is not a whole number in range. */
/* A query parameter "true" or "false" (also 1 or 0); absent: false. */
bool req_query_bool(http_req *req, const char *name, bool *out);
bool req_query_num(http_req *req, const char *name, long long dflt, long long lo, long long hi,
                   long long *out);
/* Parses a positive id from a path segment; replies 404 and returns 0 if bad. */
uint64_t req_path_id(http_req *req, const char *seg);
/* Canonical JSON text (keys sorted, compact); malloc'd. */
char *canonical_json(const json_t *v);

#endif
