/*
 * The binary ops of issue 39 (sub, div, floor_div, mod and the
 * comparisons eq, ne, lt, le, gt, ge): values worked out by hand from
 * ops.h's rules, the dtypes each op refuses, and the three worlds (plain,
 * functional strided, functional opaque: functional_test.h) agreeing on
 * broadcast, transposed and in-place programs.
 */
#include <math.h>

#include "functional_test.h"

TestSuite(binops, .timeout = 60.0);

typedef cow_status_t (*bin_fn)(const cow_tensor_t *, const cow_tensor_t *,
    cow_tensor_t **);

static const int64_t n6[] = {6};
static const double A6[] = {-7, 7, -7, 7, 0, 5};
static const double B6[] = {2, 2, -2, -2, 3, 0};

/* op(A6, B6) in @dtype must be @want (and of dtype @rdt). */
static void
check6(bin_fn fn, cow_dtype_t dtype, cow_dtype_t rdt, const double *want)
{
	cow_tensor_t *a = tt_from(dtype, 1, n6, A6);
	cow_tensor_t *b = tt_from(dtype, 1, n6, B6);
	cow_tensor_t *r;

	TT_OK(fn(a, b, &r));
	cr_assert_eq(cow_tensor_dtype(r), rdt);
	tt_assert_shape(r, 1, n6);
	for (int64_t k = 0; k < 6; k++) {
		double v = tt_get(r, &k);

		cr_assert(v == want[k] || (isnan(v) && isnan(want[k])),
		    "%s [%lld]: %g, want %g", cow_dtype_name(dtype),
		    (long long)k, v, want[k]);
	}
	cow_tensor_release(a);
	cow_tensor_release(b);
	cow_tensor_release(r);
}

Test(binops, integer_floor_div_mod_sub)
{
	static const cow_dtype_t ints[] = {COW_DTYPE_INT8, COW_DTYPE_INT16,
	    COW_DTYPE_INT32, COW_DTYPE_INT64};
	static const double sub[] = {-9, 5, -5, 9, -3, 5};
	/* Rounded toward minus infinity; by zero: 0. */
	static const double fdiv[] = {-4, 3, 3, -4, 0, 0};
	/* The divisor's sign; by zero: 0. */
	static const double mod[] = {1, 1, -1, -1, 0, 0};

	for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
		check6(cow_tensor_sub, ints[i], ints[i], sub);
		check6(cow_tensor_floor_div, ints[i], ints[i], fdiv);
		check6(cow_tensor_mod, ints[i], ints[i], mod);
	}
}

Test(binops, float_div_floor_div_mod)
{
	static const cow_dtype_t fl[] = {COW_DTYPE_FLOAT16, COW_DTYPE_BFLOAT16,
	    COW_DTYPE_FLOAT32, COW_DTYPE_FLOAT64};
	static const double div[] = {-3.5, 3.5, 3.5, -3.5, 0, INFINITY};
	static const double fdiv[] = {-4, 3, 3, -4, 0, INFINITY};
	static const double mod[] = {1, 1, -1, -1, 0, NAN};

	for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++) {
		check6(cow_tensor_div, fl[i], fl[i], div);
		check6(cow_tensor_floor_div, fl[i], fl[i], fdiv);
		check6(cow_tensor_mod, fl[i], fl[i], mod);
	}
}

/* a / b of @n raw elements of @dtype each must be @want (float64; NaN
 * where @want is NaN). */
static void
check_div(cow_dtype_t dtype, int64_t n, const void *a, const void *b,
    const double *want)
{
	cow_tensor_t *x, *y, *r;
	const double *q;

	TT_OK(cow_tensor_from_data(dtype, 1, &n, a, NULL, &x));
	TT_OK(cow_tensor_from_data(dtype, 1, &n, b, NULL, &y));
	TT_OK(cow_tensor_div(x, y, &r));
	cr_assert_eq(cow_tensor_dtype(r), COW_DTYPE_FLOAT64, "%s / %s is %s",
	    cow_dtype_name(dtype), cow_dtype_name(dtype),
	    cow_dtype_name(cow_tensor_dtype(r)));
	tt_assert_shape(r, 1, &n);
	q = cow_tensor_const_data(r);
	for (int64_t k = 0; k < n; k++)
		cr_assert(q[k] == want[k] || (isnan(q[k]) && isnan(want[k])),
		    "%s [%lld]: %g, want %g", cow_dtype_name(dtype),
		    (long long)k, q[k], want[k]);
	cow_tensor_release(x);
	cow_tensor_release(y);
	cow_tensor_release(r);
}

/* True division of bool and integers is float64 (NumPy's true_divide):
 * x / 0 is +-inf, 0 / 0 NaN; a bool byte other than 0 or 1 is true. */
