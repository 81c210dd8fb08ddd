/*
 * allocator.h - internal view of an allocator handle: the vtable, its state
 * and the counters the library keeps for every handle.
 */
#ifndef COW_ALLOC_ALLOCATOR_H
#define COW_ALLOC_ALLOCATOR_H

#include <stdbool.h>
#include <stdint.h>

#include <cowstore/alloc.h>

#include "alloc/budget.h"
#include "alloc/cache.h"
#include "core/tcounter.h"

#define COW__ALLOCATOR_NAME_MAX 32

struct cow_allocator_s {
	const cow_allocator_ops_t *ops; /* Read-only after init. */
	void *state;                    /* Read-only after init. */
	char name[COW__ALLOCATOR_NAME_MAX]; /* Read-only after init. */
	bool builtin;                   /* Read-only: never destroyed. */
	/* Small freed blocks stay in a per-thread cache (alloc/cache.h).
	 * Read-only after init. */
	bool cache_ok;
	/* Frees @state at cow_allocator_destroy (a handle the library made
	 * with state of its own: the fault allocator's); NULL: the state is
	 * the user's. Read-only after init. */
	void (*state_free)(void *state);
	/* Optional built-in hooks (NULL for user allocators). Read-only. */
	cow_status_t (*trim)(cow_allocator_t *self);
	cow_status_t (*set_retain_limit)(cow_allocator_t *self, size_t bytes);
	size_t (*retained_bytes)(cow_allocator_t *self);
	size_t (*retain_limit)(cow_allocator_t *self);
	/*
	 * Counters. Allocations, frees and their bytes are per-thread
	 * counters (core/tcounter.h) in slots [tc_first, tc_first + 4) when
	 * tc_ok, so counting touches no cache line other threads write;
	 * otherwise (no slots left) they are the shared atomics below.
	 * Failures are rare: always a shared atomic.
	 */
	bool tc_ok;        /* Read-only after init. */
	unsigned tc_first; /* Read-only after init. */
	cow__atomic_u64_t shared[4]; /* Synchronization: atomic (relaxed). */
	cow__atomic_u64_t failures;  /* Synchronization: atomic (relaxed). */
	/* The byte limit (alloc/budget.h); self-synchronised. */
	cow__budget_t budget;
};

/* The counters of a handle, in slot order. */
enum cow__alloc_counter {
	COW__ALLOC_ALLOCS,
	COW__ALLOC_BYTES_ALLOCATED,
	COW__ALLOC_FREES,
	COW__ALLOC_BYTES_FREED,
	COW__ALLOC_COUNTERS
};

/* Initialise a handle in place (built-ins and cow_allocator_new). Its
 * limit is @limit; @budget_slot is a built-in's per-thread credit slot
 * (alloc/budget.h) or COW__BUDGET_NO_SLOT. */
void cow__allocator_init(cow_allocator_t *a, const cow_allocator_ops_t *ops,
    void *state, const char *name, bool builtin, uint64_t limit,
    int budget_slot);

/* Return a handle's counter slots (cow_allocator_destroy). */
void cow__allocator_fini(cow_allocator_t *a);

/* Count one allocation or free of @nbytes (@what: COW__ALLOC_ALLOCS or
 * COW__ALLOC_FREES; the bytes counter follows it). */
static inline void
cow__alloc_count(cow_allocator_t *a, enum cow__alloc_counter what,
    size_t nbytes)
{
	if (__builtin_expect(a->tc_ok, 1)) {
		struct cow__tc_block *b = cow__tc_block();

		cow__tc_add_to(b, a->tc_first + what, 1);
		cow__tc_add_to(b, a->tc_first + what + 1, nbytes);
	} else {
		cow__atomic_add_relaxed(&a->shared[what], 1);
		cow__atomic_add_relaxed(&a->shared[what + 1], nbytes);
	}
}

/* cow__alloc and cow__free past their cached fast path (allocator.c). */
void *cow__alloc_slow(cow_allocator_t *a, size_t nbytes);
void cow__free_slow(cow_allocator_t *a, void *ptr, size_t nbytes);

/*
 * Allocate @nbytes (> 0) aligned to COW_MIN_ALIGNMENT, counted. Returns NULL
 * on failure and records the error (core/error.h). Inline: a small block
 * from the calling thread's cache (alloc/cache.h) costs a budget check, a
 * list pop and two per-thread counter adds.
 */
static inline void *
cow__alloc(cow_allocator_t *a, size_t nbytes)
{
	void *p;

	if (a->cache_ok && cow__cache_fits(nbytes, COW_MIN_ALIGNMENT) &&
	    cow__cache_peek(nbytes) &&
	    cow__budget_charge(&a->budget, nbytes)) {
		p = cow__cache_take(nbytes);
		cow__alloc_count(a, COW__ALLOC_ALLOCS, nbytes);
		return p;
	}
	return cow__alloc_slow(a, nbytes);
}
/* The same, zero-filled: through ops->alloc_zeroed when the allocator has
 * one (which need not touch fresh pages), else alloc and memset. */
void *cow__alloc_zeroed(cow_allocator_t *a, size_t nbytes);

/* Free a block of @nbytes from cow__alloc or cow__alloc_zeroed on @a (NULL
 * does nothing). Inline: a small block goes to the thread's cache. */
static inline void
cow__free(cow_allocator_t *a, void *ptr, size_t nbytes)
{
	if (ptr == NULL)
		return;
	if (a->cache_ok && cow__cache_fits(nbytes, COW_MIN_ALIGNMENT) &&
	    cow__cache_keep(ptr, nbytes)) {
		cow__budget_uncharge(&a->budget, nbytes);
		cow__alloc_count(a, COW__ALLOC_FREES, nbytes);
		return;
	}
	cow__free_slow(a, ptr, nbytes);
}

/* The jemalloc allocator, or NULL when this build has none or its arena
 * could not be created. Records no error (cow_allocator_default's probe). */
cow_allocator_t *cow__jemalloc_get(void);

/* Zeroed memory from a vtable: its alloc_zeroed, or alloc and memset. */
void *cow__ops_alloc_zeroed(const cow_allocator_ops_t *ops, void *state,
    size_t nbytes, size_t alignment);

#endif
