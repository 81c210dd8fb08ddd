/*
 * Sums in every world (issue 36): the plain runtime, functional mode on
 * the strided backend and the opaque test backend (functional_test.h's
 * three ways) must give the same bits for cow_tensor_sum and
 * cow_tensor_sum_dim, and those must be the bits of ops.h's order rule,
 * which a model here computes from the plain tensor's layout:
 *
 * - runs: for a full sum, the innermost dimensions of size above 1 that
 *   the strides let one walk (each next one's stride is the run's stride
 *   times its length); for a sum over dimension d, d itself when it is
 *   the innermost of size above 1, else single elements;
 * - a run of n elements summed as NumPy 1.24's pairwise_sum, with k = 8
 *   partial sums for real dtypes and 4 for complex ones (fewer than k in
 *   index order from +0; up to 16k in k interleaved partial sums combined
 *   as a tree, the tail added last; longer runs split at n / 2 rounded
 *   down to a multiple of k);
 * - the run sums added to 0 in index order; float16 and bfloat16
 *   accumulate in float32 and round once at the end.
 *
 * The values are adversarial: cancellation (B, s, -B, s, ..., where B + s
 * rounds back to B, so every order gives other bits), and random signs,
 * mantissas and exponents over a wide range; the run lengths straddle the
 * rule's thresholds (k, 16k, splits); the layouts are contiguous,
 * transposed, stepped, narrowed, expanded (stride 0), diagonal and
 * permuted, and a functional tensor written in place keeps its layout
 * while its value is new. A world that sums in another order (index order,
 * one run where the layout has several, ...) gives other bits.
 */
#include <math.h>

#include "functional_test.h"

TestSuite(sum_worlds, .timeout = 120.0);

#define MAXD COW_TENSOR_MAX_NDIM
#define MAX_IN 1100
#define MAX_OUT_BYTES (MAX_IN * 16)

static const cow_dtype_t float_dtypes[] = {COW_DTYPE_FLOAT16,
    COW_DTYPE_BFLOAT16, COW_DTYPE_FLOAT32, COW_DTYPE_FLOAT64,
    COW_DTYPE_COMPLEX64, COW_DTYPE_COMPLEX128};

enum layout {
	CONTIG,        /* the base */
	TRANSPOSE,     /* dims 0 and last swapped */
	STEP,          /* every second element of the last dim */
	NARROW,        /* the last dim without its last 3 */
	NARROW_MID,    /* dim 1 without its first and last */
	EXPAND,        /* the base's size-1 dims expanded to @to */
	DIAGONAL,      /* the main diagonal of a square base */
	PERMUTE        /* (2, 0, 1) of a 3-d base */
};

struct scase {
	const char *name;
	int ndim;
	int64_t sizes[3];     /* the base's */
	enum layout layout;
	int64_t to[3];        /* EXPAND: the expanded sizes */
	bool inplace;         /* view *= 1 before the sums */
};

