/*
 * The fifteen dtypes (dtype.h, ops.h): sizes, names and ABI values;
 * storage, views, lazy clones, reshape, copy_ and fill_ for every dtype;
 * copy_ between every pair; add, mul, neg, sum, sum_dim and equal by
 * NumPy's rules; the corner cases of conversion (float16 and bfloat16
 * rounding, NaN, subnormals, uint64 above 2^63, saturation). Expected
 * values are written out here from the rules, as bit patterns where the
 * rule is about bits. tests/dtype/ checks the same rules against NumPy.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include <criterion/criterion.h>

#include <cowstore/ops.h>

#include "cow_test.h"
#include "leak_fixture.h"
#include "tensor_test.h"

TestSuite(dtypes, .init = leak_setup, .fini = leak_teardown, .timeout = 60.0);

#define ALL_DTYPES for (int d_ = 0; d_ < COW_DTYPE_COUNT; d_++)
#define DT ((cow_dtype_t)d_)

static bool
is_complex(cow_dtype_t dt)
{
	return dt == COW_DTYPE_COMPLEX64 || dt == COW_DTYPE_COMPLEX128;
}

static bool
is_unsigned(cow_dtype_t dt)
{
	return dt == COW_DTYPE_UINT8 || dt == COW_DTYPE_UINT16 ||
	    dt == COW_DTYPE_UINT32 || dt == COW_DTYPE_UINT64;
}

static bool
is_int(cow_dtype_t dt)
{
	return is_unsigned(dt) || dt == COW_DTYPE_INT8 ||
	    dt == COW_DTYPE_INT16 || dt == COW_DTYPE_INT32 ||
	    dt == COW_DTYPE_INT64;
}

/* A 1-d tensor of @n elements of @dt from raw bytes. */
static cow_tensor_t *
from_bytes(cow_dtype_t dt, int64_t n, const void *bytes)
{
	cow_tensor_t *t;

	TT_OK(cow_tensor_from_data(dt, 1, &n, bytes, sys, &t));
	return t;
}

/* The bytes of element @k of a 1-d tensor (or of a 0-d one, k = 0), as an
 * unsigned integer (the first 8 bytes of a complex128). */
static uint64_t
raw(const cow_tensor_t *t, int64_t k)
{
	const unsigned char *p = cow_tensor_const_data(t);
	size_t w = cow_dtype_size(cow_tensor_dtype(t));
	uint64_t u = 0;

	cr_assert_not_null(p);
	if (cow_tensor_ndim(t) > 0)  /* a 0-d tensor has no strides */
		p += (k * cow_tensor_strides(t)[0]) * (int64_t)w;
	memcpy(&u, p, w > 8 ? 8 : w);
	return u;
}

/* The (re, im) of the element @k elements past element 0 of a complex
 * tensor. */
static void
cplx(const cow_tensor_t *t, int64_t k, double *re, double *im)
{
	const unsigned char *p = cow_tensor_const_data(t);

	p += k * (int64_t)cow_dtype_size(cow_tensor_dtype(t));
	if (cow_tensor_dtype(t) == COW_DTYPE_COMPLEX64) {
		float f[2];

		memcpy(f, p, 8);
		*re = f[0];
		*im = f[1];
	} else {
		double d[2];

		memcpy(d, p, 16);
		*re = d[0];
		*im = d[1];
	}
}

static double
get1(const cow_tensor_t *t, int64_t k)
{
	double v;

	TT_OK(cow_tensor_get_f64(t, &k, &v));
	return v;
}

static int64_t
geti1(const cow_tensor_t *t, int64_t k)
{
	int64_t v;

	TT_OK(cow_tensor_get_i64(t, &k, &v));
	return v;
}

/* Element bits of @st (@bytes, one element) converted to @dt. */
static uint64_t
conv_raw(cow_dtype_t dt, cow_dtype_t st, const void *bytes)
{
	cow_tensor_t *s = from_bytes(st, 1, bytes), *d;
	int64_t one = 1;
	uint64_t u;

	TT_OK(cow_tensor_empty(dt, 1, &one, sys, &d));
	TT_OK(cow_tensor_copy_(d, s));
	u = raw(d, 0);
	cow_tensor_release(d);
	cow_tensor_release(s);
	return u;
}

/* @x converted to @dt (a one-element copy from float64), as raw bits. */
static uint64_t
conv_f64(cow_dtype_t dt, double x)
{
	return conv_raw(dt, COW_DTYPE_FLOAT64, &x);
}

/* ------------------------------------------------------------------ */

