// SPDX-License-Identifier: Apache-2.0
/* tenq submit: one job from flags, or many as JSON lines on stdin, sent in
 * batches with the flags as defaults. */
#include "cli/cli.h"

#include "base/settings.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BATCH_JOBS  1000
#define BATCH_BYTES (16u * 1024 * 1024) /* well under the server's 32 MiB body limit */

typedef struct flags {
    const char *tenant, *queue, *type, *args, *key, *priority, *run_at, *delay, *unique_key,
        *idempotency_key, *max_attempts, *score, *traceparent, *depends_on, *on_parent_failure,
        *concurrency_keys, *rate_keys, *debounce, *debounce_max, *expire_at, *start_within;
    bool unique;
} flags;

/* The flags as a JSON object of job fields (the defaults of every line). */
static int defaults_from_flags(cli *c, const flags *f, json_t **out)
{
    json_t *o = json_object();
    *out = NULL;
    const struct {
        const char *key, *flag, *val;
    } strs[] = {{"tenant", "tenant", f->tenant},
                {"queue", "queue", f->queue},
                {"type", "type", f->type},
                {"key", "key", f->key},
                {"unique_key", "unique-key", f->unique_key},
                {"idempotency_key", "idempotency-key", f->idempotency_key},
                {"traceparent", "traceparent", f->traceparent},
                {"on_parent_failure", "on-parent-failure", f->on_parent_failure}};
    json_t *v;
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        if (!strs[i].val) continue;
        if (!(v = json_string(strs[i].val))) {
            cli_usage(c, "the value of --%s is not UTF-8", strs[i].flag);
            goto bad;
        }
        json_object_set_new(o, strs[i].key, v);
    }
    long long n;
    double d;
    int64_t ms;
    if (f->args) {
        if (!cli_json(c, "args", f->args, &v)) goto bad;
        json_object_set_new(o, "args", v);
    }
    if (f->priority) {
        if (!cli_int(c, "priority", f->priority, -32768, 32767, &n)) goto bad;
        json_object_set_new(o, "priority", json_integer(n));
    }
    if (f->run_at && f->delay) {
        cli_usage(c, "give --run-at or --delay, not both");
        goto bad;
    }
    if (f->run_at) {
        if (!cli_time(c, "run-at", f->run_at, &ms)) goto bad;
        json_object_set_new(o, "run_at", json_integer(ms));
    }
    if (f->delay) {
        if (!cli_duration(c, "delay", f->delay, &ms)) goto bad;
        json_object_set_new(o, "run_at", json_integer(cli_now_ms() + ms));
    }
    const struct {
        const char *val, *field, *flag;
    } durs[] = {{f->debounce, "debounce_ms", "debounce"},
                {f->debounce_max, "debounce_max_ms", "debounce-max"},
                {f->start_within, "start_within_ms", "start-within"}};
    for (size_t i = 0; i < sizeof durs / sizeof durs[0]; i++) {
        if (!durs[i].val) continue;
        if (!cli_duration(c, durs[i].flag, durs[i].val, &ms)) goto bad;
        json_object_set_new(o, durs[i].field, json_integer(ms));
    }
    if (f->expire_at) {
        if (!cli_time(c, "expire-at", f->expire_at, &ms)) goto bad;
        json_object_set_new(o, "expire_at", json_integer(ms));
    }
    if (f->max_attempts) {
        if (!cli_int(c, "max-attempts", f->max_attempts, 1, 2147483647, &n)) goto bad;
        json_object_set_new(o, "max_attempts", json_integer(n));
    }
    if (f->score) {
        if (!cli_number(c, "score", f->score, &d)) goto bad;
        json_object_set_new(o, "score", json_real(d));
    }
    if (f->unique) json_object_set_new(o, "unique", json_true());
    if (f->depends_on) {
        /* ids, comma-separated: the server checks each (and the limit) */
        json_t *ids = json_array();
        json_object_set_new(o, "depends_on", ids);
        char *copy = strdup(f->depends_on), *save = NULL;
        for (char *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
            if (!cli_int(c, "depends-on", t, 1, 9007199254740991LL, &n)) {
                free(copy);
                goto bad;
            }
            json_array_append_new(ids, json_integer(n));
        }
        free(copy);
    }
    /* KEY or KEY=N, comma-separated (N: a concurrency key's limit, a rate
     * key's cost): the server checks each */
    const struct {
        const char *val, *field, *flag, *n;
    } lists[] = {{f->concurrency_keys, "concurrency_keys", "concurrency-key", "limit"},
                 {f->rate_keys, "rate_keys", "rate-key", "cost"}};
    for (size_t l = 0; l < 2; l++) {
        if (!lists[l].val) continue;
        json_t *keys = json_array();
        json_object_set_new(o, lists[l].field, keys);
        char *copy = strdup(lists[l].val), *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            char *eq = strrchr(t, '=');
            json_t *k = json_object();
            json_array_append_new(keys, k);
            if (eq) {
                *eq = 0;
                if (!cli_int(c, lists[l].flag, eq + 1, 1, TQ_KEY_LIMIT_MAX, &n)) {
                    free(copy);
                    goto bad;
                }
                json_object_set_new(k, lists[l].n, json_integer(n));
            }
            if (!(v = json_string(t))) {
                cli_usage(c, "the value of --%s is not UTF-8", lists[l].flag);
                free(copy);
                goto bad;
            }
            json_object_set_new(k, "key", v);
        }
        free(copy);
    }
    *out = o;
    return 0;
