/*
 * cowstore allocators: one interface for every storage's data and metadata.
 *
 * An allocator is an opaque handle over a small vtable (cow_allocator_ops_t)
 * that users may implement. The library counts every allocation made through
 * a handle (live bytes, allocations, frees, failures), whatever the back end.
 *
 * Lifetime rule: an allocator must outlive every storage that uses it.
 * cow_allocator_destroy() refuses (COW_EBUSY) while allocations are live.
 *
 * Memory budget: every handle has a byte limit (cow_allocator_set_limit);
 * a request over what is left fails with COW_ENOMEM, naming the limit,
 * before the back end is called. The built-in allocators start with three
 * quarters of physical memory (COW_MEMORY_LIMIT_MB overrides it), the
 * others with none.
 *
 * Back ends shipped:
 * - jemalloc: a private jemalloc arena (mallocx/sdallocx with MALLOCX_ARENA)
 *   from the library's own copy of jemalloc, whose names are all prefixed
 *   and hidden: it never replaces the host's malloc. Present only in builds
 *   configured with jemalloc (normal builds).
 * - system: the C library's malloc. Used by default in sanitizer, fuzz and
 *   -DCOW_WITH_JEMALLOC=OFF builds.
 * - fault: wraps another allocator and fails chosen allocations, for
 *   testing out-of-memory paths; its functions (cow_allocator_fault_*) are
 *   declared in testing.h, which cowstore.h does not include.
 */
#ifndef COWSTORE_ALLOC_H
#define COWSTORE_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every buffer the library asks for is aligned to at least this. */
#define COW_MIN_ALIGNMENT 64

typedef struct cow_allocator_s cow_allocator_t;

/*
 * The vtable a user implements. The functions may be called from any thread
 * at the same time; they must be thread-safe.
 * - alloc: return nbytes (> 0) bytes aligned to alignment (a power of two,
 *   at least COW_MIN_ALIGNMENT), or NULL on failure.
 * - free: release a block from alloc or alloc_zeroed; nbytes and alignment
 *   are the values passed to it (a sized free).
 * - alloc_zeroed (optional, may be NULL): as alloc, but the bytes read as
 *   zero, as calloc does; an allocator that knows fresh pages are zero can
 *   skip writing them. When NULL the library calls alloc and zeroes the
 *   block itself (cow_storage_new).
 */
typedef struct cow_allocator_ops_s {
	void *(*alloc)(void *state, size_t nbytes, size_t alignment);
	void (*free)(void *state, void *ptr, size_t nbytes, size_t alignment);
	void *(*alloc_zeroed)(void *state, size_t nbytes, size_t alignment);
} cow_allocator_ops_t;

/* Counters kept for every allocator handle. */
typedef struct cow_alloc_stats_s {
	uint64_t allocs;      /* successful allocations */
	uint64_t frees;       /* frees */
	uint64_t failures;    /* allocations that returned NULL */
	uint64_t live_allocs; /* allocs - frees */
	uint64_t live_bytes;  /* bytes allocated and not yet freed */
	uint64_t total_bytes; /* bytes ever allocated */
} cow_alloc_stats_t;

/**
 * cow_allocator_new - wrap a user vtable in a counted allocator handle.
 * @ops: the vtable; must stay valid until the handle is destroyed.
 * @state: passed to every ops call; owned by the caller.
 * @name: copied (at most 31 characters are kept); NULL is invalid.
 * @out: receives the handle on success.
 * Ownership: the caller owns the handle and destroys it with
 * cow_allocator_destroy() after every storage using it is released.
 * Thread-safety: any thread. Errors: COW_EINVAL (NULL argument or NULL
 * function in ops), COW_ENOMEM.
 */
COW_API cow_status_t cow_allocator_new(const cow_allocator_ops_t *ops,
    void *state, const char *name, cow_allocator_t **out);

