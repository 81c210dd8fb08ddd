/*
 * Unambiguous answers from a tensor's accessors (issue 30, point 3):
 * cow_tensor_read_data (a status where cow_tensor_const_data gives an
 * ambiguous NULL), the empty case of cow_tensor_mutable_data,
 * COW_DTYPE_INVALID from cow_tensor_dtype(NULL), and cow_tensor_nbytes on
 * views (offsets, steps, transposes, broadcasts, empty tensors); plain and
 * functional tensors.
 */
#include <criterion/criterion.h>

#include <cowstore/testing.h>

#include "cow_test.h"
#include "leak_fixture.h"
#include "tensor_test.h"

#define SENTINEL ((const void *)(uintptr_t)0x5eed)

TestSuite(tensor_access, .init = leak_setup, .fini = leak_teardown,
    .timeout = 30.0);

/* The storage's bytes (read access: materialises nothing). */
static const char *
storage_base(const cow_tensor_t *t)
{
	return cow_storage_const_data(cow_tensor_storage(t));
}

/* cow_tensor_nbytes by brute force: the lowest and the highest byte any
 * element occupies, walking every index. */
static size_t
span_by_walk(const cow_tensor_t *t)
{
	int ndim = cow_tensor_ndim(t);
	const int64_t *sizes = cow_tensor_sizes(t), *strides =
	    cow_tensor_strides(t);
	int64_t idx[COW_TENSOR_MAX_NDIM] = {0}, lo = INT64_MAX, hi = -1;
	int64_t item = (int64_t)cow_dtype_size(cow_tensor_dtype(t));

	if (cow_tensor_numel(t) == 0)
		return 0;
	do {
		int64_t off = cow_tensor_offset(t);

		for (int d = 0; d < ndim; d++)
			off += idx[d] * strides[d];
		if (off * item < lo)
			lo = off * item;
		if (off * item + item > hi)
			hi = off * item + item;
	} while (tt_next(ndim, sizes, idx));
	return (size_t)(hi - lo);
}

/* @t's span: @want bytes, as the walk finds, starting at the offset, and
 * inside the storage. */
static void
assert_span(const cow_tensor_t *t, size_t want, const char *what)
{
	size_t n = cow_tensor_nbytes(t);
	size_t start = (size_t)cow_tensor_offset(t) *
	    cow_dtype_size(cow_tensor_dtype(t));

	cr_assert_eq(n, want, "%s: nbytes %zu, want %zu", what, n, want);
	cr_assert_eq(n, span_by_walk(t), "%s: nbytes %zu, walk %zu", what, n,
	    span_by_walk(t));
	if (cow_tensor_storage(t) != NULL)
		cr_assert_leq(start + n,
		    cow_storage_nbytes(cow_tensor_storage(t)), "%s", what);
}

/* read_data and const_data agree, and give element [0, ..., 0]. */
static void
assert_reads_first_element(const cow_tensor_t *t, const char *what)
{
	const void *p = SENTINEL;

	TT_OK(cow_tensor_read_data(t, &p));
	cr_assert_not_null(p, "%s", what);
	cr_assert_eq(p, cow_tensor_const_data(t), "%s", what);
	cr_assert_eq((const char *)p, storage_base(t) + cow_tensor_offset(t) *
	    (int64_t)cow_dtype_size(cow_tensor_dtype(t)), "%s", what);
}

/* ------------------------------------------------------------------ */
/* cow_tensor_read_data.                                                 */

