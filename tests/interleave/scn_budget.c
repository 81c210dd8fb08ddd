/*
 * scn_budget.c - a lowered limit against a thread's first small
 * allocation (alloc/budget.h): thread a lowers the default allocator's
 * limit; thread b allocates 64 bytes, which draws per-thread credit from
 * the shared budget. Credit carries the epoch it was drawn in, and a
 * thread that sees an epoch must see its limit (set_limit publishes the
 * limit with the epoch): credit stamped with the new epoch was drawn under
 * the new limit, so it fits in the room that limit left. The weak-memory
 * control (k) publishes the epoch relaxed: a load may then see the new
 * epoch and the old limit.
 */
#include <stdlib.h>

#include "alloc/allocator.h"
#include "scenario.h"

/* The room the new limit leaves above the bytes charged at set-up. */
#define BUDGET_ROOM 4096

struct budget_scn {
	cow_allocator_t *alloc;
	uint64_t limit;     /* the new limit */
	uint64_t new_epoch; /* the epoch a's set_limit makes */
};

static void *
budget_setup(void)
{
	struct budget_scn *st = ilv_state_new(sizeof *st);
	st->alloc = cow_allocator_default();
	ilv_check(st->alloc->budget.slot == COW__BUDGET_SLOT_SYSTEM,
	    "set-up: the default allocator is not the system's");
	st->limit = cow__budget_used(&st->alloc->budget) + BUDGET_ROOM;
	st->new_epoch = cow__atomic_load_relaxed(&st->alloc->budget.epoch) + 1;
	return st;
}

static void
budget_thread(void *arg, int id)
{
	struct budget_scn *st = arg;
	cow__budget_t *b = &st->alloc->budget;
	int slot = COW__BUDGET_SLOT_SYSTEM;
	cow_storage_t *s;

	if (id == 0) {
		ilv_check(cow_allocator_set_limit(st->alloc,
		    (size_t)st->limit) == COW_OK, "set_limit: %s",
		    cow_last_error());
		return;
	}
	/* A fresh thread: no credit. Keep what it draws in this thread
	 * (no thread-exit destructor, which would run outside the
	 * schedule); it is handed back below. */
	cow__budget_registered = true;
	if (cow_storage_new(64, st->alloc, &s) == COW_OK)
		cow_storage_release(s);
	ilv_check(cow__budget_credit_epoch[slot] != st->new_epoch ||
	    cow__budget_credit[slot] <= BUDGET_ROOM, "thread b holds %llu "
	    "bytes of credit stamped with the new limit's epoch, more than "
	    "the %d bytes of room that limit left: drawn under the old "
	    "limit", (unsigned long long)cow__budget_credit[slot],
	    BUDGET_ROOM);
	/* Hand the credit back (unregistered, uncharging returns it). */
	cow__budget_registered = false;
	if (cow__budget_credit[slot] != 0)
		cow__budget_uncharge_slow(b, (size_t)cow__budget_credit[slot]);
	cow__budget_credit[slot] = 0;
}

static void
budget_check(void *arg)
{
	struct budget_scn *st = arg;

	ilv_check(cow_allocator_limit(st->alloc) == st->limit,
	    "the limit is not the one thread a set");
}

static void
budget_teardown(void *arg)
{
	struct budget_scn *st = arg;

	ilv_check(cow_allocator_set_limit(st->alloc, COW_ALLOCATOR_NO_LIMIT) ==
	    COW_OK, "tear-down: %s", cow_last_error());
	free(st);
}

ILV_SCENARIO(budget, 2, true, budget_setup, budget_thread, budget_check,
    budget_teardown, "a lowered limit against a thread's first small "
    "allocation");
