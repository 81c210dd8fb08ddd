/*
 * Reshape in both modes: the legacy mode aliases, the lazy-copy mode does
 * not, neither copies a byte until someone writes (cow_stats), and a
 * reshape that no view can express copies in both. The mode setting: the
 * process-wide value, the thread-local override, the WARN value (its
 * simulation is tested in test_shadow.c).
 */
#include <pthread.h>

#include <criterion/criterion.h>

#include "cow_test.h"
#include "leak_fixture.h"
#include "tensor_test.h"

TestSuite(reshape, .init = leak_setup, .fini = leak_teardown, .timeout = 30.0);

static uint64_t
bytes_copied(void)
{
	cow_stats_t s;

	cow_stats_get(&s);
	return s.bytes_copied;
}

Test(reshape, default_mode_is_alias)
{
	cr_assert_eq(cow_reshape_mode_get(), COW_RESHAPE_ALIAS);
	cr_assert_eq(cow_reshape_mode_get_thread(), COW_RESHAPE_INHERIT);
	cr_assert_eq(cow_reshape_mode_effective(), COW_RESHAPE_ALIAS);
}

Test(reshape, alias_mode_returns_a_view)
{
	const int64_t sz[2] = {3, 4};
	cow_tensor_t *t = tt_arange(COW_DTYPE_INT32, 2, sz, sys), *r;

	TT_OK(cow_reshape_mode_set(COW_RESHAPE_ALIAS));
	TT_OK(cow_tensor_reshape(t, 3, (int64_t[]){2, -1, 3}, &r));
	tt_assert_shape(r, 3, (int64_t[]){2, 2, 3});
	cr_assert_eq(cow_tensor_storage(r), cow_tensor_storage(t),
	    "legacy reshape aliases");
	cr_assert_eq(cow_tensor_const_data(r), cow_tensor_const_data(t));
	cr_assert_not(cow_storage_is_cow(cow_tensor_storage(t)));
	cr_assert_eq(bytes_copied(), 0);
	/* A write through the alias is seen by the input, and copies
	 * nothing. */
	TT_OK(cow_tensor_set_i64(r, (int64_t[]){1, 1, 2}, -1));
	cr_assert_eq(tt_geti(t, (int64_t[]){2, 3}), -1);
	cr_assert_eq(bytes_copied(), 0);
	cow_tensor_release(r);
	cow_tensor_release(t);
}

Test(reshape, lazy_copy_mode_does_not_alias)
{
	const int64_t sz[2] = {3, 4};
	cow_tensor_t *t = tt_arange(COW_DTYPE_INT64, 2, sz, sys), *r;
	const void *addr = cow_tensor_const_data(t);
	cow_reshape_mode_t prev;

	TT_OK(cow_reshape_mode_set_thread(COW_RESHAPE_LAZY_COPY, &prev));
	cr_assert_eq(prev, COW_RESHAPE_INHERIT);
	cr_assert_eq(cow_reshape_mode_get(), COW_RESHAPE_ALIAS,
	    "the override does not change the process-wide mode");
	TT_OK(cow_tensor_reshape(t, 2, (int64_t[]){6, 2}, &r));
	tt_assert_shape(r, 2, (int64_t[]){6, 2});
	cr_assert_neq(cow_tensor_storage(r), cow_tensor_storage(t),
	    "lazy-copy reshape gives a new storage");
	cr_assert(cow_storage_shares_data(cow_tensor_storage(r),
	    cow_tensor_storage(t)), "... over the same data");
	cr_assert_eq(cow_tensor_const_data(r), addr);
	cr_assert_eq(bytes_copied(), 0, "as cheap as a view");
	for (int64_t k = 0; k < 12; k++)
		cr_assert_eq(tt_geti(r, (int64_t[]){k / 2, k % 2}), k);

	/* The first write copies, and only then. */
	TT_OK(cow_tensor_fill_(r, 7));
	cr_assert_eq(bytes_copied(), 12 * sizeof(int64_t));
	cr_assert_eq(tt_geti(t, (int64_t[]){2, 3}), 11, "no aliasing");
	cr_assert_eq(cow_tensor_const_data(t), addr);
	/* t now holds the last share: its write steals, copying nothing. */
	TT_OK(cow_tensor_add_scalar_(t, 1));
	cr_assert_eq(bytes_copied(), 12 * sizeof(int64_t));
	cr_assert_eq(cow_tensor_const_data(t), addr);
	cr_assert_eq(tt_geti(r, (int64_t[]){5, 1}), 7);
	TT_OK(cow_reshape_mode_set_thread(prev, NULL));
	cr_assert_eq(cow_reshape_mode_effective(), COW_RESHAPE_ALIAS);
	cow_tensor_release(r);
	cow_tensor_release(t);
}

