/*
 * Cost of the reshape-alias simulation on the access paths (shadow.h): a
 * write (and a read) through a tensor whose storage never had a simulated
 * lazy copy, through one whose storage has one (the writer's set stays in
 * sync: no warning), and writes alternating between two sets after the
 * storage's one warning (warn-once policy, silent handler).
 *
 * Baseline: the same table in cow_bench_noshadow, linked with a library
 * built with COW_NO_SHADOW (the checks compiled out of the access paths);
 * its header line names the switch. Compare
 *   cow_bench --filter shadow      and      cow_bench_noshadow --filter shadow
 * on the release build (docs/reshape.md has the numbers).
 *
 * Tensors: 16 float32 elements, so the access dominates, not the data.
 */
#include <cowstore/cowstore.h>

#include "bench.h"

struct shadow_state {
	cow_tensor_t *plain;    /* storage never shadowed */
	cow_tensor_t *shadowed; /* storage with a simulated lazy copy ... */
	cow_tensor_t *alias;    /* ... this one: reshape in warn mode */
};

static void
silent(const cow_shadow_event_t *event, void *ctx)
{
	(void)event;
	(void)ctx;
}

static void
setup_shadow(struct bench_arg *arg)
{
	static struct shadow_state st;
	const int64_t n = 16;
	cow_reshape_mode_t prev;

	bench_check(cow_tensor_full(COW_DTYPE_FLOAT32, 1, &n, 1.0, bench_allocator(),
	    &st.plain), "full");
	bench_check(cow_tensor_full(COW_DTYPE_FLOAT32, 1, &n, 1.0, bench_allocator(),
	    &st.shadowed), "full");
	bench_check(cow_reshape_mode_set_thread(COW_RESHAPE_WARN, &prev), "mode");
	bench_check(cow_tensor_reshape(st.shadowed, 2, (int64_t[]){4, 4}, &st.alias),
	    "reshape");
	bench_check(cow_reshape_mode_set_thread(prev, NULL), "mode");
	cow_shadow_handler_set(silent, NULL);
	arg->state = &st;
}

static void
teardown_shadow(struct bench_arg *arg)
{
	struct shadow_state *st = arg->state;

	cow_shadow_handler_set(NULL, NULL);
	cow_tensor_release(st->alias);
	cow_tensor_release(st->shadowed);
	cow_tensor_release(st->plain);
}

/* The variants of run_write, run_set and run_read: the tensor they use. */
enum { SHADOW_NEVER, SHADOW_SHADOWED };

static cow_tensor_t *
variant_tensor(const struct bench_arg *arg)
{
	struct shadow_state *st = arg->state;

	return arg->variant == SHADOW_SHADOWED ? st->shadowed : st->plain;
}

/* The write access plus one store through it. */
static uint64_t
run_write(struct bench_arg *arg, uint64_t n)
{
	cow_tensor_t *t = variant_tensor(arg);
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < n; i++) {
		void *p;

		bench_check(cow_tensor_mutable_data(t, &p), "mutable_data");
		((float *)p)[i & 15] = (float)i;
	}
	return bench_now_ns() - t0;
}

BENCH_TIMED_RUN(write_alternating, struct shadow_state,
	void *p;

	bench_check(cow_tensor_mutable_data(i & 1 ? st->alias : st->shadowed,
	    &p), "mutable_data");
	((float *)p)[i & 15] = (float)i;)

/* One element through the public setter (index check, conversion). */
static uint64_t
run_set(struct bench_arg *arg, uint64_t n)
{
	cow_tensor_t *t = variant_tensor(arg);
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < n; i++) {
		int64_t idx = (int64_t)(i & 15);

		bench_check(cow_tensor_set_f64(t, &idx, (double)i), "set_f64");
	}
	return bench_now_ns() - t0;
}

/* The read access. */
static uint64_t
run_read(struct bench_arg *arg, uint64_t n)
{
	const cow_tensor_t *t = variant_tensor(arg);
	uint64_t t0 = bench_now_ns();
	uintptr_t acc = 0;

	for (uint64_t i = 0; i < n; i++)
		acc += (uintptr_t)cow_tensor_const_data(t);
	bench_consume(acc);
	return bench_now_ns() - t0;
}

#define SHADOW_BENCH(n, fn, v)                                              \
	{.name = (n), .group = "shadow", .setup = setup_shadow,            \
	    .teardown = teardown_shadow, .run = (fn), .variant = (v)}

const struct bench bench_shadow_table[] = {
	SHADOW_BENCH("shadow_write_never", run_write, SHADOW_NEVER),
	SHADOW_BENCH("shadow_write_shadowed", run_write, SHADOW_SHADOWED),
	SHADOW_BENCH("shadow_write_alternating", run_write_alternating, 0),
	SHADOW_BENCH("shadow_set_f64_never", run_set, SHADOW_NEVER),
	SHADOW_BENCH("shadow_set_f64_shadowed", run_set, SHADOW_SHADOWED),
	SHADOW_BENCH("shadow_read_never", run_read, SHADOW_NEVER),
	SHADOW_BENCH("shadow_read_shadowed", run_read, SHADOW_SHADOWED),
	{0},
};
