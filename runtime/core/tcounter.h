/*
 * tcounter.h - per-thread counters for statistics: exact totals with no
 * locked instruction and no shared cache line on the counting path.
 *
 * Every thread that counts gets a block of COW__TC_SLOTS counters (on its
 * first add). A thread adds only to its own block, with a plain
 * read-modify-write (cow__owned_add_release). A read sums the slot over
 * every live thread's block plus what exited threads left behind: a block
 * is folded into the shared totals when its thread exits, so a thread's
 * counts survive it. Reads take a mutex; adds never do.
 *
 * Slots are handed out in ranges: the storage statistics own a fixed range,
 * each allocator handle takes one when it is created (cow__tc_slots_get)
 * and gives it back when destroyed. When no range is left the caller counts
 * with shared atomics instead (correct, only slower).
 *
 * A read is exact for the increments that happened before it (it sees every
 * completed add); increments running concurrently may or may not be in it.
 * Two slots read together (cow__tc_sum) come from one pass under the mutex,
 * but are not a snapshot of other threads' progress between them.
 */
#ifndef COW_CORE_TCOUNTER_H
#define COW_CORE_TCOUNTER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/atomic.h"

/* Counters per thread (8 bytes each). */
#define COW__TC_SLOTS 256

/* Slots of the storage statistics (storage/stats.c): the first range. */
#define COW__TC_STATS_FIRST 0
#define COW__TC_STATS_COUNT 16

struct cow__tc_block {
	cow__owned_u64_t v[COW__TC_SLOTS]; /* written only by the owner */
	struct cow__tc_block *next, *prev; /* the live list; its mutex */
	/* Nonzero while the owner is in a copy section (core/fork.h).
	 * Synchronization: atomic; only the owner changes it. */
	cow__atomic_u64_t fork_gate;
} __attribute__((aligned(64)));

extern _Thread_local struct cow__tc_block *cow__tc_mine;

/* The calling thread's block, registered on first use; NULL when it could
 * not be allocated (the caller then counts with a shared atomic). */
struct cow__tc_block *cow__tc_block_slow(void);

/* Counts that belong to no live thread: exited threads', and adds made
 * while a thread had no block. Synchronization: atomic adds. */
extern cow__atomic_u64_t cow__tc_orphan[COW__TC_SLOTS];

/* The calling thread's block (NULL: count with cow__tc_add_shared). */
static inline struct cow__tc_block *
cow__tc_block(void)
{
	struct cow__tc_block *b = cow__tc_mine;

	return __builtin_expect(b != NULL, 1) ? b : cow__tc_block_slow();
}

/* Add @n to slot @slot of block @b (the caller's own, from cow__tc_block),
 * or to the shared totals when @b is NULL. */
static inline void
cow__tc_add_to(struct cow__tc_block *b, unsigned slot, uint64_t n)
{
	if (__builtin_expect(b != NULL, 1))
		cow__owned_add_release(&b->v[slot], n);
	else
		cow__atomic_add_relaxed(&cow__tc_orphan[slot], n);
}

/* Add @n to slot @slot of the calling thread's counters. */
static inline void
cow__tc_add(unsigned slot, uint64_t n)
{
	cow__tc_add_to(cow__tc_block(), slot, n);
}

/* Sum slots [first, first + n) over every thread into out[0 .. n). */
void cow__tc_sum(unsigned first, unsigned n, uint64_t *out);

/* Take a range of @n free slots (all zero); false when none is left. */
bool cow__tc_slots_get(unsigned n, unsigned *first);

/* Give a range back: it is zeroed in every block (nobody may still count
 * on it). */
void cow__tc_slots_put(unsigned first, unsigned n);

/* Fork (core/fork.c). Prepare: hold the list of threads. Wait: return when
 * no thread's block (nor @orphan_gate) shows a copy section. Parent: let
 * go. Child: the other threads are gone; their blocks are folded into the
 * orphan totals, as at a thread's exit, and freed. */
void cow__tc_fork_prepare(void);
void cow__tc_fork_wait_sections(const cow__atomic_u64_t *orphan_gate);
void cow__tc_fork_parent(void);
void cow__tc_fork_child(void);

#endif