Test(reshape, lazy_copy_of_a_view_keeps_layout)
{
	const int64_t sz[3] = {4, 2, 3};
	cow_tensor_t *t = tt_arange(COW_DTYPE_FLOAT32, 3, sz, sys), *row, *r;

	TT_OK(cow_reshape_mode_set(COW_RESHAPE_LAZY_COPY));
	TT_OK(cow_tensor_select(t, 0, 2, &row)); /* [2, 3] at offset 12 */
	TT_OK(cow_tensor_reshape(row, 1, (int64_t[]){-1}, &r));
	cr_assert_eq(cow_tensor_offset(r), 12);
	cr_assert_eq(cow_storage_nbytes(cow_tensor_storage(r)), 24 * 4,
	    "shares the whole allocation");
	tt_assert_values(r, (double[]){12, 13, 14, 15, 16, 17});
	cr_assert_eq(bytes_copied(), 0);
	TT_OK(cow_tensor_mul_scalar_(r, 0));
	tt_assert_values(row, (double[]){12, 13, 14, 15, 16, 17});
	cr_assert_eq(bytes_copied(), 24 * 4);
	TT_OK(cow_reshape_mode_set(COW_RESHAPE_ALIAS));
	cow_tensor_release(r);
	cow_tensor_release(row);
	cow_tensor_release(t);
}

Test(reshape, non_viewable_copies_in_both_modes)
{
	static const cow_reshape_mode_t modes[2] = {COW_RESHAPE_ALIAS,
	    COW_RESHAPE_LAZY_COPY};
	const int64_t sz[2] = {3, 4};

	for (int m = 0; m < 2; m++) {
		cow_tensor_t *t = tt_arange(COW_DTYPE_INT32, 2, sz, sys), *tr;
		cow_tensor_t *r;

		TT_OK(cow_reshape_mode_set_thread(modes[m], NULL));
		TT_OK(cow_tensor_transpose(t, 0, 1, &tr));
		TT_OK(cow_tensor_reshape(tr, 1, (int64_t[]){12}, &r));
		cr_assert(cow_tensor_is_contiguous(r));
		cr_assert_not(cow_storage_shares_data(cow_tensor_storage(r),
		    cow_tensor_storage(t)), "an eager copy");
		cr_assert_not(cow_storage_is_cow(cow_tensor_storage(t)));
		for (int64_t k = 0; k < 12; k++)
			cr_assert_eq(tt_geti(r, &k), (k % 3) * 4 + k / 3);
		TT_OK(cow_tensor_fill_(r, 0));
		cr_assert_eq(tt_geti(t, (int64_t[]){2, 3}), 11);
		cow_tensor_release(r);
		cow_tensor_release(tr);
		cow_tensor_release(t);
	}
	TT_OK(cow_reshape_mode_set_thread(COW_RESHAPE_INHERIT, NULL));
}

Test(reshape, shapes_and_errors)
{
	const int64_t sz[2] = {2, 3};
	cow_tensor_t *t = tt_arange(COW_DTYPE_INT64, 2, sz, sys), *r = NULL;
	cow_tensor_t *e;

	TT_FAILS(cow_tensor_reshape(t, 2, (int64_t[]){4, 2}, &r), COW_ESHAPE,
	    "6 elements");
	TT_FAILS(cow_tensor_reshape(t, 2, (int64_t[]){-1, -1}, &r),
	    COW_EINVAL, "only one");
	TT_FAILS(cow_tensor_reshape(t, 2, (int64_t[]){-1, 4}, &r), COW_ESHAPE,
	    "[-1, 4]");
	TT_FAILS(cow_tensor_reshape(t, 1, (int64_t[]){-3}, &r), COW_EINVAL,
	    "-3");
	TT_FAILS(cow_tensor_reshape(t, COW_TENSOR_MAX_NDIM + 1, sz, &r),
	    COW_ERANGE, "ndim");
	cr_assert_null(r);
	TT_FAILS(cow_tensor_reshape(t, 0, NULL, &r), COW_ESHAPE,
	    "shape [] is invalid for 6 elements");
	/* Scalars and empty tensors. */
	TT_OK(cow_tensor_narrow(t, 1, 0, 0, &e));
	TT_OK(cow_tensor_reshape(e, 3, (int64_t[]){0, 5, 7}, &r));
	tt_assert_shape(r, 3, (int64_t[]){0, 5, 7});
	cow_tensor_release(r);
	TT_FAILS(cow_tensor_reshape(e, 2, (int64_t[]){0, -1}, &r), COW_ESHAPE,
	    "cannot be inferred");
	cow_tensor_release(e);
	TT_OK(cow_tensor_select(t, 0, 1, &e));
	cow_tensor_release(t);
	TT_OK(cow_tensor_narrow(e, 0, 2, 1, &t));
	cow_tensor_release(e);
	TT_OK(cow_tensor_reshape(t, 0, NULL, &r));
	cr_assert_eq(cow_tensor_ndim(r), 0);
	cr_assert_eq(tt_geti(r, NULL), 5);
	cow_tensor_release(r);
	TT_OK(cow_tensor_reshape(t, 3, (int64_t[]){1, 1, 1}, &r));
	cr_assert_eq(tt_geti(r, (int64_t[]){0, 0, 0}), 5);
	cow_tensor_release(r);
	cow_tensor_release(t);
}

