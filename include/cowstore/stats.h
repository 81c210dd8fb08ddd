/*
 * cowstore process-wide copy-on-write statistics.
 */
#ifndef COWSTORE_STATS_H
#define COWSTORE_STATS_H

#include <stdint.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cow_stats_s {
	uint64_t lazy_clones;        /* successful cow_storage_lazy_clone calls */
	uint64_t ctx_wraps;          /* COW contexts installed (first clone) */
	uint64_t eager_fallbacks;    /* lazy clones done as eager copies */
	uint64_t materialize_copies; /* materialisations that copied */
	uint64_t materialize_steals; /* materialisations that stole */
	uint64_t bytes_copied;       /* bytes copied by materialisation and
	                                eager fallbacks */
} cow_stats_t;

/**
 * cow_stats_get - sum the counters into *out. Ownership: none (fills *out).
 * Thread-safety: any thread; counters are sharded (each thread adds to one
 * of a fixed set of shards) and summed, so the result is not a snapshot
 * while other threads work. Errors: none; NULL does nothing.
 */
COW_API void cow_stats_get(cow_stats_t *out);

/**
 * cow_stats_reset - set every counter to zero. Ownership: none.
 * Thread-safety: any thread, but increments that run concurrently with the
 * reset may be lost. Errors: none.
 */
COW_API void cow_stats_reset(void);

#ifdef __cplusplus
}
#endif
#endif