bad:
    json_decref(o);
    return CLI_USAGE;
}

/* The server's answer for one job, as JSON (for --json). */
static void print_result_json(const tenq_submit_res *r)
{
    json_t *o;
    if (r->err) {
        o = json_pack("{s:{s:s,s:s}}", "error", "code", tenq_err_word(r->err), "message",
                      r->message);
        if (o && r->field[0])
            json_object_set_new(json_object_get(o, "error"), "field", json_string(r->field));
    } else {
        o = json_pack("{s:I,s:s,s:b,s:b}", "id", (json_int_t)r->id, "state",
                      tenq_state_name(r->state), "duplicate", r->duplicate, "merged", r->merged);
        if (o && r->replayed) json_object_set_new(o, "replayed", json_true());
        if (o && r->debounced) json_object_set_new(o, "debounced", json_true());
    }
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    printf("%s\n", s ? s : "{}");
    free(s);
    json_decref(o);
}

/* ---- one job ------------------------------------------------------------------------------- */

static int submit_one(cli *c, json_t *job)
{
    char *text = json_dumps(job, JSON_COMPACT);
    tenq_client *tc = cli_client(c);
    if (!text || !tc) {
        free(text);
        return tc ? CLI_ERR : CLI_USAGE;
    }
    tenq_submit_res r;
    int rc = tenq_submit_json(tc, text, &r);
    free(text);
    if (rc != 0) return cli_error(c, rc);
    if (c->json) {
        print_result_json(&r);
    } else {
        printf("%llu\n", (unsigned long long)r.id);
        if (!r.created && isatty(STDERR_FILENO))
            fprintf(stderr, "tenq: job %llu: %s; nothing new was made\n", (unsigned long long)r.id,
                    r.replayed    ? "replayed"
                    : r.merged    ? "merged into it"
                    : r.debounced ? "debounced into it"
                                  : "a duplicate");
    }
    return 0;
}

/* ---- many jobs from stdin -----------------------------------------------------------------------
 */

typedef struct progress {
    bool on;
    int64_t t0, last;
    long long total_bytes; /* stdin is a file of this size; 0: unknown */
    long long bytes, done, failed;
} progress;

static void progress_draw(progress *p, bool final)
{
    if (!p->on) return;
    int64_t now = cli_now_ms();
    if (!final && now - p->last < 100) return;
    p->last = now;
    double secs = (double)(now - p->t0) / 1000.0;
    double rate = secs > 0 ? (double)p->done / secs : 0;
    if (p->total_bytes > 0) {
        double frac = (double)p->bytes / (double)p->total_bytes;
        if (frac > 1) frac = 1;
        char bar[31];
        int k = (int)(frac * 30);
        for (int i = 0; i < 30; i++) bar[i] = i < k ? '#' : '.';
        bar[30] = 0;
        fprintf(stderr, "\r[%s] %3d%%  %lld jobs  %.0f jobs/s", bar, (int)(frac * 100), p->done,
                rate);
    } else {
        fprintf(stderr, "\r%lld jobs  %.0f jobs/s", p->done, rate);
    }
    if (p->failed) fprintf(stderr, "  %lld refused", p->failed);
    fputs("\033[K", stderr);
    if (final) fputc('\n', stderr);
    fflush(stderr);
}

/* Jobs read but not yet sent; a line refused here keeps its place so that
 * the output stays in input order. */
typedef struct batch {
    char *texts[BATCH_JOBS]; /* NULL: refused locally, see why */
    char *why[BATCH_JOBS];
    long lines[BATCH_JOBS];
    size_t n, ntexts, bytes;
} batch;

static void print_local_error(cli *c, const char *why)
{
    if (!c->json) return;
    json_t *e = json_pack("{s:{s:s,s:s}}", "error", "code", "invalid", "message", why);
    char *s = e ? json_dumps(e, JSON_COMPACT) : NULL;
    printf("%s\n", s ? s : "{}");
    free(s);
    json_decref(e);
}

