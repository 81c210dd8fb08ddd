/*
 * scn_release_vs_materialize.c - the copy-or-steal decision under a moving
 * count. Threads work in pairs, one COW context per pair and round: thread
 * A drops every peer it holds (one to three) while thread B materialises
 * and writes its own peer at the same moment. With an odd thread count the
 * last thread drops one more peer of pair 0 at the same time.
 *
 * B copies if some other share is still held when it decrements and steals
 * if it became the last; both outcomes are legal and both are counted.
 * Invariants, per pair and round:
 * - B's peer ends private with the original bytes plus its own marks,
 *   checked right after the write and again once A is done (a copier that
 *   read data A's release already freed copies poison);
 * - B holds the original allocation exactly when it stole, and the
 *   library's steal and copy counters moved by exactly the number of pairs
 *   that stole and copied;
 * - the original is freed exactly once: by A's last release when B copied
 *   (deleter called once before B is released), with B's release when B
 *   stole (not before); live allocations return to the round's baseline.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define RVM_MAX_A 3

struct rvm_pair {
	cow_storage_t *a_peer[RVM_MAX_A];
	unsigned na;
	cow_storage_t *b_peer;
	void *b_data;
	struct stress_ext ext;
	bool external;
	const void *orig;
	uint64_t key;
};

struct rvm_state {
	struct rvm_pair pair[STRESS_MAX_THREADS / 2];
	unsigned npairs;
	cow_storage_t *odd_peer; /* held by the odd thread, pair 0's data */
	bool ready;
	uint64_t base_allocs;
	cow_stats_t before;
	uint64_t copies, steals; /* decisions, for the report */
};

static bool
rvm_setup(struct stress_run *run)
{
	struct rvm_state *st = calloc(1, sizeof *st);

	if (st == NULL)
		return false;
	st->npairs = run->threads / 2;
	run->state = st;
	return true;
}

static void
rvm_teardown(struct stress_run *run)
{
	struct rvm_state *st = run->state;

	snprintf(run->note, sizeof run->note,
	    "%u %s; materialiser decisions under a moving count: %" PRIu64
	    " %s, %" PRIu64 " %s", st->npairs, stress_plural(st->npairs,
	    "pair", "pairs"), st->copies, stress_plural(st->copies, "copy",
	    "copies"), st->steals, stress_plural(st->steals, "steal",
	    "steals"));
	free(st);
	run->state = NULL;
}

static cow_storage_t *
rvm_clone(struct stress_run *run, cow_storage_t *from)
{
	cow_storage_t *c;

	if (!stress_check(run, cow_storage_lazy_clone(from, &c) == COW_OK,
	    "lazy clone: %s", cow_last_error()))
		abort(); /* Not a race: the library refused. */
	return c;
}

static void
rvm_begin_round(struct stress_run *run, struct rvm_state *st,
    struct stress_rng *rng)
{
	uint64_t round = stress_round(run);

	st->ready = false;
	st->base_allocs = stress_default_live_allocs();
	for (unsigned p = 0; p < st->npairs; p++) {
		struct rvm_pair *pr = &st->pair[p];
		cow_storage_t *s;

		pr->key = stress_mix64(run->seed ^ (round << 16) ^ p);
		pr->external = (round + p) % 2 == 0;
		s = pr->external ?
		    stress_ext_storage(run, &pr->ext, run->opt->size, pr->key) :
		    stress_alloc_storage(run, run->opt->size, pr->key);
		if (!stress_check(run, s != NULL,
		    "cannot create a source: %s", cow_last_error()))
			abort();
		pr->orig = cow_storage_const_data(s);
		pr->na = 1 + (unsigned)stress_rng_below(rng, RVM_MAX_A);
		/* Either side may hold the source itself. */
		if (stress_rng_below(rng, 2) == 0) {
			pr->b_peer = s;
			for (unsigned i = 0; i < pr->na; i++)
				pr->a_peer[i] = rvm_clone(run, s);
		} else {
			pr->a_peer[0] = s;
			pr->b_peer = rvm_clone(run, s);
			for (unsigned i = 1; i < pr->na; i++)
				pr->a_peer[i] = rvm_clone(run,
				    pr->a_peer[i - 1]);
		}
		pr->b_data = NULL;
	}
	st->odd_peer = NULL;
	if (run->threads % 2 == 1)
		st->odd_peer = rvm_clone(run, st->pair[0].b_peer);
	cow_stats_get(&st->before);
	st->ready = true;
}