/**
 * cow_allocator_destroy - destroy a handle made by cow_allocator_new() or
 * cow_allocator_fault_new() (testing.h).
 * Ownership: on COW_OK the handle is freed (a fault allocator's state too;
 * its @inner and a user allocator's @state stay the caller's).
 * Thread-safety: no other thread may use the handle at the same time.
 * Errors: COW_EINVAL (NULL, or a built-in allocator, which is never
 * destroyed), COW_EBUSY (allocations still live; nothing is destroyed).
 */
COW_API cow_status_t cow_allocator_destroy(cow_allocator_t *allocator);

/**
 * cow_allocator_default - the allocator used when a caller passes NULL:
 * jemalloc in builds with jemalloc, system otherwise.
 * Ownership: a process-wide singleton; never destroy it.
 * Thread-safety: any thread; initialised once on first use.
 * Errors: none (records no error). If the jemalloc arena cannot be created
 * (or the build has no jemalloc) the default is the system allocator, and
 * cow_allocator_name() says "system".
 */
COW_API cow_allocator_t *cow_allocator_default(void);

/**
 * cow_allocator_system - the posix_memalign/free allocator.
 * Ownership: process-wide singleton. Thread-safety: any thread. Errors: none.
 */
COW_API cow_allocator_t *cow_allocator_system(void);

/**
 * cow_allocator_jemalloc - the allocator over the library's private jemalloc
 * arena.
 * Ownership: *out is a process-wide singleton; never destroy it.
 * Thread-safety: any thread; initialised once on first use.
 * Errors: COW_EINVAL (out NULL), COW_ENOTSUP when the library was built
 * without jemalloc (every sanitizer and fuzz build), COW_ENOMEM when the
 * arena cannot be created.
 */
COW_API cow_status_t cow_allocator_jemalloc(cow_allocator_t **out);

/**
 * cow_allocator_name - the allocator's name ("jemalloc", "system", "fault",
 * or the user's). Ownership: borrowed from the handle (valid while it
 * lives). Thread-safety: any thread. Errors: none; NULL gives "".
 */
COW_API const char *cow_allocator_name(const cow_allocator_t *allocator);

/**
 * cow_allocator_stats - read the allocator's counters.
 * Thread-safety: any thread; each counter is read atomically, but the set is
 * not a snapshot while other threads allocate.
 * Errors: COW_EINVAL (NULL allocator or out).
 */
COW_API cow_status_t cow_allocator_stats(const cow_allocator_t *allocator,
    cow_alloc_stats_t *out);

/**
 * cow_allocator_alloc / cow_allocator_free - allocate and free through a
 * handle directly (counted like the library's own allocations).
 * alloc: nbytes > 0, alignment a power of two (raised to COW_MIN_ALIGNMENT).
 * free takes the same nbytes and alignment.
 * Ownership: the block is the caller's until cow_allocator_free() on the
 * same handle; while it is live, cow_allocator_destroy() refuses.
 * Thread-safety: any thread.
 * Errors: alloc returns NULL and sets cow_last_error() (invalid argument:
 * NULL handle, nbytes 0, alignment not a power of two; nbytes above
 * PTRDIFF_MAX; out of memory). free: none; a NULL handle or ptr does nothing.
 */
COW_API void *cow_allocator_alloc(cow_allocator_t *allocator, size_t nbytes,
    size_t alignment);
COW_API void cow_allocator_free(cow_allocator_t *allocator, void *ptr,
    size_t nbytes, size_t alignment);

/**
 * cow_allocator_trim - hand memory the allocator keeps for reuse back to the
 * operating system now (jemalloc: the calling thread's cache of small freed
 * blocks, then the private arena's dirty pages; system: malloc_trim). Live
 * allocations are untouched. The next large allocations pay page faults
 * again.
 * Thread-safety: any thread.
 * Errors: COW_EINVAL (NULL), COW_ENOTSUP (jemalloc refused the purge); a
 * user or fault allocator has nothing to trim and returns COW_OK.
 */
COW_API cow_status_t cow_allocator_trim(cow_allocator_t *allocator);

