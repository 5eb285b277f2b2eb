// SPDX-License-Identifier: Apache-2.0
/* The JSON scanner (src/base/jscan.c) against jansson: any bytes are judged
 * alike by tq_scan_valid and jansson (but for the numbers jansson refuses
 * as too big, nesting beyond the scanner's 64 levels, and jansson's taking
 * a NUL byte after a lone number for the end); an object is
 * walked (tq_obj_next) and entered (tq_obj_key, tq_arr_step, tq_iter_value,
 * tq_iter_enter) to its end exactly when it is valid; a valid string
 * decodes to jansson's bytes (whole, and cut to small buffers), an integer
 * to jansson's value, and an object's members are found by name. */
#include "fuzz.h"

#include "base/jscan.h"

#include <jansson.h>
#include <string.h>

/* Walks the value at `at` entering every object and array and taking the
 * leaves (the way answers and requests are read): 0 when all of it is JSON. */
static int walk_entering(tq_iter *at, int depth)
{
    if (at->p >= at->e) return -1;
    char open = *at->p;
    if (open != '{' && open != '[') {
        tq_span v;
        return tq_iter_value(at, &v) > 0 ? 0 : -1;
    }
    /* entering goes as deep as the scanner would (it skips no container) */
    if (depth >= TQ_DEPTH_MAX) return -1;
    tq_iter in;
    tq_span k;
    int r;
    if (!tq_iter_enter(at, &in, open)) return -1;
    while ((r = open == '{' ? tq_obj_key(&in, &k) : tq_arr_step(&in)) > 0)
        if (walk_entering(&in, depth + 1) != 0) return -1;
    if (r < 0) return -1;
    tq_iter_leave(at, &in);
    return 0;
}

/* The deepest nesting of a valid document (brackets outside strings). */
static int depth_of(const char *s, size_t n)
{
    int d = 0, max = 0;
    bool str = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                str = false;
        } else if (c == '"') {
            str = true;
        } else if (c == '{' || c == '[') {
            if (++d > max) max = d;
        } else if (c == '}' || c == ']') {
            d--;
        }
    }
    return max;
}

static void check_string(tq_span v, json_t *j)
{
    FUZZ_CHECK(json_is_string(j), "a string to the scanner, not to jansson");
    bool bad = false;
    char *s = tq_span_str(v, &bad);
    FUZZ_CHECK(s && !bad, "tq_span_str failed");
    size_t n = strlen(s);
    FUZZ_CHECK(n == json_string_length(j) && !memcmp(s, json_string_value(j), n),
               "decoded %zu bytes, jansson %zu", n, json_string_length(j));
    char *into = malloc(v.n - 1);
    FUZZ_CHECK(tq_span_str_into(v, into) == n && !memcmp(into, s, n), "tq_span_str_into");
    free(into);
    for (size_t len = 1; len <= 9; len += 4) {
        char *buf = malloc(len);
        tq_span_str_to(v, buf, len);
        size_t got = strlen(buf);
        FUZZ_CHECK(got < len && !memcmp(buf, s, got), "tq_span_str_to cut wrong");
        free(buf);
    }
    free(s);
}

static void check_object(tq_span obj, json_t *j)
{
    tq_iter it;
    tq_span k, v;
    int rc;
    FUZZ_CHECK(tq_obj_begin(&it, obj), "an object not begun");
    while ((rc = tq_obj_next(&it, &k, &v)) > 0) {
        bool bad = false;
        /* the key decoded, as a string token (with its quotes) */
        tq_span ks = {k.p - 1, k.n + 2};
        char *name = tq_span_str(ks, &bad);
        FUZZ_CHECK(name && !bad, "a key not decoded");
        tq_span got;
        FUZZ_CHECK(tq_key_is(k, name), "key not itself: %s", name);
        FUZZ_CHECK(tq_obj_get(obj, name, &got), "member %s not found", name);
        json_t *jv = j ? json_object_get(j, name) : NULL;
        if (j) FUZZ_CHECK(jv != NULL, "jansson has no member %s", name);
        if (jv && got.n && got.p[0] == '"') check_string(got, jv);
        char small[8];
        tq_obj_str_to(obj, name, small, sizeof small);
        FUZZ_CHECK(strlen(small) < sizeof small, "tq_obj_str_to");
        free(name);
    }
    FUZZ_CHECK(rc == 0, "a valid object not walked to its end");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *doc = (const char *)data;
    bool ours = tq_scan_valid(doc, size);
    json_error_t err;
    json_t *j = json_loadb(doc, size, JSON_DECODE_ANY, &err);
    bool theirs = j != NULL;
    if (ours && !theirs)
        FUZZ_CHECK(strstr(err.text, "too big") || strstr(err.text, "overflow"),
                   "the scanner accepts what jansson refuses: %s", err.text);
    /* jansson takes a NUL byte after a top-level number or word for the end
     * ("1\0" is accepted, "[1]\0" is not): no body is one (the server reads
     * objects only) */
    if (theirs && !ours)
        FUZZ_CHECK(depth_of(doc, size) > 64 || memchr(doc, 0, size),
                   "jansson accepts what the scanner refuses");

    /* an object outlined, walked and entered to its end is checked whole */
    tq_span obj;
    tq_iter it;
    if (tq_obj_outline(doc, size, &obj) && tq_obj_begin(&it, obj)) {
        tq_span k, v;
        int rc;
        while ((rc = tq_obj_next(&it, &k, &v)) > 0) {
        }
        FUZZ_CHECK((rc == 0) == ours, "walked %s, scanner %s",
                   rc == 0 ? "to the end" : "to an error", ours ? "accepts" : "refuses");
        tq_iter at = tq_iter_at(obj);
        bool entered = walk_entering(&at, 0) == 0 && at.p == obj.p + obj.n;
        FUZZ_CHECK(entered == ours, "entered %s, scanner %s",
                   entered ? "to the end" : "to an error", ours ? "accepts" : "refuses");
        tq_span o2;
        FUZZ_CHECK(tq_scan_object(doc, size, &o2) == ours, "tq_scan_object");
        if (ours) check_object(obj, json_is_object(j) ? j : NULL);
    }

    /* one value: its end, and what it decodes to */
    size_t lead = 0;
    while (lead < size && strchr(" \t\r\n", doc[lead]) && doc[lead]) lead++;
    if (lead < size) {
        const char *end = tq_scan_value(doc + lead, doc + size);
        if (ours) {
            FUZZ_CHECK(end != NULL, "a valid document has no value");
            tq_span v = {doc + lead, (size_t)(end - doc - lead)};
            if (theirs && json_is_string(j)) check_string(v, j);
            if (theirs && json_is_integer(j)) {
                long long x = tq_span_int(v);
                FUZZ_CHECK(x == json_integer_value(j), "integer %lld, jansson %lld", x,
                           (long long)json_integer_value(j));
            }
            bool bad = false;
            char *t = tq_span_text(v, &bad);
            FUZZ_CHECK(tq_span_null(v) ? t == NULL : (t && strlen(t) <= v.n), "tq_span_text");
            free(t);
        }
    }
    json_decref(j);
    return 0;
}
