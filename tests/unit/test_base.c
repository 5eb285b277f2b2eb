// SPDX-License-Identifier: Apache-2.0
/* Tests of the base containers against simple models. */
#include "runner.h"

#include "base/avl.h"
#include "base/hash.h"
#include "base/heap.h"
#include "base/htab.h"
#include "tenq/errors.h"

typedef struct item {
    uint64_t key;
    uint32_t hidx;
    avl_node an;
    bool in;
} item;

static bool item_less(const item *a, const item *b)
{
    return a->key < b->key || (a->key == b->key && a < b);
}
HEAP_DEFINE(ih, item, hidx, item_less)

static uint64_t rng_state;
static uint64_t rnd(void)
{
    return hash_u64(rng_state += 0x9e3779b97f4a7c15ULL);
}

static bool item_eq(const void *it, const void *key)
{
    return ((const item *)it)->key == *(const uint64_t *)key;
}

TEST(htab_matches_a_model_under_random_insert_and_remove)
{
    rng_state = test_seed();
    enum { N = 4000 };
    item *items = calloc(N, sizeof(item));
    for (int i = 0; i < N; i++) items[i].key = (uint64_t)i * 7919;
    htab t = {0};
    size_t live = 0;
    for (int step = 0; step < 100000; step++) {
        item *it = &items[rnd() % N];
        uint64_t h = hash_u64(it->key) & 0xfff; /* force long probe runs */
        if (it->in) {
            ASSERT(htab_remove(&t, h, it));
            it->in = false;
            live--;
        } else {
            ASSERT(htab_insert(&t, h, it) == 0);
            it->in = true;
            live++;
        }
        ASSERT_EQ(t.len, live);
        if (step % 5000 == 0) {
            for (int i = 0; i < N; i++) {
                item *f = htab_find(&t, hash_u64(items[i].key) & 0xfff, item_eq, &items[i].key);
                ASSERT(items[i].in ? f == &items[i] : f == NULL);
            }
        }
    }
    htab_free(&t);
    free(items);
}

TEST(heap_pops_in_order_and_removes_from_the_middle)
{
    rng_state = test_seed();
    enum { N = 5000 };
    item *items = calloc(N, sizeof(item));
    heap h = {0};
    for (int i = 0; i < N; i++) {
        items[i].key = rnd() % 1000;
        ASSERT(ih_push(&h, &items[i]) == 0);
    }
    /* remove a third at random, re-key a third */
    for (int i = 0; i < N; i += 3) ih_remove(&h, &items[i]);
    for (int i = 1; i < N; i += 3) {
        items[i].key = rnd() % 1000;
        ih_fix(&h, &items[i]);
    }
    uint64_t last = 0;
    int popped = 0;
    item *x;
    while ((x = ih_pop(&h))) {
        ASSERT(x->key >= last);
        ASSERT_EQ(x->hidx, HEAP_NONE);
        last = x->key;
        popped++;
    }
    ASSERT_EQ(popped, N - (N + 2) / 3);
    heap_free(&h);
    free(items);
}

static int item_cmp(const avl_node *a, const avl_node *b)
{
    const item *x = AVL_CONTAINER(a, item, an), *y = AVL_CONTAINER(b, item, an);
    return x->key < y->key ? -1 : x->key > y->key;
}

static int key_cmp(const void *key, const avl_node *n)
{
    uint64_t k = *(const uint64_t *)key, v = AVL_CONTAINER(n, item, an)->key;
    return k < v ? -1 : k > v;
}

static int height_ok(const avl_node *n)
{
    if (!n) return 0;
    int l = height_ok(n->left), r = height_ok(n->right);
    ASSERT(l - r <= 1 && r - l <= 1);
    ASSERT(!n->left || n->left->parent == n);
    ASSERT(!n->right || n->right->parent == n);
    ASSERT_EQ(n->height, (l > r ? l : r) + 1);
    return n->height;
}

TEST(avl_stays_balanced_and_ordered)
{
    rng_state = test_seed();
    enum { N = 4000 };
    item *items = calloc(N, sizeof(item));
    for (int i = 0; i < N; i++) items[i].key = (uint64_t)i * 2;
    avl_tree t = {.cmp = item_cmp};
    for (int step = 0; step < 60000; step++) {
        item *it = &items[rnd() % N];
        if (it->in)
            avl_remove(&t, &it->an);
        else
            avl_insert(&t, &it->an);
        it->in = !it->in;
        if (step % 500 == 0) {
            height_ok(t.root);
            size_t n = 0;
            uint64_t last = 0;
            for (avl_node *x = avl_first(&t); x; x = avl_next(x)) {
                uint64_t k = AVL_CONTAINER(x, item, an)->key;
                ASSERT(n == 0 || k > last);
                last = k;
                n++;
            }
            ASSERT_EQ(n, t.len);
            /* seek: first above an odd key, last below it */
            uint64_t probe = (rnd() % N) * 2 + 1;
            avl_node *ub = avl_upper_bound(&t, key_cmp, &probe);
            avl_node *lb = avl_lower_before(&t, key_cmp, &probe);
            if (ub) ASSERT(AVL_CONTAINER(ub, item, an)->key > probe);
            if (ub && avl_prev(ub)) ASSERT(AVL_CONTAINER(avl_prev(ub), item, an)->key < probe);
            if (lb) ASSERT(AVL_CONTAINER(lb, item, an)->key < probe);
            ASSERT(ub == (lb ? avl_next(lb) : avl_first(&t)));
        }
    }
    free(items);
}

