/*
 * Views against an independent index-math reference.
 *
 * The base is a contiguous arange, so the value of any element is its
 * position in the storage. For each random chain of views the reference
 * keeps, per step, the definition of the view (which parent index an index
 * of the view denotes, and the view's shape) without looking at the
 * tensor's strides; the expected value of an element is found by walking
 * the chain back to the base (as_strided is absolute: it names a storage
 * position directly). Every element of every view in the chain is checked.
 * And: views, lazy clones and reshapes read, write and copy no element.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cow_test.h"
#include "tensor_test.h"

#define MAXD COW_TENSOR_MAX_NDIM
#define CHAINS 400
#define DEPTH 6

enum kind {
	K_SELECT, K_SLICE, K_NARROW, K_TRANSPOSE, K_PERMUTE, K_UNSQUEEZE,
	K_SQUEEZE, K_SQUEEZE_ALL, K_EXPAND, K_DIAGONAL, K_VIEW, K_AS_STRIDED,
	K_COUNT
};

static const char *const kind_name[K_COUNT] = {
	"select", "slice", "narrow", "transpose", "permute", "unsqueeze",
	"squeeze", "squeeze_all", "expand", "diagonal", "view", "as_strided"
};

/* One step of a chain: the view's definition and both shapes. */
struct step {
	enum kind kind;
	int pndim, ndim;
	int64_t psizes[MAXD], sizes[MAXD];
	int dim, dim2, lead;
	int64_t a, b;           /* index / start / offset; step */
	int perm[MAXD];
	int64_t strides[MAXD];  /* as_strided */
};

static uint64_t rng_state;

