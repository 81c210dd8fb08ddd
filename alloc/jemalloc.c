/*
 * jemalloc.c - the default allocator of normal builds: a private jemalloc
 * arena, used with mallocx/sdallocx(MALLOCX_ARENA | MALLOCX_TCACHE_NONE) so
 * freed buffers go straight back to this arena and its own policy.
 *
 * The jemalloc is the library's own copy (cmake/jemalloc.cmake): every name
 * is prefixed cow__je_ and hidden in libcowstore.so, so it never replaces or
 * meets the host's malloc, and its TLS is global-dynamic, so the library
 * loads with dlopen.
 *
 * Tuning (measured in docs/performance.md): materialisation is a copy into a
 * fresh buffer, and fresh pages cost a page fault each. jemalloc's defaults
 * purge large freed extents at once (and the rest after 10 s), so a steady
 * stream of 64 MiB copies would fault every page, every time. This arena
 * never purges on a timer (dirty_decay_ms = muzzy_decay_ms = -1): freed
 * buffers stay mapped and warm for the next copy. A retention cap bounds
 * that memory: every time a quarter of the cap has been freed, the arena's
 * retained pages are measured, and above the cap they are all purged. The
 * default cap is 1/16 of physical memory, at most COW_RETAIN_LIMIT_MAX.
 *
 * Small allocations (storage and context structs, up to
 * SMALL_MAX bytes) take jemalloc's fast path instead: malloc
 * and a sized free with no flags, from the private jemalloc's automatic
 * arenas through its per-thread cache. mallocx with an arena, an explicit
 * tcache or an alignment takes jemalloc's general path, which cost more
 * than the rest of a lazy clone (docs/performance.md). The size is rounded
 * up to a multiple of 64, which gives 64-byte alignment: small regions sit
 * at multiples of their size class from a page-aligned slab, and every
 * class a multiple of 64 rounds to is itself a multiple of 64 (checked on
 * every such allocation in debug builds). Large buffers use this arena with
 * no cache and return to it at once.
 *
 * Buffers of 2 MiB and more are advised for transparent huge pages
 * (madvise MADV_HUGEPAGE on their 2 MiB-aligned interior), which makes a
 * copy into fresh memory fault once per 2 MiB instead of once per 4 KiB.
 * It matters when the system's THP mode is "madvise" (Debian's default);
 * COW_THP=0 in the environment turns it off.
 *
 * Only compiled into builds with COW_HAVE_JEMALLOC; sanitizer and fuzz
 * builds never link jemalloc (shared/TOOLCHAIN.md section 2.6).
 */
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "alloc/allocator.h"
#include "alloc/cache.h"
#include "core/atomic.h"
#include "core/error.h"
#include "core/fork.h"

#ifdef COW_HAVE_JEMALLOC
/* The private build (cmake/jemalloc.cmake): every name is prefixed. */
#include "cow_jemalloc.h"

static cow_allocator_t jemalloc_allocator;
static unsigned jemalloc_arena; /* Read-only after init. */
static size_t jemalloc_page = 4096; /* Read-only after init. */
static bool jemalloc_ready;     /* Read-only after init. */
static pthread_once_t jemalloc_once = PTHREAD_ONCE_INIT;
/* Synchronization: atomic (relaxed). */
static cow__atomic_u64_t jemalloc_retain_limit;
static cow__atomic_u64_t jemalloc_freed_since_check;

static bool jemalloc_thp;       /* Read-only after init. */

/* Fork (core/fork.h). The private jemalloc is configured without its own
 * pthread_atfork handlers (cmake/jemalloc.cmake), and the library's runs
 * them as its innermost rank instead: a thread may allocate while it holds
 * one of the library's locks, and never waits for one inside jemalloc, so
 * jemalloc's locks are taken last. The names are its private namespace's. */
void cow__je_je_jemalloc_prefork(void);
void cow__je_je_jemalloc_postfork_parent(void);
void cow__je_je_jemalloc_postfork_child(void);

static const struct cow__fork_hooks jemalloc_fork_hooks = {
	.prepare = cow__je_je_jemalloc_prefork,
	.parent = cow__je_je_jemalloc_postfork_parent,
	.child = cow__je_je_jemalloc_postfork_child
};

/* Huge page size, and the smallest buffer advised for huge pages. */
#define HUGE_PAGE_SIZE ((uintptr_t)2 << 20)

/* Allocations up to this size (with alignment up to 64) take jemalloc's
 * malloc fast path; larger ones the arena. */
#define SMALL_MAX ((size_t)16 << 10)
#define SMALL_ALIGN ((size_t)64)

static inline bool
jemalloc_is_small(size_t nbytes, size_t alignment)
{
	return nbytes <= SMALL_MAX &&
	    alignment <= SMALL_ALIGN;
}

static inline size_t
jemalloc_small_size(size_t nbytes)
{
	return (nbytes + SMALL_ALIGN - 1) &
	    ~(SMALL_ALIGN - 1);
}

