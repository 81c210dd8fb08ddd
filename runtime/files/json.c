/*
 * json.c - reading and writing the JSON of a safetensors header (json.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "alloc/allocator.h"
#include "files/json.h"

void
cow__json_init(struct cow__json *j, const char *text, size_t n)
{
	j->start = j->p = text;
	j->end = text + n;
	j->error[0] = '\0';
}

bool
cow__json_fail(struct cow__json *j, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (j->error[0] != '\0')
		return false;
	va_start(ap, fmt);
	n = vsnprintf(j->error, sizeof j->error, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof j->error)
		snprintf(j->error + n, sizeof j->error - (size_t)n,
		    " (header byte %zu)", (size_t)(j->p - j->start));
	return false;
}

void
cow__json_ws(struct cow__json *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
	    *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

bool
cow__json_take(struct cow__json *j, char c)
{
	cow__json_ws(j);
	if (j->p < j->end && *j->p == c) {
		j->p++;
		return true;
	}
	return false;
}

/* What the cursor is at, for messages. */
static const char *
at(const struct cow__json *j, char *buf, size_t n)
{
	if (j->p >= j->end)
		return "the end of the header";
	if ((unsigned char)*j->p >= 0x20 && (unsigned char)*j->p < 0x7f)
		snprintf(buf, n, "'%c'", *j->p);
	else
		snprintf(buf, n, "byte 0x%02x", (unsigned char)*j->p);
	return buf;
}

bool
cow__json_expect(struct cow__json *j, char c, const char *context)
{
	char buf[16];

	if (cow__json_take(j, c))
		return true;
	return cow__json_fail(j, "expected '%c' %s, found %s", c, context,
	    at(j, buf, sizeof buf));
}

static int
hex4(const char *p)
{
	int v = 0;

	for (int i = 0; i < 4; i++) {
		int c = (unsigned char)p[i], d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		v = v * 16 + d;
	}
	return v;
}

static size_t
put_utf8(char *out, unsigned cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A \u escape at j->p (past the 'u'): its code point, a surrogate pair
 * joined; -1 after recording an error. */
static long
unicode_escape(struct cow__json *j)
{
	int hi, lo;

	if (j->end - j->p < 4 || (hi = hex4(j->p)) < 0)
		return cow__json_fail(j, "a \\u escape needs four hex "
		    "digits"), -1;
	j->p += 4;
	if (hi >= 0xdc00 && hi <= 0xdfff)
		return cow__json_fail(j, "a lone low surrogate \\u%04x", hi),
		    -1;
	if (hi < 0xd800 || hi > 0xdbff)
		return hi;
	if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u' ||
	    (lo = hex4(j->p + 2)) < 0xdc00 || lo > 0xdfff)
		return cow__json_fail(j, "a high surrogate \\u%04x without "
		    "its low surrogate", hi), -1;
	j->p += 6;
	return 0x10000 + ((long)(hi - 0xd800) << 10) + (lo - 0xdc00);
}

bool
cow__json_string(struct cow__json *j, char *out, size_t *len, bool nul_ok)
{
	size_t n = 0;

	if (!cow__json_expect(j, '"', "to start a string"))
		return false;
	while (j->p < j->end && *j->p != '"') {
		unsigned char c = (unsigned char)*j->p++;
		long cp;

		if (c < 0x20)
			return cow__json_fail(j, "control character 0x%02x in "
			    "a string", c);
		if (c != '\\') {
			out[n++] = (char)c;
			continue;
		}
		if (j->p >= j->end)
			break;
		switch (*j->p++) {
		case '"': out[n++] = '"'; break;
		case '\\': out[n++] = '\\'; break;
		case '/': out[n++] = '/'; break;
		case 'b': out[n++] = '\b'; break;
		case 'f': out[n++] = '\f'; break;
		case 'n': out[n++] = '\n'; break;
		case 'r': out[n++] = '\r'; break;
		case 't': out[n++] = '\t'; break;
		case 'u':
			if ((cp = unicode_escape(j)) < 0)
				return false;
			if (cp == 0 && !nul_ok)
				return cow__json_fail(j, "\\u0000 in a string");
			n += put_utf8(out + n, (unsigned)cp);
			break;
		default:
			j->p--;
			return cow__json_fail(j, "unknown escape \\%c", *j->p);
		}
	}
	if (j->p >= j->end)
		return cow__json_fail(j, "a string does not end");
	j->p++;
	out[n] = '\0';
	*len = n;
	return true;
}

