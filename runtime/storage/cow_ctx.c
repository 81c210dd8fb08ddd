/*
 * cow_ctx.c - the copy-or-steal protocol (docs/design.md). Labels in
 * brackets ([COPY], [STEAL], ...) match the Promela model in
 * docs/model/cow_protocol.pml.
 *
 * Invariant: a storage decrements `shares` while materialising only with the
 * shared lock held, so whoever sees the count reach zero (or sees it at one
 * as the sole holder) can take the exclusive lock to wait for every copier
 * that is still reading the data.
 */
#include <string.h>

#include "alloc/allocator.h"
#include "core/fault.h"
#include "core/fork.h"
#include "storage/cow_ctx.h"
#include "storage/stats.h"

cow_status_t
cow__ctx_new(cow_allocator_t *alloc, const cow__buffer_t *buf,
    unsigned shares, cow__ctx_t **out)
{
	cow__ctx_t *ctx = cow__alloc(alloc, sizeof *ctx);

	if (ctx == NULL)
		return COW_ENOMEM;
	cow__rwlock_init(&ctx->lock);
	cow__ref_init(&ctx->shares, shares);
	ctx->buf = *buf;
	ctx->alloc = alloc;
#ifdef COW__DEBUG
	cow__atomic_store_relaxed(&ctx->debug_storages, shares);
	ctx->debug_alive = COW__CTX_ALIVE;
#endif
	COW__SCHED_ACCESS(ctx, sizeof *ctx, 1);
	*out = ctx;
	return COW_OK;
}

static void
ctx_destroy(cow__ctx_t *ctx)
{
#ifdef COW__DEBUG
	ctx->debug_alive = 0;
#endif
	cow__rwlock_destroy(&ctx->lock);
	COW__SCHED_ACCESS(ctx, sizeof *ctx, 1); /* the free */
	cow__free(ctx->alloc, ctx, sizeof *ctx);
}

void
cow__ctx_discard(cow__ctx_t *ctx)
{
	ctx_destroy(ctx);
}

/* [WAIT] The caller holds the last share, or dropped it. Copiers that
 * decremented before us may still hold the shared lock; the wait returns
 * once they are done. No new copier can arrive: nobody else holds a share
 * (core/rwlock.h: cow__rwlock_wait_readers). */
static void
ctx_wait_for_copiers(cow__ctx_t *ctx)
{
	COW__ASSERT(!cow__rwlock_held_shared(&ctx->lock),
	    "a waiter for copiers holds the shared lock");
	COW__ASSERT(cow__ctx_debug_storages(ctx) == 0,
	    "a context is stolen or freed while a storage points at it");
	COW__FAULT_POINT(wait_for_copiers,
	    cow__rwlock_wait_readers(&ctx->lock));
}

/* [STEAL] Take the original buffer and free the context. */
static void
ctx_steal(cow__ctx_t *ctx, cow__buffer_t *out)
{
	ctx_wait_for_copiers(ctx);
	COW__SCHED_ACCESS(&ctx->buf, sizeof ctx->buf, 0);
	*out = ctx->buf;
	ctx_destroy(ctx);
	cow__stat_add(COW__STAT_MATERIALIZE_STEALS, 1);
}

void
cow__ctx_unshare_last(cow__ctx_t *ctx)
{
	ctx_wait_for_copiers(ctx);
	COW__SCHED_ACCESS(&ctx->buf, sizeof ctx->buf, 0);
	cow__buffer_free(&ctx->buf); /* [FREE] */
	ctx_destroy(ctx);
}

/* cow__ctx_materialize's path when others share, or may: copy, or steal
 * when the others left meanwhile. Out of line, so that the sole holder's
 * steal pays for none of its registers. */
static __attribute__((noinline)) cow_status_t
ctx_copy_or_steal(cow__ctx_t *ctx, cow_allocator_t *alloc, bool may_take,
    cow__buffer_t *out)
{
	cow__fork_gate_t gate;
	cow__buffer_t copy;
	unsigned before;

	/* [ALLOC] Allocate before touching anything, so failure changes
	 * nothing. */
	COW__SCHED_ACCESS(&ctx->buf, sizeof ctx->buf, 0);
	if (cow__buffer_alloc(alloc, ctx->buf.nbytes, &copy) != COW_OK) {
		cow__ctx_debug_join(ctx, 1); /* it stays */
		return COW_ENOMEM;
	}

	/* From the shared lock to its unlock: a copy section, which a fork
	 * waits for (core/fork.h). */
	gate = cow__fork_gate_enter();
	COW__FAULT_POINT(lock_then_unshare,
	    cow__rwlock_read_lock(&ctx->lock);  /* [RLOCK] */
	    before = cow__ref_sub(&ctx->shares)); /* [DEC] */
	COW__ASSERT(cow__rwlock_held_shared(&ctx->lock),
	    "a materialiser drops its share without the shared lock");
	if (before > 1 || !may_take) {
		/* [COPY] Others still share: the last of them cannot steal
		 * or free until we drop the shared lock. Or we were last but
		 * may not take the original: nobody else can free it. */
		COW__FAULT_POINT(copy_bytes,
		    COW__SCHED_ACCESS(ctx->buf.data, copy.nbytes, 0);
		    memcpy(copy.data, ctx->buf.data, copy.nbytes));
		/* [RUNLOCK] After this, ctx may be freed by the last
		 * reference at any moment: touch nothing of it. */
		COW__FAULT_POINT(copy_read_unlock,
		    cow__rwlock_read_unlock(&ctx->lock));
		cow__fork_gate_leave(gate);
		cow__stat_add(COW__STAT_MATERIALIZE_COPIES, 1);
		if (!may_take)
			cow__stat_add(COW__STAT_EXTERNAL_COPIES, 1);
		COW__FAULT_POINT(count_copied_bytes,
		    cow__stat_add(COW__STAT_BYTES_COPIED, copy.nbytes));
		/* [KEEP] The last share, copied: free the original as the
		 * last release does (wait for copiers, then free). */
		if (before == 1)
			cow__ctx_unshare_last(ctx);
		*out = copy;
		return COW_OK;
	}

	/* [LAST] The others left while we allocated: steal instead, and give
	 * the unused copy back. */
	COW__FAULT_POINT(last_read_unlock,
	    cow__rwlock_read_unlock(&ctx->lock));
	cow__fork_gate_leave(gate);
	cow__buffer_free(&copy);
	ctx_steal(ctx, out);
	return COW_OK;
}

cow_status_t
cow__ctx_materialize(cow__ctx_t *ctx, cow_allocator_t *alloc, bool may_take,
    cow__buffer_t *out)
{
	COW__ASSERT(cow__ctx_alive(ctx), "a freed context is materialised");
	cow__ctx_debug_join(ctx, (uint64_t)-1); /* we leave */
	/* [SOLE] Nobody else holds a share and nobody can gain one (cloning
	 * needs a share): steal with no allocation. */
	if (may_take && cow__ref_load(&ctx->shares) == 1) {
		ctx_steal(ctx, out);
		return COW_OK;
	}
	return ctx_copy_or_steal(ctx, alloc, may_take, out);
}