static void
rvm_end_round(struct stress_run *run, struct rvm_state *st)
{
	unsigned stole = 0;
	cow_stats_t after;

	cow_stats_get(&after);
	for (unsigned p = 0; p < st->npairs; p++) {
		struct rvm_pair *pr = &st->pair[p];
		bool s = pr->b_data == pr->orig;

		stole += s;
		if (pr->external)
			stress_check(run, atomic_load(&pr->ext.calls) ==
			    (s ? 0u : 1u),
			    "pair %u: B %s, deleter calls for the original "
			    "before B's release: %u (expected %u)", p,
			    s ? "stole" : "copied",
			    atomic_load(&pr->ext.calls), s ? 0u : 1u);
	}
	stress_check(run,
	    after.materialize_steals - st->before.materialize_steals == stole,
	    "steals counted: %" PRIu64 ", materialisers holding their "
	    "original: %u",
	    after.materialize_steals - st->before.materialize_steals, stole);
	stress_check(run,
	    after.materialize_copies - st->before.materialize_copies ==
	    st->npairs - stole,
	    "copies counted: %" PRIu64 " (expected %u)",
	    after.materialize_copies - st->before.materialize_copies,
	    st->npairs - stole);
	st->steals += stole;
	st->copies += st->npairs - stole;
	if (atomic_load(&run->abandon))
		return;
	for (unsigned p = 0; p < st->npairs; p++) {
		struct rvm_pair *pr = &st->pair[p];

		cow_storage_release(pr->b_peer);
		if (pr->external)
			stress_check(run, atomic_load(&pr->ext.calls) == 1,
			    "pair %u: deleter calls for the original: %u "
			    "(expected 1)",
			    p, atomic_load(&pr->ext.calls));
	}
	stress_check(run, stress_default_live_allocs() == st->base_allocs,
	    "live allocations after the round: %" PRIu64 " (expected %"
	    PRIu64 ")", stress_default_live_allocs(), st->base_allocs);
}

static void
rvm_check_b(struct stress_run *run, struct rvm_pair *pr, unsigned p,
    unsigned tid, const char *when)
{
	size_t size = run->opt->size;
	size_t bad = stress_verify_marked(pr->b_data, size, pr->key, 3, 1,
	    tid);

	stress_check(run, bad == size,
	    "pair %u %s: materialised peer (%s) byte %zu is 0x%02x, expected "
	    "0x%02x", p, when, pr->b_data == pr->orig ? "stole" : "copied",
	    bad, bad < size ? ((uint8_t *)pr->b_data)[bad] : 0,
	    bad < size ? (bad % 3 == 1 ? stress_mark(pr->key, bad, tid) :
	    stress_pattern_byte(pr->key, bad)) : 0);
}

static void
rvm_worker(struct stress_run *run, unsigned tid)
{
	struct rvm_state *st = run->state;
	struct stress_rng rng;

	stress_rng_init(&rng, run->seed, tid, 2);
	while (stress_next_round(run, tid)) {
		unsigned p = tid / 2;
		/* Roles swap every round. */
		bool is_b = ((tid + stress_round(run)) & 1) != 0;
		struct rvm_pair *pr = p < st->npairs ? &st->pair[p] : NULL;

		if (tid == 0)
			rvm_begin_round(run, st, &rng);
		stress_barrier(run);
		if (!st->ready)
			continue;
		stress_perturb(&rng);
		if (pr == NULL) {
			/* The odd thread: one more release of pair 0. */
			cow_storage_release(st->odd_peer);
			stress_ops(run, tid, 1);
		} else if (is_b) {
			void *d = NULL;

			if (stress_check(run,
			    cow_storage_mutable_data(pr->b_peer, &d) == COW_OK,
			    "pair %u: materialise: %s", p, cow_last_error())) {
				stress_write_marks(d, run->opt->size, pr->key,
				    3, 1, tid);
				pr->b_data = d;
				rvm_check_b(run, pr, p, tid, "after its write");
			}
			stress_ops(run, tid, 2);
		} else {
			for (unsigned i = 0; i < pr->na; i++) {
				cow_storage_release(pr->a_peer[i]);
				if (i + 1 < pr->na)
					stress_perturb(&rng);
			}
			stress_ops(run, tid, pr->na);
		}
		stress_barrier(run);
		if (pr != NULL && is_b && pr->b_data != NULL) {
			stress_check(run, !cow_storage_is_cow(pr->b_peer),
			    "pair %u: materialised peer is still COW", p);
			rvm_check_b(run, pr, p, tid, "after the releases");
		}
		stress_barrier(run);
		if (tid == 0)
			rvm_end_round(run, st);
	}
}

const struct stress_scenario stress_scn_release_vs_materialize = {
	.name = "release-vs-materialize",
	.summary = "one thread drops its peers while another materialises",
	.setup = rvm_setup,
	.worker = rvm_worker,
	.teardown = rvm_teardown,
};