Test(binops, integer_true_div)
{
	static const double div[] = {-3.5, 3.5, 3.5, -3.5, 0, INFINITY};
	static const double udiv[] = {3.5, 63.75, 0, INFINITY, NAN, 25};
	static const uint8_t ua[] = {7, 255, 0, 1, 0, 200};
	static const uint8_t ub[] = {2, 4, 3, 0, 0, 8};
	static const uint8_t ba[] = {1, 1, 0, 0, 2, 1};
	static const uint8_t bb[] = {1, 0, 1, 0, 1, 3};
	static const double bdiv[] = {1, INFINITY, 0, NAN, 1, 1};
	uint16_t u16a[6], u16b[6];
	uint32_t u32a[6], u32b[6];
	uint64_t u64a[6], u64b[6];

	check6(cow_tensor_div, COW_DTYPE_INT8, COW_DTYPE_FLOAT64, div);
	check6(cow_tensor_div, COW_DTYPE_INT16, COW_DTYPE_FLOAT64, div);
	check6(cow_tensor_div, COW_DTYPE_INT32, COW_DTYPE_FLOAT64, div);
	check6(cow_tensor_div, COW_DTYPE_INT64, COW_DTYPE_FLOAT64, div);
	check_div(COW_DTYPE_UINT8, 6, ua, ub, udiv);
	for (int k = 0; k < 6; k++) {
		u16a[k] = ua[k];
		u16b[k] = ub[k];
		u32a[k] = ua[k];
		u32b[k] = ub[k];
		u64a[k] = ua[k];
		u64b[k] = ub[k];
	}
	check_div(COW_DTYPE_UINT16, 6, u16a, u16b, udiv);
	check_div(COW_DTYPE_UINT32, 6, u32a, u32b, udiv);
	check_div(COW_DTYPE_UINT64, 6, u64a, u64b, udiv);
	check_div(COW_DTYPE_BOOL, 6, ba, bb, bdiv);
}

/*
 * Large int64, uint64 and uint32 operands convert as C's cast converts
 * them (one rounding to nearest, ties to even, beyond 2^53; the loops
 * compute it another way: loops.c) before the division, on every loop:
 * dense operands, a broadcast divisor, a broadcast dividend (the dense
 * loops), and operands with a stride of 2 (the general one). The values:
 * the rounding boundaries and random values of every magnitude.
 */
#define ROUNDING_N 1001
static int64_t rounding_i64[ROUNDING_N];

static void
rounding_values(void)
{
	static const int64_t edges[] = {INT64_MIN, INT64_MAX, INT64_MIN + 1,
	    (1ll << 53), (1ll << 53) + 1, (1ll << 53) + 2, (1ll << 53) + 3,
	    -(1ll << 53) - 1, -(1ll << 53) - 3, (1ll << 62) + (1ll << 9),
	    (1ll << 62) + (1ll << 9) + 1, (1ll << 62) + 3 * (1ll << 9),
	    -(1ll << 62) - (1ll << 9), 0x7fffffffll, 0x80000000ll,
	    0xffffffffll, 0x100000000ll, 0x1ffffffffll, -0x80000000ll,
	    -0x80000001ll, -0x100000000ll, -1, 0, 1, 3};
	uint64_t state = 0x2545F4914F6CDD1Dull;
	size_t ne = sizeof edges / sizeof edges[0];

	for (size_t i = 0; i < ROUNDING_N; i++) {
		uint64_t x = tt_xorshift64(&state);

		/* Every magnitude: the value shifted right by 0 to 63. */
		rounding_i64[i] = i < ne ? edges[i] :
		    (int64_t)x >> (tt_xorshift64(&state) % 64);
	}
}

/* The quotients C's casts give for rounding_i64 read as @dtype (int64,
 * uint64, or uint32: the low halves), a[k] / b[k * sb] with b =
 * rounding_i64 offset by one, or a[k * sa] / b[k]. */
static double
rounding_want(cow_dtype_t dtype, int64_t x, int64_t y)
{
	if (dtype == COW_DTYPE_INT64)
		return (double)x / (double)y;
	if (dtype == COW_DTYPE_UINT64)
		return (double)(uint64_t)x / (double)(uint64_t)y;
	return (double)(uint32_t)x / (double)(uint32_t)y;
}

static cow_tensor_t *
rounding_tensor(cow_dtype_t dtype, int64_t n, int64_t first)
{
	uint32_t low[ROUNDING_N];
	cow_tensor_t *t;

	if (dtype != COW_DTYPE_UINT32) {
		TT_OK(cow_tensor_from_data(dtype, 1, &n,
		    rounding_i64 + first, NULL, &t));
		return t;
	}
	for (int64_t k = 0; k < n; k++)
		low[k] = (uint32_t)rounding_i64[first + k];
	TT_OK(cow_tensor_from_data(dtype, 1, &n, low, NULL, &t));
	return t;
}

Test(binops, integer_true_div_converts_as_the_cast)
{
	static const cow_dtype_t dts[] = {COW_DTYPE_INT64, COW_DTYPE_UINT64,
	    COW_DTYPE_UINT32};
	const int64_t n = ROUNDING_N - 1, half = n / 2, two = 2;

	rounding_values();
	for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
		cow_dtype_t dt = dts[d];
		cow_tensor_t *a = rounding_tensor(dt, n, 0);
		cow_tensor_t *b = rounding_tensor(dt, n, 1);
		cow_tensor_t *one, *three, *a2, *b2, *r;
		const double *q;

		/* Every value over 1 (the conversion alone) and over 3 (a
		 * broadcast divisor), then a / b. */
		TT_OK(cow_tensor_full(dt, 1, &(int64_t){1}, 1.0, NULL, &one));
		TT_OK(cow_tensor_full(dt, 1, &(int64_t){1}, 3.0, NULL, &three));
		for (int c = -1; c < 4; c++) {
			if (c == -1) {
				TT_OK(cow_tensor_div(a, three, &r));
			} else if (c == 0) {
				TT_OK(cow_tensor_div(a, one, &r));
			} else if (c == 1) {
				TT_OK(cow_tensor_div(a, b, &r));
			} else if (c == 2) {
				/* a[0] over every b: the broadcast dividend. */
				TT_OK(cow_tensor_narrow(a, 0, 0, 1, &a2));
				TT_OK(cow_tensor_div(a2, b, &r));
				cow_tensor_release(a2);
			} else {
				/* Every other element of each (stride 2). */
				TT_OK(cow_tensor_slice(a, 0, 0, n, two, &a2));
				TT_OK(cow_tensor_slice(b, 0, 0, n, two, &b2));
				TT_OK(cow_tensor_div(a2, b2, &r));
				cow_tensor_release(a2);
				cow_tensor_release(b2);
			}
			q = cow_tensor_const_data(r);
			for (int64_t k = 0; k < cow_tensor_numel(r); k++) {
				int64_t i = c == 3 ? 2 * k : k;
				int64_t x = c == 2 ? rounding_i64[0] :
				    rounding_i64[i];
				int64_t y = c == -1 ? 3 : c == 0 ? 1 :
				    rounding_i64[i + 1];
				double want = rounding_want(dt, x, y);

				cr_assert(memcmp(&q[k], &want, 8) == 0 ||
				    (isnan(q[k]) && isnan(want)),
				    "%s case %d [%lld]: %a / %a is %a, "
				    "want %a", cow_dtype_name(dt), c,
				    (long long)k, (double)x, (double)y, q[k],
				    want);
			}
			cr_assert_eq(cow_tensor_numel(r), c == 3 ? half : n);
			cow_tensor_release(r);
		}
		cow_tensor_release(one);
		cow_tensor_release(three);
		cow_tensor_release(a);
		cow_tensor_release(b);
	}
}

