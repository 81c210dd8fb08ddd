/*
 * allocator.c - the counted allocator handle every storage allocates through,
 * and user-defined allocators.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc/allocator.h"
#include "alloc/cache.h"
#include "core/atomic.h"
#include "core/error.h"

void
cow__allocator_init(cow_allocator_t *a, const cow_allocator_ops_t *ops,
    void *state, const char *name, bool builtin, uint64_t limit,
    int budget_slot)
{
	memset(a, 0, sizeof *a);
	a->ops = ops;
	a->state = state;
	a->builtin = builtin;
	strncpy(a->name, name, sizeof a->name - 1);
	cow__budget_init(&a->budget, limit, budget_slot);
	a->tc_ok = cow__tc_slots_get(COW__ALLOC_COUNTERS, &a->tc_first);
}

void
cow__allocator_fini(cow_allocator_t *a)
{
	if (a->tc_ok)
		cow__tc_slots_put(a->tc_first, COW__ALLOC_COUNTERS);
	a->tc_ok = false;
}

/* Read counters [first, first + n) of @a into out. */
static void
counters(const cow_allocator_t *a, unsigned first, unsigned n,
    uint64_t *out)
{
	if (a->tc_ok) {
		cow__tc_sum(a->tc_first + first, n, out);
		return;
	}
	for (unsigned i = 0; i < n; i++)
		out[i] = cow__atomic_load_relaxed(&a->shared[first + i]);
}

void *
cow__ops_alloc_zeroed(const cow_allocator_ops_t *ops, void *state,
    size_t nbytes, size_t alignment)
{
	void *p;

	if (ops->alloc_zeroed != NULL)
		return ops->alloc_zeroed(state, nbytes, alignment);
	if ((p = ops->alloc(state, nbytes, alignment)) != NULL)
		memset(p, 0, nbytes);
	return p;
}

