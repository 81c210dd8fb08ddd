/*
 * Elementwise ops, reductions and equality over non-contiguous, broadcast
 * and zero-size tensors, checked element by element against a reference
 * computed here from single-element reads; dtype conversion in copy_;
 * overlap refusal; inputs that alias the destination; what ops
 * materialise.
 */
#include <float.h>
#include <math.h>

#include <criterion/criterion.h>

#include "cow_test.h"
#include "leak_fixture.h"
#include "tensor_test.h"

#define MAXD COW_TENSOR_MAX_NDIM

TestSuite(ops, .init = leak_setup, .fini = leak_teardown, .timeout = 60.0);

static uint64_t rng_state = 88172645463325252ull;

static int64_t
rnd(int64_t lo, int64_t hi)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return lo + (int64_t)(rng_state % (uint64_t)(hi - lo + 1));
}

/*
 * A tensor of shape (@n, @s) with random small integer values that is
 * usually NOT contiguous: a strided slice of a permuted base, permuted
 * back.
 */
static cow_tensor_t *
random_tensor(cow_dtype_t dt, int n, const int64_t *s)
{
	int64_t bs[MAXD], idx[MAXD] = {0}, k[MAXD];
	int p[MAXD], inv[MAXD];
	cow_tensor_t *base, *cur, *next;

	for (int d = 0; d < n; d++)
		p[d] = d;
	for (int d = n - 1; d > 0; d--) {
		int j = (int)rnd(0, d), x = p[d];

		p[d] = p[j];
		p[j] = x;
	}
	for (int d = 0; d < n; d++) {
		k[d] = rnd(1, 2);
		bs[d] = s[p[d]] * k[d];
		inv[p[d]] = d;
	}
	TT_OK(cow_tensor_empty(dt, n, bs, sys, &base));
	if (tt_numel(n, bs) > 0) {
		do
			TT_OK(cow_tensor_set_f64(base, idx,
			    dt == COW_DTYPE_BOOL ? (double)rnd(0, 1) :
			    (double)rnd(-20, 20)));
		while (tt_next(n, bs, idx));
	}
	cur = base;
	for (int d = 0; d < n; d++) {
		TT_OK(cow_tensor_slice(cur, d, 0, bs[d], k[d], &next));
		cow_tensor_release(cur);
		cur = next;
	}
	TT_OK(cow_tensor_permute(cur, n, inv, &next));
	cow_tensor_release(cur);
	tt_assert_shape(next, n, s);
	return next;
}

/* A random shape of @n dims that broadcasts to (@n_out, @out). */
static int
random_broadcastable(int n_out, const int64_t *out, int64_t *s)
{
	int n = (int)rnd(0, n_out);

	for (int d = 0; d < n; d++)
		s[d] = rnd(0, 3) == 0 ? 1 : out[d + n_out - n];
	return n;
}

/* The index of a broadcast operand for output index @idx. */
static void
bcast_index(int n, const int64_t *s, int n_out, const int64_t *idx,
    int64_t *out)
{
	for (int d = 0; d < n; d++)
		out[d] = s[d] == 1 ? 0 : idx[d + n_out - n];
}

static double
ref_op(char op, cow_dtype_t dt, double x, double y)
{
	if (dt == COW_DTYPE_BOOL)
		return op == '+' ? (double)(x != 0 || y != 0) :
		    (double)(x != 0 && y != 0);
	return op == '+' ? x + y : x * y;
}

static void
check_binary(char op, const cow_tensor_t *a, const cow_tensor_t *b,
    const cow_tensor_t *r)
{
	int n = cow_tensor_ndim(r);
	const int64_t *s = cow_tensor_sizes(r);
	int64_t idx[MAXD] = {0}, ia[MAXD], ib[MAXD];

	if (cow_tensor_numel(r) == 0)
		return;
	do {
		double want;

		bcast_index(cow_tensor_ndim(a), cow_tensor_sizes(a), n, idx,
		    ia);
		bcast_index(cow_tensor_ndim(b), cow_tensor_sizes(b), n, idx,
		    ib);
		want = ref_op(op, cow_tensor_dtype(r), tt_get(a, ia),
		    tt_get(b, ib));
		cr_assert_eq(tt_get(r, idx), want, "%c: got %g want %g", op,
		    tt_get(r, idx), want);
	} while (tt_next(n, s, idx));
}

