/*
 * Tensor metadata benchmarks: creating a view (select, transpose) and
 * releasing it; a lazy clone of a tensor and its release; small ops (16
 * float32 elements, so the per-call work dominates: argument checks,
 * dispatch, the access protocol, not the loop); and
 * cow_tensor_expect_contiguous on a contiguous tensor
 * (a borrow: no reference taken) against owning the same tensor (retain and
 * release: two atomic read-modify-writes on its count). A non-contiguous
 * input is the third case: expect_contiguous then makes an owned copy.
 *
 * The library under test is the release build: in a COW_DEBUG_BORROWS build
 * every borrow is recorded under a lock, which is what debug mode costs.
 */
#include <cowstore/cowstore.h>

#include "bench.h"

struct tensor_state {
	cow_tensor_t *t;  /* contiguous 64 x 64 float32 */
	cow_tensor_t *tt; /* its transpose (not contiguous) */
	cow_tensor_t *a;  /* 16 float32 elements */
	cow_tensor_t *b;  /* 16 float32 elements */
};

static void
setup_tensor(struct bench_arg *arg)
{
	static struct tensor_state st;
	const int64_t sizes[2] = {64, 64};

	bench_check(cow_tensor_full(COW_DTYPE_FLOAT32, 2, sizes, 1.0,
	    bench_allocator(), &st.t), "full");
	bench_check(cow_tensor_transpose(st.t, 0, 1, &st.tt), "transpose");
	bench_check(cow_tensor_full(COW_DTYPE_FLOAT32, 1, (const int64_t[]){16}, 1.0,
	    bench_allocator(), &st.a), "full");
	bench_check(cow_tensor_full(COW_DTYPE_FLOAT32, 1, (const int64_t[]){16}, 0.0,
	    bench_allocator(), &st.b), "full");
	arg->state = &st;
}

static void
teardown_tensor(struct bench_arg *arg)
{
	struct tensor_state *st = arg->state;

	cow_tensor_release(st->b);
	cow_tensor_release(st->a);
	cow_tensor_release(st->tt);
	cow_tensor_release(st->t);
}

/* Make a view of @t (select row i % 64, or the transpose) and release it,
 * @n times. */
static uint64_t
time_views(cow_tensor_t *t, bool transpose, uint64_t n)
{
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < n; i++) {
		cow_tensor_t *v;

		bench_check(transpose ? cow_tensor_transpose(t, 0, 1, &v) :
		    cow_tensor_select(t, 0, (int64_t)(i & 63), &v), "view");
		bench_consume((uintptr_t)cow_tensor_offset(v));
		cow_tensor_release(v);
	}
	return bench_now_ns() - t0;
}

/* The variants of run_view and run_expect. */
enum { VIEW_SELECT, VIEW_TRANSPOSE };
enum { EXPECT_BORROWED, EXPECT_OWNED, EXPECT_COPY };

static uint64_t
run_view(struct bench_arg *arg, uint64_t n)
{
	return time_views(((struct tensor_state *)arg->state)->t,
	    arg->variant == VIEW_TRANSPOSE, n);
}

/* A lazy clone of the 64 x 64 tensor and its release, @n times (the
 * source stays copy-on-write: the first clone wraps it, later ones add a
 * share). */
static uint64_t
run_lazy_clone_tensor(struct bench_arg *arg, uint64_t n)
{
	cow_tensor_t *t = ((struct tensor_state *)arg->state)->t;
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < n; i++) {
		cow_tensor_t *c;

		bench_check(cow_tensor_lazy_clone(t, &c), "lazy_clone");
		bench_consume((uintptr_t)cow_tensor_numel(c));
		cow_tensor_release(c);
	}
	return bench_now_ns() - t0;
}

/* a += b on 16 elements, @n times (in place: no allocation). */
BENCH_TIMED_RUN(op_add_inplace, struct tensor_state,
	bench_check(cow_tensor_add_(st->a, st->b), "add_");)

/* a + b into a new tensor and its release, 16 elements, @n times. */
BENCH_TIMED_RUN(op_add, struct tensor_state,
	cow_tensor_t *r;

	bench_check(cow_tensor_add(st->a, st->b, &r), "add");
	bench_consume((uintptr_t)cow_tensor_numel(r));
	cow_tensor_release(r);)

/* fill_ of 16 elements, @n times. */
BENCH_TIMED_RUN(op_fill, struct tensor_state,
	bench_check(cow_tensor_fill_(st->b, (double)(i & 7)), "fill_");)

/* cow_tensor_expect_contiguous(@t) and release, @n times; with @owned, the
 * handle is instead an owned reference to @t (retain, then release). */
static uint64_t
time_expect(cow_tensor_t *t, bool owned, uint64_t n)
{
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < n; i++) {
		cow_maybe_owned_t mo;

		if (owned) {
			cow_tensor_retain(t);
			mo = cow_maybe_owned_owned(t);
		} else {
			bench_check(cow_tensor_expect_contiguous(t, &mo), "expect");
		}
		bench_consume((uintptr_t)cow_maybe_owned_get(&mo));
		cow_maybe_owned_release(&mo);
	}
	return bench_now_ns() - t0;
}

/* Borrowed: a contiguous input, which expect_contiguous borrows. Owned:
 * the same handle owned, what a borrow saves. Copy: a non-contiguous
 * input, which expect_contiguous copies (16 KiB). */
static uint64_t
run_expect(struct bench_arg *arg, uint64_t n)
{
	struct tensor_state *st = arg->state;

	return time_expect(arg->variant == EXPECT_COPY ? st->tt : st->t,
	    arg->variant == EXPECT_OWNED, n);
}

#define TENSOR_BENCH(n, fn, v)                                              \
	{.name = (n), .group = "tensor", .setup = setup_tensor,            \
	    .teardown = teardown_tensor, .run = (fn), .variant = (v)}

const struct bench bench_tensor_table[] = {
	TENSOR_BENCH("view_select", run_view, VIEW_SELECT),
	TENSOR_BENCH("view_transpose", run_view, VIEW_TRANSPOSE),
	TENSOR_BENCH("lazy_clone_tensor", run_lazy_clone_tensor, 0),
	TENSOR_BENCH("op_add_inplace", run_op_add_inplace, 0),
	TENSOR_BENCH("op_add", run_op_add, 0),
	TENSOR_BENCH("op_fill", run_op_fill, 0),
	TENSOR_BENCH("expect_contiguous_borrowed", run_expect, EXPECT_BORROWED),
	TENSOR_BENCH("expect_contiguous_owned", run_expect, EXPECT_OWNED),
	TENSOR_BENCH("expect_contiguous_copy", run_expect, EXPECT_COPY),
	{0},
};
