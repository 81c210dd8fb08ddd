/*
 * The kernels' fast paths (runtime/tensor/loops.c: dense runs, scalar and
 * broadcast operands, a destination that is an input) against the general
 * loops: every op runs on operands whose runs are dense (at a random,
 * misaligned start, in 2-D slices of a wider buffer) and again on the same
 * values laid out with stride 2, which only the general loops take. The
 * results must agree bit for bit (an arithmetic NaN only as a NaN; a
 * converted one to the bit). Random dtypes,
 * odd and zero lengths. Then the pairwise sum's accuracy, where an
 * index-order sum is visibly wrong, and its error bound (ops.h).
 */
#include <math.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cow_test.h"
#include "leak_fixture.h"
#include "tensor_test.h"

TestSuite(fastpaths, .init = leak_setup, .fini = leak_teardown,
    .timeout = 300.0);

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t
rnd64(void)
{
	return tt_xorshift64(&rng_state);
}

static int64_t
rnd(int64_t lo, int64_t hi)
{
	return lo + (int64_t)(rnd64() % (uint64_t)(hi - lo + 1));
}

/* Random elements: raw bits (NaNs, infinities, subnormals, huge integers)
 * half the time, small integers otherwise (so that arithmetic stays in
 * range), 0 or 1 for bool. */
static cow_tensor_t *
random_values(cow_dtype_t dt, int64_t n)
{
	size_t size = cow_dtype_size(dt);
	unsigned char *bytes = malloc((size_t)n * size + 1);
	cow_tensor_t *t;

	cr_assert_not_null(bytes);
	for (int64_t i = 0; i < n; i++) {
		unsigned char *e = bytes + (size_t)i * size;
		for (size_t b = 0; b < size; b++)
			e[b] = (unsigned char)rnd64();
		if (dt == COW_DTYPE_BOOL)
			e[0] &= 1;
	}
	TT_OK(cow_tensor_from_data(dt, 1, &n, bytes, NULL, &t));
	free(bytes);
	for (int64_t i = 0; i < n; i++)
		if (dt != COW_DTYPE_BOOL && rnd(0, 1))
			TT_OK(cow_tensor_set_i64(t, &i, rnd(-40, 40)));
	return t;
}

/*
 * @vals (1-D, rows * cols elements) as a [rows, cols] tensor: "dense",
 * each row a dense run starting @off elements into a buffer whose rows are
 * @pad elements apart beyond @cols; or with every stride doubled.
 */
static cow_tensor_t *
layout(const cow_tensor_t *vals, int64_t rows, int64_t cols, int64_t off,
    int64_t pad, bool doubled)
{
	cow_dtype_t dt = cow_tensor_dtype(vals);
	int64_t k = doubled ? 2 : 1, row = (cols + pad) * k;
	int64_t sizes[2] = {rows, cols}, strides[2] = {row, k};
	int64_t elems = off + rows * row + 1;
	cow_tensor_t *t, *v;
	cow_storage_t *s;

	TT_OK(cow_storage_new((size_t)elems * cow_dtype_size(dt), NULL, &s));
	TT_OK(cow_tensor_from_storage(s, dt, 2, sizes, strides, off, &t));
	cow_storage_release(s);
	TT_OK(cow_tensor_view((cow_tensor_t *)vals, 2, sizes, &v));
	TT_OK(cow_tensor_copy_(t, v));
	cow_tensor_release(v);
	return t;
}

/* Is the floating part of @dt at @p (a real value, or one half of a
 * complex one) a NaN? */
