/*
 * tensor_model.c - the naive reference of fuzz_tensor (tensor_model.h).
 */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tensor_model.h"

__extension__ typedef __int128 i128;

/* Every int64 and uint64 is exact in long double (x86: 64-bit mantissa). */
_Static_assert(LDBL_MANT_DIG >= 64, "long double holds 64-bit integers");

bool
tm_is_float(cow_dtype_t dtype)
{
	return dtype == COW_DTYPE_FLOAT16 || dtype == COW_DTYPE_BFLOAT16 ||
	    dtype == COW_DTYPE_FLOAT32 || dtype == COW_DTYPE_FLOAT64;
}

bool
tm_is_complex(cow_dtype_t dtype)
{
	return dtype == COW_DTYPE_COMPLEX64 || dtype == COW_DTYPE_COMPLEX128;
}

bool
tm_is_unsigned(cow_dtype_t dtype)
{
	return dtype == COW_DTYPE_UINT8 || dtype == COW_DTYPE_UINT16 ||
	    dtype == COW_DTYPE_UINT32 || dtype == COW_DTYPE_UINT64;
}

bool
tm_dtype_valid(int dtype)
{
	return dtype >= 0 && dtype < COW_DTYPE_COUNT;
}

int64_t
tm_dtype_size(cow_dtype_t dtype)
{
	switch (dtype) {
	case COW_DTYPE_BOOL:
	case COW_DTYPE_UINT8:
	case COW_DTYPE_INT8:
		return 1;
	case COW_DTYPE_INT16:
	case COW_DTYPE_UINT16:
	case COW_DTYPE_FLOAT16:
	case COW_DTYPE_BFLOAT16:
		return 2;
	case COW_DTYPE_INT32:
	case COW_DTYPE_UINT32:
	case COW_DTYPE_FLOAT32:
		return 4;
	case COW_DTYPE_COMPLEX128:
		return 16;
	default:
		return 8;
	}
}

/* Bits of an integer dtype (bool: 1). */
static int
int_bits(cow_dtype_t dtype)
{
	switch (dtype) {
	case COW_DTYPE_BOOL:
		return 1;
	case COW_DTYPE_INT8:
	case COW_DTYPE_UINT8:
		return 8;
	case COW_DTYPE_INT16:
	case COW_DTYPE_UINT16:
		return 16;
	case COW_DTYPE_INT32:
	case COW_DTYPE_UINT32:
		return 32;
	default:
		return 64;
	}
}

/* Integers modulo 2^bits, from a 64-bit two's complement value. */
static int64_t
wrap_int(cow_dtype_t dtype, uint64_t u)
{
	int bits = int_bits(dtype);
	uint64_t m;

	if (dtype == COW_DTYPE_BOOL)
		return u != 0;
	if (bits == 64)
		return (int64_t)u;
	m = u & ((UINT64_C(1) << bits) - 1);
	if (!tm_is_unsigned(dtype) && (m >> (bits - 1)))
		return (int64_t)m - ((int64_t)1 << (bits - 1)) * 2;
	return (int64_t)m;
}

/* A floating format: precision (with the implicit bit) and exponents. */
struct fmt {
	int p, emin, emax;
};

static struct fmt
fmt_of(cow_dtype_t dtype)
{
	switch (dtype) {
	case COW_DTYPE_FLOAT16:
		return (struct fmt){11, -14, 15};
	case COW_DTYPE_BFLOAT16:
		return (struct fmt){8, -126, 127};
	case COW_DTYPE_FLOAT32:
	case COW_DTYPE_COMPLEX64:
		return (struct fmt){24, -126, 127};
	default:
		return (struct fmt){53, -1022, 1023};
	}
}

/* The exact @x rounded to nearest, ties to even, in format @f: one ulp at
 * @x's exponent (or the smallest subnormal's) is a power of two q, and
 * rintl(x / q) * q is exact in long double. */
