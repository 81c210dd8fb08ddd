/*
 * Every primitive of runtime/core/atomic.h, refcount.h and rwlock.h, called
 * from functions the cost test disassembles (check_same_code.cmake).
 * Compiled with -O2 against the headers as they are, against copies with
 * every COW__SCHED(...) line deleted, and (the negative control) against
 * copies whose COW__SCHED calls cow_cost_leak: the first two must compile
 * to the same instructions, the control must not. So the interleaving
 * checker's hooks cost nothing outside its own build (COW_SCHED), and the
 * test would see a hook that leaked into a normal build.
 */
#include <stdint.h>

/* Only the negative control's copy of core/atomic.h calls it. */
void cow_cost_leak(const void *addr);

#include "core/atomic.h"
#include "core/refcount.h"
#include "core/rwlock.h"

unsigned cow_cost_sync_ref(cow__refcount_t *r);
void *cow_cost_sync_ptr(cow__atomic_ptr_t *slot, void *v);
uint64_t cow_cost_sync_counter(cow__atomic_u64_t *c, cow__owned_u64_t *o);
void cow_cost_sync_lock(cow__rwlock_t *l);

unsigned
cow_cost_sync_ref(cow__refcount_t *r)
{
	unsigned v;

	cow__ref_init(r, 1);
	cow__ref_get(r);
	v = cow__ref_load(r);
	v += cow__ref_sub(r);
	v += cow__ref_put(r);
	/* Pin counts share the refcount's type. */
	cow__pin_get(r);
	v += cow__pin_put(r, 1);
	return v + cow__pin_load(r);
}

void *
cow_cost_sync_ptr(cow__atomic_ptr_t *slot, void *v)
{
	void *p = cow__ptr_load(slot);

	cow__ptr_store(slot, NULL);
	return cow__ptr_install(slot, v) == v ? p : NULL;
}

uint64_t
cow_cost_sync_counter(cow__atomic_u64_t *c, cow__owned_u64_t *o)
{
	uint64_t v;

	cow__atomic_store_relaxed(c, 1);
	cow__atomic_add_relaxed(c, 2);
	v = cow__atomic_fetch_add_relaxed(c, 3);
	v += cow__atomic_load_relaxed(c);
	cow__owned_add_release(o, 4);
	cow__owned_store_relaxed(o, v);
	v += cow__owned_load_acquire(o);
	v += cow__atomic_load_relaxed_fast(c);
	cow__atomic_add_release(c, 5);
	v += cow__atomic_load_acquire(c);
	return v + cow__atomic_cas_relaxed(c, v, 0);
}

void
cow_cost_sync_lock(cow__rwlock_t *l)
{
	cow__rwlock_init(l);
	cow__rwlock_read_lock(l);
	cow__rwlock_read_unlock(l);
	cow__rwlock_write_lock(l);
	cow__rwlock_write_unlock(l);
	cow__rwlock_wait_readers(l);
	cow__rwlock_destroy(l);
}
