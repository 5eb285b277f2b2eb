// SPDX-License-Identifier: Apache-2.0
/* Intrusive binary min-heaps.
 *
 * Each element carries its own position (a uint32_t field), so removing or
 * re-keying an element is O(log n) with no search.  HEAP_DEFINE generates
 * type-safe functions with the comparison inlined:
 *
 *   HEAP_DEFINE(jobq, struct job, hidx, job_less)
 *
 * makes jobq_push/top/pop/remove/fix over a `heap`, where `x->hidx` is the
 * position field (HEAP_NONE when the element is in no heap) and
 * `job_less(a, b)` is true when a must come out before b.
 * The heap never owns its elements.  The functions a file does not use are
 * marked unused (clang warns of unused static inline functions in a .c file).
 */
#ifndef TENQ_BASE_HEAP_H
#define TENQ_BASE_HEAP_H

#include <stdint.h>
#include <stdlib.h>

#define HEAP_NONE UINT32_MAX

typedef struct heap {
    void **a;
    uint32_t n, cap;
} heap;

static inline int heap_reserve_(heap *h, uint32_t want)
{
    if (want <= h->cap) return 0;
    uint32_t ncap = h->cap ? h->cap * 2 : 8;
    while (ncap < want) ncap *= 2;
    void **na = realloc(h->a, (size_t)ncap * sizeof(void *));
    if (!na) return -1;
    h->a = na;
    h->cap = ncap;
    return 0;
}

static inline void heap_shrink_(heap *h)
{
    if (h->cap > 64 && h->n < h->cap / 4) {
        void **na = realloc(h->a, (size_t)(h->cap / 2) * sizeof(void *));
        if (na) {
            h->a = na;
            h->cap /= 2;
        }
    }
}

static inline void heap_free(heap *h)
{
    free(h->a);
    h->a = NULL;
    h->n = h->cap = 0;
}

#define HEAP_DEFINE(name, T, IDX, LESS)                                                            \
    static inline __attribute__((unused)) void name##_set_(heap *h, uint32_t i, T *x)              \
    {                                                                                              \
        h->a[i] = x;                                                                               \
        x->IDX = i;                                                                                \
    }                                                                                              \
    static inline __attribute__((unused)) void name##_up_(heap *h, uint32_t i)                     \
    {                                                                                              \
        T *x = h->a[i];                                                                            \
        while (i > 0) {                                                                            \
            uint32_t p = (i - 1) / 2;                                                              \
            T *px = h->a[p];                                                                       \
            if (!LESS(x, px)) break;                                                               \
            name##_set_(h, i, px);                                                                 \
            i = p;                                                                                 \
        }                                                                                          \
        name##_set_(h, i, x);                                                                      \
    }                                                                                              \
    static inline __attribute__((unused)) void name##_down_(heap *h, uint32_t i)                   \
    {                                                                                              \
        T *x = h->a[i];                                                                            \
        for (;;) {                                                                                 \
            uint32_t l = 2 * i + 1;                                                                \
            if (l >= h->n) break;                                                                  \
            uint32_t c = l;                                                                        \
            if (l + 1 < h->n && LESS((T *)h->a[l + 1], (T *)h->a[l])) c = l + 1;                   \
            T *cx = h->a[c];                                                                       \
            if (!LESS(cx, x)) break;                                                               \
            name##_set_(h, i, cx);                                                                 \
            i = c;                                                                                 \
        }                                                                                          \
        name##_set_(h, i, x);                                                                      \
    }                                                                                              \
    static inline __attribute__((unused)) int name##_push(heap *h, T *x)                           \
    {                                                                                              \
        if (heap_reserve_(h, h->n + 1) != 0) return -1;                                            \
        h->a[h->n] = x;                                                                            \
        x->IDX = h->n;                                                                             \
        h->n++;                                                                                    \
        name##_up_(h, h->n - 1);                                                                   \
        return 0;                                                                                  \
    }                                                                                              \
    static inline __attribute__((unused)) T *name##_top(const heap *h)                             \
    {                                                                                              \
        return h->n ? (T *)h->a[0] : NULL;                                                         \
    }                                                                                              \
    static inline __attribute__((unused)) void name##_remove(heap *h, T *x)                        \
    {                                                                                              \
        uint32_t i = x->IDX;                                                                       \
        x->IDX = HEAP_NONE;                                                                        \
        h->n--;                                                                                    \
        if (i != h->n) {                                                                           \
            T *last = h->a[h->n];                                                                  \
            name##_set_(h, i, last);                                                               \
            if (i > 0 && LESS(last, (T *)h->a[(i - 1) / 2]))                                       \
                name##_up_(h, i);                                                                  \
            else                                                                                   \
                name##_down_(h, i);                                                                \
        }                                                                                          \
        heap_shrink_(h);                                                                           \
    }                                                                                              \
    static inline __attribute__((unused)) T *name##_pop(heap *h)                                   \
    {                                                                                              \
        T *x = name##_top(h);                                                                      \
        if (x) name##_remove(h, x);                                                                \
        return x;                                                                                  \
    }                                                                                              \
    /* Restores order after x's key changed. */                                                    \
    static inline __attribute__((unused)) void name##_fix(heap *h, T *x)                           \
    {                                                                                              \
        uint32_t i = x->IDX;                                                                       \
        if (i > 0 && LESS(x, (T *)h->a[(i - 1) / 2]))                                              \
            name##_up_(h, i);                                                                      \
        else                                                                                       \
            name##_down_(h, i);                                                                    \
    }

#endif