static double
round_fmt(struct fmt f, long double x)
{
	long double q, r, max;
	int e;

	if (isnan(x))
		return (double)x;
	if (isinf(x) || x == 0)
		return (double)x;
	(void)frexpl(fabsl(x), &e);   /* |x| in [2^(e-1), 2^e) */
	e -= 1;
	if (e < f.emin)
		e = f.emin;
	q = ldexpl(1.0L, e - (f.p - 1));
	r = rintl(x / q) * q;
	max = ldexpl(2.0L - ldexpl(1.0L, 1 - f.p), f.emax);
	if (fabsl(r) > max)
		return x < 0 ? -INFINITY : INFINITY;
	return (double)r;
}

/* Floating to integer: truncation, saturation at the dtype's limits, NaN
 * to 0 (in long double, which holds every limit exactly). */
static int64_t
saturate(cow_dtype_t dtype, long double x)
{
	int bits = int_bits(dtype);
	long double lo, hi, t;

	if (isnan(x))
		return 0;
	if (tm_is_unsigned(dtype)) {
		lo = 0;
		hi = ldexpl(1.0L, bits) - 1;
	} else {
		lo = -ldexpl(1.0L, bits - 1);
		hi = ldexpl(1.0L, bits - 1) - 1;
	}
	t = truncl(x);
	if (t < lo)
		t = lo;
	if (t > hi)
		t = hi;
	if (t >= ldexpl(1.0L, 63))
		return (int64_t)(uint64_t)t;   /* uint64 above INT64_MAX */
	return (int64_t)t;
}

/* The exact (re, im) value of any dtype to @dtype. */
static tm_value_t
from_exact(cow_dtype_t dtype, long double re, long double im)
{
	tm_value_t v = {0, 0.0, 0.0};

	if (dtype == COW_DTYPE_BOOL)
		v.i = re != 0 || im != 0; /* NaN != 0 */
	else if (tm_is_float(dtype))
		v.f = round_fmt(fmt_of(dtype), re);
	else if (tm_is_complex(dtype)) {
		v.f = round_fmt(fmt_of(dtype), re);
		v.im = round_fmt(fmt_of(dtype), im);
	} else
		v.i = saturate(dtype, re);
	return v;
}

tm_value_t
tm_from_double(cow_dtype_t dtype, double x)
{
	return from_exact(dtype, x, 0);
}

tm_value_t
tm_from_int(cow_dtype_t dtype, int64_t x)
{
	if (tm_is_float(dtype) || tm_is_complex(dtype))
		return from_exact(dtype, (long double)x, 0);
	return (tm_value_t){wrap_int(dtype, (uint64_t)x), 0.0, 0.0};
}

tm_value_t
tm_convert(cow_dtype_t from, tm_value_t v, cow_dtype_t to)
{
	if (tm_is_complex(from))
		return from_exact(to, v.f, v.im);
	if (tm_is_float(from))  /* a real value's imaginary part is +0 */
		return from_exact(to, v.f, 0);
	if (from == COW_DTYPE_UINT64 && v.i < 0 &&
	    (tm_is_float(to) || tm_is_complex(to)))
		return from_exact(to, (long double)(uint64_t)v.i, 0);
	return tm_from_int(to, v.i);
}

/* The precision the ops of @dtype compute in (ops.h): double for float64
 * and complex128, float for the others (float16 and bfloat16 compute in
 * float32, then round to the dtype). */
static bool
wide(cow_dtype_t dtype)
{
	return dtype == COW_DTYPE_FLOAT64 || dtype == COW_DTYPE_COMPLEX128;
}

/* a + b and a * b in that precision. In double they are C's double
 * operations; in float, the exact long double result of two floats (or a
 * 64-bit rounding of it, which rounds to the same float: 64 >= 2 * 24 + 2)
 * rounded to float. */
static double
op_add(cow_dtype_t dtype, double a, double b)
{
	if (wide(dtype))
		return a + b;
	return round_fmt(fmt_of(COW_DTYPE_FLOAT32), (long double)a + b);
}

static double
op_mul(cow_dtype_t dtype, double a, double b)
{
	if (wide(dtype))
		return a * b;
	return round_fmt(fmt_of(COW_DTYPE_FLOAT32), (long double)a * b);
}

