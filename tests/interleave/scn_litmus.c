/*
 * scn_litmus.c - the weak-memory mode's own test (ctest
 * interleave.weak.litmus): read-read coherence (CoRR). Thread a stores
 * x = 1 (relaxed); thread b loads x twice (relaxed). C11 allows b to read
 * (0, 0), (0, 1) and (1, 1), never (1, 0): once b has seen the store it
 * cannot read an older one. Counting executions: of the 10 interleavings
 * of a's 2 steps (start, store) and b's 3 (start, load, load), 3 put the
 * store before b's first load (3 outcomes each), 3 between the loads (2:
 * the second load may still read 0) and 4 after both (1), so the weak-
 * memory search must run exactly 3 * 3 + 3 * 2 + 4 = 19 executions, and
 * the sequentially consistent one 10. The check rejects (1, 0).
 */
#include <stdlib.h>

#include "core/sync.h"
#include "scenario.h"

struct litmus_scn {
	cow__atomic_u64_t x;
	uint64_t r[2]; /* b's reads (only b writes them) */
};

static void *
litmus_setup(void)
{
	struct litmus_scn *st = calloc(1, sizeof *st);

	ilv_check(st != NULL, "out of memory (set-up)");
	return st;
}

static void
litmus_thread(void *arg, int id)
{
	struct litmus_scn *st = arg;

	if (id == 0) {
		cow__atomic_store_relaxed(&st->x, 1);
		return;
	}
	st->r[0] = cow__atomic_load_relaxed(&st->x);
	st->r[1] = cow__atomic_load_relaxed(&st->x);
}

static void
litmus_check(void *arg)
{
	struct litmus_scn *st = arg;

	ilv_check(!(st->r[0] == 1 && st->r[1] == 0), "coherence broken: b "
	    "read x = 1, then x = 0");
}

static void
litmus_teardown(void *arg)
{
	free(arg);
}

const struct ilv_scenario ilv_scn_litmus = {
	.name = "litmus",
	.what = "the weak-memory mode's own test: read-read coherence",
	.nthreads = 2,
	.counters = true,
	.setup = litmus_setup,
	.thread = litmus_thread,
	.check = litmus_check,
	.teardown = litmus_teardown,
};
