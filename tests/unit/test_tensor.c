/*
 * Tensors: creation, accessors, element access, lifecycle, eager and lazy
 * clones, and the design's lazy-clone scenario (a lazy clone of
 * T = [[0, 1], [2, 3]] written on both sides).
 */
#include <math.h>

#include <criterion/criterion.h>

#include "cow_test.h"
#include "leak_fixture.h"
#include "tensor_test.h"

TestSuite(tensor, .init = leak_setup, .fini = leak_teardown, .timeout = 30.0);

static cow_stats_t
stats(void)
{
	cow_stats_t s;

	cow_stats_get(&s);
	return s;
}

/*
 * The scenario, step by step: C = lazy_clone(T) has its own storage over
 * the same address; a view V of T shares T's storage; all three are COW.
 * V += 1 materialises T's storage (T and V together move to a new
 * address) while C keeps the original; C += 1 then holds the last share and
 * steals: its address does not change and nothing is copied.
 */
Test(tensor, lazy_clone_scenario)
{
	const int64_t sz[2] = {2, 2};
	const double t0[4] = {0, 1, 2, 3}, t1[4] = {1, 2, 3, 4};
	const double v1[4] = {1, 3, 2, 4};
	cow_tensor_t *T, *C, *V;
	const void *orig;
	cow_stats_t s;

	T = tt_from(COW_DTYPE_INT64, 2, sz, t0);
	orig = cow_tensor_const_data(T);
	cow_stats_reset();

	TT_OK(cow_tensor_lazy_clone(T, &C));
	cr_assert_neq(cow_tensor_storage(C), cow_tensor_storage(T),
	    "a lazy clone has its own storage");
	cr_assert_eq(cow_tensor_const_data(C), orig, "one address");
	cr_assert_eq(cow_tensor_const_data(T), orig, "T did not move");
	tt_assert_shape(C, 2, sz);
	tt_assert_values(C, t0);

	TT_OK(cow_tensor_transpose(T, 0, 1, &V));
	cr_assert_eq(cow_tensor_storage(V), cow_tensor_storage(T),
	    "a view shares its base's storage");
	cr_assert(cow_storage_is_cow(cow_tensor_storage(T)));
	cr_assert(cow_storage_is_cow(cow_tensor_storage(C)));
	cr_assert(cow_storage_is_cow(cow_tensor_storage(V)));
	cr_assert_eq(cow_storage_share_count(cow_tensor_storage(T)), 2,
	    "one share per storage, however many tensors view it");
	s = stats();
	cr_assert_eq(s.bytes_copied, 0);

	TT_OK(cow_tensor_add_scalar_(V, 1));
	cr_assert_neq(cow_tensor_const_data(T), orig,
	    "the write through V materialised T's storage (new address)");
	cr_assert_eq(cow_tensor_const_data(V), cow_tensor_const_data(T),
	    "T and V moved together");
	cr_assert_not(cow_storage_is_cow(cow_tensor_storage(T)));
	cr_assert_eq(cow_tensor_const_data(C), orig, "C keeps the original");
	s = stats();
	cr_assert_eq(s.materialize_copies, 1);
	cr_assert_eq(s.bytes_copied, 4 * sizeof(int64_t));
	tt_assert_values(T, t1);
	tt_assert_values(V, v1);
	tt_assert_values(C, t0);

	cr_assert(cow_storage_is_cow(cow_tensor_storage(C)));
	cr_assert_eq(cow_storage_share_count(cow_tensor_storage(C)), 1);
	TT_OK(cow_tensor_add_scalar_(C, 1));
	cr_assert_eq(cow_tensor_const_data(C), orig,
	    "C holds the last share: it steals, the address is unchanged");
	s = stats();
	cr_assert_eq(s.materialize_steals, 1);
	cr_assert_eq(s.materialize_copies, 1, "nothing else was copied");
	cr_assert_eq(s.bytes_copied, 4 * sizeof(int64_t));
	cr_assert_not(cow_storage_is_cow(cow_tensor_storage(C)));
	tt_assert_values(C, t1);
	tt_assert_values(T, t1);

	cow_tensor_release(V);
	cow_tensor_release(C);
	cow_tensor_release(T);
}

