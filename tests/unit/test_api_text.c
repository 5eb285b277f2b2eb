// SPDX-License-Identifier: Apache-2.0
/* The server's text.  First the submit reader that works in place (read_job_text) against the one
 * that reads a jansson tree (read_job): on every body the first accepts,
 * the second must accept too and read the same fields and the same
 * canonical args; bodies of the shapes clients send must not be declined.
 * Bodies are generated (every field, right and wrong types, args of every
 * JSON shape, escapes, duplicates, reals jansson rewrites) and mutated. */
#include "runner.h"

#include "api/jbuf.h"
#include "api/jobread.h"
#include "api/request.h"
#include "base/jreal.h"
#include "base/jscan.h"

#include <math.h>

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next(rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

static int pick(rng *r, int n)
{
    return (int)(next(r) % (uint64_t)n);
}

/* The first `required` of nfields fields and a third of the others, in
 * any order, into order; returns how many. */
static int some_fields(rng *r, int nfields, int required, int *order)
{
    int n = 0;
    for (int f = 0; f < nfields; f++)
        if (f < required || pick(r, 3) == 0) order[n++] = f;
    for (int i = n - 1; i > 0; i--) {
        int j = pick(r, i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    return n;
}

static void put(jbuf *b, const char *s)
{
    jb_put(b, s, strlen(s));
}

/* plain: only the shapes the in-place reader must take */
static void gen_string(rng *r, jbuf *b, bool plain)
{
    static const char *plains[] = {
        "acme", "reports", "DataReport.execute", "k1",     "", "caf\xc3\xa9",
        "a/b",  "x y",     "\xe2\x82\xac",       "order:7"};
    static const char *escaped[] = {"a\\nb", "\\u00e9",        "\\\"q\\\"", "\\\\",
                                    "\\/",   "\\ud83d\\ude00", "t\\tab",    "\\u0041"};
    put(b, "\"");
    if (plain || pick(r, 4))
        put(b, plains[pick(r, 10)]);
    else
        put(b, escaped[pick(r, 8)]);
    put(b, "\"");
}

static void gen_number(rng *r, jbuf *b, bool plain)
{
    static const char *plains[] = {"0",
                                   "1",
                                   "-1",
                                   "42",
                                   "-0",
                                   "123456789012345678",
                                   "0.5",
                                   "1e5",
                                   "-2.5E-3",
                                   "1.0",
                                   "3.14159265358979",
                                   "1e-400",
                                   "100",
                                   "7E+2",
                                   "0.1",
                                   "-0.0",
                                   "2e308"};
    static const char *wild[] = {"12345678901234567890", "-9223372036854775808",
                                 "9223372036854775807", "99999999999999999999999"};
    if (plain || pick(r, 6))
        put(b, plains[pick(r, plain ? 16 : 17)]); /* 2e308 overflows: jansson refuses it */
    else
        put(b, wild[pick(r, 4)]);
}

static void gen_value(rng *r, jbuf *b, int depth, bool plain);

static void gen_object(rng *r, jbuf *b, int depth, bool plain)
{
    static const char *keys[] = {"a", "b", "c", "s", "k", "q", "id", "name", "Z", "aa", "\xc3\xa9"};
    int n = pick(r, 5);
    put(b, "{");
    for (int i = 0; i < n; i++) {
        if (i) put(b, pick(r, 8) ? "," : " , ");
        if (!plain && !pick(r, 12))
            put(b, "\"\\u0061\"");
        else {
            put(b, "\"");
            put(b, keys[plain ? i * 2 + pick(r, 2) : pick(r, 11)]);
            put(b, "\"");
        }
        put(b, pick(r, 6) ? ":" : " : ");
        gen_value(r, b, depth + 1, plain);
    }
    put(b, "}");
}

static void gen_value(rng *r, jbuf *b, int depth, bool plain)
{
    int k = pick(r, depth > 3 ? 5 : 7);
    switch (k) {
    case 0: gen_string(r, b, plain); break;
    case 1: gen_number(r, b, plain); break;
    case 2: put(b, "true"); break;
    case 3: put(b, pick(r, 2) ? "false" : "null"); break;
    case 4: gen_number(r, b, plain); break;
    case 5: gen_object(r, b, depth, plain); break;
    default: {
        int n = pick(r, 4);
        put(b, "[");
        for (int i = 0; i < n; i++) {
            if (i) put(b, ",");
            gen_value(r, b, depth + 1, plain);
        }
        put(b, "]");
    }
    }
}

static const char *fields[] = {"tenant", "queue",           "type",         "args",
                               "key",    "priority",        "run_at",       "unique_key",
                               "unique", "idempotency_key", "max_attempts", "score"};

static void gen_field(rng *r, jbuf *b, int f, bool plain)
{
    put(b, "\"");
    put(b, fields[f]);
    put(b, "\":");
    if (!plain && !pick(r, 8)) { /* any value at all, often of the wrong type */
        gen_value(r, b, 1, false);
        return;
    }
    if (!plain && !pick(r, 10)) {
        put(b, "null");
        return;
    }
    char tmp[64];
    switch (f) {
    case 3: gen_value(r, b, 0, plain); break;
    case 5:
        snprintf(tmp, sizeof tmp, "%d",
                 plain || pick(r, 3) ? pick(r, 21) - 10 : pick(r, 100000) - 50000);
        put(b, tmp);
        break;
    case 6: put(b, pick(r, 2) ? "0" : "1700000000000"); break;
    case 10: put(b, plain ? "3" : (pick(r, 2) ? "0" : "25")); break;
    case 8: put(b, pick(r, 2) ? "true" : "false"); break;
    case 11: gen_number(r, b, plain); break;
    default: gen_string(r, b, plain);
    }
}

static void gen_job(rng *r, jbuf *b, bool plain)
{
    put(b, pick(r, 5) ? "{" : " { ");
    int order[12], n = some_fields(r, 12, 3, order);
    for (int i = 0; i < n; i++) {
        if (i) put(b, ",");
        gen_field(r, b, order[i], plain);
    }
    if (!plain && !pick(r, 15)) { /* a field twice, or one nobody knows */
        put(b, ",");
        if (pick(r, 2))
            gen_field(r, b, order[pick(r, n)], false);
        else
            put(b, "\"color\":\"red\"");
    }
    put(b, pick(r, 5) ? "}" : "} ");
}

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

typedef struct verdict {
    bool text_ok, tree_ok;
} verdict;

/* read_job_text as the server calls it: on the body found by its braces
 * alone, checked only as the reader walks it. */
static bool read_in_place(const char *body, size_t n, const principal *who, engine_submit_req *r,
                          char **mem)
{
    tq_span obj;
    if (!tq_obj_outline(body, n, &obj)) return false;
    tq_iter at = tq_iter_at(obj);
    if (!read_job_text(&at, who, r, mem)) return false;
    if (at.p == obj.p + obj.n) return true;
    free(*mem); /* {...} and more */
    *mem = NULL;
    return false;
}

/* Both readers on one body; fails the test if the in-place one accepts what
 * the tree one refuses or reads it differently. */
static verdict compare(const char *body, size_t n, const principal *who)
{
    verdict v = {false, false};
    engine_submit_req rt, rj;
    char *mem = NULL, *canon = NULL;
    v.text_ok = read_in_place(body, n, who, &rt, &mem);
    json_error_t jerr;
    json_t *o = json_loadb(body, n, JSON_REJECT_DUPLICATES, &jerr);
    engine_err err;
    if (o && json_is_object(o)) v.tree_ok = read_job(o, who, &rj, &canon, &err);
    if (v.text_ok) {
        ASSERT_MSG(v.tree_ok, "in place accepted what jansson's reader refuses: %.*s", (int)n,
                   body);
        ASSERT_MSG(same_str(rt.tenant, rj.tenant) && same_str(rt.queue, rj.queue) &&
                       same_str(rt.type, rj.type) && same_str(rt.key, rj.key) &&
                       same_str(rt.unique_key, rj.unique_key) &&
                       same_str(rt.idempotency_key, rj.idempotency_key),
                   "strings differ: %.*s", (int)n, body);
        ASSERT_MSG(rt.has_priority == rj.has_priority && rt.priority == rj.priority &&
                       rt.run_at == rj.run_at && rt.max_attempts == rj.max_attempts &&
                       rt.unique == rj.unique && rt.has_score == rj.has_score &&
                       (rt.score == rj.score || (rt.score != rt.score && rj.score != rj.score)),
                   "numbers differ: %.*s", (int)n, body);
        ASSERT_MSG(same_str(rt.args, rj.args) && rt.args_len == rj.args_len,
                   "args differ: %s vs %s in %.*s", rt.args ? rt.args : "(none)",
                   rj.args ? rj.args : "(none)", (int)n, body);
    }
    free(mem);
    free(canon);
    json_decref(o);
    return v;
}

static const principal admin = {.role = ROLE_ADMIN};

TEST(the_usual_shapes_are_read_in_place_exactly_as_jansson_reads_them)
{
    uint64_t seed = test_seed();
    rng r = {seed | 1};
    int n = 0;
    for (int i = 0; i < 20000; i++) {
        jbuf b;
        jb_init(&b);
        gen_job(&r, &b, true);
        verdict v = compare(b.p, b.n, &admin);
        ASSERT_MSG(v.tree_ok, "the generator made a bad plain job: %s", b.p);
        ASSERT_MSG(v.text_ok, "declined a plain job: %s", b.p);
        n++;
        jb_free(&b);
    }
    ASSERT_EQ(n, 20000);
}

TEST(anything_else_is_read_alike_or_left_to_jansson)
{
    uint64_t seed = test_seed();
    rng r = {seed | 1};
    int text = 0, tree = 0, both_refuse = 0;
    for (int i = 0; i < 30000; i++) {
        jbuf b;
        jb_init(&b);
        gen_job(&r, &b, false);
        if (pick(&r, 3) == 0 && b.n > 2) { /* mutate: a byte changed, cut, or inserted */
            size_t at = (size_t)pick(&r, (int)b.n);
            static const char bytes[] = "{}[]\",:\\ 0-.eEtnu\x01\xc3\xff";
            switch (pick(&r, 3)) {
            case 0: b.p[at] = bytes[pick(&r, (int)sizeof bytes - 1)]; break;
            case 1: b.n = at; break;
            default:
                put(&b, " ");
                memmove(b.p + at + 1, b.p + at, b.n - at - 1);
                b.p[at] = bytes[pick(&r, (int)sizeof bytes - 1)];
            }
        }
        verdict v = compare(b.p, b.n, &admin);
        text += v.text_ok;
        tree += v.tree_ok;
        both_refuse += !v.text_ok && !v.tree_ok;
        jb_free(&b);
    }
    /* the mix exercised all three outcomes (in place: about 3,100 of 30,000,
     * 3,000 to 3,200 over seeds; 3,000 was too close and failed 1 seed in 15) */
    ASSERT_MSG(text > 2500 && tree > text && both_refuse > 3000,
               "in place %d, jansson %d, both refused %d", text, tree, both_refuse);
}

TEST(args_come_out_canonical)
{
    static const struct {
        const char *body, *args;
    } cases[] = {
        {"{\"args\": { \"b\" : 1 , \"a\" : [ 2 , -0 , {\"y\":null,\"x\":true} ] } }",
         "{\"a\":[2,0,{\"x\":true,\"y\":null}],\"b\":1}"},
        {"{\"args\":{\"s\":1234.5678}}", NULL}, /* a real: as jansson writes it */
        {"{\"args\":1e5}", "100000.0"},
        {"{\"args\":\"caf\xc3\xa9\"}", "\"caf\xc3\xa9\""},
        {"{\"args\":[]}", "[]"},
        {"{\"args\":{}}", "{}"},
        {"{\"args\":null}", "null"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *body = cases[i].body;
        verdict v = compare(body, strlen(body), &admin);
        ASSERT_MSG(v.text_ok && v.tree_ok, "case %zu", i);
        if (!cases[i].args) continue;
        engine_submit_req r;
        char *mem;
        ASSERT(read_in_place(body, strlen(body), &admin, &r, &mem));
        ASSERT_STR(r.args, cases[i].args);
        free(mem);
    }
}

TEST(refusals_and_unusual_shapes_are_declined)
{
    static const char *bodies[] = {
        "{\"tenant\":1}",                      /* wrong type: jansson's reader words it */
        "{\"tenant\":\"a\",\"tenant\":\"b\"}", /* twice */
        "{\"colour\":\"red\"}",                /* unknown */
        "{\"priority\":1.0}",                  /* a real where an integer goes */
        "{\"priority\":100000}",               /* out of range */
        "{\"max_attempts\":0}",
        "{\"run_at\":-1}",
        "{\"unique\":1}",
        "{\"score\":\"1\"}",
        "{\"args\":{\"a\":1,\"a\":2}}",    /* duplicate key inside args */
        "{\"args\":{\"a\":2e308}}",        /* overflows */
        "{\"args\":12345678901234567890}", /* jansson decides */
        "{\"t\\u0065nant\":\"a\"}",        /* an escaped key */
        "{\"tenant\":\"a\\u0000b\"}",      /* NUL: refused by both */
        "{\"tenant\":\"a\"",               /* cut */
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        verdict v = compare(bodies[i], strlen(bodies[i]), &admin);
        ASSERT_MSG(!v.text_ok, "accepted in place: %s", bodies[i]);
    }
}

TEST(tenant_tokens_bind_the_tenant_and_queues_alike)
{
    token t = {0};
    t.role = ROLE_TENANT;
    snprintf(t.tenant, sizeof t.tenant, "acme");
    char *qs[] = {"reports"};
    t.queues = qs;
    t.nqueues = 1;
    principal who = {.role = ROLE_TENANT, .tok = &t};
    const char *mine = "{\"queue\":\"reports\",\"type\":\"T\"}";
    verdict v = compare(mine, strlen(mine), &who);
    ASSERT(v.text_ok && v.tree_ok);
    engine_submit_req r;
    char *mem;
    ASSERT(read_in_place(mine, strlen(mine), &who, &r, &mem));
    ASSERT_STR(r.tenant, "acme");
    free(mem);
    const char *other_tenant = "{\"tenant\":\"evil\",\"queue\":\"reports\",\"type\":\"T\"}";
    const char *other_queue = "{\"queue\":\"billing\",\"type\":\"T\"}";
    v = compare(other_tenant, strlen(other_tenant), &who);
    ASSERT(!v.text_ok && !v.tree_ok);
    v = compare(other_queue, strlen(other_queue), &who);
    ASSERT(!v.text_ok && !v.tree_ok);
}

TEST(integers_are_written_as_snprintf_writes_them)
{
    static const long long v[] = {0,
                                  1,
                                  -1,
                                  9,
                                  10,
                                  -10,
                                  4294967296LL,
                                  -32768,
                                  32767,
                                  9223372036854775807LL,
                                  -9223372036854775807LL - 1};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        jbuf b;
        jb_init(&b);
        jb_arr(&b);
        jb_int(&b, v[i]);
        jb_uint(&b, (unsigned long long)v[i]);
        jb_arr_end(&b);
        char want[64];
        snprintf(want, sizeof want, "[%lld,%llu]", v[i], (unsigned long long)v[i]);
        size_t n;
        char *got = jb_take(&b, &n);
        ASSERT_STR(got, want);
        ASSERT_EQ(n, strlen(want));
        free(got);
    }
}

TEST(a_key_is_matched_by_what_it_stands_for)
{
    /* the key text \u006a is "j"; \\u006a is the 6 characters \u006a */
    const char *text = "{\"\\u006a\":1,\"\\\\u006a\":2}";
    tq_span obj, v;
    ASSERT(tq_obj_outline(text, strlen(text), &obj));
    ASSERT(tq_obj_get(obj, "j", &v));
    ASSERT_EQ(v.n, 1);
    ASSERT_EQ(v.p[0], '1');
    ASSERT(tq_obj_get(obj, "\\u006a", &v));
    ASSERT_EQ(v.p[0], '2');
    tq_span k = {"\\u006a", 6}; /* the same length as the name, an escape in it */
    ASSERT(!tq_key_is(k, "\\u006a"));
    ASSERT(tq_key_is(k, "j"));
}

/* Strings are copied 8 bytes a step up to the next byte to escape: every
 * byte value at every place of strings around that width comes out escaped
 * as a byte-by-byte writer escapes it. */
TEST(strings_are_escaped_byte_by_byte_alike)
{
    char s[40], want[256];
    for (size_t len = 1; len <= 26; len++)
        for (size_t at = 0; at < len; at++)
            for (int ch = 0; ch < 256; ch++) {
                memset(s, 'a', len);
                s[at] = (char)ch;
                if (at + 3 < len) s[at + 3] = '"'; /* a second one after it */
                size_t w = 0;
                want[w++] = '"';
                for (size_t i = 0; i < len; i++) {
                    unsigned char c = (unsigned char)s[i];
                    if (c == '"' || c == '\\') {
                        want[w++] = '\\';
                        want[w++] = (char)c;
                    } else if (c == '\n' || c == '\r' || c == '\t') {
                        want[w++] = '\\';
                        want[w++] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
                    } else if (c < 0x20) {
                        w += (size_t)snprintf(want + w, sizeof want - w, "\\u%04x", c);
                    } else {
                        want[w++] = (char)c;
                    }
                }
                want[w++] = '"';
                want[w] = 0;
                jbuf b;
                jb_init(&b);
                jb_strn(&b, s, len);
                size_t n;
                char *got = jb_take(&b, &n);
                ASSERT_MSG(n == w && !memcmp(got, want, w), "byte %d at %zu of %zu: %s", ch, at,
                           len, got);
                free(got);
                if (ch != 0) { /* and as a key: {"...":1} */
                    s[len] = 0;
                    jb_init(&b);
                    jb_obj(&b);
                    jb_key(&b, s);
                    jb_int(&b, 1);
                    jb_obj_end(&b);
                    got = jb_take(&b, &n);
                    ASSERT_MSG(n == w + 4 && got[0] == '{' && !memcmp(got + 1, want, w) &&
                                   !strcmp(got + 1 + w, ":1}"),
                               "key: byte %d at %zu of %zu: %s", ch, at, len, got);
                    free(got);
                }
                size_t plain = 0;
                while (plain < len && (unsigned char)s[plain] >= 0x20 && s[plain] != '"' &&
                       s[plain] != '\\')
                    plain++;
                ASSERT_EQ(tq_json_plain(s, len), plain);
            }
}

/* ---- outcomes ---------------------------------------------------------------------------- */

/* Member i's separator and key (colon: ":" or ": "); then, when not plain,
 * sometimes a value of any type (1 in 8) or, for a member that may be
 * null, null (1 in 6): false when the value is written already. */
static bool member_head(rng *r, jbuf *b, int i, const char *key, const char *colon, bool plain,
                        bool nullable)
{
    if (i) put(b, pick(r, 6) ? "," : " , ");
    put(b, "\"");
    put(b, key);
    put(b, "\"");
    put(b, colon);
    if (!plain && !pick(r, 8)) {
        gen_value(r, b, 1, false);
        return false;
    }
    if (!plain && nullable && !pick(r, 6)) {
        put(b, "null");
        return false;
    }
    return true;
}

static const char *ofields[] = {"id",    "token",       "ok",    "result",   "stats",
                                "error", "retry_in_ms", "retry", "cancelled"};

static void gen_outcome(rng *r, jbuf *b, bool plain)
{
    put(b, "{");
    int order[9], n = some_fields(r, 9, 3, order);
    char tmp[64];
    for (int i = 0; i < n; i++) {
        int f = order[i];
        if (!member_head(r, b, i, ofields[f], ":", plain, f > 2)) continue;
        switch (f) {
        case 0:
        case 1:
            snprintf(tmp, sizeof tmp, "%lld",
                     plain || pick(r, 4) ? 1 + (long long)(next(r) % 4294967296000ULL)
                                         : -(long long)pick(r, 3));
            put(b, tmp);
            break;
        case 2:
        case 7:
        case 8: put(b, pick(r, 2) ? "true" : "false"); break;
        case 6:
            snprintf(tmp, sizeof tmp, "%d", plain || pick(r, 4) ? pick(r, 100000) : -5);
            put(b, tmp);
            break;
        case 5:
            if (plain || pick(r, 2))
                gen_string(r, b, false); /* errors may hold escapes: decoded like jansson */
            else
                gen_number(r, b, false);
            break;
        default: gen_value(r, b, 0, plain);
        }
    }
    if (!plain && !pick(r, 15)) put(b, ",\"colour\":1");
    put(b, "}");
}

/* jansson's verdict on one outcome as h_outcomes reads it (0: read into *in) */
static int tree_outcome(json_t *o, outcome_in *in, uint64_t *id)
{
    engine_err err;
    json_t *jid = json_object_get(o, "id"), *jok = json_object_get(o, "ok");
    if (!json_is_object(o) || !json_is_integer(jid) || json_integer_value(jid) < 1 ||
        !json_is_boolean(jok))
        return -1;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        bool known = false;
        for (size_t i = 0; i < 9 && !known; i++) known = !strcmp(ofields[i], k);
        if (!known) return -1;
    }
    *id = (uint64_t)json_integer_value(jid);
    return outcome_read(o, json_is_true(jok), in, &err);
}

static verdict compare_outcome(const char *text, size_t n)
{
    verdict v = {false, false};
    outcome_in a, t;
    uint64_t ida = 0, idt = 0;
    tq_span obj;
    if (tq_obj_outline(text, n, &obj)) { /* as the server reads it: checked as it is walked */
        tq_iter at = tq_iter_at(obj);
        v.text_ok = outcome_read_text(&at, &a, &ida);
        if (v.text_ok && at.p != obj.p + obj.n) {
            outcome_in_free(&a);
            v.text_ok = false;
        }
    }
    json_error_t jerr;
    json_t *o = json_loadb(text, n, JSON_REJECT_DUPLICATES, &jerr);
    memset(&t, 0, sizeof t);
    if (o) v.tree_ok = tree_outcome(o, &t, &idt) == 0;
    if (v.text_ok) {
        ASSERT_MSG(v.tree_ok, "in place accepted an outcome jansson's reader refuses: %.*s", (int)n,
                   text);
        ASSERT_MSG(ida == idt && a.token == t.token && a.ok == t.ok, "id/token/ok differ: %.*s",
                   (int)n, text);
        ASSERT_MSG(same_str(a.result, t.result) && same_str(a.stats, t.stats) &&
                       same_str(a.error, t.error),
                   "result/stats/error differ: %.*s", (int)n, text);
        ASSERT_MSG(a.f.has_retry_in == t.f.has_retry_in && a.f.retry_in_ms == t.f.retry_in_ms &&
                       a.f.no_retry == t.f.no_retry && a.f.cancelled == t.f.cancelled,
                   "failure fields differ: %.*s", (int)n, text);
        outcome_in_free(&a);
    }
    outcome_in_free(&t);
    json_decref(o);
    return v;
}

/* A reader in place held to jansson's on 20,000 bodies: every other one
 * plain (both must read it), the rest wild and a third of those mutated. */
static void fuzz_reader(void (*gen)(rng *, jbuf *, bool), verdict (*cmp)(const char *, size_t),
                        const char *what)
{
    uint64_t seed = test_seed();
    rng r = {seed | 1};
    int text = 0, tree = 0, both_refuse = 0;
    for (int i = 0; i < 20000; i++) {
        jbuf b;
        jb_init(&b);
        bool plain = i % 2 == 0;
        gen(&r, &b, plain);
        if (!plain && pick(&r, 3) == 0 && b.n > 2) {
            size_t at = (size_t)pick(&r, (int)b.n);
            static const char bytes[] = "{}[]\",:\\ 0-.etn\xc3";
            if (pick(&r, 2))
                b.p[at] = bytes[pick(&r, (int)sizeof bytes - 1)];
            else
                b.n = at;
        }
        verdict v = cmp(b.p, b.n);
        if (plain) {
            ASSERT_MSG(v.tree_ok, "the generator made a bad plain %s: %s", what, b.p);
            ASSERT_MSG(v.text_ok, "declined a plain %s: %s", what, b.p);
        }
        text += v.text_ok;
        tree += v.tree_ok;
        both_refuse += !v.text_ok && !v.tree_ok;
        jb_free(&b);
    }
    ASSERT_MSG(text > 10000 && tree > text && both_refuse > 1000,
               "%s: in place %d, jansson %d, both refused %d", what, text, tree, both_refuse);
}

TEST(outcomes_are_read_in_place_exactly_as_jansson_reads_them)
{
    fuzz_reader(gen_outcome, compare_outcome, "outcome");
}

/* ---- lease requests ------------------------------------------------------------------------ */

static const char *lfields[] = {"queues", "worker", "types", "max", "wait_ms"};

static void gen_names(rng *r, jbuf *b, bool plain)
{
    static const char *names[] = {"\"bench\"", "\"reports\"", "\"a.b-c_d\"", "\"q\\u0031\"",
                                  "\"\"",      "7",           "null",        "[\"x\"]"};
    int n = plain ? 1 + pick(r, 3) : pick(r, 4) == 0 ? pick(r, 70) : pick(r, 4);
    put(b, "[");
    for (int i = 0; i < n; i++) {
        if (i) put(b, ",");
        put(b, names[plain ? pick(r, 3) : pick(r, pick(r, 3) ? 3 : 8)]);
    }
    put(b, "]");
}

static void gen_lease(rng *r, jbuf *b, bool plain)
{
    put(b, " {");
    int order[5], n = some_fields(r, 5, 1, order); /* queues is required */
    char tmp[64];
    for (int i = 0; i < n; i++) {
        int f = order[i];
        if (!member_head(r, b, i, lfields[f], ": ", plain, f != 0)) continue;
        switch (f) {
        case 1: gen_string(r, b, plain); break;
        case 0:
        case 2: gen_names(r, b, plain); break;
        case 3:
            snprintf(tmp, sizeof tmp, "%d",
                     plain || pick(r, 3) ? 1 + pick(r, 1000) : pick(r, 3000) - 5);
            put(b, tmp);
            break;
        default:
            snprintf(tmp, sizeof tmp, "%d",
                     plain || pick(r, 3) ? pick(r, 3600001) : 3600000 + pick(r, 3) - pick(r, 3));
            put(b, tmp);
        }
    }
    if (!plain && !pick(r, 15)) put(b, ",\"colour\":1");
    put(b, "} ");
}

static bool same_names(char **a, size_t na, char **b, size_t nb)
{
    if (na != nb) return false;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i], b[i])) return false;
    return true;
}