/* The same quotients in every world: the opaque backend converts with
 * C's cast (backend_opaque.c), the loops their own way. */
static void
int_div_program(struct run *r)
{
	static const int64_t n = 25, s55[] = {5, 5};
	cow_tensor_t *a, *b, *a55, *b55, *bt, *res;
	int64_t div[25];

	rounding_values();
	TT_OK(cow_tensor_from_data(COW_DTYPE_INT64, 1, &n, rounding_i64, NULL,
	    &a));
	/* Divisors without a zero (0 / 0 is NaN, which the worlds'
	 * comparison would call unequal to itself). */
	for (int k = 0; k < n; k++)
		div[k] = rounding_i64[500 + k] != 0 ? rounding_i64[500 + k] : 7;
	TT_OK(cow_tensor_from_data(COW_DTYPE_INT64, 1, &n, div, NULL, &b));
	TT_OK(cow_tensor_view(a, 2, s55, &a55));
	TT_OK(cow_tensor_view(b, 2, s55, &b55));
	TT_OK(cow_tensor_transpose(b55, 0, 1, &bt));
	TT_OK(cow_tensor_div(a55, bt, &res));
	emit(r, "a/bT", res);
	cow_tensor_release(res);
	TT_OK(cow_tensor_div(a, b, &res));
	emit(r, "a/b", res);
	cow_tensor_release(res);
	cow_tensor_release(a55);
	cow_tensor_release(b55);
	cow_tensor_release(bt);
	cow_tensor_release(a);
	cow_tensor_release(b);
}

Test(binops, integer_true_div_in_every_world)
{
	run3(int_div_program);
}

Test(binops, integer_edges)
{
	static const int64_t n3[] = {3};
	cow_tensor_t *a, *b, *r;
	int64_t k;

	/* int8: -128 // -1 wraps to -128, % -1 is 0. */
	a = tt_from(COW_DTYPE_INT8, 1, n3, (const double[]){-128, -128, 127});
	b = tt_from(COW_DTYPE_INT8, 1, n3, (const double[]){-1, 3, -128});
	TT_OK(cow_tensor_floor_div(a, b, &r));
	tt_assert_values(r, (const double[]){-128, -43, -1});
	cow_tensor_release(r);
	TT_OK(cow_tensor_mod(a, b, &r));
	tt_assert_values(r, (const double[]){0, 1, -1});
	cow_tensor_release(r);
	cow_tensor_release(a);
	cow_tensor_release(b);
	/* uint8 sub wraps; uint64 compares unsigned. */
	a = tt_from(COW_DTYPE_UINT8, 1, n3, (const double[]){3, 0, 255});
	b = tt_from(COW_DTYPE_UINT8, 1, n3, (const double[]){5, 1, 255});
	TT_OK(cow_tensor_sub(a, b, &r));
	tt_assert_values(r, (const double[]){254, 255, 0});
	cow_tensor_release(r);
	cow_tensor_release(a);
	cow_tensor_release(b);
	TT_OK(cow_tensor_empty(COW_DTYPE_UINT64, 1, n3, NULL, &a));
	TT_OK(cow_tensor_zeros(COW_DTYPE_UINT64, 1, n3, NULL, &b));
	k = 0;
	TT_OK(cow_tensor_set_i64(a, &k, -1));  /* 2^64 - 1 */
	k = 1;
	TT_OK(cow_tensor_set_i64(a, &k, 1));
	k = 2;
	TT_OK(cow_tensor_set_i64(a, &k, 0));
	TT_OK(cow_tensor_gt(a, b, &r));
	tt_assert_values(r, (const double[]){1, 1, 0});
	cow_tensor_release(r);
	cow_tensor_release(a);
	cow_tensor_release(b);
}

Test(binops, comparisons)
{
	static const double lt[] = {1, 0, 1, 0, 1, 0};
	static const double le[] = {1, 0, 1, 0, 1, 0};
	static const double gt[] = {0, 1, 0, 1, 0, 1};
	static const double eq[] = {0, 0, 0, 0, 0, 0};
	static const double ne[] = {1, 1, 1, 1, 1, 1};
	static const cow_dtype_t all[] = {COW_DTYPE_INT8, COW_DTYPE_INT16,
	    COW_DTYPE_INT32, COW_DTYPE_INT64, COW_DTYPE_FLOAT16,
	    COW_DTYPE_BFLOAT16, COW_DTYPE_FLOAT32, COW_DTYPE_FLOAT64,
	    COW_DTYPE_COMPLEX64, COW_DTYPE_COMPLEX128};

	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
		check6(cow_tensor_lt, all[i], COW_DTYPE_BOOL, lt);
		check6(cow_tensor_le, all[i], COW_DTYPE_BOOL, le);
		check6(cow_tensor_gt, all[i], COW_DTYPE_BOOL, gt);
		check6(cow_tensor_ge, all[i], COW_DTYPE_BOOL, gt);
		check6(cow_tensor_eq, all[i], COW_DTYPE_BOOL, eq);
		check6(cow_tensor_ne, all[i], COW_DTYPE_BOOL, ne);
	}
}