Test(reshape, mode_setters)
{
	cow_reshape_mode_t prev = COW_RESHAPE_ALIAS;

	TT_OK(cow_reshape_mode_set(COW_RESHAPE_WARN));
	cr_assert_eq(cow_reshape_mode_get(), COW_RESHAPE_WARN);
	cr_assert_eq(cow_reshape_mode_effective(), COW_RESHAPE_WARN);
	TT_FAILS(cow_reshape_mode_set((cow_reshape_mode_t)7), COW_EINVAL,
	    "7");
	cr_assert_eq(cow_reshape_mode_get(), COW_RESHAPE_WARN,
	    "a refused mode changes nothing");
	TT_OK(cow_reshape_mode_set(COW_RESHAPE_ALIAS));
	TT_FAILS(cow_reshape_mode_set_thread((cow_reshape_mode_t)-2, &prev),
	    COW_EINVAL, "-2");
	cr_assert_eq(prev, COW_RESHAPE_ALIAS, "previous untouched on error");
	cr_assert_eq(cow_reshape_mode_get_thread(), COW_RESHAPE_INHERIT);
	TT_OK(cow_reshape_mode_set_thread(COW_RESHAPE_WARN, &prev));
	cr_assert_eq(prev, COW_RESHAPE_INHERIT);
	cr_assert_eq(cow_reshape_mode_effective(), COW_RESHAPE_WARN);
	TT_OK(cow_reshape_mode_set_thread(COW_RESHAPE_INHERIT, NULL));
	TT_FAILS(cow_reshape_mode_set(COW_RESHAPE_INHERIT), COW_EINVAL,
	    "-1");
	TT_FAILS(cow_reshape_mode_set((cow_reshape_mode_t)3), COW_EINVAL,
	    "3");

	TT_OK(cow_reshape_mode_set(COW_RESHAPE_LAZY_COPY));
	cr_assert_eq(cow_reshape_mode_effective(), COW_RESHAPE_LAZY_COPY);
	TT_OK(cow_reshape_mode_set_thread(COW_RESHAPE_ALIAS, &prev));
	cr_assert_eq(prev, COW_RESHAPE_INHERIT);
	cr_assert_eq(cow_reshape_mode_effective(), COW_RESHAPE_ALIAS,
	    "the thread override wins");
	TT_OK(cow_reshape_mode_set_thread(COW_RESHAPE_INHERIT, &prev));
	cr_assert_eq(prev, COW_RESHAPE_ALIAS);
	cr_assert_eq(cow_reshape_mode_effective(), COW_RESHAPE_LAZY_COPY);
	TT_OK(cow_reshape_mode_set(COW_RESHAPE_ALIAS));
}

struct seen {
	cow_reshape_mode_t effective, thread;
	bool aliased;
};

static void *
other_thread(void *arg)
{
	struct seen *s = arg;
	cow_tensor_t *t, *r;

	s->effective = cow_reshape_mode_effective();
	s->thread = cow_reshape_mode_get_thread();
	if (cow_tensor_arange(COW_DTYPE_INT32, 6, cow_allocator_system(), &t) !=
	    COW_OK)
		return NULL;
	if (cow_tensor_reshape(t, 2, (int64_t[]){2, 3}, &r) == COW_OK) {
		s->aliased = cow_tensor_storage(r) == cow_tensor_storage(t);
		cow_tensor_release(r);
	}
	cow_tensor_release(t);
	return NULL;
}

Test(reshape, override_is_thread_local)
{
	struct seen s = {COW_RESHAPE_WARN, COW_RESHAPE_WARN, false};
	pthread_t th;

	TT_OK(cow_reshape_mode_set_thread(COW_RESHAPE_LAZY_COPY, NULL));
	cr_assert_eq(pthread_create(&th, NULL, other_thread, &s), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(s.thread, COW_RESHAPE_INHERIT);
	cr_assert_eq(s.effective, COW_RESHAPE_ALIAS);
	cr_assert(s.aliased, "the other thread reshapes in the global mode");

	/* The process-wide mode reaches other threads. */
	TT_OK(cow_reshape_mode_set(COW_RESHAPE_LAZY_COPY));
	TT_OK(cow_reshape_mode_set_thread(COW_RESHAPE_ALIAS, NULL));
	s.aliased = true;
	cr_assert_eq(pthread_create(&th, NULL, other_thread, &s), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(s.effective, COW_RESHAPE_LAZY_COPY);
	cr_assert_not(s.aliased);
	TT_OK(cow_reshape_mode_set(COW_RESHAPE_ALIAS));
	TT_OK(cow_reshape_mode_set_thread(COW_RESHAPE_INHERIT, NULL));
}
