/*
 * scn_count.c - the search's own test (ctest interleave.search_counts):
 * two threads, each making 3 refcount loads, so each passes 4 scheduling
 * points (its start and the loads) and nothing else depends on the order.
 * The schedules are then exactly the interleavings of two sequences of 4
 * steps, C(8, 4) = 70 of them, and a schedule of B blocks (runs of one
 * thread) has B - 2 preemptions (every switch but the one when a thread
 * finishes). With a blocks of a and b blocks of b (|a - b| <= 1), there
 * are C(3, a - 1) C(3, b - 1) such schedules, so the search must find
 * 2, 6, 18, 18, 18, 6, 2 schedules with 0 .. 6 preemptions.
 */
#include "core/refcount.h"
#include "scenario.h"

struct count_scn {
	cow__refcount_t ref;
};

static void *
count_setup(void)
{
	struct count_scn *st = ilv_state_new(sizeof *st);

	cow__ref_init(&st->ref, 1);
	return st;
}

static void
count_thread(void *arg, int id)
{
	struct count_scn *st = arg;

	for (int i = 0; i < 3; i++)
		ilv_check(cow__ref_load(&st->ref) == 1, "thread %c: count "
		    "changed", 'a' + id);
}

static void
count_nothing(void *arg)
{
	(void)arg;
}

ILV_SCENARIO(count, 2, false, count_setup, count_thread, count_nothing,
    ilv_state_free, "the search's own test: two threads of 4 steps, 70 "
    "schedules");