/* Sends the batch and prints a line per job; CLI_ERR when the request
 * failed as a whole. */
static int batch_send(cli *c, batch *b, progress *p, bool *any_refused)
{
    if (b->n == 0) return 0;
    tenq_client *tc = cli_client(c);
    if (!tc) return CLI_USAGE;
    tenq_submit_res *res = calloc(b->ntexts ? b->ntexts : 1, sizeof(*res));
    const char **texts = calloc(b->ntexts ? b->ntexts : 1, sizeof(char *));
    if (!res || !texts) {
        free(res);
        free(texts);
        return CLI_ERR;
    }
    size_t k = 0;
    for (size_t i = 0; i < b->n; i++)
        if (b->texts[i]) texts[k++] = b->texts[i];
    int rc = k ? tenq_submit_batch_json(tc, texts, k, res) : 0;
    /* lines for the terminal go above the bar, which is drawn again below */
    bool clear = p->on && (rc != 0 || k < b->n || isatty(STDOUT_FILENO));
    for (size_t i = 0; i < k && !clear && p->on; i++) clear = res[i].err != 0;
    if (clear) {
        fputs("\r\033[K", stderr);
        p->last = 0;
    }
    if (rc != 0) {
        cli_error(c, rc);
    } else {
        k = 0;
        for (size_t i = 0; i < b->n; i++) {
            const tenq_submit_res *r = b->texts[i] ? &res[k++] : NULL;
            const char *why = b->why[i] ? b->why[i] : "refused";
            if (!r) {
                print_local_error(c, why);
                fprintf(stderr, "tenq: line %ld: invalid: %s\n", b->lines[i], why);
            } else if (c->json) {
                print_result_json(r);
            }
            if (r && r->err)
                fprintf(stderr, "tenq: line %ld: %s: %s\n", b->lines[i], tenq_err_word(r->err),
                        r->message);
            if (!r || r->err) {
                *any_refused = true;
                p->failed++;
            } else {
                p->done++;
                if (!c->json) printf("%llu\n", (unsigned long long)r->id);
            }
        }
        fflush(stdout);
    }
    for (size_t i = 0; i < b->n; i++) {
        free(b->texts[i]);
        free(b->why[i]);
    }
    free(res);
    free(texts);
    b->n = b->ntexts = b->bytes = 0;
    progress_draw(p, false);
    return rc ? CLI_ERR : 0;
}

/* A line of input: a job object with the defaults filled in, as text. */
static char *line_job(const char *line, const json_t *defaults, char *why, size_t wl)
{
    json_error_t jerr;
    json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(o)) {
        if (o)
            snprintf(why, wl, "a job is a JSON object");
        else
            snprintf(why, wl, "malformed JSON: %s (column %d)", jerr.text, jerr.column);
        json_decref(o);
        return NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)defaults, k, v) if (!json_object_get(o, k))
        json_object_set(o, k, v);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!s) snprintf(why, wl, "out of memory");
    return s;
}

static int submit_lines(cli *c, const json_t *defaults)
{
    progress p = {0};
    p.on = isatty(STDERR_FILENO);
    p.t0 = p.last = cli_now_ms();
    struct stat st;
    if (fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode)) p.total_bytes = st.st_size;
    batch *b = calloc(1, sizeof(*b));
    if (!b) return CLI_ERR;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long lineno = 0;
    bool refused = false;
    int rc = 0;
    while ((len = getline(&line, &cap, stdin)) >= 0) {
        lineno++;
        p.bytes += len;
        size_t sp = strspn(line, " \t\r\n");
        if ((ssize_t)sp == len) continue; /* blank */
        char why[256];
        char *job = line_job(line, defaults, why, sizeof why);
        b->texts[b->n] = job;
        b->why[b->n] = job ? NULL : strdup(why);
        b->lines[b->n] = lineno;
        b->n++;
        if (job) {
            b->ntexts++;
            b->bytes += strlen(job);
        }
        if (b->n == BATCH_JOBS || b->bytes >= BATCH_BYTES) {
            if ((rc = batch_send(c, b, &p, &refused)) != 0) break;
        }
    }
    if (rc == 0) rc = batch_send(c, b, &p, &refused);
    if (rc != 0) {
        fprintf(stderr, "tenq: stopped after %lld jobs submitted (input line %ld)\n", p.done,
                lineno);
    }
    if (rc == 0 && ferror(stdin)) {
        perror("tenq: reading stdin");
        rc = CLI_ERR;
    }
    progress_draw(&p, true);
    free(line);
    free(b);
    if (rc == 0 && refused) rc = CLI_ERR;
    return rc;
}

