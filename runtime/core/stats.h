/*
 * stats.h - process-wide COW counters, sharded to keep them off the shared
 * cache lines of hot paths (clone storms on one source).
 */
#ifndef COW_CORE_STATS_H
#define COW_CORE_STATS_H

#include <stdint.h>

enum cow__stat {
	COW__STAT_LAZY_CLONES,
	COW__STAT_CTX_WRAPS,
	COW__STAT_EAGER_FALLBACKS,
	COW__STAT_MATERIALIZE_COPIES,
	COW__STAT_MATERIALIZE_STEALS,
	COW__STAT_BYTES_COPIED,
	COW__STAT_COUNT
};

void cow__stat_add(enum cow__stat stat, uint64_t n);

#endif
