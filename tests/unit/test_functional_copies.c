/*
 * Functionalization: copies and reshape, and the memory bound of the
 * update queue (the three ways of functional_test.h).
 */
#include "functional_test.h"

TestSuite(functional, .timeout = 60.0);

/* ------------------------------------------------------------------ */
/* Copies and reshape.                                                   */

static void
prog_copies(struct run *r)
{
	cow_tensor_t *x, *v, *lc, *c, *lcv;

	x = arange(2, (int64_t[]){3, 3});
	TT_OK(cow_tensor_slice(x, 1, 1, 3, 1, &v));   /* [3, 2] */
	TT_OK(cow_tensor_lazy_clone(v, &lc));          /* no aliasing */
	TT_OK(cow_tensor_clone(v, &c));
	tt_assert_shape(lc, 2, (int64_t[]){3, 2});
	cr_assert_eq(cow_tensor_strides(lc)[0], cow_tensor_strides(v)[0]);
	cr_assert_eq(cow_tensor_offset(lc), cow_tensor_offset(v));
	TT_OK(cow_tensor_fill_(v, 1));
	TT_OK(cow_tensor_select(lc, 1, 0, &lcv));
	TT_OK(cow_tensor_add_scalar_(lcv, 10));
	emit(r, "x", x);
	emit(r, "lc", lc);
	emit(r, "c", c);
	cow_tensor_release(lcv);
	cow_tensor_release(c);
	cow_tensor_release(lc);
	cow_tensor_release(v);
	cow_tensor_release(x);
}

Test(functional, clone_and_lazy_clone_do_not_alias)
{
	run3(prog_copies);
}

/* A lazy clone of a tensor whose own last write is still queued (its value
 * is current, the base is not): the clone must share the written base. A
 * later write through the clone replays its path on that base. (Found by
 * fuzz_functional.) */
static void
prog_lazy_clone_after_queued_write(struct run *r)
{
	cow_tensor_t *x, *c;

	x = arange(2, (int64_t[]){2, 3});
	TT_OK(cow_tensor_mul_scalar_(x, 10));
	if (functional(r))
		cr_assert_eq(info(x).pending_updates, 1);
	TT_OK(cow_tensor_lazy_clone(x, &c));
	TT_OK(cow_tensor_set_f64(c, (int64_t[]){1, 2}, -1));
	expect(r, "c", c, (double[]){0, 10, 20, 30, 40, -1});
	expect(r, "x", x, (double[]){0, 10, 20, 30, 40, 50});
	cow_tensor_release(c);
	cow_tensor_release(x);
}

Test(functional, lazy_clone_after_a_queued_write)
{
	run3(prog_lazy_clone_after_queued_write);
}

/* MaybeOwned over functional tensors: a contiguous one is borrowed, a
 * transposed view gives an owned contiguous (functional) copy. */
static void
prog_expect_contiguous(struct run *r)
{
	cow_maybe_owned_t a, b;
	cow_tensor_t *x, *t;

	x = arange(2, (int64_t[]){2, 3});
	TT_OK(cow_tensor_transpose(x, 0, 1, &t));
	TT_OK(cow_tensor_expect_contiguous(x, &a));
	TT_OK(cow_tensor_expect_contiguous(t, &b));
	cr_assert(!cow_maybe_owned_is_owned(&a));
	cr_assert_eq(cow_maybe_owned_get(&a), x);
	cr_assert(cow_maybe_owned_is_owned(&b));
	cr_assert(cow_tensor_is_contiguous(cow_maybe_owned_get(&b)));
	emit(r, "owned", cow_maybe_owned_get(&b));
	/* The copy does not alias: writing t leaves it as it was. */
	TT_OK(cow_tensor_fill_(t, 0));
	emit(r, "owned-after", cow_maybe_owned_get(&b));
	emit(r, "borrowed", cow_maybe_owned_get(&a));
	cow_maybe_owned_release(&b);
	cow_maybe_owned_release(&a);
	cow_tensor_release(t);
	cow_tensor_release(x);
}

Test(functional, expect_contiguous_borrows_or_copies)
{
	run3(prog_expect_contiguous);
}

static cow_reshape_mode_t cur_mode;

static void
prog_reshape(struct run *r)
{
	cow_tensor_t *x, *v, *t, *tv;

	x = arange(2, (int64_t[]){2, 3});
	TT_OK(cow_tensor_reshape(x, 1, (int64_t[]){6}, &v));  /* viewable */
	TT_OK(cow_tensor_transpose(x, 0, 1, &t));
	TT_OK(cow_tensor_reshape(t, 1, (int64_t[]){-1}, &tv)); /* a copy */
	TT_OK(cow_tensor_fill_(v, 3));
	TT_OK(cow_tensor_add_scalar_(tv, 1));
	emit(r, "x", x);
	emit(r, "v", v);
	emit(r, "tv", tv);
	cow_tensor_release(tv);
	cow_tensor_release(t);
	cow_tensor_release(v);
	cow_tensor_release(x);
}

