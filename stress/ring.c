/*
 * ring.c - ck_ring (MPMC mode only: ck forbids mixing modes on one ring)
 * annotated for ThreadSanitizer.
 *
 * The rule that only runtime/core/ includes ck applies to the library; the
 * harness uses ck_ring here, behind this one wrapper (the one exception
 * tests/layers/check_includes.cmake allows outside the tests' controls).
 *
 * ck_ring orders the hand-off with ck_pr atomics, which on x86_64 are inline
 * assembly TSan cannot see, so TSan sees neither edge:
 * - the item: __tsan_release(item) before the enqueue and
 *   __tsan_acquire(item) after the dequeue give TSan the happens-before
 *   edge from the producer's work on the item to the consumer's;
 * - the ring's own slots: ck copies the pointer into and out of its buffer
 *   with plain memcpy, which TSan does see, ordered only by those invisible
 *   atomics. A probe (2 x mpmc enqueue/dequeue with release/acquire only)
 *   reported a race on the slot inside _ck_ring_dequeue_mc. The accesses
 *   inside the ck_ring calls are therefore hidden from TSan
 *   (__tsan_ignore_thread_begin/end around the ck call only). This covers
 *   ck_ring internals and nothing of the project's code: the items
 *   themselves are still checked, and a probe without the acquire was still
 *   reported.
 */
#include <stdlib.h>

#include <ck_ring.h>

#include "harness.h"
#include "ring.h"

#ifdef STRESS_TSAN
#include <sanitizer/tsan_interface.h>
/* Exported by the TSan runtime; not declared in clang 14's header. */
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
#define STRESS_TSAN_RELEASE(p) __tsan_release(p)
#define STRESS_TSAN_ACQUIRE(p) __tsan_acquire(p)
#define STRESS_TSAN_IGNORE_BEGIN() __tsan_ignore_thread_begin()
#define STRESS_TSAN_IGNORE_END() __tsan_ignore_thread_end()
#else
#define STRESS_TSAN_RELEASE(p) ((void)0)
#define STRESS_TSAN_ACQUIRE(p) ((void)0)
#define STRESS_TSAN_IGNORE_BEGIN() ((void)0)
#define STRESS_TSAN_IGNORE_END() ((void)0)
#endif

struct stress_ring {
	ck_ring_t ring;           /* Synchronization: ck_ring (MPMC). */
	ck_ring_buffer_t *slots;  /* Synchronization: ck_ring. */
};

struct stress_ring *
stress_ring_new(unsigned capacity)
{
	struct stress_ring *r = malloc(sizeof *r);

	if (r == NULL)
		return NULL;
	r->slots = calloc(capacity, sizeof *r->slots);
	if (r->slots == NULL) {
		free(r);
		return NULL;
	}
	ck_ring_init(&r->ring, capacity);
	return r;
}

void
stress_ring_free(struct stress_ring *r)
{
	if (r == NULL)
		return;
	free(r->slots);
	free(r);
}

bool
stress_ring_put(struct stress_ring *r, void *item)
{
	bool ok;

	STRESS_TSAN_RELEASE(item);
	STRESS_TSAN_IGNORE_BEGIN();
	ok = ck_ring_enqueue_mpmc(&r->ring, r->slots, item);
	STRESS_TSAN_IGNORE_END();
	return ok;
}

void *
stress_ring_get(struct stress_ring *r)
{
	void *item = NULL;
	bool ok;

	STRESS_TSAN_IGNORE_BEGIN();
	ok = ck_ring_dequeue_mpmc(&r->ring, r->slots, &item);
	STRESS_TSAN_IGNORE_END();
	if (!ok)
		return NULL;
	STRESS_TSAN_ACQUIRE(item);
	return item;
}

unsigned
stress_ring_count(struct stress_ring *r)
{
	unsigned n;

	STRESS_TSAN_IGNORE_BEGIN();
	n = ck_ring_size(&r->ring);
	STRESS_TSAN_IGNORE_END();
	return n;
}