static uint64_t
rng(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static int64_t
rnd(int64_t lo, int64_t hi)
{
	return lo + (int64_t)(rng() % (uint64_t)(hi - lo + 1));
}

/* A dim argument: sometimes written negatively. */
static int
dim_arg(int d, int ndim)
{
	return rng() % 2 ? d - ndim : d;
}

static int64_t
ravel(int ndim, const int64_t *sizes, const int64_t *idx)
{
	int64_t f = 0;

	for (int d = 0; d < ndim; d++)
		f = f * sizes[d] + idx[d];
	return f;
}

static void
unravel(int64_t f, int ndim, const int64_t *sizes, int64_t *idx)
{
	for (int d = ndim - 1; d >= 0; d--) {
		idx[d] = f % sizes[d];
		f /= sizes[d];
	}
}

/* Map an index of the step's view to its parent's index. Returns false
 * when the step is absolute and *pos is already the storage position. */
static bool
map_back(const struct step *s, const int64_t *in, int64_t *out, int64_t *pos)
{
	int k = 0;

	switch (s->kind) {
	case K_SELECT:
		for (int d = 0; d < s->pndim; d++)
			out[d] = d == s->dim ? s->a : in[k++];
		break;
	case K_SLICE:
	case K_NARROW:
		for (int d = 0; d < s->pndim; d++)
			out[d] = d == s->dim ? s->a + in[d] * s->b : in[d];
		break;
	case K_TRANSPOSE:
		for (int d = 0; d < s->pndim; d++)
			out[d] = in[d];
		out[s->dim] = in[s->dim2];
		out[s->dim2] = in[s->dim];
		break;
	case K_PERMUTE:
		for (int j = 0; j < s->ndim; j++)
			out[s->perm[j]] = in[j];
		break;
	case K_UNSQUEEZE:
		for (int d = 0; d < s->ndim; d++)
			if (d != s->dim)
				out[k++] = in[d];
		break;
	case K_SQUEEZE:
		if (s->ndim == s->pndim) {
			for (int d = 0; d < s->pndim; d++)
				out[d] = in[d];
			break;
		}
		for (int d = 0; d < s->pndim; d++)
			out[d] = d == s->dim ? 0 : in[k++];
		break;
	case K_SQUEEZE_ALL:
		for (int d = 0; d < s->pndim; d++)
			out[d] = s->psizes[d] == 1 ? 0 : in[k++];
		break;
	case K_EXPAND:
		for (int d = 0; d < s->pndim; d++)
			out[d] = s->psizes[d] == 1 ? 0 : in[d + s->lead];
		break;
	case K_DIAGONAL:
		for (int d = 0; d < s->pndim; d++)
			if (d != s->dim && d != s->dim2)
				out[d] = in[k++];
		out[s->dim] = in[k] + (s->a < 0 ? -s->a : 0);
		out[s->dim2] = in[k] + (s->a > 0 ? s->a : 0);
		break;
	case K_VIEW:
		unravel(ravel(s->ndim, s->sizes, in), s->pndim, s->psizes, out);
		break;
	case K_AS_STRIDED:
		*pos = s->a;
		for (int d = 0; d < s->ndim; d++)
			*pos += in[d] * s->strides[d];
		return false;
	case K_COUNT:
		break;
	}
	return true;
}

static int64_t
expected(const struct step *chain, int n, int bndim, const int64_t *bsizes,
    const int64_t *idx)
{
	int64_t cur[MAXD], nxt[MAXD], pos;

	for (int d = 0; d < chain[n - 1].ndim; d++)
		cur[d] = idx[d];
	for (int i = n - 1; i >= 0; i--) {
		if (!map_back(&chain[i], cur, nxt, &pos))
			return pos;
		for (int d = 0; d < chain[i].pndim; d++)
			cur[d] = nxt[d];
	}
	return ravel(bndim, bsizes, cur);
}

/* Python slice bound, computed here independently of the library. */
static int64_t
py_bound(int64_t v, int64_t size)
{
	if (v < 0)
		v += size;
	if (v < 0)
		v = 0;
	if (v > size)
		v = size;
	return v;
}

/*
 * Pick a random view applicable to @t, fill @s (its definition and
 * expected shape) and make it. Returns false when the chosen kind does not
 * apply (the caller picks again).
 */
static bool
random_view(cow_tensor_t *t, int64_t storage_elems, struct step *s,
    cow_tensor_t **out)
{
	int n = cow_tensor_ndim(t);
	const int64_t *sz = cow_tensor_sizes(t);
	int64_t req[MAXD];
	cow_status_t st = COW_OK;

	memset(s, 0, sizeof *s);
	s->kind = (enum kind)rnd(0, K_COUNT - 1);
	s->pndim = n;
	for (int d = 0; d < n; d++)
		s->psizes[d] = sz[d];
	switch (s->kind) {
	case K_SELECT:
		if (n == 0)
			return false;
		s->dim = (int)rnd(0, n - 1);
		if (sz[s->dim] == 0)
			return false;
		s->a = rnd(0, sz[s->dim] - 1);
		s->ndim = n - 1;
		for (int d = 0, k = 0; d < n; d++)
			if (d != s->dim)
				s->sizes[k++] = sz[d];
		st = cow_tensor_select(t, dim_arg(s->dim, n),
		    rng() % 2 ? s->a : s->a - sz[s->dim], out);
		break;
	case K_SLICE: {
		int64_t start, end, len;

		if (n == 0)
			return false;
		s->dim = (int)rnd(0, n - 1);
		start = rnd(-sz[s->dim] - 2, sz[s->dim] + 2);
		end = rnd(-sz[s->dim] - 2, sz[s->dim] + 2);
		s->b = rnd(1, 3);
		s->a = py_bound(start, sz[s->dim]);
		len = py_bound(end, sz[s->dim]) - s->a;
		len = len > 0 ? (len + s->b - 1) / s->b : 0;
		s->ndim = n;
		for (int d = 0; d < n; d++)
			s->sizes[d] = d == s->dim ? len : sz[d];
		st = cow_tensor_slice(t, dim_arg(s->dim, n), start, end, s->b,
		    out);
		break;
	}
	case K_NARROW: {
		int64_t len;

		if (n == 0)
			return false;
		s->dim = (int)rnd(0, n - 1);
		s->a = rnd(0, sz[s->dim]);
		len = rnd(0, sz[s->dim] - s->a);
		s->b = 1;
		s->ndim = n;
		for (int d = 0; d < n; d++)
			s->sizes[d] = d == s->dim ? len : sz[d];
		st = cow_tensor_narrow(t, dim_arg(s->dim, n),
		    rng() % 2 || s->a == 0 ? s->a : s->a - sz[s->dim], len,
		    out);
		break;
	}
	case K_TRANSPOSE:
		if (n == 0)
			return false;
		s->dim = (int)rnd(0, n - 1);
		s->dim2 = (int)rnd(0, n - 1);
		s->ndim = n;
		for (int d = 0; d < n; d++)
			s->sizes[d] = sz[d];
		s->sizes[s->dim] = sz[s->dim2];
		s->sizes[s->dim2] = sz[s->dim];
		st = cow_tensor_transpose(t, dim_arg(s->dim, n),
		    dim_arg(s->dim2, n), out);
		break;
	case K_PERMUTE:
		for (int d = 0; d < n; d++)
			s->perm[d] = d;
		for (int d = n - 1; d > 0; d--) {
			int j = (int)rnd(0, d), x = s->perm[d];

			s->perm[d] = s->perm[j];
			s->perm[j] = x;
		}
		s->ndim = n;
		for (int d = 0; d < n; d++)
			s->sizes[d] = sz[s->perm[d]];
		st = cow_tensor_permute(t, n, s->perm, out);
		break;
	case K_UNSQUEEZE:
		if (n >= 6)
			return false;
		s->dim = (int)rnd(0, n);
		s->ndim = n + 1;
		for (int d = 0, k = 0; d <= n; d++)
			s->sizes[d] = d == s->dim ? 1 : sz[k++];
		st = cow_tensor_unsqueeze(t, rng() % 2 ? s->dim :
		    s->dim - (n + 1), out);
		break;
	case K_SQUEEZE:
		if (n == 0)
			return false;
		s->dim = (int)rnd(0, n - 1);
		s->ndim = 0;
		for (int d = 0; d < n; d++)
			if (d != s->dim || sz[d] != 1)
				s->sizes[s->ndim++] = sz[d];
		st = cow_tensor_squeeze(t, dim_arg(s->dim, n), out);
		break;
	case K_SQUEEZE_ALL:
		s->ndim = 0;
		for (int d = 0; d < n; d++)
			if (sz[d] != 1)
				s->sizes[s->ndim++] = sz[d];
		st = cow_tensor_squeeze_all(t, out);
		break;
	case K_EXPAND:
		if (n >= 6 || cow_tensor_numel(t) > 64)
			return false;
		s->lead = (int)rnd(0, 1);
		s->ndim = n + s->lead;
		for (int d = 0; d < s->ndim; d++) {
			int od = d - s->lead;

			if (od < 0)
				s->sizes[d] = req[d] = rnd(0, 3);
			else if (sz[od] == 1)
				s->sizes[d] = req[d] = rnd(0, 3);
			else {
				s->sizes[d] = sz[od];
				req[d] = rng() % 2 ? -1 : sz[od];
			}
		}
		st = cow_tensor_expand(t, s->ndim, req, out);
		break;
	case K_DIAGONAL: {
		int64_t n1, n2, len;

		if (n < 2)
			return false;
		s->dim = (int)rnd(0, n - 1);
		do
			s->dim2 = (int)rnd(0, n - 1);
		while (s->dim2 == s->dim);
		s->a = rnd(-3, 3);
		n1 = sz[s->dim] - (s->a < 0 ? -s->a : 0);
		n2 = sz[s->dim2] - (s->a > 0 ? s->a : 0);
		len = n1 < n2 ? n1 : n2;
		if (len < 0)
			len = 0;
		s->ndim = 0;
		for (int d = 0; d < n; d++)
			if (d != s->dim && d != s->dim2)
				s->sizes[s->ndim++] = sz[d];
		s->sizes[s->ndim++] = len;
		st = cow_tensor_diagonal(t, s->a, dim_arg(s->dim, n),
		    dim_arg(s->dim2, n), out);
		break;
	}
	case K_VIEW: {
		int64_t left = cow_tensor_numel(t);

		/* A random factorisation of numel (sizes 1 allowed). */
		if (left == 0)
			return false;
		s->ndim = (int)rnd(1, 4);
		for (int d = 0; d < s->ndim - 1; d++) {
			int64_t f = 1;

			for (int64_t c = rnd(1, 4); c >= 1; c--)
				if (left % c == 0) {
					f = c;
					break;
				}
			s->sizes[d] = f;
			left /= f;
		}
		s->sizes[s->ndim - 1] = left;
		for (int d = 0; d < s->ndim; d++)
			req[d] = s->sizes[d];
		req[rnd(0, s->ndim - 1)] = -1;
		st = cow_tensor_view(t, s->ndim, req, out);
		if (st == COW_ESHAPE) {
			/* Only non-contiguous layouts may refuse. */
			cr_assert_not(cow_tensor_is_contiguous(t),
			    "a contiguous tensor refused a view: %s",
			    cow_last_error());
			return false;
		}
		break;
	}
	case K_AS_STRIDED: {
		int64_t reach = 0;

		s->ndim = (int)rnd(0, 3);
		for (int d = 0; d < s->ndim; d++) {
			s->sizes[d] = rnd(1, 4);
			s->strides[d] = rnd(0, 5);
			reach += s->strides[d] * (s->sizes[d] - 1);
		}
		if (reach >= storage_elems)
			return false;
		s->a = rnd(0, storage_elems - 1 - reach);
		st = cow_tensor_as_strided(t, s->ndim, s->sizes, s->strides,
		    s->a, out);
		break;
	}
	case K_COUNT:
		return false;
	}
	cr_assert_eq(st, COW_OK, "%s: %s", kind_name[s->kind],
	    cow_last_error());
	return true;
}

static void
check_against_reference(cow_tensor_t *v, const struct step *chain, int n,
    int bndim, const int64_t *bsizes)
{
	const struct step *s = &chain[n - 1];
	int64_t idx[MAXD] = {0};

	tt_assert_shape(v, s->ndim, s->sizes);
	if (cow_tensor_numel(v) == 0)
		return;
	do {
		int64_t want = expected(chain, n, bndim, bsizes, idx);
		int64_t got = tt_geti(v, idx);

		cr_assert_eq(got, want, "step %d (%s): element %lld, want %lld",
		    n - 1, kind_name[s->kind], (long long)got, (long long)want);
	} while (tt_next(s->ndim, s->sizes, idx));
}

TestSuite(views, .timeout = 60.0);

Test(views, random_chains_match_reference)
{
	int counts[K_COUNT] = {0};

	for (int c = 0; c < CHAINS; c++) {
		struct step chain[DEPTH];
		cow_tensor_t *views[DEPTH + 1];
		int64_t bsizes[MAXD];
		int bndim, n = 0, tries = 0;

		rng_state = 0x9e3779b97f4a7c15ull ^ (uint64_t)(c + 1) * 7919u;
		bndim = (int)rnd(0, 4);
		for (int d = 0; d < bndim; d++)
			bsizes[d] = rnd(1, 4);
		views[0] = tt_arange(COW_DTYPE_INT64, bndim, bsizes, NULL);
		while (n < DEPTH && tries++ < 50) {
			if (!random_view(views[n], tt_numel(bndim, bsizes),
			    &chain[n], &views[n + 1]))
				continue;
			cr_assert_eq(cow_tensor_storage(views[n + 1]),
			    cow_tensor_storage(views[0]),
			    "a view shares its base's storage");
			counts[chain[n].kind]++;
			n++;
			check_against_reference(views[n], chain, n, bndim,
			    bsizes);
		}
		for (int i = 0; i <= n; i++)
			cow_tensor_release(views[i]);
	}
	for (int k = 0; k < K_COUNT; k++)
		cr_assert_gt(counts[k], 20, "view kind %s exercised %d times",
		    kind_name[k], counts[k]);
}

Test(views, write_through_select_changes_base)
{
	cow_tensor_t *y, *x;
	const double want[6] = {2, 2, 2, 0, 0, 0};

	TT_OK(cow_tensor_zeros(COW_DTYPE_FLOAT32, 2, (int64_t[]){2, 3}, NULL,
	    &y));
	TT_OK(cow_tensor_select(y, 0, 0, &x));
	TT_OK(cow_tensor_fill_(x, 2));
	tt_assert_values(y, want);
	cow_tensor_release(x);
	cow_tensor_release(y);
}

Test(views, write_through_view_of_view)
{
	const int64_t sz[3] = {3, 4, 5};
	cow_tensor_t *y = tt_arange(COW_DTYPE_INT32, 3, sz, NULL), *a, *b, *c;

	/* c = y[1, :, 1::2].T restricted: a = y[1], b = a[:, 1::2], c = b.T */
	TT_OK(cow_tensor_select(y, 0, 1, &a));
	TT_OK(cow_tensor_slice(a, 1, 1, 5, 2, &b));
	TT_OK(cow_tensor_transpose(b, 0, 1, &c));
	TT_OK(cow_tensor_mul_scalar_(c, -1));
	for (int64_t i = 0; i < 3; i++)
		for (int64_t j = 0; j < 4; j++)
			for (int64_t k = 0; k < 5; k++) {
				int64_t v = i * 20 + j * 5 + k;
				bool hit = i == 1 && k % 2 == 1;

				cr_assert_eq(tt_geti(y, (int64_t[]){i, j, k}),
				    hit ? -v : v);
			}
	cow_tensor_release(c);
	cow_tensor_release(b);
	cow_tensor_release(a);
	cow_tensor_release(y);
}

Test(views, view_compatibility)
{
	const int64_t sz[3] = {2, 3, 4};
	cow_tensor_t *t = tt_arange(COW_DTYPE_INT64, 3, sz, NULL), *tr, *v;
	cow_tensor_t *row, *e;

	TT_OK(cow_tensor_transpose(t, 0, 1, &tr)); /* [3, 2, 4] */
	TT_FAILS(cow_tensor_view(tr, 2, (int64_t[]){6, 4}, &v), COW_ESHAPE,
	    "[6, 4]");
	TT_FAILS(cow_tensor_view(tr, 1, (int64_t[]){24}, &v), COW_ESHAPE,
	    "not compatible");
	/* Splitting a dimension, or merging dims that are still dense
	 * together, works on a non-contiguous tensor. */
	TT_OK(cow_tensor_view(tr, 4, (int64_t[]){3, 2, 2, 2}, &v));
	cr_assert_eq(tt_geti(v, (int64_t[]){2, 1, 1, 0}), 1 * 12 + 2 * 4 + 2);
	cow_tensor_release(v);
	TT_OK(cow_tensor_select(t, 2, 1, &row)); /* [2, 3], strides [12, 4] */
	TT_OK(cow_tensor_view(row, 1, (int64_t[]){6}, &v));
	tt_assert_values(v, (double[]){1, 5, 9, 13, 17, 21});
	cow_tensor_release(v);
	cow_tensor_release(row);
	/* A stride-0 (expanded) dimension can be split but not merged with a
	 * dense one. */
	TT_OK(cow_tensor_narrow(t, 0, 0, 1, &row)); /* [1, 3, 4] */
	TT_OK(cow_tensor_expand(row, 3, (int64_t[]){4, -1, -1}, &e));
	cr_assert_eq(cow_tensor_strides(e)[0], 0);
	TT_OK(cow_tensor_view(e, 4, (int64_t[]){2, 2, 3, 4}, &v));
	cr_assert_eq(tt_geti(v, (int64_t[]){1, 1, 2, 3}), 11);
	cow_tensor_release(v);
	TT_FAILS(cow_tensor_view(e, 1, (int64_t[]){48}, &v), COW_ESHAPE,
	    "not compatible");
	TT_OK(cow_tensor_view(e, 2, (int64_t[]){4, -1}, &v));
	cr_assert_eq(cow_tensor_strides(v)[0], 0);
	cr_assert_eq(tt_geti(v, (int64_t[]){3, 11}), 11);
	cow_tensor_release(v);
	cow_tensor_release(e);
	cow_tensor_release(row);
	cow_tensor_release(tr);
	cow_tensor_release(t);
}

Test(views, slice_semantics)
{
	cow_tensor_t *t = tt_arange(COW_DTYPE_INT32, 1, (int64_t[]){10}, NULL);
	cow_tensor_t *s;

	TT_OK(cow_tensor_slice(t, 0, -3, INT64_MAX, 1, &s));
	tt_assert_shape(s, 1, (int64_t[]){3});
	tt_assert_values(s, (double[]){7, 8, 9});
	cow_tensor_release(s);
	TT_OK(cow_tensor_slice(t, 0, 1, 8, 3, &s));
	tt_assert_values(s, (double[]){1, 4, 7});
	cow_tensor_release(s);
	TT_OK(cow_tensor_slice(t, 0, INT64_MIN, -8, 1, &s));
	tt_assert_values(s, (double[]){0, 1});
	cow_tensor_release(s);
	TT_OK(cow_tensor_slice(t, 0, 8, 2, 1, &s));
	tt_assert_shape(s, 1, (int64_t[]){0});
	cow_tensor_release(s);
	TT_OK(cow_tensor_slice(t, 0, 10, 20, 1, &s));
	tt_assert_shape(s, 1, (int64_t[]){0});
	cow_tensor_release(s);
	cow_tensor_release(t);
}

Test(views, diagonal_and_expand)
{
	const int64_t sz[2] = {3, 4};
	cow_tensor_t *t = tt_arange(COW_DTYPE_INT64, 2, sz, NULL), *d, *e;

	TT_OK(cow_tensor_diagonal(t, 0, 0, 1, &d));
	tt_assert_values(d, (double[]){0, 5, 10});
	cow_tensor_release(d);
	TT_OK(cow_tensor_diagonal(t, 2, 0, 1, &d));
	tt_assert_values(d, (double[]){2, 7});
	cow_tensor_release(d);
	TT_OK(cow_tensor_diagonal(t, -1, 0, 1, &d));
	tt_assert_values(d, (double[]){4, 9});
	cow_tensor_release(d);
	TT_OK(cow_tensor_diagonal(t, 1, 1, 0, &d));
	tt_assert_values(d, (double[]){4, 9});
	cow_tensor_release(d);
	TT_OK(cow_tensor_diagonal(t, 9, 0, 1, &d));
	tt_assert_shape(d, 1, (int64_t[]){0});
	cow_tensor_release(d);
	TT_OK(cow_tensor_diagonal(t, INT64_MIN, 0, 1, &d));
	tt_assert_shape(d, 1, (int64_t[]){0});
	cow_tensor_release(d);

	TT_OK(cow_tensor_select(t, 0, 1, &d)); /* [4, 5, 6, 7] */
	TT_OK(cow_tensor_expand(d, 2, (int64_t[]){2, 4}, &e));
	tt_assert_values(e, (double[]){4, 5, 6, 7, 4, 5, 6, 7});
	cr_assert_eq(cow_tensor_numel(e), 8);
	cr_assert_eq(cow_tensor_const_data(e), cow_tensor_const_data(d));
	cow_tensor_release(e);
	cow_tensor_release(d);
	cow_tensor_release(t);
}

/*
 * Fuzz finding: an empty tensor may have huge sizes; its strides and the
 * offsets of its views saturate instead of overflowing (UBSan would report
 * it in the asan preset), and an empty view keeps its base's offset.
 */
Test(views, empty_with_huge_sizes)
{
	const int64_t sz[3] = {0, 3, INT64_MAX};
	cow_tensor_t *t, *v, *w;

	TT_OK(cow_tensor_zeros(COW_DTYPE_INT32, 3, sz, NULL, &t));
	cr_assert_eq(cow_tensor_numel(t), 0);
	cr_assert_eq(cow_tensor_strides(t)[2], 1);
	cr_assert_eq(cow_tensor_strides(t)[1], INT64_MAX);
	cr_assert_eq(cow_tensor_strides(t)[0], INT64_MAX);
	TT_OK(cow_tensor_select(t, 1, 2, &v));
	cr_assert_eq(cow_tensor_offset(v), 0);
	TT_OK(cow_tensor_slice(v, 1, 5, INT64_MAX, 1 << 20, &w));
	cr_assert_eq(cow_tensor_offset(w), 0);
	cow_tensor_release(w);
	TT_OK(cow_tensor_unsqueeze(v, 0, &w));
	cow_tensor_release(w);
	TT_OK(cow_tensor_diagonal(t, 7, 1, 2, &w));
	cr_assert_eq(cow_tensor_numel(w), 0);
	cow_tensor_release(w);
	TT_OK(cow_tensor_fill_(v, 1.0));
	cow_tensor_release(v);
	cow_tensor_release(t);
}

/*
 * Fuzz finding: a size-1 dimension may carry any stride (it is never
 * applied); ops over it must not compute stride * itemsize.
 */
Test(views, huge_stride_on_size_one_dimension)
{
	const int64_t one[1] = {1}, huge[1] = {(int64_t)1 << 62};
	const int64_t sz2[2] = {1, 1}, st2[2] = {huge[0], huge[0]};
	cow_tensor_t *t = tt_arange(COW_DTYPE_INT64, 1, (int64_t[]){4}, NULL);
	cow_tensor_t *v, *d;
	double x;

	TT_OK(cow_tensor_as_strided(t, 1, one, huge, 2, &v));
	TT_OK(cow_tensor_fill_(v, 9.0));
	tt_assert_values(t, (double[]){0, 1, 9, 3});
	TT_OK(cow_tensor_add_scalar_(v, 1.0));
	TT_OK(cow_tensor_get_f64(v, (int64_t[]){0}, &x));
	cr_assert_eq(x, 10.0);
	cow_tensor_release(v);
	TT_OK(cow_tensor_as_strided(t, 2, sz2, st2, 3, &v));
	TT_OK(cow_tensor_diagonal(v, 0, 0, 1, &d)); /* stride 2^63: saturates */
	tt_assert_values(d, (double[]){3});
	cow_tensor_release(d);
	cow_tensor_release(v);
	cow_tensor_release(t);
}

/* Fuzz finding: an index into an empty tensor with huge strides is refused
 * (some dimension has size 0) before any offset arithmetic. */
Test(views, index_into_empty_with_huge_strides)
{
	const int64_t sz[3] = {6, 0, INT64_MAX};
	cow_tensor_t *t;
	double x;

	TT_OK(cow_tensor_zeros(COW_DTYPE_FLOAT32, 3, sz, NULL, &t));
	cr_assert_eq(cow_tensor_strides(t)[0], INT64_MAX);
	cr_assert_eq(cow_tensor_get_f64(t, (int64_t[]){4, 0, 0}, &x),
	    COW_ERANGE);
	cr_assert_eq(cow_tensor_set_f64(t, (int64_t[]){5, 0, 1}, 1.0),
	    COW_ERANGE);
	cow_tensor_release(t);
}

/* Fuzz finding: the element count of a view of an empty tensor whose
 * 0 comes after huge sizes (a permutation here) is 0, with no overflow. */
Test(views, permuted_empty_with_huge_sizes)
{
	const int64_t sz[3] = {0, 3, INT64_MAX};
	cow_tensor_t *t, *p;

	TT_OK(cow_tensor_zeros(COW_DTYPE_UINT8, 3, sz, NULL, &t));
	TT_OK(cow_tensor_permute(t, 3, (int[]){1, 2, 0}, &p));
	cr_assert_eq(cow_tensor_numel(p), 0);
	tt_assert_shape(p, 3, (int64_t[]){3, INT64_MAX, 0});
	cow_tensor_release(p);
	cow_tensor_release(t);
}

/* The element count of an empty shape is 0 whatever the order of its
 * sizes: [INT64_MAX, 2, 0] is as valid as [0, 2, INT64_MAX] (found by
 * fuzz_api: an add broadcast to such a shape reported an overflow). */
Test(views, empty_shape_with_huge_sizes_in_any_order)
{
	cow_tensor_t *a, *b, *s, *v;

	TT_OK(cow_tensor_zeros(COW_DTYPE_INT32, 3,
	    (int64_t[]){INT64_MAX, 2, 0}, NULL, &a));
	cr_assert_eq(cow_tensor_numel(a), 0);
	TT_OK(cow_tensor_zeros(COW_DTYPE_INT32, 2, (int64_t[]){2, 1}, NULL,
	    &b));
	TT_OK(cow_tensor_add(a, b, &s));
	tt_assert_shape(s, 3, (int64_t[]){INT64_MAX, 2, 0});
	TT_OK(cow_tensor_view(a, 4, (int64_t[]){0, INT64_MAX, 2, 5}, &v));
	cr_assert_eq(cow_tensor_numel(v), 0);
	cow_tensor_release(v);
	TT_OK(cow_tensor_view(a, 2, (int64_t[]){INT64_MAX, -1}, &v));
	tt_assert_shape(v, 2, (int64_t[]){INT64_MAX, 0});
	cow_tensor_release(v);
	/* -1 next to a 0 could be anything. */
	TT_FAILS(cow_tensor_view(a, 3, (int64_t[]){INT64_MAX, 0, -1}, &v),
	    COW_ESHAPE, "cannot be inferred");
	cow_tensor_release(s);
	cow_tensor_release(b);
	cow_tensor_release(a);
}

/* Views, lazy clones and reshapes in every mode of a tensor over memory
 * nobody may read or write (PROT_NONE): a read or write of an element
 * would kill the test with SIGSEGV. None copies a byte either. */
Test(views, views_clones_and_reshapes_touch_no_element)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	const cow_reshape_mode_t modes[3] = {COW_RESHAPE_ALIAS,
	    COW_RESHAPE_LAZY_COPY, COW_RESHAPE_WARN};
	cow_tensor_t *t, *row, *v[16], *c, *cc;
	void *m;
	int n = 0;

	cr_assert_geq(page, 16 * 16 * sizeof(float));
	m = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(m, MAP_FAILED);
	cow_stats_reset();
	TT_OK(cow_tensor_from_external(m, COW_DTYPE_FLOAT32, 2,
	    (int64_t[]){16, 16}, NULL, 0, NULL, NULL, 0, NULL, &t));
	TT_OK(cow_tensor_select(t, 0, 3, &row));
	TT_OK(cow_tensor_slice(t, 1, 2, 14, 3, &v[n++]));
	TT_OK(cow_tensor_narrow(t, 0, 4, 8, &v[n++]));
	TT_OK(cow_tensor_transpose(t, 0, 1, &v[n++]));
	TT_OK(cow_tensor_permute(t, 2, (int[]){1, 0}, &v[n++]));
	TT_OK(cow_tensor_unsqueeze(row, 0, &v[n]));
	TT_OK(cow_tensor_expand(v[n], 2, (int64_t[]){4, 16}, &v[n + 1]));
	TT_OK(cow_tensor_squeeze(v[n], 0, &v[n + 2]));
	TT_OK(cow_tensor_squeeze_all(v[n], &v[n + 3]));
	n += 4;
	TT_OK(cow_tensor_diagonal(t, 1, 0, 1, &v[n++]));
	TT_OK(cow_tensor_view(t, 2, (int64_t[]){8, 32}, &v[n++]));
	TT_OK(cow_tensor_as_strided(t, 2, (int64_t[]){4, 4},
	    (int64_t[]){17, 1}, 5, &v[n++]));
	for (int k = 0; k < 3; k++) {
		TT_OK(cow_reshape_mode_set_thread(modes[k], NULL));
		TT_OK(cow_tensor_reshape(t, 1, (int64_t[]){256}, &v[n++]));
	}
	TT_OK(cow_reshape_mode_set_thread(COW_RESHAPE_INHERIT, NULL));
	TT_OK(cow_tensor_lazy_clone(row, &c));
	TT_OK(cow_tensor_lazy_clone(c, &cc));
	cr_assert(cow_storage_shares_data(cow_tensor_storage(t),
	    cow_tensor_storage(cc)));
	cr_assert_eq(cow_test_stats().bytes_copied, 0);
	cr_assert_eq(cow_test_stats().materialize_copies +
	    cow_test_stats().materialize_steals, 0);
	cow_tensor_release(cc);
	cow_tensor_release(c);
	for (int k = 0; k < n; k++)
		cow_tensor_release(v[k]);
	cow_tensor_release(row);
	cow_tensor_release(t);
	cr_assert_eq(munmap(m, page), 0);
}