static verdict compare_lease(const char *text, size_t n)
{
    verdict v = {false, false};
    lease_in a, t;
    v.text_ok = lease_read_text(text, n, &a);
    json_error_t jerr;
    json_t *o = json_loadb(text, n, JSON_REJECT_DUPLICATES, &jerr);
    engine_err err;
    v.tree_ok = o && json_is_object(o) && lease_read(o, &t, &err) == 0;
    if (v.text_ok) {
        ASSERT_MSG(v.tree_ok, "in place accepted a lease jansson's reader refuses: %.*s", (int)n,
                   text);
        ASSERT_MSG(same_str(a.worker, t.worker) && a.max == t.max && a.wait_ms == t.wait_ms,
                   "worker/max/wait_ms differ: %.*s", (int)n, text);
        ASSERT_MSG(same_names(a.queues, a.nq, t.queues, t.nq) &&
                       same_names(a.types, a.nt, t.types, t.nt),
                   "queues/types differ: %.*s", (int)n, text);
        lease_in_free(&a);
    }
    if (v.tree_ok) lease_in_free(&t);
    json_decref(o);
    return v;
}

TEST(lease_requests_are_read_in_place_exactly_as_jansson_reads_them)
{
    fuzz_reader(gen_lease, compare_lease, "lease");
    /* and the jansson reader's words for what it refuses */
    static const struct {
        const char *body, *field, *msg;
    } refusals[] = {
        {"{\"queues\":[\"a\"],\"colour\":1}", "colour", "unknown field \"colour\""},
        {"{\"max\":2}", "queues", "queues is required"},
        {"{\"queues\":[]}", "queues", "queues must be a list of 1 to 64 names"},
        {"{\"queues\":[\"\"]}", "queues", "queues must hold names"},
        {"{\"queues\":[\"a\"],\"types\":\"t\"}", "types", "types must be a list of 1 to 64 names"},
        {"{\"queues\":[\"a\"],\"max\":1001}", "max", "max must be between 1 and 1000"},
        {"{\"queues\":[\"a\"],\"wait_ms\":1.5}", "wait_ms", "wait_ms must be an integer"},
        {"{\"queues\":[\"a\"],\"worker\":7}", "worker", "worker must be a string"},
    };
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        lease_in in;
        engine_err err;
        const char *body = refusals[i].body;
        ASSERT_MSG(!lease_read_text(body, strlen(body), &in), "read in place: %s", body);
        json_t *o = json_loads(body, 0, NULL);
        ASSERT_MSG(o && lease_read(o, &in, &err) == TENQ_EINVALID, "jansson took %s", body);
        ASSERT_MSG(!strcmp(err.field, refusals[i].field) && !strcmp(err.message, refusals[i].msg),
                   "%s: %s: %s", body, err.field, err.message);
        json_decref(o);
    }
}