tm_value_t
tm_add(cow_dtype_t dtype, tm_value_t a, tm_value_t b)
{
	tm_value_t r = {0, 0.0, 0.0};

	if (dtype == COW_DTYPE_BOOL)
		r.i = a.i || b.i;
	else if (tm_is_float(dtype))
		r.f = round_fmt(fmt_of(dtype), op_add(dtype, a.f, b.f));
	else if (tm_is_complex(dtype)) {
		r.f = op_add(dtype, a.f, b.f);
		r.im = op_add(dtype, a.im, b.im);
	} else
		r.i = wrap_int(dtype, (uint64_t)a.i + (uint64_t)b.i);
	return r;
}

tm_value_t
tm_mul(cow_dtype_t dtype, tm_value_t a, tm_value_t b)
{
	tm_value_t r = {0, 0.0, 0.0};

	if (dtype == COW_DTYPE_BOOL)
		r.i = a.i && b.i;
	else if (tm_is_float(dtype))
		r.f = round_fmt(fmt_of(dtype), op_mul(dtype, a.f, b.f));
	else if (tm_is_complex(dtype)) {
		/* (ac - bd) + (ad + bc)i, every step rounded (ops.h). */
		double ac = op_mul(dtype, a.f, b.f);
		double bd = op_mul(dtype, a.im, b.im);
		double ad = op_mul(dtype, a.f, b.im);
		double bc = op_mul(dtype, a.im, b.f);

		r.f = op_add(dtype, ac, -bd);
		r.im = op_add(dtype, ad, bc);
	} else
		r.i = wrap_int(dtype, (uint64_t)a.i * (uint64_t)b.i);
	return r;
}

tm_value_t
tm_neg(cow_dtype_t dtype, tm_value_t a)
{
	tm_value_t r = {0, 0.0, 0.0};

	if (tm_is_float(dtype))
		r.f = -a.f;
	else if (tm_is_complex(dtype)) {
		r.f = -a.f;
		r.im = -a.im;
	} else
		r.i = wrap_int(dtype, 0 - (uint64_t)a.i);
	return r;
}

/* a / b in the op precision (as op_add; a quotient of two floats in 64
 * bits rounds to the same float as the exact one: 64 >= 2 * 24 + 2). */
static double
op_div(cow_dtype_t dtype, double a, double b)
{
	if (wide(dtype))
		return a / b;
	return round_fmt(fmt_of(COW_DTYPE_FLOAT32), (long double)a / b);
}

bool
tm_binop_defined(enum tm_binop op, cow_dtype_t dtype)
{
	bool integer = !tm_is_float(dtype) && !tm_is_complex(dtype) &&
	    dtype != COW_DTYPE_BOOL;

	switch (op) {
	case TM_SUB:
		return dtype != COW_DTYPE_BOOL;
	case TM_DIV:
		return true;
	case TM_FLOOR_DIV:
	case TM_MOD:
		return integer || tm_is_float(dtype);
	default:
		return true;
	}
}

cow_dtype_t
tm_binop_dtype(enum tm_binop op, cow_dtype_t dtype)
{
	if (op >= TM_EQ)
		return COW_DTYPE_BOOL;
	if (op == TM_DIV && !tm_is_float(dtype) && !tm_is_complex(dtype))
		return COW_DTYPE_FLOAT64;
	return dtype;
}

/* Real floor division or modulo (ops.h): the remainder fmod(a, b)
 * (exact), moved to b's sign; the quotient (a - r) / b, less one when r
 * moved, to the nearest integer, a zero with a / b's sign. */
static double
model_divmod(cow_dtype_t dt, double a, double b, bool want_mod)
{
	double r = fmod(a, b), m = r, q, f;
	bool moved = false;

	if (b == 0)
		return want_mod ? r : op_div(dt, a, b);
	if (r != 0) {
		if ((b < 0) != (r < 0)) {
			m = op_add(dt, r, b);
			moved = true;
		}
	} else {
		m = copysign(0.0, b);
	}
	if (want_mod)
		return m;
	q = op_div(dt, op_add(dt, a, -r), b);
	if (moved)
		q = op_add(dt, q, -1.0);
	if (q == 0)
		return copysign(0.0, op_div(dt, a, b));
	f = floor(q);
	if (q - f > 0.5)
		f += 1;
	return f;
}