TEST(siphash_depends_on_key_and_every_byte)
{
    hash_key k1 = {1, 2}, k2 = {1, 3};
    const char *s = "tenant-a/queue-b/lane-c";
    uint64_t a = hash_bytes(&k1, s, strlen(s));
    ASSERT(a == hash_bytes(&k1, s, strlen(s)));
    ASSERT(a != hash_bytes(&k2, s, strlen(s)));
    char buf[64];
    for (size_t i = 0; i < strlen(s); i++) {
        strcpy(buf, s);
        buf[i] ^= 1;
        ASSERT(hash_bytes(&k1, buf, strlen(s)) != a);
    }
    ASSERT(hash_bytes(&k1, "", 0) != hash_bytes(&k1, "\0", 1));
}

TEST(error_table_gives_word_status_and_message)
{
    ASSERT_STR(tenq_err_word(TENQ_EINVALID), "invalid");
    ASSERT_EQ(tenq_err_http_status(TENQ_EINVALID), 400);
    ASSERT_EQ(tenq_err_http_status(TENQ_ECONFLICT), 409);
    ASSERT_EQ(tenq_err_http_status(TENQ_ENOT_FOUND), 404);
    ASSERT_EQ(tenq_err_http_status(TENQ_ETOO_LARGE), 413);
    ASSERT_STR(tenq_err_word(TENQ_EUNAVAILABLE), "unavailable");
    ASSERT_STR(tenq_err_word(0), "ok");
    ASSERT_STR(tenq_err_word(-999), "internal");
}

#include "base/idtab.h"

static void count_cb(void *ctx, uint64_t id, void *item)
{
    (void)id;
    (void)item;
    (*(size_t *)ctx)++;
}

TEST(idtab_matches_a_model_and_frees_sparse_pages)
{
    rng_state = test_seed();
    enum { N = 300000 };
    char *present = calloc(N + 1, 1);
    idtab t = {0};
    uint64_t next = 1;
    size_t live = 0;
    for (int step = 0; step < 1200000; step++) {
        int r = (int)(rnd() % 10);
        if (r < 4 && next <= N) {
            ASSERT(idtab_put(&t, next, (void *)(uintptr_t)(next * 2)) == 0);
            present[next++] = 1;
            live++;
        } else if (next > 1) {
            /* delete mostly recent ids, sometimes old ones; 1 in 500 ids is
             * long-lived and never deleted */
            uint64_t span =
                next - 1 < 2000 || rnd() % 4 ? (next - 1 < 2000 ? next - 1 : 2000) : next - 1;
            uint64_t id = next - 1 - rnd() % span;
            if (id % 500 == 0) continue;
            void *got = idtab_del(&t, id);
            if (present[id]) {
                ASSERT(got == (void *)(uintptr_t)(id * 2));
                present[id] = 0;
                live--;
            } else {
                ASSERT(got == NULL);
            }
        }
        ASSERT_EQ(t.len, live);
        if (step % 100000 == 0) {
            for (uint64_t id = 1; id < next; id++)
                ASSERT(idtab_get(&t, id) == (present[id] ? (void *)(uintptr_t)(id * 2) : NULL));
            size_t n = 0;
            idtab_foreach(&t, count_cb, &n);
            ASSERT_EQ(n, live);
        }
    }
    /* the long-lived ids are all there, and memory tracks the live count,
     * not the id range */
    ASSERT(live >= N / 500 - 1);
    size_t bytes = idtab_bytes(&t);
    ASSERT_MSG(bytes < live * 600 + 64 * 1024, "%zu bytes for %zu live items", bytes, live);
    fprintf(stderr, "  %zu live of %llu ids in %zu bytes (%zu in overflow)\n", live,
            (unsigned long long)next, bytes, t.overflow.len);
    /* an id older than the directory (recovery out of order) still works */
    uint64_t old = 0;
    for (uint64_t id = 1; id < next && !old; id++)
        if (!present[id]) old = id;
    ASSERT(old);
    ASSERT(idtab_put(&t, old, (void *)7) == 0);
    ASSERT(idtab_get(&t, old) == (void *)7);
    ASSERT(idtab_del(&t, old) == (void *)7);
    idtab_free(&t);
    free(present);
}

#include "base/sha256.h"

TEST(sha256_matches_the_published_test_vectors)
{
    char hex[65];
    sha256_hex("abc", 3, hex);
    ASSERT_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    sha256_hex("", 0, hex);
    ASSERT_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_hex(two, strlen(two), hex);
    ASSERT_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    char *mil = malloc(1000000);
    memset(mil, 'a', 1000000);
    sha256_hex(mil, 1000000, hex);
    ASSERT_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(mil);
}
