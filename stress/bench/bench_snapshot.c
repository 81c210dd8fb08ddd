/*
 * Snapshot benchmarks (group "snapshot"): the stall a snapshot costs its
 * writers, against the copy eager staging makes instead. The side-by-side
 * run with writers and a save is cow_snapbench (snapbench.c).
 *
 *   snapshot_take_256   cow_snapshot_take of 256 float32 tensors totalling
 *                       the size, then cow_snapshot_release (no write in
 *                       between, so the release drops the lazy copies)
 *   snapshot_take_256_written  the same, but every tensor was written
 *                       since the last snapshot (one element, untimed), as
 *                       in a training loop: each lazy copy installs a
 *                       copy-on-write context again; only the take is
 *                       timed (the write and the release are not)
 *   snapshot_stage_256  the eager stall: the same 256 tensors copied
 *                       (memcpy) into 256 staging buffers allocated and
 *                       touched once, before the batch (eager-pre in
 *                       cow_snapbench)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cowstore/cowstore.h>

#include "bench.h"

#define SNAP_TENSORS 256

struct snap_state {
	cow_tensor_t *t[SNAP_TENSORS];
	char *names[SNAP_TENSORS];
	void *staging[SNAP_TENSORS];
	size_t nbytes;           /* per tensor */
};

static void
setup_snap(struct bench_arg *arg)
{
	struct snap_state *st = calloc(1, sizeof *st);
	int64_t numel = (int64_t)(arg->bytes / SNAP_TENSORS / 4);

	if (st == NULL)
		bench_fail("setup", COW_ENOMEM);
	if (numel == 0)
		numel = 1;
	st->nbytes = (size_t)numel * 4;
	for (size_t i = 0; i < SNAP_TENSORS; i++) {
		char name[16];

		bench_check(cow_tensor_full(COW_DTYPE_FLOAT32, 1, &numel, 1.0,
		    bench_allocator(), &st->t[i]), "cow_tensor_full");
		snprintf(name, sizeof name, "t%03zu", i);
		if ((st->names[i] = strdup(name)) == NULL ||
		    posix_memalign(&st->staging[i], 64, st->nbytes) != 0)
			bench_fail("setup", COW_ENOMEM);
		memset(st->staging[i], 0, st->nbytes);
	}
	arg->state = st;
}

static void
teardown_snap(struct bench_arg *arg)
{
	struct snap_state *st = arg->state;

	for (size_t i = 0; i < SNAP_TENSORS; i++) {
		cow_tensor_release(st->t[i]);
		free(st->names[i]);
		free(st->staging[i]);
	}
	free(st);
	cow_allocator_trim(bench_allocator());
}

BENCH_TIMED_RUN(take, struct snap_state,
	cow_snapshot_t *snap;

	bench_check(cow_snapshot_take(SNAP_TENSORS, st->t,
	    (const char *const *)st->names, &snap), "cow_snapshot_take");
	cow_snapshot_release(snap);)

static uint64_t
run_take_written(struct bench_arg *arg, uint64_t n)
{
	struct snap_state *st = arg->state;
	uint64_t total = 0;

	for (uint64_t i = 0; i < n; i++) {
		cow_snapshot_t *snap;
		uint64_t t0;

		for (size_t k = 0; k < SNAP_TENSORS; k++) {
			float *p;

			bench_check(cow_tensor_mutable_data(st->t[k],
			    (void **)&p), "cow_tensor_mutable_data");
			p[0] = (float)i;
		}
		t0 = bench_now_ns();
		bench_check(cow_snapshot_take(SNAP_TENSORS, st->t,
		    (const char *const *)st->names, &snap),
		    "cow_snapshot_take");
		total += bench_now_ns() - t0;
		cow_snapshot_release(snap);
	}
	return total;
}

static uint64_t
run_stage(struct bench_arg *arg, uint64_t n)
{
	struct snap_state *st = arg->state;
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < n; i++)
		for (size_t k = 0; k < SNAP_TENSORS; k++)
			memcpy(st->staging[k],
			    cow_tensor_const_data(st->t[k]), st->nbytes);
	bench_consume((uintptr_t)st->staging[0]);
	return bench_now_ns() - t0;
}

const struct bench bench_snapshot_table[] = {
	{.name = "snapshot_take_256", .group = "snapshot", .sized = true,
	    .setup = setup_snap, .teardown = teardown_snap, .run = run_take},
	{.name = "snapshot_take_256_written", .group = "snapshot",
	    .sized = true, .setup = setup_snap, .teardown = teardown_snap,
	    .run = run_take_written},
	{.name = "snapshot_stage_256", .group = "snapshot", .sized = true,
	    .bandwidth = true, .setup = setup_snap,
	    .teardown = teardown_snap, .run = run_stage},
	{0},
};