/* Complex a / b: Smith's method, each step in the op precision. */
static void
model_cdiv(cow_dtype_t dt, tm_value_t a, tm_value_t b, tm_value_t *r)
{
	double br = fabs(b.f), bi = fabs(b.im), q, den, sc;

	if (br >= bi && br == 0 && bi == 0) {
		r->f = op_div(dt, a.f, br);
		r->im = op_div(dt, a.im, br);
	} else if (br >= bi) {
		q = op_div(dt, b.im, b.f);
		den = op_add(dt, b.f, op_mul(dt, b.im, q));
		sc = op_div(dt, 1.0, den);
		r->f = op_mul(dt, op_add(dt, a.f, op_mul(dt, a.im, q)), sc);
		r->im = op_mul(dt, op_add(dt, a.im, -op_mul(dt, a.f, q)), sc);
	} else {
		q = op_div(dt, b.f, b.im);
		den = op_add(dt, b.im, op_mul(dt, b.f, q));
		sc = op_div(dt, 1.0, den);
		r->f = op_mul(dt, op_add(dt, op_mul(dt, a.f, q), a.im), sc);
		r->im = op_mul(dt, op_add(dt, op_mul(dt, a.im, q), -a.f), sc);
	}
}

/* a < b (or a <= b) of one dtype: integers by value (uint64 by its bits,
 * unsigned), reals as doubles, complex values lexicographically with
 * NaN imaginary parts keeping the real parts from deciding. */
static bool
model_less(cow_dtype_t dt, tm_value_t a, tm_value_t b, bool or_eq)
{
	if (dt == COW_DTYPE_UINT64)
		return or_eq ? (uint64_t)a.i <= (uint64_t)b.i :
		    (uint64_t)a.i < (uint64_t)b.i;
	if (!tm_is_float(dt) && !tm_is_complex(dt))
		return or_eq ? a.i <= b.i : a.i < b.i;
	if (tm_is_float(dt))
		return or_eq ? a.f <= b.f : a.f < b.f;
	if (a.f < b.f && !isnan(a.im) && !isnan(b.im))
		return true;
	return a.f == b.f && (or_eq ? a.im <= b.im : a.im < b.im);
}

tm_value_t
tm_binop(enum tm_binop op, cow_dtype_t dt, tm_value_t a, tm_value_t b)
{
	tm_value_t r = {0, 0.0, 0.0};
	bool integer = !tm_is_float(dt) && !tm_is_complex(dt);

	switch (op) {
	case TM_EQ:
		r.i = tm_equal_elem(dt, a, b);
		return r;
	case TM_NE:
		r.i = !tm_equal_elem(dt, a, b);
		return r;
	case TM_LT:
		r.i = model_less(dt, a, b, false);
		return r;
	case TM_LE:
		r.i = model_less(dt, a, b, true);
		return r;
	case TM_GT:
		r.i = model_less(dt, b, a, false);
		return r;
	case TM_GE:
		r.i = model_less(dt, b, a, true);
		return r;
	case TM_SUB:
		if (integer)
			r.i = wrap_int(dt, (uint64_t)a.i - (uint64_t)b.i);
		else if (tm_is_float(dt))
			r.f = round_fmt(fmt_of(dt), op_add(dt, a.f, -b.f));
		else {
			r.f = op_add(dt, a.f, -b.f);
			r.im = op_add(dt, a.im, -b.im);
		}
		return r;
	case TM_DIV:
		if (tm_is_complex(dt))
			model_cdiv(dt, a, b, &r);
		else if (tm_is_float(dt))
			r.f = round_fmt(fmt_of(dt), op_div(dt, a.f, b.f));
		else    /* bool and integers: both as float64, then / */
			r.f = tm_convert(dt, a, COW_DTYPE_FLOAT64).f /
			    tm_convert(dt, b, COW_DTYPE_FLOAT64).f;
		return r;
	default:
		break;
	}
	/* floor_div, mod */
	if (tm_is_float(dt)) {
		r.f = round_fmt(fmt_of(dt), model_divmod(dt, a.f, b.f,
		    op == TM_MOD));
	} else if (tm_is_unsigned(dt)) {
		uint64_t x = (uint64_t)a.i, y = (uint64_t)b.i;

		r.i = y == 0 ? 0 : wrap_int(dt, op == TM_MOD ? x % y : x / y);
	} else if (b.i == 0) {
		r.i = 0;
	} else {
		i128 x = a.i, y = b.i, q = x / y;

		if (x % y != 0 && (x < 0) != (y < 0))
			q--;
		r.i = wrap_int(dt, (uint64_t)(op == TM_MOD ? x - q * y : q));
	}
	return r;
}