Test(functional, reshape_in_alias_and_lazy_copy_modes)
{
	static const cow_reshape_mode_t modes[] = {COW_RESHAPE_ALIAS,
	    COW_RESHAPE_LAZY_COPY};
	cow_reshape_mode_t prev;

	for (size_t i = 0; i < 2; i++) {
		cur_mode = modes[i];
		TT_OK(cow_reshape_mode_set_thread(cur_mode, &prev));
		run3(prog_reshape);
		TT_OK(cow_reshape_mode_set_thread(prev, NULL));
	}
}

/* ------------------------------------------------------------------ */
/* The memory bound.                                                     */

static void
assert_bounded(const cow_tensor_t *t)
{
	cow_functional_info_t i = info(t);

	cr_assert_leq(i.pending_updates, COW_FUNCTIONAL_MAX_UPDATES);
	cr_assert_leq(i.pending_bytes, i.base_bytes, "%zu pending bytes, "
	    "base %zu", i.pending_bytes, i.base_bytes);
}

/* Writes through many different paths and nothing reads (fill_ and copy_
 * do not read their destination): the queue stays within its bound
 * (eager flushes), and the values are right. An in-place op that reads
 * its destination (add_) syncs it first, which applies the queue. */
static void
prog_many_paths(struct run *r)
{
	enum { ROWS = 64, COLS = 4 };
	cow_tensor_t *x, *row;

	TT_OK(cow_tensor_zeros(COW_DTYPE_FLOAT32, 2, (int64_t[]){ROWS, COLS},
	    NULL, &x));
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < ROWS; i++) {
			TT_OK(cow_tensor_select(x, 0, i, &row));
			TT_OK(cow_tensor_fill_(row, i + round));
			cow_tensor_release(row);
			if (functional(r))
				assert_bounded(x);
		}
	}
	if (functional(r)) {
		cr_assert_geq(info(x).eager_flushes, 3 * ROWS /
		    (COW_FUNCTIONAL_MAX_UPDATES + 1));
		cr_assert_eq(info(x).updates_applied +
		    info(x).pending_updates, 3 * ROWS);
		cr_assert_eq(info(x).generation, 3 * ROWS);
	}
	emit(r, "x", x);
	cow_tensor_release(x);
}

Test(functional, update_queue_bounded_by_count)
{
	run3(prog_many_paths);
}

/* Few updates but large ones: bounded by the base's bytes. */
static void
prog_large_updates(struct run *r)
{
	cow_tensor_t *x, *top, *all, *src;

	src = arange(1, (int64_t[]){8});
	TT_OK(cow_tensor_zeros(COW_DTYPE_FLOAT64, 2, (int64_t[]){8, 8}, NULL,
	    &x));
	TT_OK(cow_tensor_narrow(x, 0, 0, 6, &top));
	TT_OK(cow_tensor_narrow(x, 1, 0, 8, &all));
	for (int i = 0; i < 5; i++) {
		TT_OK(cow_tensor_fill_(top, i));
		if (functional(r))
			assert_bounded(x);
		TT_OK(cow_tensor_copy_(all, src)); /* broadcast over rows */
		if (functional(r))
			assert_bounded(x);
		TT_OK(cow_tensor_fill_(top, -i));
		if (functional(r))
			assert_bounded(x);
	}
	if (functional(r))
		cr_assert_gt(info(x).eager_flushes, 0);
	emit(r, "x", x);
	cow_tensor_release(src);
	cow_tensor_release(all);
	cow_tensor_release(top);
	cow_tensor_release(x);
}

Test(functional, update_queue_bounded_by_bytes)
{
	run3(prog_large_updates);
}

/* Writes through one path (the same view, or another view with the same
 * path) replace each other's update instead of growing the queue. */
static void
prog_coalesce(struct run *r)
{
	cow_tensor_t *x, *v, *w;

	TT_OK(cow_tensor_zeros(COW_DTYPE_INT64, 1, (int64_t[]){100}, NULL,
	    &x));
	TT_OK(cow_tensor_slice(x, 0, 10, 20, 1, &v));
	TT_OK(cow_tensor_slice(x, 0, 10, 20, 1, &w));
	for (int i = 0; i < 50; i++) {
		TT_OK(cow_tensor_fill_(v, i));
		TT_OK(cow_tensor_fill_(w, 1000 + i));
	}
	if (functional(r)) {
		cr_assert_eq(info(x).pending_updates, 1);
		cr_assert_eq(info(x).updates_coalesced, 99);
		cr_assert_eq(info(x).eager_flushes, 0);
	}
	emit(r, "x", x);
	emit(r, "v", v);
	cow_tensor_release(w);
	cow_tensor_release(v);
	cow_tensor_release(x);
}

Test(functional, writes_through_one_path_coalesce)
{
	run3(prog_coalesce);
}
