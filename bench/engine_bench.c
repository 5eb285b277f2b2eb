// SPDX-License-Identifier: Apache-2.0
/* make bench-engine: submit -> lease -> ack cycles against a standing backlog.
 *
 * For each backlog size N (default 10k, 1M, 10M; or the sizes given as
 * arguments) the engine is filled with N jobs spread over 1,000 tenants and
 * 100,000 lanes (lane i belongs to tenant i % 1000, so most jobs wait blocked
 * behind their lane's head), then runs cycles of: submit one job to a random
 * lane, lease the best eligible job, ack it, hand the change list to a
 * (null) store.  It prints
 *   engine backlog=N cycles_per_s=X bytes_per_job=Y
 * where bytes_per_job is the allocator's bytes in use per queued job beyond
 * the job's payload (measured with mallinfo2, so every heap, hash table and
 * list the engine keeps is counted).
 *
 * BENCH_RATED=1 runs each size a second time with rate limits: the 1,000
 * tenants each under a rate that never binds (so every lease takes from a
 * bucket), and 10,000 more tenants of 10 jobs each, limited to one start an
 * hour (so after its first start each holds 9 ready jobs out of the heaps).
 * Each first start is made before the backlog is filled, so the backlog
 * keeps its size.  It prints the same line with rated_tenants=10000.
 * BENCH_RATED=2 is its control: the same tenants and jobs, each tenant
 * held by 0 slots after its first start instead of by a rate (the older way
 * to hold a tenant), and no rates on the 1,000 (held_tenants=).
 * BENCH_SKIP_PLAIN=1 leaves out the plain run (to alternate the two).
 *
 * BENCH_WORKFLOW=1 adds the dependencies case (no backlog sizes): one
 * parent with 100,000 children, whose ack releases them all (the cost per
 * child), and 1,000 workflows of a root, 100 children of it and a job
 * depending on those 100 (a fan-out and a fan-in), run to the end by
 * lease and ack cycles: it prints
 *   engine workflow fanout=100000 release_ns_per_child=X
 *   engine workflow dags=1000 jobs=102000 edges=200000 cycles_per_s=Y
 * BENCH_BATCH=1 runs each size a second time with every job in a batch:
 * each tenant's jobs (backlog and cycles) go into its one batch (1,000
 * batches, each of an on_complete callback that never comes due), by
 * engine_batch_add; a finished job moves its batch's counters.  It prints
 * the same line with batches=1000: the cost per cycle and per job of a
 * job in a batch.
 * BENCH_KEYS=1 runs each size a second time with every job naming one
 * concurrency key of limit 1: key acct-<k> of its tenant, k random of 100
 * (1,000 tenants: 100,000 distinct keys).  It prints the same line with
 * keys=100000: the cost of keyed limits per decision.  BENCH_HELD=N (both
 * runs) first leases N jobs and keeps them leased through the cycles: with
 * keys, N keys are at their limit then, their jobs out of the heaps.
 */
#include "engine/engine.h"

#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TENANTS 1000
#define LANES   100000

static uint64_t rng = 0x1234567;
static inline uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char tenant_names[TENANTS][16];

/* "lane-<n>" written into buf; keys are made per submit, as a request's
 * freshly parsed key would be (a table of 100,000 keys would add a cache
 * miss the server does not have). */