cow_dtype_t
tm_sum_dtype(cow_dtype_t dtype)
{
	if (tm_is_float(dtype) || tm_is_complex(dtype))
		return dtype;
	if (tm_is_unsigned(dtype) && dtype != COW_DTYPE_UINT8)
		return COW_DTYPE_UINT64;
	return COW_DTYPE_INT64;
}

cow_dtype_t
tm_sum_acc_dtype(cow_dtype_t dtype)
{
	if (dtype == COW_DTYPE_FLOAT16 || dtype == COW_DTYPE_BFLOAT16)
		return COW_DTYPE_FLOAT32;
	return tm_sum_dtype(dtype);
}

/* float16: 1 sign, 5 exponent (bias 15), 10 fraction bits. */
static double
f16_value(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	double x;

	if (e == 0x1f)
		x = m != 0 ? NAN : INFINITY;
	else if (e == 0)
		x = ldexp(m, -24);
	else
		x = ldexp(m + 1024, e - 25);
	return (h & 0x8000) ? -x : x;
}

static uint16_t
f16_bits(double x)
{
	uint16_t s = signbit(x) ? 0x8000 : 0;
	int e;
	double m;

	x = fabs(x);
	if (isnan(x))
		return s | 0x7e00;
	if (isinf(x))
		return s | 0x7c00;
	if (x < 0x1p-14)                       /* zero or subnormal */
		return s | (uint16_t)ldexp(x, 24);
	m = frexp(x, &e);                      /* x = m * 2^e, m in [0.5, 1) */
	return s | (uint16_t)((e + 14) << 10) |
	    (uint16_t)(ldexp(m, 11) - 1024);
}

tm_value_t
tm_decode(cow_dtype_t dtype, const void *p)
{
	tm_value_t v = {0, 0.0, 0.0};
	const unsigned char *b = p;
	uint64_t u = 0;
	uint32_t w;
	uint16_t h;
	float f[2];
	double d[2];
	int n;

	switch (dtype) {
	case COW_DTYPE_FLOAT16:
		memcpy(&h, b, 2);
		v.f = f16_value(h);
		break;
	case COW_DTYPE_BFLOAT16:
		memcpy(&h, b, 2);
		w = (uint32_t)h << 16;         /* the top half of binary32 */
		memcpy(f, &w, 4);
		v.f = f[0];
		break;
	case COW_DTYPE_FLOAT32:
		memcpy(f, b, 4);
		v.f = f[0];
		break;
	case COW_DTYPE_FLOAT64:
		memcpy(d, b, 8);
		v.f = d[0];
		break;
	case COW_DTYPE_COMPLEX64:
		memcpy(f, b, 8);
		v.f = f[0];
		v.im = f[1];
		break;
	case COW_DTYPE_COMPLEX128:
		memcpy(d, b, 16);
		v.f = d[0];
		v.im = d[1];
		break;
	default:
		/* Integers: little-endian bytes (x86), then wrapped (signed types
		 * sign-extend, bool reads non-zero as true). */
		n = (int)tm_dtype_size(dtype);
		for (int k = n - 1; k >= 0; k--)
			u = u << 8 | b[k];
		v.i = wrap_int(dtype, u);
		break;
	}
	return v;
}

