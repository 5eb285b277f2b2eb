// SPDX-License-Identifier: Apache-2.0
/* libtenq's pure parts: server URLs, response heads, error words, and JSON
 * read in place (client/scan.h) with the job it fills. */
#include "runner.h"

#include "client/http.h"
#include "client/internal.h"
#include "engine/engine.h" /* the server's states, to check libtenq's against */
#include "base/jscan.h"
#include "tenq/errors.h"

#include <jansson.h>

static int parse(const char *s, tq_http_head *h)
{
    const char *why = NULL;
    int rc = tq_http_head_parse(s, strlen(s), h, &why);
    if (rc < 0) ASSERT(why != NULL);
    return rc;
}

TEST(url_with_scheme_host_and_port)
{
    tq_url u;
    const char *why;
    ASSERT_EQ(tq_url_parse("http://127.0.0.1:7070", &u, &why), 0);
    ASSERT_STR(u.host, "127.0.0.1");
    ASSERT_STR(u.port, "7070");
    ASSERT_STR(u.hostport, "127.0.0.1:7070");
    ASSERT_EQ(tq_url_parse("http://example.com/", &u, &why), 0);
    ASSERT_STR(u.host, "example.com");
    ASSERT_STR(u.port, "80");
    ASSERT_EQ(tq_url_parse("localhost:9", &u, &why), 0);
    ASSERT_STR(u.hostport, "localhost:9");
    ASSERT_EQ(tq_url_parse("HTTP://[::1]:8080", &u, &why), 0);
    ASSERT_STR(u.host, "::1");
    ASSERT_STR(u.hostport, "[::1]:8080");
    ASSERT(!u.tls);
}

TEST(url_https_and_its_port)
{
    tq_url u;
    const char *why;
    ASSERT_EQ(tq_url_parse("https://tenq.example.com", &u, &why), 0);
    ASSERT(u.tls);
    ASSERT_STR(u.host, "tenq.example.com");
    ASSERT_STR(u.port, "443");
    ASSERT_STR(u.hostport, "tenq.example.com:443");
    ASSERT_EQ(tq_url_parse("HTTPS://[::1]:7443/", &u, &why), 0);
    ASSERT(u.tls);
    ASSERT_STR(u.hostport, "[::1]:7443");
    ASSERT_EQ(tq_url_parse("http://x", &u, &why), 0);
    ASSERT(!u.tls);
}

TEST(url_refuses_what_it_cannot_serve)
{
    tq_url u;
    const char *why = NULL;
    const char *bad[] = {
        "",           "https://",        "https://x/prefix", "httpx://x:1",    "ftp://x",
        "http://",    "http://:80",      "http://x:0",       "http://x:65536", "http://x:12ab",
        "http://x:/", "http://x/prefix", "http://[::1",      "http://us er@x", "http://x:80?q"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why = NULL;
        ASSERT_MSG(tq_url_parse(bad[i], &u, &why) == TENQ_EINVALID, "accepted \"%s\"", bad[i]);
        ASSERT(why && *why);
    }
    ASSERT_EQ(tq_url_parse(NULL, &u, &why), TENQ_EINVALID);
}

TEST(head_with_content_length)
{
    tq_http_head h;
    const char *s = "HTTP/1.1 201 Created\r\nDate: x\r\nContent-Length: 57\r\n"
                    "Content-Type: application/json\r\n\r\n{\"id\":1}";
    ASSERT_EQ(parse(s, &h), 1);
    ASSERT_EQ(h.status, 201);
    ASSERT_EQ(h.minor, 1);
    ASSERT_EQ(h.content_length, 57);
    ASSERT(!h.close);
    ASSERT_EQ(h.head_len, strlen(s) - strlen("{\"id\":1}"));
}

TEST(head_needs_more_at_every_split_point)
{
    const char *s = "HTTP/1.1 404 Not Found\r\nContent-Length: 10\r\nConnection: close\r\n\r\n";
    size_t n = strlen(s);
    for (size_t k = 0; k < n; k++) {
        tq_http_head h;
        const char *why;
        ASSERT_MSG(tq_http_head_parse(s, k, &h, &why) == 0, "split at %zu", k);
    }
    tq_http_head h;
    ASSERT_EQ(parse(s, &h), 1);
    ASSERT_EQ(h.status, 404);
    ASSERT(h.close);
    ASSERT_EQ(h.head_len, n);
}

