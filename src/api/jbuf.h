// SPDX-License-Identifier: Apache-2.0
/* jbuf — writing JSON straight into a buffer.
 *
 * Replies embed JSON the server already holds as text (args, payloads,
 * results): writing them raw avoids parsing them again, which a jansson
 * tree would need.  Commas are placed automatically. */
#ifndef TENQ_API_JBUF_H
#define TENQ_API_JBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JBUF_DEPTH 32

typedef struct jbuf {
    char *p;
    size_t n, cap;
    int depth;
    bool first[JBUF_DEPTH];
    bool after_key;
} jbuf;

void jb_init(jbuf *b);
void jb_free(jbuf *b);
void jb_reset(jbuf *b);
/* The text so far (NUL-terminated); ownership passes to the caller. */
char *jb_take(jbuf *b, size_t *len);

/* n bytes as they are: no comma, no quoting (text that is already JSON,
 * written piece by piece: jobread.c's canonical args). */
void jb_put(jbuf *b, const char *s, size_t n);

void jb_obj(jbuf *b);
void jb_obj_end(jbuf *b);
void jb_arr(jbuf *b);
void jb_arr_end(jbuf *b);
void jb_key(jbuf *b, const char *k);
void jb_str(jbuf *b, const char *s); /* NULL: null */
void jb_strn(jbuf *b, const char *s, size_t n);
void jb_int(jbuf *b, long long v);
void jb_uint(jbuf *b, unsigned long long v);
void jb_num(jbuf *b, double v);
void jb_bool(jbuf *b, bool v);
void jb_null(jbuf *b);
/* JSON text as it is (NULL: null). */
void jb_raw(jbuf *b, const char *json, size_t len);
/* Bytes with no JSON structure (for text/plain bodies). */
void jb_text(jbuf *b, const char *s, size_t n);
/* printf into the buffer, no JSON structure. */
void jb_printf(jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Shorthands for "key": value. */
void jb_kstr(jbuf *b, const char *k, const char *v);
void jb_kint(jbuf *b, const char *k, long long v);
void jb_kbool(jbuf *b, const char *k, bool v);
void jb_kraw(jbuf *b, const char *k, const char *json);

#endif
