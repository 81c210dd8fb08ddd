/*
 * budget.c - allocator byte limits: exact shared charges for large requests
 * and per-thread credit for small ones through built-in handles (budget.h
 * explains the exactness this gives).
 */
#define _DEFAULT_SOURCE /* _SC_PHYS_PAGES */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "alloc/budget.h"
#include "core/atomic.h"
#include "core/die.h"

/* The budget of the built-in handle owning each slot (set at its init,
 * which happens before any thread can hold credit in the slot). */
static cow__budget_t *budget_owner[COW__BUDGET_SLOTS];

_Thread_local uint64_t cow__budget_credit[COW__BUDGET_SLOTS];
_Thread_local uint64_t cow__budget_credit_epoch[COW__BUDGET_SLOTS];
_Thread_local bool cow__budget_registered;

static pthread_key_t budget_key;
static bool budget_key_ok;
static pthread_once_t budget_key_once = PTHREAD_ONCE_INIT;

static void
budget_return(cow__budget_t *b, uint64_t n)
{
	/* Every caller gives back bytes it charged and still holds, so the
	 * word holds at least @n even while others charge and return. */
	COW__ASSERT(cow__atomic_load_relaxed(&b->used) >= n,
	    "a budget gets back more than it charged");
	/* Adding the two's complement subtracts. */
	cow__atomic_add_relaxed(&b->used, (uint64_t)0 - n);
}

/* Thread exit: give every slot's credit back to its owner. */
static void
budget_thread_exit(void *unused)
{
	int s;

	(void)unused;
	for (s = 0; s < COW__BUDGET_SLOTS; s++) {
		if (cow__budget_credit[s] != 0 && budget_owner[s] != NULL)
			budget_return(budget_owner[s],
			    cow__budget_credit[s]);
		cow__budget_credit[s] = 0;
	}
	/* A later draw on this thread (another destructor allocating)
	 * registers again, and glibc runs this destructor again. */
	cow__budget_registered = false;
}

static void
budget_key_init(void)
{
	budget_key_ok = pthread_key_create(&budget_key,
	    budget_thread_exit) == 0;
}

void
cow__budget_init(cow__budget_t *b, uint64_t limit, int slot)
{
	cow__atomic_store_relaxed(&b->limit, limit);
	cow__atomic_store_relaxed(&b->epoch, 0);
	cow__atomic_store_relaxed(&b->used, 0);
	b->slot = slot;
	if (slot >= 0 && slot < COW__BUDGET_SLOTS)
		budget_owner[slot] = b;
	else
		b->slot = COW__BUDGET_NO_SLOT;
}

/*
 * Charge between @need and @want bytes (need <= want) against the shared
 * word, as much as the limit allows. Returns the bytes charged, 0 if not
 * even @need fits.
 */
static uint64_t
budget_take(cow__budget_t *b, uint64_t need, uint64_t want)
{
	uint64_t used = cow__atomic_load_relaxed(&b->used);

	for (;;) {
		uint64_t limit = cow__atomic_load_relaxed(&b->limit);
		uint64_t room = used < limit ? limit - used : 0;
		uint64_t take = want <= room ? want : room;

		if (take < need)
			return 0;
		if (cow__atomic_cas_relaxed(&b->used, used, used + take))
			return take;
		used = cow__atomic_load_relaxed(&b->used);
	}
}

void
cow__budget_set_limit(cow__budget_t *b, uint64_t limit)
{
	cow__atomic_store_relaxed(&b->limit, limit);
	/* After the limit, with release: a thread that sees the new epoch
	 * (cow__atomic_load_acquire in the slow path) sees the new limit.
	 * Relaxed, a weakly ordered machine could show the epoch and the
	 * old limit: credit drawn under the old limit would carry the new
	 * epoch (the weak-memory control (k), docs/interleave.md). */
	COW__FAULT_POINT(epoch_publish, cow__atomic_add_release(&b->epoch, 1));
}

bool
cow__budget_charge_slow(cow__budget_t *b, size_t n)
{
	uint64_t *credit, need, got, epoch;

	if (b->slot == COW__BUDGET_NO_SLOT || n > COW__BUDGET_SMALL)
		return budget_take(b, n, n) != 0 || n == 0;
	credit = &cow__budget_credit[b->slot];
	epoch = COW__FAULT_POINT(epoch_read,
	    cow__atomic_load_acquire(&b->epoch));
	if (cow__budget_credit_epoch[b->slot] != epoch) {
		/* Drawn under an earlier limit: give it back, and charge
		 * against the limit of now. */
		if (*credit != 0)
			budget_return(b, *credit);
		*credit = 0;
		cow__budget_credit_epoch[b->slot] = epoch;
	}
	if (*credit >= n) {
		*credit -= n;
		return true;
	}
	need = n - *credit;
	if ((got = budget_take(b, need, need + COW__BUDGET_CHUNK)) == 0)
		return false;
	if (!cow__budget_registered) {
		pthread_once(&budget_key_once, budget_key_init);
		if (budget_key_ok &&
		    pthread_setspecific(budget_key, &budget_key) == 0)
			cow__budget_registered = true;
	}
	*credit = *credit + got - n;
	if (!cow__budget_registered) {
		/* No destructor to give it back: keep no credit. */
		budget_return(b, *credit);
		*credit = 0;
	}
	return true;
}

void
cow__budget_uncharge_slow(cow__budget_t *b, size_t n)
{
	uint64_t *credit;

	if (b->slot == COW__BUDGET_NO_SLOT || n > COW__BUDGET_SMALL ||
	    !cow__budget_registered) {
		budget_return(b, COW__FAULT_POINT(uncharged_bytes, n));
		return;
	}
	credit = &cow__budget_credit[b->slot];
	*credit += n;
	if (*credit > 2 * COW__BUDGET_CHUNK) {
		budget_return(b, *credit - COW__BUDGET_CHUNK);
		*credit = COW__BUDGET_CHUNK;
	}
}

uint64_t
cow__budget_used(const cow__budget_t *b)
{
	return cow__atomic_load_relaxed(&b->used);
}

uint64_t
cow__physical_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES);
	long page = sysconf(_SC_PAGESIZE);

	if (pages <= 0 || page <= 0)
		return 0;
	return (uint64_t)pages * (uint64_t)page;
}

uint64_t
cow__budget_default_limit(void)
{
	const char *env = getenv("COW_MEMORY_LIMIT_MB");
	uint64_t ram;

	if (env != NULL && *env != '\0') {
		uint64_t mb = (uint64_t)strtoull(env, NULL, 10);

		if (mb == 0 || mb > (COW__BUDGET_NO_LIMIT >> 20))
			return COW__BUDGET_NO_LIMIT;
		return mb << 20;
	}
	if ((ram = cow__physical_memory()) == 0)
		return COW__BUDGET_NO_LIMIT;
	return ram / 4 * 3;
}