Test(tensor, reads_never_materialise)
{
	const int64_t sz[2] = {3, 4};
	cow_tensor_t *T = tt_arange(COW_DTYPE_FLOAT32, 2, sz, sys), *C, *S, *R;
	cow_tensor_t *tr;
	bool eq;

	TT_OK(cow_tensor_lazy_clone(T, &C));
	cow_stats_reset();
	TT_OK(cow_tensor_add(T, C, &S));
	TT_OK(cow_tensor_transpose(C, 0, 1, &tr));
	TT_OK(cow_tensor_mul(tr, tr, &R));
	TT_OK(cow_tensor_equal(T, C, &eq));
	cr_assert(eq);
	cow_tensor_release(R);
	TT_OK(cow_tensor_sum(C, &R));
	cow_tensor_release(R);
	TT_OK(cow_tensor_clone(tr, &R));
	cow_tensor_release(R);
	(void)cow_tensor_const_data(T);
	(void)tt_get(C, (int64_t[]){2, 3});
	cr_assert(cow_storage_is_cow(cow_tensor_storage(T)), "T still COW");
	cr_assert(cow_storage_is_cow(cow_tensor_storage(C)), "C still COW");
	cr_assert_eq(stats().bytes_copied, 0);
	cr_assert_eq(stats().materialize_copies + stats().materialize_steals, 0);
	for (int64_t i = 0; i < 3; i++)
		for (int64_t j = 0; j < 4; j++)
			cr_assert_eq(tt_get(S, (int64_t[]){i, j}),
			    2.0 * (double)(i * 4 + j));
	cow_tensor_release(S);
	cow_tensor_release(tr);
	cow_tensor_release(C);
	cow_tensor_release(T);
}

Test(tensor, lazy_clone_of_view_shares_whole_allocation)
{
	const int64_t sz[2] = {4, 5};
	cow_tensor_t *T = tt_arange(COW_DTYPE_INT32, 2, sz, sys), *row, *c;

	TT_OK(cow_tensor_select(T, 0, 2, &row));
	TT_OK(cow_tensor_lazy_clone(row, &c));
	cr_assert_eq(cow_tensor_offset(c), cow_tensor_offset(row));
	cr_assert_eq(cow_tensor_offset(c), 10);
	cr_assert_eq(cow_storage_nbytes(cow_tensor_storage(c)),
	    cow_storage_nbytes(cow_tensor_storage(T)),
	    "the clone's storage is the whole allocation");
	cr_assert(cow_storage_shares_data(cow_tensor_storage(c),
	    cow_tensor_storage(T)));
	tt_assert_values(c, (double[]){10, 11, 12, 13, 14});
	/* Writing the clone leaves T and its row alone. */
	TT_OK(cow_tensor_fill_(c, 7));
	tt_assert_values(row, (double[]){10, 11, 12, 13, 14});
	tt_assert_values(c, (double[]){7, 7, 7, 7, 7});
	cow_tensor_release(c);
	cow_tensor_release(row);
	cow_tensor_release(T);
}

Test(tensor, creation_and_accessors)
{
	const int64_t sz[3] = {2, 3, 4};
	cow_tensor_t *t;
	int64_t v;

	TT_OK(cow_tensor_zeros(COW_DTYPE_FLOAT64, 3, sz, sys, &t));
	cr_assert_eq(cow_tensor_ndim(t), 3);
	cr_assert_eq(cow_tensor_dtype(t), COW_DTYPE_FLOAT64);
	cr_assert_eq(cow_tensor_numel(t), 24);
	cr_assert_eq(cow_tensor_offset(t), 0);
	cr_assert(cow_tensor_is_contiguous(t));
	TT_OK(cow_tensor_size(t, 1, &v));
	cr_assert_eq(v, 3);
	TT_OK(cow_tensor_size(t, -1, &v));
	cr_assert_eq(v, 4);
	TT_OK(cow_tensor_stride(t, 0, &v));
	cr_assert_eq(v, 12);
	TT_OK(cow_tensor_stride(t, -2, &v));
	cr_assert_eq(v, 4);
	cr_assert_eq(cow_tensor_strides(t)[2], 1);
	cr_assert_eq(cow_storage_nbytes(cow_tensor_storage(t)), 24 * 8);
	cr_assert_eq(cow_storage_allocator(cow_tensor_storage(t)), sys);
	for (int64_t k = 0; k < 24; k++)
		cr_assert_eq(((const double *)cow_tensor_const_data(t))[k], 0.0);
	cow_tensor_release(t);

	TT_OK(cow_tensor_full(COW_DTYPE_INT32, 3, sz, -7.9, sys, &t));
	for (int64_t k = 0; k < 24; k++)
		cr_assert_eq(((const int32_t *)cow_tensor_const_data(t))[k], -7,
		    "full converts by truncation");
	cow_tensor_release(t);

	TT_OK(cow_tensor_full(COW_DTYPE_BOOL, 0, NULL, 0.5, sys, &t));
	cr_assert_eq(cow_tensor_ndim(t), 0);
	cr_assert_eq(cow_tensor_numel(t), 1, "a scalar has one element");
	cr_assert_eq(tt_geti(t, NULL), 1);
	cow_tensor_release(t);

	TT_OK(cow_tensor_arange(COW_DTYPE_UINT8, 300, sys, &t));
	cr_assert_eq(tt_geti(t, (int64_t[]){299}), 299 % 256,
	    "integer conversion wraps");
	cow_tensor_release(t);

	TT_OK(cow_tensor_empty(COW_DTYPE_INT64, 2, (int64_t[]){0, 5}, sys,
	    &t));
	cr_assert_eq(cow_tensor_numel(t), 0);
	cr_assert(cow_tensor_is_contiguous(t));
	cr_assert_null(cow_tensor_const_data(t));
	cow_tensor_release(t);
}

