/*
 * guard.c - per-storage serialisation for Python threads.
 *
 * The library's contract (storage.h) leaves it to the caller to serialise a
 * write through a storage against every other use of that storage; tensors
 * on different storages (lazy copies included) need nothing. Python code
 * expects no such duty, and the module releases the GIL around work on
 * data, so the module keeps the contract itself: a table of read-write
 * locks, the storage's address choosing the stripe. Reads share a stripe,
 * writes take it alone; an op's stripes are taken in address order, so two
 * ops never wait for each other in a cycle. Functional tensors have no
 * storage of their own: they share one stripe, taken for writing.
 *
 * The GIL is never held while waiting for a stripe (pycow_guard_lock runs
 * between Py_BEGIN_ALLOW_THREADS and Py_END_ALLOW_THREADS), so a thread
 * that holds a stripe and needs the GIL (a producer's deleter) always gets
 * it.
 */
#include <pthread.h>

#include "core/fault.h"
#include "pycow.h"

#define STRIPES 64

static pthread_rwlock_t stripes[STRIPES] = {
#define L4 PTHREAD_RWLOCK_INITIALIZER, PTHREAD_RWLOCK_INITIALIZER, \
	PTHREAD_RWLOCK_INITIALIZER, PTHREAD_RWLOCK_INITIALIZER
#define L16 L4, L4, L4, L4
	L16, L16, L16, L16
#undef L16
#undef L4
};

static pthread_rwlock_t *
stripe_of(const cow_tensor_t *t, bool *write)
{
	cow_storage_t *s = cow_tensor_storage(t);
	if (s == NULL) {          /* functional: one stripe for all */
		*write = true;
		return &stripes[0];
	}
	uintptr_t h = (uintptr_t)s;
	h ^= h >> 17;
	h *= UINT64_C(0x9E3779B97F4A7C15) & UINTPTR_MAX;
	return &stripes[1 + (h >> 7) % (STRIPES - 1)];
}

void
pycow_guard_add(struct pycow_guard *g, const cow_tensor_t *t, bool write)
{
	void *l = stripe_of(t, &write);
	for (int i = 0; i < g->n; i++) {
		if (g->lock[i] == l) {
			g->write[i] |= write;
			return;
		}
	}
	/* Insertion in address order. */
	int i = g->n++;
	while (i > 0 && (uintptr_t)g->lock[i - 1] > (uintptr_t)l) {
		g->lock[i] = g->lock[i - 1];
		g->write[i] = g->write[i - 1];
		i--;
	}
	g->lock[i] = l;
	g->write[i] = write;
}

void
pycow_guard_lock(struct pycow_guard *g)
{
	int n = COW__FAULT_POINT(guard_stripes, g->n);

	for (int i = 0; i < n; i++) {
		pthread_rwlock_t *l = g->lock[i];
		int rc = g->write[i] ? pthread_rwlock_wrlock(l) :
		    pthread_rwlock_rdlock(l);
		if (rc != 0)
			Py_FatalError("cowstore: a storage lock failed");
	}
}

void
pycow_guard_unlock(struct pycow_guard *g)
{
	for (int i = g->n - 1; i >= 0; i--)
		pthread_rwlock_unlock((pthread_rwlock_t *)g->lock[i]);
}