Test(ops, binary_random_strided_broadcast)
{
	static const cow_dtype_t dts[] = {COW_DTYPE_INT32, COW_DTYPE_INT64,
	    COW_DTYPE_FLOAT32, COW_DTYPE_FLOAT64, COW_DTYPE_UINT8,
	    COW_DTYPE_BOOL};
	int zero_size = 0, broadcast = 0;

	for (int it = 0; it < 300; it++) {
		cow_dtype_t dt = dts[it % 6];
		int64_t os[MAXD], as[MAXD], bs[MAXD];
		int on = (int)rnd(0, 4), an, bn;
		cow_tensor_t *a, *b, *r;

		for (int d = 0; d < on; d++)
			os[d] = rnd(0, 9) == 0 ? 0 : rnd(1, 4);
		an = random_broadcastable(on, os, as);
		bn = random_broadcastable(on, os, bs);
		/* At least one operand has the full rank. */
		if (rnd(0, 1)) {
			an = on;
			memcpy(as, os, sizeof(int64_t) * (size_t)on);
		} else {
			bn = on;
			memcpy(bs, os, sizeof(int64_t) * (size_t)on);
		}
		a = random_tensor(dt, an, as);
		b = random_tensor(dt, bn, bs);
		if (dt == COW_DTYPE_UINT8) {
			/* Keep uint8 references exact (no wrap here). */
			cow_tensor_release(a);
			cow_tensor_release(b);
			continue;
		}
		TT_OK(cow_tensor_add(a, b, &r));
		tt_assert_shape(r, on, os);
		cr_assert(cow_tensor_is_contiguous(r));
		check_binary('+', a, b, r);
		cow_tensor_release(r);
		TT_OK(cow_tensor_mul(a, b, &r));
		check_binary('*', a, b, r);
		zero_size += cow_tensor_numel(r) == 0;
		broadcast += an != bn || memcmp(as, bs,
		    sizeof(int64_t) * (size_t)an) != 0;
		cow_tensor_release(r);
		cow_tensor_release(a);
		cow_tensor_release(b);
	}
	cr_assert_gt(zero_size, 5, "zero-size cases: %d", zero_size);
	cr_assert_gt(broadcast, 50, "broadcast cases: %d", broadcast);
}

Test(ops, inplace_random_strided_broadcast)
{
	for (int it = 0; it < 200; it++) {
		cow_dtype_t dt = it % 2 ? COW_DTYPE_INT64 : COW_DTYPE_FLOAT64;
		int64_t os[MAXD], bs[MAXD];
		int on = (int)rnd(0, 4), bn;
		cow_tensor_t *t, *b, *before;
		char op = it % 3 ? '+' : '*';

		for (int d = 0; d < on; d++)
			os[d] = rnd(0, 12) == 0 ? 0 : rnd(1, 4);
		bn = random_broadcastable(on, os, bs);
		t = random_tensor(dt, on, os);
		b = random_tensor(dt, bn, bs);
		TT_OK(cow_tensor_clone(t, &before));
		if (op == '+')
			TT_OK(cow_tensor_add_(t, b));
		else
			TT_OK(cow_tensor_mul_(t, b));
		tt_assert_shape(t, on, os);
		check_binary(op, before, b, t);
		cow_tensor_release(before);
		cow_tensor_release(b);
		cow_tensor_release(t);
	}
}

Test(ops, scalar_ops_and_fill_on_strided)
{
	const int64_t sz[3] = {3, 4, 2};
	cow_tensor_t *t = random_tensor(COW_DTYPE_INT32, 3, sz), *before;
	int64_t idx[MAXD] = {0};

	TT_OK(cow_tensor_clone(t, &before));
	TT_OK(cow_tensor_add_scalar_(t, 5));
	TT_OK(cow_tensor_mul_scalar_(t, -3));
	do
		cr_assert_eq(tt_get(t, idx), (tt_get(before, idx) + 5) * -3);
	while (tt_next(3, sz, idx));
	TT_OK(cow_tensor_fill_(t, 9.75));
	do
		cr_assert_eq(tt_get(t, idx), 9.0);
	while (tt_next(3, sz, idx));
	cow_tensor_release(before);
	cow_tensor_release(t);
}

