/* libtenq's pure HTTP parts: server URLs, response heads, error words. */
#include "../unit/runner.h"

#include "client/http.h"
#include "tenq/errors.h"

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
}

TEST(url_refuses_what_it_cannot_serve)
{
    tq_url u;
    const char *why = NULL;
    const char *bad[] = {"",
                         "https://x:1",
                         "ftp://x",
                         "http://",
                         "http://:80",
                         "http://x:0",
                         "http://x:65536",
                         "http://x:12ab",
                         "http://x:/",
                         "http://x/prefix",
                         "http://[::1",
                         "http://us er@x",
                         "http://x:80?q"};
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
