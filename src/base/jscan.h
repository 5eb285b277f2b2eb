// SPDX-License-Identifier: Apache-2.0
/* base/jscan — JSON read in place: the server's answers walked without
 * building a tree, and caller text checked without parsing it into one.
 *
 * A lease of 100 jobs parsed by jansson cost the benchmark's workers more
 * CPU than the server spent leasing and committing them (ARCHITECTURE.md,
 * "The client reads answers in place").  Here a value is a span of the
 * text; iterating an object or array checks each member as it passes
 * (strict JSON: RFC 8259 grammar, UTF-8, no \u0000, paired surrogates), and
 * only the fields a caller wants are decoded. */
#ifndef TENQ_BASE_JSCAN_H
#define TENQ_BASE_JSCAN_H

#include <stdbool.h>
#include <stddef.h>

typedef struct tq_span {
    const char *p;
    size_t n;
} tq_span;

/* Containers nested deeper than this are refused. */
#define TQ_DEPTH_MAX 64

/* The end of the one JSON value at p (p < e; no leading whitespace), or
 * NULL when it is malformed or nested deeper than TQ_DEPTH_MAX. */
const char *tq_scan_value(const char *p, const char *e);

/* Whether s[0..n) is one JSON value, whitespace around it allowed. */
bool tq_scan_valid(const char *s, size_t n);
/* The decimal digits of v written backwards from end (20 bytes of room
 * before it); returns where they start.  (snprintf took a tenth of a lease
 * reply's time in the server, and as much of a worker's outcomes.) */
char *tq_digits(char *end, unsigned long long v);
/* The value of a hex digit (either case), or -1 (also for URLs' %XX). */
int tq_hexval(char ch);
/* How many bytes from the start of s[0..n) a JSON string holds as they are:
 * up to the first quote, backslash or control character (or n). */
size_t tq_json_plain(const char *s, size_t n);

/* The one JSON object in s[0..n) (whitespace around allowed) into *obj;
 * false when s is anything else. */
bool tq_scan_object(const char *s, size_t n, tq_span *obj);

/* The object s[0..n) holds, found by its outer braces alone (whitespace
 * around allowed), nothing inside checked yet; false when s does not start
 * and end as an object.  Walking it checks each member as it passes, so a
 * caller that walks every member to the end (tq_obj_next answers 0) has
 * checked all of s once, where tq_scan_object then the walk would check it
 * twice. */
bool tq_obj_outline(const char *s, size_t n, tq_span *obj);

/* Walks an object's members or an array's elements.  v must be a value
 * tq_scan_value accepted (a member's value, tq_scan_object's answer). */
typedef struct tq_iter {
    const char *p, *e;
    bool first;
    char close; /* entered (tq_iter_enter): the bracket that ends the walk */
} tq_iter;
/* false when v is not an object (tq_obj_begin) or array (tq_arr_begin).
 * v may also come from tq_obj_outline. */
bool tq_obj_begin(tq_iter *it, tq_span v);
bool tq_arr_begin(tq_iter *it, tq_span v);
/* 1 with the next member (key: its text inside the quotes, escapes
 * undecoded), 0 at the end, -1 when malformed. */
int tq_obj_next(tq_iter *it, tq_span *key, tq_span *val);
int tq_arr_next(tq_iter *it, tq_span *val);

/* Walking in steps, entering containers where they stand: tq_obj_next and
 * tq_arr_next check a member's whole value to find its end, so a caller
 * that then walks that value checks its bytes twice, and once more for
 * each level above.  A walk that steps (tq_obj_key, tq_arr_step), takes
 * the leaves (tq_iter_value) and enters the containers it reads checks
 * each byte once.
 *
 * 1 with the next member's key, it->p at its value; 0 at the end; -1 when
 * malformed.  The value must then be taken or entered before the next
 * step. */
int tq_obj_key(tq_iter *it, tq_span *key);
/* 1 with it->p at the next element, 0 at the end, -1 when malformed. */
int tq_arr_step(tq_iter *it);
/* 1 with the (checked) value at it->p, it past it; -1 when malformed. */
int tq_iter_value(tq_iter *it, tq_span *val);
/* *in walks the object ('{') or array ('[') at it->p; false when that is
 * not one.  Once in's walk answered 0, tq_iter_leave(it, in) puts it after
 * the container's closing bracket (in->p). */
bool tq_iter_enter(tq_iter *it, tq_iter *in, char open);
void tq_iter_leave(tq_iter *it, const tq_iter *in);
/* An iterator standing at the value v, to enter it (or take it). */
tq_iter tq_iter_at(tq_span v);

/* Whether a key (as tq_obj_next gives it) is the name lit. */
bool tq_key_is(tq_span key, const char *lit);
/* Member name of v in the object obj into *val; false when absent. */
bool tq_obj_get(tq_span obj, const char *name, tq_span *val);

bool tq_span_null(tq_span v);
bool tq_span_true(tq_span v);
/* v as an integer; 0 when v is not one (or does not fit 64 bits). */
long long tq_span_int(tq_span v);
/* A malloc'd copy of the string v, decoded; NULL for null (and for
 * anything but a string, with *bad set; also when out of memory). */
char *tq_span_str(tq_span v, bool *bad);
/* The string v (checked, quotes included) decoded into o, which has room
 * for v.n - 1 bytes; returns its length (o[length] is 0). */
size_t tq_span_str_into(tq_span v, char *o);
/* The string v decoded into buf (cut at len - 1 bytes); "" when v is not
 * a string. */
void tq_span_str_to(tq_span v, char *buf, size_t len);
/* Member name of obj as in tq_span_str_to; "" when absent. */
void tq_obj_str_to(tq_span obj, const char *name, char *buf, size_t len);
/* A malloc'd copy of v's text; NULL for null (*bad set when out of
 * memory). */
char *tq_span_text(tq_span v, bool *bad);

#endif