Test(binops, float_comparisons_nan_and_zero)
{
	static const int64_t n3[] = {3};
	cow_tensor_t *a = tt_from(COW_DTYPE_FLOAT32, 1, n3,
	    (const double[]){NAN, -0.0, 1});
	cow_tensor_t *b = tt_from(COW_DTYPE_FLOAT32, 1, n3,
	    (const double[]){NAN, 0.0, NAN});
	cow_tensor_t *r;

	TT_OK(cow_tensor_eq(a, b, &r));
	tt_assert_values(r, (const double[]){0, 1, 0});
	cow_tensor_release(r);
	TT_OK(cow_tensor_ne(a, b, &r));
	tt_assert_values(r, (const double[]){1, 0, 1});
	cow_tensor_release(r);
	TT_OK(cow_tensor_le(a, b, &r));
	tt_assert_values(r, (const double[]){0, 1, 0});
	cow_tensor_release(r);
	cow_tensor_release(a);
	cow_tensor_release(b);
}

/* A complex128 tensor of @n values (re, im pairs). */
static cow_tensor_t *
cplx(int64_t n, const double *parts)
{
	cow_tensor_t *t;

	TT_OK(cow_tensor_from_data(COW_DTYPE_COMPLEX128, 1, &n, parts, NULL,
	    &t));
	return t;
}

Test(binops, complex_div_and_order)
{
	cow_tensor_t *a = cplx(3, (const double[]){4, 2, 1, 1, 1, NAN});
	cow_tensor_t *b = cplx(3, (const double[]){1, 1, 1, 2, 2, 2});
	cow_tensor_t *c, *r;
	const void *p;
	const double *d;

	/* (4 + 2i) / (1 + i) = 3 - i, exact by Smith's method. */
	TT_OK(cow_tensor_div(a, b, &r));
	TT_OK(cow_tensor_read_data(r, &p));
	d = p;
	cr_assert(d[0] == 3 && d[1] == -1, "%g%+gi", d[0], d[1]);
	cow_tensor_release(r);
	/* Lexicographic; a NaN imaginary part keeps the real parts from
	 * deciding: (1 + nan i) < (2 + 2i) is false. */
	TT_OK(cow_tensor_lt(a, b, &r));
	tt_assert_values(r, (const double[]){0, 1, 0});
	cow_tensor_release(r);
	TT_OK(cow_tensor_gt(a, b, &r));
	tt_assert_values(r, (const double[]){1, 0, 0});
	cow_tensor_release(r);
	/* Division by zero: each part divided by +0. */
	c = cplx(1, (const double[]){0, 0});
	TT_OK(cow_tensor_div(b, c, &r));
	TT_OK(cow_tensor_read_data(r, &p));
	d = p;
	cr_assert(d[0] == INFINITY && d[1] == INFINITY);
	cow_tensor_release(r);
	cow_tensor_release(a);
	cow_tensor_release(b);
	cow_tensor_release(c);
}

static void
refused_program(struct run *r)
{
	static const int64_t n2[] = {2};
	cow_tensor_t *i = tt_arange(COW_DTYPE_INT32, 1, n2, NULL);
	cow_tensor_t *f = tt_arange(COW_DTYPE_FLOAT32, 1, n2, NULL);
	cow_tensor_t *bo, *c, *out = NULL;

	TT_OK(cow_tensor_zeros(COW_DTYPE_BOOL, 1, n2, NULL, &bo));
	TT_OK(cow_tensor_zeros(COW_DTYPE_COMPLEX64, 1, n2, NULL, &c));
	/* The quotient of integers is float64: out of place only. */
	TT_FAILS(cow_tensor_div_(i, i), COW_EDTYPE,
	    "div of dtype int32 writes float64");
	TT_FAILS(cow_tensor_div_(bo, bo), COW_EDTYPE,
	    "div of dtype bool writes float64");
	TT_FAILS(cow_tensor_div_(i, f), COW_EDTYPE, "differ");
	TT_FAILS(cow_tensor_sub(bo, bo, &out), COW_EDTYPE,
	    "sub is not defined for dtype bool");
	TT_FAILS(cow_tensor_sub_(bo, bo), COW_EDTYPE,
	    "sub is not defined for dtype bool");
	TT_FAILS(cow_tensor_floor_div(c, c, &out), COW_EDTYPE,
	    "floor_div is not defined for dtype complex64");
	TT_FAILS(cow_tensor_mod_(bo, bo), COW_EDTYPE,
	    "mod is not defined for dtype bool");
	TT_FAILS(cow_tensor_lt(i, f, &out), COW_EDTYPE, "differ");
	TT_FAILS(cow_tensor_sub_(f, i), COW_EDTYPE, "differ");
	TT_FAILS(cow_tensor_eq(NULL, f, &out), COW_EINVAL, "'a'");
	TT_FAILS(cow_tensor_mod_(NULL, f), COW_EINVAL, "'t'");
	cr_assert_null(out);
	/* Nothing was written. */
	emit(r, "i", i);
	emit(r, "bo", bo);
	cow_tensor_release(i);
	cow_tensor_release(f);
	cow_tensor_release(bo);
	cow_tensor_release(c);
}