Test(ops, zero_size)
{
	cow_tensor_t *a, *b, *r, *c, *s;

	TT_OK(cow_tensor_zeros(COW_DTYPE_FLOAT32, 2, (int64_t[]){0, 3}, sys,
	    &a));
	TT_OK(cow_tensor_full(COW_DTYPE_FLOAT32, 2, (int64_t[]){1, 3}, 2, sys,
	    &b));
	TT_OK(cow_tensor_add(a, b, &r));
	tt_assert_shape(r, 2, (int64_t[]){0, 3});
	cow_tensor_release(r);
	TT_OK(cow_tensor_add(b, a, &r));
	tt_assert_shape(r, 2, (int64_t[]){0, 3});
	cow_tensor_release(r);
	TT_OK(cow_tensor_add_(a, b));
	TT_OK(cow_tensor_fill_(a, 1));
	TT_OK(cow_tensor_copy_(a, b));
	TT_FAILS(cow_tensor_add_(b, a), COW_ESHAPE, "[0, 3]");
	TT_OK(cow_tensor_neg(a, &r));
	tt_assert_shape(r, 2, (int64_t[]){0, 3});
	cow_tensor_release(r);
	TT_OK(cow_tensor_sum(a, &s));
	cr_assert_eq(cow_tensor_ndim(s), 0);
	cr_assert_eq(tt_get(s, NULL), 0.0, "the empty sum is 0");
	cow_tensor_release(s);
	TT_OK(cow_tensor_sum_dim(a, 0, false, &s));
	tt_assert_values(s, (double[]){0, 0, 0});
	cow_tensor_release(s);
	TT_OK(cow_tensor_sum_dim(a, 1, true, &s));
	tt_assert_shape(s, 2, (int64_t[]){0, 1});
	cow_tensor_release(s);

	/* Writing zero elements of a COW tensor materialises nothing. */
	TT_OK(cow_tensor_lazy_clone(a, &c));
	TT_OK(cow_tensor_fill_(c, 3));
	TT_OK(cow_tensor_add_(c, b));
	cr_assert_eq(cow_storage_nbytes(cow_tensor_storage(c)), 0);
	cow_tensor_release(c);
	TT_OK(cow_tensor_narrow(b, 1, 1, 0, &r));
	TT_OK(cow_tensor_lazy_clone(b, &c));
	cow_tensor_release(r);
	TT_OK(cow_tensor_narrow(c, 1, 1, 0, &r));
	cow_stats_reset();
	TT_OK(cow_tensor_fill_(r, 3));
	TT_OK(cow_tensor_mul_scalar_(r, 3));
	cr_assert(cow_storage_is_cow(cow_tensor_storage(c)));
	cr_assert_eq(cow_storage_share_count(cow_tensor_storage(c)), 2);
	cow_tensor_release(r);
	cow_tensor_release(c);
	cow_tensor_release(a);
	cow_tensor_release(b);
}

struct conv_case {
	cow_dtype_t from, to;
	double in;
	double want; /* NAN: expect NaN */
};