Test(tensor, from_data_copies)
{
	int32_t buf[6] = {5, 4, 3, 2, 1, 0};
	cow_tensor_t *t;

	TT_OK(cow_tensor_from_data(COW_DTYPE_INT32, 2, (int64_t[]){2, 3}, buf,
	    sys, &t));
	buf[0] = 99;
	cr_assert_neq(cow_tensor_const_data(t), (const void *)buf);
	tt_assert_values(t, (double[]){5, 4, 3, 2, 1, 0});
	cow_tensor_release(t);
}

Test(tensor, from_storage_layout)
{
	cow_storage_t *s = cow_test_storage(64, sys, 3);
	const unsigned char *raw = cow_storage_const_data(s);
	cow_tensor_t *t;

	/* 4 x 3 bytes, row stride 10, starting at byte 5. */
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_UINT8, 2,
	    (int64_t[]){4, 3}, (int64_t[]){10, 1}, 5, &t));
	cr_assert_eq(cow_tensor_storage(t), s);
	cr_assert_not(cow_tensor_is_contiguous(t));
	for (int64_t i = 0; i < 4; i++)
		for (int64_t j = 0; j < 3; j++)
			cr_assert_eq(tt_geti(t, (int64_t[]){i, j}),
			    raw[5 + 10 * i + j]);
	/* The tensor keeps the storage alive. */
	cow_storage_release(s);
	cr_assert_eq(tt_geti(t, (int64_t[]){3, 2}),
	    ((const unsigned char *)cow_storage_const_data(
	    cow_tensor_storage(t)))[37]);
	cow_tensor_release(t);
}

Test(tensor, element_access)
{
	const int64_t sz[2] = {3, 2};
	cow_tensor_t *t = tt_arange(COW_DTYPE_INT64, 2, sz, sys), *c;

	cr_assert_eq(tt_geti(t, (int64_t[]){-1, -1}), 5,
	    "negative indices count from the end");
	TT_OK(cow_tensor_set_i64(t, (int64_t[]){1, 0}, INT64_MIN + 3));
	cr_assert_eq(tt_geti(t, (int64_t[]){1, 0}), INT64_MIN + 3,
	    "set_i64/get_i64 are exact");
	TT_OK(cow_tensor_set_f64(t, (int64_t[]){1, 1}, 1e300));
	cr_assert_eq(tt_geti(t, (int64_t[]){1, 1}), INT64_MAX,
	    "float to int saturates");
	TT_OK(cow_tensor_set_f64(t, (int64_t[]){0, 0}, -NAN));
	cr_assert_eq(tt_geti(t, (int64_t[]){0, 0}), 0, "NaN gives 0");

	/* A set materialises a COW tensor; a get does not. */
	TT_OK(cow_tensor_lazy_clone(t, &c));
	(void)tt_geti(c, (int64_t[]){2, 1});
	cr_assert(cow_storage_is_cow(cow_tensor_storage(c)));
	TT_OK(cow_tensor_set_i64(c, (int64_t[]){2, 1}, 42));
	cr_assert_not(cow_storage_is_cow(cow_tensor_storage(c)));
	cr_assert_eq(tt_geti(c, (int64_t[]){2, 1}), 42);
	cr_assert_eq(tt_geti(t, (int64_t[]){2, 1}), 5);
	cow_tensor_release(c);
	cow_tensor_release(t);
}

Test(tensor, mutable_data_materialises)
{
	cow_tensor_t *t = tt_arange(COW_DTYPE_FLOAT64, 1, (int64_t[]){8}, sys);
	cow_tensor_t *c, *e;
	const void *orig = cow_tensor_const_data(t);
	void *p;

	TT_OK(cow_tensor_lazy_clone(t, &c));
	cr_assert_eq(cow_tensor_const_data(c), orig);
	TT_OK(cow_tensor_mutable_data(c, &p));
	cr_assert_neq(p, orig, "c copied");
	((double *)p)[0] = 5;
	cr_assert_eq(tt_get(t, (int64_t[]){0}), 0.0);
	cr_assert_eq(tt_get(c, (int64_t[]){0}), 5.0);
	TT_OK(cow_tensor_mutable_data(t, &p));
	cr_assert_eq(p, orig, "t held the last share: stolen in place");

	/* No elements: no pointer, nothing materialised. */
	TT_OK(cow_tensor_narrow(c, 0, 2, 0, &e));
	cow_tensor_release(c);
	TT_OK(cow_tensor_lazy_clone(t, &c));
	cow_tensor_release(e);
	TT_OK(cow_tensor_narrow(c, 0, 2, 0, &e));
	TT_OK(cow_tensor_mutable_data(e, &p));
	cr_assert_null(p);
	cr_assert(cow_storage_is_cow(cow_tensor_storage(e)));
	cow_tensor_release(e);
	cow_tensor_release(c);
	cow_tensor_release(t);
}

