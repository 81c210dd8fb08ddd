/*
 * system.c - the system allocator (posix_memalign/free) and the choice of
 * the default allocator.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>

#include "alloc/allocator.h"

static void *
cow_system_alloc(void *state, size_t nbytes, size_t alignment)
{
	void *p = NULL;

	(void)state;
	if (posix_memalign(&p, alignment, nbytes) != 0)
		return NULL;
	return p;
}

static void
cow_system_free(void *state, void *ptr, size_t nbytes, size_t alignment)
{
	(void)state;
	(void)nbytes;
	(void)alignment;
	free(ptr);
}

static const cow_allocator_ops_t cow_system_ops = {
	.alloc = cow_system_alloc,
	.free = cow_system_free,
};

static cow_status_t
cow_system_trim(cow_allocator_t *self)
{
	(void)self;
	malloc_trim(0);
	return COW_OK;
}

static cow_allocator_t cow_system_allocator;
static pthread_once_t cow_system_once = PTHREAD_ONCE_INIT;

static void
cow_system_init(void)
{
	cow__allocator_init(&cow_system_allocator, &cow_system_ops, NULL,
	    "system", true);
	cow_system_allocator.trim = cow_system_trim;
}

cow_allocator_t *
cow_allocator_system(void)
{
	pthread_once(&cow_system_once, cow_system_init);
	return &cow_system_allocator;
}

cow_allocator_t *
cow_allocator_default(void)
{
	cow_allocator_t *a = cow__jemalloc_get();

	return a != NULL ? a : cow_allocator_system();
}