static const struct scase cases[] = {
	{"n4", 1, {4}, CONTIG, {0}, false},
	{"n7", 1, {7}, CONTIG, {0}, false},
	{"n8", 1, {8}, CONTIG, {0}, false},
	{"n9", 1, {9}, CONTIG, {0}, false},
	{"n17", 1, {17}, CONTIG, {0}, false},
	{"n63", 1, {63}, CONTIG, {0}, false},
	{"n64", 1, {64}, CONTIG, {0}, false},
	{"n65", 1, {65}, CONTIG, {0}, false},
	{"n127", 1, {127}, CONTIG, {0}, false},
	{"n128", 1, {128}, CONTIG, {0}, false},
	{"n129", 1, {129}, CONTIG, {0}, false},
	{"n136", 1, {136}, CONTIG, {0}, false},
	{"n257", 1, {257}, CONTIG, {0}, false},
	{"n1031", 1, {1031}, CONTIG, {0}, false},
	{"3x50", 2, {3, 50}, CONTIG, {0}, false},
	{"5x8", 2, {5, 8}, CONTIG, {0}, false},
	{"40x6.T", 2, {40, 6}, TRANSPOSE, {0}, false},
	{"130x3.T", 2, {130, 3}, TRANSPOSE, {0}, false},
	{"4x34[::2]", 2, {4, 34}, STEP, {0}, false},
	{"4x20[:17]", 2, {4, 20}, NARROW, {0}, false},
	{"3x6x9[1:5]", 3, {3, 6, 9}, NARROW_MID, {0}, false},
	{"3x1x40[:37]", 3, {3, 1, 40}, NARROW, {0}, false},
	{"1x33->5x33", 2, {1, 33}, EXPAND, {5, 33}, false},
	{"20x1->20x9", 2, {20, 1}, EXPAND, {20, 9}, false},
	{"1x1->12x11", 2, {1, 1}, EXPAND, {12, 11}, false},
	{"20x20.diag", 2, {20, 20}, DIAGONAL, {0}, false},
	{"4x5x6.perm", 3, {4, 5, 6}, PERMUTE, {0}, false},
	{"40x6.T*=1", 2, {40, 6}, TRANSPOSE, {0}, true},
	{"4x20[:17]*=1", 2, {4, 20}, NARROW, {0}, true},
	{"4x5x6.perm*=1", 3, {4, 5, 6}, PERMUTE, {0}, true},
	{"3x50*=1", 2, {3, 50}, CONTIG, {0}, true},
};

/* ------------------------------------------------------------------ */
/* Values.                                                              */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t
rnd64(void)
{
	return tt_xorshift64(&rng_state);
}

/* The real dtype of @dt's components. */
static cow_dtype_t
part_dtype(cow_dtype_t dt)
{
	if (dt == COW_DTYPE_COMPLEX64)
		return COW_DTYPE_FLOAT32;
	if (dt == COW_DTYPE_COMPLEX128)
		return COW_DTYPE_FLOAT64;
	return dt;
}

static int
nparts(cow_dtype_t dt)
{
	return part_dtype(dt) == dt ? 1 : 2;
}

/* A finite value of the real dtype @pt: (-1)^sign * 1.m * 2^e, its
 * mantissa bits random. */
static void
put_part(cow_dtype_t pt, char *p, bool neg, int e)
{
	uint64_t m = rnd64();
	uint16_t h;
	uint32_t f;
	uint64_t d;

	switch (pt) {
	case COW_DTYPE_FLOAT16:
		h = (uint16_t)((neg ? 0x8000u : 0) |
		    (unsigned)(e + 15) << 10 | (m & 0x3ff));
		memcpy(p, &h, 2);
		break;
	case COW_DTYPE_BFLOAT16:
		h = (uint16_t)((neg ? 0x8000u : 0) |
		    (unsigned)(e + 127) << 7 | (m & 0x7f));
		memcpy(p, &h, 2);
		break;
	case COW_DTYPE_FLOAT32:
		f = (neg ? 0x80000000u : 0) | (uint32_t)(e + 127) << 23 |
		    (uint32_t)(m & 0x7fffff);
		memcpy(p, &f, 4);
		break;
	default:
		d = (neg ? 0x8000000000000000ull : 0) |
		    (uint64_t)(e + 1023) << 52 | (m & 0xfffffffffffffull);
		memcpy(p, &d, 8);
		break;
	}
}

/* A value of @pt with mantissa 1.0 (put_part's without random bits). */
static void
put_pow2(cow_dtype_t pt, char *p, bool neg, int e)
{
	double x = ldexp(neg ? -1.0 : 1.0, e);
	float f = (float)x;
	uint32_t b;
	uint16_t h;

	switch (pt) {
	case COW_DTYPE_FLOAT16:
		h = (uint16_t)((neg ? 0x8000u : 0) | (unsigned)(e + 15) << 10);
		memcpy(p, &h, 2);
		break;
	case COW_DTYPE_BFLOAT16:
		memcpy(&b, &f, 4);
		h = (uint16_t)(b >> 16);
		memcpy(p, &h, 2);
		break;
	case COW_DTYPE_FLOAT32:
		memcpy(p, &f, 4);
		break;
	default:
		memcpy(p, &x, 8);
		break;
	}
}