Test(dtypes, abi_values_sizes_names)
{
	static const struct {
		cow_dtype_t dt;
		int value;
		size_t size;
		const char *name;
	} want[] = {
		{COW_DTYPE_BOOL, 0, 1, "bool"},
		{COW_DTYPE_UINT8, 1, 1, "uint8"},
		{COW_DTYPE_INT32, 2, 4, "int32"},
		{COW_DTYPE_INT64, 3, 8, "int64"},
		{COW_DTYPE_FLOAT32, 4, 4, "float32"},
		{COW_DTYPE_FLOAT64, 5, 8, "float64"},
		{COW_DTYPE_INT8, 6, 1, "int8"},
		{COW_DTYPE_INT16, 7, 2, "int16"},
		{COW_DTYPE_UINT16, 8, 2, "uint16"},
		{COW_DTYPE_UINT32, 9, 4, "uint32"},
		{COW_DTYPE_UINT64, 10, 8, "uint64"},
		{COW_DTYPE_FLOAT16, 11, 2, "float16"},
		{COW_DTYPE_BFLOAT16, 12, 2, "bfloat16"},
		{COW_DTYPE_COMPLEX64, 13, 8, "complex64"},
		{COW_DTYPE_COMPLEX128, 14, 16, "complex128"},
	};
	cow_tensor_t *t;

	cr_assert_eq(COW_DTYPE_COUNT, 15);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		cr_assert_eq((int)want[i].dt, want[i].value);
		cr_assert_eq(cow_dtype_size(want[i].dt), want[i].size);
		cr_assert_str_eq(cow_dtype_name(want[i].dt), want[i].name);
	}
	cr_assert_eq(cow_dtype_size((cow_dtype_t)COW_DTYPE_COUNT), 0);
	cr_assert_str_eq(cow_dtype_name((cow_dtype_t)COW_DTYPE_COUNT),
	    "unknown");
	TT_FAILS(cow_tensor_zeros((cow_dtype_t)COW_DTYPE_COUNT, 0, NULL, sys,
	    &t), COW_EINVAL, "unknown dtype 15");
}

/* Storage, views, lazy clone, reshape, copy_ within a dtype: the bytes. */
Test(dtypes, storage_views_clone_reshape_every_dtype)
{
	ALL_DTYPES {
		size_t w = cow_dtype_size(DT);
		unsigned char src[6 * 16], *mut;
		int64_t sz[2] = {2, 3}, n = 6;
		cow_tensor_t *t, *v, *tr, *c, *r, *cp;
		const unsigned char *p;

		/* Bytes that are a valid element in every dtype: bool 0/1. */
		for (size_t k = 0; k < sizeof src; k++)
			src[k] = DT == COW_DTYPE_BOOL ? (unsigned char)(k & 1) :
			    (unsigned char)(k * 7 + 1);
		TT_OK(cow_tensor_from_data(DT, 1, &n, src, sys, &t));
		cr_assert_eq(cow_tensor_dtype(t), DT);
		cr_assert_eq(cow_storage_nbytes(cow_tensor_storage(t)), 6 * w);
		TT_OK(cow_tensor_view(t, 2, sz, &v));
		TT_OK(cow_tensor_transpose(v, 0, 1, &tr));
		/* tr[2][1] is v[1][2], element 5. */
		p = cow_tensor_const_data(tr);
		cr_assert_eq(memcmp(p + (2 * cow_tensor_strides(tr)[0] +
		    cow_tensor_strides(tr)[1]) * (int64_t)w, src + 5 * w, w), 0,
		    "%s", cow_dtype_name(DT));
		/* Lazy clone, then a write through the clone. */
		TT_OK(cow_tensor_lazy_clone(t, &c));
		TT_OK(cow_tensor_fill_(c, 1.0));
		cr_assert_eq(memcmp(cow_tensor_const_data(t), src, 6 * w), 0);
		cr_assert_eq(get1(c, 4), 1.0, "%s", cow_dtype_name(DT));
		/* Reshape of a transpose copies; the copy keeps the bytes. */
		TT_OK(cow_tensor_reshape(tr, 1, (int64_t[]){6}, &r));
		cr_assert_eq(memcmp((const unsigned char *)
		    cow_tensor_const_data(r) + 1 * w, src + 3 * w, w), 0);
		/* copy_ within one dtype copies bytes, from a strided view. */
		TT_OK(cow_tensor_empty(DT, 2, (int64_t[]){3, 2}, sys, &cp));
		TT_OK(cow_tensor_copy_(cp, tr));
		TT_OK(cow_tensor_mutable_data(cp, (void **)&mut));
		cr_assert_eq(memcmp(mut + 5 * w, src + 5 * w, w), 0);
		cr_assert_eq(memcmp(mut + 1 * w, src + 3 * w, w), 0);
		cow_tensor_release(cp);
		cow_tensor_release(r);
		cow_tensor_release(c);
		cow_tensor_release(tr);
		cow_tensor_release(v);
		cow_tensor_release(t);
	}
}

/* copy_ between every pair, from a transposed (strided) source, of values
 * every dtype holds exactly; bool reads non-zero as 1. */
