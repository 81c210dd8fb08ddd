/*
 * safetensors_ref.c - an independent safetensors validator (see
 * safetensors_ref.h), written from the format's specification:
 *
 *   8 bytes    N, a little-endian u64
 *   N bytes    UTF-8 JSON: an object mapping each tensor's name to
 *              {"dtype": string, "shape": [integers >= 0],
 *               "data_offsets": [begin, end]} (end exclusive, relative to
 *              the data), and an optional "__metadata__": an object of
 *              string to string; white space before and after the object
 *   the rest   the data: the tensors' bytes, which the tensors, sorted by
 *              offset, cover exactly from 0, with no gap, no overlap and
 *              nothing after the last
 *
 * The format's rules (the reference reader's, safetensors src/tensor.rs as
 * described in its README): a file under 8 bytes; N above 100,000,000;
 * 8 + N beyond the file; a header that is not UTF-8 or not a JSON object;
 * an unknown dtype; a shape that is not a list of non-negative integers or
 * whose element count times element size overflows 64 bits; end < begin;
 * the coverage rule above; an extent other than the element count times
 * the element size; duplicate names; a __metadata__ that is not an object
 * of strings. Keys of a tensor's entry other than the three are ignored.
 *
 * JSON is RFC 8259, strictly: no trailing comma, no comment, no single
 * quotes, no leading zeros, no NaN; a string holds no raw byte below 0x20;
 * escapes are \" \\ \/ \b \f \n \r \t and \uXXXX, and a \u escape of a
 * high surrogate must be followed by one of a low surrogate (a lone
 * surrogate is refused). White space is space, tab, LF and CR. There is
 * a nesting limit (divergence 7; an explicit stack, no recursion).
 *
 * An integer (a size or an offset) is a JSON number with no minus sign,
 * fraction or exponent, as the reference reader's unsigned fields take
 * them: -0, 1.0 and 1e2 are refused.
 *
 * Intended divergences: where cowstore means to refuse what the format
 * allows, or where the format leaves a choice, this validator follows
 * cowstore (docs/files.md, include/cowstore/safetensors.h) and the harness
 * counts the file as cowstore does:
 *  1. \u0000 in a tensor's name or a metadata key or value is refused
 *     (STREF_NUL): cowstore gives them as C strings. Elsewhere (a dtype,
 *     which is then unknown; a key or value the reader ignores) it is
 *     accepted, as the reference reader accepts it everywhere.
 *  2. The dtypes F8_E5M2, F8_E4M3, F8_E8M0, F8_E4M3FNUZ, F8_E5M2FNUZ, F4,
 *     F6_E2M3 and F6_E3M2 are refused (STREF_DTYPE): cowstore has no such
 *     dtype.
 *  3. A shape of more than 16 dimensions is refused (STREF_NDIM), as is a
 *     size above INT64_MAX (STREF_SHAPE): COW_TENSOR_MAX_NDIM and
 *     cowstore's int64_t sizes. The reference reader takes any usize.
 *  4. (No longer a divergence: the element count is the reference
 *     reader's, a product of the sizes from the left, refused once it
 *     overflows, then times the element's size in bits, refused when that
 *     overflows: [2^62, 2^62, 0] is refused, [0, 2^62, 2^62] is not.)
 *  5. Every duplicate key is refused that names something: two tensors of
 *     one name (compared after unescaping), two __metadata__ members, two
 *     metadata keys (STREF_DUPLICATE_NAME, STREF_METADATA_DUPLICATE), and
 *     dtype, shape or data_offsets twice in one entry (STREF_ENTRY). A
 *     JSON object's other duplicate keys (in an ignored value) are
 *     allowed, as RFC 8259 allows them. The reference reader keeps the
 *     last of two tensors or metadata keys of one name.
 *  6. (No longer a divergence: "__metadata__": null is no metadata, as
 *     the reference reader takes it.)
 *  7. Nesting is limited as the reference reader limits it (serde_json
 *     refuses 128 levels from the top): with the header's object and the
 *     tensor's entry above it, an ignored key's value may hold
 *     STREF_MAX_DEPTH (125) arrays or objects below it, so [[...]] 126
 *     deep passes and 127 deep does not (STREF_DEPTH). cowstore's reader
 *     refuses it ("values nested deeper than 125"), at the same depth.
 *
 * Built with STREF_FAULT_ACCEPT_TRAILING (the negative control
 * fuzz_safetensors_trailing), the validator is wrong on purpose: it
 * accepts bytes after the last tensor.
 */