void
tm_encode(cow_dtype_t dtype, void *p, tm_value_t v)
{
	unsigned char *b = p;
	uint16_t h;
	uint32_t w;
	float f[2];
	double d[2] = {v.f, v.im};

	switch (dtype) {
	case COW_DTYPE_FLOAT16:
		h = f16_bits(v.f);
		memcpy(b, &h, 2);
		break;
	case COW_DTYPE_BFLOAT16:
		f[0] = (float)v.f;             /* exact: a bfloat16 value */
		memcpy(&w, f, 4);
		h = (uint16_t)(w >> 16);
		memcpy(b, &h, 2);
		break;
	case COW_DTYPE_FLOAT32:
		f[0] = (float)v.f;
		memcpy(b, f, 4);
		break;
	case COW_DTYPE_FLOAT64:
		memcpy(b, d, 8);
		break;
	case COW_DTYPE_COMPLEX64:
		f[0] = (float)v.f;
		f[1] = (float)v.im;
		memcpy(b, f, 8);
		break;
	case COW_DTYPE_COMPLEX128:
		memcpy(b, d, 16);
		break;
	default:
		for (int k = 0; k < (int)tm_dtype_size(dtype); k++)
			b[k] = (unsigned char)((uint64_t)v.i >> (8 * k));
		break;
	}
}

bool
tm_equal_elem(cow_dtype_t dtype, tm_value_t a, tm_value_t b)
{
	if (tm_is_float(dtype) || tm_is_complex(dtype))
		return a.f == b.f && a.im == b.im;
	return a.i == b.i;
}

static bool
same_double(double a, double b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	return a == b && signbit(a) == signbit(b);
}

bool
tm_same(cow_dtype_t dtype, tm_value_t a, tm_value_t b)
{
	if (tm_is_float(dtype))
		return same_double(a.f, b.f);
	if (tm_is_complex(dtype))
		return same_double(a.f, b.f) && same_double(a.im, b.im);
	return a.i == b.i;
}

int64_t
tm_numel(const struct tm_layout *l)
{
	int64_t n = 1;

	for (int d = 0; d < l->ndim; d++)
		if (l->sizes[d] == 0)
			return 0;
	for (int d = 0; d < l->ndim; d++) {
		if (l->sizes[d] < 0 || n > INT64_MAX / l->sizes[d])
			return -1;
		n *= l->sizes[d];
	}
	return n;
}

void
tm_contiguous_strides(struct tm_layout *l)
{
	int64_t s = 1;

	/* Empty tensors may have huge sizes: strides then stop growing
	 * (they are never compared when there are no elements). */
	for (int d = l->ndim - 1; d >= 0; d--) {
		l->strides[d] = s;
		if (l->sizes[d] > 1 && __builtin_mul_overflow(s, l->sizes[d],
		    &s))
			s = 1;
	}
}

bool
tm_is_contiguous(const struct tm_layout *l)
{
	int64_t s = 1;

	if (tm_numel(l) == 0)
		return true;
	for (int d = l->ndim - 1; d >= 0; d--) {
		if (l->sizes[d] == 1)
			continue;
		if (l->strides[d] != s)
			return false;
		s *= l->sizes[d];
	}
	return true;
}

int64_t
tm_pos(const struct tm_layout *l, int64_t k)
{
	int64_t p = l->offset;

	for (int d = l->ndim - 1; d >= 0; d--) {
		p += (k % l->sizes[d]) * l->strides[d];
		k /= l->sizes[d];
	}
	return p;
}