Test(dtypes, copy_every_pair)
{
	static const double vals[6] = {0, 1, 2, 5, 100, 7};

	ALL_DTYPES {
		cow_dtype_t st = DT;
		cow_tensor_t *s, *tr;

		s = tt_from(st, 2, (int64_t[]){2, 3}, vals);
		TT_OK(cow_tensor_transpose(s, 0, 1, &tr));
		for (int d = 0; d < COW_DTYPE_COUNT; d++) {
			cow_tensor_t *dst;
			int64_t idx[2];

			TT_OK(cow_tensor_empty((cow_dtype_t)d, 2,
			    (int64_t[]){3, 2}, sys, &dst));
			TT_OK(cow_tensor_copy_(dst, tr));
			for (int k = 0; k < 6; k++) {
				double want = vals[(k % 2) * 3 + k / 2];

				if (st == COW_DTYPE_BOOL ||
				    d == COW_DTYPE_BOOL)
					want = want != 0;
				idx[0] = k / 2;
				idx[1] = k % 2;
				cr_assert_eq(tt_get(dst, idx), want,
				    "%s -> %s [%d]", cow_dtype_name(st),
				    cow_dtype_name((cow_dtype_t)d), k);
				if (is_complex((cow_dtype_t)d)) {
					double re, im;

					cplx(dst, k, &re, &im);
					cr_assert(re == want && im == 0.0);
				}
			}
			cow_tensor_release(dst);
		}
		cow_tensor_release(tr);
		cow_tensor_release(s);
	}
}

/* fill_, full and scalars: converted once to the dtype. */
Test(dtypes, fill_full_scalars)
{
	cow_tensor_t *t;
	double re, im;
	int64_t n = 2;

	TT_OK(cow_tensor_full(COW_DTYPE_COMPLEX64, 1, &n, 2.5, sys, &t));
	cplx(t, 1, &re, &im);
	cr_assert(re == 2.5 && im == 0.0);
	TT_OK(cow_tensor_add_scalar_(t, 1.0));
	TT_OK(cow_tensor_mul_scalar_(t, 2.0));
	cplx(t, 0, &re, &im);
	cr_assert(re == 7.0 && im == 0.0, "%g %g", re, im);
	cow_tensor_release(t);

	TT_OK(cow_tensor_full(COW_DTYPE_UINT64, 1, &n, 1e30, sys, &t));
	cr_assert_eq(raw(t, 0), UINT64_MAX);
	TT_OK(cow_tensor_fill_(t, -5.0));
	cr_assert_eq(raw(t, 1), 0);
	cow_tensor_release(t);

	TT_OK(cow_tensor_zeros(COW_DTYPE_FLOAT16, 1, &n, sys, &t));
	TT_OK(cow_tensor_fill_(t, 0.1));
	cr_assert_eq(raw(t, 0), 0x2e66);   /* 0.1 to binary16 */
	TT_OK(cow_tensor_add_scalar_(t, 1.0));
	cr_assert_eq(raw(t, 1), 0x3c66);   /* 1.0999755859375 */
	cow_tensor_release(t);

	TT_OK(cow_tensor_zeros(COW_DTYPE_BFLOAT16, 1, &n, sys, &t));
	TT_OK(cow_tensor_fill_(t, 0.1));
	cr_assert_eq(raw(t, 0), 0x3dcd);   /* 0x3dcccccd rounded up */
	cow_tensor_release(t);

	TT_OK(cow_tensor_zeros(COW_DTYPE_INT8, 1, &n, sys, &t));
	TT_OK(cow_tensor_fill_(t, 1000.0));
	cr_assert_eq(geti1(t, 0), 127);
	TT_OK(cow_tensor_add_scalar_(t, 1.0));
	cr_assert_eq(geti1(t, 1), -128);
	cow_tensor_release(t);
}

/* ------------------------------------------------------------------ */
/* Arithmetic.                                                          */

/* cow_tensor_equal: @a equals itself and not @b. */
static void
assert_equals_itself_not(const cow_tensor_t *a, const cow_tensor_t *b)
{
	bool eq;

	TT_OK(cow_tensor_equal(a, a, &eq));
	cr_assert(eq);
	TT_OK(cow_tensor_equal(a, b, &eq));
	cr_assert(!eq);
}

/* add, mul, neg, sum, sum_dim, equal on small values in every dtype. */
Test(dtypes, arithmetic_every_dtype)
{
	static const double a[6] = {0, 1, 2, 3, 4, 5};
	static const double b[6] = {5, 4, 3, 2, 1, 0};

	ALL_DTYPES {
		cow_tensor_t *ta, *tb, *r, *s;
		int64_t sz[2] = {2, 3};

		if (DT == COW_DTYPE_BOOL)
			continue;
		ta = tt_from(DT, 2, sz, a);
		tb = tt_from(DT, 2, sz, b);
		TT_OK(cow_tensor_add(ta, tb, &r));
		for (int64_t k = 0; k < 6; k++)
			cr_assert_eq(tt_get(r, (int64_t[]){k / 3, k % 3}), 5,
			    "%s", cow_dtype_name(DT));
		cow_tensor_release(r);
		TT_OK(cow_tensor_mul(ta, tb, &r));
		for (int64_t k = 0; k < 6; k++)
			cr_assert_eq(tt_get(r, (int64_t[]){k / 3, k % 3}),
			    a[k] * b[k], "%s", cow_dtype_name(DT));
		cow_tensor_release(r);
		TT_OK(cow_tensor_neg(ta, &r));
		cr_assert_eq(cow_tensor_dtype(r), DT);
		for (int64_t k = 1; k < 6; k++) {
			int64_t idx[2] = {k / 3, k % 3};

			if (!is_unsigned(DT))
				cr_assert_eq(tt_get(r, idx), -a[k]);
			else if (DT == COW_DTYPE_UINT64)
				cr_assert_eq(tt_geti(r, idx), -(int64_t)k);
			else
				cr_assert_eq(tt_geti(r, idx), (int64_t)((1ull <<
				    (8 * cow_dtype_size(DT))) - (uint64_t)k),
				    "%s", cow_dtype_name(DT));
		}
		cow_tensor_release(r);
		TT_OK(cow_tensor_sum(ta, &s));
		cr_assert_eq(tt_get(s, NULL), 15.0);
		cow_tensor_release(s);
		TT_OK(cow_tensor_sum_dim(ta, 0, true, &s));
		tt_assert_shape(s, 2, (int64_t[]){1, 3});
		cr_assert_eq(tt_get(s, (int64_t[]){0, 2}), 7.0);
		cow_tensor_release(s);
		assert_equals_itself_not(ta, tb);
		cow_tensor_release(tb);
		cow_tensor_release(ta);
	}
}

