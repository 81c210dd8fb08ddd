/*
 * scn_functional.c - scenario 6 of the interleaving checker: one
 * functional alias group used from two threads under the contract's
 * serialisation (include/cowstore/functional.h: the user serialises every
 * use of a group, reads included), while a third thread uses another group
 * that shares the first one's base value (values are immutable and
 * reference counted atomically; on the strided backend they are plain
 * tensors, so the two groups' writes materialise lazy copies of one
 * storage: the copy-or-steal protocol under the layer).
 *
 * X = [0 .. 7] on the strided backend, V = X[0:4] (a view: X's group),
 * Y = a lazy clone of X (a group of its own, sharing X's base value).
 *   a: under the lock, V += 1; then, under the lock, read X[0].
 *   b: under the lock, X += 10; then, under the lock, read V[3].
 *   c: Y += 100, read Y[2], release Y (no lock: its own group).
 * Each read must match the writes done before it (counted under the lock);
 * Y[2] must be X's first value plus 100 (V's writes reach X[2], never Y);
 * at the end X[i] = i + 10 + (i < 4), and nothing leaks (values, paths,
 * groups, storages).
 */
#include <stdlib.h>

#include <cowstore/functional.h>

#include "core/rwlock.h"
#include "scenario.h"

#define N 8

struct fn_scn {
	cow_tensor_t *x, *v, *y;
	cow__rwlock_t lock; /* the user's serialisation of X's group */
	int a_done, b_done; /* writes done; under the lock */
};

static double
fn_get(const cow_tensor_t *t, int64_t i)
{
	double v = -1;

	ilv_check(cow_tensor_get_f64(t, (int64_t[]){i}, &v) == COW_OK,
	    "a read of element %lld failed", (long long)i);
	return v;
}

static void *
fn_setup(void)
{
	struct fn_scn *st = ilv_state_new(sizeof *st);
	cow_tensor_t *p;

	ilv_check(cow_tensor_arange(COW_DTYPE_FLOAT64, N, NULL, &p) == COW_OK &&
	    cow_functional_wrap(p, cow_backend_strided(), &st->x) == COW_OK,
	    "set-up: %s", cow_last_error());
	cow_tensor_release(p);
	ilv_check(cow_tensor_narrow(st->x, 0, 0, N / 2, &st->v) == COW_OK &&
	    cow_tensor_lazy_clone(st->x, &st->y) == COW_OK, "set-up: %s",
	    cow_last_error());
	cow__rwlock_init(&st->lock);
	return st;
}

static void
fn_thread(void *arg, int id)
{
	struct fn_scn *st = arg;
	double got;

	switch (id) {
	case 0:
		cow__rwlock_write_lock(&st->lock);
		ilv_check(cow_tensor_add_scalar_(st->v, 1) == COW_OK,
		    "thread a: V += 1 failed");
		st->a_done = 1;
		cow__rwlock_write_unlock(&st->lock);
		cow__rwlock_write_lock(&st->lock);
		got = fn_get(st->x, 0);
		ilv_check(got == st->a_done + 10.0 * st->b_done, "thread a: "
		    "X[0] = %g after %d, %d writes", got, st->a_done,
		    st->b_done);
		cow__rwlock_write_unlock(&st->lock);
		break;
	case 1:
		cow__rwlock_write_lock(&st->lock);
		ilv_check(cow_tensor_add_scalar_(st->x, 10) == COW_OK,
		    "thread b: X += 10 failed");
		st->b_done = 1;
		cow__rwlock_write_unlock(&st->lock);
		cow__rwlock_write_lock(&st->lock);
		got = fn_get(st->v, 3);
		ilv_check(got == 3 + st->a_done + 10.0 * st->b_done, "thread "
		    "b: V[3] = %g after %d, %d writes", got, st->a_done,
		    st->b_done);
		cow__rwlock_write_unlock(&st->lock);
		break;
	default:
		ilv_check(cow_tensor_add_scalar_(st->y, 100) == COW_OK,
		    "thread c: Y += 100 failed");
		/* An element that V's writes reach in X, not in Y. */
		got = fn_get(st->y, 2);
		ilv_check(got == 102, "thread c: Y[2] = %g (expected 102: "
		    "X's first value plus 100)", got);
		cow_tensor_release(st->y);
		st->y = NULL;
		break;
	}
}

static void
fn_check(void *arg)
{
	struct fn_scn *st = arg;

	for (int64_t i = 0; i < N; i++) {
		double want = (double)i + 10 + (i < N / 2 ? 1 : 0);
		double got = fn_get(st->x, i);

		ilv_check(got == want, "X[%lld] = %g at the end (expected %g)",
		    (long long)i, got, want);
	}
}

static void
fn_teardown(void *arg)
{
	struct fn_scn *st = arg;

	cow_tensor_release(st->v);
	cow_tensor_release(st->x);
	free(st);
}

ILV_SCENARIO(functional, 3, false, fn_setup, fn_thread, fn_check,
    fn_teardown, "one functional alias group used by two threads under a "
    "lock, beside a group sharing its base value");