TEST(head_connection_tokens_and_http10)
{
    tq_http_head h;
    ASSERT_EQ(
        parse("HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n", &h),
        1);
    ASSERT(h.close);
    ASSERT_EQ(parse("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n", &h), 1);
    ASSERT(h.close);
    ASSERT_EQ(parse("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n", &h),
              1);
    ASSERT(!h.close);
    ASSERT_EQ(h.minor, 0);
}

TEST(head_without_length_runs_to_the_close)
{
    tq_http_head h;
    ASSERT_EQ(parse("HTTP/1.1 200 OK\r\n\r\nabc", &h), 1);
    ASSERT_EQ(h.content_length, -1);
    ASSERT(h.close);
}

TEST(head_statuses_without_a_body)
{
    tq_http_head h;
    ASSERT_EQ(parse("HTTP/1.1 100 Continue\r\n\r\n", &h), 1);
    ASSERT_EQ(h.status, 100);
    ASSERT_EQ(h.content_length, 0);
    ASSERT_EQ(parse("HTTP/1.1 204 No Content\r\n\r\n", &h), 1);
    ASSERT_EQ(h.content_length, 0);
    ASSERT(!h.close);
    ASSERT_EQ(parse("HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n", &h), 1);
    ASSERT_EQ(h.content_length, 0);
}

TEST(head_accepts_bare_line_feeds_and_odd_spacing)
{
    tq_http_head h;
    ASSERT_EQ(parse("HTTP/1.1 200 OK\nContent-Length:   5  \n\n", &h), 1);
    ASSERT_EQ(h.content_length, 5);
    ASSERT_EQ(parse("HTTP/1.1 200\r\ncontent-length: 3\r\n\r\n", &h), 1);
    ASSERT_EQ(h.status, 200);
    ASSERT_EQ(h.content_length, 3);
    ASSERT_EQ(parse("HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\n", &h), 1);
    ASSERT_EQ(h.content_length, 4);
}

TEST(head_refuses_malformed_answers)
{
    const char *bad[] = {
        "HTTP/2 200 OK\r\n\r\n",
        "HTTP/1.1 20 OK\r\n\r\n",
        "HTTP/1.1 2000 OK\r\n\r\n",
        "HTTP/1.1 099 Low\r\n\r\n",
        "HTTP/1.1 200OK\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 1234567890123456\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
        "HTTP/1.1 200 OK\r\n folded: x\r\n\r\n",
        "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
        "HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
        "HTTP/1.1 200 OK\r\nbad name: x\r\n\r\n",
        "garbage\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tq_http_head h;
        ASSERT_MSG(parse(bad[i], &h) == TENQ_EPROTOCOL, "accepted #%zu: %s", i, bad[i]);
    }
}

TEST(head_refuses_garbage_before_the_end_of_the_head)
{
    tq_http_head h;
    const char *why;
    ASSERT_EQ(tq_http_head_parse("SSH-2.0-OpenSSH", 15, &h, &why), TENQ_EPROTOCOL);
    ASSERT_EQ(tq_http_head_parse("HTTP/1", 6, &h, &why), 0);
}

TEST(head_has_a_size_limit)
{
    size_t n = TQ_HEAD_MAX + 100;
    char *s = malloc(n + 1);
    memcpy(s, "HTTP/1.1 200 OK\r\nX: ", 20);
    memset(s + 20, 'a', n - 20);
    s[n] = 0;
    tq_http_head h;
    const char *why;
    ASSERT_EQ(tq_http_head_parse(s, n, &h, &why), TENQ_EPROTOCOL);
    ASSERT_EQ(tq_http_head_parse(s, 1000, &h, &why), 0);
    memcpy(s + n - 4, "\r\n\r\n", 4);
    ASSERT_EQ(tq_http_head_parse(s, n, &h, &why), TENQ_EPROTOCOL);
    free(s);
}