/*
 * Exponents: B and s of the cancellation pattern (B + s rounds back to B
 * in the accumulation precision: float32 for the 16-bit dtypes), and the
 * range of the random values (their sums stay finite in the dtype).
 */
static void
exponents(cow_dtype_t pt, int *big, int *small, int *lo, int *hi)
{
	switch (pt) {
	case COW_DTYPE_FLOAT16:
		*big = 15, *small = -12, *lo = -14, *hi = 4;
		break;
	case COW_DTYPE_BFLOAT16:
		*big = 30, *small = 0, *lo = -20, *hi = 20;
		break;
	case COW_DTYPE_FLOAT32:
		*big = 27, *small = 0, *lo = -20, *hi = 20;
		break;
	default:
		*big = 60, *small = 0, *lo = -40, *hi = 40;
		break;
	}
}

/* @n elements of @dt at @p: the cancellation pattern (@cancel; the
 * imaginary parts shifted by one) or random ones. */
static void
fill_values(cow_dtype_t dt, char *p, int64_t n, bool cancel)
{
	cow_dtype_t pt = part_dtype(dt);
	size_t ps = cow_dtype_size(pt);
	int big, small, lo, hi;

	exponents(pt, &big, &small, &lo, &hi);
	for (int64_t i = 0; i < n; i++) {
		for (int k = 0; k < nparts(dt); k++) {
			char *q = p + ((size_t)i * (size_t)nparts(dt) +
			    (size_t)k) * ps;
			int64_t j = i + k;

			if (cancel)
				put_pow2(pt, q, j % 4 == 2, j % 2 == 0 ?
				    big : small);
			else
				put_part(pt, q, rnd64() & 1, lo +
				    (int)(rnd64() % (uint64_t)(hi - lo + 1)));
		}
	}
}

/* The value of the real element of @pt at @p, exactly. */
static double
get_part(cow_dtype_t pt, const char *p)
{
	uint16_t h;
	uint32_t b;
	float f;
	double d;
	int e;

	switch (pt) {
	case COW_DTYPE_FLOAT16:
		memcpy(&h, p, 2);
		e = (h >> 10) & 0x1f;
		d = e == 0 ? ldexp(h & 0x3ff, -24) :
		    ldexp((h & 0x3ff) | 0x400, e - 25);
		return h & 0x8000 ? -d : d;
	case COW_DTYPE_BFLOAT16:
		memcpy(&h, p, 2);
		b = (uint32_t)h << 16;
		memcpy(&f, &b, 4);
		return f;
	case COW_DTYPE_FLOAT32:
		memcpy(&f, p, 4);
		return f;
	default:
		memcpy(&d, p, 8);
		return d;
	}
}

/* ------------------------------------------------------------------ */
/* The model of the order rule.                                         */

/* a + b in the accumulation precision (@narrow: float32; a sum of two
 * floats computed in double and rounded once is the float sum). */
static double
add(bool narrow, double a, double b)
{
	return narrow ? (double)(float)(a + b) : a + b;
}

/* NumPy 1.24's pairwise sum of x[0], x[s], ..., x[(n - 1) s] with @k
 * partial sums (8 real, 4 complex). */
static double
pairwise(bool narrow, int k, const double *x, int64_t n, int64_t s)
{
	double r[8], res = 0;
	int64_t i, n2;

	if (n < k) {
		for (i = 0; i < n; i++)
			res = add(narrow, res, x[i * s]);
		return res;
	}
	if (n <= 16 * k) {
		for (int j = 0; j < k; j++)
			r[j] = x[j * s];
		for (i = k; i < n - n % k; i += k)
			for (int j = 0; j < k; j++)
				r[j] = add(narrow, r[j], x[(i + j) * s]);
		/* The partial sums combined as a tree, pairs first. */
		for (int w = k; w > 1; w /= 2)
			for (int j = 0; j < w / 2; j++)
				r[j] = add(narrow, r[2 * j], r[2 * j + 1]);
		res = r[0];
		for (; i < n; i++)
			res = add(narrow, res, x[i * s]);
		return res;
	}
	n2 = n / 2;
	n2 -= n2 % k;
	return add(narrow, pairwise(narrow, k, x, n2, s),
	    pairwise(narrow, k, x + n2 * s, n - n2, s));
}

