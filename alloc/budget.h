/*
 * budget.h - an allocator handle's byte limit (cow_allocator_set_limit).
 *
 * Every allocation through a handle is charged against the handle's budget
 * before the back end is called, and uncharged after the free; a request
 * the limit does not allow fails with COW_ENOMEM and never reaches the back
 * end. What is charged is the bytes requested.
 *
 * Cost and exactness:
 * - Large requests (above COW__BUDGET_SMALL: data buffers) are charged
 *   exactly, one compare-and-swap on the shared `used` word; their cost is
 *   dominated by the copy or the page faults that follow.
 * - Small requests (storage structs, COW contexts, small buffers) through a
 *   built-in allocator (system, jemalloc) are charged against a per-thread
 *   credit, drawn from `used` in chunks of COW__BUDGET_CHUNK and given back
 *   above two chunks and at thread exit. They write no shared cache line
 *   except once per chunk. Built-in handles are never destroyed, which is
 *   what makes a per-thread credit that outlives a call safe.
 * - Small requests through other handles (user and fault allocators, which
 *   can be destroyed) are charged exactly, like large ones.
 * So the live bytes of a handle never exceed its limit; a built-in handle
 * may refuse a request early, by at most 2 * COW__BUDGET_CHUNK per thread
 * holding credit (and a process forked from a multithreaded one keeps the
 * other threads' credit charged).
 *
 * Credit was drawn under the limit of its time. Setting a limit stores it,
 * then bumps the budget's epoch with release; the slow path loads the
 * epoch with acquire, so a thread that sees an epoch sees its limit. A
 * thread whose credit is from an older epoch takes the slow path, which
 * gives that credit back and charges against the new limit. So a lowered
 * limit holds for every request ordered after cow_allocator_set_limit
 * returns, on every thread (the interleaving checker's budget scenario,
 * with its weak-memory control (k), docs/interleave.md).
 *
 * Kept apart from the statistics counters (allocator.c) on purpose.
 */
#ifndef COW_ALLOC_BUDGET_H
#define COW_ALLOC_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/atomic.h"

/* Requests up to this size are "small" (the jemalloc tcache's bound too). */
#define COW__BUDGET_SMALL ((size_t)16 << 10)
/* Per-thread credit is drawn in chunks of this size. */
#define COW__BUDGET_CHUNK ((uint64_t)256 << 10)
/* Built-in handles with a per-thread credit slot. */
enum { COW__BUDGET_SLOT_SYSTEM, COW__BUDGET_SLOT_JEMALLOC, COW__BUDGET_SLOTS };
#define COW__BUDGET_NO_SLOT (-1)
#define COW__BUDGET_NO_LIMIT UINT64_MAX

typedef struct cow__budget {
	cow__atomic_u64_t limit; /* NO_LIMIT: none. */
	/* Bumped after every change of limit, with release. */
	cow__atomic_u64_t epoch;
	int slot;       /* Read-only after init: credit slot or NO_SLOT. */
	/* Keeps `used` off the cache line of the fields above. */
	char pad0[64];
	cow__atomic_u64_t used; /* Charged bytes. */
	char pad1[64];
} cow__budget_t;

/* Initialise (not concurrently with any use). A @slot is for a built-in,
 * never-destroyed handle only. */
void cow__budget_init(cow__budget_t *b, uint64_t limit, int slot);

/* This thread's unused credit per slot (budget.c), the budget epoch it was
 * drawn in, and whether its thread-exit hand-back is registered. */
extern _Thread_local uint64_t cow__budget_credit[COW__BUDGET_SLOTS];
extern _Thread_local uint64_t cow__budget_credit_epoch[COW__BUDGET_SLOTS];
extern _Thread_local bool cow__budget_registered;

/* Set the limit (NO_LIMIT: none); credit drawn before no longer counts. */
void cow__budget_set_limit(cow__budget_t *b, uint64_t limit);

/* The slow paths of the two functions below (budget.c). */
bool cow__budget_charge_slow(cow__budget_t *b, size_t n);
void cow__budget_uncharge_slow(cow__budget_t *b, size_t n);

/* Charge @n bytes. False, charging nothing, when the limit forbids it.
 * Inline: a small request covered by this thread's credit costs a few
 * instructions and writes no shared memory (the lazy clone path): it reads
 * the budget's epoch, a word written only when a limit is set. */
static inline bool
cow__budget_charge(cow__budget_t *b, size_t n)
{
	if (b->slot != COW__BUDGET_NO_SLOT && n <= COW__BUDGET_SMALL &&
	    cow__budget_credit[b->slot] >= n &&
	    cow__budget_credit_epoch[b->slot] ==
	    cow__atomic_load_relaxed_fast(&b->epoch)) {
		cow__budget_credit[b->slot] -= n;
		return true;
	}
	return cow__budget_charge_slow(b, n);
}

/* Give back @n bytes charged before (on any thread). */
static inline void
cow__budget_uncharge(cow__budget_t *b, size_t n)
{
	if (b->slot != COW__BUDGET_NO_SLOT && n <= COW__BUDGET_SMALL &&
	    cow__budget_registered &&
	    cow__budget_credit[b->slot] + n <= 2 * COW__BUDGET_CHUNK) {
		cow__budget_credit[b->slot] += n;
		return;
	}
	cow__budget_uncharge_slow(b, n);
}

/* The bytes charged now, per-thread credit included. */
uint64_t cow__budget_used(const cow__budget_t *b);

/*
 * The default allocators' starting limit: COW_MEMORY_LIMIT_MB from the
 * environment when set (0: no limit), otherwise three quarters of physical
 * memory (no limit if that is unknown).
 */
uint64_t cow__budget_default_limit(void);

/* Physical memory in bytes, 0 if unknown. */
uint64_t cow__physical_memory(void);

#endif