Test(dtypes, sum_result_dtypes)
{
	static const cow_dtype_t to_i64[] = {COW_DTYPE_BOOL, COW_DTYPE_INT8,
	    COW_DTYPE_INT16, COW_DTYPE_INT32, COW_DTYPE_INT64, COW_DTYPE_UINT8};
	static const cow_dtype_t to_u64[] = {COW_DTYPE_UINT16,
	    COW_DTYPE_UINT32, COW_DTYPE_UINT64};
	static const cow_dtype_t same[] = {COW_DTYPE_FLOAT16,
	    COW_DTYPE_BFLOAT16, COW_DTYPE_FLOAT32, COW_DTYPE_FLOAT64,
	    COW_DTYPE_COMPLEX64, COW_DTYPE_COMPLEX128};
	cow_tensor_t *t, *s;
	int64_t n = 3;

	for (size_t i = 0; i < 6; i++) {
		TT_OK(cow_tensor_zeros(to_i64[i], 1, &n, sys, &t));
		TT_OK(cow_tensor_sum(t, &s));
		cr_assert_eq(cow_tensor_dtype(s), COW_DTYPE_INT64);
		cow_tensor_release(s);
		TT_OK(cow_tensor_sum_dim(t, 0, false, &s));
		cr_assert_eq(cow_tensor_dtype(s), COW_DTYPE_INT64);
		cow_tensor_release(s);
		cow_tensor_release(t);
	}
	for (size_t i = 0; i < 3; i++) {
		TT_OK(cow_tensor_zeros(to_u64[i], 1, &n, sys, &t));
		TT_OK(cow_tensor_sum(t, &s));
		cr_assert_eq(cow_tensor_dtype(s), COW_DTYPE_UINT64);
		cow_tensor_release(s);
		cow_tensor_release(t);
	}
	for (size_t i = 0; i < 6; i++) {
		TT_OK(cow_tensor_zeros(same[i], 1, &n, sys, &t));
		TT_OK(cow_tensor_sum_dim(t, 0, true, &s));
		cr_assert_eq(cow_tensor_dtype(s), same[i]);
		cow_tensor_release(s);
		cow_tensor_release(t);
	}
}

Test(dtypes, integer_wrap)
{
	int8_t i8[2] = {127, -128};
	int16_t i16[2] = {300, 300};
	uint16_t u16[2] = {65535, 65535};
	uint32_t u32[2] = {UINT32_MAX, 1};
	uint64_t u64[2] = {1ull << 63, 1ull << 63};
	cow_tensor_t *t, *r, *o;

	t = from_bytes(COW_DTYPE_INT8, 2, i8);
	TT_OK(cow_tensor_add(t, t, &r));
	cr_assert(geti1(r, 0) == -2 && geti1(r, 1) == 0);
	cow_tensor_release(r);
	TT_OK(cow_tensor_neg(t, &r));
	cr_assert(geti1(r, 0) == -127 && geti1(r, 1) == -128);
	cow_tensor_release(r);
	cow_tensor_release(t);

	t = from_bytes(COW_DTYPE_INT16, 2, i16);
	TT_OK(cow_tensor_mul(t, t, &r));
	cr_assert_eq(geti1(r, 0), 90000 - 65536);
	cow_tensor_release(r);
	cow_tensor_release(t);

	t = from_bytes(COW_DTYPE_UINT16, 2, u16);
	TT_OK(cow_tensor_mul(t, t, &r));  /* no int overflow: 1 mod 2^16 */
	cr_assert_eq(geti1(r, 0), 1);
	cow_tensor_release(r);
	TT_OK(cow_tensor_sum(t, &r));     /* uint64, no wrap at 16 bits */
	cr_assert_eq(geti1(r, 0), 131070);
	cow_tensor_release(r);
	cow_tensor_release(t);

	t = from_bytes(COW_DTYPE_UINT32, 2, u32);
	TT_OK(cow_tensor_sum(t, &r));
	cr_assert_eq(raw(r, 0), (uint64_t)UINT32_MAX + 1);
	cow_tensor_release(r);
	o = from_bytes(COW_DTYPE_UINT32, 1, &u32[1]);
	TT_OK(cow_tensor_add(t, o, &r));
	cr_assert(raw(r, 0) == 0 && raw(r, 1) == 2);
	cow_tensor_release(r);
	cow_tensor_release(o);
	cow_tensor_release(t);

	t = from_bytes(COW_DTYPE_UINT64, 2, u64);
	TT_OK(cow_tensor_sum(t, &r));
	cr_assert_eq(raw(r, 0), 0);
	cow_tensor_release(r);
	cow_tensor_release(t);
}