Test(ops, copy_converts_dtypes)
{
	const struct conv_case cases[] = {
		{COW_DTYPE_FLOAT64, COW_DTYPE_INT32, 1.9, 1},
		{COW_DTYPE_FLOAT64, COW_DTYPE_INT32, -1.9, -1},
		{COW_DTYPE_FLOAT64, COW_DTYPE_INT32, 1e10, INT32_MAX},
		{COW_DTYPE_FLOAT64, COW_DTYPE_INT32, -1e10, INT32_MIN},
		{COW_DTYPE_FLOAT64, COW_DTYPE_INT32, NAN, 0},
		{COW_DTYPE_FLOAT32, COW_DTYPE_INT64, -INFINITY, (double)INT64_MIN},
		{COW_DTYPE_FLOAT64, COW_DTYPE_UINT8, -5, 0},
		{COW_DTYPE_FLOAT64, COW_DTYPE_UINT8, 300, 255},
		{COW_DTYPE_FLOAT64, COW_DTYPE_UINT8, 254.9, 254},
		{COW_DTYPE_INT64, COW_DTYPE_UINT8, 263, 7},
		{COW_DTYPE_INT64, COW_DTYPE_UINT8, -1, 255},
		{COW_DTYPE_INT64, COW_DTYPE_INT32, 4294967301.0, 5},
		{COW_DTYPE_INT64, COW_DTYPE_INT32, -2147483649.0, 2147483647},
		{COW_DTYPE_INT32, COW_DTYPE_INT64, -7, -7},
		{COW_DTYPE_FLOAT64, COW_DTYPE_BOOL, 0.0, 0},
		{COW_DTYPE_FLOAT64, COW_DTYPE_BOOL, -0.0, 0},
		{COW_DTYPE_FLOAT64, COW_DTYPE_BOOL, NAN, 1},
		{COW_DTYPE_INT32, COW_DTYPE_BOOL, -2, 1},
		{COW_DTYPE_BOOL, COW_DTYPE_FLOAT32, 1, 1},
		{COW_DTYPE_UINT8, COW_DTYPE_FLOAT64, 200, 200},
		{COW_DTYPE_FLOAT64, COW_DTYPE_FLOAT32, 1e300, INFINITY},
		{COW_DTYPE_FLOAT64, COW_DTYPE_FLOAT32, -1e300, -INFINITY},
		{COW_DTYPE_FLOAT64, COW_DTYPE_FLOAT32, 0.5, 0.5},
		{COW_DTYPE_FLOAT64, COW_DTYPE_FLOAT32, (double)FLT_MAX,
		    (double)FLT_MAX},
		{COW_DTYPE_FLOAT32, COW_DTYPE_FLOAT64, NAN, NAN},
		{COW_DTYPE_INT64, COW_DTYPE_FLOAT64, 12345, 12345},
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct conv_case *c = &cases[i];
		cow_tensor_t *src, *dst;
		double got;

		if (c->from == COW_DTYPE_INT64 && c->in > 2e9) {
			/* Exact int64 input. */
			TT_OK(cow_tensor_zeros(c->from, 0, NULL, sys, &src));
			TT_OK(cow_tensor_set_i64(src, NULL, (int64_t)c->in));
		} else if (c->from == COW_DTYPE_INT64 && c->in < -2e9) {
			TT_OK(cow_tensor_zeros(c->from, 0, NULL, sys, &src));
			TT_OK(cow_tensor_set_i64(src, NULL, (int64_t)c->in));
		} else {
			TT_OK(cow_tensor_full(c->from, 0, NULL, c->in, sys,
			    &src));
		}
		TT_OK(cow_tensor_zeros(c->to, 1, (int64_t[]){3}, sys, &dst));
		TT_OK(cow_tensor_copy_(dst, src));
		for (int64_t k = 0; k < 3; k++) {
			got = tt_get(dst, &k);
			if (isnan(c->want))
				cr_assert(isnan(got), "case %zu: %g", i, got);
			else
				cr_assert_eq(got, c->want,
				    "case %zu (%s -> %s of %g): got %g want %g",
				    i, cow_dtype_name(c->from),
				    cow_dtype_name(c->to), c->in, got, c->want);
		}
		cow_tensor_release(dst);
		cow_tensor_release(src);
	}
}

