/*
 * scn_clone_storm.c - many threads lazy-clone one shared source (and clones
 * of it) and drop their clones, over and over.
 *
 * A round has two phases separated by a barrier:
 * - grow: every thread makes 1..8 clones (of the source or of its own
 *   clones) and keeps them; each clone must share the source's allocation
 *   and read the source's bytes. At the barrier the source's share count
 *   must be exactly 1 + the number of clones held: this counting check is
 *   what catches a lost refcount increment without a sanitizer (the state
 *   is then abandoned, not released into a crash).
 * - shrink: every thread drops its clones in random order, writing some of
 *   them first (a copy: the clone ends with the source's bytes plus its
 *   marks, the source is untouched) and making and dropping extra clones
 *   as it goes, so the count moves both ways. At the end the source's bytes
 *   are intact, its share count is back to 1, and live allocations are the
 *   source and its context only.
 * Every 4th round (on average) the source is written by tid 0 while it is
 * the sole holder: that must steal (no copy, same allocation), and the next
 * clone makes a new context. Every 16th round the source is replaced.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define CS_MAX_HELD 8

struct cs_state {
	cow_storage_t *src;
	struct stress_ext ext;
	bool external;
	uint64_t key;
	uint64_t sum;          /* checksum of the source's bytes */
	_Atomic uint64_t held; /* clones held at the end of the grow phase */
	uint64_t base_allocs;  /* live allocations at the round's start */
	bool was_cow;          /* the source had a context at the start */
	uint64_t max_shares, src_steals, sources;
};

static void
cs_release_source(struct stress_run *run, struct cs_state *st)
{
	if (st->src == NULL || atomic_load(&run->abandon))
		return;
	cow_storage_release(st->src);
	st->src = NULL;
	if (st->external)
		stress_check(run, atomic_load(&st->ext.calls) == 1,
		    "deleter calls for the source: %u (expected 1)",
		    atomic_load(&st->ext.calls));
}

static void
cs_teardown(struct stress_run *run)
{
	struct cs_state *st = run->state;

	cs_release_source(run, st);
	snprintf(run->note, sizeof run->note,
	    "%" PRIu64 " %s; up to %" PRIu64 " %s sharing one; %" PRIu64
	    " sole-holder %s", st->sources, stress_plural(st->sources,
	    "source", "sources"), st->max_shares, stress_plural(st->max_shares,
	    "storage", "storages"), st->src_steals,
	    stress_plural(st->src_steals, "write stole", "writes stole"));
	free(st);
	run->state = NULL;
}

static void
cs_begin_round(struct stress_run *run, struct cs_state *st)
{
	uint64_t round = stress_round(run);

	if (st->src == NULL || round % 16 == 0) {
		cs_release_source(run, st);
		st->key = stress_mix64(run->seed ^ (round * 5));
		st->external = !st->external;
		st->src = st->external ?
		    stress_ext_storage(run, &st->ext, run->opt->size, st->key) :
		    stress_alloc_storage(run, run->opt->size, st->key);
		if (st->src == NULL) {
			stress_check(run, false, "cannot create the source: %s",
			    cow_last_error());
			abort();
		}
		st->sum = stress_checksum(cow_storage_const_data(st->src),
		    run->opt->size);
		st->sources++;
	}
	st->was_cow = cow_storage_is_cow(st->src);
	st->base_allocs = stress_default_live_allocs();
	atomic_store(&st->held, 0);
}

/* tid 0: the counting check at the end of the grow phase. */
static void
cs_check_count(struct stress_run *run, struct cs_state *st)
{
	uint64_t held = atomic_load(&st->held);
	size_t shares = cow_storage_share_count(st->src);

	if (!stress_check(run, shares == held + 1,
	    "share count %zu with clones held %" PRIu64 " (expected %" PRIu64
	    "): a reference count update was lost", shares, held, held + 1))
		atomic_store(&run->abandon, true);
	if (shares > st->max_shares)
		st->max_shares = shares;
}

/* tid 0: the source after every clone left; sometimes write it. */
static void
cs_end_round(struct stress_run *run, struct cs_state *st,
    struct stress_rng *rng)
{
	size_t size = run->opt->size;
	const void *d = cow_storage_const_data(st->src);
	uint64_t want = st->base_allocs + (st->was_cow ? 0 : 1);
	cow_stats_t before, after;
	void *p;