/*
 * The length of a full sum's runs under @t's layout: the innermost
 * dimension of size above 1, and each next one (outwards, skipping size
 * 1) whose stride is the run's stride times its length.
 */
static int64_t
run_length(const cow_tensor_t *t)
{
	const int64_t *sz = cow_tensor_sizes(t), *st = cow_tensor_strides(t);
	int64_t run = 1, stride = 0;
	bool first = true;

	for (int d = cow_tensor_ndim(t) - 1; d >= 0; d--) {
		if (sz[d] == 1)
			continue;
		if (!first && st[d] != stride * run)
			break;
		if (first)
			stride = st[d];
		first = false;
		run *= sz[d];
	}
	return run;
}

/*
 * The expected bytes of the sum of @t (@dim < 0: every element) in *out
 * (@t plain; its elements are read through its strides). Each part of
 * each output element: its elements gathered in index order, then summed
 * in runs as the rule says.
 */
static size_t
model_sum(const cow_tensor_t *t, int dim, char *out)
{
	static double part[MAX_IN], acc[MAX_IN * 2];
	cow_dtype_t dt = cow_tensor_dtype(t), pt = part_dtype(dt);
	bool narrow = pt != COW_DTYPE_FLOAT64;
	int nd = cow_tensor_ndim(t), np = nparts(dt), k = np == 2 ? 4 : 8;
	const int64_t *sz = cow_tensor_sizes(t), *st = cow_tensor_strides(t);
	int64_t n = cow_tensor_numel(t), run, len, nout = 1, idx[MAXD];
	const char *base = NULL;
	size_t isz = cow_dtype_size(dt), ps = cow_dtype_size(pt);

	if (n > 0)
		TT_OK(cow_tensor_read_data(t, (const void **)&base));
	/* Output element o gathers the elements whose index has o's
	 * coordinates outside @dim, in index order along it. */
	if (dim < 0) {
		len = n;
		run = run_length(t);
	} else {
		bool innermost = true;

		for (int d = dim + 1; d < nd; d++)
			innermost = innermost && sz[d] == 1;
		len = sz[dim];
		cr_assert_gt(len, 0);
		nout = n / len;
		run = innermost ? len : 1;
	}
	for (int64_t o = 0; o < nout; o++) {
		for (int p = 0; p < np; p++) {
			double a = 0;

			for (int64_t i = 0; i < len; i++) {
				/* Row-major index: output o's i-th element. */
				int64_t lin = 0, off = 0, r;

				if (dim < 0) {
					lin = i;
				} else {
					int64_t inner = tt_numel(nd - dim - 1,
					    sz + dim + 1);

					lin = (o / inner * len + i) * inner +
					    o % inner;
				}
				r = lin;
				for (int d = nd - 1; d >= 0; d--) {
					idx[d] = r % sz[d];
					r /= sz[d];
					off += idx[d] * st[d];
				}
				part[i] = get_part(pt, base + off *
				    (int64_t)isz + p * (int64_t)ps);
			}
			for (int64_t i = 0; i < len; i += run)
				a = add(narrow, a, pairwise(narrow, k, part + i,
				    len - i < run ? len - i : run, 1));
			acc[o * np + p] = a;
		}
	}
	/* Encode: float16 and bfloat16 round once (the library's
	 * conversion, which test_half checks). */
	for (int64_t o = 0; o < nout * np; o++) {
		char *q = out + o * (int64_t)ps;
		float f = (float)acc[o];

		if (pt == COW_DTYPE_FLOAT64) {
			memcpy(q, &acc[o], 8);
		} else if (pt == COW_DTYPE_FLOAT32) {
			memcpy(q, &f, 4);
		} else {
			cow_tensor_t *a, *b;
			const void *v;

			TT_OK(cow_tensor_from_data(COW_DTYPE_FLOAT32, 0, NULL,
			    &f, NULL, &a));
			TT_OK(cow_tensor_empty(pt, 0, NULL, NULL, &b));
			TT_OK(cow_tensor_copy_(b, a));
			TT_OK(cow_tensor_read_data(b, &v));
			memcpy(q, v, 2);
			cow_tensor_release(a);
			cow_tensor_release(b);
		}
	}
	return (size_t)(nout * (int64_t)isz);
}