Test(ops, copy_broadcasts_into_strided_destination)
{
	const int64_t sz[2] = {4, 3};
	cow_tensor_t *big, *dst, *row;
	const double want[12] = {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3};

	TT_OK(cow_tensor_zeros(COW_DTYPE_INT32, 2, (int64_t[]){3, 8}, sys,
	    &big));
	/* dst = big.T[::2] restricted to 4 x 3: strides (2, 8). */
	TT_OK(cow_tensor_as_strided(big, 2, sz, (int64_t[]){2, 8}, 0, &dst));
	row = tt_from(COW_DTYPE_FLOAT64, 1, (int64_t[]){3},
	    (double[]){1.5, 2.5, 3.5});
	TT_OK(cow_tensor_copy_(dst, row));
	tt_assert_values(dst, want);
	for (int64_t i = 0; i < 3; i++)
		for (int64_t j = 0; j < 8; j++)
			cr_assert_eq(tt_get(big, (int64_t[]){i, j}),
			    j % 2 == 0 ? (double)(i + 1) : 0.0);
	cow_tensor_release(row);
	cow_tensor_release(dst);
	cow_tensor_release(big);
}

/* The sum of @t is a scalar of @dtype equal to @want. */
static void
assert_sum(const cow_tensor_t *t, cow_dtype_t dtype, double want)
{
	cow_tensor_t *s;

	TT_OK(cow_tensor_sum(t, &s));
	cr_assert_eq(cow_tensor_dtype(s), dtype);
	cr_assert_eq(tt_get(s, NULL), want);
	cow_tensor_release(s);
}

Test(ops, integer_and_bool_semantics)
{
	cow_tensor_t *a, *b, *r;

	a = tt_from(COW_DTYPE_INT32, 1, (int64_t[]){2},
	    (double[]){INT32_MAX, INT32_MIN});
	TT_OK(cow_tensor_add_scalar_(a, 1));
	tt_assert_values(a, (double[]){INT32_MIN, INT32_MIN + 1});
	TT_OK(cow_tensor_neg(a, &r));
	/* neg wraps at INT32_MIN. */
	tt_assert_values(r, (double[]){INT32_MIN, INT32_MAX});
	cow_tensor_release(r);
	cow_tensor_release(a);

	a = tt_from(COW_DTYPE_UINT8, 1, (int64_t[]){3}, (double[]){0, 1, 200});
	TT_OK(cow_tensor_neg(a, &r));
	tt_assert_values(r, (double[]){0, 255, 56});
	cow_tensor_release(r);
	TT_OK(cow_tensor_mul_scalar_(a, 2));
	tt_assert_values(a, (double[]){0, 2, 144});
	cow_tensor_release(a);

	a = tt_from(COW_DTYPE_BOOL, 1, (int64_t[]){4}, (double[]){0, 0, 1, 1});
	b = tt_from(COW_DTYPE_BOOL, 1, (int64_t[]){4}, (double[]){0, 1, 0, 1});
	TT_OK(cow_tensor_add(a, b, &r));
	tt_assert_values(r, (double[]){0, 1, 1, 1});
	cow_tensor_release(r);
	TT_OK(cow_tensor_mul(a, b, &r));
	tt_assert_values(r, (double[]){0, 0, 0, 1});
	cow_tensor_release(r);
	TT_FAILS(cow_tensor_neg(a, &r), COW_EDTYPE, "bool");
	assert_sum(a, COW_DTYPE_INT64, 2);
	cow_tensor_release(a);
	cow_tensor_release(b);
}

Test(ops, sums)
{
	const int64_t sz[3] = {2, 3, 4};
	cow_tensor_t *t = random_tensor(COW_DTYPE_INT32, 3, sz), *s, *f;
	int64_t idx[MAXD] = {0}, total = 0, by1[2][4] = {{0}};

	do {
		int64_t v = tt_geti(t, idx);

		total += v;
		by1[idx[0]][idx[2]] += v;
	} while (tt_next(3, sz, idx));
	TT_OK(cow_tensor_sum(t, &s));
	cr_assert_eq(cow_tensor_dtype(s), COW_DTYPE_INT64);
	cr_assert_eq(cow_tensor_ndim(s), 0);
	cr_assert_eq(tt_geti(s, NULL), total);
	cow_tensor_release(s);
	TT_OK(cow_tensor_sum_dim(t, 1, false, &s));
	tt_assert_shape(s, 2, (int64_t[]){2, 4});
	for (int64_t i = 0; i < 2; i++)
		for (int64_t k = 0; k < 4; k++)
			cr_assert_eq(tt_geti(s, (int64_t[]){i, k}), by1[i][k]);
	cow_tensor_release(s);
	TT_OK(cow_tensor_sum_dim(t, -2, true, &s));
	tt_assert_shape(s, 3, (int64_t[]){2, 1, 4});
	cr_assert_eq(tt_geti(s, (int64_t[]){1, 0, 3}), by1[1][3]);
	cow_tensor_release(s);

	TT_OK(cow_tensor_full(COW_DTYPE_FLOAT32, 2, (int64_t[]){3, 5}, 0.5,
	    sys, &f));
	assert_sum(f, COW_DTYPE_FLOAT32, 7.5);
	cow_tensor_release(f);
	cow_tensor_release(t);
}