Test(tensor_access, read_data_gives_the_first_element_of_views)
{
	cow_tensor_t *t = tt_arange(COW_DTYPE_FLOAT64, 2, (int64_t[]){3, 4},
	    sys);
	cow_tensor_t *row, *col, *tr, *sl, *ex;
	const void *p;

	assert_reads_first_element(t, "contiguous");
	TT_OK(cow_tensor_select(t, 0, 2, &row));   /* offset 8 */
	TT_OK(cow_tensor_select(t, 1, 3, &col));   /* offset 3, stride 4 */
	TT_OK(cow_tensor_transpose(t, 0, 1, &tr));
	TT_OK(cow_tensor_slice(t, 1, 1, 4, 2, &sl)); /* offset 1, step 2 */
	TT_OK(cow_tensor_expand(row, 2, (int64_t[]){5, 4}, &ex));
	assert_reads_first_element(row, "row");
	assert_reads_first_element(col, "column");
	assert_reads_first_element(tr, "transpose");
	assert_reads_first_element(sl, "slice");
	assert_reads_first_element(ex, "expand");
	TT_OK(cow_tensor_read_data(col, &p));
	cr_assert_eq(*(const double *)p, 3.0);
	TT_OK(cow_tensor_read_data(sl, &p));
	cr_assert_eq(*(const double *)p, 1.0);
	TT_OK(cow_tensor_read_data(ex, &p));
	cr_assert_eq(*(const double *)p, 8.0);
	cow_tensor_release(ex);
	cow_tensor_release(sl);
	cow_tensor_release(tr);
	cow_tensor_release(col);
	cow_tensor_release(row);
	cow_tensor_release(t);
}

Test(tensor_access, read_data_never_materialises)
{
	cow_tensor_t *t = tt_arange(COW_DTYPE_INT32, 1, (int64_t[]){8}, sys);
	cow_tensor_t *l;
	const void *p, *q;

	TT_OK(cow_tensor_lazy_clone(t, &l));
	TT_OK(cow_tensor_read_data(t, &p));
	TT_OK(cow_tensor_read_data(l, &q));
	cr_assert_eq(p, q, "both read the shared bytes");
	cr_assert(cow_storage_is_cow(cow_tensor_storage(l)));
	cr_assert_eq(cow_storage_share_count(cow_tensor_storage(l)), 2);
	cow_tensor_release(l);
	cow_tensor_release(t);
}

Test(tensor_access, read_data_of_no_elements_is_ok_and_null)
{
	cow_tensor_t *e, *t = tt_arange(COW_DTYPE_INT64, 2, (int64_t[]){3, 4},
	    sys);
	cow_tensor_t *row, *n0, *z;
	const void *p = SENTINEL;

	TT_OK(cow_tensor_empty(COW_DTYPE_INT64, 2, (int64_t[]){3, 0}, sys, &e));
	TT_OK(cow_tensor_read_data(e, &p));
	cr_assert_null(p, "no elements: COW_OK and NULL");
	cr_assert_null(cow_tensor_const_data(e));
	/* An empty view at an offset inside a storage with elements (an
	 * empty slice keeps its base's offset). */
	TT_OK(cow_tensor_select(t, 0, 1, &row));
	TT_OK(cow_tensor_narrow(row, 0, 1, 0, &n0));
	cr_assert_eq(cow_tensor_offset(n0), 4);
	p = SENTINEL;
	TT_OK(cow_tensor_read_data(n0, &p));
	cr_assert_null(p);
	/* An expand of an empty tensor. */
	TT_OK(cow_tensor_expand(e, 3, (int64_t[]){2, 3, 0}, &z));
	p = SENTINEL;
	TT_OK(cow_tensor_read_data(z, &p));
	cr_assert_null(p);
	cow_tensor_release(z);
	cow_tensor_release(n0);
	cow_tensor_release(row);
	cow_tensor_release(t);
	cow_tensor_release(e);
}

Test(tensor_access, read_data_refuses_null_arguments)
{
	cow_tensor_t *t = tt_arange(COW_DTYPE_UINT8, 1, (int64_t[]){4}, sys);
	const void *p = SENTINEL;

	TT_FAILS(cow_tensor_read_data(NULL, &p), COW_EINVAL,
	    "cow_tensor_read_data");
	cr_assert_eq(p, SENTINEL, "out-parameter untouched");
	TT_FAILS(cow_tensor_read_data(t, NULL), COW_EINVAL, "out");
	cr_assert_null(cow_tensor_const_data(NULL));
	cow_tensor_release(t);
}