/* cow_allocator_limit's value for "no limit". */
#define COW_ALLOCATOR_NO_LIMIT SIZE_MAX

/**
 * cow_allocator_set_limit - set the allocator's byte limit: the bytes live
 * through this handle (as requested, storage structs and data alike) never
 * exceed it. A request that would go over fails with COW_ENOMEM and a
 * message naming the limit, without calling the back end. Lowering the
 * limit below what is live frees nothing; requests fail until enough is
 * released. COW_ALLOCATOR_NO_LIMIT removes the limit.
 * Defaults: the built-in allocators (system, jemalloc) start at three
 * quarters of physical memory, or COW_MEMORY_LIMIT_MB MiB when that
 * environment variable is set when they are first used (0: no limit);
 * user and fault allocators start with no limit.
 * Exactness: a built-in allocator charges small requests (16 KiB or less)
 * to a per-thread credit drawn in 256 KiB chunks, so it may refuse a
 * request up to 512 KiB per thread early; never late.
 * Thread-safety: any thread (atomic stores, the epoch's with release).
 * Every request ordered after the call's return sees the new limit: a
 * later request of the calling thread, or of a thread that synchronised
 * with it afterwards (a lock, a join, an acquire that reads what it
 * released). Requests not so ordered may see the old limit or the new one,
 * on any thread and any machine.
 * Errors: COW_EINVAL (NULL).
 */
COW_API cow_status_t cow_allocator_set_limit(cow_allocator_t *allocator,
    size_t bytes);

/**
 * cow_allocator_limit - the allocator's byte limit (COW_ALLOCATOR_NO_LIMIT
 * when it has none). Thread-safety: any thread (an atomic load).
 * Errors: none; NULL gives 0.
 */
COW_API size_t cow_allocator_limit(const cow_allocator_t *allocator);

/* The default retention cap of the jemalloc allocator is 1/16 of physical
 * memory, and at most this many bytes. */
#define COW_RETAIN_LIMIT_MAX ((size_t)256 << 20)

/**
 * cow_allocator_set_retain_limit - cap the freed memory a jemalloc allocator
 * keeps mapped for reuse. The arena never purges on a timer (so steady-state
 * copies reuse warm pages instead of faulting fresh ones); instead, each
 * time a quarter of the cap has been freed, it measures the retained pages
 * and, above @bytes, purges them all. 0 purges on every check.
 * The environment variable COW_RETAIN_LIMIT_MB sets the initial limit
 * (default: 1/16 of physical memory, at most COW_RETAIN_LIMIT_MAX, 256 MiB;
 * cow_allocator_retain_limit reads it). The same allocator advises
 * buffers of 2 MiB and more for transparent huge pages (fewer page faults
 * on fresh memory; COW_THP=0 in the environment turns that off).
 * COW_JEMALLOC_DECAY_MS=N in the environment restores timed purging (the
 * arena's dirty and muzzy decay, in ms; -1, the default, is never).
 * Thread-safety: any thread (an atomic store).
 * Errors: COW_EINVAL (NULL), COW_ENOTSUP (not a jemalloc allocator).
 */
COW_API cow_status_t cow_allocator_set_retain_limit(cow_allocator_t *allocator,
    size_t bytes);

/**
 * cow_allocator_retain_limit - the retention cap of a jemalloc allocator
 * (cow_allocator_set_retain_limit), 0 for others.
 * Thread-safety: any thread (an atomic load). Errors: none; NULL gives 0.
 */
COW_API size_t cow_allocator_retain_limit(cow_allocator_t *allocator);

/**
 * cow_allocator_retained_bytes - freed memory the allocator keeps mapped for
 * reuse (jemalloc: the arena's dirty and muzzy pages), 0 for others.
 * Thread-safety: any thread (refreshes jemalloc's statistics epoch).
 * Errors: none; NULL gives 0.
 */
COW_API size_t cow_allocator_retained_bytes(cow_allocator_t *allocator);

#ifdef __cplusplus
}
#endif
#endif