TEST(error_words_and_statuses_map_to_codes)
{
    ASSERT_EQ(tq_err_from_answer("invalid", 400), TENQ_EINVALID);
    ASSERT_EQ(tq_err_from_answer("not_found", 404), TENQ_ENOT_FOUND);
    ASSERT_EQ(tq_err_from_answer("conflict", 409), TENQ_ECONFLICT);
    ASSERT_EQ(tq_err_from_answer("unauthenticated", 401), TENQ_EUNAUTHENTICATED);
    ASSERT_EQ(tq_err_from_answer("forbidden", 403), TENQ_EFORBIDDEN);
    ASSERT_EQ(tq_err_from_answer("too_large", 413), TENQ_ETOO_LARGE);
    ASSERT_EQ(tq_err_from_answer("rate_limited", 429), TENQ_ERATE_LIMITED);
    ASSERT_EQ(tq_err_from_answer("overloaded", 429), TENQ_EOVERLOADED);
    ASSERT_EQ(tq_err_from_answer("unavailable", 503), TENQ_EUNAVAILABLE);
    ASSERT_EQ(tq_err_from_answer("internal", 500), TENQ_EINTERNAL);
    ASSERT_EQ(tq_err_from_answer("timeout", 408), TENQ_ETIMEOUT);
    /* an unknown word or none: by status */
    ASSERT_EQ(tq_err_from_answer("teapot", 404), TENQ_ENOT_FOUND);
    ASSERT_EQ(tq_err_from_answer(NULL, 503), TENQ_EUNAVAILABLE);
    ASSERT_EQ(tq_err_from_answer(NULL, 431), TENQ_ETOO_LARGE);
    ASSERT_EQ(tq_err_from_answer(NULL, 418), TENQ_EINVALID);
    ASSERT_EQ(tq_err_from_answer(NULL, 599), TENQ_EINTERNAL);
    ASSERT_EQ(tq_err_from_answer(NULL, 302), TENQ_EPROTOCOL);
}

/* ---- JSON read in place ------------------------------------------------------------------- */

static bool valid(const char *s)
{
    return tq_scan_valid(s, strlen(s));
}

static tq_span span(const char *s)
{
    return (tq_span){s, strlen(s)};
}

