/*
 * stats.c - the process-wide COW counters, kept in per-thread counters
 * (core/tcounter.h): an increment is a plain add to the calling thread's
 * own block. A reset records the totals as a new zero point instead of
 * writing other threads' counters, so no increment is ever lost.
 */
#include <cowstore/stats.h>

#include "core/fork.h"
#include "core/mutex.h"
#include "core/tcounter.h"
#include "storage/stats.h"

_Static_assert(COW__STAT_COUNT <= COW__TC_STATS_COUNT,
    "the statistics need more per-thread slots");

/* The totals at the last reset. Synchronization: stats_lock. */
static uint64_t stats_zero[COW__STAT_COUNT];
static cow__mutex_t stats_lock = COW__MUTEX_INITIALIZER(COW__RANK_STATS);

static const struct cow__fork_hooks stats_fork_hooks = {
	.mutexes = &stats_lock, .n_mutexes = 1
};

__attribute__((constructor)) static void
stats_fork_register(void)
{
	cow__fork_register(COW__RANK_STATS, &stats_fork_hooks);
}

static void
stats_sum(uint64_t *sum)
{
	cow__tc_sum(COW__TC_STATS_FIRST, COW__STAT_COUNT, sum);
}

void
cow_stats_get(cow_stats_t *out)
{
	uint64_t sum[COW__STAT_COUNT];

	if (out == NULL)
		return;
	cow__mutex_lock(&stats_lock);
	stats_sum(sum);
	for (int c = 0; c < COW__STAT_COUNT; c++)
		sum[c] -= stats_zero[c];
	cow__mutex_unlock(&stats_lock);
	out->lazy_clones = sum[COW__STAT_LAZY_CLONES];
	out->ctx_wraps = sum[COW__STAT_CTX_WRAPS];
	out->eager_fallbacks = sum[COW__STAT_EAGER_FALLBACKS];
	out->materialize_copies = sum[COW__STAT_MATERIALIZE_COPIES];
	out->materialize_steals = sum[COW__STAT_MATERIALIZE_STEALS];
	out->bytes_copied = sum[COW__STAT_BYTES_COPIED];
	out->external_copies = sum[COW__STAT_EXTERNAL_COPIES];
	out->pinned_clones = sum[COW__STAT_PINNED_CLONES];
	out->snapshot_copies = sum[COW__STAT_SNAPSHOT_COPIES];
	out->snapshot_persists = sum[COW__STAT_SNAPSHOT_PERSISTS];
}

void
cow_stats_reset(void)
{
	cow__mutex_lock(&stats_lock);
	stats_sum(stats_zero);
	cow__mutex_unlock(&stats_lock);
}