Test(binops, refused_in_every_world)
{
	run3(refused_program);
}

/* The dtype worlds_program runs in (functional_test.h's programs take no
 * argument). */
static cow_dtype_t worlds_dtype;

/* Broadcast and transposed operands, in-place ops through a view
 * (written back to its base in the functional worlds). div of int16 is
 * float64. */
static void
worlds_program(struct run *r)
{
	static const int64_t s23[] = {2, 3}, s3[] = {3}, s32[] = {3, 2};
	static const double v23[] = {-5, -1.5, 0.75, 2.25, 7, -3};
	static const double v3[] = {2, -0.5, 4};
	static bin_fn const fns[] = {cow_tensor_sub, cow_tensor_div,
	    cow_tensor_floor_div, cow_tensor_mod, cow_tensor_eq,
	    cow_tensor_ne, cow_tensor_lt, cow_tensor_le, cow_tensor_gt,
	    cow_tensor_ge};
	static const char *const names[] = {"sub", "div", "floor_div", "mod",
	    "eq", "ne", "lt", "le", "gt", "ge"};
	const cow_dtype_t dts[] = {worlds_dtype};
	char name[32];

	for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
		cow_tensor_t *a = tt_from(dts[d], 2, s23, v23);
		cow_tensor_t *b = tt_from(dts[d], 1, s3, v3);
		cow_tensor_t *c = tt_from(dts[d], 2, s32, v23);
		cow_tensor_t *ct, *row, *res;

		TT_OK(cow_tensor_transpose(c, 0, 1, &ct));
		for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++) {
			TT_OK(fns[f](a, b, &res));
			snprintf(name, sizeof name, "%s.%s.ab",
			    cow_dtype_name(dts[d]), names[f]);
			emit(r, name, res);
			cow_tensor_release(res);
			TT_OK(fns[f](ct, a, &res));
			snprintf(name, sizeof name, "%s.%s.ta",
			    cow_dtype_name(dts[d]), names[f]);
			emit(r, name, res);
			cow_tensor_release(res);
		}
		/* a //= a (aliasing itself; no zero in the floating a). */
		TT_OK(cow_tensor_floor_div_(a, a));
		snprintf(name, sizeof name, "%s.self", cow_dtype_name(dts[d]));
		emit(r, name, a);
		/* In place through a row view: a[1] -= b; a[1] %= b. */
		TT_OK(cow_tensor_select(a, 0, 1, &row));
		TT_OK(cow_tensor_sub_(row, b));
		TT_OK(cow_tensor_mod_(row, b));
		snprintf(name, sizeof name, "%s.inplace",
		    cow_dtype_name(dts[d]));
		emit(r, name, a);
		cow_tensor_release(row);
		cow_tensor_release(ct);
		cow_tensor_release(a);
		cow_tensor_release(b);
		cow_tensor_release(c);
	}
}

Test(binops, three_worlds_agree)
{
	static const cow_dtype_t dts[] = {COW_DTYPE_FLOAT32,
	    COW_DTYPE_FLOAT64, COW_DTYPE_INT16, COW_DTYPE_BFLOAT16};

	for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
		worlds_dtype = dts[d];
		run3(worlds_program);
	}
}

/* bool, float16 and bfloat16 products by hand (ops.h's rules). */
static void
matmul_new_dtypes(struct run *r)
{
	static const int64_t s23[] = {2, 3}, s32[] = {3, 2}, s3[] = {3};
	static const int64_t s2[] = {2};
	const double e11 = 0x1p-11, e8 = 0x1p-8;
	cow_tensor_t *a, *b, *c;

	/* bool: [1 0 1; 0 0 1] @ [0 1; 1 0; 0 0] = [0 1; 0 0] (some k with
	 * both true); [0 1 1] @ [1 1 0] = 1. */
	a = tt_from(COW_DTYPE_BOOL, 2, s23, (const double[]){1, 0, 1, 0, 0, 1});
	b = tt_from(COW_DTYPE_BOOL, 2, s32, (const double[]){0, 1, 1, 0, 0, 0});
	TT_OK(cow_tensor_matmul(a, b, &c));
	cr_assert_eq(cow_tensor_dtype(c), COW_DTYPE_BOOL);
	expect(r, "bool a@b", c, (const double[]){0, 1, 0, 0});
	cow_tensor_release(a);
	cow_tensor_release(b);
	cow_tensor_release(c);
	a = tt_from(COW_DTYPE_BOOL, 1, s3, (const double[]){0, 1, 1});
	b = tt_from(COW_DTYPE_BOOL, 1, s3, (const double[]){1, 1, 0});
	TT_OK(cow_tensor_matmul(a, b, &c));
	expect(r, "bool v@v", c, (const double[]){1});
	cow_tensor_release(a);
	cow_tensor_release(b);
	cow_tensor_release(c);
	/* float16: the float32 sum 1 + 2^-11 + 2^-11 = 1 + 2^-10, rounded
	 * once; summed in float16 each 1 + 2^-11 is a tie, to even: 1. */
	a = tt_from(COW_DTYPE_FLOAT16, 1, s3, (const double[]){1, e11, e11});
	b = tt_from(COW_DTYPE_FLOAT16, 2, s32, (const double[]){1, 1, 1, 1,
	    1, -1});
	TT_OK(cow_tensor_matmul(a, b, &c));
	expect(r, "f16 v@b", c, (const double[]){1 + 0x1p-10, 1});
	cow_tensor_release(b);
	cow_tensor_release(c);
	b = tt_from(COW_DTYPE_FLOAT16, 1, s3, (const double[]){1, 1, 1});
	TT_OK(cow_tensor_matmul(a, b, &c));
	expect(r, "f16 v@v", c, (const double[]){1 + 0x1p-10});
	cow_tensor_release(a);
	cow_tensor_release(b);
	cow_tensor_release(c);
	/* 300 * 300 - 300 * 300: 0 in float32 (each product is 90000, past
	 * float16's 65504: inf - inf in float16). */
	a = tt_from(COW_DTYPE_FLOAT16, 1, s2, (const double[]){300, 300});
	b = tt_from(COW_DTYPE_FLOAT16, 1, s2, (const double[]){300, -300});
	TT_OK(cow_tensor_matmul(a, b, &c));
	expect(r, "f16 0", c, (const double[]){0});
	cow_tensor_release(a);
	cow_tensor_release(b);
	cow_tensor_release(c);
	/* bfloat16 the same way: 1 + 2^-8 + 2^-8 = 1 + 2^-7. */
	a = tt_from(COW_DTYPE_BFLOAT16, 1, s3, (const double[]){1, e8, e8});
	b = tt_from(COW_DTYPE_BFLOAT16, 1, s3, (const double[]){1, 1, 1});
	TT_OK(cow_tensor_matmul(a, b, &c));
	expect(r, "bf16 v@v", c, (const double[]){1 + 0x1p-7});
	cow_tensor_release(a);
	cow_tensor_release(b);
	cow_tensor_release(c);
}

