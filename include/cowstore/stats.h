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
	uint64_t eager_fallbacks;    /* lazy clones done as eager copies of
	                                at least one byte */
	uint64_t materialize_copies; /* materialisations that copied */
	uint64_t materialize_steals; /* materialisations that stole */
	uint64_t bytes_copied;       /* bytes copied by materialisation and
	                                eager fallbacks */
	uint64_t external_copies;    /* materialisations that copied because
	                                the storage may not write the memory:
	                                borrowed memory it did not create, or
	                                read-only memory (storage.h); also
	                                counted in materialize_copies */
	uint64_t pinned_clones;      /* lazy clones of a pinned or
	                                COW_STORAGE_NOT_SHAREABLE storage, done
	                                as eager copies of at least one byte;
	                                also counted in eager_fallbacks */
	uint64_t snapshot_copies;    /* first writes to live storages that
	                                copied because a snapshot held them
	                                (snapshot.h; one per write, however
	                                many snapshots held the bytes); also
	                                counted in materialize_copies */
	uint64_t snapshot_persists;  /* storages a writer persisted itself
	                                before writing (snapshot.h,
	                                COW_SNAPSHOT_PERSIST_FIRST) */
} cow_stats_t;

/**
 * cow_stats_get - sum the counters into *out. Each thread counts in its own
 * counters (kept after it exits) and a read sums them: exact for every
 * event ordered before the call (an event of the calling thread, or of a
 * thread it synchronised with since, such as one it joined), not a snapshot
 * of events running meanwhile.
 * Thread-safety: any thread. Errors: none; NULL does nothing.
 */
COW_API void cow_stats_get(cow_stats_t *out);

/**
 * cow_stats_reset - start counting from zero (the totals so far become the
 * zero point). Thread-safety: any thread; an event that runs concurrently
 * with the reset counts either before or after it, and is never lost.
 * Errors: none.
 */
COW_API void cow_stats_reset(void);

#ifdef __cplusplus
}
#endif
#endif
