/*
 * scenario.h - what the interleaving checker runs (docs/interleave.md).
 *
 * One execution of a scenario: setup (main thread, not scheduled), then
 * thread(st, id) for every id in its own test thread under the scheduler,
 * then check (main thread: every thread has finished) and teardown, which
 * releases everything, checks what must hold afterwards (the original
 * freed exactly once, deleters called exactly once) and frees the state.
 * The runner adds the leak check: the default allocator's live allocations
 * and bytes come back to what they were before setup.
 *
 * Every invariant is an ilv_check (sched.h): the first that fails ends the
 * process with the schedule that broke it.
 */
#ifndef ILV_SCENARIO_H
#define ILV_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cowstore/cowstore.h>

#include "sched.h"

struct ilv_scenario {
	const char *name;
	const char *what;
	int nthreads;
	/* Counters (cow__atomic_* and cow__owned_*) carry synchronisation here: make them
	 * scheduling points. */
	bool counters;
	/* Or only the counters in [*lo, *hi) of what setup made (may be
	 * NULL): the words of a protocol built on counters, without the
	 * statistics around it. */
	void (*sync_words)(void *st, uintptr_t *lo, uintptr_t *hi);
	void *(*setup)(void);
	void (*thread)(void *st, int id);
	void (*check)(void *st);
	void (*teardown)(void *st);
};

/* Defines const struct ilv_scenario ilv_scn_<id>, named "<id>": @n threads,
 * the counters as scheduling points when @counting, and the functions. */
#define ILV_SCENARIO(id, n, counting, setup_fn, thread_fn, check_fn,	\
    teardown_fn, description)						\
	const struct ilv_scenario ilv_scn_##id = {			\
		.name = #id,						\
		.what = (description),					\
		.nthreads = (n),					\
		.counters = (counting),					\
		.setup = (setup_fn),					\
		.thread = (thread_fn),					\
		.check = (check_fn),					\
		.teardown = (teardown_fn),				\
	}

extern const struct ilv_scenario ilv_scn_pair;
extern const struct ilv_scenario ilv_scn_trio;
extern const struct ilv_scenario ilv_scn_wrap;
extern const struct ilv_scenario ilv_scn_chain;
extern const struct ilv_scenario ilv_scn_shadow;
extern const struct ilv_scenario ilv_scn_functional;
extern const struct ilv_scenario ilv_scn_count;
extern const struct ilv_scenario ilv_scn_keep;
extern const struct ilv_scenario ilv_scn_borrowed;
extern const struct ilv_scenario ilv_scn_budget;
extern const struct ilv_scenario ilv_scn_litmus;
extern const struct ilv_scenario ilv_scn_sb;
extern const struct ilv_scenario ilv_scn_spin;
extern const struct ilv_scenario ilv_scn_snapshot;
extern const struct ilv_scenario ilv_scn_snapshot_get;
extern const struct ilv_scenario ilv_scn_snapshot_release;
extern const struct ilv_scenario ilv_scn_snapshot_fail;

/* Helpers for the scenarios (scn_util.c). */

/* External data the scenarios share: malloc'd bytes with a pattern and a
 * deleter that counts its calls. */
struct ilv_ext {
	void *data;
	size_t nbytes;
	int calls; /* deleter calls (one test thread runs at a time) */
};

/* A storage over fresh external bytes with pattern @seed; @ext counts
 * the deleter's calls. */
cow_storage_t *ilv_ext_storage(struct ilv_ext *ext, size_t nbytes,
    unsigned seed);

/* Byte patterns: fill and check (ilv_check on a mismatch, naming @what). */
void ilv_fill(void *p, size_t n, unsigned seed);
bool ilv_holds(const void *p, size_t n, unsigned seed);

/* A zeroed scenario state of @size bytes (ilv_check: out of memory), and
 * the teardown of one that holds nothing else. */
void *ilv_state_new(size_t size);
void ilv_state_free(void *st);

/* Process-wide statistics, read by the main thread only. */
cow_stats_t ilv_stats(void);

#endif
