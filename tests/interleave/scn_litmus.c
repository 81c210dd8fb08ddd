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
#include "core/atomic.h"
#include "scenario.h"

/* The state of litmus, sb and spin: their locations and what was read. */
struct litmus_scn {
	cow__atomic_u64_t x, y;
	uint64_t r[2]; /* the reads (litmus: b's; sb: each thread's) */
};

static void *
litmus_setup(void)
{
	return ilv_state_new(sizeof(struct litmus_scn));
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

ILV_SCENARIO(litmus, 2, true, litmus_setup, litmus_thread, litmus_check,
    ilv_state_free, "the weak-memory mode's own test: read-read "
    "coherence");

/*
 * sb: store buffering with seq_cst fences (ctest interleave.weak.sb), the
 * handshake of core/fork.h's gate and of the snapshot's end of save. Thread
 * a stores x = 1, fences (cow__fence_atomic_load) and loads y; thread b
 * stores y = 1, fences and loads x (all relaxed). C11 forbids both loads
 * reading 0: of the two fences, the later one in the total order makes
 * its thread see the other's store. Without the fences, or with acq_rel
 * ones, (0, 0) is allowed, and the check rejects it. Counting executions:
 * each thread has 3 steps (start, store and fence, load), so there are
 * C(6, 3) = 20 interleavings; the thread that fences second must read
 * the other's store, and the one that fences first may read 0 or 1
 * exactly when the other's store comes before its load, that is when
 * both stores come before both loads: 12 of the 20 interleavings. So the
 * weak-memory search must run 20 + 12 = 32 executions, the sequentially
 * consistent one 20.
 */
static void
sb_thread(void *arg, int id)
{
	struct litmus_scn *st = arg;
	cow__atomic_u64_t *mine = id == 0 ? &st->x : &st->y;
	cow__atomic_u64_t *other = id == 0 ? &st->y : &st->x;

	cow__atomic_store_relaxed(mine, 1);
	cow__fence_atomic_load(mine);
	st->r[id] = cow__atomic_load_relaxed(other);
}

static void
sb_check(void *arg)
{
	struct litmus_scn *st = arg;

	ilv_check(st->r[0] != 0 || st->r[1] != 0, "store buffering: both "
	    "threads read 0 across their seq_cst fences");
}

ILV_SCENARIO(sb, 2, true, litmus_setup, sb_thread, sb_check,
    ilv_state_free, "the weak-memory mode's own test: seq_cst fences "
    "(store buffering)");

/*
 * spin: the scheduler's own test of spin waits (ctest interleave.spin and
 * interleave.weak.spin). Thread a stores x = 1; thread b loads x until it
 * reads 1, with cow__backoff between its loads. A thread at a backoff is
 * not runnable until another thread stores at the location it loaded last
 * (in the weak-memory mode: until it may read a newer store there, which
 * its next load then reads), so the search ends; without that the default
 * schedule would keep b spinning until the decision limit. The check: b
 * saw the 1.
 */
static void
spin_thread(void *arg, int id)
{
	struct litmus_scn *st = arg;
	unsigned spins = 0;

	if (id == 0) {
		cow__atomic_store_relaxed(&st->x, 1);
		return;
	}
	while ((st->r[0] = cow__atomic_load_relaxed(&st->x)) == 0)
		cow__backoff(&spins);
	st->r[1] = spins;
}

static void
spin_check(void *arg)
{
	struct litmus_scn *st = arg;

	ilv_check(st->r[0] == 1, "b ended its wait without reading x = 1");
}

ILV_SCENARIO(spin, 2, true, litmus_setup, spin_thread, spin_check,
    ilv_state_free, "the scheduler's own test: a spin wait "
    "(cow__backoff)");