Test(ops, equal)
{
	const int64_t sz[2] = {3, 4};
	cow_tensor_t *a = random_tensor(COW_DTYPE_FLOAT64, 2, sz), *b, *c;
	bool eq = false;

	TT_OK(cow_tensor_clone(a, &b));
	TT_OK(cow_tensor_equal(a, b, &eq));
	cr_assert(eq, "same values, different layouts");
	TT_OK(cow_tensor_set_f64(b, (int64_t[]){2, 3}, 1000));
	TT_OK(cow_tensor_equal(a, b, &eq));
	cr_assert_not(eq);
	TT_OK(cow_tensor_set_f64(b, (int64_t[]){2, 3}, NAN));
	TT_OK(cow_tensor_set_f64(a, (int64_t[]){2, 3}, NAN));
	TT_OK(cow_tensor_equal(a, b, &eq));
	cr_assert_not(eq, "NaN is not equal to NaN");
	TT_OK(cow_tensor_view(b, 1, (int64_t[]){12}, &c));
	TT_OK(cow_tensor_equal(b, c, &eq));
	cr_assert_not(eq, "different sizes");
	cow_tensor_release(c);
	TT_OK(cow_tensor_zeros(COW_DTYPE_FLOAT32, 2, sz, sys, &c));
	TT_FAILS(cow_tensor_equal(a, c, &eq), COW_EDTYPE, "float32");
	cow_tensor_release(c);
	cow_tensor_release(b);
	cow_tensor_release(a);
}

Test(ops, writes_into_overlapping_tensors_are_refused)
{
	cow_tensor_t *t, *row, *e, *c, *o, *ok, *src;
	const void *addr;

	t = tt_arange(COW_DTYPE_FLOAT64, 2, (int64_t[]){3, 4}, sys);
	TT_OK(cow_tensor_lazy_clone(t, &c));
	addr = cow_tensor_const_data(c);
	TT_OK(cow_tensor_select(c, 0, 1, &row));
	TT_OK(cow_tensor_expand(row, 2, (int64_t[]){5, 4}, &e));
	TT_FAILS(cow_tensor_fill_(e, 1), COW_EOVERLAP, "overlap");
	TT_FAILS(cow_tensor_add_scalar_(e, 1), COW_EOVERLAP, "[5, 4]");
	TT_FAILS(cow_tensor_add_(e, row), COW_EOVERLAP, "strides [0, 1]");
	TT_FAILS(cow_tensor_copy_(e, row), COW_EOVERLAP, "overlap");
	cr_assert(cow_storage_is_cow(cow_tensor_storage(c)),
	    "a refused write materialises nothing");
	cr_assert_eq(cow_tensor_const_data(c), addr);
	tt_assert_values(row, (double[]){4, 5, 6, 7});
	/* Reading an expanded view is fine. */
	TT_OK(cow_tensor_sum(e, &o));
	cr_assert_eq(tt_get(o, NULL), 5 * 22.0);
	cow_tensor_release(o);

	/* as_strided overlap found by the exact check: [3, 3] strides
	 * [1, 1] maps (0, 1) and (1, 0) to one element. */
	TT_OK(cow_tensor_as_strided(t, 2, (int64_t[]){3, 3},
	    (int64_t[]){1, 1}, 0, &o));
	TT_FAILS(cow_tensor_mul_scalar_(o, 2), COW_EOVERLAP, "[1, 1]");
	cow_tensor_release(o);
	/* [3, 3] strides [2, 3] fails the fast test but does not overlap:
	 * offsets 0,3,6,2,5,8,4,7,10. */
	TT_OK(cow_tensor_as_strided(t, 2, (int64_t[]){3, 3},
	    (int64_t[]){2, 3}, 1, &ok));
	src = tt_arange(COW_DTYPE_FLOAT64, 2, (int64_t[]){3, 3}, sys);
	TT_OK(cow_tensor_add_scalar_(src, 100));
	TT_OK(cow_tensor_copy_(ok, src));
	for (int64_t i = 0; i < 3; i++)
		for (int64_t j = 0; j < 3; j++) {
			int64_t off = 1 + 2 * i + 3 * j;

			cr_assert_eq(tt_get(t, (int64_t[]){off / 4, off % 4}),
			    100.0 + (double)(i * 3 + j));
		}
	/* Offsets 0, 2 and 10 are not in the layout: untouched. */
	cr_assert_eq(tt_get(t, (int64_t[]){0, 0}), 0.0);
	cr_assert_eq(tt_get(t, (int64_t[]){0, 2}), 2.0);
	cr_assert_eq(tt_get(t, (int64_t[]){2, 2}), 10.0);
	cow_tensor_release(src);
	cow_tensor_release(ok);
	cow_tensor_release(e);
	cow_tensor_release(row);
	cow_tensor_release(c);
	cow_tensor_release(t);
}