/* matmul: values by hand, the 1-D cases' shapes, transposed inputs, in
 * every world; refusals. */
static void
matmul_program(struct run *r)
{
	static const int64_t s23[] = {2, 3}, s32[] = {3, 2}, s3[] = {3};
	static const double a23[] = {1, 2, 3, 4, 5, 6};
	static const double b32[] = {7, 8, 9, 10, 11, 12};
	cow_tensor_t *a = tt_from(COW_DTYPE_FLOAT64, 2, s23, a23);
	cow_tensor_t *b = tt_from(COW_DTYPE_FLOAT64, 2, s32, b32);
	cow_tensor_t *v = tt_from(COW_DTYPE_FLOAT64, 1, s3, b32);
	cow_tensor_t *ai = tt_from(COW_DTYPE_INT8, 2, s23, a23);
	cow_tensor_t *bt, *c, *out = NULL;

	/* [1 2 3; 4 5 6] @ [7 8; 9 10; 11 12] = [58 64; 139 154]. */
	TT_OK(cow_tensor_matmul(a, b, &c));
	expect(r, "a@b", c, (const double[]){58, 64, 139, 154});
	cow_tensor_release(c);
	/* a @ v (v = 7 8 9): [50, 122]; v @ v: 194 (0-d). */
	TT_OK(cow_tensor_matmul(a, v, &c));
	tt_assert_shape(c, 1, (const int64_t[]){2});
	expect(r, "a@v", c, (const double[]){50, 122});
	cow_tensor_release(c);
	TT_OK(cow_tensor_matmul(v, v, &c));
	cr_assert_eq(cow_tensor_ndim(c), 0);
	expect(r, "v@v", c, (const double[]){194});
	cow_tensor_release(c);
	/* A transposed (non-contiguous) input: b.T (2 x 3) @ b (3 x 2) =
	 * [251 278; 278 308]. */
	TT_OK(cow_tensor_transpose(b, 0, 1, &bt));
	TT_OK(cow_tensor_matmul(bt, b, &c));
	expect(r, "bT@b", c, (const double[]){251, 278, 278, 308});
	cow_tensor_release(c);
	/* int8: ai @ ai.T = [14 32; 32 77]. */
	TT_OK(cow_tensor_transpose(ai, 0, 1, &c));
	TT_OK(cow_tensor_matmul(ai, c, &out));
	cow_tensor_release(c);
	expect(r, "ai@aiT", out, (const double[]){14, 32, 32, 77});
	cow_tensor_release(out);
	out = NULL;
	matmul_new_dtypes(r);
	TT_FAILS(cow_tensor_matmul(a, a, &out), COW_ESHAPE, "inner sizes");
	TT_FAILS(cow_tensor_matmul(a, ai, &out), COW_EDTYPE, "differ");
	TT_FAILS(cow_tensor_matmul(NULL, a, &out), COW_EINVAL, "'a'");
	cr_assert_null(out);
	cow_tensor_release(a);
	cow_tensor_release(b);
	cow_tensor_release(bt);
	cow_tensor_release(v);
	cow_tensor_release(ai);
}

Test(binops, matmul_in_every_world)
{
	run3(matmul_program);
}

Test(binops, matmul_refuses_other_ranks)
{
	static const int64_t s222[] = {2, 2, 2};
	cow_tensor_t *t3, *out = NULL;

	TT_OK(cow_tensor_zeros(COW_DTYPE_FLOAT32, 3, s222, NULL, &t3));
	TT_FAILS(cow_tensor_matmul(t3, t3, &out), COW_ESHAPE, "1 or 2");
	cr_assert_null(out);
	cow_tensor_release(t3);
}

/* complex64 by hand: [1+2i, 3-i] @ [2-i, i] = (4+3i) + (1+3i) = 5+6i; a
 * bool byte other than 0 or 1 reads as true and gives 1. */