/* ------------------------------------------------------------------ */
/* A refusal by the reshape-alias check (COW_SHADOW_ERROR, shadow.h):    */
/* a distinct status, where const_data gives NULL as for no elements.   */

static int events;

static void
count_event(const cow_shadow_event_t *event, void *ctx)
{
	(void)event;
	(void)ctx;
	events++;
}

Test(tensor_access, refused_read_has_its_own_status)
{
	cow_tensor_t *t, *u, *u0, *u1;
	const void *p = SENTINEL;
	void *w = (void *)SENTINEL;

	events = 0;
	cow_shadow_handler_set(count_event, NULL);
	TT_OK(cow_reshape_mode_set_thread(COW_RESHAPE_WARN, NULL));
	TT_OK(cow_tensor_full(COW_DTYPE_FLOAT32, 1, (int64_t[]){4}, 1, sys,
	    &t));
	TT_OK(cow_tensor_reshape(t, 2, (int64_t[]){2, 2}, &u));
	TT_OK(cow_tensor_narrow(u, 0, 1, 0, &u0));  /* no elements */
	TT_OK(cow_tensor_narrow(u, 0, 1, 1, &u1));  /* one row */
	TT_OK(cow_shadow_policy_set(COW_SHADOW_ERROR));
	/* A write through T puts U's shadow out of sync: reads through U
	 * (and its views) are refused. */
	TT_OK(cow_tensor_fill_(t, 2));
	TT_FAILS(cow_tensor_read_data(u, &p), COW_EALIASING,
	    "read-after-write");
	cr_assert(strstr(cow_last_error(), "cow_tensor_read_data") != NULL,
	    "%s", cow_last_error());
	cr_assert_eq(p, SENTINEL, "out-parameter untouched");
	TT_FAILS(cow_tensor_read_data(u1, &p), COW_EALIASING,
	    "read-after-write");
	cr_assert_eq(p, SENTINEL);
	/* const_data: NULL, as for no elements; the message tells. */
	cr_assert_null(cow_tensor_const_data(u));
	cr_assert(strstr(cow_last_error(), "cow_tensor_const_data") != NULL,
	    "%s", cow_last_error());
	/* No elements: nothing is read, nothing is checked: COW_OK. */
	TT_OK(cow_tensor_read_data(u0, &p));
	cr_assert_null(p);
	/* The same for the write access: no elements, COW_OK and NULL. */
	TT_OK(cow_tensor_mutable_data(u0, &w));
	cr_assert_null(w);
	w = (void *)SENTINEL;
	TT_FAILS(cow_tensor_mutable_data(u, &w), COW_EALIASING,
	    "write-after-write");
	cr_assert_eq(w, (void *)SENTINEL);
	/* T is in sync. */
	assert_reads_first_element(t, "in sync");
	cr_assert_eq(events, 0, "errors replace the handler");

	TT_OK(cow_shadow_policy_set(COW_SHADOW_WARN_ONCE));
	TT_OK(cow_reshape_mode_set_thread(COW_RESHAPE_INHERIT, NULL));
	cow_shadow_handler_set(NULL, NULL);
	cow_tensor_release(u1);
	cow_tensor_release(u0);
	cow_tensor_release(u);
	cow_tensor_release(t);
}

/* ------------------------------------------------------------------ */
/* cow_tensor_mutable_data of no elements.                               */

