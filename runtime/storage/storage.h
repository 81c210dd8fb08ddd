/*
 * storage.h - internal layout of a storage.
 */
#ifndef COW_STORAGE_STORAGE_H
#define COW_STORAGE_STORAGE_H

#include <cowstore/storage.h>

#include "storage/cow_ctx.h"

struct cow_storage_s {
	cow__refcount_t refs; /* Handles. Synchronization: atomic. */
	unsigned flags;       /* Read-only after init. */
	/*
	 * NULL while the storage owns its data privately. Synchronization:
	 * installed by compare-and-swap by the first lazy clone (a read, so
	 * clones may race); cleared by materialisation (a write, which the
	 * user serialises against every other use of this storage).
	 */
	cow__ctx_t *ctx;
	/* The bytes: ctx->buf.data while COW, else buf.data. Changed only by
	 * materialisation (a write). */
	void *data;
	/*
	 * Reshape-alias simulation (storage/shadow.h): the default shadow of
	 * every tensor on this storage that holds none of its own; NULL until
	 * the first simulated lazy copy. One reference, owned. Synchronization:
	 * installed by compare-and-swap (simulated copies are reads and may
	 * race); freed with the storage.
	 */
	struct cow__shadow *shadow;
	size_t nbytes;          /* Read-only after init. */
	cow__buffer_t buf;      /* Owned data while ctx is NULL. */
	cow_allocator_t *alloc; /* Read-only: metadata and copies. */
	/*
	 * Physical generation: writes through any shadow since the default
	 * shadow exists (storage/shadow.h). Synchronization: atomic, relaxed
	 * (cow__counter_*); bumped only by writes.
	 */
	uint64_t generation;
	/* Non-zero once an aliasing warning was reported for this storage
	 * (warn-once policy). Synchronization: atomic (compare-and-swap). */
	uint64_t warned;
};

#endif
