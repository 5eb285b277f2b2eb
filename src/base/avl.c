// SPDX-License-Identifier: Apache-2.0
#include "avl.h"

static inline int ht(const avl_node *n)
{
    return n ? n->height : 0;
}

static inline void update(avl_node *n)
{
    int l = ht(n->left), r = ht(n->right);
    n->height = (l > r ? l : r) + 1;
}

/* Puts `to` where `from` hung under its parent (or as root). */
static void replace_child(avl_tree *t, avl_node *parent, avl_node *from, avl_node *to)
{
    if (!parent)
        t->root = to;
    else if (parent->left == from)
        parent->left = to;
    else
        parent->right = to;
    if (to) to->parent = parent;
}

static avl_node *rotate_left(avl_tree *t, avl_node *x)
{
    avl_node *y = x->right;
    replace_child(t, x->parent, x, y);
    x->right = y->left;
    if (x->right) x->right->parent = x;
    y->left = x;
    x->parent = y;
    update(x);
    update(y);
    return y;
}

static avl_node *rotate_right(avl_tree *t, avl_node *x)
{
    avl_node *y = x->left;
    replace_child(t, x->parent, x, y);
    x->left = y->right;
    if (x->left) x->left->parent = x;
    y->right = x;
    x->parent = y;
    update(x);
    update(y);
    return y;
}

/* Walks from n to the root, restoring heights and balance. */
static void rebalance(avl_tree *t, avl_node *n)
{
    while (n) {
        update(n);
        int bal = ht(n->left) - ht(n->right);
        if (bal > 1) {
            if (ht(n->left->left) < ht(n->left->right)) rotate_left(t, n->left);
            n = rotate_right(t, n);
        } else if (bal < -1) {
            if (ht(n->right->right) < ht(n->right->left)) rotate_right(t, n->right);
            n = rotate_left(t, n);
        }
        n = n->parent;
    }
}

void avl_insert(avl_tree *t, avl_node *n)
{
    n->left = n->right = NULL;
    n->height = 1;
    avl_node *p = NULL, **link = &t->root;
    while (*link) {
        p = *link;
        link = t->cmp(n, p) < 0 ? &p->left : &p->right;
    }
    n->parent = p;
    *link = n;
    t->len++;
    rebalance(t, p);
}

void avl_remove(avl_tree *t, avl_node *n)
{
    avl_node *fix;
    if (n->left && n->right) {
        /* Swap in the successor, which has no left child. */
        avl_node *s = n->right;
        while (s->left) s = s->left;
        avl_node *sp = s->parent;
        if (sp != n) {
            replace_child(t, sp, s, s->right);
            s->right = n->right;
            s->right->parent = s;
            fix = sp;
        } else {
            fix = s;
        }
        replace_child(t, n->parent, n, s);
        s->left = n->left;
        s->left->parent = s;
        s->height = n->height;
    } else {
        avl_node *c = n->left ? n->left : n->right;
        fix = n->parent;
        replace_child(t, n->parent, n, c);
    }
    t->len--;
    n->left = n->right = n->parent = NULL;
    rebalance(t, fix);
}

avl_node *avl_first(const avl_tree *t)
{
    avl_node *n = t->root;
    while (n && n->left) n = n->left;
    return n;
}

avl_node *avl_last(const avl_tree *t)
{
    avl_node *n = t->root;
    while (n && n->right) n = n->right;
    return n;
}

avl_node *avl_next(const avl_node *n)
{
    if (n->right) {
        n = n->right;
        while (n->left) n = n->left;
        return (avl_node *)n;
    }
    while (n->parent && n->parent->right == n) n = n->parent;
    return n->parent;
}

avl_node *avl_prev(const avl_node *n)
{
    if (n->left) {
        n = n->left;
        while (n->right) n = n->right;
        return (avl_node *)n;
    }
    while (n->parent && n->parent->left == n) n = n->parent;
    return n->parent;
}

avl_node *avl_upper_bound(const avl_tree *t, avl_key_cmp_fn cmp, const void *key)
{
    avl_node *n = t->root, *best = NULL;
    while (n) {
        if (cmp(key, n) < 0) {
            best = n;
            n = n->left;
        } else {
            n = n->right;
        }
    }
    return best;
}

avl_node *avl_lower_before(const avl_tree *t, avl_key_cmp_fn cmp, const void *key)
{
    avl_node *n = t->root, *best = NULL;
    while (n) {
        if (cmp(key, n) > 0) {
            best = n;
            n = n->right;
        } else {
            n = n->left;
        }
    }
    return best;
}