/* ------------------------------------------------------------------ */
/* The worlds.                                                          */

/* The view of @c over @base (a new reference). */
static cow_tensor_t *
make_view(const struct scase *c, cow_tensor_t *base)
{
	int last = c->ndim - 1;
	cow_tensor_t *v;

	switch (c->layout) {
	case CONTIG:
		cow_tensor_retain(base);
		v = base;
		break;
	case TRANSPOSE:
		TT_OK(cow_tensor_transpose(base, 0, last, &v));
		break;
	case STEP:
		TT_OK(cow_tensor_slice(base, last, 0, c->sizes[last], 2, &v));
		break;
	case NARROW:
		TT_OK(cow_tensor_narrow(base, last, 0, c->sizes[last] - 3,
		    &v));
		break;
	case NARROW_MID:
		TT_OK(cow_tensor_narrow(base, 1, 1, c->sizes[1] - 2, &v));
		break;
	case EXPAND:
		TT_OK(cow_tensor_expand(base, c->ndim, c->to, &v));
		break;
	case DIAGONAL:
		TT_OK(cow_tensor_diagonal(base, 0, 0, 1, &v));
		break;
	default:
		TT_OK(cow_tensor_permute(base, 3, (int[]){2, 0, 1}, &v));
		break;
	}
	return v;
}

/* The bytes of the contiguous result @r into @out; its byte count. */
static size_t
result_bytes(cow_tensor_t *r, char *out)
{
	size_t nb = (size_t)cow_tensor_numel(r) *
	    cow_dtype_size(cow_tensor_dtype(r));
	const void *p;

	cr_assert_leq(nb, (size_t)MAX_OUT_BYTES);
	TT_OK(cow_tensor_read_data(r, &p));
	memcpy(out, p, nb);
	return nb;
}

/* Runs @c's sum (@dim < 0: every element) in world @w over @data. */
static size_t
world_sum(enum way w, const struct scase *c, cow_dtype_t dt,
    const char *data, int dim, char *out, char *model, size_t *model_nb)
{
	const cow_backend_t *be;
	cow_tensor_t *base, *v, *r;
	size_t nb;
	bool mode;

	way_enter(w, &be, &mode);
	TT_OK(cow_tensor_from_data(dt, c->ndim, c->sizes, data, NULL, &base));
	v = make_view(c, base);
	if (c->inplace)
		TT_OK(cow_tensor_mul_scalar_(v, 1.0));
	if (dim < 0)
		TT_OK(cow_tensor_sum(v, &r));
	else
		TT_OK(cow_tensor_sum_dim(v, dim, dim % 2 == 1, &r));
	cr_assert_eq(cow_tensor_is_functional(r), w != PLAIN);
	nb = result_bytes(r, out);
	if (w == PLAIN)
		*model_nb = model_sum(v, dim, model);
	cow_tensor_release(r);
	cow_tensor_release(v);
	cow_tensor_release(base);
	way_leave(be, mode);
	return nb;
}