static int
cmp_pos(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

bool
tm_overlaps(const struct tm_layout *l)
{
	int64_t n = tm_numel(l), *pos;
	bool dup = false;

	if (n < 2)
		return false;
	if ((pos = malloc((size_t)n * sizeof *pos)) == NULL)
		abort();
	for (int64_t k = 0; k < n; k++)
		pos[k] = tm_pos(l, k);
	qsort(pos, (size_t)n, sizeof *pos, cmp_pos);
	for (int64_t k = 1; k < n && !dup; k++)
		dup = pos[k] == pos[k - 1];
	free(pos);
	return dup;
}

bool
tm_wrap_dim(int64_t dim, int n, int *out)
{
	if (dim < -n || dim >= n)
		return false;
	*out = (int)(dim < 0 ? dim + n : dim);
	return true;
}

void
tm_init(struct tm_model *m)
{
	memset(m, 0, sizeof *m);
}

void
tm_fini(struct tm_model *m)
{
	for (int i = 0; i < TM_SLOTS; i++)
		free(m->b[i].v);
	memset(m, 0, sizeof *m);
}

int
tm_free_slot(const struct tm_model *m)
{
	for (int i = 0; i < TM_SLOTS; i++)
		if (!m->t[i].live)
			return i;
	return -1;
}

int
tm_pick_live(const struct tm_model *m, unsigned k)
{
	unsigned n = 0;

	for (int i = 0; i < TM_SLOTS; i++)
		n += m->t[i].live;
	if (n == 0)
		return -1;
	k %= n;
	for (int i = 0; i < TM_SLOTS; i++)
		if (m->t[i].live && k-- == 0)
			return i;
	return -1;
}

int
tm_base_new(struct tm_model *m, cow_dtype_t dtype, int64_t n)
{
	for (int i = 0; i < TM_SLOTS; i++) {
		if (m->b[i].live)
			continue;
		free(m->b[i].v);
		m->b[i].v = calloc(n > 0 ? (size_t)n : 1, sizeof(tm_value_t));
		if (m->b[i].v == NULL)
			return -1;
		m->b[i].live = true;
		m->b[i].dtype = dtype;
		m->b[i].n = n;
		return i;
	}
	return -1;
}

void
tm_tensor_set(struct tm_model *m, int slot, int base,
    const struct tm_layout *l)
{
	m->t[slot].live = true;
	m->t[slot].base = base;
	m->t[slot].l = *l;
}

void
tm_tensor_drop(struct tm_model *m, int slot)
{
	int base = m->t[slot].base;

	m->t[slot].live = false;
	for (int i = 0; i < TM_SLOTS; i++)
		if (m->t[i].live && m->t[i].base == base)
			return;
	m->b[base].live = false;
}

tm_value_t
tm_get(const struct tm_model *m, int slot, int64_t k)
{
	const struct tm_tensor *t = &m->t[slot];

	return m->b[t->base].v[tm_pos(&t->l, k)];
}

void
tm_set(struct tm_model *m, int slot, int64_t k, tm_value_t v)
{
	const struct tm_tensor *t = &m->t[slot];

	m->b[t->base].v[tm_pos(&t->l, k)] = v;
}

cow_dtype_t
tm_dtype(const struct tm_model *m, int slot)
{
	return m->b[m->t[slot].base].dtype;
}

/* ------------------------------------------------------------------ */
/* Shape rules.                                                         */

void
tm_unravel(const struct tm_layout *l, int64_t k, int64_t *idx)
{
	for (int d = l->ndim - 1; d >= 0; d--) {
		idx[d] = k % l->sizes[d];
		k /= l->sizes[d];
	}
}

/* Does the byte size of the non-zero (and non-negative) @sizes exceed the
 * storage maximum? *zero: some size is 0 (the tensor is empty anyway). */
bool
tm_bytes_overflow(int ndim, const int64_t *sizes, int64_t esize, bool *zero)
{
	i128 n = 1;
	bool over = false;

	*zero = false;
	for (int d = 0; d < ndim; d++) {
		if (sizes[d] == 0)
			*zero = true;
		else if (!over && sizes[d] > 0) {
			n *= sizes[d];
			if (n * esize > (i128)PTRDIFF_MAX)
				over = true;
		}
	}
	return over;
}

bool
tm_same_shape(const struct tm_layout *a, const struct tm_layout *b)
{
	if (a->ndim != b->ndim)
		return false;
	for (int d = 0; d < a->ndim; d++)
		if (a->sizes[d] != b->sizes[d])
			return false;
	return true;
}

/* Broadcast two shapes (aligned at the last dimension). */
bool
tm_broadcast(const struct tm_layout *a, const struct tm_layout *b,
    struct tm_layout *out)
{
	int n = a->ndim > b->ndim ? a->ndim : b->ndim;

	memset(out, 0, sizeof *out);
	out->ndim = n;
	for (int d = 0; d < n; d++) {
		int da = d - (n - a->ndim), db = d - (n - b->ndim);
		int64_t sa = da >= 0 ? a->sizes[da] : 1;
		int64_t sb = db >= 0 ? b->sizes[db] : 1;

		if (sa != sb && sa != 1 && sb != 1)
			return false;
		out->sizes[d] = sa == 1 ? sb : sa;
	}
	tm_contiguous_strides(out);
	return true;
}

/* Element @k (row-major over @shape) of slot @src broadcast to @shape. */
tm_value_t
tm_get_broadcast(const struct tm_model *m, int src,
    const struct tm_layout *shape, int64_t k)
{
	const struct tm_layout *l = &m->t[src].l;
	int64_t idx[TM_MAX_NDIM], j = 0;

	tm_unravel(shape, k, idx);
	for (int d = 0; d < l->ndim; d++) {
		int64_t i = idx[d + shape->ndim - l->ndim];

		j = j * l->sizes[d] + (l->sizes[d] == 1 ? 0 : i);
	}
	return tm_get(m, src, j);
}

/*
 * View rule of the reference: @l's elements in row-major order, laid out
 * with @sizes, must sit at offset + sum(index * stride) for some
 * non-negative strides. Fills @out on success.
 */
bool
tm_affine_view(const struct tm_layout *l, int ndim, const int64_t *sizes,
    struct tm_layout *out)
{
	int64_t n = tm_numel(l), base, unit = 1;

	memset(out, 0, sizeof *out);
	out->ndim = ndim;
	memcpy(out->sizes, sizes, (size_t)ndim * sizeof *sizes);
	tm_contiguous_strides(out);
	out->offset = l->offset;
	if (n == 0)
		return true;
	base = tm_pos(l, 0);
	out->offset = base;
	for (int d = ndim - 1; d >= 0; d--) {
		if (sizes[d] > 1) {
			out->strides[d] = tm_pos(l, unit) - base;
			if (out->strides[d] < 0)
				return false;
		}
		unit *= sizes[d];
	}
	for (int64_t k = 0; k < n; k++)
		if (tm_pos(out, k) != tm_pos(l, k))
			return false;
	return true;
}

void
tm_remove_dim(struct tm_layout *l, int d)
{
	for (int i = d; i < l->ndim - 1; i++) {
		l->sizes[i] = l->sizes[i + 1];
		l->strides[i] = l->strides[i + 1];
	}
	l->ndim--;
}

/* View shapes: one entry may be -1. Returns the allowed errors; fills
 * @shape with the inferred sizes when there are none. */
unsigned
tm_view_shape(const struct tm_layout *l, int ndim, const int64_t *sizes,
    int64_t *shape, bool *ambiguous, unsigned *also_ok)
{
	int infer = -1;
	i128 p = 1;
	int64_t n = tm_numel(l);
	bool zero, bad = false, empty = false;

	*ambiguous = false;
	*also_ok = 0;
	if (ndim >= 0 && ndim <= TM_MAX_NDIM &&
	    tm_bytes_overflow(ndim, sizes, 1, &zero))
		*also_ok = TM_S(COW_EOVERFLOW); /* e.g. [0, 2^62, 4] */
	if (ndim < 0 || ndim > TM_MAX_NDIM)
		return TM_S(COW_ERANGE);
	for (int d = 0; d < ndim; d++) {
		shape[d] = sizes[d];
		if (sizes[d] == -1) {
			if (infer >= 0)
				bad = true;
			infer = d;
		} else if (sizes[d] < 0) {
			bad = true;
		} else if (p <= (i128)INT64_MAX) {
			p *= sizes[d];
		}
		empty = empty || sizes[d] == 0;
	}
	/* A 0 among the given sizes makes their product 0, whatever the
	 * others are (however large, in whatever order). */
	if (empty)
		p = 0;
	if (bad) {
		/* A bad size; the other sizes may be wrong as well, and
		 * the library may see that first. */
		return TM_S(COW_EINVAL) | *also_ok |
		    (p != n ? TM_S(COW_ESHAPE) : 0);
	}
	if (infer >= 0) {
		if (p == 0) {
			*ambiguous = true;
			return TM_S(COW_EINVAL) | TM_S(COW_ESHAPE);
		}
		if (p > (i128)INT64_MAX || n % (int64_t)p != 0)
			return TM_S(COW_ESHAPE) | TM_S(COW_EOVERFLOW);
		shape[infer] = n / (int64_t)p;
		return 0;
	}
	if (p != n)
		return TM_S(COW_ESHAPE) | (p > (i128)INT64_MAX ?
		    TM_S(COW_EOVERFLOW) : 0);
	return 0;
}
