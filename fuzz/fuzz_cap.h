/*
 * fuzz_cap.h - the capped user allocator of the tensor fuzz targets. It
 * refuses allocations above CAP_BYTES (so shapes of terabytes fail with
 * COW_ENOMEM instead of reaching the system allocator and libFuzzer's
 * malloc limit) and can fail one chosen allocation: with fail_in = k, the
 * k-th allocation from now returns NULL.
 */
#ifndef COW_FUZZ_CAP_H
#define COW_FUZZ_CAP_H

#include <stdlib.h>

#include <cowstore/alloc.h>

#define CAP_BYTES (1u << 20)

struct cap {
	unsigned fail_in;  /* 0: off; k: the k-th allocation from now fails */
	unsigned injected; /* failures injected so far */
};

static inline void *
cap_alloc(void *state, size_t nbytes, size_t alignment)
{
	struct cap *c = state;
	void *p = NULL;

	if (c->fail_in > 0 && --c->fail_in == 0) {
		c->injected++;
		return NULL;
	}
	if (nbytes > CAP_BYTES || posix_memalign(&p, alignment, nbytes) != 0)
		return NULL;
	return p;
}

static inline void
cap_free(void *state, void *ptr, size_t nbytes, size_t alignment)
{
	(void)state;
	(void)nbytes;
	(void)alignment;
	free(ptr);
}

/* The vtable for cow_allocator_new(&cap_ops, &a_struct_cap, ...). */
static const cow_allocator_ops_t cap_ops = {.alloc = cap_alloc, .free = cap_free};

#endif
