/*
 * allocator.c - the counted allocator handle every storage allocates through,
 * and user-defined allocators.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc/allocator.h"
#include "core/error.h"
#include "core/sync.h"

void
cow__allocator_init(cow_allocator_t *a, const cow_allocator_ops_t *ops,
    void *state, const char *name, bool builtin)
{
	memset(a, 0, sizeof *a);
	a->ops = ops;
	a->state = state;
	a->builtin = builtin;
	strncpy(a->name, name, sizeof a->name - 1);
	a->tc_ok = cow__tc_slots_get(COW__ALLOC_COUNTERS, &a->tc_first);
}

void
cow__allocator_fini(cow_allocator_t *a)
{
	if (a->tc_ok)
		cow__tc_slots_put(a->tc_first, COW__ALLOC_COUNTERS);
	a->tc_ok = false;
}

/* Count one allocation or free of @nbytes (@what: COW__ALLOC_ALLOCS or
 * COW__ALLOC_FREES; the bytes counter follows it). */
static inline void
count_event(cow_allocator_t *a, enum cow__alloc_counter what, size_t nbytes)
{
	if (__builtin_expect(a->tc_ok, 1)) {
		struct cow__tc_block *b = cow__tc_block();

		cow__tc_add_to(b, a->tc_first + what, 1);
		cow__tc_add_to(b, a->tc_first + what + 1, nbytes);
	} else {
		cow__counter_add(&a->shared[what], 1);
		cow__counter_add(&a->shared[what + 1], nbytes);
	}
}

/* Read counters [first, first + n) of @a into out. */
static void
read_counters(const cow_allocator_t *a, unsigned first, unsigned n,
    uint64_t *out)
{
	if (a->tc_ok) {
		cow__tc_sum(a->tc_first + first, n, out);
		return;
	}
	for (unsigned i = 0; i < n; i++)
		out[i] = cow__counter_load(&a->shared[first + i]);
}

static bool
is_power_of_two(size_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

static void *
alloc_aligned(cow_allocator_t *a, size_t nbytes, size_t alignment,
    const char *func)
{
	void *p;

	if (alignment < COW_MIN_ALIGNMENT)
		alignment = COW_MIN_ALIGNMENT;
	p = a->ops->alloc(a->state, nbytes, alignment);
	if (p == NULL) {
		cow__counter_add(&a->failures, 1);
		cow__error(COW_ENOMEM, func,
		    "allocator '%s' could not allocate %zu bytes", a->name,
		    nbytes);
		return NULL;
	}
	count_event(a, COW__ALLOC_ALLOCS, nbytes);
	return p;
}

void *
cow__alloc(cow_allocator_t *a, size_t nbytes, const char *func)
{
	return alloc_aligned(a, nbytes, COW_MIN_ALIGNMENT, func);
}

void
cow__free(cow_allocator_t *a, void *ptr, size_t nbytes)
{
	if (ptr == NULL)
		return;
	a->ops->free(a->state, ptr, nbytes, COW_MIN_ALIGNMENT);
	count_event(a, COW__ALLOC_FREES, nbytes);
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
		return cow__error(COW_EINVAL, __func__,
		    "ops->%s is NULL", ops->alloc == NULL ? "alloc" : "free");
	a = malloc(sizeof *a);
	if (a == NULL)
		return cow__error(COW_ENOMEM, __func__,
		    "could not allocate the handle for '%s'", name);
	cow__allocator_init(a, ops, state, name, false);
	*out = a;
	return COW_OK;
}

cow_status_t
cow_allocator_destroy(cow_allocator_t *allocator)
{
	cow_alloc_stats_t st;

	COW__RETURN_IF_NULL(allocator);
	if (allocator->builtin)
		return cow__error(COW_EINVAL, __func__,
		    "allocator '%s' is built in and is never destroyed",
		    allocator->name);
	cow_allocator_stats(allocator, &st);
	if (st.live_allocs != 0)
		return cow__error(COW_EBUSY, __func__,
		    "allocator '%s' still has %llu live allocations "
		    "(%llu bytes)", allocator->name,
		    (unsigned long long)st.live_allocs,
		    (unsigned long long)st.live_bytes);
	if (allocator->ops == &cow__fault_ops)
		free(allocator->state);
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
	read_counters(allocator, COW__ALLOC_FREES, 2, freed);
	read_counters(allocator, COW__ALLOC_ALLOCS, 2, allocated);
	out->frees = freed[0];
	out->allocs = allocated[0];
	out->failures = cow__counter_load(&allocator->failures);
	out->total_bytes = allocated[1];
	out->live_allocs = allocated[0] - freed[0];
	out->live_bytes = allocated[1] - freed[1];
	return COW_OK;
}

cow_status_t
cow_allocator_trim(cow_allocator_t *allocator)
{
	COW__RETURN_IF_NULL(allocator);
	return allocator->trim != NULL ? allocator->trim(allocator) : COW_OK;
}

cow_status_t
cow_allocator_set_retain_limit(cow_allocator_t *allocator, size_t bytes)
{
	COW__RETURN_IF_NULL(allocator);
	if (allocator->set_retain_limit == NULL)
		return cow__error(COW_ENOTSUP, __func__,
		    "allocator '%s' has no retention to limit",
		    allocator->name);
	return allocator->set_retain_limit(allocator, bytes);
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
	if (allocator == NULL || nbytes == 0 ||
	    !is_power_of_two(alignment)) {
		cow__error(COW_EINVAL, __func__,
		    "allocator %p, nbytes %zu, alignment %zu: need a handle, "
		    "nbytes > 0 and a power-of-two alignment",
		    (void *)allocator, nbytes, alignment);
		return NULL;
	}
	if (nbytes > (size_t)PTRDIFF_MAX) {
		cow__error(COW_EOVERFLOW, __func__,
		    "nbytes %zu exceeds the maximum %zu", nbytes,
		    (size_t)PTRDIFF_MAX);
		return NULL;
	}
	return alloc_aligned(allocator, nbytes, alignment, __func__);
}

void
cow_allocator_free(cow_allocator_t *allocator, void *ptr, size_t nbytes,
    size_t alignment)
{
	if (allocator == NULL || ptr == NULL)
		return;
	if (alignment < COW_MIN_ALIGNMENT)
		alignment = COW_MIN_ALIGNMENT;
	allocator->ops->free(allocator->state, ptr, nbytes, alignment);
	count_event(allocator, COW__ALLOC_FREES, nbytes);
}
