/*
 * jemalloc.c - the default allocator of normal builds: a private jemalloc
 * arena, used with mallocx/sdallocx(MALLOCX_ARENA | MALLOCX_TCACHE_NONE) so
 * freed buffers go straight back to this arena's own decay policy.
 *
 * Only compiled into builds with COW_HAVE_JEMALLOC; sanitizer and fuzz
 * builds never link jemalloc (shared/TOOLCHAIN.md section 2.6).
 */
#include <pthread.h>

#include "alloc/allocator.h"
#include "core/error.h"

#ifdef COW_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>

static cow_allocator_t cow_jemalloc_allocator;
static unsigned cow_jemalloc_arena; /* Read-only after init. */
static bool cow_jemalloc_ready;     /* Read-only after init. */
static pthread_once_t cow_jemalloc_once = PTHREAD_ONCE_INIT;

static int
cow_jemalloc_flags(size_t alignment)
{
	/* alignment is a power of two; MALLOCX_LG_ALIGN avoids MALLOCX_ALIGN's
	 * use of ffs(), which strict POSIX mode does not declare. */
	return MALLOCX_LG_ALIGN((unsigned)__builtin_ctzll(alignment)) |
	    MALLOCX_ARENA(cow_jemalloc_arena) |
	    MALLOCX_TCACHE_NONE;
}

static void *
cow_jemalloc_alloc(void *state, size_t nbytes, size_t alignment)
{
	(void)state;
	return mallocx(nbytes, cow_jemalloc_flags(alignment));
}

static void
cow_jemalloc_free(void *state, void *ptr, size_t nbytes, size_t alignment)
{
	(void)state;
	sdallocx(ptr, nbytes, cow_jemalloc_flags(alignment));
}

static const cow_allocator_ops_t cow_jemalloc_ops = {
	.alloc = cow_jemalloc_alloc,
	.free = cow_jemalloc_free,
};

static void
cow_jemalloc_init(void)
{
	unsigned ind;
	size_t sz = sizeof ind;

	if (mallctl("arenas.create", &ind, &sz, NULL, 0) != 0 ||
	    sz != sizeof ind)
		return;
	cow_jemalloc_arena = ind;
	cow__allocator_init(&cow_jemalloc_allocator, &cow_jemalloc_ops, NULL,
	    "jemalloc", true);
	cow_jemalloc_ready = true;
}

cow_status_t
cow_allocator_jemalloc(cow_allocator_t **out)
{
	COW__CHECK_NOT_NULL(out);
	pthread_once(&cow_jemalloc_once, cow_jemalloc_init);
	if (!cow_jemalloc_ready)
		return cow__error(COW_ENOMEM, __func__,
		    "mallctl(\"arenas.create\") failed");
	*out = &cow_jemalloc_allocator;
	return COW_OK;
}

#else

cow_status_t
cow_allocator_jemalloc(cow_allocator_t **out)
{
	COW__CHECK_NOT_NULL(out);
	return cow__error(COW_ENOTSUP, __func__,
	    "this build of cowstore has no jemalloc (sanitizer, fuzz or "
	    "COW_WITH_JEMALLOC=OFF build)");
}

#endif
