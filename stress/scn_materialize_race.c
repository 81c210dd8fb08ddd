/*
 * scn_materialize_race.c - N lazy peers of one storage, one per thread; all
 * threads materialise and write at the same moment (a barrier).
 *
 * Invariants, per round (one COW context per round, so they are exact):
 * - every peer ends private, holding the original bytes plus exactly its
 *   own marks (a byte-exact check against the reference pattern);
 * - exactly one peer holds the original allocation (it stole), the other
 *   N-1 hold distinct fresh allocations (they copied), and the library's
 *   counters moved by exactly 1 steal, N-1 copies and (N-1) x size bytes;
 * - the original is freed exactly once, when the stealer is released: the
 *   counting deleter (external sources) has not run before that and runs
 *   once after; the default allocator's live allocations come back to the
 *   round's baseline (allocator-backed sources).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

struct mr_state {
	/* Written by tid 0 between barriers, read by all after them. */
	cow_storage_t *peer[STRESS_MAX_THREADS];
	void *data[STRESS_MAX_THREADS];
	struct stress_ext ext;
	bool external;
	bool ready;
	const void *orig;
	uint64_t key;
	uint64_t base_allocs;
	cow_stats_t before;
	/* Totals for the report (tid 0 only). */
	uint64_t contexts, steals, copies;
};

static void
mr_teardown(struct stress_run *run)
{
	struct mr_state *st = run->state;

	snprintf(run->note, sizeof run->note,
	    "%" PRIu64 " %s of %u %s: %" PRIu64 " %s, %" PRIu64 " %s (1 and "
	    "%u per context)", st->contexts, stress_plural(st->contexts,
	    "context", "contexts"), run->threads, stress_plural(run->threads,
	    "peer", "peers"), st->steals, stress_plural(st->steals, "steal",
	    "steals"), st->copies, stress_plural(st->copies, "copy",
	    "copies"), run->threads - 1);
	free(st);
	run->state = NULL;
}

/* tid 0: a source and N-1 lazy peers; the source's slot rotates. */
static void
mr_begin_round(struct stress_run *run, struct mr_state *st,
    struct stress_rng *rng)
{
	unsigned n = run->threads;
	uint64_t round = stress_round(run);
	unsigned src = (unsigned)(round % n);
	cow_storage_t *s;

	st->ready = false;
	st->key = stress_mix64(run->seed ^ round);
	st->external = round % 2 == 0;
	st->base_allocs = stress_default_live_allocs();
	s = st->external ?
	    stress_ext_storage(run, &st->ext, run->opt->size, st->key) :
	    stress_alloc_storage(run, run->opt->size, st->key);
	if (!stress_check(run, s != NULL, "cannot create the source: %s",
	    cow_last_error()))
		return;
	st->orig = cow_storage_const_data(s);
	st->peer[src] = s;
	for (unsigned i = 0; i < n; i++) {
		cow_storage_t *from;

		if (i == src)
			continue;
		/* Clone the source or an earlier peer: both share one
		 * context. */
		from = s;
		if (i > 0 && i - 1 != src && stress_rng_below(rng, 2) == 0)
			from = st->peer[i - 1];
		if (!stress_check(run, cow_storage_lazy_clone(from,
		    &st->peer[i]) == COW_OK, "lazy clone %u: %s", i,
		    cow_last_error()))
			abort(); /* Not a race: the library refused. */
	}
	stress_check(run, cow_storage_share_count(s) == n,
	    "share count %zu after %u peers", cow_storage_share_count(s), n);
	cow_stats_get(&st->before);
	st->ready = true;
}