TEST(scan_accepts_json)
{
    const char *good[] = {"0",
                          "-0",
                          "1",
                          "-12",
                          "1.5",
                          "0.25e3",
                          "1E-2",
                          "1e+2",
                          "-0.0e0",
                          "true",
                          "false",
                          "null",
                          "\"\"",
                          "\"a\"",
                          "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
                          "\"\\u00e9\\u20AC\"",
                          "\"\\ud83d\\ude00\"",
                          "\"h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
                          "[]",
                          "{}",
                          " [ ] ",
                          "[1,2,[3,{}]]",
                          "{\"a\":1,\"b\":[true,null],\"c\":{\"d\":\"e\"}}",
                          "\t{ \"a\" : 1 ,\n\"a\":2 }\r\n"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        ASSERT_MSG(valid(good[i]), "refused %s", good[i]);
}

TEST(scan_refuses_what_is_not_json)
{
    const char *bad[] = {"",
                         " ",
                         "01",
                         "-",
                         "1.",
                         ".5",
                         "1e",
                         "1e+",
                         "+1",
                         "0x1",
                         "NaN",
                         "Infinity",
                         "tru",
                         "nul",
                         "True",
                         "\"",
                         "\"abc",
                         "\"\\x\"",
                         "\"\\u12\"",
                         "\"\\u12g4\"",
                         "\"\\u0000\"",
                         "\"\\ud83d\"",
                         "\"\\ude00\"",
                         "\"\\ud83d\\u0041\"",
                         "\"tab\there\"",
                         "\"\xc3\"",
                         "\"\xff\"",
                         "\"\xed\xa0\x80\"",
                         "[",
                         "[1,]",
                         "[,1]",
                         "[1 2]",
                         "{\"a\"}",
                         "{\"a\":}",
                         "{a:1}",
                         "{\"a\":1,}",
                         "{,}",
                         "1 2",
                         "[1]]",
                         "{}x",
                         "[1]\x01"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ASSERT_MSG(!valid(bad[i]), "accepted %s", bad[i]);
    /* 64 levels are fine, deeper is refused (not a stack overflow) */
    char deep[300];
    memset(deep, '[', 64);
    memset(deep + 64, ']', 64);
    deep[128] = 0;
    ASSERT(valid(deep));
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    deep[200] = 0;
    ASSERT(!valid(deep));
}

/* Strings are skipped 8 bytes a step while no byte needs a look: every byte
 * value at every place of strings around that width is judged as jansson
 * judges it, and so is a two-byte character across each word boundary. */
TEST(scan_strings_byte_by_byte_as_jansson)
{
    char doc[40];
    int checked = 0;
    for (size_t len = 1; len <= 26; len++)
        for (size_t at = 0; at < len; at++)
            for (int ch = 0; ch < 257; ch++) {
                doc[0] = '"';
                memset(doc + 1, 'a', len);
                size_t n = len + 2;
                if (ch < 256) {
                    doc[1 + at] = (char)ch;
                } else { /* é, its second byte after the last place */
                    if (at + 1 >= len) continue;
                    doc[1 + at] = '\xc3';
                    doc[2 + at] = '\xa9';
                }
                doc[n - 1] = '"';
                doc[n] = 0;
                json_error_t err;
                json_t *j = json_loadb(doc, n, JSON_DECODE_ANY, &err);
                bool theirs = j != NULL, ours = tq_scan_valid(doc, n);
                json_decref(j);
                ASSERT_MSG(theirs == ours, "jansson %s, scanner %s: byte %d at %zu of %zu",
                           theirs ? "accepts" : "refuses", ours ? "accepts" : "refuses", ch, at,
                           len);
                checked++;
            }
    ASSERT(checked > 80000);
}

/* Walks the value at `at` by entering every object and array and taking
 * the leaves (the way the answers are read): 0 when all of it is JSON. */
static int walk_entering(tq_iter *at)
{
    if (at->p >= at->e) return -1;
    char open = *at->p;
    if (open != '{' && open != '[') {
        tq_span v;
        return tq_iter_value(at, &v) > 0 ? 0 : -1;
    }
    tq_iter in;
    tq_span k;
    int r;
    if (!tq_iter_enter(at, &in, open)) return -1;
    while ((r = open == '{' ? tq_obj_key(&in, &k) : tq_arr_step(&in)) > 0)
        if (walk_entering(&in) != 0) return -1;
    if (r < 0) return -1;
    tq_iter_leave(at, &in);
    return 0;
}

/* Mutated documents, judged by jansson and by the scanner: they agree. */
TEST(scan_agrees_with_jansson_on_mutations)
{
    const char *seeds[] = {
        "{\"jobs\":[{\"id\":12,\"token\":4294967296,\"tenant\":\"a\",\"args\":{\"n\":[1,2.5,-3e2],"
        "\"s\":\"h\\u00e9\\n\"},\"key\":null,\"ok\":true}]}",
        "[\"\\ud83d\\ude00\",{\"a\":{\"b\":[false,null,0.5]}},\"x\\\\y\\\"z\"]",
        "{\"results\":[{\"error\":{\"code\":\"invalid\",\"message\":\"bad \\/ thing\"}}]}"};
    const char alphabet[] = "{}[]\",:\\/u0123456789abcdefentrulsx.-+eE \t\n\x80\xc3\xa9";
    uint64_t seed = test_seed();
    int agreed = 0;
    for (int round = 0; round < 20000; round++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        const char *src = seeds[(seed >> 33) % 3];
        char doc[256];
        size_t n = strlen(src);
        memcpy(doc, src, n + 1);
        int edits = 1 + (int)((seed >> 40) % 3);
        for (int k = 0; k < edits; k++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            size_t at = (seed >> 33) % n;
            doc[at] = alphabet[(seed >> 20) % (sizeof alphabet - 1)];
        }
        json_error_t err;
        json_t *j = json_loadb(doc, n, JSON_DECODE_ANY, &err);
        bool theirs = j != NULL, ours = tq_scan_valid(doc, n);
        json_decref(j);
        /* an object outlined and walked to its end is checked as a whole */
        tq_span obj, k, v;
        tq_iter it;
        if (tq_obj_outline(doc, n, &obj) && tq_obj_begin(&it, obj)) {
            int rc;
            while ((rc = tq_obj_next(&it, &k, &v)) > 0) {
            }
            ASSERT_MSG((rc == 0) == ours, "walked %s, scanner %s: %s (seed %" PRIu64 ")",
                       rc == 0 ? "to the end" : "to an error", ours ? "accepts" : "refuses", doc,
                       seed);
            /* and entered where it stands, every container in it too */
            tq_iter at = tq_iter_at(obj);
            bool entered = walk_entering(&at) == 0 && at.p == obj.p + obj.n;
            ASSERT_MSG(entered == ours, "entered %s, scanner %s: %s (seed %" PRIu64 ")",
                       entered ? "to the end" : "to an error", ours ? "accepts" : "refuses", doc,
                       seed);
        } else {
            ASSERT_MSG(!ours || doc[strspn(doc, " \t\r\n")] != '{', "not outlined: %s", doc);
        }
        /* jansson refuses numbers beyond 64-bit integers and doubles; JSON
         * has no such limit */
        if (!theirs && (strstr(err.text, "too big") || strstr(err.text, "overflow"))) continue;
        ASSERT_MSG(theirs == ours, "jansson %s, scanner %s: %s (seed %" PRIu64 ")",
                   theirs ? "accepts" : "refuses", ours ? "accepts" : "refuses", doc, seed);
        agreed++;
    }
    ASSERT(agreed > 15000);
}

TEST(scan_walks_objects_and_decodes_strings)
{
    tq_span o, k, v;
    const char *text = " {\"a\":1, \"b\\u0062\":\"x\\ty\\u00e9\\ud83d\\ude00\", \"a\":[2,3],"
                       "\"n\":null} ";
    ASSERT(tq_scan_object(text, strlen(text), &o));
    ASSERT(o.p[0] == '{' && o.p[o.n - 1] == '}');
    tq_iter it;
    ASSERT(tq_obj_begin(&it, o));
    ASSERT_EQ(tq_obj_next(&it, &k, &v), 1);
    ASSERT(tq_key_is(k, "a") && !tq_key_is(k, "ab"));
    ASSERT_EQ(tq_span_int(v), 1);
    ASSERT_EQ(tq_obj_next(&it, &k, &v), 1);
    ASSERT(tq_key_is(k, "bb")); /* an escaped key */
    bool bad = false;
    char *s = tq_span_str(v, &bad);
    ASSERT_STR(s, "x\ty\xc3\xa9\xf0\x9f\x98\x80");
    free(s);
    ASSERT_EQ(tq_obj_next(&it, &k, &v), 1);
    ASSERT_EQ(tq_obj_next(&it, &k, &v), 1);
    ASSERT(tq_span_null(v));
    ASSERT_EQ(tq_obj_next(&it, &k, &v), 0);
    /* the last of duplicate keys, as jansson; arrays walk in order */
    ASSERT(tq_obj_get(o, "a", &v));
    ASSERT(tq_arr_begin(&it, v) && !tq_obj_begin(&it, v));
    tq_span e;
    ASSERT(tq_arr_next(&it, &e) == 1 && tq_span_int(e) == 2);
    ASSERT(tq_arr_next(&it, &e) == 1 && tq_span_int(e) == 3);
    ASSERT_EQ(tq_arr_next(&it, &e), 0);
    ASSERT(!tq_obj_get(o, "missing", &v));
    ASSERT(tq_obj_get(o, "n", &v) && tq_span_str(v, &bad) == NULL && !bad);
    ASSERT(tq_span_text(v, &bad) == NULL && !bad);
    /* a string asked for where there is none */
    ASSERT(tq_obj_get(o, "a", &v) && tq_span_str(v, &bad) == NULL && bad);
    char *t = tq_span_text(v, &bad);
    ASSERT_STR(t, "[2,3]");
    free(t);
    /* only objects are objects */
    ASSERT(!tq_scan_object("[1]", 3, &o));
    ASSERT(!tq_scan_object("{\"a\":1", 6, &o));
}

TEST(scan_enters_containers_where_they_stand)
{
    const char *text = "{\"a\" : [ {\"x\":1} , {\"y\":\"s\",\"z\":[]} ], \"b\":2}";
    tq_span o, k, v;
    ASSERT(tq_obj_outline(text, strlen(text), &o));
    tq_iter top, list, item;
    ASSERT(tq_obj_begin(&top, o));
    ASSERT_EQ(tq_obj_key(&top, &k), 1);
    ASSERT(tq_key_is(k, "a") && *top.p == '[');
    ASSERT(!tq_iter_enter(&top, &list, '{')); /* it is an array */
    ASSERT(tq_iter_enter(&top, &list, '['));
    ASSERT_EQ(tq_arr_step(&list), 1);
    ASSERT(tq_iter_enter(&list, &item, '{'));
    ASSERT(tq_obj_key(&item, &k) == 1 && tq_key_is(k, "x"));
    ASSERT(tq_iter_value(&item, &v) == 1 && tq_span_int(v) == 1);
    ASSERT_EQ(tq_obj_key(&item, &k), 0);
    ASSERT_EQ(tq_obj_key(&item, &k), 0); /* the end stays the end */
    tq_iter_leave(&list, &item);
    ASSERT_EQ(tq_arr_step(&list), 1);
    ASSERT_EQ(tq_iter_value(&list, &v), 1); /* taken whole this time */
    ASSERT(v.n == strlen("{\"y\":\"s\",\"z\":[]}") && !memcmp(v.p, "{\"y\"", 4));
    ASSERT_EQ(tq_arr_step(&list), 0);
    tq_iter_leave(&top, &list);
    ASSERT(tq_obj_key(&top, &k) == 1 && tq_key_is(k, "b"));
    ASSERT(tq_iter_value(&top, &v) == 1 && tq_span_int(v) == 2);
    ASSERT_EQ(tq_obj_key(&top, &k), 0);

    /* what an entered walk refuses: a trailing comma, a missing close, a
     * bad member, a close of the other kind */
    const char *bad[] = {"[1,]", "[1", "{\"a\"1}", "{\"a\":1]", "[{\"a\":tru}]", "[1 2]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tq_iter at = tq_iter_at(span(bad[i]));
        ASSERT_MSG(walk_entering(&at) != 0, "entered %s", bad[i]);
    }
}

TEST(scan_numbers_and_cut_strings)
{
    ASSERT_EQ(tq_span_int(span("999999999999999999")), 999999999999999999LL); /* 18 digits */
    ASSERT_EQ(tq_span_int(span("9223372036854775807")), 9223372036854775807LL);
    ASSERT_EQ(tq_span_int(span("-9223372036854775808")), -9223372036854775807LL - 1);
    ASSERT_EQ(tq_span_int(span("9223372036854775808")), 0); /* one past */
    ASSERT_EQ(tq_span_int(span("-")), 0);
    ASSERT_EQ(tq_span_int(span("-0")), 0);
    ASSERT_EQ(tq_span_int(span("9007199254740993")), 9007199254740993LL);
    ASSERT_EQ(tq_span_int(span("-42")), -42);
    ASSERT_EQ(tq_span_int(span("1.5")), 0);
    ASSERT_EQ(tq_span_int(span("1e3")), 0);
    ASSERT_EQ(tq_span_int(span("\"7\"")), 0);
    ASSERT_EQ(tq_span_int(span("99999999999999999999")), 0); /* beyond 64 bits */
    ASSERT(tq_span_true(span("true")) && !tq_span_true(span("false")));
    char buf[6];
    tq_span_str_to(span("\"ab\\u00e9\\u00e9\""), buf, sizeof buf); /* a b é é: 6 bytes */
    ASSERT_STR(buf, "ab\xc3\xa9");                                 /* not half an é */
    tq_span_str_to(span("12"), buf, sizeof buf);
    ASSERT_STR(buf, "");
}

TEST(job_from_a_lease_answer)
{
    const char *text =
        "{\"id\":7,\"token\":4294967297,\"lease_until\":1795318198236,\"tenant\":\"a\","
        "\"queue\":\"q\",\"type\":\"T\",\"key\":null,\"args\":{\"n\":[1,2500.0],\"x\":\"h\\u00e9\"}"
        ","
        "\"priority\":-3,\"attempt\":2,\"max_attempts\":25,\"run_at\":5,\"created_at\":4,"
        "\"future_field\":{\"x\":[1]}}";
    tenq_job j;
    ASSERT_EQ(tq_job_from_span(span(text), &j), 0);
    ASSERT_EQ(j.id, 7);
    ASSERT_EQ(j.token, 4294967297ULL);
    ASSERT_EQ(j.lease_until, 1795318198236LL);
    ASSERT_EQ(j.state, TENQ_STATE_LEASED); /* no state: leased */
    ASSERT_STR(j.tenant, "a");
    ASSERT(j.key == NULL);
    ASSERT_STR(j.args_json, "{\"n\":[1,2500.0],\"x\":\"h\\u00e9\"}"); /* as sent */
    ASSERT_EQ(j.priority, -3);
    /* the lease's attempt counts the attempts before; the job's is this one's number */
    ASSERT_EQ(j.attempt, 3);
    ASSERT_EQ(j.attempts, 3);
    ASSERT_EQ(j.max_attempts, 25);
    /* the text as sent, but for the attempt's number */
    ASSERT(strstr(j.json, "\"priority\":-3,\"attempt\":3,\"max_attempts\":25,") != NULL);
    ASSERT_EQ(strlen(j.json), strlen(text));
    ASSERT(strncmp(j.json, text, (size_t)(strstr(text, "\"attempt\"") - text)) == 0);
    ASSERT_STR(strstr(j.json, ",\"max_attempts\""), strstr(text, ",\"max_attempts\""));
    tq_job_clear(&j);

    ASSERT_EQ(tq_job_from_span(span("{\"id\":1,\"state\":\"dead\",\"attempts\":4,\"args\":null,"
                                    "\"cancel_requested\":true,\"error\":\"x\\ny\"}"),
                               &j),
              0);
    ASSERT_EQ(j.state, TENQ_STATE_DEAD);
    ASSERT_EQ(j.attempts, 4);
    ASSERT_EQ(j.attempt, 4);
    ASSERT_STR(j.args_json, "null"); /* tenq.h: "null" when none */
    ASSERT(j.cancel_requested);
    ASSERT_STR(j.error, "x\ny");
    tq_job_clear(&j);

    /* an escaped member name is still its name; the last of duplicates
     * counts; every string lands in the job's one block, after its text */
    const char *dup = "{\"id\":3,\"t\\u0065nant\":\"t1\",\"queue\":\"q1\",\"queue\":\"q\\u00e9\","
                      "\"result\":[1],\"worker\":\"w\",\"args\":{}}";
    ASSERT_EQ(tq_job_from_span(span(dup), &j), 0);
    ASSERT_STR(j.tenant, "t1");
    ASSERT_STR(j.queue, "q\xc3\xa9");
    ASSERT_STR(j.result_json, "[1]");
    ASSERT_STR(j.worker, "w");
    ASSERT_STR(j.json, dup);
    ASSERT(j.tenant > j.json + strlen(dup) && j.args_json > j.json + strlen(dup));
    tq_job_clear(&j);
    ASSERT(j.json == NULL && j.tenant == NULL && j.args_json == NULL);

    /* no id, a string where a string must not be, not an object: refused, nothing to free */
    const char *bad[] = {"{\"tenant\":\"a\"}", "{\"id\":\"7\"}", "{\"id\":1,\"tenant\":5}",
                         "{\"id\":1,\"queue\":[\"q\"]}", "[1]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ASSERT_MSG(tq_job_from_span(span(bad[i]), &j) == TENQ_EPROTOCOL, "took %s", bad[i]);
        ASSERT(j.tenant == NULL && j.json == NULL);
    }
}

/* Every state the server's engine names (its X-macro list) is one libtenq
 * knows, by the same name: a state added to the engine and not to
 * tenq_state fails here (as `waiting` did: `tenq jobs --state waiting`
 * was refused, a waiting job showed as "unknown"). */
TEST(every_state_of_the_server_is_a_tenq_state)
{
#define ONE_STATE(n, word, abi, kind, finished, help)                                              \
    do {                                                                                           \
        tenq_state s = tenq_state_parse(#word);                                                    \
        ASSERT_MSG(s != TENQ_STATE_UNKNOWN, "libtenq knows no state \"%s\"", #word);               \
        ASSERT_STR(tenq_state_name(s), #word);                                                     \
        ASSERT_EQ(tenq_state_finished(s), (bool)(finished));                                       \
        ASSERT_EQ((bool)(finished),                                                                \
                  ENGINE_##n == ENGINE_DEAD || engine_state_finished(ENGINE_##n));                 \
        known++;                                                                                   \
    } while (0);
    int known = 0;
    TENQ_STATE_TABLE(ONE_STATE)
#undef ONE_STATE
    ASSERT_EQ(known, ENGINE_NSTATES);
    ASSERT_EQ(tenq_state_parse("nonsense"), TENQ_STATE_UNKNOWN);
    ASSERT_STR(tenq_state_name(TENQ_STATE_UNKNOWN), "unknown");
}