Test(tensor, refcounts)
{
	cow_tensor_t *t = tt_arange(COW_DTYPE_INT32, 1, (int64_t[]){4}, sys);
	cow_tensor_t *v;

	cr_assert_eq(cow_tensor_refcount(t), 1);
	cow_tensor_retain(t);
	cr_assert_eq(cow_tensor_refcount(t), 2);
	cow_tensor_release(t);
	cr_assert_eq(cow_tensor_refcount(t), 1);
	/* A view holds its storage, not its base tensor. */
	TT_OK(cow_tensor_unsqueeze(t, 0, &v));
	cr_assert_eq(cow_tensor_refcount(t), 1);
	cow_tensor_release(t);
	tt_assert_values(v, (double[]){0, 1, 2, 3});
	cow_tensor_release(v);
	cow_tensor_release(NULL);
	cr_assert_eq(cow_tensor_refcount(NULL), 0);
}

Test(tensor, clone_and_contiguous)
{
	const int64_t sz[2] = {3, 5};
	cow_tensor_t *t = tt_arange(COW_DTYPE_INT64, 2, sz, sys), *tr, *c, *k;

	TT_OK(cow_tensor_transpose(t, 0, 1, &tr));
	cr_assert_not(cow_tensor_is_contiguous(tr));
	TT_OK(cow_tensor_clone(tr, &c));
	cr_assert(cow_tensor_is_contiguous(c));
	cr_assert_neq(cow_tensor_storage(c), cow_tensor_storage(t));
	cr_assert_not(cow_storage_is_cow(cow_tensor_storage(t)),
	    "an eager clone does not make the source COW");
	for (int64_t i = 0; i < 5; i++)
		for (int64_t j = 0; j < 3; j++)
			cr_assert_eq(tt_geti(c, (int64_t[]){i, j}), j * 5 + i);
	TT_OK(cow_tensor_contiguous(t, &k));
	cr_assert_eq(k, t, "contiguous of a contiguous tensor is itself");
	cr_assert_eq(cow_tensor_refcount(t), 2);
	cow_tensor_release(k);
	TT_OK(cow_tensor_contiguous(tr, &k));
	cr_assert_neq(k, tr);
	cr_assert(cow_tensor_is_contiguous(k));
	cow_tensor_release(k);
	cow_tensor_release(c);
	cow_tensor_release(tr);
	cow_tensor_release(t);
}

Test(tensor, dtypes)
{
	cr_assert_eq(cow_dtype_size(COW_DTYPE_BOOL), 1);
	cr_assert_eq(cow_dtype_size(COW_DTYPE_UINT8), 1);
	cr_assert_eq(cow_dtype_size(COW_DTYPE_INT32), 4);
	cr_assert_eq(cow_dtype_size(COW_DTYPE_INT64), 8);
	cr_assert_eq(cow_dtype_size(COW_DTYPE_FLOAT32), 4);
	cr_assert_eq(cow_dtype_size(COW_DTYPE_FLOAT64), 8);
	cr_assert_eq(cow_dtype_size((cow_dtype_t)77), 0);
	cr_assert_str_eq(cow_dtype_name(COW_DTYPE_FLOAT32), "float32");
	cr_assert_str_eq(cow_dtype_name((cow_dtype_t)-1), "unknown");
	cr_assert_geq(COW_TENSOR_MAX_NDIM, 8);
}

Test(tensor, max_ndim)
{
	int64_t sz[COW_TENSOR_MAX_NDIM], idx[COW_TENSOR_MAX_NDIM];
	cow_tensor_t *t, *u;

	for (int d = 0; d < COW_TENSOR_MAX_NDIM; d++) {
		sz[d] = d < 3 ? 2 : 1;
		idx[d] = d < 3 ? 1 : 0;
	}
	t = tt_arange(COW_DTYPE_INT32, COW_TENSOR_MAX_NDIM, sz, sys);
	cr_assert_eq(tt_geti(t, idx), 7);
	TT_OK(cow_tensor_add_scalar_(t, 1));
	cr_assert_eq(tt_geti(t, idx), 8);
	TT_FAILS(cow_tensor_unsqueeze(t, 0, &u), COW_ERANGE, "maximum");
	cow_tensor_release(t);
}