/* tid 0: the per-context accounting, then release every peer. */
static void
mr_end_round(struct stress_run *run, struct mr_state *st)
{
	unsigned n = run->threads;
	unsigned stole = 0, distinct = 1;
	cow_stats_t after;

	cow_stats_get(&after);
	for (unsigned i = 0; i < n; i++) {
		if (st->data[i] == st->orig)
			stole++;
		for (unsigned j = 0; j < i; j++)
			if (st->data[j] == st->data[i])
				distinct = 0;
	}
	stress_check(run, stole == 1,
	    "peers holding the original allocation: %u (expected 1)",
	    stole);
	stress_check(run, distinct, "two peers share one allocation");
	stress_check(run,
	    after.materialize_steals - st->before.materialize_steals == 1,
	    "steals by the context: %" PRIu64 " (expected 1)",
	    after.materialize_steals - st->before.materialize_steals);
	stress_check(run,
	    after.materialize_copies - st->before.materialize_copies == n - 1,
	    "copies by the context: %" PRIu64 " (expected %u)",
	    after.materialize_copies - st->before.materialize_copies, n - 1);
	stress_check(run, after.bytes_copied - st->before.bytes_copied ==
	    (uint64_t)(n - 1) * run->opt->size,
	    "bytes copied by the context: %" PRIu64 " (expected %" PRIu64 ")",
	    after.bytes_copied - st->before.bytes_copied,
	    (uint64_t)(n - 1) * run->opt->size);
	if (st->external)
		stress_check(run, atomic_load(&st->ext.calls) == 0,
		    "deleter calls for the original while the stealer still "
		    "holds it: %u (expected 0)",
		    atomic_load(&st->ext.calls));
	st->contexts++;
	st->steals += after.materialize_steals - st->before.materialize_steals;
	st->copies += after.materialize_copies - st->before.materialize_copies;
	if (atomic_load(&run->abandon))
		return;
	for (unsigned i = 0; i < n; i++)
		cow_storage_release(st->peer[i]);
	if (st->external)
		stress_check(run, atomic_load(&st->ext.calls) == 1,
		    "deleter calls for the original: %u (expected 1)",
		    atomic_load(&st->ext.calls));
	stress_check(run, stress_default_live_allocs() == st->base_allocs,
	    "live allocations after releasing every peer: %" PRIu64
	    " (expected %" PRIu64 ")", stress_default_live_allocs(),
	    st->base_allocs);
}

static void
mr_worker(struct stress_run *run, unsigned tid)
{
	struct mr_state *st = run->state;
	unsigned n = run->threads;
	size_t size = run->opt->size;
	struct stress_rng rng;

	stress_rng_init(&rng, run->seed, tid, 1);
	while (stress_next_round(run, tid)) {
		size_t bad;
		void *p = NULL;

		if (tid == 0)
			mr_begin_round(run, st, &rng);
		stress_barrier(run);
		if (!st->ready)
			continue;
		/* Everyone starts here together; the noise decides who is
		 * last and steals. */
		stress_perturb(&rng);
		if (stress_check(run,
		    cow_storage_mutable_data(st->peer[tid], &p) == COW_OK,
		    "materialise peer %u: %s", tid, cow_last_error()))
			stress_write_marks(p, size, st->key, n, tid, tid);
		st->data[tid] = p;
		stress_ops(run, tid, 2);
		stress_barrier(run);
		/* Every write is done: each peer must hold the original plus
		 * its own marks, privately. */
		if (p != NULL) {
			stress_check(run, !cow_storage_is_cow(st->peer[tid]) &&
			    cow_storage_const_data(st->peer[tid]) == p,
			    "peer %u is still copy-on-write after a write",
			    tid);
			bad = stress_verify_marked(p, size, st->key, n, tid,
			    tid);
			stress_check(run, bad == size,
			    "peer %u (%s) byte %zu is 0x%02x, expected 0x%02x",
			    tid, p == st->orig ? "stole" : "copied", bad,
			    bad < size ? ((uint8_t *)p)[bad] : 0,
			    bad < size ? (bad % n == tid ?
			    stress_mark(st->key, bad, tid) :
			    stress_pattern_byte(st->key, bad)) : 0);
		}
		stress_ops(run, tid, 1);
		stress_barrier(run);
		if (tid == 0)
			mr_end_round(run, st);
	}
}

const struct stress_scenario stress_scn_materialize_race = {
	.name = "materialize-race",
	.summary = "N lazy peers, one per thread, all written at once",
	.state_size = sizeof(struct mr_state),
	.worker = mr_worker,
	.teardown = mr_teardown,
};
