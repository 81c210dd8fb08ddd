/*
 * memory.c - memory accounting for the harness.
 *
 * - The harness allocator: a counted handle layered over the default
 *   allocator that poisons data blocks before freeing them. A copier that
 *   reads data after the last share freed it copies STRESS_POISON bytes and
 *   fails its content check, even in a build without a sanitizer.
 * - External buffers: data the harness allocates itself and hands to
 *   cow_storage_from_external with a counting deleter, to prove that an
 *   original is freed exactly once (and to catch a second free before it
 *   reaches free()).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* Read-only between stress_alloc_init and stress_alloc_fini. */
static cow_allocator_t *stress_alloc;
static cow_allocator_t *stress_inner;
static size_t stress_poison_min;

/* Synchronization: atomic counters. */
static _Atomic uint64_t stress_ext_buffers;
static _Atomic uint64_t stress_ext_bytes;

static void *
stress_poison_alloc(void *state, size_t nbytes, size_t alignment)
{
	return cow_allocator_alloc(state, nbytes, alignment);
}

static void
stress_poison_free(void *state, void *ptr, size_t nbytes, size_t alignment)
{
	/* Data only: poisoning a freed context's lock word would turn a
	 * use-after-free into a hang, and its data pointer into a crash,
	 * before the content check could report it. */
	if (nbytes >= stress_poison_min)
		memset(ptr, STRESS_POISON, nbytes);
	cow_allocator_free(state, ptr, nbytes, alignment);
}

static const cow_allocator_ops_t stress_poison_ops = {
	.alloc = stress_poison_alloc,
	.free = stress_poison_free,
};

bool
stress_alloc_init(size_t poison_min)
{
	stress_poison_min = poison_min;
	stress_inner = cow_allocator_default();
	if (cow_allocator_new(&stress_poison_ops, stress_inner, "stress",
	    &stress_alloc) != COW_OK) {
		fprintf(stderr, "cow_stress: cow_allocator_new: %s\n",
		    cow_last_error());
		return false;
	}
	return true;
}

cow_allocator_t *
stress_allocator(void)
{
	return stress_alloc;
}

bool
stress_alloc_fini(void)
{
	if (cow_allocator_destroy(stress_alloc) != COW_OK)
		return false;
	stress_alloc = NULL;
	return true;
}

uint64_t
stress_default_live_allocs(void)
{
	cow_alloc_stats_t st;

	cow_allocator_stats(cow_allocator_default(), &st);
	return st.live_allocs;
}

static void
stress_ext_deleter(void *data, size_t nbytes, void *ctx)
{
	struct stress_ext *rec = ctx;
	unsigned before = atomic_fetch_add(&rec->calls, 1);

	if (!stress_check(rec->run, before == 0 && data == rec->data &&
	    nbytes == rec->nbytes,
	    "deleter call %u for external buffer %p (%zu bytes; expected "
	    "one call for %p, %zu bytes)", before + 1, data, nbytes,
	    rec->data, rec->nbytes))
		return; /* Never free twice: the report is the point. */
	memset(data, STRESS_POISON, nbytes);
	free(data);
	atomic_fetch_sub(&stress_ext_buffers, 1);
	atomic_fetch_sub(&stress_ext_bytes, nbytes);
}

cow_storage_t *
stress_ext_storage(struct stress_run *run, struct stress_ext *rec, size_t n,
    uint64_t key)
{
	cow_storage_t *s;
	void *p = NULL;

	if (posix_memalign(&p, COW_MIN_ALIGNMENT, n) != 0)
		return NULL;
	stress_pattern_fill(p, n, key);
	atomic_init(&rec->calls, 0);
	rec->data = p;
	rec->nbytes = n;
	rec->run = run;
	if (cow_storage_from_external(p, n, stress_ext_deleter, rec, 0, &s) !=
	    COW_OK) {
		free(p);
		return NULL;
	}
	atomic_fetch_add(&stress_ext_buffers, 1);
	atomic_fetch_add(&stress_ext_bytes, n);
	return s;
}

cow_storage_t *
stress_alloc_storage(struct stress_run *run, size_t n, uint64_t key)
{
	cow_storage_t *s;
	void *p;

	(void)run;
	if (cow_storage_new(n, stress_alloc, &s) != COW_OK)
		return NULL;
	if (cow_storage_mutable_data(s, &p) != COW_OK) {
		cow_storage_release(s);
		return NULL;
	}
	stress_pattern_fill(p, n, key);
	return s;
}

void
stress_ext_add(size_t nbytes)
{
	atomic_fetch_add(&stress_ext_buffers, 1);
	atomic_fetch_add(&stress_ext_bytes, nbytes);
}

void
stress_ext_sub(size_t nbytes)
{
	atomic_fetch_sub(&stress_ext_buffers, 1);
	atomic_fetch_sub(&stress_ext_bytes, nbytes);
}

uint64_t
stress_ext_live_buffers(void)
{
	return atomic_load(&stress_ext_buffers);
}

uint64_t
stress_ext_live_bytes(void)
{
	return atomic_load(&stress_ext_bytes);
}
