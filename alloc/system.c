/*
 * system.c - the system allocator (posix_memalign/free) and the choice of
 * the default allocator.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>

#include "alloc/allocator.h"

static void *
system_alloc(void *state, size_t nbytes, size_t alignment)
{
	void *p = NULL;

	(void)state;
	if (posix_memalign(&p, alignment, nbytes) != 0)
		return NULL;
	return p;
}

static void
system_free(void *state, void *ptr, size_t nbytes, size_t alignment)
{
	(void)state;
	(void)nbytes;
	(void)alignment;
	free(ptr);
}

static const cow_allocator_ops_t system_ops = {
	.alloc = system_alloc,
	.free = system_free,
};

static cow_status_t
system_trim(cow_allocator_t *self)
{
	(void)self;
	malloc_trim(0);
	return COW_OK;
}

static cow_allocator_t system_allocator;
static pthread_once_t system_once = PTHREAD_ONCE_INIT;

static void
system_init(void)
{
	cow__allocator_init(&system_allocator, &system_ops, NULL,
	    "system", true);
	system_allocator.trim = system_trim;
}

cow_allocator_t *
cow_allocator_system(void)
{
	pthread_once(&system_once, system_init);
	return &system_allocator;
}

cow_allocator_t *
cow_allocator_default(void)
{
	cow_allocator_t *a = cow__jemalloc_get();

	return a != NULL ? a : cow_allocator_system();
}