Test(tensor_access, mutable_data_of_no_elements_materialises_nothing)
{
	cow_tensor_t *t = tt_arange(COW_DTYPE_INT32, 2, (int64_t[]){2, 3},
	    sys);
	cow_tensor_t *l, *n0;
	void *p = (void *)SENTINEL;

	TT_OK(cow_tensor_lazy_clone(t, &l));
	TT_OK(cow_tensor_narrow(l, 0, 1, 0, &n0));
	TT_OK(cow_tensor_mutable_data(n0, &p));
	cr_assert_null(p);
	cr_assert(cow_storage_is_cow(cow_tensor_storage(l)),
	    "nothing was materialised");
	cr_assert_eq(cow_storage_share_count(cow_tensor_storage(t)), 2);
	TT_FAILS(cow_tensor_mutable_data(NULL, &p), COW_EINVAL, "NULL");
	cow_tensor_release(n0);
	cow_tensor_release(l);
	cow_tensor_release(t);
}

/* ------------------------------------------------------------------ */
/* COW_DTYPE_INVALID.                                                    */

Test(tensor_access, dtype_of_null_is_invalid)
{
	cow_tensor_t *t, *s;

	cr_assert_eq(cow_tensor_dtype(NULL), COW_DTYPE_INVALID);
	cr_assert_lt((int)COW_DTYPE_INVALID, 0, "outside [0, COUNT)");
	cr_assert_neq(COW_DTYPE_INVALID, COW_DTYPE_BOOL);
	cr_assert_eq(cow_dtype_size(COW_DTYPE_INVALID), 0);
	cr_assert_str_eq(cow_dtype_name(COW_DTYPE_INVALID), "unknown");
	/* Valid dtypes are unchanged; BOOL is 0 and a BOOL tensor says so. */
	cr_assert_eq((int)COW_DTYPE_BOOL, 0);
	for (int d = 0; d < COW_DTYPE_COUNT; d++) {
		TT_OK(cow_tensor_zeros((cow_dtype_t)d, 1, (int64_t[]){2}, sys,
		    &t));
		cr_assert_eq(cow_tensor_dtype(t), (cow_dtype_t)d);
		cr_assert_neq(cow_tensor_dtype(t), COW_DTYPE_INVALID);
		cr_assert_gt(cow_dtype_size((cow_dtype_t)d), 0);
		cow_tensor_release(t);
	}
	/* It is refused wherever a dtype is taken. */
	TT_FAILS(cow_tensor_empty(COW_DTYPE_INVALID, 1, (int64_t[]){2}, sys,
	    &t), COW_EINVAL, "unknown dtype -1");
	TT_OK(cow_tensor_zeros(COW_DTYPE_UINT8, 1, (int64_t[]){8}, sys, &s));
	TT_FAILS(cow_tensor_from_storage(cow_tensor_storage(s),
	    COW_DTYPE_INVALID, 1, (int64_t[]){2}, NULL, 0, &t), COW_EINVAL,
	    "unknown dtype -1");
	cow_tensor_release(s);
}

/* ------------------------------------------------------------------ */
/* cow_tensor_nbytes.                                                    */

Test(tensor_access, nbytes_of_null_and_empty_is_zero)
{
	cow_tensor_t *e, *t = tt_arange(COW_DTYPE_FLOAT32, 2,
	    (int64_t[]){3, 4}, sys);
	cow_tensor_t *row, *n0, *x;

	cr_assert_eq(cow_tensor_nbytes(NULL), 0);
	TT_OK(cow_tensor_empty(COW_DTYPE_FLOAT32, 2, (int64_t[]){0, 5}, sys,
	    &e));
	assert_span(e, 0, "shape [0, 5]");
	TT_OK(cow_tensor_select(t, 0, 2, &row));
	TT_OK(cow_tensor_narrow(row, 0, 3, 0, &n0));
	cr_assert_eq(cow_tensor_offset(n0), 8);
	assert_span(n0, 0, "an empty narrow at offset 8");
	TT_OK(cow_tensor_expand(e, 3, (int64_t[]){7, 0, 5}, &x));
	assert_span(x, 0, "an expand of an empty tensor");
	cow_tensor_release(x);
	cow_tensor_release(n0);
	cow_tensor_release(row);
	cow_tensor_release(e);
	cow_tensor_release(t);
}

