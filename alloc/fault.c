/*
 * fault.c - a fault-injecting allocator: wraps another allocator and fails
 * the n-th allocation after arming, or each allocation with a probability
 * decided by a seeded generator (deterministic per allocation index).
 */
#include <math.h>
#include <stdlib.h>

#include <cowstore/testing.h>

#include "alloc/allocator.h"
#include "core/atomic.h"
#include "core/error.h"

enum fault_mode { FAULT_OFF, FAULT_NTH, FAULT_RANDOM };

struct fault_state {
	cow_allocator_t *inner; /* Read-only after init. */
	/* Synchronization: atomic. Arming writes mode last; allocations read
	 * it first. */
	cow__atomic_u64_t mode;
	cow__atomic_u64_t nth;       /* fail the nth allocation after arming */
	cow__atomic_u64_t threshold; /* RANDOM: fail when hash < threshold */
	cow__atomic_u64_t always;    /* RANDOM: probability 1 */
	cow__atomic_u64_t seed;
	cow__atomic_u64_t calls;     /* allocations since arming */
	cow__atomic_u64_t injected;  /* failures injected since creation */
};

/* splitmix64 finaliser: a pure function of its input. */
static uint64_t
mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static bool
fault_should_fail(struct fault_state *f)
{
	uint64_t mode = cow__atomic_load_relaxed(&f->mode);
	uint64_t k;

	if (mode == FAULT_OFF)
		return false;
	k = cow__atomic_fetch_add_relaxed(&f->calls, 1) + 1;
	if (mode == FAULT_NTH)
		return k == cow__atomic_load_relaxed(&f->nth);
	if (cow__atomic_load_relaxed(&f->always))
		return true;
	return mix64(cow__atomic_load_relaxed(&f->seed) ^ (k * 0x2545f4914f6cdd1dULL)) <
	    cow__atomic_load_relaxed(&f->threshold);
}

static void *
fault_alloc(void *state, size_t nbytes, size_t alignment)
{
	struct fault_state *f = state;

	if (fault_should_fail(f)) {
		cow__atomic_add_relaxed(&f->injected, 1);
		return NULL;
	}
	return f->inner->ops->alloc(f->inner->state, nbytes, alignment);
}

static void *
fault_alloc_zeroed(void *state, size_t nbytes, size_t alignment)
{
	struct fault_state *f = state;

	if (fault_should_fail(f)) {
		cow__atomic_add_relaxed(&f->injected, 1);
		return NULL;
	}
	return cow__ops_alloc_zeroed(f->inner->ops, f->inner->state, nbytes,
	    alignment);
}

static void
fault_free(void *state, void *ptr, size_t nbytes, size_t alignment)
{
	struct fault_state *f = state;

	f->inner->ops->free(f->inner->state, ptr, nbytes, alignment);
}

/* The vtable of fault allocators (which also recognises their handles). */
static const cow_allocator_ops_t fault_ops = {
	.alloc = fault_alloc,
	.free = fault_free,
	.alloc_zeroed = fault_alloc_zeroed,
};

cow_status_t
cow_allocator_fault_new(cow_allocator_t *inner, cow_allocator_t **out)
{
	struct fault_state *f = NULL;
	cow_allocator_t *a;

	COW__RETURN_IF_NULL(inner);
	COW__RETURN_IF_NULL(out);
	f = calloc(1, sizeof *f);
	a = malloc(sizeof *a);
	if (f == NULL || a == NULL) {
		free(f);
		free(a);
		return COW__NAMED(cow__error(COW_ENOMEM,
		    "could not allocate the fault allocator"));
	}
	f->inner = inner;
	cow__allocator_init(a, &fault_ops, f, "fault", false,
	    COW__BUDGET_NO_LIMIT, COW__BUDGET_NO_SLOT);
	a->state_free = free;
	*out = a;
	return COW_OK;
}

static cow_status_t
fault_state_of(cow_allocator_t *a, struct fault_state **out)
{
	if (a == NULL || a->ops != &fault_ops)
		return cow__error(COW_EINVAL,
		    "allocator %p is not a fault allocator", (void *)a);
	*out = a->state;
	return COW_OK;
}

cow_status_t
cow_allocator_fault_fail_nth(cow_allocator_t *allocator, uint64_t n)
{
	struct fault_state *f = NULL;
	cow_status_t st = fault_state_of(allocator, &f);

	if (st != COW_OK)
		return COW__NAMED(st);
	cow__atomic_store_relaxed(&f->mode, FAULT_OFF);
	cow__atomic_store_relaxed(&f->calls, 0);
	cow__atomic_store_relaxed(&f->nth, n);
	if (n != 0)
		cow__atomic_store_relaxed(&f->mode, FAULT_NTH);
	return COW_OK;
}

cow_status_t
cow_allocator_fault_fail_random(cow_allocator_t *allocator,
    double probability, uint64_t seed)
{
	struct fault_state *f = NULL;
	cow_status_t st = fault_state_of(allocator, &f);

	if (st != COW_OK)
		return COW__NAMED(st);
	if (!(probability >= 0.0 && probability <= 1.0))
		return COW__NAMED(cow__error(COW_EINVAL,
		    "probability %g is not in [0, 1]", probability));
	cow__atomic_store_relaxed(&f->mode, FAULT_OFF);
	cow__atomic_store_relaxed(&f->calls, 0);
	cow__atomic_store_relaxed(&f->seed, seed);
	cow__atomic_store_relaxed(&f->always, probability >= 1.0);
	/* 2^64 * p; p < 1 here, so the product fits. */
	cow__atomic_store_relaxed(&f->threshold,
	    probability >= 1.0 ? UINT64_MAX :
	    (uint64_t)ldexp(probability, 64));
	cow__atomic_store_relaxed(&f->mode, FAULT_RANDOM);
	return COW_OK;
}

cow_status_t
cow_allocator_fault_disarm(cow_allocator_t *allocator)
{
	struct fault_state *f = NULL;
	cow_status_t st = fault_state_of(allocator, &f);

	if (st != COW_OK)
		return COW__NAMED(st);
	cow__atomic_store_relaxed(&f->mode, FAULT_OFF);
	return COW_OK;
}

uint64_t
cow_allocator_fault_injected(const cow_allocator_t *allocator)
{
	if (allocator == NULL || allocator->ops != &fault_ops)
		return 0;
	return cow__atomic_load_relaxed(
	    &((struct fault_state *)allocator->state)->injected);
}