Test(ops, inputs_aliasing_the_destination)
{
	const int64_t sq[2] = {4, 4};
	cow_tensor_t *t = tt_arange(COW_DTYPE_INT64, 2, sq, sys), *tr, *snap;
	cow_tensor_t *v, *a, *b, *row;
	int64_t idx[MAXD] = {0};

	/* t += t.T reads every element before it is overwritten. */
	TT_OK(cow_tensor_clone(t, &snap));
	TT_OK(cow_tensor_transpose(t, 0, 1, &tr));
	TT_OK(cow_tensor_add_(t, tr));
	do
		cr_assert_eq(tt_geti(t, idx), tt_geti(snap, idx) +
		    tt_geti(snap, (int64_t[]){idx[1], idx[0]}));
	while (tt_next(2, sq, idx));
	cow_tensor_release(tr);
	cow_tensor_release(snap);
	cow_tensor_release(t);

	/* Shifting copy: v[1:] = v[:-1] (overlapping ranges). */
	v = tt_arange(COW_DTYPE_INT32, 1, (int64_t[]){6}, sys);
	TT_OK(cow_tensor_slice(v, 0, 1, 6, 1, &a));
	TT_OK(cow_tensor_slice(v, 0, 0, 5, 1, &b));
	TT_OK(cow_tensor_copy_(a, b));
	tt_assert_values(v, (double[]){0, 0, 1, 2, 3, 4});
	/* And the other way. */
	TT_OK(cow_tensor_copy_(b, a));
	tt_assert_values(v, (double[]){0, 1, 2, 3, 4, 4});
	cow_tensor_release(a);
	cow_tensor_release(b);
	cow_tensor_release(v);

	/* m *= m[0] (row 0 broadcast, and row 0 itself is written). */
	t = tt_arange(COW_DTYPE_FLOAT32, 2, (int64_t[]){3, 3}, sys);
	TT_OK(cow_tensor_select(t, 0, 0, &row));
	TT_OK(cow_tensor_add_scalar_(row, 1)); /* row 0 = 1 2 3 */
	TT_OK(cow_tensor_mul_(t, row));
	tt_assert_values(t, (double[]){1, 4, 9, 3, 8, 15, 6, 14, 24});
	/* m = m + m in place (same mapping, no temporary needed). */
	TT_OK(cow_tensor_add_(t, t));
	tt_assert_values(t, (double[]){2, 8, 18, 6, 16, 30, 12, 28, 48});
	cow_tensor_release(row);
	cow_tensor_release(t);
}