/* The token at @p for a message: a number's characters as written, or
 * what the cursor is at. */
static const char *
token(const struct cow__json *j, const char *p, char *buf, size_t n)
{
	size_t len = 0;

	while (p + len < j->end && len < 24 &&
	    strchr("+-.0123456789eE", p[len]) != NULL && p[len] != '\0')
		len++;
	if (len == 0) {
		struct cow__json at_p = *j;

		at_p.p = p;
		return at(&at_p, buf, n);
	}
	snprintf(buf, n, "%.*s", (int)len, p);
	return buf;
}

bool
cow__json_uint(struct cow__json *j, uint64_t *v, const char *what)
{
	const char *start;
	uint64_t x = 0;
	char buf[32];

	cow__json_ws(j);
	start = j->p;
	if (j->p < j->end && *j->p == '-')
		return cow__json_fail(j, "%s is negative (found %s)", what,
		    token(j, start, buf, sizeof buf));
	if (j->p >= j->end || *j->p < '0' || *j->p > '9')
		return cow__json_fail(j, "%s is not an integer (found %s)",
		    what, token(j, start, buf, sizeof buf));
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
		unsigned d = (unsigned)(*j->p - '0');

		if (j->p > start && *start == '0')
			return cow__json_fail(j, "%s has a leading zero "
			    "(found %s)", what, token(j, start, buf,
			    sizeof buf));
		if (x > (UINT64_MAX - d) / 10)
			return cow__json_fail(j, "%s does not fit in 64 bits "
			    "(found %s)", what, token(j, start, buf,
			    sizeof buf));
		x = x * 10 + d;
		j->p++;
	}
	if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'))
		return cow__json_fail(j, "%s is not an integer (found %s)",
		    what, token(j, start, buf, sizeof buf));
	*v = x;
	return true;
}

/* A number of any kind (skipped). */
static bool
skip_number(struct cow__json *j)
{
	const char *p = j->p;

	if (p < j->end && *p == '-')
		p++;
	if (p >= j->end || *p < '0' || *p > '9')
		return cow__json_fail(j, "not a JSON value");
	if (*p == '0')
		p++;
	else
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	if (p < j->end && *p == '.') {
		if (++p >= j->end || *p < '0' || *p > '9')
			return cow__json_fail(j, "a number with no digits after "
			    "its point");
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < j->end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < j->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= j->end || *p < '0' || *p > '9')
			return cow__json_fail(j, "a number with an empty "
			    "exponent");
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	}
	j->p = p;
	return true;
}

static bool
skip_literal(struct cow__json *j, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
		return cow__json_fail(j, "not a JSON value");
	j->p += n;
	return true;
}

/* A string skipped: its text checked as cow__json_string checks it. */
static bool
skip_string(struct cow__json *j)
{
	char buf[16]; /* at(): "byte 0x%02x" */

	if (!cow__json_expect(j, '"', "to start a string"))
		return false;
	while (j->p < j->end && *j->p != '"') {
		unsigned char c = (unsigned char)*j->p++;

		if (c < 0x20)
			return cow__json_fail(j, "control character 0x%02x in "
			    "a string", c);
		if (c != '\\')
			continue;
		if (j->p >= j->end)
			break;
		c = (unsigned char)*j->p++;
		if (c == 'u') {
			if (unicode_escape(j) < 0)
				return false;
		} else if (strchr("\"\\/bfnrt", c) == NULL || c == '\0') {
			j->p--;
			return cow__json_fail(j, "unknown escape \\%s",
			    at(j, buf, sizeof buf));
		}
	}
	if (j->p >= j->end)
		return cow__json_fail(j, "a string does not end");
	j->p++;
	return true;
}