/* ---- reals ------------------------------------------------------------------------------- */

/* jansson's text for v at 17 digits, as canonical_json writes a real */
static size_t jansson_real(double v, char *out, size_t cap)
{
    json_t *r = json_real(v);
    size_t n =
        json_dumpb(r, out, cap - 1, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(r);
    out[n] = 0;
    return n;
}

/* One real through the fast writer: the same text as jansson's, or
 * declined; returns whether it was written. */
static bool write_alike(double v)
{
    char fast[32], slow[64];
    size_t n = tq_real_write(v, fast);
    if (!n) return false;
    size_t m = jansson_real(v, slow, sizeof slow);
    ASSERT_MSG(n == m && !memcmp(fast, slow, n), "%.17g: wrote %.*s, jansson %s", v, (int)n, fast,
               slow);
    return true;
}

TEST(reals_are_written_as_jansson_writes_them)
{
    uint64_t seed = test_seed();
    rng r = {seed | 1};
    int written = 0, declined = 0;
    /* any bits: mantissas and binary exponents across the range and past it */
    for (int i = 0; i < 200000; i++) {
        uint64_t m = (next(&r) >> 11) | (1ULL << 52);
        double v = ldexp((double)m, pick(&r, 140) - 120 + (i % 7 == 0 ? -900 : 0));
        if (pick(&r, 2)) v = -v;
        if (write_alike(v))
            written++;
        else
            declined++;
    }
    /* decimals as clients write them (1234.5678), and few-bit values (ties) */
    for (int i = 0; i < 100000; i++) {
        char text[64], frac[8];
        long long w = (long long)(next(&r) % 100000000000ULL) >> pick(&r, 30);
        snprintf(frac, sizeof frac, "%06d", pick(&r, 1000000));
        frac[1 + pick(&r, 6)] = 0;
        snprintf(text, sizeof text, "%lld.%se%d", w, frac, pick(&r, 25) - 12);
        written += write_alike(strtod(text, NULL));
        written += write_alike(ldexp((double)(1 + 2 * pick(&r, 1 << 20)), -pick(&r, 60)));
    }
    /* around each power of ten the writer handles, where the exponent turns */
    for (int x = -5; x <= 16; x++) {
        double p = pow(10, x);
        double around[] = {p,
                           nextafter(p, 0),
                           nextafter(p, INFINITY),
                           p * (1 - 1e-16),
                           p * (1 + 1e-16),
                           p - 0.5 * p * 1e-17};
        for (size_t i = 0; i < sizeof around / sizeof around[0]; i++) {
            write_alike(around[i]);
            write_alike(-around[i]);
        }
    }
    char out[32];
    ASSERT_EQ(tq_real_write(0.0, out), 0);
    ASSERT_EQ(tq_real_write(-0.0, out), 0);
    ASSERT_EQ(tq_real_write(NAN, out), 0);
    ASSERT_EQ(tq_real_write(INFINITY, out), 0);
    ASSERT_EQ(tq_real_write(9.9e-5, out), 0);
    ASSERT_EQ(tq_real_write(9007199254740992.0, out), 0);
    ASSERT_MSG(tq_real_write(1234.5678, out) && !strcmp(out, "1234.5678"), "wrote %s", out);
    ASSERT_MSG(tq_real_write(0.1, out) && !strcmp(out, "0.10000000000000001"), "wrote %s", out);
    ASSERT_MSG(tq_real_write(-2.0, out) && !strcmp(out, "-2.0"), "wrote %s", out);
    ASSERT_MSG(written > 150000 && declined > 20000, "written %d, declined %d", written, declined);
}

TEST(reals_are_read_as_strtod_reads_them)
{
    uint64_t seed = test_seed();
    rng r = {seed | 1};
    int fast = 0, declined = 0;
    for (int i = 0; i < 300000; i++) {
        char text[64];
        int n = 0;
        if (pick(&r, 2)) text[n++] = '-';
        int ip = 1 + pick(&r, 12), fp = pick(&r, 12);
        for (int k = 0; k < ip; k++)
            text[n++] = (char)('0' + (k == 0 && ip > 1 ? 1 + pick(&r, 9) : pick(&r, 10)));
        if (fp) {
            text[n++] = '.';
            for (int k = 0; k < fp; k++) text[n++] = (char)('0' + pick(&r, 10));
        }
        if (!fp || pick(&r, 3) == 0)
            n += snprintf(text + n, sizeof text - (size_t)n, "%s%s%d", pick(&r, 2) ? "e" : "E",
                          pick(&r, 3) == 0 ? "+" : "", pick(&r, 70) - 35);
        text[n] = 0;
        double d;
        if (!tq_real_read(text, (size_t)n, &d)) {
            declined++;
            continue;
        }
        fast++;
        double want = strtod(text, NULL);
        ASSERT_MSG(memcmp(&d, &want, sizeof d) == 0, "%s: read %.17g, strtod %.17g", text, d, want);
    }
    double d;
    ASSERT_MSG(tq_real_read("1234.5678", 9, &d) && d == 1234.5678, "1234.5678");
    ASSERT_MSG(!tq_real_read("12345678901234567890.5", 22, &d), "20 digits are strtod's");
    ASSERT_MSG(!tq_real_read("1e23", 4, &d), "10^23 is not exact");
    ASSERT_MSG(!tq_real_read("-0.0", 4, &d), "zero keeps its sign through strtod");
    ASSERT_MSG(!tq_real_read("9007199254740993.0", 18, &d), "above 2^53");
    ASSERT_MSG(fast > 100000 && declined > 50000, "fast %d, declined %d", fast, declined);
}
