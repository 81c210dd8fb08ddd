/*
 * scn_wrap_race.c - every thread makes the first lazy clone of one fresh
 * (private) storage at the same moment, so they race to install its COW
 * context; exactly one install may win and the losers must free theirs.
 *
 * Invariants, per round:
 * - the library counted exactly one context installed and N lazy clones;
 * - all N clones and the source share one allocation, the source's share
 *   count is N + 1, and every clone reads the source's bytes;
 * - live allocations are exactly the source, one context and N clone
 *   structs (the losers' contexts were freed);
 * - then some clones and the source are written at once (copies or a
 *   steal), each ends with the original plus its own marks, the others
 *   keep the original bytes, and after every release the original was
 *   freed once and live allocations are back to the baseline.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

struct wr_state {
	cow_storage_t *src;
	cow_storage_t *clone[STRESS_MAX_THREADS];
	bool wrote[STRESS_MAX_THREADS + 1]; /* [threads]: the source */
	struct stress_ext ext;
	bool external;
	bool ready;
	uint64_t key;
	uint64_t sum;            /* checksum of the source's bytes */
	uint64_t base_allocs;    /* before the source */
	uint64_t src_allocs;     /* the source: struct (+ data) */
	cow_stats_t before;
	uint64_t wraps, races;   /* for the report */
};

static void
wr_teardown(struct stress_run *run)
{
	struct wr_state *st = run->state;

	snprintf(run->note, sizeof run->note,
	    "%" PRIu64 " install %s of %u %s: %" PRIu64 " %s installed (1 "
	    "per race)", st->races, stress_plural(st->races, "race", "races"),
	    run->threads, stress_plural(run->threads, "thread", "threads"),
	    st->wraps, stress_plural(st->wraps, "context", "contexts"));
	free(st);
	run->state = NULL;
}

static void
wr_begin_round(struct stress_run *run, struct wr_state *st)
{
	uint64_t round = stress_round(run);
	uint64_t after_src;

	st->ready = false;
	st->key = stress_mix64(run->seed ^ (round * 3));
	st->external = round % 2 == 1;
	st->base_allocs = stress_default_live_allocs();
	st->src = st->external ?
	    stress_ext_storage(run, &st->ext, run->opt->size, st->key) :
	    stress_alloc_storage(run, run->opt->size, st->key);
	if (!stress_check(run, st->src != NULL, "cannot create the source: %s",
	    cow_last_error()))
		return;
	after_src = stress_default_live_allocs();
	st->src_allocs = after_src - st->base_allocs;
	st->sum = stress_checksum(cow_storage_const_data(st->src),
	    run->opt->size);
	stress_check(run, !cow_storage_is_cow(st->src),
	    "a fresh storage is copy-on-write");
	memset(st->wrote, 0, sizeof st->wrote);
	cow_stats_get(&st->before);
	st->ready = true;
}

/* tid 0, after the install race. */
static void
wr_check_race(struct stress_run *run, struct wr_state *st)
{
	unsigned n = run->threads;
	cow_stats_t after;
	uint64_t live, want;
	unsigned sharing = 0;

	cow_stats_get(&after);
	stress_check(run, after.ctx_wraps - st->before.ctx_wraps == 1,
	    "contexts installed by one race: %" PRIu64 " (expected 1)",
	    after.ctx_wraps - st->before.ctx_wraps);
	stress_check(run, after.lazy_clones - st->before.lazy_clones == n,
	    "lazy clones counted: %" PRIu64 " (expected %u)",
	    after.lazy_clones - st->before.lazy_clones, n);
	stress_check(run, cow_storage_share_count(st->src) == n + 1,
	    "share count %zu after %u clones (expected %u)",
	    cow_storage_share_count(st->src), n, n + 1);
	for (unsigned i = 0; i < n; i++)
		sharing += cow_storage_shares_data(st->clone[i], st->src) &&
		    cow_storage_shares_data(st->clone[i], st->clone[0]);
	stress_check(run, sharing == n,
	    "%u of %u clones share the source's context", sharing, n);
	live = stress_default_live_allocs();
	want = st->base_allocs + st->src_allocs + 1 + n;
	stress_check(run, live == want,
	    "live allocations after the race: %" PRIu64 ", expected %" PRIu64
	    " (source, one context, %u clones): a losing context leaked or "
	    "was freed twice", live, want, n);
	st->races++;
	st->wraps += after.ctx_wraps - st->before.ctx_wraps;
}