	if (atomic_load(&run->abandon))
		return;
	stress_check(run, stress_checksum(d, size) == st->sum,
	    "source bytes changed during the storm (first bad byte %zu)",
	    stress_verify_marked(d, size, st->key, 0, 0, 0));
	stress_check(run, cow_storage_share_count(st->src) == 1,
	    "source share count %zu after every clone left (expected 1)",
	    cow_storage_share_count(st->src));
	stress_check(run, stress_default_live_allocs() == want,
	    "live allocations after the storm: %" PRIu64 " (expected %" PRIu64
	    ": the source and its context)", stress_default_live_allocs(),
	    want);
	if (stress_rng_below(rng, 4) != 0 || !cow_storage_is_cow(st->src))
		return;
	/* Sole holder: a write must steal, not copy. */
	cow_stats_get(&before);
	if (!stress_check(run, cow_storage_mutable_data(st->src, &p) == COW_OK,
	    "materialise the source: %s", cow_last_error()))
		return;
	cow_stats_get(&after);
	stress_check(run, p == d &&
	    after.materialize_steals - before.materialize_steals == 1 &&
	    after.materialize_copies == before.materialize_copies,
	    "sole-holder write: steals %" PRIu64 ", copies %" PRIu64 ", "
	    "allocation %s (expected one steal in place)",
	    after.materialize_steals - before.materialize_steals,
	    after.materialize_copies - before.materialize_copies,
	    p == d ? "kept" : "moved");
	st->src_steals++;
	st->key = stress_mix64(st->key + 1);
	stress_pattern_fill(p, size, st->key);
	st->sum = stress_checksum(p, size);
}

/* Verify a clone: shares the source and reads its bytes (checksum on a
 * quarter of the clones; the shared pointer is checked on all). */
static void
cs_check_clone(struct stress_run *run, struct cs_state *st,
    cow_storage_t *c, struct stress_rng *rng)
{
	stress_check(run, cow_storage_shares_data(c, st->src) &&
	    cow_storage_const_data(c) == cow_storage_const_data(st->src),
	    "a clone does not share the source's allocation");
	if (stress_rng_below(rng, 4) == 0)
		stress_check(run, stress_checksum(cow_storage_const_data(c),
		    run->opt->size) == st->sum,
		    "a clone's checksum differs from the source's");
}

static cow_storage_t *
cs_clone(struct stress_run *run, cow_storage_t *from)
{
	cow_storage_t *c = NULL;

	if (!stress_check(run, cow_storage_lazy_clone(from, &c) == COW_OK,
	    "lazy clone: %s", cow_last_error()))
		abort(); /* Not a race: the library refused. */
	return c;
}

static void
cs_shrink(struct stress_run *run, unsigned tid, struct cs_state *st,
    cow_storage_t **mine, unsigned m, struct stress_rng *rng)
{
	size_t size = run->opt->size;

	while (m > 0) {
		unsigned k = (unsigned)stress_rng_below(rng, m);
		cow_storage_t *c = mine[k];

		mine[k] = mine[--m];
		stress_perturb(rng);
		if (stress_rng_below(rng, 3) == 0) {
			/* Churn: a clone that lives for a moment. */
			cow_storage_t *t = cs_clone(run, st->src);

			cs_check_clone(run, st, t, rng);
			cow_storage_release(t);
			stress_ops(run, tid, 2);
		}
		if (stress_rng_below(rng, 8) == 0) {
			void *p;
			size_t bad;

			if (stress_check(run,
			    cow_storage_mutable_data(c, &p) == COW_OK,
			    "materialise a clone: %s", cow_last_error())) {
				stress_write_marks(p, size, st->key, 7, tid % 7,
				    tid);
				bad = stress_verify_marked(p, size, st->key, 7,
				    tid % 7, tid);
				stress_check(run, bad == size &&
				    p != cow_storage_const_data(st->src),
				    "written clone: byte %zu wrong or the "
				    "source's allocation was taken", bad);
			}
			stress_ops(run, tid, 1);
		}
		cow_storage_release(c);
		stress_ops(run, tid, 1);
	}
}

static void
cs_worker(struct stress_run *run, unsigned tid)
{
	struct cs_state *st = run->state;
	struct stress_rng rng;
	cow_storage_t *mine[CS_MAX_HELD];

	stress_rng_init(&rng, run->seed, tid, 4);
	while (stress_next_round(run, tid)) {
		unsigned m = 1 + (unsigned)stress_rng_below(&rng, CS_MAX_HELD);

		if (tid == 0)
			cs_begin_round(run, st);
		stress_barrier(run);
		/* Grow: clones only, so the count can only go up. */
		for (unsigned j = 0; j < m; j++) {
			cow_storage_t *from = st->src;

			stress_perturb(&rng);
			if (j > 0 && stress_rng_below(&rng, 4) == 0)
				from = mine[stress_rng_below(&rng, j)];
			mine[j] = cs_clone(run, from);
			cs_check_clone(run, st, mine[j], &rng);
			stress_ops(run, tid, 1);
		}
		atomic_fetch_add(&st->held, m);
		stress_barrier(run);
		if (tid == 0)
			cs_check_count(run, st);
		stress_barrier(run);
		if (!atomic_load(&run->abandon))
			cs_shrink(run, tid, st, mine, m, &rng);
		stress_barrier(run);
		if (tid == 0)
			cs_end_round(run, st, &rng);
	}
}

const struct stress_scenario stress_scn_clone_storm = {
	.name = "clone-storm",
	.summary = "many threads lazy-clone one source and drop the clones",
	.state_size = sizeof(struct cs_state),
	.worker = cs_worker,
	.teardown = cs_teardown,
};