#include "safetensors_ref.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cowstore/dtype.h>

#define STREF_MAX_HEADER 100000000u
#define STREF_MAX_DEPTH 125

static const char *const rule_names[STREF_RULE_COUNT] = {
	[STREF_VALID] = "valid",
	[STREF_FILE_TOO_SHORT] = "file_too_short",
	[STREF_HEADER_TOO_LARGE] = "header_too_large",
	[STREF_HEADER_PAST_END] = "header_past_end",
	[STREF_UTF8] = "utf8",
	[STREF_JSON] = "json",
	[STREF_NOT_OBJECT] = "not_object",
	[STREF_NUL] = "nul",
	[STREF_DEPTH] = "depth",
	[STREF_ENTRY] = "entry",
	[STREF_DTYPE] = "dtype",
	[STREF_NDIM] = "ndim",
	[STREF_SHAPE] = "shape",
	[STREF_OVERFLOW] = "overflow",
	[STREF_OFFSETS] = "offsets",
	[STREF_END_BEFORE_BEGIN] = "end_before_begin",
	[STREF_EXTENT] = "extent",
	[STREF_DUPLICATE_NAME] = "duplicate_name",
	[STREF_COVERAGE] = "coverage",
	[STREF_TRAILING] = "trailing",
	[STREF_METADATA] = "metadata",
	[STREF_METADATA_DUPLICATE] = "metadata_duplicate"
};

/* The format's dtypes, with cowstore's dtype for those it has. */
static const struct {
	const char *name;
	int dtype;      /* -1: the format has it, cowstore does not */
	unsigned size;  /* bytes per element */
} dtypes[] = {
	{ "BOOL", COW_DTYPE_BOOL, 1 },
	{ "U8", COW_DTYPE_UINT8, 1 },
	{ "I8", COW_DTYPE_INT8, 1 },
	{ "I16", COW_DTYPE_INT16, 2 },
	{ "U16", COW_DTYPE_UINT16, 2 },
	{ "I32", COW_DTYPE_INT32, 4 },
	{ "U32", COW_DTYPE_UINT32, 4 },
	{ "I64", COW_DTYPE_INT64, 8 },
	{ "U64", COW_DTYPE_UINT64, 8 },
	{ "F16", COW_DTYPE_FLOAT16, 2 },
	{ "BF16", COW_DTYPE_BFLOAT16, 2 },
	{ "F32", COW_DTYPE_FLOAT32, 4 },
	{ "F64", COW_DTYPE_FLOAT64, 8 },
	{ "C64", COW_DTYPE_COMPLEX64, 8 },
	{ "F8_E5M2", -1, 1 },
	{ "F8_E4M3", -1, 1 },
	{ "F8_E8M0", -1, 1 },
	{ "F8_E4M3FNUZ", -1, 1 },
	{ "F8_E5M2FNUZ", -1, 1 },
	{ "F4", -1, 0 },
	{ "F6_E2M3", -1, 0 },
	{ "F6_E3M2", -1, 0 }
};

/* The reader: the header, a position in it, and the verdict so far. */
struct rd {
	const uint8_t *p;
	size_t n, i;
	struct stref_file *out;
	bool oom;
	/* The stack of open containers of skip_value ('[' or '{'). */
	char *stack;
	size_t stack_cap;
	/* Tensors and metadata found so far (capacities). */
	size_t tcap, mcap;
	bool seen_metadata;
};

const char *
stref_rule_name(enum stref_rule rule)
{
	if ((unsigned)rule >= STREF_RULE_COUNT)
		return "?";
	return rule_names[rule];
}

/* Refuse the file for @rule, unless an earlier rule did; returns -1. */
static int refuse(struct stref_file *f, enum stref_rule rule, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));

static int
refuse(struct stref_file *f, enum stref_rule rule, const char *fmt, ...)
{
	va_list ap;

	if (f->rule != STREF_VALID)
		return -1;
	f->rule = rule;
	va_start(ap, fmt);
	vsnprintf(f->why, sizeof f->why, fmt, ap);
	va_end(ap);
	return -1;
}

static int
oom(struct rd *r)
{
	r->oom = true;
	return -1;
}

/* ------------------------------------------------------------------ */
/* UTF-8 (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF). */

