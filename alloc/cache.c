/*
 * cache.c - the per-thread small-block cache's slow paths: the first block
 * a thread keeps (which registers its flush at thread exit), and the flush.
 */
#include <pthread.h>

#include "alloc/allocator.h"
#include "alloc/cache.h"

_Thread_local struct cow__cache_list cow__cache_lists[COW__CACHE_CLASSES];
_Thread_local bool cow__cache_registered;

static cow_allocator_t *cache_owner; /* Read-only after its init. */
static pthread_key_t cache_key;      /* Read-only after init. */
static bool cache_key_ok;            /* Read-only after init. */
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

static void
cache_thread_exit(void *unused)
{
	(void)unused;
	cow__cache_flush();
	/* A destructor that runs after this one and frees again registers
	 * again (another destructor round). */
	cow__cache_registered = false;
}

static void
cache_key_init(void)
{
	cache_key_ok = pthread_key_create(&cache_key,
	    cache_thread_exit) == 0;
}

/* Unloading the library must not leave a destructor pointing into it. */
__attribute__((destructor)) static void
cache_unload(void)
{
	if (cache_key_ok)
		pthread_key_delete(cache_key);
	cache_key_ok = false;
}

void
cow__cache_init(cow_allocator_t *a)
{
	pthread_once(&cache_once, cache_key_init);
	cache_owner = a;
}

bool
cow__cache_keep_slow(void *p, unsigned cls)
{
	struct cow__cache_list *l = &cow__cache_lists[cls];

	if (l->n >= COW__CACHE_DEPTH)
		return false;
	/* Only a thread whose blocks will be flushed when it exits keeps
	 * any. */
	if (!cow__cache_registered) {
		if (!cache_key_ok ||
		    pthread_setspecific(cache_key, &cache_key) != 0)
			return false;
		cow__cache_registered = true;
	}
	*(void **)p = l->head;
	l->head = p;
	l->n++;
	return true;
}

void
cow__cache_flush(void)
{
	cow_allocator_t *a = cache_owner;

	for (unsigned c = 0; c < COW__CACHE_CLASSES; c++) {
		struct cow__cache_list *l = &cow__cache_lists[c];
		size_t size = (size_t)(c + 1) << 6;

		while (l->head != NULL) {
			void *p = l->head;

			l->head = *(void **)p;
			a->ops->free(a->state, p, size, COW_MIN_ALIGNMENT);
		}
		l->n = 0;
	}
}