/* bool: add is or, mul is and; neg refused. */
Test(dtypes, bool_rules_kept)
{
	uint8_t v[2] = {0, 1};
	cow_tensor_t *t = from_bytes(COW_DTYPE_BOOL, 2, v), *r;

	TT_FAILS(cow_tensor_neg(t, &r), COW_EDTYPE, "bool");
	cow_tensor_release(t);
}

/* float16 and bfloat16 sums accumulate in float32, rounded once. */
Test(dtypes, half_sums_accumulate_in_float32)
{
	cow_tensor_t *one, *e, *s, *v;
	uint16_t h = 0x3c00, b = 0x3f80;
	int64_t n = 3000, m = 300, sz[2] = {2, 300};

	one = from_bytes(COW_DTYPE_FLOAT16, 1, &h);
	TT_OK(cow_tensor_expand(one, 1, &n, &e));
	TT_OK(cow_tensor_sum(e, &s));
	/* Stepwise float16 addition would stop at 2048. */
	cr_assert_eq(raw(s, 0), 0x69dc, "%llx",
	    (unsigned long long)raw(s, 0));    /* 3000 */
	cow_tensor_release(s);
	cow_tensor_release(e);
	cow_tensor_release(one);

	one = from_bytes(COW_DTYPE_BFLOAT16, 1, &b);
	TT_OK(cow_tensor_expand(one, 1, &m, &e));
	TT_OK(cow_tensor_sum(e, &s));
	cr_assert_eq(get1(s, 0), 300.0);      /* stepwise: 256 */
	cow_tensor_release(s);
	/* sum_dim over a non-contiguous expanded view, keepdim. */
	TT_OK(cow_tensor_expand(one, 2, sz, &v));
	TT_OK(cow_tensor_sum_dim(v, 1, true, &s));
	tt_assert_shape(s, 2, (int64_t[]){2, 1});
	cr_assert_eq(tt_get(s, (int64_t[]){1, 0}), 300.0);
	cow_tensor_release(s);
	cow_tensor_release(v);
	cow_tensor_release(e);
	cow_tensor_release(one);
}

Test(dtypes, half_ops_round_to_dtype)
{
	/* 2048 + 1 = 2049 in float32, a tie in float16: even (2048). */
	uint16_t x[2] = {0x6800, 0x3c00}, y = 0x3c01, z[1];
	cow_tensor_t *t = from_bytes(COW_DTYPE_FLOAT16, 2, x), *r, *u;

	TT_OK(cow_tensor_sum(t, &r));
	cr_assert_eq(raw(r, 0), 0x6800);
	cow_tensor_release(r);
	/* (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20: to even 1 + 2^-9. */
	u = from_bytes(COW_DTYPE_FLOAT16, 1, &y);
	TT_OK(cow_tensor_mul(u, u, &r));
	cr_assert_eq(raw(r, 0), 0x3c02);
	cow_tensor_release(r);
	TT_OK(cow_tensor_neg(u, &r));
	cr_assert_eq(raw(r, 0), 0xbc01);
	cow_tensor_release(r);
	cow_tensor_release(u);
	cow_tensor_release(t);
	/* bfloat16: 1 + 1/256 rounds to 1 (tie, even); 1 + 3/256 up. */
	z[0] = 0x3f80;
	t = from_bytes(COW_DTYPE_BFLOAT16, 1, z);
	TT_OK(cow_tensor_add_scalar_(t, 1.0 / 256));
	cr_assert_eq(raw(t, 0), 0x3f80);
	TT_OK(cow_tensor_add_scalar_(t, 3.0 / 256));
	cr_assert_eq(raw(t, 0), 0x3f82);
	cow_tensor_release(t);
}

