/*
 * handoff.h - the head of a hand-off scenario's state (scn_boundary,
 * scn_tensor_mix): the ring through which its threads pass objects, and
 * the live allocations before the run.
 */
#ifndef COW_STRESS_HANDOFF_H
#define COW_STRESS_HANDOFF_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "ring.h"

struct stress_handoff {
	struct stress_ring *ring;
	unsigned population;  /* most objects queued at once */
	uint64_t base_allocs; /* stress_default_live_allocs() at the start */
};

/* A zeroed state of @size bytes that begins with a struct stress_handoff:
 * a population of 4 objects a thread of @threads, a ring with room for
 * twice that (64 at least), base_allocs read last. NULL without memory. */
static inline void *
stress_handoff_state_new(size_t size, unsigned threads)
{
	struct stress_handoff *h = calloc(1, size);
	unsigned cap = 64;

	if (h == NULL)
		return NULL;
	h->population = 4 * threads;
	while (cap < 2 * h->population)
		cap *= 2;
	h->ring = stress_ring_new(cap);
	if (h->ring == NULL) {
		free(h);
		return NULL;
	}
	h->base_allocs = stress_default_live_allocs();
	return h;
}

#endif
