/*
 * stats.h - process-wide COW counters of the storage layer (lazy clones,
 * context wraps, materialisations), per thread (core/tcounter.h) so that
 * counting touches no shared cache line on hot paths (clone storms on one
 * source).
 */
#ifndef COW_STORAGE_STATS_H
#define COW_STORAGE_STATS_H

#include <stdint.h>

#include "core/tcounter.h"

enum cow__stat {
	COW__STAT_LAZY_CLONES,
	COW__STAT_CTX_WRAPS,
	COW__STAT_EAGER_FALLBACKS,
	COW__STAT_MATERIALIZE_COPIES,
	COW__STAT_MATERIALIZE_STEALS,
	COW__STAT_BYTES_COPIED,
	COW__STAT_EXTERNAL_COPIES,
	COW__STAT_PINNED_CLONES,
	COW__STAT_SNAPSHOT_COPIES,
	COW__STAT_SNAPSHOT_PERSISTS,
	COW__STAT_COUNT
};

/* Count @n events of @stat (no locked instruction: core/tcounter.h). */
static inline void
cow__stat_add(enum cow__stat stat, uint64_t n)
{
	cow__tc_add(COW__TC_STATS_FIRST + (unsigned)stat, n);
}

#endif
