/*
 * sync_visible.c - ThreadSanitizer sees the synchronisation cowstore builds
 * from ConcurrencyKit (runtime/core/atomic.h, refcount.h, rwlock.h), whose
 * x86 atomics are inline assembly TSan cannot see by itself.
 *
 * Three patterns the library relies on, each guarding plain (non-atomic)
 * data that two threads touch:
 *   lock  a writer and a reader use one value under the context lock;
 *   ref   two holders write their part of an object, then drop their
 *         reference; the one that drops the last reads both parts (what a
 *         stealer or a freer does after the count reaches zero);
 *   ptr   a thread initialises an object and publishes its pointer; another
 *         loads the pointer and reads the object (context installation).
 *
 * Built normally, a TSan run must be silent (ctest tsan.sync_visible). Built
 * with COW_TSAN_HIDE_SYNC, those headers drop their annotations and TSan
 * must report a data race in each pattern (ctest tsan.control.sync_hidden_*,
 * TSan builds only): so the silence is the annotations' doing, not TSan's
 * blindness. In other builds the program is an ordinary check of the three
 * patterns.
 *
 * Usage: sync_visible [lock|ref|ptr] (default: all three).
 * Prints "N passed, N failed"; exits non-zero on a failure.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/atomic.h"
#include "core/refcount.h"
#include "core/rwlock.h"

#define ROUNDS 20000

static int failed, passed;

static void
check(int ok, const char *what)
{
	if (ok) {
		passed++;
		return;
	}
	failed++;
	fprintf(stderr, "sync_visible: %s\n", what);
}

/* ---- lock ---------------------------------------------------------- */

static cow__rwlock_t lock;
static long guarded; /* Synchronization: lock. */

static void *
lock_writer(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		cow__rwlock_write_lock(&lock);
		guarded++;
		cow__rwlock_write_unlock(&lock);
	}
	return NULL;
}

static void *
lock_reader(void *arg)
{
	long *last = arg;

	for (int i = 0; i < ROUNDS; i++) {
		long v;

		cow__rwlock_read_lock(&lock);
		v = guarded;
		cow__rwlock_read_unlock(&lock);
		if (v < *last)
			*last = -1; /* went backwards: broken */
		else
			*last = v;
	}
	return NULL;
}

static void
run_lock(void)
{
	pthread_t w, r;
	long last = 0;

	cow__rwlock_init(&lock);
	pthread_create(&w, NULL, lock_writer, NULL);
	pthread_create(&r, NULL, lock_reader, &last);
	pthread_join(w, NULL);
	pthread_join(r, NULL);
	check(guarded == ROUNDS && last >= 0, "lock: lost or reordered update");
	cow__rwlock_destroy(&lock);
}

/* ---- ref ----------------------------------------------------------- */

struct box {
	cow__refcount_t ref;
	long part[2]; /* plain: each holder writes its own */
	long sum;     /* written by the last holder */
};

struct holder {
	struct box *box;
	int me;
};

static void *
ref_holder(void *arg)
{
	struct holder *h = arg;

	h->box->part[h->me] = h->me + 1;
	if (cow__ref_put(&h->box->ref))
		h->box->sum = h->box->part[0] + h->box->part[1];
	return NULL;
}

static void
run_ref(void)
{
	static struct box boxes[200]; /* not on the stack (above) */

	for (int round = 0; round < 200; round++) {
		struct box *box = &boxes[round];
		struct holder h[2] = {{box, 0}, {box, 1}};
		pthread_t t[2];

		cow__ref_init(&box->ref, 2);
		box->sum = -1;
		pthread_create(&t[0], NULL, ref_holder, &h[0]);
		pthread_create(&t[1], NULL, ref_holder, &h[1]);
		pthread_join(t[0], NULL);
		pthread_join(t[1], NULL);
		check(box->sum == 3, "ref: the last holder missed a part");
	}
}

/* ---- ptr ----------------------------------------------------------- */

struct obj {
	long a, b;
};

static cow__atomic_ptr_t slot; /* cow__ptr_store / cow__ptr_load */
/* Not on the stack: TSan does not see races on the main thread's stack. */
static struct obj objs[200];

static void *
ptr_consumer(void *arg)
{
	struct obj *o;
	long *seen = arg;

	while ((o = cow__ptr_load(&slot)) == NULL)
		sched_yield();
	*seen = o->a + o->b;
	return NULL;
}

static void
run_ptr(void)
{
	for (int round = 0; round < 200; round++) {
		struct obj *o = &objs[round];
		pthread_t c;
		long seen = 0;

		cow__ptr_store(&slot, NULL);
		pthread_create(&c, NULL, ptr_consumer, &seen);
		o->a = round;
		o->b = 1;
		cow__ptr_store(&slot, o);
		pthread_join(c, NULL);
		check(seen == round + 1, "ptr: read an uninitialised object");
	}
}

int
main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "all";
	int all = strcmp(which, "all") == 0;

	if (all || strcmp(which, "lock") == 0)
		run_lock();
	if (all || strcmp(which, "ref") == 0)
		run_ref();
	if (all || strcmp(which, "ptr") == 0)
		run_ptr();
	printf("sync_visible (%s): %d passed, %d failed\n", which, passed,
	    failed);
	return failed == 0 && passed > 0 ? 0 : 1;
}