static bool
part_is_nan(cow_dtype_t dt, const unsigned char *p)
{
	uint16_t h;
	float f;
	double d;

	switch (dt) {
	case COW_DTYPE_FLOAT16:
		memcpy(&h, p, 2);
		return (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0;
	case COW_DTYPE_BFLOAT16:
		memcpy(&h, p, 2);
		return (h & 0x7F80) == 0x7F80 && (h & 0x007F) != 0;
	case COW_DTYPE_FLOAT32:
	case COW_DTYPE_COMPLEX64:
		memcpy(&f, p, 4);
		return isnan(f);
	case COW_DTYPE_FLOAT64:
	case COW_DTYPE_COMPLEX128:
		memcpy(&d, p, 8);
		return isnan(d);
	default:
		return false;
	}
}

/* The same values, element for element: every part the same bytes, or a
 * NaN in both (IEEE leaves a result NaN's sign and payload open). */
static void
assert_same(const cow_tensor_t *x, const cow_tensor_t *y, const char *what)
{
	cow_dtype_t dt = cow_tensor_dtype(x);
	size_t size = cow_dtype_size(dt);
	bool complex = dt == COW_DTYPE_COMPLEX64 || dt == COW_DTYPE_COMPLEX128;
	size_t part = complex ? size / 2 : size;
	int64_t n = cow_tensor_numel(x);
	cow_tensor_t *a, *b;

	cr_assert_eq(cow_tensor_numel(y), n, "%s: sizes differ", what);
	TT_OK(cow_tensor_clone(x, &a));
	TT_OK(cow_tensor_clone(y, &b));
	const unsigned char *p = cow_tensor_const_data(a);
	const unsigned char *q = cow_tensor_const_data(b);
	for (int64_t i = 0; i < n; i++) {
		for (size_t o = (size_t)i * size; o < (size_t)(i + 1) * size;
		    o += part) {
			cr_assert(memcmp(p + o, q + o, part) == 0 ||
			    (part_is_nan(dt, p + o) && part_is_nan(dt, q + o)),
			    "%s (%s): element %lld differs", what,
			    cow_dtype_name(dt), (long long)i);
		}
	}
	cow_tensor_release(a);
	cow_tensor_release(b);
}

/* The same bytes: a conversion's result is fixed to the bit (docs/tensor.md,
 * "Dtypes": a NaN made quiet, keeping its payload). */
static void
assert_identical(const cow_tensor_t *x, const cow_tensor_t *y,
    const char *what)
{
	size_t nbytes = (size_t)cow_tensor_numel(x) *
	    cow_dtype_size(cow_tensor_dtype(x));
	cow_tensor_t *a, *b;

	TT_OK(cow_tensor_clone(x, &a));
	TT_OK(cow_tensor_clone(y, &b));
	cr_assert(nbytes == 0 || memcmp(cow_tensor_const_data(a),
	    cow_tensor_const_data(b), nbytes) == 0, "%s (%s): bytes differ",
	    what, cow_dtype_name(cow_tensor_dtype(x)));
	cow_tensor_release(a);
	cow_tensor_release(b);
}

/* Real floating or complex (div_ is defined in place). */
static bool
floating(cow_dtype_t dt)
{
	return dt == COW_DTYPE_FLOAT16 || dt == COW_DTYPE_BFLOAT16 ||
	    dt == COW_DTYPE_FLOAT32 || dt == COW_DTYPE_FLOAT64 ||
	    dt == COW_DTYPE_COMPLEX64 || dt == COW_DTYPE_COMPLEX128;
}

/* One random case: every op on the dense layout and on the doubled one. */
static void
one_case(cow_dtype_t dt)
{
	int64_t rows = rnd(0, 3) == 0 ? 1 : rnd(1, 5);
	int64_t cols = rnd(0, 9) == 0 ? 0 : rnd(1, 300);
	int64_t off = rnd(0, 5), pad = rnd(0, 3), n = rows * cols;
	cow_tensor_t *va = random_values(dt, n), *vb = random_values(dt, n);
	cow_tensor_t *vc = random_values(dt, rows);
	cow_tensor_t *a[2], *b[2], *c[2], *r[2];
	double scalar = (double)rnd(-5, 5);

	for (int k = 0; k < 2; k++) {
		int64_t csz[2] = {rows, 1};
		cow_tensor_t *cv;

		a[k] = layout(va, rows, cols, off, pad, k == 1);
		b[k] = layout(vb, rows, cols, rnd(0, 5), rnd(0, 3), k == 1);
		/* A column broadcast along each row: stride 0 in the run. */
		TT_OK(cow_tensor_view(vc, 2, csz, &cv));
		c[k] = cv;
	}
	/* Out of place (the result is dense; the doubled inputs keep the
	 * general loop). div: a dense divisor, a broadcast one, a broadcast
	 * dividend; of bool and integers into float64. */
	for (int op = 0; op < 8; op++) {
		for (int k = 0; k < 2; k++) {
			switch (op) {
			case 0:
				TT_OK(cow_tensor_add(a[k], b[k], &r[k]));
				break;
			case 1:
				TT_OK(cow_tensor_mul(a[k], b[k], &r[k]));
				break;
			case 2:
				TT_OK(cow_tensor_add(a[k], c[k], &r[k]));
				break;
			case 3:
				TT_OK(cow_tensor_mul(c[k], a[k], &r[k]));
				break;
			case 5:
				TT_OK(cow_tensor_div(a[k], b[k], &r[k]));
				break;
			case 6:
				TT_OK(cow_tensor_div(a[k], c[k], &r[k]));
				break;
			case 7:
				TT_OK(cow_tensor_div(c[k], a[k], &r[k]));
				break;
			default:
				if (dt == COW_DTYPE_BOOL) {
					r[k] = NULL;
					continue;
				}
				TT_OK(cow_tensor_neg(a[k], &r[k]));
			}
		}
		if (r[0] != NULL)
			assert_same(r[0], r[1], "out of place");
		cow_tensor_release(r[0]);
		cow_tensor_release(r[1]);
	}
	/* In place, on fresh copies of a in each layout (div_: floating
	 * and complex dtypes). */
	for (int op = 0; op < 11; op++) {
		if (op >= 9 && !floating(dt))
			continue;
		for (int k = 0; k < 2; k++) {
			r[k] = layout(va, rows, cols, off, pad, k == 1);
			switch (op) {
			case 0:
				TT_OK(cow_tensor_add_(r[k], b[k]));
				break;
			case 1:
				TT_OK(cow_tensor_mul_(r[k], b[k]));
				break;
			case 2:
				TT_OK(cow_tensor_add_(r[k], r[k]));
				break;
			case 3:
				TT_OK(cow_tensor_mul_(r[k], r[k]));
				break;
			case 4:
				TT_OK(cow_tensor_add_scalar_(r[k], scalar));
				break;
			case 5:
				TT_OK(cow_tensor_mul_scalar_(r[k], scalar));
				break;
			case 6:
				TT_OK(cow_tensor_add_(r[k], c[k]));
				break;
			case 7:
				TT_OK(cow_tensor_fill_(r[k], scalar));
				break;
			case 9:
				TT_OK(cow_tensor_div_(r[k], b[k]));
				break;
			case 10:
				TT_OK(cow_tensor_div_(r[k], r[k]));
				break;
			default:
				TT_OK(cow_tensor_copy_(r[k], b[k]));
			}
		}
		assert_same(r[0], r[1], "in place");
		cow_tensor_release(r[0]);
		cow_tensor_release(r[1]);
	}
	/* Converting copies into every other dtype (the dense runs of the
	 * pairs loops.c converts in typed loops, against cow__convert_n). */
	for (int dt2 = 0; dt2 < COW_DTYPE_COUNT; dt2++) {
		cow_tensor_t *z = random_values((cow_dtype_t)dt2, n);

		for (int k = 0; k < 2; k++) {
			r[k] = layout(z, rows, cols, rnd(0, 5), rnd(0, 3),
			    k == 1);
			TT_OK(cow_tensor_copy_(r[k], b[k]));
		}
		assert_identical(r[0], r[1], "converting copy");
		cow_tensor_release(r[0]);
		cow_tensor_release(r[1]);
		cow_tensor_release(z);
	}
	/* Sums: runs of the same lengths in both layouts, summed the same
	 * way (pairwise for real floating dtypes). */
	for (int op = 0; op < 2; op++) {
		for (int k = 0; k < 2; k++) {
			if (op == 0)
				TT_OK(cow_tensor_sum(a[k], &r[k]));
			else
				TT_OK(cow_tensor_sum_dim(a[k], -1, false, &r[k]));
		}
		assert_same(r[0], r[1], "sum");
		cow_tensor_release(r[0]);
		cow_tensor_release(r[1]);
	}
	for (int k = 0; k < 2; k++) {
		cow_tensor_release(a[k]);
		cow_tensor_release(b[k]);
		cow_tensor_release(c[k]);
	}
	cow_tensor_release(va);
	cow_tensor_release(vb);
	cow_tensor_release(vc);
}

Test(fastpaths, agree_with_the_general_loops)
{
	for (int i = 0; i < 60; i++)
		for (int dt = 0; dt < COW_DTYPE_COUNT; dt++)
			one_case((cow_dtype_t)dt);
}

/* Transposing copies, which kernels.c hands to transpose.c when the
 * destination is dense along the other dimension (copy_(d, a.T), and
 * copy_(d.T, a)), against the general loop (a destination with doubled
 * strides). Sizes from 30 (below the tiles' cut-off) to 100: odd ones
 * leave rows and columns outside transpose.c's square blocks. */
Test(fastpaths, transposed_copies_agree_with_the_general_loop)
{
	for (int i = 0; i < 60; i++) {
		cow_dtype_t dt = (cow_dtype_t)rnd(0, COW_DTYPE_COUNT - 1);
		int64_t m = rnd(30, 100), n = rnd(30, 100);
		bool dst_transposed = rnd(0, 1);
		cow_tensor_t *vals = random_values(dt, m * n);
		cow_tensor_t *src, *d[2];

		if (dst_transposed) {   /* dense [m, n] source */
			src = layout(vals, m, n, rnd(0, 5), rnd(0, 3), false);
		} else {                /* [n, m] transposed: [m, n] */
			cow_tensor_t *t = layout(vals, n, m, rnd(0, 5),
			    rnd(0, 3), false);

			TT_OK(cow_tensor_transpose(t, 0, 1, &src));
			cow_tensor_release(t);
		}
		for (int k = 0; k < 2; k++) {
			cow_tensor_t *z = random_values(dt, m * n);

			if (dst_transposed && k == 0) {
				cow_tensor_t *t = layout(z, n, m, rnd(0, 5),
				    rnd(0, 3), false);

				TT_OK(cow_tensor_transpose(t, 0, 1, &d[k]));
				cow_tensor_release(t);
			} else {
				d[k] = layout(z, m, n, rnd(0, 5), rnd(0, 3),
				    k == 1);
			}
			cow_tensor_release(z);
			TT_OK(cow_tensor_copy_(d[k], src));
		}
		assert_same(d[0], d[1], "transposed copy");
		assert_same(d[0], src, "transposed copy's values");
		cow_tensor_release(d[0]);
		cow_tensor_release(d[1]);
		cow_tensor_release(src);
		cow_tensor_release(vals);
	}
}

/* 2^25 float32 ones: an index-order sum stops at 2^24 (2^24 + 1 rounds
 * back to 2^24); the pairwise sum is exact. An expanded view: no memory. */
Test(fastpaths, pairwise_sum_where_index_order_fails)
{
	int64_t one = 1, n = (int64_t)1 << 25;
	cow_tensor_t *t, *e, *s;
	double v;

	TT_OK(cow_tensor_full(COW_DTYPE_FLOAT32, 1, &one, 1.0, NULL, &t));
	TT_OK(cow_tensor_expand(t, 1, &n, &e));
	TT_OK(cow_tensor_sum(e, &s));
	TT_OK(cow_tensor_get_f64(s, NULL, &v));
	cr_assert_eq(v, 33554432.0, "sum of 2^25 ones gave %.1f", v);
	cow_tensor_release(s);
	cow_tensor_release(e);
	cow_tensor_release(t);
}

/* The bound of ops.h on a contiguous run of mixed signs and magnitudes:
 * |computed - exact| <= k u S / (1 - k u), k = 26 + ceil(log2(n / 128)). */
Test(fastpaths, pairwise_sum_error_bound)
{
	const int64_t n = 100003;
	float *x = malloc((size_t)n * sizeof *x);
	long double exact = 0, abs_sum = 0;
	cow_tensor_t *t, *s;
	double v;

	cr_assert_not_null(x);
	for (int64_t i = 0; i < n; i++) {
		double m = (double)(rnd64() >> 11) / 9007199254740992.0;
		x[i] = (float)ldexp(rnd(0, 1) ? m : -m, (int)rnd(-20, 20));
		exact += x[i];
		abs_sum += fabsl((long double)x[i]);
	}
	TT_OK(cow_tensor_from_data(COW_DTYPE_FLOAT32, 1, &n, x, NULL, &t));
	TT_OK(cow_tensor_sum(t, &s));
	TT_OK(cow_tensor_get_f64(s, NULL, &v));
	double k = 26 + ceil(log2((double)n / 128)), u = ldexp(1, -24);
	double bound = (double)(k * u / (1 - k * u) * abs_sum);
	double err = fabs((double)((long double)v - exact));
	cr_assert(err <= bound, "error %g above the bound %g", err, bound);
	cow_tensor_release(s);
	cow_tensor_release(t);
	free(x);
}
