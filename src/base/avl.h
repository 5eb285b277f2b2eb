// SPDX-License-Identifier: Apache-2.0
/* An intrusive AVL tree: ordered sets with O(log n) insert, remove and seek.
 *
 * The node lives inside the element (container_of to get back); the tree
 * never allocates or frees.  Elements that compare equal are not allowed.
 */
#ifndef TENQ_BASE_AVL_H
#define TENQ_BASE_AVL_H

#include <stddef.h>

typedef struct avl_node {
    struct avl_node *left, *right, *parent;
    int height;
} avl_node;

/* <0, 0, >0 like strcmp. */
typedef int (*avl_cmp_fn)(const avl_node *a, const avl_node *b);
/* Compares a key with a node: <0 when key sorts before node. */
typedef int (*avl_key_cmp_fn)(const void *key, const avl_node *n);

typedef struct avl_tree {
    avl_node *root;
    avl_cmp_fn cmp;
    size_t len;
} avl_tree;

#define AVL_CONTAINER(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

void avl_insert(avl_tree *t, avl_node *n);
void avl_remove(avl_tree *t, avl_node *n);
avl_node *avl_first(const avl_tree *t);
avl_node *avl_last(const avl_tree *t);
avl_node *avl_next(const avl_node *n);
avl_node *avl_prev(const avl_node *n);
/* First node that sorts strictly after key, or NULL. */
avl_node *avl_upper_bound(const avl_tree *t, avl_key_cmp_fn cmp, const void *key);
/* Last node that sorts strictly before key, or NULL. */
avl_node *avl_lower_before(const avl_tree *t, avl_key_cmp_fn cmp, const void *key);

#endif