int cmd_submit(cli *c, int argc, char **argv)
{
    flags f = {0};
    const cli_opt opts[] = {
        {"tenant", "NAME", "the job's tenant (implied by a tenant token)", &f.tenant, NULL},
        {"queue", "NAME", "the queue", &f.queue, NULL},
        {"type", "TYPE", "the handler's name; without it, jobs come from stdin", &f.type, NULL},
        {"args", "JSON", "the job's arguments, any JSON", &f.args, NULL},
        {"key", "KEY", "the lane: jobs with one key run one at a time, in order", &f.key, NULL},
        {"priority", "N", "-32768..32767, higher first (default 0)", &f.priority, NULL},
        {"run-at", "TIME", "not before: ms since the epoch, or 2026-01-01T09:00:00Z", &f.run_at,
         NULL},
        {"delay", "DURATION", "not before now + this (10s, 5m, 2h)", &f.delay, NULL},
        {"unique", NULL, "no new job while one with the same type and args is unfinished", NULL,
         &f.unique},
        {"unique-key", "KEY", "no new job while one with this key is unfinished", &f.unique_key,
         NULL},
        {"idempotency-key", "KEY", "the same answer for the same key for 24 hours",
         &f.idempotency_key, NULL},
        {"max-attempts", "N", "attempts before the morgue (default: the queue's)", &f.max_attempts,
         NULL},
        {"score", "X", "merging queues: the payload's order", &f.score, NULL},
        {"traceparent", "CONTEXT",
         "a W3C trace context (00-<trace id>-<span id>-<flags>), handed to the handler",
         &f.traceparent, NULL},
        {"depends-on", "ID,...", "waits until these jobs succeeded (at most 100)", &f.depends_on,
         NULL},
        {"on-parent-failure", "POLICY",
         "cancel (default): a parent that dies or is cancelled cancels the job; run: it counts "
         "as done",
         &f.on_parent_failure, NULL},
        {"concurrency-key", "KEY[=N],...",
         "at most N jobs naming KEY run at once, over the tenant's queues (no N: the key's "
         "setting, else the queue's concurrency_limit); up to 4 keys",
         &f.concurrency_keys, NULL},
        {"rate-key", "KEY[=COST],...",
         "each start takes COST units (default 1) of KEY's rate, as the key's setting says "
         "(tenq key set T KEY --rate N); up to 4 keys",
         &f.rate_keys, NULL},
        {"debounce", "DURATION",
         "with --key: replaces the key's pending job (its args, or its payloads merged) and "
         "starts it this long after the last submit",
         &f.debounce, NULL},
        {"debounce-max", "DURATION", "a debounced job starts at most this long after the first",
         &f.debounce_max, NULL},
        {"expire-at", "TIME", "not started by then: the job ends expired and never runs",
         &f.expire_at, NULL},
        {"start-within", "DURATION", "the same, this long after now", &f.start_within, NULL},
        {NULL, NULL, NULL, NULL, NULL}};
    const cli_spec spec = {
        "submit --queue Q --type T [--args JSON] [flags]\n"
        "       tenq submit [--queue Q] [--type T] [flags] - < jobs.jsonl",
        "Submits a job and prints its id.\n\n"
        "With no --type, or with -, reads jobs from stdin, one JSON object per\n"
        "line ({\"queue\": ..., \"type\": ..., \"args\": ...}), fills the fields a line\n"
        "leaves out from the flags, and submits them in batches of 1,000.  Prints\n"
        "one line per job, in order: its id (or with --json the server's answer);\n"
        "a refused job is reported on stderr with its line number and makes the\n"
        "exit status 1.  On a terminal, stderr shows the progress and jobs/s.\n\n"
        "A line may carry depends_on: job ids, or {\"index\": i} for the job of an\n"
        "earlier line of the same batch of 1,000 (i counted within the batch).",
        opts, 0, 1};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    if (np == 1 && strcmp(pos[0], "-") != 0)
        return cli_usage(c, "unexpected argument \"%s\" (- reads jobs from stdin)", pos[0]);
    json_t *defaults;
    if ((rc = defaults_from_flags(c, &f, &defaults)) != 0) return rc;
    if (np == 1 || !f.type) {
        if (isatty(STDIN_FILENO))
            fprintf(stderr, "tenq: reading jobs from stdin, one JSON object per line "
                            "(end with Ctrl-D; --type submits one job)\n");
        rc = submit_lines(c, defaults);
    } else
        rc = submit_one(c, defaults);
    json_decref(defaults);
    return rc;
}