Test(tensor_access, nbytes_of_contiguous_is_numel_times_itemsize)
{
	cow_tensor_t *t, *s;

	for (int d = 0; d < COW_DTYPE_COUNT; d++) {
		size_t item = cow_dtype_size((cow_dtype_t)d);

		TT_OK(cow_tensor_zeros((cow_dtype_t)d, 3, (int64_t[]){2, 3, 5},
		    sys, &t));
		assert_span(t, 30 * item, cow_dtype_name((cow_dtype_t)d));
		cr_assert(cow_tensor_is_contiguous(t));
		TT_OK(cow_tensor_zeros((cow_dtype_t)d, 0, NULL, sys, &s));
		assert_span(s, item, "a scalar");
		cow_tensor_release(s);
		cow_tensor_release(t);
	}
}

Test(tensor_access, nbytes_of_strided_views)
{
	/* int64 [3, 4]: element [i, j] at 4 * i + j. */
	cow_tensor_t *t = tt_arange(COW_DTYPE_INT64, 2, (int64_t[]){3, 4},
	    sys);
	cow_tensor_t *f = tt_arange(COW_DTYPE_INT64, 1, (int64_t[]){10}, sys);
	cow_tensor_t *v;

	TT_OK(cow_tensor_transpose(t, 0, 1, &v));
	assert_span(v, 96, "transpose: the same 12 elements");
	cr_assert(!cow_tensor_is_contiguous(v));
	cow_tensor_release(v);
	TT_OK(cow_tensor_select(t, 0, 1, &v));
	assert_span(v, 32, "row 1: offset 4, 4 elements");
	cr_assert_eq(cow_tensor_offset(v), 4);
	cow_tensor_release(v);
	TT_OK(cow_tensor_select(t, 1, 2, &v));
	assert_span(v, 72, "column 2: 1 + 4 * 2 elements from offset 2");
	cr_assert_eq(cow_tensor_offset(v), 2);
	cow_tensor_release(v);
	TT_OK(cow_tensor_slice(f, 0, 0, 10, 3, &v));
	assert_span(v, 80, "0, 3, 6, 9: 10 elements spanned");
	cow_tensor_release(v);
	TT_OK(cow_tensor_slice(f, 0, 2, 10, 3, &v));
	assert_span(v, 56, "2, 5, 8: 7 elements spanned from offset 2");
	cow_tensor_release(v);
	TT_OK(cow_tensor_slice(t, 1, 1, 3, 1, &v));
	assert_span(v, 80, "columns 1 and 2: from [0, 1] to [2, 2]");
	cow_tensor_release(v);
	TT_OK(cow_tensor_diagonal(t, 0, 0, 1, &v));
	assert_span(v, 88, "diagonal: stride 5, 3 elements");
	cow_tensor_release(v);
	TT_OK(cow_tensor_as_strided(t, 2, (int64_t[]){3, 3},
	    (int64_t[]){1, 1}, 1, &v));
	assert_span(v, 40, "overlapping rows: 5 elements from offset 1");
	cow_tensor_release(v);
	cow_tensor_release(f);
	cow_tensor_release(t);
}

Test(tensor_access, nbytes_counts_broadcast_memory_once)
{
	cow_tensor_t *row = tt_arange(COW_DTYPE_FLOAT32, 2, (int64_t[]){1, 3},
	    sys);
	cow_tensor_t *s, *x, *y, *c;

	TT_OK(cow_tensor_expand(row, 2, (int64_t[]){4, 3}, &x));
	cr_assert_eq(cow_tensor_strides(x)[0], 0);
	assert_span(x, 12, "[1, 3] expanded to [4, 3]: 3 floats");
	cr_assert_lt(cow_tensor_nbytes(x),
	    (size_t)cow_tensor_numel(x) * sizeof(float));
	TT_OK(cow_tensor_full(COW_DTYPE_COMPLEX128, 0, NULL, 1, sys, &s));
	TT_OK(cow_tensor_expand(s, 2, (int64_t[]){5, 5}, &y));
	assert_span(y, 16, "a scalar expanded to [5, 5]: one complex128");
	/* The contiguous copy spans every element. */
	TT_OK(cow_tensor_contiguous(x, &c));
	assert_span(c, 48, "the copy");
	cow_tensor_release(c);
	cow_tensor_release(y);
	cow_tensor_release(s);
	cow_tensor_release(x);
	cow_tensor_release(row);
}