Test(binops, matmul_complex_and_bool_bytes)
{
	static const int64_t s2[] = {2}, s12[] = {1, 2}, s21[] = {2, 1};
	static const float av[] = {1, 2, 3, -1}, bv[] = {2, -1, 0, 1};
	static const uint8_t x[] = {0, 2}, y[] = {7, 3};
	cow_tensor_t *a, *b, *c;
	const void *data;
	float got[2];

	TT_OK(cow_tensor_from_data(COW_DTYPE_COMPLEX64, 1, s2, av, NULL, &a));
	TT_OK(cow_tensor_from_data(COW_DTYPE_COMPLEX64, 1, s2, bv, NULL, &b));
	TT_OK(cow_tensor_matmul(a, b, &c));
	cr_assert_eq(cow_tensor_ndim(c), 0);
	TT_OK(cow_tensor_read_data(c, &data));
	memcpy(got, data, sizeof got);
	cr_assert(got[0] == 5 && got[1] == 6, "%g%+gi", got[0], got[1]);
	cow_tensor_release(a);
	cow_tensor_release(b);
	cow_tensor_release(c);
	TT_OK(cow_tensor_from_data(COW_DTYPE_BOOL, 2, s12, x, NULL, &a));
	TT_OK(cow_tensor_from_data(COW_DTYPE_BOOL, 2, s21, y, NULL, &b));
	TT_OK(cow_tensor_matmul(a, b, &c));
	TT_OK(cow_tensor_read_data(c, &data));
	cr_assert_eq(*(const uint8_t *)data, 1);
	cow_tensor_release(a);
	cow_tensor_release(b);
	cow_tensor_release(c);
}

/* float16 and bfloat16 sum in float32 in index order from 0 and round
 * once; complex64 and complex128 sum re += ar br - ai bi, im += ar bi +
 * ai br in index order, every step rounded (ops.h): checked bit for bit
 * against those orders computed here, on the general loop (m = 3, and m
 * = 300 for the 16-bit types, past their 256-column blocks) and the
 * one-column one (m = 1: 8-row tiles and a tail). The 16-bit reference
 * rounds its float32 sums through copy_ (ops.h's conversion). */
static void
check_mm_order(cow_dtype_t dt, int64_t n, int64_t k, int64_t m)
{
	const bool cx = dt == COW_DTYPE_COMPLEX64 ||
	    dt == COW_DTYPE_COMPLEX128;
	const bool wide = dt == COW_DTYPE_COMPLEX128;
	const int64_t sa[] = {n, k}, sb[] = {k, m}, sr[] = {n, m};
	uint64_t state = 0x9e3779b97f4a7c15ull ^ (uint64_t)m;
	double *av = calloc((size_t)(2 * n * k), sizeof *av);
	double *bv = calloc((size_t)(2 * k * m), sizeof *bv);
	double *want = calloc((size_t)(2 * n * m), sizeof *want);
	cow_tensor_t *a, *b, *c, *w, *f;
	const void *cd, *wd;
	size_t nb = (size_t)(n * m) * cow_dtype_size(dt);

	cr_assert(av != NULL && bv != NULL && want != NULL);
	/* Values exact in every dtype here (bfloat16: 8 bits), of wide
	 * range, so that sums round and cancel. */
	for (int64_t i = 0; i < 2 * n * k + 2 * k * m; i++) {
		double v = (double)((int64_t)(tt_xorshift64(&state) % 255) -
		    127) * ldexp(1, cx ? (int)(tt_xorshift64(&state) % 12) - 6 :
		    (int)(tt_xorshift64(&state) % 6) - 8);

		if (i < 2 * n * k)
			av[i] = v;
		else
			bv[i - 2 * n * k] = v;
	}
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = 0; j < m; j++) {
			double *o = want + 2 * (i * m + j);
			float fr = 0, fi = 0;
			double dr = 0, di = 0;

			for (int64_t p = 0; p < k; p++) {
				const double *x = av + 2 * (i * k + p);
				const double *y = bv + 2 * (p * m + j);

				if (wide) {
					double rr = x[0] * y[0], ii = x[1] * y[1];
					double ri = x[0] * y[1], ir = x[1] * y[0];
					double re = rr - ii, im = ri + ir;

					dr = dr + re;
					di = di + im;
				} else if (cx) {
					float rr = (float)x[0] * (float)y[0];
					float ii = (float)x[1] * (float)y[1];
					float ri = (float)x[0] * (float)y[1];
					float ir = (float)x[1] * (float)y[0];
					float re = rr - ii, im = ri + ir;

					fr = fr + re;
					fi = fi + im;
				} else {
					float t = (float)x[0] * (float)y[0];

					fr = fr + t;
				}
			}
			o[0] = wide ? dr : fr;
			o[1] = wide ? di : fi;
		}
	/* The operands (real dtypes: the even entries) and the reference. */
	{
		const cow_dtype_t ft = wide ? COW_DTYPE_FLOAT64 :
		    COW_DTYPE_FLOAT32;
		const int64_t na = cx ? 2 * n * k : n * k;
		const int64_t nbv = cx ? 2 * k * m : k * m;
		const int64_t nw = cx ? 2 * n * m : n * m;
		const int64_t s1a[] = {na}, s1b[] = {nbv}, s1w[] = {nw};
		const void *p;
		double *ta = calloc((size_t)na, sizeof *ta);
		double *tb = calloc((size_t)nbv, sizeof *tb);
		double *tw = calloc((size_t)nw, sizeof *tw);
		cow_tensor_t *ra, *rb, *flat;

		cr_assert(ta != NULL && tb != NULL && tw != NULL);
		for (int64_t i = 0; i < na; i++)
			ta[i] = cx ? av[i] : av[2 * i];
		for (int64_t i = 0; i < nbv; i++)
			tb[i] = cx ? bv[i] : bv[2 * i];
		for (int64_t i = 0; i < nw; i++)
			tw[i] = cx ? want[i] : want[2 * i];
		ra = tt_from(cx ? ft : dt, 1, s1a, ta);
		rb = tt_from(cx ? ft : dt, 1, s1b, tb);
		f = tt_from(ft, 1, s1w, tw);
		TT_OK(cow_tensor_empty(dt, 2, sr, NULL, &w));
		if (cx) {
			/* The pairs' bytes, reinterpreted as complex. */
			TT_OK(cow_tensor_read_data(ra, &p));
			TT_OK(cow_tensor_from_data(dt, 2, sa, p, NULL, &a));
			TT_OK(cow_tensor_read_data(rb, &p));
			TT_OK(cow_tensor_from_data(dt, 2, sb, p, NULL, &b));
			TT_OK(cow_tensor_read_data(f, &p));
			cow_tensor_release(w);
			TT_OK(cow_tensor_from_data(dt, 2, sr, p, NULL, &w));
		} else {
			TT_OK(cow_tensor_view(ra, 2, sa, &a));
			TT_OK(cow_tensor_view(rb, 2, sb, &b));
			TT_OK(cow_tensor_view(f, 2, sr, &flat));
			TT_OK(cow_tensor_copy_(w, flat));
			cow_tensor_release(flat);
		}
		cow_tensor_release(ra);
		cow_tensor_release(rb);
		free(ta);
		free(tb);
		free(tw);
	}
	TT_OK(cow_tensor_matmul(a, b, &c));
	TT_OK(cow_tensor_read_data(c, &cd));
	TT_OK(cow_tensor_read_data(w, &wd));
	for (size_t i = 0; i < nb; i++)
		cr_assert(((const char *)cd)[i] == ((const char *)wd)[i],
		    "%s, m = %lld: byte %zu differs from the index-order sum",
		    cow_dtype_name(dt), (long long)m, i);
	cow_tensor_release(a);
	cow_tensor_release(b);
	cow_tensor_release(c);
	cow_tensor_release(w);
	cow_tensor_release(f);
	free(av);
	free(bv);
	free(want);
}

