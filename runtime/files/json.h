/*
 * json.h - the JSON a safetensors header needs, read strictly (RFC 8259)
 * and written: a cursor over the text, values read one at a time, the
 * first error kept with its byte position; UTF-8 checked on its own.
 */
#ifndef COW_FILES_JSON_H
#define COW_FILES_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Deepest nesting below an unknown field's value that is skipped over:
 * with the header's object and the tensor's entry above it, 128 levels
 * from the top, the reference reader's (serde_json's) limit. */
#define COW__JSON_MAX_DEPTH 125

struct cow__json {
	const char *start, *p, *end;
	char error[200];      /* the first error, "" while none */
};

void cow__json_init(struct cow__json *j, const char *text, size_t n);

/* Record an error at the cursor (the first one wins); returns false. */
bool cow__json_fail(struct cow__json *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Skip white space; then whether the next character is @c (consumed when
 * it is). */
void cow__json_ws(struct cow__json *j);
bool cow__json_take(struct cow__json *j, char c);
/* The next character must be @c (consumed), after white space. */
bool cow__json_expect(struct cow__json *j, char c, const char *context);

/* A string, decoded into @out (room for as many bytes as the string's
 * source text; decoding never grows it) and NUL-terminated; *len is its
 * length. Escapes, surrogate pairs and control characters as RFC 8259
 * says; a NUL (\u0000) is refused unless @nul_ok (then @out may hold
 * NULs: compare it by *len). */
bool cow__json_string(struct cow__json *j, char *out, size_t *len,
    bool nul_ok);

/* A non-negative integer (no sign, fraction or exponent) that fits in 64
 * bits. @what names it in an error. */
bool cow__json_uint(struct cow__json *j, uint64_t *v, const char *what);

/* Skip one value of any kind. */
bool cow__json_skip(struct cow__json *j);

/* Whether @s (@n bytes) is valid UTF-8 (no overlong forms, surrogates or
 * code points past U+10FFFF); else *bad is the offset of the first bad
 * byte. */
bool cow__utf8_valid(const char *s, size_t n, size_t *bad);

/* A growable text buffer for writing JSON. */
struct cow__jbuf {
	char *data;
	size_t len, cap;
	bool failed;          /* an allocation failed */
};

void cow__jbuf_put(struct cow__jbuf *b, const char *s, size_t n);
void cow__jbuf_puts(struct cow__jbuf *b, const char *s);
void cow__jbuf_printf(struct cow__jbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* @s (valid UTF-8) as a JSON string, quoted and escaped. */
void cow__jbuf_string(struct cow__jbuf *b, const char *s);
void cow__jbuf_free(struct cow__jbuf *b);

#endif
