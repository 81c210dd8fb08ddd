/*
 * cache.h - a per-thread cache of small freed blocks for the built-in
 * jemalloc allocator: the storage structs and COW contexts that every lazy
 * clone allocates and every release frees.
 *
 * A freed block of at most COW__CACHE_MAX_SIZE bytes goes onto the freeing
 * thread's list for its size class (multiples of 64 bytes), up to
 * COW__CACHE_DEPTH blocks a class; the thread's next allocation of that
 * class takes it back. That skips the back end's allocation call entirely
 * (docs/performance.md measures what it saves). The handle still counts
 * and charges every allocation and free (allocator.c): a cached block is
 * free in the statistics and the budget. A thread's blocks go back to the
 * back end when it exits, and when it calls cow_allocator_trim.
 *
 * Only for a built-in handle that is never destroyed, and only the jemalloc
 * one: the system allocator (sanitizer and valgrind builds) keeps every
 * allocation visible to the tools that check it.
 */
#ifndef COW_ALLOC_CACHE_H
#define COW_ALLOC_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include <cowstore/alloc.h>

/* Blocks up to this size (and alignment up to 64) are cached. */
#define COW__CACHE_MAX_SIZE ((size_t)256)
#define COW__CACHE_CLASSES 4
/* Blocks kept per class and thread. */
#define COW__CACHE_DEPTH 32

struct cow__cache_list {
	void *head;    /* freed blocks, linked through their first word */
	unsigned n;
};

/* The calling thread's lists (of the one caching handle), and whether
 * the thread's flush at exit is registered (it keeps nothing before). */
extern _Thread_local struct cow__cache_list
    cow__cache_lists[COW__CACHE_CLASSES];
extern _Thread_local bool cow__cache_registered;

/* Make @a the caching handle (its init; before any use). */
void cow__cache_init(cow_allocator_t *a);

static inline bool
cow__cache_fits(size_t nbytes, size_t alignment)
{
	return nbytes <= COW__CACHE_MAX_SIZE && alignment <= 64;
}

static inline unsigned
cow__cache_class(size_t nbytes)
{
	return (unsigned)((nbytes - 1) >> 6);
}

/* Is a block cached for @nbytes (> 0, fits)? */
static inline bool
cow__cache_peek(size_t nbytes)
{
	return cow__cache_lists[cow__cache_class(nbytes)].head != NULL;
}

/* A cached block for @nbytes (> 0, fits), or NULL. */
static inline void *
cow__cache_take(size_t nbytes)
{
	struct cow__cache_list *l = &cow__cache_lists[cow__cache_class(nbytes)];
	void *p = l->head;

	if (p != NULL) {
		l->head = *(void **)p;
		l->n--;
	}
	return p;
}

/* Keep @p (from an allocation of @nbytes, fits); false when the list is
 * full and the caller must free it. */
bool cow__cache_keep_slow(void *p, unsigned cls);

static inline bool
cow__cache_keep(void *p, size_t nbytes)
{
	unsigned cls = cow__cache_class(nbytes);
	struct cow__cache_list *l = &cow__cache_lists[cls];

	if (!cow__cache_registered || l->n >= COW__CACHE_DEPTH)
		return cow__cache_keep_slow(p, cls);
	*(void **)p = l->head;
	l->head = p;
	l->n++;
	return true;
}

/* Give the calling thread's blocks back to the back end. */
void cow__cache_flush(void);

#endif