Test(binops, matmul_half_and_complex_sum_in_index_order)
{
	static const cow_dtype_t dts[] = {COW_DTYPE_FLOAT16,
	    COW_DTYPE_BFLOAT16, COW_DTYPE_COMPLEX64, COW_DTYPE_COMPLEX128};

	for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
		check_mm_order(dts[d], 19, 150, 3);
		check_mm_order(dts[d], 19, 150, 1);
		if (d < 2)
			check_mm_order(dts[d], 3, 40, 300);
	}
}

/* Each element of a product is its products summed in index order from
 * 0, every step rounded (ops.h), on both loops: the general one (m = 3)
 * and the one-column one (m = 1: 8-row tiles of 64 columns, and a tail
 * of rows), checked bit for bit against that order computed here, on
 * values whose sums round differently in another order. */
Test(binops, matmul_sums_in_index_order)
{
	enum { N = 19, K = 150, M = 3 };
	static float av[N * K], bv[K * M], col[K];
	const int64_t sa[] = {N, K}, sb[] = {K, M}, sv[] = {K};
	uint64_t state = 0x9e3779b97f4a7c15ull;
	cow_tensor_t *a, *b, *v, *c;
	const void *data;
	const char *p;

	for (int i = 0; i < N * K; i++)
		av[i] = (float)((int64_t)(tt_xorshift64(&state) % 2001) - 1000) *
		    (i % 7 == 0 ? 1e6f : 1e-3f);
	for (int i = 0; i < K * M; i++)
		bv[i] = (float)((int64_t)(tt_xorshift64(&state) % 2001) - 1000) *
		    1e-2f;
	for (int i = 0; i < K; i++)
		col[i] = bv[i * M + 1];
	TT_OK(cow_tensor_from_data(COW_DTYPE_FLOAT32, 2, sa, av, NULL, &a));
	TT_OK(cow_tensor_from_data(COW_DTYPE_FLOAT32, 2, sb, bv, NULL, &b));
	TT_OK(cow_tensor_from_data(COW_DTYPE_FLOAT32, 1, sv, col, NULL, &v));
	for (int which = 0; which < 2; which++) {
		int64_t m = which == 0 ? M : 1;
		int differ = 0;

		TT_OK(cow_tensor_matmul(a, which == 0 ? b : v, &c));
		TT_OK(cow_tensor_read_data(c, &data));
		p = data;
		for (int i = 0; i < N; i++) {
			for (int64_t j = 0; j < m; j++) {
				float s = 0, got;

				for (int q = 0; q < K; q++) {
					float t = av[i * K + q] *
					    (which == 0 ? bv[q * M + j] : col[q]);

					s = s + t;
				}
				float rev = 0;

				/* The control: another order (reversed) gives
				 * other bits for some elements of these
				 * values, counted below. */
				for (int q = K - 1; q >= 0; q--) {
					float t = av[i * K + q] *
					    (which == 0 ? bv[q * M + j] : col[q]);

					rev = rev + t;
				}
				differ += memcmp(&rev, &s, 4) != 0;
				memcpy(&got, p + (size_t)(i * m + j) * 4, 4);
				cr_assert(memcmp(&got, &s, 4) == 0,
				    "m = %lld: [%d, %lld] is %a, index order "
				    "gives %a", (long long)m, i, (long long)j,
				    got, s);
			}
		}
		cr_assert_gt(differ, N * m / 2, "m = %lld: only %d of %lld "
		    "elements tell the orders apart", (long long)m, differ,
		    (long long)(N * m));
		cow_tensor_release(c);
	}
	cow_tensor_release(a);
	cow_tensor_release(b);
	cow_tensor_release(v);
}
