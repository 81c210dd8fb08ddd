/*
 * The new dtypes through the functionalization layer: the same programs
 * on plain tensors, functional strided tensors and the opaque backend must
 * give the same values (functional_test.h), which are also stated here:
 * float16/bfloat16 sums in float32, their ops rounded to the dtype,
 * complex multiplication by NumPy's formula, integer wrapping. A complex
 * value's imaginary part is read as the real part of z * -i.
 */
#include <math.h>

#include "functional_test.h"

TestSuite(functional, .timeout = 60.0);

static cow_tensor_t *
bytes(cow_dtype_t dt, int64_t n, const void *p)
{
	cow_tensor_t *t;

	TT_OK(cow_tensor_from_data(dt, 1, &n, p, NULL, &t));
	return t;
}

/* The imaginary parts of @z (complex), as a new real tensor of z's
 * dtype's component width: real(z * -i). */
static cow_tensor_t *
imag_part(const cow_tensor_t *z)
{
	double mi[2] = {0.0, -1.0};
	cow_tensor_t *m, *p, *re;
	cow_dtype_t dt = cow_tensor_dtype(z);

	TT_OK(cow_tensor_from_data(COW_DTYPE_COMPLEX128, 0, NULL, mi, NULL,
	    &m));
	if (dt == COW_DTYPE_COMPLEX64) {
		cow_tensor_t *m64;

		TT_OK(cow_tensor_empty(dt, 0, NULL, NULL, &m64));
		TT_OK(cow_tensor_copy_(m64, m));
		cow_tensor_release(m);
		m = m64;
	}
	TT_OK(cow_tensor_mul(z, m, &p));
	TT_OK(cow_tensor_empty(COW_DTYPE_FLOAT64, cow_tensor_ndim(p),
	    cow_tensor_sizes(p), NULL, &re));
	TT_OK(cow_tensor_copy_(re, p));
	cow_tensor_release(p);
	cow_tensor_release(m);
	return re;
}

static void
prog_half(struct run *r)
{
	cow_tensor_t *h, *s, *b, *v;
	uint16_t x[2] = {0x3c01, 0x6800};   /* 1 + 2^-10, 2048 */

	TT_OK(cow_tensor_full(COW_DTYPE_FLOAT16, 2, (int64_t[]){2, 1500},
	    1.0, NULL, &h));
	TT_OK(cow_tensor_sum_dim(h, 1, false, &s));
	expect(r, "f16 row sums", s, (double[]){1500, 1500});
	cow_tensor_release(s);
	TT_OK(cow_tensor_sum(h, &s));
	expect(r, "f16 sum", s, (double[]){3000});
	cow_tensor_release(s);
	cow_tensor_release(h);
	v = bytes(COW_DTYPE_FLOAT16, 2, x);
	TT_OK(cow_tensor_mul(v, v, &s));          /* 1 + 2^-9; 2^22: inf */
	expect(r, "f16 squares", s, (double[]){1 + 0x1p-9, INFINITY});
	cow_tensor_release(s);
	/* 2 + 2^-10 and 2049 are ties: to even, 2 and 2048. */
	TT_OK(cow_tensor_add_scalar_(v, 1.0));
	expect(r, "f16 plus one", v, (double[]){2, 2048});
	cow_tensor_release(v);
	TT_OK(cow_tensor_full(COW_DTYPE_BFLOAT16, 1, (int64_t[]){3}, 1.0,
	    NULL, &b));
	TT_OK(cow_tensor_add_scalar_(b, 3.0 / 256));
	expect(r, "bf16", b, (double[]){1 + 2.0 / 128, 1 + 2.0 / 128,
	    1 + 2.0 / 128});
	cow_tensor_release(b);
}

Test(functional, half_dtypes_agree)
{
	run3(prog_half);
}

static void
prog_complex(struct run *r)
{
	float a[4] = {1, 2, 0.1f, 3}, b[4] = {3, 4, 7, 0.1f};
	cow_tensor_t *ta = bytes(COW_DTYPE_COMPLEX64, 2, a);
	cow_tensor_t *tb = bytes(COW_DTYPE_COMPLEX64, 2, b), *p, *im, *s;

	TT_OK(cow_tensor_mul(ta, tb, &p));
	emit(r, "re(a*b)", p);
	cr_assert_eq(tt_get(p, (int64_t[]){0}), -5.0);
	im = imag_part(p);
	emit(r, "im(a*b)", im);
	cr_assert_eq(tt_get(im, (int64_t[]){0}), 10.0);
	cow_tensor_release(im);
	TT_OK(cow_tensor_sum(p, &s));
	im = imag_part(s);
	emit(r, "im(sum)", im);
	cow_tensor_release(im);
	cow_tensor_release(s);
	TT_OK(cow_tensor_neg(tb, &s));
	im = imag_part(s);
	expect(r, "im(-b)", im, (double[]){-4, -0.1f});
	cow_tensor_release(im);
	cow_tensor_release(s);
	cow_tensor_release(p);
	cow_tensor_release(tb);
	cow_tensor_release(ta);
}

Test(functional, complex_agrees)
{
	run3(prog_complex);
}

static void
prog_ints(struct run *r)
{
	uint64_t u[2] = {UINT64_MAX, 5};
	cow_tensor_t *t, *n, *s, *i8;
	int64_t v;

	t = bytes(COW_DTYPE_UINT64, 2, u);
	TT_OK(cow_tensor_neg(t, &n));
	TT_OK(cow_tensor_get_i64(n, (int64_t[]){0}, &v));
	cr_assert_eq(v, 1);
	TT_OK(cow_tensor_get_i64(n, (int64_t[]){1}, &v));
	cr_assert_eq(v, -5);                      /* 2^64 - 5, as int64 */
	TT_OK(cow_tensor_sum(t, &s));             /* 2^64 + 4 mod 2^64 */
	expect(r, "uint64 sum", s, (double[]){4});
	cow_tensor_release(s);
	cow_tensor_release(n);
	cow_tensor_release(t);
	TT_OK(cow_tensor_full(COW_DTYPE_INT8, 1, (int64_t[]){2}, 127, NULL,
	    &i8));
	TT_OK(cow_tensor_add_scalar_(i8, 1));
	expect(r, "int8 wrap", i8, (double[]){-128, -128});
	cow_tensor_release(i8);
}

Test(functional, integer_dtypes_agree)
{
	run3(prog_ints);
}