static bool
is_power_of_two(size_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

static void *
alloc_aligned(cow_allocator_t *a, size_t nbytes, size_t alignment, bool zeroed)
{
	void *p;

	if (alignment < COW_MIN_ALIGNMENT)
		alignment = COW_MIN_ALIGNMENT;
	/* The limit first: a refused request never reaches the back end (and
	 * never maps, let alone touches, a page). */
	if (!cow__budget_charge(&a->budget, nbytes)) {
		cow__atomic_add_relaxed(&a->failures, 1);
		cow__error(COW_ENOMEM,
		    "allocator '%s' refused %zu bytes: over its limit of "
		    "%llu bytes (%llu in use; cow_allocator_set_limit)",
		    a->name, nbytes,
		    (unsigned long long)cow__atomic_load_relaxed(&a->budget.limit),
		    (unsigned long long)cow__budget_used(&a->budget));
		return NULL;
	}
	if (a->cache_ok && cow__cache_fits(nbytes, alignment) &&
	    (p = cow__cache_take(nbytes)) != NULL) {
		if (zeroed)
			memset(p, 0, nbytes);
		cow__alloc_count(a, COW__ALLOC_ALLOCS, nbytes);
		return p;
	}
	p = zeroed ? cow__ops_alloc_zeroed(a->ops, a->state, nbytes,
	    alignment) : a->ops->alloc(a->state, nbytes, alignment);
	if (p == NULL) {
		cow__budget_uncharge(&a->budget, nbytes);
		cow__atomic_add_relaxed(&a->failures, 1);
		cow__error(COW_ENOMEM,
		    "allocator '%s' could not allocate %zu bytes", a->name,
		    nbytes);
		return NULL;
	}
	cow__alloc_count(a, COW__ALLOC_ALLOCS, nbytes);
	return p;
}

void *
cow__alloc_slow(cow_allocator_t *a, size_t nbytes)
{
	return alloc_aligned(a, nbytes, COW_MIN_ALIGNMENT, false);
}

void *
cow__alloc_zeroed(cow_allocator_t *a, size_t nbytes)
{
	return alloc_aligned(a, nbytes, COW_MIN_ALIGNMENT, true);
}

void
cow__free_slow(cow_allocator_t *a, void *ptr, size_t nbytes)
{
	a->ops->free(a->state, ptr, nbytes, COW_MIN_ALIGNMENT);
	cow__budget_uncharge(&a->budget, nbytes);
	cow__alloc_count(a, COW__ALLOC_FREES, nbytes);
}

cow_status_t
cow_allocator_new(const cow_allocator_ops_t *ops, void *state,
    const char *name, cow_allocator_t **out)
{
	cow_allocator_t *a;

	COW__RETURN_IF_NULL(ops);
	COW__RETURN_IF_NULL(name);
	COW__RETURN_IF_NULL(out);
	if (ops->alloc == NULL || ops->free == NULL)
		return COW__NAMED(cow__error(COW_EINVAL,
		    "ops->%s is NULL", ops->alloc == NULL ? "alloc" : "free"));
	a = malloc(sizeof *a);
	if (a == NULL)
		return COW__NAMED(cow__error(COW_ENOMEM,
		    "could not allocate the handle for '%s'", name));
	cow__allocator_init(a, ops, state, name, false, COW__BUDGET_NO_LIMIT,
	    COW__BUDGET_NO_SLOT);
	*out = a;
	return COW_OK;
}

cow_status_t
cow_allocator_destroy(cow_allocator_t *allocator)
{
	cow_alloc_stats_t st;

	COW__RETURN_IF_NULL(allocator);
	if (allocator->builtin)
		return COW__NAMED(cow__error(COW_EINVAL,
		    "allocator '%s' is built in and is never destroyed",
		    allocator->name));
	cow_allocator_stats(allocator, &st);
	if (st.live_allocs != 0)
		return COW__NAMED(cow__error(COW_EBUSY,
		    "allocator '%s' still has %llu live allocations "
		    "(%llu bytes)", allocator->name,
		    (unsigned long long)st.live_allocs,
		    (unsigned long long)st.live_bytes));
	if (allocator->state_free != NULL)
		allocator->state_free(allocator->state);
	cow__allocator_fini(allocator);
	free(allocator);
	return COW_OK;
}

const char *
cow_allocator_name(const cow_allocator_t *allocator)
{
	return allocator == NULL ? "" : allocator->name;
}

cow_status_t
cow_allocator_stats(const cow_allocator_t *allocator, cow_alloc_stats_t *out)
{
	uint64_t freed[2], allocated[2];

	COW__RETURN_IF_NULL(allocator);
	COW__RETURN_IF_NULL(out);
	/* Frees are read before allocations so live values never go below
	 * zero while other threads allocate and free: a free that is counted
	 * happened after its allocation, which the later read then counts. */
	counters(allocator, COW__ALLOC_FREES, 2, freed);
	counters(allocator, COW__ALLOC_ALLOCS, 2, allocated);
	out->frees = freed[0];
	out->allocs = allocated[0];
	out->failures = cow__atomic_load_relaxed(&allocator->failures);
	out->total_bytes = allocated[1];
	out->live_allocs = allocated[0] - freed[0];
	out->live_bytes = allocated[1] - freed[1];
	return COW_OK;
}

cow_status_t
cow_allocator_trim(cow_allocator_t *allocator)
{
	COW__RETURN_IF_NULL(allocator);
	if (allocator->cache_ok)
		cow__cache_flush();
	return COW__NAMED(allocator->trim != NULL ? allocator->trim(allocator) :
	    COW_OK);
}

cow_status_t
cow_allocator_set_retain_limit(cow_allocator_t *allocator, size_t bytes)
{
	COW__RETURN_IF_NULL(allocator);
	if (allocator->set_retain_limit == NULL)
		return COW__NAMED(cow__error(COW_ENOTSUP,
		    "allocator '%s' has no retention to limit",
		    allocator->name));
	return COW__NAMED(allocator->set_retain_limit(allocator, bytes));
}

cow_status_t
cow_allocator_set_limit(cow_allocator_t *allocator, size_t bytes)
{
	COW__RETURN_IF_NULL(allocator);
	cow__budget_set_limit(&allocator->budget,
	    bytes == COW_ALLOCATOR_NO_LIMIT ? COW__BUDGET_NO_LIMIT :
	    (uint64_t)bytes);
	return COW_OK;
}

size_t
cow_allocator_limit(const cow_allocator_t *allocator)
{
	uint64_t limit;

	if (allocator == NULL)
		return 0;
	limit = cow__atomic_load_relaxed(&allocator->budget.limit);
	return limit >= (uint64_t)SIZE_MAX ? COW_ALLOCATOR_NO_LIMIT :
	    (size_t)limit;
}

size_t
cow_allocator_retain_limit(cow_allocator_t *allocator)
{
	if (allocator == NULL || allocator->retain_limit == NULL)
		return 0;
	return allocator->retain_limit(allocator);
}

size_t
cow_allocator_retained_bytes(cow_allocator_t *allocator)
{
	if (allocator == NULL || allocator->retained_bytes == NULL)
		return 0;
	return allocator->retained_bytes(allocator);
}

void *
cow_allocator_alloc(cow_allocator_t *allocator, size_t nbytes,
    size_t alignment)
{
	void *p;

	if (allocator == NULL || nbytes == 0 ||
	    !is_power_of_two(alignment)) {
		(void)COW__NAMED(cow__error(COW_EINVAL,
		    "allocator %p, nbytes %zu, alignment %zu: need a handle, "
		    "nbytes > 0 and a power-of-two alignment",
		    (void *)allocator, nbytes, alignment));
		return NULL;
	}
	if (nbytes > (size_t)PTRDIFF_MAX) {
		(void)COW__NAMED(cow__error(COW_EOVERFLOW,
		    "nbytes %zu exceeds the maximum %zu", nbytes,
		    (size_t)PTRDIFF_MAX));
		return NULL;
	}
	if ((p = alloc_aligned(allocator, nbytes, alignment, false)) == NULL)
		(void)COW__NAMED(COW_ENOMEM);
	return p;
}

void
cow_allocator_free(cow_allocator_t *allocator, void *ptr, size_t nbytes,
    size_t alignment)
{
	if (allocator == NULL || ptr == NULL)
		return;
	if (alignment < COW_MIN_ALIGNMENT)
		alignment = COW_MIN_ALIGNMENT;
	if (!allocator->cache_ok || !cow__cache_fits(nbytes, alignment) ||
	    !cow__cache_keep(ptr, nbytes))
		allocator->ops->free(allocator->state, ptr, nbytes, alignment);
	cow__budget_uncharge(&allocator->budget, nbytes);
	cow__alloc_count(allocator, COW__ALLOC_FREES, nbytes);
}
