/*
 * scn_shadow.c - scenario 5 of the interleaving checker: the reshape-warn
 * shadow path (runtime/tensor/shadow.c, runtime/storage/shadow.c) under
 * the warn-once policy.
 *
 * T is a tensor of 8 doubles. Each of two threads, under the user's
 * serialisation of the storage (a shared/exclusive lock: reads shared,
 * writes exclusive, as the contract asks of writes against reads):
 *   1. reshapes T in warn mode (shared): a simulated lazy copy U_i, with
 *      its own shadow; the two race to install the storage's simulation
 *      state with its default shadow (one compare-and-swap wins, the
 *      loser frees its own);
 *   2. writes through U_i (exclusive): fill with i + 1;
 *   3. reads T (shared): the sum, which must match the last write;
 *   4. releases U_i.
 * The second write always follows a write through the other alias, so at
 * least one access is out of sync; the two reads of step 3 may both be out
 * of sync at once and race for the warn-once claim. Invariants: exactly
 * one warning, the physical generation counts both writes, the data is
 * the last write's, one simulation state (the leak check sees a lost one).
 *
 * Counters are scheduling points here: the generations and the warn-once
 * claim are cow__atomic_* and cow__owned_* operations.
 */
#include <stdlib.h>

#include "core/atomic.h"
#include "core/rwlock.h"
#include "scenario.h"

#define N 8

struct shadow_scn {
	cow_tensor_t *t;
	cow__rwlock_t lock;  /* the user's serialisation of T's storage */
	double value;        /* the last write's value; under the lock */
	int writes;          /* under the lock */
	int warnings;        /* handler calls (one thread runs at a time) */
};

static void
shadow_count(const cow_shadow_event_t *ev, void *ctx)
{
	struct shadow_scn *st = ctx;

	(void)ev;
	st->warnings++;
}

static double
shadow_sum(const cow_tensor_t *t, char who)
{
	cow_tensor_t *s;
	double v = -1;

	ilv_check(cow_tensor_sum(t, &s) == COW_OK &&
	    cow_tensor_get_f64(s, NULL, &v) == COW_OK, "thread %c: sum "
	    "failed", who);
	cow_tensor_release(s);
	return v;
}

static void *
shadow_setup(void)
{
	struct shadow_scn *st = ilv_state_new(sizeof *st);
	ilv_check(cow_shadow_policy_set(COW_SHADOW_WARN_ONCE) == COW_OK,
	    "set-up: policy");
	cow_shadow_handler_set(shadow_count, st);
	ilv_check(cow_tensor_full(COW_DTYPE_FLOAT64, 1, (int64_t[]){N}, 0,
	    NULL, &st->t) == COW_OK, "set-up: %s", cow_last_error());
	cow__rwlock_init(&st->lock);
	return st;
}

static void
shadow_thread(void *arg, int id)
{
	struct shadow_scn *st = arg;
	char who = (char)('a' + id);
	cow_tensor_t *u;
	double sum;

	ilv_check(cow_reshape_mode_set_thread(COW_RESHAPE_WARN, NULL) ==
	    COW_OK, "thread %c: reshape mode", who);
	cow__rwlock_read_lock(&st->lock);
	ilv_check(cow_tensor_reshape(st->t, 2, (int64_t[]){2, N / 2}, &u) ==
	    COW_OK, "thread %c: reshape failed", who);
	cow__rwlock_read_unlock(&st->lock);
	ilv_check(cow_tensor_storage(u) == cow_tensor_storage(st->t) &&
	    !cow_tensor_shares_shadow(u, st->t), "thread %c: the warn-mode "
	    "reshape is not a simulated lazy copy", who);

	cow__rwlock_write_lock(&st->lock);
	ilv_check(cow_tensor_fill_(u, id + 1) == COW_OK, "thread %c: write "
	    "failed", who);
	st->value = id + 1;
	st->writes++;
	cow__rwlock_write_unlock(&st->lock);

	cow__rwlock_read_lock(&st->lock);
	sum = shadow_sum(st->t, who);
	ilv_check(sum == N * st->value, "thread %c: T sums to %g after the "
	    "write of %g", who, sum, st->value);
	cow__rwlock_read_unlock(&st->lock);
	cow_tensor_release(u);
}

static void
shadow_check(void *arg)
{
	struct shadow_scn *st = arg;
	uint64_t g = 0;

	ilv_check(st->warnings == 1, "%d warnings (warn-once, and an access "
	    "out of sync: exactly 1)", st->warnings);
	ilv_check(cow_storage_physical_generation(cow_tensor_storage(st->t),
	    &g) == COW_OK && g == 2, "physical generation %llu after two "
	    "writes", (unsigned long long)g);
	ilv_check(shadow_sum(st->t, 'm') == N * st->value, "T does not hold "
	    "the last write");
}

static void
shadow_teardown(void *arg)
{
	struct shadow_scn *st = arg;

	cow_tensor_release(st->t);
	cow_shadow_handler_set(NULL, NULL);
	free(st);
}

ILV_SCENARIO(shadow, 2, true, shadow_setup, shadow_thread, shadow_check,
    shadow_teardown, "two threads reshape one tensor in warn mode and "
    "write through the aliases: exactly one warning");