Test(dtypes, complex_arithmetic)
{
	float a[4] = {1, 2, INFINITY, INFINITY};
	float b[4] = {3, 4, 1, 0};
	double c[2] = {0.1, -0.0};
	cow_tensor_t *ta = from_bytes(COW_DTYPE_COMPLEX64, 2, a);
	cow_tensor_t *tb = from_bytes(COW_DTYPE_COMPLEX64, 2, b), *r, *s;
	double re, im;
	bool eq;

	TT_OK(cow_tensor_mul(ta, tb, &r));
	cplx(r, 0, &re, &im);
	cr_assert(re == -5 && im == 10, "%g %g", re, im);
	/* (inf + inf i)(1 + 0i) by the formula: inf - inf*0 and inf*0 +
	 * inf: both NaN (C's Annex G would recover infinities). */
	cplx(r, 1, &re, &im);
	cr_assert(isnan(re) && isnan(im), "%g %g", re, im);
	cow_tensor_release(r);
	TT_OK(cow_tensor_add(ta, tb, &r));
	cplx(r, 0, &re, &im);
	cr_assert(re == 4 && im == 6);
	cow_tensor_release(r);
	TT_OK(cow_tensor_neg(tb, &r));
	cplx(r, 1, &re, &im);
	cr_assert(re == -1 && im == 0 && signbit(im));
	cow_tensor_release(r);
	TT_OK(cow_tensor_sum(ta, &s));
	cplx(s, 0, &re, &im);
	cr_assert(isinf(re) && isinf(im) && re > 0);
	cow_tensor_release(s);
	/* equal: both parts; -0 == 0; NaN unequal. */
	assert_equals_itself_not(ta, tb);
	cow_tensor_release(tb);
	b[0] = 1;
	b[1] = 3;
	tb = from_bytes(COW_DTYPE_COMPLEX64, 2, b);
	{
		cow_tensor_t *x, *y;

		TT_OK(cow_tensor_narrow(ta, 0, 0, 1, &x));
		TT_OK(cow_tensor_narrow(tb, 0, 0, 1, &y));
		TT_OK(cow_tensor_equal(x, y, &eq));   /* (1,2) vs (1,3) */
		cr_assert(!eq);
		cow_tensor_release(y);
		cow_tensor_release(x);
	}
	cow_tensor_release(tb);
	cow_tensor_release(ta);
	{
		double z0[2] = {-0.0, 0.0}, z1[2] = {0.0, -0.0};
		double n0[2] = {NAN, 0.0};
		cow_tensor_t *p = from_bytes(COW_DTYPE_COMPLEX128, 1, z0);
		cow_tensor_t *q = from_bytes(COW_DTYPE_COMPLEX128, 1, z1);
		cow_tensor_t *nn = from_bytes(COW_DTYPE_COMPLEX128, 1, n0);

		TT_OK(cow_tensor_equal(p, q, &eq));
		cr_assert(eq);
		TT_OK(cow_tensor_equal(nn, nn, &eq));
		cr_assert(!eq);
		cow_tensor_release(nn);
		cow_tensor_release(q);
		cow_tensor_release(p);
	}
	/* complex128 -> complex64 part by part; -> real: the real part. */
	cr_assert_eq(conv_raw(COW_DTYPE_COMPLEX64, COW_DTYPE_COMPLEX128, c) &
	    0xffffffffu, 0x3dcccccdu);
	cr_assert_eq(conv_raw(COW_DTYPE_COMPLEX64, COW_DTYPE_COMPLEX128, c) >>
	    32, 0x80000000u);
	cr_assert_eq(conv_raw(COW_DTYPE_FLOAT64, COW_DTYPE_COMPLEX128, c),
	    0x3fb999999999999aull);
	{
		double im1[2] = {0.0, 1.0}, z[2] = {-0.0, 0.0};
		float f = 2.5f;

		cr_assert_eq(conv_raw(COW_DTYPE_BOOL, COW_DTYPE_COMPLEX128,
		    im1), 1);
		cr_assert_eq(conv_raw(COW_DTYPE_BOOL, COW_DTYPE_COMPLEX128, z),
		    0);
		cr_assert_eq(conv_raw(COW_DTYPE_INT8, COW_DTYPE_COMPLEX128,
		    im1), 0);
		cr_assert_eq(conv_raw(COW_DTYPE_COMPLEX64, COW_DTYPE_FLOAT32,
		    &f), 0x40200000u);
	}
}

/* ------------------------------------------------------------------ */
/* Conversion corner cases.                                             */

Test(dtypes, float16_rounding)
{
	/* Ties to even at 1 (ulp 2^-10). */
	cr_assert_eq(conv_f64(COW_DTYPE_FLOAT16, 1 + 0x1p-11), 0x3c00);
	cr_assert_eq(conv_f64(COW_DTYPE_FLOAT16, 1 + 0x3p-11), 0x3c02);
	/* Rounded once from double: just above the tie goes up (through
	 * float32 it would be the tie, then even). */
	cr_assert_eq(conv_f64(COW_DTYPE_FLOAT16, 1 + 0x1p-11 + 0x1p-40),
	    0x3c01);
	/* Largest finite, the overflow threshold (65520 is the tie). */
	cr_assert_eq(conv_f64(COW_DTYPE_FLOAT16, 65504), 0x7bff);
	cr_assert_eq(conv_f64(COW_DTYPE_FLOAT16, 65519.99), 0x7bff);
	cr_assert_eq(conv_f64(COW_DTYPE_FLOAT16, 65520), 0x7c00);
	cr_assert_eq(conv_f64(COW_DTYPE_FLOAT16, -1e300), 0xfc00);
	cr_assert_eq(conv_f64(COW_DTYPE_FLOAT16, INFINITY), 0x7c00);
	/* Subnormals: 2^-24 is the smallest; half of it ties to 0. */
	cr_assert_eq(conv_f64(COW_DTYPE_FLOAT16, 0x1p-24), 0x0001);
	cr_assert_eq(conv_f64(COW_DTYPE_FLOAT16, 0x1p-25), 0x0000);
	cr_assert_eq(conv_f64(COW_DTYPE_FLOAT16, 0x3p-26), 0x0001);
	cr_assert_eq(conv_f64(COW_DTYPE_FLOAT16, 0x3p-25), 0x0002);
	cr_assert_eq(conv_f64(COW_DTYPE_FLOAT16, 0x3ffp-24), 0x03ff);
	cr_assert_eq(conv_f64(COW_DTYPE_FLOAT16, 0x7ffp-25), 0x0400);
	cr_assert_eq(conv_f64(COW_DTYPE_FLOAT16, -0x1p-30), 0x8000);
	/* -0, NaN kept with its sign, quiet. */
	cr_assert_eq(conv_f64(COW_DTYPE_FLOAT16, -0.0), 0x8000);
	cr_assert_eq(conv_f64(COW_DTYPE_FLOAT16, NAN), 0x7e00);
	cr_assert_eq(conv_f64(COW_DTYPE_FLOAT16, -NAN), 0xfe00);
	/* From integers, exactly: 2049 ties to 2048, 2051 to 2052. */
	{
		int64_t i[3] = {2049, 2051, INT64_MIN};

		cr_assert_eq(conv_raw(COW_DTYPE_FLOAT16, COW_DTYPE_INT64, &i[0]),
		    0x6800);
		cr_assert_eq(conv_raw(COW_DTYPE_FLOAT16, COW_DTYPE_INT64, &i[1]),
		    0x6802);
		cr_assert_eq(conv_raw(COW_DTYPE_FLOAT16, COW_DTYPE_INT64, &i[2]),
		    0xfc00);
	}
	/* And back: exact. */
	{
		uint16_t h[3] = {0x0001, 0x7bff, 0xfe00};
		cow_tensor_t *t = from_bytes(COW_DTYPE_FLOAT16, 3, h);

		cr_assert_eq(get1(t, 0), 0x1p-24);
		cr_assert_eq(get1(t, 1), 65504.0);
		cr_assert(isnan(get1(t, 2)) && signbit(get1(t, 2)));
		cow_tensor_release(t);
	}
}