/* ------------------------------------------------------------------ */
/* Functional tensors (functional.h): the same answers as the strided   */
/* runtime for the layout, a dense copy to read, no write access.        */

static void
functional_access(const cow_backend_t *backend, bool mode)
{
	const cow_backend_t *old_be;
	bool old_mode;
	cow_tensor_t *t, *tr, *x, *e, *one;
	static const int32_t transposed[6] = {0, 3, 1, 4, 2, 5};
	const void *p = SENTINEL;
	void *w = (void *)SENTINEL;

	TT_OK(cow_backend_set_thread(backend, &old_be));
	TT_OK(cow_functional_mode_set_thread(mode, &old_mode));
	t = tt_arange(COW_DTYPE_INT32, 2, (int64_t[]){2, 3}, sys);
	cr_assert(cow_tensor_is_functional(t));
	cr_assert_eq(cow_tensor_dtype(t), COW_DTYPE_INT32);
	cr_assert_eq(cow_tensor_nbytes(t), 24);
	TT_OK(cow_tensor_transpose(t, 0, 1, &tr));
	cr_assert_eq(cow_tensor_nbytes(tr), 24);
	cr_assert_eq(cow_tensor_nbytes(tr), span_by_walk(tr));
	TT_OK(cow_tensor_select(t, 1, 1, &one));
	cr_assert_eq(cow_tensor_nbytes(one), 16, "column 1: 1 + 3 elements");
	/* read_data: a dense row-major copy of the transpose. */
	TT_OK(cow_tensor_read_data(tr, &p));
	cr_assert_not_null(p);
	for (int k = 0; k < 6; k++)
		cr_assert_eq(((const int32_t *)p)[k], transposed[k],
		    "element %d", k);
	cr_assert_eq(cow_tensor_const_data(tr), p);
	TT_OK(cow_tensor_expand(one, 2, (int64_t[]){4, 2}, &x));
	cr_assert_eq(cow_tensor_nbytes(x), 16, "broadcast rows");
	TT_OK(cow_tensor_read_data(x, &p));
	cr_assert_eq(((const int32_t *)p)[7], 4);
	/* No elements: COW_OK and NULL, 0 bytes; writes are refused all
	 * the same. */
	TT_OK(cow_tensor_narrow(t, 1, 3, 0, &e));
	cr_assert(cow_tensor_is_functional(e));
	cr_assert_eq(cow_tensor_nbytes(e), 0);
	p = SENTINEL;
	TT_OK(cow_tensor_read_data(e, &p));
	cr_assert_null(p);
	TT_FAILS(cow_tensor_mutable_data(e, &w), COW_ENOTSUP,
	    "cow_tensor_mutable_data");
	cr_assert_eq(w, (void *)SENTINEL);
	TT_FAILS(cow_tensor_read_data(t, NULL), COW_EINVAL, "out");
	cow_tensor_release(e);
	cow_tensor_release(x);
	cow_tensor_release(one);
	cow_tensor_release(tr);
	cow_tensor_release(t);
	TT_OK(cow_functional_mode_set_thread(old_mode, NULL));
	TT_OK(cow_backend_set_thread(old_be, NULL));
}

Test(tensor_access, functional_strided)
{
	functional_access(cow_backend_strided(), true);
}

Test(tensor_access, functional_opaque)
{
	functional_access(cow_backend_opaque_test(), false);
}
