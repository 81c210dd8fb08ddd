/*
 * Kernel benchmarks, plain tensors against functional ones on the strided
 * backend (docs/functionalization.md), which run the same kernels
 * (runtime/functional/backend_strided.c calls kernels.h): float32 a + b
 * into a new tensor, a += b in place, and sum, at every size. A
 * functional in-place op also records the update for its alias group; the
 * functional a += b is followed by cow_functional_sync, so each operation
 * ends with the group up to date (what the next read would do).
 *
 * The differences between each pair are the layer's cost per call; the
 * loops are the same code.
 */
#include <stdlib.h>

#include <cowstore/cowstore.h>

#include "bench.h"

struct kernel_state {
	cow_tensor_t *a, *b;  /* float32, bytes / 4 elements each */
};

/* The variants: plain tensors, or functional ones on the strided backend. */
enum { KERNEL_PLAIN, KERNEL_FUNCTIONAL };

static void
setup(struct bench_arg *arg)
{
	struct kernel_state *st = malloc(sizeof *st);
	int64_t n = (int64_t)(arg->bytes / 4);
	cow_tensor_t *a, *b;

	if (st == NULL)
		bench_fail("malloc", COW_ENOMEM);
	bench_check(cow_tensor_full(COW_DTYPE_FLOAT32, 1, &n, 1.0, bench_allocator(),
	    &a), "full");
	bench_check(cow_tensor_full(COW_DTYPE_FLOAT32, 1, &n, 0.0, bench_allocator(),
	    &b), "full");
	if (arg->variant == KERNEL_FUNCTIONAL) {
		bench_check(cow_functional_wrap(a, cow_backend_strided(), &st->a),
		    "wrap");
		bench_check(cow_functional_wrap(b, cow_backend_strided(), &st->b),
		    "wrap");
		cow_tensor_release(a);
		cow_tensor_release(b);
	} else {
		st->a = a;
		st->b = b;
	}
	arg->state = st;
}

static void
teardown(struct bench_arg *arg)
{
	struct kernel_state *st = arg->state;

	cow_tensor_release(st->a);
	cow_tensor_release(st->b);
	free(st);
}

/* a + b into a new tensor, released, @n times. */
BENCH_TIMED_RUN(add, struct kernel_state,
	cow_tensor_t *c;

	bench_check(cow_tensor_add(st->a, st->b, &c), "add");
	bench_consume((uintptr_t)cow_tensor_numel(c));
	cow_tensor_release(c);)

/* a += b (b holds zeros: a's values stay), @n times; a functional a is
 * synced after each. */
static uint64_t
run_add_inplace(struct bench_arg *arg, uint64_t n)
{
	struct kernel_state *st = arg->state;
	bool functional = cow_tensor_is_functional(st->a);
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < n; i++) {
		bench_check(cow_tensor_add_(st->a, st->b), "add_");
		if (functional)
			bench_check(cow_functional_sync(st->a), "sync");
	}
	return bench_now_ns() - t0;
}

/* The sum of a (a new 0-d tensor), read and released, @n times. */
BENCH_TIMED_RUN(sum, struct kernel_state,
	cow_tensor_t *s;
	double v;

	bench_check(cow_tensor_sum(st->a, &s), "sum");
	bench_check(cow_tensor_get_f64(s, NULL, &v), "get_f64");
	bench_consume((uintptr_t)v);
	cow_tensor_release(s);)

#define KERNEL_BENCH(n, fn, kind)                                           \
	{.name = (n), .group = "kernels", .sized = true, .setup = setup,   \
	    .teardown = teardown, .run = (fn), .variant = (kind)}

const struct bench bench_kernels_table[] = {
	KERNEL_BENCH("kernel_add", run_add, KERNEL_PLAIN),
	KERNEL_BENCH("kernel_add_functional", run_add, KERNEL_FUNCTIONAL),
	KERNEL_BENCH("kernel_add_inplace", run_add_inplace, KERNEL_PLAIN),
	KERNEL_BENCH("kernel_add_inplace_functional", run_add_inplace,
	    KERNEL_FUNCTIONAL),
	KERNEL_BENCH("kernel_sum", run_sum, KERNEL_PLAIN),
	KERNEL_BENCH("kernel_sum_functional", run_sum, KERNEL_FUNCTIONAL),
	{0},
};