/* The offset of the first byte that is not UTF-8, or @n. */
static size_t
utf8_check(const uint8_t *s, size_t n)
{
	size_t i = 0, len, k;
	uint8_t c, lo, hi;

	while (i < n) {
		c = s[i];
		lo = 0x80;
		hi = 0xbf;
		if (c < 0x80) {
			i++;
			continue;
		} else if (c >= 0xc2 && c <= 0xdf) {
			len = 2;
		} else if (c >= 0xe0 && c <= 0xef) {
			len = 3;
			if (c == 0xe0)
				lo = 0xa0;
			else if (c == 0xed)
				hi = 0x9f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			len = 4;
			if (c == 0xf0)
				lo = 0x90;
			else if (c == 0xf4)
				hi = 0x8f;
		} else {
			return i;
		}
		if (n - i < len)
			return i;
		/* The second byte has the tightened range; the rest any
		 * continuation byte. */
		if (s[i + 1] < lo || s[i + 1] > hi)
			return i;
		for (k = 2; k < len; k++)
			if (s[i + k] < 0x80 || s[i + k] > 0xbf)
				return i;
		i += len;
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* JSON. */

static int
json_error(struct rd *r, const char *what)
{
	if (r->i >= r->n)
		return refuse(r->out, STREF_JSON,
		    "header byte %zu: %s, found the end", r->i, what);
	return refuse(r->out, STREF_JSON, "header byte %zu: %s, found 0x%02x",
	    r->i, what, r->p[r->i]);
}

static void
skip_ws(struct rd *r)
{
	while (r->i < r->n && (r->p[r->i] == ' ' || r->p[r->i] == '\t' ||
	    r->p[r->i] == '\n' || r->p[r->i] == '\r'))
		r->i++;
}

/* The next byte, or -1 at the end. */
static int
peek(const struct rd *r)
{
	return r->i < r->n ? r->p[r->i] : -1;
}

static int
expect(struct rd *r, char c, const char *what)
{
	if (peek(r) != (uint8_t)c)
		return json_error(r, what);
	r->i++;
	return 0;
}

static int
hex4(struct rd *r, unsigned *out)
{
	unsigned v = 0, d;
	int c;

	for (int k = 0; k < 4; k++) {
		c = peek(r);
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return json_error(r, "a hex digit of a \\u escape");
		v = v << 4 | d;
		r->i++;
	}
	*out = v;
	return 0;
}

/* Append code point @cp as UTF-8 to @buf (room for 4 more bytes). */
static size_t
put_utf8(char *buf, size_t len, unsigned cp)
{
	if (cp < 0x80) {
		buf[len++] = (char)cp;
	} else if (cp < 0x800) {
		buf[len++] = (char)(0xc0 | cp >> 6);
		buf[len++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		buf[len++] = (char)(0xe0 | cp >> 12);
		buf[len++] = (char)(0x80 | (cp >> 6 & 0x3f));
		buf[len++] = (char)(0x80 | (cp & 0x3f));
	} else {
		buf[len++] = (char)(0xf0 | cp >> 18);
		buf[len++] = (char)(0x80 | (cp >> 12 & 0x3f));
		buf[len++] = (char)(0x80 | (cp >> 6 & 0x3f));
		buf[len++] = (char)(0x80 | (cp & 0x3f));
	}
	return len;
}

/*
 * A string at the reader's position (its opening quote). With @out, its
 * value, unescaped, NUL-terminated, malloc'd, and its length in *outlen
 * (it may hold NULs where @nul_ok). A string decodes to at most as many
 * bytes as it takes in the header (an escape of 6 or 12 bytes gives at
 * most 4), so its length in the header bounds the buffer. @nul_ok: false
 * for the strings cowstore keeps (names, metadata), where \u0000 is
 * refused (divergence 1).
 */
static int
parse_string(struct rd *r, char **out, size_t *outlen, bool nul_ok)
{
	size_t start, len = 0;
	unsigned cp = 0, lo = 0;
	char *buf = NULL;
	int c;

	if (expect(r, '"', "'\"'") != 0)
		return -1;
	start = r->i;
	if (out != NULL && (buf = malloc(r->n - start + 1)) == NULL)
		return oom(r);
	for (;;) {
		if ((c = peek(r)) < 0) {
			json_error(r, "the end of a string");
			goto fail;
		}
		if (c == '"') {
			r->i++;
			break;
		}
		if (c < 0x20) {
			json_error(r, "a string character (a control "
			    "character must be escaped)");
			goto fail;
		}
		if (c != '\\') {
			if (buf != NULL)
				buf[len++] = (char)c;
			r->i++;
			continue;
		}
		r->i++;
		switch (peek(r)) {
		case '"': cp = '"'; break;
		case '\\': cp = '\\'; break;
		case '/': cp = '/'; break;
		case 'b': cp = '\b'; break;
		case 'f': cp = '\f'; break;
		case 'n': cp = '\n'; break;
		case 'r': cp = '\r'; break;
		case 't': cp = '\t'; break;
		case 'u':
			r->i++;
			if (hex4(r, &cp) != 0)
				goto fail;
			if (cp >= 0xdc00 && cp <= 0xdfff) {
				r->i -= 4;
				json_error(r, "a \\u escape that is not a lone "
				    "low surrogate");
				goto fail;
			}
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (peek(r) != '\\' || r->i + 1 >= r->n ||
				    r->p[r->i + 1] != 'u') {
					json_error(r, "a low surrogate's \\u "
					    "escape after a high surrogate");
					goto fail;
				}
				r->i += 2;
				if (hex4(r, &lo) != 0)
					goto fail;
				if (lo < 0xdc00 || lo > 0xdfff) {
					r->i -= 4;
					json_error(r, "a low surrogate after a "
					    "high surrogate");
					goto fail;
				}
				cp = 0x10000 + ((cp - 0xd800) << 10) +
				    (lo - 0xdc00);
			}
			if (cp == 0 && !nul_ok) {
				refuse(r->out, STREF_NUL, "header byte %zu: "
				    "\\u0000 in a string", r->i - 6);
				goto fail;
			}
			if (buf != NULL)
				len = put_utf8(buf, len, cp);
			continue;
		default:
			json_error(r, "an escape character");
			goto fail;
		}
		r->i++;
		if (buf != NULL)
			buf[len++] = (char)cp;
	}
	if (buf != NULL) {
		buf[len] = '\0';
		*out = buf;
		*outlen = len;
	}
	return 0;
fail:
	free(buf);
	return -1;
}

/*
 * A number at the reader's position. *is_uint: it is a non-negative
 * integer (digits only); then *value is its value, or *big when it is
 * above 2^64 - 1.
 */
static int
parse_number(struct rd *r, bool *is_uint, uint64_t *value, bool *big)
{
	uint64_t v = 0;
	bool uint = true, overflow = false;
	unsigned d;

	if (peek(r) == '-') {
		uint = false;
		r->i++;
	}
	if (peek(r) == '0') {
		r->i++;
	} else if (peek(r) >= '1' && peek(r) <= '9') {
		while (peek(r) >= '0' && peek(r) <= '9') {
			d = (unsigned)(peek(r) - '0');
			if (v > (UINT64_MAX - d) / 10)
				overflow = true;
			else
				v = v * 10 + d;
			r->i++;
		}
	} else {
		return json_error(r, "a digit");
	}
	if (peek(r) == '.') {
		uint = false;
		r->i++;
		if (!(peek(r) >= '0' && peek(r) <= '9'))
			return json_error(r, "a digit after '.'");
		while (peek(r) >= '0' && peek(r) <= '9')
			r->i++;
	}
	if (peek(r) == 'e' || peek(r) == 'E') {
		uint = false;
		r->i++;
		if (peek(r) == '+' || peek(r) == '-')
			r->i++;
		if (!(peek(r) >= '0' && peek(r) <= '9'))
			return json_error(r, "a digit of an exponent");
		while (peek(r) >= '0' && peek(r) <= '9')
			r->i++;
	}
	*is_uint = uint;
	*value = v;
	*big = overflow;
	return 0;
}

static int
parse_literal(struct rd *r, const char *word)
{
	size_t len = strlen(word);

	if (r->n - r->i < len || memcmp(r->p + r->i, word, len) != 0)
		return json_error(r, "a value");
	r->i += len;
	return 0;
}

/* The decoded string @s of @len bytes is @word. */
static bool
same(const char *s, size_t len, const char *word)
{
	return len == strlen(word) && memcmp(s, word, len) == 0;
}

static int
push(struct rd *r, size_t *depth, char c)
{
	char *grown;
	size_t cap;

	if (*depth == r->stack_cap) {
		cap = r->stack_cap == 0 ? 64 : 2 * r->stack_cap;
		if ((grown = realloc(r->stack, cap)) == NULL)
			return oom(r);
		r->stack = grown;
		r->stack_cap = cap;
	}
	r->stack[(*depth)++] = c;
	return 0;
}

/* Any JSON value at the reader's position, checked and skipped. */
static int
skip_value(struct rd *r)
{
	size_t depth = 0;
	bool is_uint, big;
	uint64_t v;
	int c;

value:
	skip_ws(r);
	if (depth > STREF_MAX_DEPTH)
		return refuse(r->out, STREF_DEPTH, "header byte %zu: a value "
		    "%zu levels deep in an ignored value", r->i, depth);
	switch (c = peek(r)) {
	case '{':
	case '[':
		r->i++;
		if (push(r, &depth, (char)c) != 0)
			return -1;
		skip_ws(r);
		if (peek(r) == (c == '{' ? '}' : ']')) {
			r->i++;
			depth--;
			break;
		}
		if (c == '{')
			goto member;
		goto value;
	case '"':
		if (parse_string(r, NULL, NULL, true) != 0)
			return -1;
		break;
	case 't':
		if (parse_literal(r, "true") != 0)
			return -1;
		break;
	case 'f':
		if (parse_literal(r, "false") != 0)
			return -1;
		break;
	case 'n':
		if (parse_literal(r, "null") != 0)
			return -1;
		break;
	default:
		if (c == '-' || (c >= '0' && c <= '9')) {
			if (parse_number(r, &is_uint, &v, &big) != 0)
				return -1;
			break;
		}
		return json_error(r, "a value");
	}
	/* After a value: close or continue the containers it is in. */
	while (depth > 0) {
		skip_ws(r);
		c = peek(r);
		if (c == ',') {
			r->i++;
			if (r->stack[depth - 1] == '[')
				goto value;
			goto member;
		}
		if (c == (r->stack[depth - 1] == '[' ? ']' : '}')) {
			r->i++;
			depth--;
			continue;
		}
		return json_error(r, r->stack[depth - 1] == '[' ?
		    "',' or ']'" : "',' or '}'");
	}
	return 0;
member:
	skip_ws(r);
	if (parse_string(r, NULL, NULL, true) != 0)
		return -1;
	skip_ws(r);
	if (expect(r, ':', "':'") != 0)
		return -1;
	goto value;
}

/*
 * A value that must be of the kind whose first byte is @open: when it is
 * not, check that it is JSON at all (a syntax error is STREF_JSON) and
 * refuse it for @rule. Returns 1 when it is of that kind (nothing read).
 */
static int
kind_or_refuse(struct rd *r, int open, enum stref_rule rule, const char *what)
{
	size_t at = r->i;

	if (peek(r) == open)
		return 1;
	if (skip_value(r) != 0)
		return -1;
	return refuse(r->out, rule, "header byte %zu: %s", at, what);
}

/*
 * Open an array or object (@open '[' or '{') at the reader's position,
 * refusing a value of another kind for @rule (kind_or_refuse). Returns 1
 * when it is empty (and closed), 0 when members follow, -1 when refused.
 */
static int
open_container(struct rd *r, int open, enum stref_rule rule, const char *what)
{
	if (kind_or_refuse(r, open, rule, what) != 1)
		return -1;
	r->i++;
	skip_ws(r);
	if (peek(r) == (open == '{' ? '}' : ']')) {
		r->i++;
		return 1;
	}
	return 0;
}

/* After a member: 1 and the ',' read when another follows, 0 and @close
 * read at the end, -1 on anything else. */
static int
more(struct rd *r, char close)
{
	skip_ws(r);
	if (peek(r) == ',') {
		r->i++;
		return 1;
	}
	return expect(r, close, close == '}' ? "',' or '}'" : "',' or ']'");
}

/* An object's key and its ':' (parse_string's @out, @len, @nul_ok). */
static int
parse_key(struct rd *r, char **out, size_t *len, bool nul_ok)
{
	skip_ws(r);
	if (parse_string(r, out, len, nul_ok) != 0)
		return -1;
	skip_ws(r);
	if (expect(r, ':', "':'") != 0) {
		free(*out);
		return -1;
	}
	skip_ws(r);
	return 0;
}

/*
 * A list of non-negative integers into @v (at most @max; *count: how many
 * there were). @rule for an element that is not one; @big_ok: a value
 * above INT64_MAX is allowed.
 */
static int
parse_uint_list(struct rd *r, uint64_t *v, size_t max, size_t *count,
    enum stref_rule rule, const char *what, bool big_ok)
{
	bool is_uint, big;
	uint64_t x;
	size_t n = 0, at;
	int c;

	*count = 0;
	if ((c = open_container(r, '[', rule, what)) != 0)
		return c < 0 ? -1 : 0;
	do {
		skip_ws(r);
		at = r->i;
		c = peek(r);
		if (c == '-' || (c >= '0' && c <= '9')) {
			if (parse_number(r, &is_uint, &x, &big) != 0)
				return -1;
			if (!is_uint)
				return refuse(r->out, rule, "header byte %zu: "
				    "%s: not a non-negative integer", at, what);
			if (big || (!big_ok && x > INT64_MAX))
				return refuse(r->out, rule, "header byte %zu: "
				    "%s: an integer above %s", at, what,
				    big_ok ? "2^64 - 1" : "INT64_MAX");
		} else {
			if (skip_value(r) != 0)
				return -1;
			return refuse(r->out, rule, "header byte %zu: %s: "
			    "not a number", at, what);
		}
		if (n < max)
			v[n] = x;
		n++;
	} while ((c = more(r, ']')) == 1);
	*count = n;
	return c;
}

static int
add_tensor(struct rd *r, const struct stref_tensor *t)
{
	struct stref_file *f = r->out;
	struct stref_tensor *grown;
	size_t cap;

	if (f->ntensors == r->tcap) {
		cap = r->tcap == 0 ? 8 : 2 * r->tcap;
		if ((grown = realloc(f->tensors, cap * sizeof *grown)) == NULL)
			return oom(r);
		f->tensors = grown;
		r->tcap = cap;
	}
	f->tensors[f->ntensors++] = *t;
	return 0;
}

/* A field of a tensor's entry, seen for the first time (divergence 5). */
static int
once(struct rd *r, bool *seen, size_t at, const char *name,
    const char *field)
{
	if (*seen)
		return refuse(r->out, STREF_ENTRY, "header byte %zu: tensor "
		    "\"%s\": %s twice", at, name, field);
	*seen = true;
	return 0;
}

/* A tensor's entry {"dtype", "shape", "data_offsets", ...}. */
static int
parse_entry(struct rd *r, char *name)
{
	struct stref_tensor t = { .name = name, .dtype = -2 };
	uint64_t dims[STREF_MAX_NDIM], off[2], count, nbytes;
	bool seen_dtype = false, seen_shape = false, seen_off = false;
	char *key = NULL, *dtype = NULL;
	size_t ndim = 0, noff = 0, at, k, key_len, dtype_len = 0;
	int c;

	if ((c = open_container(r, '{', STREF_ENTRY,
	    "a tensor's entry is not an object")) < 0)
		goto fail;
	while (c == 0) {
		skip_ws(r);
		at = r->i;
		if (parse_key(r, &key, &key_len, true) != 0) {
			key = NULL;
			goto fail;
		}
		if (same(key, key_len, "dtype")) {
			if (once(r, &seen_dtype, at, name, "dtype") != 0 ||
			    kind_or_refuse(r, '"', STREF_DTYPE,
			    "a dtype that is not a string") != 1 ||
			    parse_string(r, &dtype, &dtype_len, true) != 0)
				goto fail;
		} else if (same(key, key_len, "shape")) {
			if (once(r, &seen_shape, at, name, "shape") != 0 ||
			    parse_uint_list(r, dims, STREF_MAX_NDIM, &ndim,
			    STREF_SHAPE, "shape", false) != 0)
				goto fail;
			if (ndim > STREF_MAX_NDIM) {
				refuse(r->out, STREF_NDIM, "tensor \"%s\": %zu "
				    "dimensions", name, ndim);
				goto fail;
			}
		} else if (same(key, key_len, "data_offsets")) {
			if (once(r, &seen_off, at, name, "data_offsets") != 0 ||
			    parse_uint_list(r, off, 2, &noff, STREF_OFFSETS,
			    "data_offsets", true) != 0)
				goto fail;
			if (noff != 2) {
				refuse(r->out, STREF_OFFSETS, "tensor \"%s\": "
				    "%zu data_offsets", name, noff);
				goto fail;
			}
		} else if (skip_value(r) != 0) {
			goto fail;
		}
		free(key);
		key = NULL;
		/* 1: another member; 0: the entry's end. */
		if ((c = more(r, '}')) < 0)
			goto fail;
		c = c == 0;
	}
	if (!seen_dtype || !seen_shape || !seen_off) {
		refuse(r->out, STREF_ENTRY, "tensor \"%s\": no %s", name,
		    !seen_dtype ? "dtype" : !seen_shape ? "shape" :
		    "data_offsets");
		goto fail;
	}
	for (k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++)
		if (same(dtype, dtype_len, dtypes[k].name))
			break;
	if (k == sizeof dtypes / sizeof dtypes[0] || dtypes[k].dtype < 0) {
		refuse(r->out, STREF_DTYPE, "tensor \"%s\": dtype \"%s\"%s",
		    name, dtype, k < sizeof dtypes / sizeof dtypes[0] ?
		    " (cowstore has none)" : "");
		goto fail;
	}
	t.dtype = dtypes[k].dtype;
	t.elem_size = dtypes[k].size;
	t.ndim = (int)ndim;
	/* The element count: a product from the left, refused once it
	 * overflows, then in bits (point 4). */
	count = 1;
	for (k = 0; k < ndim; k++) {
		if (dims[k] != 0 && count > UINT64_MAX / dims[k]) {
			refuse(r->out, STREF_OVERFLOW, "tensor \"%s\": the "
			    "element count overflows", name);
			goto fail;
		}
		count *= dims[k];
	}
	if (count > UINT64_MAX / (8 * t.elem_size)) {
		refuse(r->out, STREF_OVERFLOW, "tensor \"%s\": %llu elements "
		    "of %u bytes overflow", name, (unsigned long long)count,
		    t.elem_size);
		goto fail;
	}
	nbytes = count * t.elem_size;
	for (k = 0; k < ndim; k++)
		t.sizes[k] = (int64_t)dims[k];
	t.begin = off[0];
	t.end = off[1];
	if (t.end < t.begin) {
		refuse(r->out, STREF_END_BEFORE_BEGIN, "tensor \"%s\": "
		    "data_offsets [%llu, %llu]", name,
		    (unsigned long long)t.begin, (unsigned long long)t.end);
		goto fail;
	}
	if (t.end - t.begin != nbytes) {
		refuse(r->out, STREF_EXTENT, "tensor \"%s\": extent %llu, "
		    "%llu bytes expected", name,
		    (unsigned long long)(t.end - t.begin),
		    (unsigned long long)nbytes);
		goto fail;
	}
	free(dtype);
	if (add_tensor(r, &t) != 0) {
		free(name);
		return -1;
	}
	return 0;
fail:
	free(key);
	free(dtype);
	free(name);
	return -1;
}

static int
add_meta(struct rd *r, char *key, char *value)
{
	struct stref_file *f = r->out;
	struct stref_meta *grown;
	size_t cap;

	for (size_t k = 0; k < f->nmeta; k++) {
		if (strcmp(f->meta[k].key, key) == 0) {
			refuse(f, STREF_METADATA_DUPLICATE, "metadata key "
			    "\"%s\" twice", key);
			goto fail;
		}
	}
	if (f->nmeta == r->mcap) {
		cap = r->mcap == 0 ? 8 : 2 * r->mcap;
		if ((grown = realloc(f->meta, cap * sizeof *grown)) == NULL) {
			oom(r);
			goto fail;
		}
		f->meta = grown;
		r->mcap = cap;
	}
	f->meta[f->nmeta].key = key;
	f->meta[f->nmeta].value = value;
	f->nmeta++;
	return 0;
fail:
	free(key);
	free(value);
	return -1;
}

/* "__metadata__": an object of strings. */
static int
parse_metadata(struct rd *r)
{
	char *key, *value;
	size_t len;
	int c;

	if (r->seen_metadata)
		return refuse(r->out, STREF_METADATA_DUPLICATE,
		    "header byte %zu: __metadata__ twice", r->i);
	r->seen_metadata = true;
	skip_ws(r);
	if (peek(r) == 'n') /* null: no metadata (point 6) */
		return parse_literal(r, "null") != 0 ? -1 : 0;
	if ((c = open_container(r, '{', STREF_METADATA,
	    "__metadata__ is not an object")) != 0)
		return c < 0 ? -1 : 0;
	do {
		if (parse_key(r, &key, &len, false) != 0)
			return -1;
		if (kind_or_refuse(r, '"', STREF_METADATA,
		    "a metadata value that is not a string") != 1 ||
		    parse_string(r, &value, &len, false) != 0) {
			free(key);
			return -1;
		}
		if (add_meta(r, key, value) != 0)
			return -1;
	} while ((c = more(r, '}')) == 1);
	return c;
}

/* The header: one object, white space around it. */
static int
parse_header(struct rd *r)
{
	char *key;
	size_t len;
	int c;

	skip_ws(r);
	if ((c = open_container(r, '{', STREF_NOT_OBJECT,
	    "the header is not a JSON object")) < 0)
		return -1;
	if (c == 0) {
		do {
			if (parse_key(r, &key, &len, false) != 0)
				return -1;
			if (strcmp(key, "__metadata__") == 0) {
				free(key);
				if (parse_metadata(r) != 0)
					return -1;
			} else if (parse_entry(r, key) != 0) {
				return -1;
			}
		} while ((c = more(r, '}')) == 1);
		if (c < 0)
			return -1;
	}
	skip_ws(r);
	if (r->i != r->n)
		return json_error(r, "white space after the object");
	return 0;
}

static int
compare_names(const void *a, const void *b)
{
	const struct stref_tensor *x = *(const struct stref_tensor *const *)a;
	const struct stref_tensor *y = *(const struct stref_tensor *const *)b;

	return strcmp(x->name, y->name);
}

static int
compare_offsets(const void *a, const void *b)
{
	const struct stref_tensor *x = *(const struct stref_tensor *const *)a;
	const struct stref_tensor *y = *(const struct stref_tensor *const *)b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return 0;
}

/* Duplicate names, then the coverage of the @data bytes of data. */
static int
check_layout(struct rd *r, uint64_t data)
{
	struct stref_file *f = r->out;
	struct stref_tensor **by;
	uint64_t pos = 0;
	size_t k;
	int rc = 0;

	if (f->ntensors == 0)
		goto empty;
	if ((by = malloc(f->ntensors * sizeof *by)) == NULL)
		return oom(r);
	for (k = 0; k < f->ntensors; k++)
		by[k] = &f->tensors[k];
	qsort(by, f->ntensors, sizeof *by, compare_names);
	for (k = 1; k < f->ntensors; k++) {
		if (strcmp(by[k - 1]->name, by[k]->name) == 0) {
			rc = refuse(f, STREF_DUPLICATE_NAME, "tensor \"%s\" "
			    "twice", by[k]->name);
			goto out;
		}
	}
	qsort(by, f->ntensors, sizeof *by, compare_offsets);
	for (k = 0; k < f->ntensors; k++) {
		if (by[k]->begin != pos) {
			rc = refuse(f, STREF_COVERAGE, "tensor \"%s\" begins "
			    "at %llu, the tensors before it end at %llu",
			    by[k]->name, (unsigned long long)by[k]->begin,
			    (unsigned long long)pos);
			goto out;
		}
		pos = by[k]->end;
	}
	if (pos > data)
		rc = refuse(f, STREF_COVERAGE, "the tensors end at %llu, the "
		    "data at %llu", (unsigned long long)pos,
		    (unsigned long long)data);
out:
	free(by);
	if (rc != 0)
		return rc;
empty:
#ifndef STREF_FAULT_ACCEPT_TRAILING
	if (pos < data)
		return refuse(f, STREF_TRAILING, "%llu bytes after the last "
		    "tensor", (unsigned long long)(data - pos));
#endif
	return 0;
}

int
stref_check(const uint8_t *file, size_t size, struct stref_file *out)
{
	struct rd r = { .out = out };
	uint64_t n = 0;
	size_t bad;

	memset(out, 0, sizeof *out);
	out->rule = STREF_VALID;
	if (size < 8) {
		refuse(out, STREF_FILE_TOO_SHORT, "%zu bytes", size);
		return 0;
	}
	for (int k = 7; k >= 0; k--)
		n = n << 8 | file[k];
	if (n > STREF_MAX_HEADER) {
		refuse(out, STREF_HEADER_TOO_LARGE, "N = %llu",
		    (unsigned long long)n);
		return 0;
	}
	if (8 + n > size) {
		refuse(out, STREF_HEADER_PAST_END, "8 + N = %llu, file %zu "
		    "bytes", (unsigned long long)(8 + n), size);
		return 0;
	}
	r.p = file + 8;
	r.n = (size_t)n;
	if ((bad = utf8_check(r.p, r.n)) != r.n) {
		refuse(out, STREF_UTF8, "header byte %zu (0x%02x)", bad,
		    r.p[bad]);
		return 0;
	}
	if (parse_header(&r) == 0 && !r.oom)
		check_layout(&r, size - 8 - n);
	free(r.stack);
	if (r.oom) {
		stref_free(out);
		return -1;
	}
	out->data_start = 8 + n;
	return 0;
}

void
stref_free(struct stref_file *f)
{
	for (size_t k = 0; k < f->ntensors; k++)
		free(f->tensors[k].name);
	for (size_t k = 0; k < f->nmeta; k++) {
		free(f->meta[k].key);
		free(f->meta[k].value);
	}
	free(f->tensors);
	free(f->meta);
	f->tensors = NULL;
	f->meta = NULL;
	f->ntensors = 0;
	f->nmeta = 0;
}