Test(dtypes, bfloat16_rounding)
{
	uint32_t snan = 0x7f800001u, qnan = 0xffc12345u, big = 0x7f7fffffu;
	uint32_t tie = 0x3f808000u, above = 0x3f818000u;

	cr_assert_eq(conv_raw(COW_DTYPE_BFLOAT16, COW_DTYPE_FLOAT32, &tie),
	    0x3f80);
	cr_assert_eq(conv_raw(COW_DTYPE_BFLOAT16, COW_DTYPE_FLOAT32, &above),
	    0x3f82);
	/* Largest finite; FLT_MAX is above its rounding threshold. */
	cr_assert_eq(conv_f64(COW_DTYPE_BFLOAT16, 0x1.fep127), 0x7f7f);
	cr_assert_eq(conv_raw(COW_DTYPE_BFLOAT16, COW_DTYPE_FLOAT32, &big),
	    0x7f80);
	cr_assert_eq(conv_f64(COW_DTYPE_BFLOAT16, -1e300), 0xff80);
	/* A NaN stays a NaN (truncating 0x7f800001 would give infinity),
	 * quiet, with its sign and top payload bits. */
	cr_assert_eq(conv_raw(COW_DTYPE_BFLOAT16, COW_DTYPE_FLOAT32, &snan),
	    0x7fc0);
	cr_assert_eq(conv_raw(COW_DTYPE_BFLOAT16, COW_DTYPE_FLOAT32, &qnan),
	    0xffc1);
	/* Subnormals. */
	cr_assert_eq(conv_f64(COW_DTYPE_BFLOAT16, 0x1p-133), 0x0001);
	cr_assert_eq(conv_f64(COW_DTYPE_BFLOAT16, 0x1p-134), 0x0000);
	cr_assert_eq(conv_f64(COW_DTYPE_BFLOAT16, 0x1.8p-134), 0x0001);
	cr_assert_eq(conv_f64(COW_DTYPE_BFLOAT16, -0.0), 0x8000);
	/* Once from double: 1 + 2^-8 + 2^-30 goes up (via float32 it is the
	 * tie, then even). */
	cr_assert_eq(conv_f64(COW_DTYPE_BFLOAT16, 1 + 0x1p-8 + 0x1p-30),
	    0x3f81);
	/* Once from int64: 2^62 + 2^54 + 1 goes up (through double the +1
	 * is lost and the tie goes to even). */
	{
		int64_t i = (int64_t)0x4040000000000001;
		uint64_t u = 0x8080000000000001u;

		cr_assert_eq(conv_raw(COW_DTYPE_BFLOAT16, COW_DTYPE_INT64, &i),
		    0x5e81);
		cr_assert_eq(conv_raw(COW_DTYPE_BFLOAT16, COW_DTYPE_UINT64,
		    &u), 0x5f01);
	}
}

