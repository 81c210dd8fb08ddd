/*
 * refcount.h - reference counts (cow__ref_*) and pin counts (cow__pin_*)
 * on ck_pr atomics, each with the fences its memory order needs and the
 * TSan annotations and checker hooks of core/atomic.h, which says how
 * those work.
 */
#ifndef COW_CORE_REFCOUNT_H
#define COW_CORE_REFCOUNT_H

#include <limits.h>
#include <stdbool.h>

#include <ck_pr.h>

#include "core/atomic.h"
#include "core/die.h"
#include "core/fault.h"

/* ------------------------------------------------------------------ */
/* Refcounts (urcu ref.h semantics: get aborts on overflow or on a dead
 * object, put reports the drop to zero).                              */

typedef struct cow__refcount {
	unsigned value; /* Synchronization: atomic (ck_pr). */
} cow__refcount_t;

static inline void
cow__ref_init(cow__refcount_t *ref, unsigned value)
{
	COW__SCHED(COW__SCHED_REF_INIT, ref, COW__MO_RELAXED);
	ck_pr_store_uint(&ref->value, value);
}

static inline unsigned
cow__ref_load(const cow__refcount_t *ref)
{
	unsigned v;

	COW__SCHED(COW__SCHED_REF_LOAD, ref, COW__MO_RELAXED);
	v = ck_pr_load_uint(&ref->value);
	/* Pairs with the release in cow__ref_sub: a reader that sees a count
	 * drop also sees what the droppers did before dropping. */
	COW__FAULT_POINT(ref_load_acquire, cow__fence_acquire(ref));
	COW__TSAN_ACQUIRE(ref);
	return v;
}

static inline void
cow__ref_get(cow__refcount_t *ref)
{
	unsigned old;

	/* Relaxed: a new reference is made from one the caller holds, which
	 * keeps the object alive; nothing is published through the count. */
	COW__SCHED(COW__SCHED_REF_GET, ref, COW__MO_RELAXED);
	COW__FAULT_POINT(ref_increment, old = ck_pr_faa_uint(&ref->value, 1));
	if (old == 0 || old == UINT_MAX)
		cow__die("refcount get on a dead or saturated object");
}

/* Subtract one; return the value before. The caller that sees 1 owns the
 * object. */
static inline unsigned
cow__ref_sub(cow__refcount_t *ref)
{
	unsigned old;

	/* Release: everything this thread did with the object happens before
	 * the thread that drops the count to zero frees or steals it. */
	COW__TSAN_RELEASE(ref);
	COW__FAULT_POINT(ref_sub_release, cow__fence_release(ref));
	COW__SCHED(COW__SCHED_REF_SUB, ref, COW__MO_RELAXED);
	old = ck_pr_faa_uint(&ref->value, UINT_MAX);
	if (old == 0)
		cow__die("refcount put below zero");
	if (old == 1) {
		/* Acquire: we are the last; see every earlier holder's work. */
		COW__FAULT_POINT(ref_last_acquire, cow__fence_acquire(ref));
		COW__TSAN_ACQUIRE(ref);
	}
	return old;
}

/* True when the count dropped to zero. */
static inline bool
cow__ref_put(cow__refcount_t *ref)
{
	return cow__ref_sub(ref) == 1;
}

/* ------------------------------------------------------------------ */
/* Pin counts (storage.h): unlike a refcount, zero is a live state. An
 * unpin may run on any thread (an export's deleter); what the unpinning
 * thread did before (a consumer's writes through the exported pointer)
 * happens before whatever follows a load that sees the count drop.     */

static inline void
cow__pin_get(cow__refcount_t *ref)
{
	/* Relaxed: the pin orders nothing by itself; the pinning thread's
	 * later writes are ordered by the user (storage.h). */
	COW__SCHED(COW__SCHED_REF_GET, ref, COW__MO_RELAXED);
	if (ck_pr_faa_uint(&ref->value, 1) == UINT_MAX)
		cow__die("pin count saturated");
}

/* Remove one pin; false (and nothing changes) when no more than @floor
 * pins are left (the pins nobody may remove). */
static inline bool
cow__pin_put(cow__refcount_t *ref, unsigned floor)
{
	unsigned seen;

	COW__TSAN_RELEASE(ref);
	cow__fence_release(ref);
	COW__SCHED(COW__SCHED_REF_SUB, ref, COW__MO_RELAXED);
	seen = ck_pr_load_uint(&ref->value);
	do {
		if (seen <= floor)
			return false;
	} while (!ck_pr_cas_uint_value(&ref->value, seen, seen - 1, &seen));
	return true;
}

/* The pin count, with acquire. Not a scheduling point of the sequentially
 * consistent checker (COW__SCHED_PIN_LOAD passes through): a pin is a
 * write of its storage, which the user orders against the lazy clone that
 * loads the count, and an unpin racing with that load is correct either
 * way (the clone copies or shares), so it has nothing to choose. */
static inline unsigned
cow__pin_load(const cow__refcount_t *ref)
{
	unsigned v;

	COW__SCHED(COW__SCHED_PIN_LOAD, ref, COW__MO_RELAXED);
	v = ck_pr_load_uint(&ref->value);
	cow__fence_acquire(ref);
	COW__TSAN_ACQUIRE(ref);
	return v;
}

#endif