static int
jemalloc_flags(size_t nbytes, size_t alignment)
{
	/* alignment is a power of two; MALLOCX_LG_ALIGN avoids MALLOCX_ALIGN's
	 * use of ffs(), which strict POSIX mode does not declare. */
	(void)nbytes;
	return MALLOCX_LG_ALIGN((unsigned)__builtin_ctzll(alignment)) |
	    MALLOCX_ARENA(jemalloc_arena) | MALLOCX_TCACHE_NONE;
}

static int
jemalloc_arena_ctl(const char *leaf, void *oldp, size_t *oldlen,
    void *newp, size_t newlen)
{
	char name[64];

	snprintf(name, sizeof name, "arena.%u.%s", jemalloc_arena, leaf);
	return cow__je_mallctl(name, oldp, oldlen, newp, newlen);
}

static size_t
jemalloc_retained(cow_allocator_t *self)
{
	uint64_t epoch = 1;
	size_t sz = sizeof epoch, pdirty = 0, pmuzzy = 0;
	char name[64];

	(void)self;
	cow__je_mallctl("epoch", &epoch, &sz, &epoch, sz);
	sz = sizeof pdirty;
	snprintf(name, sizeof name, "stats.arenas.%u.pdirty",
	    jemalloc_arena);
	cow__je_mallctl(name, &pdirty, &sz, NULL, 0);
	sz = sizeof pmuzzy;
	snprintf(name, sizeof name, "stats.arenas.%u.pmuzzy",
	    jemalloc_arena);
	cow__je_mallctl(name, &pmuzzy, &sz, NULL, 0);
	return (pdirty + pmuzzy) * jemalloc_page;
}

static cow_status_t
jemalloc_trim(cow_allocator_t *self)
{
	(void)self;
	/* Named by this function, not by cow_allocator_trim. */
	if (jemalloc_arena_ctl("purge", NULL, NULL, NULL, 0) != 0)
		return COW__NAMED(cow__error(COW_ENOTSUP,
		    "mallctl(\"arena.%u.purge\") failed", jemalloc_arena));
	return COW_OK;
}

static cow_status_t
jemalloc_set_retain_limit(cow_allocator_t *self, size_t bytes)
{
	(void)self;
	cow__atomic_store_relaxed(&jemalloc_retain_limit, bytes);
	return COW_OK;
}

static size_t
jemalloc_get_retain_limit(cow_allocator_t *self)
{
	uint64_t limit = cow__atomic_load_relaxed(&jemalloc_retain_limit);

	(void)self;
	return limit >= (uint64_t)SIZE_MAX ? SIZE_MAX : (size_t)limit;
}

/* The default retention cap: 1/16 of physical memory, at most
 * COW_RETAIN_LIMIT_MAX (that bound if physical memory is unknown). */
static uint64_t
jemalloc_default_retain_limit(void)
{
	uint64_t ram = cow__physical_memory();

	if (ram == 0 || ram / 16 > COW_RETAIN_LIMIT_MAX)
		return COW_RETAIN_LIMIT_MAX;
	return ram / 16;
}

/* Called after each free: enforce the retention cap, amortised. */
static void
jemalloc_after_free(size_t nbytes)
{
	uint64_t limit = cow__atomic_load_relaxed(&jemalloc_retain_limit);
	uint64_t freed = cow__atomic_fetch_add_relaxed(&jemalloc_freed_since_check,
	    nbytes) + nbytes;

	if (freed < limit / 4)
		return;
	/* One thread wins the check; the others carry on. */
	if (!cow__atomic_cas_relaxed(&jemalloc_freed_since_check, freed, 0))
		return;
	if (jemalloc_retained(NULL) > limit)
		jemalloc_arena_ctl("purge", NULL, NULL, NULL, 0);
}

