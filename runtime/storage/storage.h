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
	size_t nbytes;          /* Read-only after init. */
	cow__buffer_t buf;      /* Owned data while ctx is NULL. */
	cow_allocator_t *alloc; /* Read-only: metadata and copies. */
};

#endif