static bool
skip_value(struct cow__json *j, int depth)
{
	char buf[16];

	if (depth > COW__JSON_MAX_DEPTH)
		return cow__json_fail(j, "values nested deeper than %d",
		    COW__JSON_MAX_DEPTH);
	cow__json_ws(j);
	if (j->p >= j->end)
		return cow__json_fail(j, "a value is missing");
	switch (*j->p) {
	case '"':
		return skip_string(j);
	case '{':
		j->p++;
		if (cow__json_take(j, '}'))
			return true;
		do {
			if (!skip_string(j) ||
			    !cow__json_expect(j, ':', "after a key") ||
			    !skip_value(j, depth + 1))
				return false;
		} while (cow__json_take(j, ','));
		return cow__json_expect(j, '}', "to end an object");
	case '[':
		j->p++;
		if (cow__json_take(j, ']'))
			return true;
		do {
			if (!skip_value(j, depth + 1))
				return false;
		} while (cow__json_take(j, ','));
		return cow__json_expect(j, ']', "to end an array");
	case 't':
		return skip_literal(j, "true");
	case 'f':
		return skip_literal(j, "false");
	case 'n':
		return skip_literal(j, "null");
	default:
		if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))
			return skip_number(j);
		return cow__json_fail(j, "not a JSON value: %s",
		    at(j, buf, sizeof buf));
	}
}

bool
cow__json_skip(struct cow__json *j)
{
	return skip_value(j, 0);
}

bool
cow__utf8_valid(const char *s, size_t n, size_t *bad)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		unsigned c = p[i], need, cp, min;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			need = 1, cp = c & 0x1f, min = 0x80;
		else if (c >= 0xe0 && c <= 0xef)
			need = 2, cp = c & 0x0f, min = 0x800;
		else if (c >= 0xf0 && c <= 0xf4)
			need = 3, cp = c & 0x07, min = 0x10000;
		else
			break;
		if (n - i <= need)
			break;
		for (unsigned k = 1; k <= need; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				goto out;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			break;
		i += need + 1;
	}
out:
	*bad = i;
	return i == n;
}

/* ------------------------------------------------------------------ */
/* Writing. */

void
cow__jbuf_put(struct cow__jbuf *b, const char *s, size_t n)
{
	cow_allocator_t *a = cow_allocator_default();

	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap < 256 ? 256 : b->cap;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		if ((p = cow__alloc(a, cap)) == NULL) {
			b->failed = true;
			return;
		}
		if (b->len > 0)
			memcpy(p, b->data, b->len);
		cow__free(a, b->data, b->cap);
		b->data = p;
		b->cap = cap;
	}
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void
cow__jbuf_puts(struct cow__jbuf *b, const char *s)
{
	cow__jbuf_put(b, s, strlen(s));
}

void
cow__jbuf_printf(struct cow__jbuf *b, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof tmp)
		b->failed = true;
	else
		cow__jbuf_put(b, tmp, (size_t)n);
}

void
cow__jbuf_string(struct cow__jbuf *b, const char *s)
{
	cow__jbuf_put(b, "\"", 1);
	for (const char *p = s; *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;
		char esc[8];

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			cow__jbuf_put(b, esc, 2);
		} else if (c < 0x20) {
			snprintf(esc, sizeof esc, "\\u%04x", c);
			cow__jbuf_put(b, esc, 6);
		} else {
			cow__jbuf_put(b, p, 1);
		}
	}
	cow__jbuf_put(b, "\"", 1);
}

void
cow__jbuf_free(struct cow__jbuf *b)
{
	cow__free(cow_allocator_default(), b->data, b->cap);
	b->data = NULL;
	b->len = b->cap = 0;
}