static const char *lane_key(char *buf, uint32_t n)
{
    char tmp[12];
    int k = 0;
    do {
        tmp[k++] = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    memcpy(buf, "lane-", 5);
    for (int i = 0; i < k; i++) buf[5 + i] = tmp[k - 1 - i];
    buf[5 + k] = 0;
    return buf;
}

static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static uint64_t batch_of[TENANTS]; /* BENCH_BATCH: each tenant's batch; 0: none */
static bool keyed;                 /* BENCH_KEYS: each job names a key of its tenant */
static uint32_t key_limit = 1;     /* BENCH_KEY_LIMIT: each key's limit */
#define KEYS_PER_TENANT 100

static void submit_one(engine_t *e, int64_t now, const char *queue)
{
    uint32_t lane = (uint32_t)(rnd() % LANES);
    char key[24];
    engine_submit_req r = {0};
    r.tenant = tenant_names[lane % TENANTS];
    r.queue = queue;
    r.type = "Bench.job";
    r.key = lane_key(key, lane);
    r.args = "{}";
    r.args_len = 2;
    char kbuf[24];
    engine_limit_key ck;
    if (keyed) {
        ck.key = lane_key(kbuf, (uint32_t)(rnd() % KEYS_PER_TENANT));
        memcpy(kbuf, "acct-", 5);
        ck.limit = key_limit;
        r.concurrency_keys = &ck;
        r.n_concurrency_keys = 1;
    }
    engine_submit_res res;
    uint64_t b = batch_of[lane % TENANTS];
    if (b) {
        engine_err err;
        if (engine_batch_add(e, now, b, NULL, &r, 1, &res, NULL, &err) != 0) {
            fprintf(stderr, "batch add failed: %s\n", err.message);
            exit(1);
        }
        return;
    }
    if (engine_submit(e, now, &r, &res) != 0) {
        fprintf(stderr, "submit failed: %s\n", res.err.message);
        exit(1);
    }
}

/* One batch per tenant, each with one job (scheduled a year ahead) and an
 * on_complete callback. */
static void add_batches(engine_t *e, int64_t now)
{
    engine_submit_req cb = {.queue = "bench-done", .type = "Bench.done"};
    const engine_submit_req *cbs[ENGINE_NCALLBACKS] = {&cb, NULL, NULL};
    for (int i = 0; i < TENANTS; i++) {
        /* its first job waits a year: the batch stays open whatever drains */
        engine_submit_req r = {.tenant = tenant_names[i],
                               .queue = "bench",
                               .type = "Bench.job",
                               .run_at = now + 365LL * 24 * 3600 * 1000};
        engine_submit_res res;
        engine_err err;
        if (engine_batch_create(e, now, tenant_names[i], cbs, &r, 1, &batch_of[i], &res, NULL,
                                &err) != 0) {
            fprintf(stderr, "batch: %s\n", err.message);
            exit(1);
        }
    }
}

static void consume_changes(engine_t *e, size_t *count)
{
    size_t n;
    engine_changes(e, &n);
    *count += n;
    engine_changes_clear(e);
}

#define RATED 10000

static int rated_mode; /* BENCH_RATED: 1 rates, 2 the control (0 slots) */

static void set_rate(engine_t *e, int64_t now, const char *tenant, uint32_t rate, int64_t period)
{
    engine_tenant_settings s;
    engine_tenant_settings_defaults(&s);
    if (rated_mode == 2) {
        if (rate == 1) s.slots = 1; /* held by slots after a first start */
    } else {
        s.rate = rate;
        s.rate_period_ms = period;
    }
    engine_err err;
    if (engine_tenant_set(e, now, tenant, &s, &err) != 0) {
        fprintf(stderr, "tenant: %s\n", err.message);
        exit(1);
    }
}

/* The rated tenants and their jobs; the usual tenants under a rate that
 * never binds. */
static void add_rated(engine_t *e, int64_t now)
{
    for (int i = 0; i < TENANTS; i++) set_rate(e, now, tenant_names[i], 1000000000, 1000);
    char name[32];
    for (int i = 0; i < RATED; i++) {
        snprintf(name, sizeof name, "rated-%d", i);
        set_rate(e, now, name, 1, 3600000);
        for (int k = 0; k < 10; k++) {
            engine_submit_req r = {.tenant = name, .queue = "bench", .type = "Bench.job"};
            engine_submit_res res;
            if (engine_submit(e, now, &r, &res) != 0) exit(1);
        }
    }
    /* Each rated tenant's first start (its burst) is made now, before the
     * backlog is filled: made in the cycles instead, those 10,000 leases
     * would leave the backlog 10,000 jobs larger than its size says.  The
     * control makes the same starts, then holds each tenant by 0 slots, so
     * both free the same jobs and allocate the backlog alike. */
    const char *qs[1] = {"bench"};
    engine_lease_req req = {.queues = qs, .n_queues = 1, .max = 1, .worker = "bench-worker"};
    engine_job *out[1];
    while (engine_lease(e, now, &req, out) == 1) {
        engine_job_info in;
        engine_job_get(out[0], &in);
        if (rated_mode == 2) {
            engine_tenant_settings s;
            engine_tenant_settings_defaults(&s);
            s.slots = 0;
            engine_err err;
            if (engine_tenant_set(e, now, in.tenant, &s, &err) != 0) exit(1);
        }
        if (engine_ack(e, now, in.id, in.token, NULL, NULL, NULL) != 0) exit(1);
    }
}

static size_t held; /* BENCH_HELD: leases kept through the cycles */

static void run(size_t backlog, size_t cycles, bool rated, bool batched)
{
    malloc_trim(0);
    size_t base = heap_in_use();
    engine_config cfg;
    engine_config_defaults(&cfg);
    engine_t *e = engine_create(&cfg);
    int64_t now = 1700000000000LL;
    size_t changes = 0;
    if (rated) add_rated(e, now);
    memset(batch_of, 0, sizeof batch_of);
    if (batched) add_batches(e, now);
    double t0 = now_s();
    for (size_t i = 0; i < backlog; i++) {
        submit_one(e, now, "bench");
        if ((i & 1023) == 1023) consume_changes(e, &changes);
    }
    consume_changes(e, &changes);
    double fill_s = now_s() - t0;
    engine_memory mem;
    engine_memory_usage(e, &mem);
    size_t used = heap_in_use() - base;
    double bytes_per_job = ((double)used - (double)mem.data_bytes) / (double)mem.jobs;

    const char *qs[1] = {"bench"};
    engine_lease_req req = {.queues = qs, .n_queues = 1, .max = 1, .worker = "bench-worker"};
    engine_job *out[1];
    for (size_t i = 0; i < held; i++) {
        if (engine_lease(e, now, &req, out) != 1) {
            fprintf(stderr, "only %zu of %zu leases to hold\n", i, held);
            exit(1);
        }
    }
    consume_changes(e, &changes);
    t0 = now_s();
    for (size_t i = 0; i < cycles; i++) {
        if ((i & 1023) == 0) now++;
        submit_one(e, now, "bench");
        if (engine_lease(e, now, &req, out) != 1) {
            fprintf(stderr, "nothing to lease at cycle %zu\n", i);
            exit(1);
        }
        engine_job_info in;
        engine_job_get(out[0], &in);
        if (engine_ack(e, now, in.id, in.token, NULL, NULL, NULL) != 0) {
            fprintf(stderr, "ack failed\n");
            exit(1);
        }
        consume_changes(e, &changes);
    }
    double secs = now_s() - t0;
    char buf[256];
    if (backlog <= 1000000 && engine_check(e, now, buf, 0) != 0) {
        fprintf(stderr, "engine_check failed after the run\n");
        exit(1);
    }
    char heldtxt[32] = "";
    if (held) snprintf(heldtxt, sizeof heldtxt, " held=%zu", held);
    if (keyed)
        printf("engine backlog=%zu keys=%d%s cycles_per_s=%.0f bytes_per_job=%.0f\n", backlog,
               TENANTS * KEYS_PER_TENANT, heldtxt, (double)cycles / secs, bytes_per_job);
    else if (batched)
        printf("engine backlog=%zu batches=%d cycles_per_s=%.0f bytes_per_job=%.0f\n", backlog,
               TENANTS, (double)cycles / secs, bytes_per_job);
    else if (rated)
        printf("engine backlog=%zu %s=%d cycles_per_s=%.0f\n", backlog,
               rated_mode == 2 ? "held_tenants" : "rated_tenants", RATED, (double)cycles / secs);
    else
        printf("engine backlog=%zu%s cycles_per_s=%.0f bytes_per_job=%.0f\n", backlog, heldtxt,
               (double)cycles / secs, bytes_per_job);
    fprintf(stderr, "  (fill: %.0f submits/s; lanes %zu; %zu changes)\n", (double)backlog / fill_s,
            engine_lane_count(e), changes);
    fflush(stdout);
    engine_destroy(e);
}

/* ---- dependencies ------------------------------------------------------------------------ */

static uint64_t submit_deps(engine_t *e, int64_t now, const char *tenant, const uint64_t *parents,
                            uint32_t n)
{
    engine_dep_ref refs[ENGINE_PARENTS_MAX];
    for (uint32_t i = 0; i < n; i++) refs[i] = (engine_dep_ref){.id = parents[i], .index = -1};
    engine_submit_req r = {.tenant = tenant,
                           .queue = "flow",
                           .type = "Bench.step",
                           .depends_on = refs,
                           .n_depends_on = n};
    engine_submit_res res;
    if (engine_submit(e, now, &r, &res) != 0) {
        fprintf(stderr, "submit: %s\n", res.err.message);
        exit(1);
    }
    return res.id;
}

static void run_workflow(void)
{
    engine_config cfg;
    engine_config_defaults(&cfg);
    int64_t now = 1700000000000LL;
    size_t changes = 0;
    const char *qs[1] = {"flow"};
    engine_lease_req req = {.queues = qs, .n_queues = 1, .max = 1, .worker = "bench-worker"};
    engine_job *out[1];
    engine_job_info in;

    /* a fan-out of 100,000: the parent's ack releases every child */
    engine_t *e = engine_create(&cfg);
    uint64_t root = submit_deps(e, now, tenant_names[0], NULL, 0);
    for (int i = 0; i < 100000; i++) submit_deps(e, now, tenant_names[0], &root, 1);
    consume_changes(e, &changes);
    if (engine_lease(e, now, &req, out) != 1) exit(1);
    engine_job_get(out[0], &in);
    double t0 = now_s();
    if (engine_ack(e, now, in.id, in.token, NULL, NULL, NULL) != 0) exit(1);
    double secs = now_s() - t0;
    engine_counts c;
    engine_queue_get(e, now, "flow", NULL, &c);
    if (c.ready != 100000 || c.waiting != 0) {
        fprintf(stderr, "fan-out: %llu ready, %llu waiting\n", (unsigned long long)c.ready,
                (unsigned long long)c.waiting);
        exit(1);
    }
    printf("engine workflow fanout=100000 release_ns_per_child=%.0f\n", secs * 1e9 / 100000);
    consume_changes(e, &changes);
    engine_destroy(e);

    /* 1,000 workflows: root -> 100 children -> one job waiting for all 100 */
    e = engine_create(&cfg);
    size_t jobs = 0, edges = 0;
    uint64_t kids[100];
    for (int w = 0; w < 1000; w++) {
        const char *t = tenant_names[w % TENANTS];
        uint64_t r = submit_deps(e, now, t, NULL, 0);
        for (int k = 0; k < 100; k++) kids[k] = submit_deps(e, now, t, &r, 1);
        submit_deps(e, now, t, kids, 100);
        jobs += 102;
        edges += 200;
        consume_changes(e, &changes);
    }
    size_t done = 0;
    t0 = now_s();
    while (engine_lease(e, now, &req, out) == 1) {
        engine_job_get(out[0], &in);
        if (engine_ack(e, now, in.id, in.token, NULL, NULL, NULL) != 0) exit(1);
        consume_changes(e, &changes);
        done++;
    }
    secs = now_s() - t0;
    if (done != jobs) {
        fprintf(stderr, "workflows: %zu of %zu jobs ran\n", done, jobs);
        exit(1);
    }
    printf("engine workflow dags=1000 jobs=%zu edges=%zu cycles_per_s=%.0f\n", jobs, edges,
           (double)done / secs);
    fflush(stdout);
    engine_destroy(e);
}

int main(int argc, char **argv)
{
    for (int i = 0; i < TENANTS; i++) snprintf(tenant_names[i], 16, "tenant-%d", i);
    size_t sizes[8] = {10000, 1000000, 10000000};
    int n = 3;
    if (argc > 1) {
        n = 0;
        for (int i = 1; i < argc && n < 8; i++) sizes[n++] = strtoull(argv[i], NULL, 10);
    }
    const char *c = getenv("BENCH_CYCLES");
    size_t cycles = c ? strtoull(c, NULL, 10) : 2000000;
    const char *r = getenv("BENCH_RATED");
    rated_mode = r ? atoi(r) : 0;
    bool rated = rated_mode == 1 || rated_mode == 2;
    const char *w = getenv("BENCH_WORKFLOW");
    if (w && atoi(w) == 1) {
        run_workflow();
        if (argc <= 1) return 0;
    }
    const char *bb = getenv("BENCH_BATCH");
    bool batched = bb && atoi(bb) == 1;
    const char *bk = getenv("BENCH_KEYS");
    bool keys = bk && atoi(bk) == 1;
    const char *bl = getenv("BENCH_KEY_LIMIT");
    if (bl) key_limit = (uint32_t)strtoul(bl, NULL, 10);
    const char *bh = getenv("BENCH_HELD");
    held = bh ? strtoull(bh, NULL, 10) : 0;
    for (int i = 0; i < n; i++) {
        if (!getenv("BENCH_SKIP_PLAIN")) run(sizes[i], cycles, false, false);
        if (rated) run(sizes[i], cycles, true, false);
        if (batched) run(sizes[i], cycles, false, true);
        if (keys) {
            keyed = true;
            run(sizes[i], cycles, false, false);
            keyed = false;
        }
    }
    return 0;
}
