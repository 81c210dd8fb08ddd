/*
 * cow_ctx.h - the copy-on-write context: a refcount of the storages sharing
 * one data allocation, the allocation itself, and the shared/exclusive lock
 * that lets the last reference wait for pending copiers (docs/design.md).
 *
 * The model in docs/model/ checks this protocol step by step; the comments
 * in cow_ctx.c name the model's labels.
 */
#ifndef COW_STORAGE_COW_CTX_H
#define COW_STORAGE_COW_CTX_H

#include "core/atomic.h"
#include "core/refcount.h"
#include "core/rwlock.h"
#include "storage/buffer.h"

typedef struct cow__ctx {
	/* Shared: a copier reading data. Exclusive: the last reference,
	 * waiting for copiers before it steals or frees data. */
	cow__rwlock_t lock;
	/* Storages sharing data. Synchronization: atomic (acq_rel). A
	 * materialiser decrements only while holding the shared lock. */
	cow__refcount_t shares;
	cow__buffer_t buf;       /* Read-only after init; owned by the ctx. */
	cow_allocator_t *alloc;  /* Read-only: allocator of this struct. */
#ifdef COW__DEBUG
	/* For the asserts (core/die.h): storages that point here and have not
	 * begun to leave (a storage leaves before it drops its share, and
	 * joins after it takes one), and a mark cleared when it is freed. */
	cow__atomic_u64_t debug_storages;
	uint64_t debug_alive;
#endif
} cow__ctx_t;

#define COW__CTX_ALIVE UINT64_C(0x636f775f63747821) /* "cow_ctx!" */

/* Debug builds: the bookkeeping of the asserts; nothing in release. */
#ifdef COW__DEBUG
static inline bool
cow__ctx_alive(const cow__ctx_t *ctx)
{
	return ctx->debug_alive == COW__CTX_ALIVE;
}

static inline uint64_t
cow__ctx_debug_storages(const cow__ctx_t *ctx)
{
	return cow__atomic_load_relaxed(&ctx->debug_storages);
}

static inline void
cow__ctx_debug_join(cow__ctx_t *ctx, uint64_t n)
{
	cow__atomic_add_relaxed(&ctx->debug_storages, n);
}
#else
static inline bool
cow__ctx_alive(const cow__ctx_t *ctx)
{
	(void)ctx;
	return true;
}

static inline uint64_t
cow__ctx_debug_storages(const cow__ctx_t *ctx)
{
	(void)ctx;
	return 0;
}

#define cow__ctx_debug_join(ctx, n) ((void)0)
#endif

/* A context owning @buf with @shares shares (the source storage, and the
 * first clone when the caller makes one). On COW_ENOMEM nothing was
 * allocated and @buf is still the caller's. */
cow_status_t cow__ctx_new(cow_allocator_t *alloc, const cow__buffer_t *buf,
    unsigned shares, cow__ctx_t **out);

/* Free a context that was never published (lost the install race); its
 * buffer stays with the storage. */
void cow__ctx_discard(cow__ctx_t *ctx);

/* Add a share for a new storage. The caller holds a share already. Inline:
 * threads cloning one source meet only here, on the context's line. */
static inline void
cow__ctx_share(cow__ctx_t *ctx)
{
	COW__ASSERT(cow__ctx_alive(ctx), "a freed context is shared");
	COW__FAULT_POINT(share_count, cow__ref_get(&ctx->shares)); /* [CLONE] */
	cow__ctx_debug_join(ctx, 1);
}

/* The release of the last share: wait for copiers, free (cow_ctx.c). */
void cow__ctx_unshare_last(cow__ctx_t *ctx);

/* Give a share back without materialising (storage release). The last share
 * waits for pending copiers, then frees the data and the context. */
static inline void
cow__ctx_unshare(cow__ctx_t *ctx)
{
	COW__ASSERT(cow__ctx_alive(ctx), "a freed context is released");
	cow__ctx_debug_join(ctx, (uint64_t)-1);
	if (cow__ref_put(&ctx->shares)) /* [RELEASE] */
		cow__ctx_unshare_last(ctx);
}

/*
 * Materialise one share: on COW_OK *out is a private buffer with the bytes
 * (a copy from @alloc, or the stolen original) and the caller no longer
 * holds a share. @may_take: the caller may write the original buffer
 * (cow__buffer_may_write); otherwise it always copies, and when it held the
 * last share it then frees the original as a release does. On COW_ENOMEM
 * nothing changed.
 */
cow_status_t cow__ctx_materialize(cow__ctx_t *ctx, cow_allocator_t *alloc,
    bool may_take, cow__buffer_t *out);

#endif