static void
describe(char *buf, size_t n, const struct scase *c, cow_dtype_t dt,
    bool cancel, int dim)
{
	if (dim < 0)
		snprintf(buf, n, "%s %s %s: sum", cow_dtype_name(dt), c->name,
		    cancel ? "cancelling" : "random");
	else
		snprintf(buf, n, "%s %s %s: sum_dim(%d)", cow_dtype_name(dt),
		    c->name, cancel ? "cancelling" : "random", dim);
}

/* Every world's bytes against the model's; counts the differences. */
static int
check_case(const struct scase *c, cow_dtype_t dt, bool cancel, int dim,
    const char *data)
{
	static char got[WAYS][MAX_OUT_BYTES], want[MAX_OUT_BYTES];
	size_t nb[WAYS], want_nb = 0;
	char what[160];
	int bad = 0;

	for (int w = 0; w < WAYS; w++)
		nb[w] = world_sum((enum way)w, c, dt, data, dim, got[w], want,
		    &want_nb);
	describe(what, sizeof what, c, dt, cancel, dim);
	for (int w = 0; w < WAYS; w++) {
		cr_assert_eq(nb[w], want_nb, "%s: %s gave %zu bytes, want %zu",
		    what, way_name[w], nb[w], want_nb);
		if (memcmp(got[w], want, want_nb) != 0) {
			size_t ps = cow_dtype_size(part_dtype(dt));
			size_t i = 0;

			while (memcmp(got[w] + i, want + i, ps) == 0)
				i += ps;
			cr_log_error("%s: %s differs from the rule at byte "
			    "%zu: %.17g, want %.17g", what, way_name[w], i,
			    get_part(part_dtype(dt), got[w] + i),
			    get_part(part_dtype(dt), want + i));
			bad++;
		}
	}
	return bad;
}

/* Every case, dtype, value kind and reduction. */
static void
run_all(void)
{
	static char data[MAX_IN * 16];
	int bad = 0, checked = 0;

	for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
		const struct scase *c = &cases[ci];
		int64_t n = tt_numel(c->ndim, c->sizes);
		int vnd = c->layout == DIAGONAL ? 1 : c->ndim;

		cr_assert_leq(n, MAX_IN);
		for (size_t di = 0; di < sizeof float_dtypes /
		    sizeof float_dtypes[0]; di++) {
			cow_dtype_t dt = float_dtypes[di];

			for (int cancel = 0; cancel < 2; cancel++) {
				fill_values(dt, data, n, cancel);
				for (int dim = -1; dim < vnd; dim++) {
					bad += check_case(c, dt, cancel, dim,
					    data);
					checked++;
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%d of %d sums (each in 3 worlds) differ from "
	    "ops.h's order rule", bad, checked * WAYS);
}

Test(sum_worlds, every_world_sums_by_the_order_rule)
{
	run_all();
}

/* The example: a float32 cancellation that index order and the
 * rule agree on (fewer than 8 elements), and its 8-element version, where
 * the rule's eight partial sums give 0 and index order 1. */
Test(sum_worlds, cancellation_examples)
{
	static const float four[4] = {1e8f, 1, -1e8f, 1};
	static const float eight[8] = {1e8f, 1, -1e8f, 1, 0, 0, 0, 0};
	const float *x[2] = {four, eight};
	const double want[2] = {1, 0};

	for (int w = 0; w < WAYS; w++) {
		for (int i = 0; i < 2; i++) {
			const cow_backend_t *be;
			cow_tensor_t *t, *s;
			int64_t n = i == 0 ? 4 : 8;
			double v;
			bool mode;

			way_enter((enum way)w, &be, &mode);
			TT_OK(cow_tensor_from_data(COW_DTYPE_FLOAT32, 1, &n,
			    x[i], NULL, &t));
			TT_OK(cow_tensor_sum(t, &s));
			TT_OK(cow_tensor_get_f64(s, NULL, &v));
			cr_expect_eq(v, want[i], "%s: the sum of %lld "
			    "elements is %g, want %g", way_name[w],
			    (long long)n, v, want[i]);
			cow_tensor_release(s);
			cow_tensor_release(t);
			way_leave(be, mode);
		}
	}
}
