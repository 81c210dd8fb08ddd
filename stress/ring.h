/*
 * ring.h - the tensor-mix hand-off queue: a multi-producer, multi-consumer
 * ring of pointers over ck_ring, made visible to ThreadSanitizer.
 */
#ifndef COW_STRESS_RING_H
#define COW_STRESS_RING_H

#include <stdbool.h>

struct stress_ring;

/* A ring with room for @capacity - 1 items (@capacity: a power of two).
 * NULL on allocation failure. */
struct stress_ring *stress_ring_new(unsigned capacity);
/* Free a ring; it must be empty and unused. */
void stress_ring_free(struct stress_ring *r);

/* Hand @item to whichever thread takes it next: everything this thread did
 * to @item happens before that thread's stress_ring_get returns it.
 * Returns false when the ring is full (the item stays with the caller). */
bool stress_ring_put(struct stress_ring *r, void *item);
/* Take an item, or NULL when the ring is empty. */
void *stress_ring_get(struct stress_ring *r);
/* Items queued now (a snapshot). */
unsigned stress_ring_count(struct stress_ring *r);

#endif