static void
wr_check_bytes(struct stress_run *run, const cow_storage_t *s, uint64_t key,
    bool wrote, unsigned who, const char *what)
{
	unsigned n = run->threads;
	size_t size = run->opt->size;
	const uint8_t *p = cow_storage_const_data(s);
	size_t bad = wrote ?
	    stress_verify_marked(p, size, key, n + 1, who, who) :
	    stress_verify_marked(p, size, key, 0, 0, 0);

	stress_check(run, bad == size,
	    "%s %u (%s) byte %zu is 0x%02x, expected 0x%02x", what, who,
	    wrote ? "written" : "not written", bad, bad < size ? p[bad] : 0,
	    bad < size ? (wrote && bad % (n + 1) == who ?
	    stress_mark(key, bad, who) : stress_pattern_byte(key, bad)) : 0);
}

static void
wr_write(struct stress_run *run, unsigned tid, cow_storage_t *s,
    unsigned who)
{
	struct wr_state *st = run->state;
	void *p;

	if (stress_check(run, cow_storage_mutable_data(s, &p) == COW_OK,
	    "materialise: %s", cow_last_error())) {
		stress_write_marks(p, run->opt->size, st->key,
		    run->threads + 1, who, who);
		st->wrote[who] = true;
	}
	stress_ops(run, tid, 2);
}

static void
wr_end_round(struct stress_run *run, struct wr_state *st)
{
	wr_check_bytes(run, st->src, st->key, st->wrote[run->threads],
	    run->threads, "source");
	if (!st->wrote[run->threads])
		stress_check(run, cow_storage_share_count(st->src) == 1,
		    "source share count %zu after every clone left "
		    "(expected 1)", cow_storage_share_count(st->src));
	if (atomic_load(&run->abandon))
		return;
	cow_storage_release(st->src);
	if (st->external)
		stress_check(run, atomic_load(&st->ext.calls) == 1,
		    "deleter calls for the original: %u (expected 1)",
		    atomic_load(&st->ext.calls));
	stress_check(run, stress_default_live_allocs() == st->base_allocs,
	    "live allocations after the round: %" PRIu64 " (expected %"
	    PRIu64 ")", stress_default_live_allocs(), st->base_allocs);
}

static void
wr_worker(struct stress_run *run, unsigned tid)
{
	struct wr_state *st = run->state;
	unsigned n = run->threads;
	struct stress_rng rng;

	stress_rng_init(&rng, run->seed, tid, 3);
	while (stress_next_round(run, tid)) {
		cow_storage_t *c = NULL;

		if (tid == 0)
			wr_begin_round(run, st);
		stress_barrier(run);
		if (!st->ready)
			continue;
		/* The race: everyone's first clone of a private storage. */
		stress_perturb(&rng);
		if (!stress_check(run,
		    cow_storage_lazy_clone(st->src, &c) == COW_OK,
		    "lazy clone: %s", cow_last_error()))
			abort(); /* Not a race: the library refused. */
		st->clone[tid] = c;
		stress_ops(run, tid, 1);
		stress_check(run, stress_checksum(cow_storage_const_data(c),
		    run->opt->size) == st->sum,
		    "clone %u: checksum differs from the source's", tid);
		stress_barrier(run);
		if (tid == 0)
			wr_check_race(run, st);
		stress_barrier(run);
		/* Some clones (and maybe the source) are written at once. */
		stress_perturb(&rng);
		if (stress_rng_below(&rng, 2) == 0)
			wr_write(run, tid, c, tid);
		if (tid == 0 && stress_rng_below(&rng, 2) == 0)
			wr_write(run, tid, st->src, n);
		stress_barrier(run);
		wr_check_bytes(run, c, st->key, st->wrote[tid], tid, "clone");
		if (!atomic_load(&run->abandon)) {
			stress_perturb(&rng);
			cow_storage_release(c);
			stress_ops(run, tid, 1);
		}
		stress_barrier(run);
		if (tid == 0)
			wr_end_round(run, st);
	}
}

const struct stress_scenario stress_scn_wrap_race = {
	.name = "wrap-race",
	.summary = "all threads make the first lazy clone of one storage",
	.state_size = sizeof(struct wr_state),
	.worker = wr_worker,
	.teardown = wr_teardown,
};