Test(dtypes, uint64_and_int64_limits)
{
	uint64_t u[3] = {UINT64_MAX, (1ull << 63) + 1, 0xfffffffffffff801u};
	int64_t imin = INT64_MIN, one = 1;
	cow_tensor_t *t = from_bytes(COW_DTYPE_UINT64, 3, u), *d, *r;

	/* uint64 -> uint64 and -> int64 keep the bits. */
	TT_OK(cow_tensor_empty(COW_DTYPE_INT64, 1, (int64_t[]){3}, sys, &d));
	TT_OK(cow_tensor_copy_(d, t));
	for (int k = 0; k < 3; k++)
		cr_assert_eq(raw(d, k), u[k]);
	cow_tensor_release(d);
	TT_OK(cow_tensor_clone(t, &d));
	cr_assert_eq(raw(d, 2), u[2]);
	cow_tensor_release(d);
	/* get_i64: the bits; get_f64: rounded; set_i64: modulo 2^64. */
	cr_assert_eq(geti1(t, 0), -1);
	cr_assert_eq(geti1(t, 1), INT64_MIN + 1);
	cr_assert_eq(get1(t, 0), 0x1p64);
	TT_OK(cow_tensor_set_i64(t, &one, -2));
	cr_assert_eq(raw(t, 1), UINT64_MAX - 1);
	/* uint64 -> float64 exactly rounded; -> float32 once. */
	cr_assert_eq(conv_raw(COW_DTYPE_FLOAT64, COW_DTYPE_UINT64, &u[2]),
	    0x43efffffffffffffull);  /* 2^64 - 2048, the nearest */
	{
		uint64_t x = 0x8000008000000001u;

		cr_assert_eq(conv_raw(COW_DTYPE_FLOAT32, COW_DTYPE_UINT64, &x),
		    0x5f000001u);    /* up: the +1 breaks the tie */
	}
	/* uint64 sum: modulo 2^64, and neg wraps. */
	TT_OK(cow_tensor_neg(t, &r));
	cr_assert_eq(raw(r, 0), 1);
	cow_tensor_release(r);
	cow_tensor_release(t);
	/* int64 min to narrower integers (mod 2^bits) and to floats. */
	cr_assert_eq(conv_raw(COW_DTYPE_INT8, COW_DTYPE_INT64, &imin), 0);
	cr_assert_eq(conv_raw(COW_DTYPE_UINT64, COW_DTYPE_INT64, &imin),
	    1ull << 63);
	cr_assert_eq(conv_raw(COW_DTYPE_FLOAT64, COW_DTYPE_INT64, &imin),
	    0xc3e0000000000000ull);
	cr_assert_eq(conv_raw(COW_DTYPE_BFLOAT16, COW_DTYPE_INT64, &imin),
	    0xdf00);
	{
		int64_t m1 = -1;
		cow_tensor_t *x = from_bytes(COW_DTYPE_INT64, 1, &m1);
		cow_tensor_t *y;

		TT_OK(cow_tensor_empty(COW_DTYPE_UINT16, 1, &one, sys, &y));
		TT_OK(cow_tensor_copy_(y, x));
		cr_assert_eq(raw(y, 0), 0xffff);
		cow_tensor_release(y);
		cow_tensor_release(x);
	}
}

/* Floating to every integer dtype: truncation, saturation, NaN to 0. */
Test(dtypes, float_to_integer_saturates)
{
	static const double in[8] = {1e30, -1e30, NAN, -0.9, 2.7, -2.7,
	    INFINITY, -INFINITY};

	ALL_DTYPES {
		cow_tensor_t *s, *d;
		int bits = (int)cow_dtype_size(DT) * 8;
		int64_t lo, hi;

		if (!is_int(DT))
			continue;
		s = from_bytes(COW_DTYPE_FLOAT64, 8, in);
		TT_OK(cow_tensor_empty(DT, 1, (int64_t[]){8}, sys, &d));
		TT_OK(cow_tensor_copy_(d, s));
		if (is_unsigned(DT)) {
			lo = 0;
			hi = bits == 64 ? -1 : (int64_t)((1ull << bits) - 1);
		} else {
			lo = bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
			hi = bits == 64 ? INT64_MAX :
			    ((int64_t)1 << (bits - 1)) - 1;
		}
		cr_assert_eq(geti1(d, 0), hi, "%s", cow_dtype_name(DT));
		cr_assert_eq(geti1(d, 1), lo, "%s", cow_dtype_name(DT));
		cr_assert_eq(geti1(d, 2), 0);
		cr_assert_eq(geti1(d, 3), 0);
		cr_assert_eq(geti1(d, 4), 2);
		cr_assert_eq(geti1(d, 5), is_unsigned(DT) ? 0 : -2,
		    "%s", cow_dtype_name(DT));
		cr_assert_eq(geti1(d, 6), hi);
		cr_assert_eq(geti1(d, 7), lo);
		cow_tensor_release(d);
		cow_tensor_release(s);
	}
	/* uint64: 2^64 saturates; the largest double below it is exact. */
	cr_assert_eq(conv_f64(COW_DTYPE_UINT64, 0x1p64), UINT64_MAX);
	cr_assert_eq(conv_f64(COW_DTYPE_UINT64, 0x1.fffffffffffffp63),
	    0xfffffffffffff800u);
	cr_assert_eq(conv_f64(COW_DTYPE_INT64, 0x1p63), (uint64_t)INT64_MAX);
	cr_assert_eq(conv_f64(COW_DTYPE_INT32, -2147483648.9),
	    (uint32_t)INT32_MIN);
	/* float16 to uint8: 300 saturates. */
	{
		uint16_t h = 0x5cb0; /* 300 */

		cr_assert_eq(conv_raw(COW_DTYPE_UINT8, COW_DTYPE_FLOAT16, &h),
		    255);
	}
}