/*
 * An input that views the destination's storage without overlapping it is
 * read in place (no temporary), and the destination's write access moves
 * that storage's data (a COW copy): the input must be read from the new
 * data, not from the shared original that another thread could free.
 */
Test(ops, input_on_the_destination_storage_follows_materialisation)
{
	const int64_t sz[2] = {2, 4};
	cow_tensor_t *T = tt_arange(COW_DTYPE_INT64, 2, sz, sys), *C, *r0, *r1;
	const void *addr = cow_tensor_const_data(T);
	cow_stats_t st;

	TT_OK(cow_tensor_lazy_clone(T, &C));
	TT_OK(cow_tensor_select(C, 0, 0, &r0));
	TT_OK(cow_tensor_select(C, 0, 1, &r1));
	cow_stats_reset();
	TT_OK(cow_tensor_add_(r1, r0));
	cow_stats_get(&st);
	cr_assert_eq(st.materialize_copies, 1);
	cr_assert_eq(st.bytes_copied, 8 * sizeof(int64_t),
	    "one copy: the storage, and no temporary for r0");
	cr_assert_neq(cow_tensor_const_data(C), addr);
	tt_assert_values(C, (double[]){0, 1, 2, 3, 4, 6, 8, 10});
	tt_assert_values(T, (double[]){0, 1, 2, 3, 4, 5, 6, 7});
	/* T's share gone, C's data is its own: r0 reads it. */
	cow_tensor_release(T);
	TT_OK(cow_tensor_add_(r0, r1));
	tt_assert_values(r0, (double[]){4, 7, 10, 13});
	cow_tensor_release(r1);
	cow_tensor_release(r0);
	cow_tensor_release(C);
}

Test(ops, inplace_materialises_only_the_destination)
{
	const int64_t sz[1] = {16};
	cow_tensor_t *T = tt_arange(COW_DTYPE_FLOAT64, 1, sz, sys), *C;
	const void *addr = cow_tensor_const_data(T);
	cow_stats_t st;

	TT_OK(cow_tensor_lazy_clone(T, &C));
	cow_stats_reset();
	TT_OK(cow_tensor_add_(C, T));
	cow_stats_get(&st);
	cr_assert_eq(st.materialize_copies, 1);
	cr_assert_eq(st.bytes_copied, 16 * 8);
	cr_assert_eq(cow_tensor_const_data(T), addr, "T was only read");
	cr_assert_neq(cow_tensor_const_data(C), addr);
	for (int64_t k = 0; k < 16; k++) {
		cr_assert_eq(tt_get(T, &k), (double)k);
		cr_assert_eq(tt_get(C, &k), 2.0 * (double)k);
	}
	cow_tensor_release(C);
	cow_tensor_release(T);
}

Test(ops, dtype_and_shape_errors)
{
	cow_tensor_t *a, *b, *r = NULL;

	TT_OK(cow_tensor_zeros(COW_DTYPE_INT32, 2, (int64_t[]){2, 3}, sys, &a));
	TT_OK(cow_tensor_zeros(COW_DTYPE_FLOAT32, 1, (int64_t[]){3}, sys, &b));
	TT_FAILS(cow_tensor_add(a, b, &r), COW_EDTYPE, "int32");
	cr_assert(strstr(cow_last_error(), "float32") != NULL);
	TT_FAILS(cow_tensor_mul_(a, b), COW_EDTYPE, "float32");
	cow_tensor_release(b);
	TT_OK(cow_tensor_zeros(COW_DTYPE_INT32, 1, (int64_t[]){4}, sys, &b));
	TT_FAILS(cow_tensor_add(a, b, &r), COW_ESHAPE, "[2, 3] and [4]");
	TT_FAILS(cow_tensor_copy_(a, b), COW_ESHAPE, "[4] to shape [2, 3]");
	TT_FAILS(cow_tensor_add_(b, a), COW_ESHAPE, "[2, 3] to shape [4]");
	cr_assert_null(r);
	cow_tensor_release(b);
	cow_tensor_release(a);
}