/* Advise the whole huge pages inside [p, p + nbytes) for THP. */
static void
jemalloc_advise_huge(void *p, size_t nbytes)
{
#ifdef MADV_HUGEPAGE
	uintptr_t mask = HUGE_PAGE_SIZE - 1;
	uintptr_t lo = ((uintptr_t)p + mask) & ~mask;
	uintptr_t hi = ((uintptr_t)p + nbytes) & ~mask;

	if (hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
	(void)p;
	(void)nbytes;
#endif
}

static void *
jemalloc_alloc_flags(size_t nbytes, int flags)
{
	void *p = cow__je_mallocx(nbytes, flags);

	if (p != NULL && jemalloc_thp && nbytes >= HUGE_PAGE_SIZE)
		jemalloc_advise_huge(p, nbytes);
	return p;
}

static void *
jemalloc_alloc_small(size_t nbytes)
{
	void *p = cow__je_malloc(jemalloc_small_size(nbytes));

	assert(((uintptr_t)p & (SMALL_ALIGN - 1)) == 0);
	return p;
}

static void *
jemalloc_alloc(void *state, size_t nbytes, size_t alignment)
{
	(void)state;
	if (jemalloc_is_small(nbytes, alignment))
		return jemalloc_alloc_small(nbytes);
	return jemalloc_alloc_flags(nbytes,
	    jemalloc_flags(nbytes, alignment));
}

/* MALLOCX_ZERO: jemalloc knows which pages are fresh from the kernel (and
 * so already zero) and writes only the others, like calloc. */
static void *
jemalloc_alloc_zeroed(void *state, size_t nbytes, size_t alignment)
{
	void *p;

	(void)state;
	if (jemalloc_is_small(nbytes, alignment)) {
		if ((p = jemalloc_alloc_small(nbytes)) != NULL)
			memset(p, 0, nbytes);
		return p;
	}
	return jemalloc_alloc_flags(nbytes,
	    jemalloc_flags(nbytes, alignment) | MALLOCX_ZERO);
}

static void
jemalloc_free(void *state, void *ptr, size_t nbytes, size_t alignment)
{
	(void)state;
	if (jemalloc_is_small(nbytes, alignment)) {
		cow__je_sdallocx(ptr, jemalloc_small_size(nbytes), 0);
		return;
	}
	cow__je_sdallocx(ptr, nbytes, jemalloc_flags(nbytes, alignment));
	jemalloc_after_free(nbytes);
}

static const cow_allocator_ops_t jemalloc_ops = {
	.alloc = jemalloc_alloc,
	.free = jemalloc_free,
	.alloc_zeroed = jemalloc_alloc_zeroed,
};

static void
jemalloc_init(void)
{
	ssize_t decay = -1; /* never purge on a timer */
	unsigned ind;
	size_t sz = sizeof ind;
	const char *env = getenv("COW_RETAIN_LIMIT_MB");
	const char *thp = getenv("COW_THP");
	const char *decay_env = getenv("COW_JEMALLOC_DECAY_MS");

	if (cow__je_mallctl("arenas.create", &ind, &sz, NULL, 0) != 0 ||
	    sz != sizeof ind)
		return;
	/* jemalloc is initialised now; a fork from here on takes its locks. */
	cow__fork_register(COW__RANK_ALLOCATOR, &jemalloc_fork_hooks);
	jemalloc_arena = ind;
	sz = sizeof jemalloc_page;
	cow__je_mallctl("arenas.page", &jemalloc_page, &sz, NULL, 0);
	/* No timed purging; the retention cap bounds the memory instead.
	 * COW_JEMALLOC_DECAY_MS overrides it (docs/performance.md measures
	 * 0, jemalloc's default 10000, and never). */
	if (decay_env != NULL && *decay_env != '\0')
		decay = (ssize_t)strtoll(decay_env, NULL, 10);
	jemalloc_arena_ctl("dirty_decay_ms", NULL, NULL, &decay,
	    sizeof decay);
	jemalloc_arena_ctl("muzzy_decay_ms", NULL, NULL, &decay,
	    sizeof decay);
	cow__atomic_store_relaxed(&jemalloc_retain_limit,
	    env != NULL && *env != '\0' ?
	    (uint64_t)strtoull(env, NULL, 10) << 20 :
	    jemalloc_default_retain_limit());
	jemalloc_thp = thp == NULL || strcmp(thp, "0") != 0;
	cow__allocator_init(&jemalloc_allocator, &jemalloc_ops, NULL,
	    "jemalloc", true, cow__budget_default_limit(),
	    COW__BUDGET_SLOT_JEMALLOC);
	jemalloc_allocator.trim = jemalloc_trim;
	jemalloc_allocator.set_retain_limit =
	    jemalloc_set_retain_limit;
	jemalloc_allocator.retained_bytes = jemalloc_retained;
	jemalloc_allocator.retain_limit = jemalloc_get_retain_limit;
	/* Its small blocks are rounded to multiples of 64, the cache's size
	 * classes, so a cached block can be freed with its class size. */
	cow__cache_init(&jemalloc_allocator);
	jemalloc_allocator.cache_ok = true;
	jemalloc_ready = true;
}

cow_allocator_t *
cow__jemalloc_get(void)
{
	pthread_once(&jemalloc_once, jemalloc_init);
	return jemalloc_ready ? &jemalloc_allocator : NULL;
}

cow_status_t
cow_allocator_jemalloc(cow_allocator_t **out)
{
	cow_allocator_t *a;

	COW__RETURN_IF_NULL(out);
	if ((a = cow__jemalloc_get()) == NULL)
		return COW__NAMED(cow__error(COW_ENOMEM,
		    "mallctl(\"arenas.create\") failed"));
	*out = a;
	return COW_OK;
}

#else

cow_allocator_t *
cow__jemalloc_get(void)
{
	return NULL;
}

cow_status_t
cow_allocator_jemalloc(cow_allocator_t **out)
{
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(cow__error(COW_ENOTSUP,
	    "this build of cowstore has no jemalloc (sanitizer, fuzz or "
	    "COW_WITH_JEMALLOC=OFF build)"));
}

#endif
