/*
 * stats.c - sharded statistics counters. Each thread picks a shard once
 * (round robin); an increment is one relaxed atomic add on that shard's
 * cache line. Reading sums all shards.
 */
#include <string.h>

#include <cowstore/stats.h>

#include "core/stats.h"
#include "core/sync.h"

#define COW_STAT_SHARDS 16

struct cow_stat_shard {
	/* Synchronization: atomic (relaxed counters). */
	uint64_t counter[COW__STAT_COUNT];
} __attribute__((aligned(64)));

static struct cow_stat_shard cow_stat_shards[COW_STAT_SHARDS];
static uint64_t cow_stat_next_shard; /* Synchronization: atomic. */
static _Thread_local int cow_stat_my_shard = -1;

void
cow__stat_add(enum cow__stat stat, uint64_t n)
{
	if (cow_stat_my_shard < 0)
		cow_stat_my_shard = (int)(cow__counter_fetch_add(
		    &cow_stat_next_shard, 1) % COW_STAT_SHARDS);
	cow__counter_add(&cow_stat_shards[cow_stat_my_shard].counter[stat], n);
}

void
cow_stats_get(cow_stats_t *out)
{
	uint64_t sum[COW__STAT_COUNT] = {0};

	if (out == NULL)
		return;
	for (int s = 0; s < COW_STAT_SHARDS; s++)
		for (int c = 0; c < COW__STAT_COUNT; c++)
			sum[c] += cow__counter_load(
			    &cow_stat_shards[s].counter[c]);
	out->lazy_clones = sum[COW__STAT_LAZY_CLONES];
	out->ctx_wraps = sum[COW__STAT_CTX_WRAPS];
	out->eager_fallbacks = sum[COW__STAT_EAGER_FALLBACKS];
	out->materialize_copies = sum[COW__STAT_MATERIALIZE_COPIES];
	out->materialize_steals = sum[COW__STAT_MATERIALIZE_STEALS];
	out->bytes_copied = sum[COW__STAT_BYTES_COPIED];
}

void
cow_stats_reset(void)
{
	for (int s = 0; s < COW_STAT_SHARDS; s++)
		for (int c = 0; c < COW__STAT_COUNT; c++)
			cow__counter_store(&cow_stat_shards[s].counter[c], 0);
}
