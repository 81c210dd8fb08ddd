/*
 * system.c - the system allocator (the C library's malloc) and the choice of
 * the default allocator.
 *
 * Small blocks come from posix_memalign. Blocks of SYSTEM_LARGE bytes
 * and more come from malloc or calloc with room to align them, the start of
 * the C library's block stored just below the aligned pointer: calloc knows
 * when its memory is fresh from the kernel (glibc serves such sizes with
 * mmap) and then does not write it, so a zero-filled storage costs no
 * resident memory until it is written. Which of the two a block came from
 * is a function of its size, which the sized free is given.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/allocator.h"

/* glibc's default mmap threshold: calloc skips the zeroing from here on. */
#define SYSTEM_LARGE ((size_t)128 << 10)

static bool
system_is_large(size_t nbytes)
{
	return nbytes >= SYSTEM_LARGE;
}

/* A large block: @nbytes aligned to @alignment (a power of two >= 16)
 * inside a C library block whose start is stored just below it. */
static void *
system_large(size_t nbytes, size_t alignment, bool zeroed)
{
	uintptr_t base, aligned;
	void *p;

	if (nbytes > SIZE_MAX - alignment)
		return NULL;
	p = zeroed ? calloc(1, nbytes + alignment) : malloc(nbytes + alignment);
	if (p == NULL)
		return NULL;
	/* malloc aligns to 16, so the first multiple of @alignment at least
	 * a pointer past the start is at most @alignment past it. */
	base = (uintptr_t)p;
	aligned = (base + sizeof(void *) + alignment - 1) &
	    ~(uintptr_t)(alignment - 1);
	memcpy((void *)(aligned - sizeof(void *)), &p, sizeof p);
	return (void *)aligned;
}

static void *
system_alloc(void *state, size_t nbytes, size_t alignment)
{
	void *p = NULL;

	(void)state;
	if (system_is_large(nbytes))
		return system_large(nbytes, alignment, false);
	if (posix_memalign(&p, alignment, nbytes) != 0)
		return NULL;
	return p;
}

static void *
system_alloc_zeroed(void *state, size_t nbytes, size_t alignment)
{
	void *p;

	if (system_is_large(nbytes))
		return system_large(nbytes, alignment, true);
	if ((p = system_alloc(state, nbytes, alignment)) != NULL)
		memset(p, 0, nbytes);
	return p;
}

static void
system_free(void *state, void *ptr, size_t nbytes, size_t alignment)
{
	void *base;

	(void)state;
	(void)alignment;
	if (system_is_large(nbytes)) {
		memcpy(&base, (char *)ptr - sizeof base, sizeof base);
		free(base);
		return;
	}
	free(ptr);
}

static const cow_allocator_ops_t system_ops = {
	.alloc = system_alloc,
	.free = system_free,
	.alloc_zeroed = system_alloc_zeroed,
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
	    "system", true, cow__budget_default_limit(),
	    COW__BUDGET_SLOT_SYSTEM);
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
