/*
 * shadow.c - the reshape-alias simulation (docs/reshape.md): the access
 * checks, the policy, the warning handler, the simulated lazy copy and the
 * introspection API.
 *
 * The rule: a write through one shadow set followed by a read or a write
 * through a different shadow set that shares the physical storage is
 * reported. A write bumps the storage's physical generation and sets the
 * writer's shadow generation to the new value; any access whose shadow
 * generation differs from the physical one therefore follows a write
 * through another set. Reads are checked too: the const/mutable split
 * sees every read, not only the writes.
 *
 * Concurrency: generations are relaxed atomics. They publish nothing, and
 * a write through a storage is serialised by the user against every other
 * use of that storage (storage.h), so a check never races with a bump of
 * the same storage; accesses to different storages touch different
 * counters. The warn-once claim is a compare-and-swap, because concurrent
 * reads of one storage may both find it out of sync. The handler is
 * protected by a reader/writer lock: calls share it, cow_shadow_handler_set
 * takes it exclusively, so no call of an old handler outlives the switch.
 *
 * Re-entry: while a thread runs the handler, its own accesses are checked
 * and counted as any others but never call the handler (shadow_in_handler),
 * so a handler that reads the reported tensor does not recurse; other
 * threads' reports still call it.
 */
#include <inttypes.h>
#include <stdio.h>

#include "alloc/allocator.h"
#include "core/atomic.h"
#include "core/error.h"
#include "core/fork.h"
#include "core/mutex.h"
#include "tensor/shadow.h"

/* Synchronization: atomic (relaxed; cow__atomic_*), like the reshape
 * mode: it publishes no data. */
static cow__atomic_u64_t shadow_policy = {COW_SHADOW_WARN_ONCE};

/* The handler and its context. Synchronization: shadow_handler_lock
 * (shared while a handler runs, exclusive to change them). */
static cow__rwmutex_t shadow_handler_lock =
    COW__RWMUTEX_INITIALIZER(COW__RANK_SHADOW_HANDLER);
static cow_shadow_handler_fn shadow_handler = cow_shadow_default_handler;
static void *shadow_handler_ctx;

/* True while the calling thread runs the handler: its accesses are not
 * reported. Thread-local: other threads' reports still reach the handler. */
static _Thread_local bool shadow_in_handler;

#define PTHREAD_CHECK(call)                                                  \
	do {                                                                \
		if ((call) != 0)                                            \
			cow__die(#call);                                    \
	} while (0)

/*
 * Fork (core/fork.h): the forking thread takes the handler lock
 * exclusively, so no handler runs elsewhere while it forks. A fork from
 * inside the handler (this thread holds the lock shared) takes nothing; its
 * child then makes the lock anew, held shared once, by the handler that
 * forked, which unlocks it when it returns.
 */
static bool shadow_fork_took; /* Synchronization: the fork's (fork.c). */

static void
shadow_fork_prepare(void)
{
	shadow_fork_took = !shadow_in_handler;
	if (shadow_fork_took)
		PTHREAD_CHECK(cow__rwmutex_lock(&shadow_handler_lock, true));
}

static void
shadow_fork_parent(void)
{
	if (shadow_fork_took)
		PTHREAD_CHECK(cow__rwmutex_unlock(&shadow_handler_lock));
}

static void
shadow_fork_child(void)
{
	PTHREAD_CHECK(cow__rwmutex_reinit(&shadow_handler_lock));
	if (!shadow_fork_took)
		PTHREAD_CHECK(cow__rwmutex_lock(&shadow_handler_lock, false));
}

static const struct cow__fork_hooks shadow_fork_hooks = {
	.prepare = shadow_fork_prepare, .parent = shadow_fork_parent,
	.child = shadow_fork_child
};

__attribute__((constructor)) static void
shadow_fork_register(void)
{
	cow__fork_register(COW__RANK_SHADOW_HANDLER, &shadow_fork_hooks);
}

static const char *
shadow_kind_str(cow_shadow_kind_t kind)
{
	return kind == COW_SHADOW_READ_AFTER_WRITE ? "read-after-write" :
	    "write-after-write";
}

cow_status_t
cow_shadow_policy_set(cow_shadow_policy_t policy)
{
	switch (policy) {
	case COW_SHADOW_WARN_ONCE:
	case COW_SHADOW_WARN_ALWAYS:
	case COW_SHADOW_ERROR:
		cow__atomic_store_relaxed(&shadow_policy, (uint64_t)policy);
		return COW_OK;
	}
	return COW__NAMED(cow__error(COW_EINVAL, "invalid shadow policy %d",
	    (int)policy));
}

cow_shadow_policy_t
cow_shadow_policy_get(void)
{
	return (cow_shadow_policy_t)cow__atomic_load_relaxed(&shadow_policy);
}

void
cow_shadow_handler_set(cow_shadow_handler_fn fn, void *ctx)
{
	PTHREAD_CHECK(cow__rwmutex_lock(&shadow_handler_lock, true));
	shadow_handler = fn != NULL ? fn : cow_shadow_default_handler;
	shadow_handler_ctx = fn != NULL ? ctx : NULL;
	PTHREAD_CHECK(cow__rwmutex_unlock(&shadow_handler_lock));
}

void
cow_shadow_handler_get(cow_shadow_handler_fn *fn, void **ctx)
{
	PTHREAD_CHECK(cow__rwmutex_lock(&shadow_handler_lock, false));
	if (fn != NULL)
		*fn = shadow_handler;
	if (ctx != NULL)
		*ctx = shadow_handler_ctx;
	PTHREAD_CHECK(cow__rwmutex_unlock(&shadow_handler_lock));
}

void
cow_shadow_default_handler(const cow_shadow_event_t *event, void *ctx)
{
	(void)ctx;
	/* One fprintf: one line, not interleaved with other threads'. */
	fprintf(stderr, "cowstore: warning: %s: %s through another reshape "
	    "alias of storage %p (physical generation %" PRIu64 ", shadow "
	    "generation %" PRIu64 "): the result depends on reshape returning "
	    "a view, not a lazy copy\n", event->func,
	    shadow_kind_str(event->kind), (const void *)event->storage,
	    event->physical_generation, event->shadow_generation);
}

/* The effective shadow: the tensor's own, else its storage's default.
 * NULL for a tensor without a storage (functionalized tensors have none). */
static cow__shadow_t *
shadow_of(const cow_tensor_t *t)
{
	cow__shadow_state_t *state;

	if (t->shadow != NULL)
		return t->shadow;
	if (t->storage == NULL ||
	    (state = cow__storage_shadow_state(t->storage)) == NULL)
		return NULL;
	return &state->dflt;
}

/* The simulation state of an active tensor's storage (cow__shadow_active):
 * a tensor with a shadow of its own is on a storage that has one, since
 * the simulated copy that made that shadow installed it first. */
static cow__shadow_state_t *
state_of(const cow_tensor_t *t)
{
	cow__shadow_state_t *state = cow__storage_shadow_state(t->storage);

	COW__ASSERT(state != NULL, "a shadowed tensor on a storage without "
	    "a simulation state");
	return state;
}

/* Report an out-of-sync access as @policy says: COW_EALIASING under
 * COW_SHADOW_ERROR, else maybe call the handler and return COW_OK. An
 * access made inside the handler on this thread calls nothing and claims
 * nothing (the storage's warn-once is left for an access outside). */
static cow_status_t
shadow_report(const cow_tensor_t *t, cow_shadow_kind_t kind,
    uint64_t physical, uint64_t generation, cow_shadow_policy_t policy,
    const char *func)
{
	cow_shadow_event_t ev;

	if (policy == COW_SHADOW_ERROR)
		return cow__error(COW_EALIASING, "%s through another "
		    "reshape alias of storage %p (physical generation %" PRIu64
		    ", shadow generation %" PRIu64 "): refused under "
		    "COW_SHADOW_ERROR", shadow_kind_str(kind),
		    (void *)t->storage, physical, generation);
	if (shadow_in_handler)
		return COW_OK;
	if (policy == COW_SHADOW_WARN_ONCE &&
	    !cow__shadow_state_warn_claim(state_of(t)))
		return COW_OK;
	ev = (cow_shadow_event_t){kind, t->storage, t, func, physical,
	    generation};
	PTHREAD_CHECK(cow__rwmutex_lock(&shadow_handler_lock, false));
	shadow_in_handler = true;
	shadow_handler(&ev, shadow_handler_ctx);
	shadow_in_handler = false;
	PTHREAD_CHECK(cow__rwmutex_unlock(&shadow_handler_lock));
	return COW_OK;
}

cow_status_t
cow__shadow_check_read(const cow_tensor_t *t, const char *func)
{
	cow__shadow_t *sh = shadow_of(t);
	uint64_t physical = cow__shadow_state_physical(state_of(t));
	uint64_t generation = cow__shadow_generation(sh);

	if (generation == physical)
		return COW_OK;
	return shadow_report(t, COW_SHADOW_READ_AFTER_WRITE, physical,
	    generation, cow_shadow_policy_get(), func);
}

cow_status_t
cow__shadow_check_write(const cow_tensor_t *t, struct cow__shadow_write *w,
    const char *func)
{
	cow__shadow_t *sh = shadow_of(t);

	w->physical = cow__shadow_state_physical(state_of(t));
	w->generation = cow__shadow_generation(sh);
	w->policy = cow_shadow_policy_get();
	if (w->generation != w->physical && w->policy == COW_SHADOW_ERROR)
		return shadow_report(t, COW_SHADOW_WRITE_AFTER_WRITE,
		    w->physical, w->generation, w->policy, func);
	w->shadow = sh;
	return COW_OK;
}

void
cow__shadow_commit_write(cow_tensor_t *t, const struct cow__shadow_write *w,
    const char *func)
{
	if (w->generation != w->physical)
		(void)shadow_report(t, COW_SHADOW_WRITE_AFTER_WRITE,
		    w->physical, w->generation, w->policy, func);
	/* The writer's set is now the one in sync with the data. */
	cow__shadow_generation_set(w->shadow,
	    COW__FAULT_POINT(generation_bump,
	    cow__shadow_state_bump(state_of(t))));
}

cow_status_t
cow__shadow_fork(cow_tensor_t *t, const struct cow__layout *l,
    cow_tensor_t **out)
{
	cow_allocator_t *alloc = cow__tensor_allocator(t);
	cow__shadow_state_t *state, *fresh = NULL;
	cow__shadow_t *own;
	cow_tensor_t *r;

	/* Allocate everything first: a failure leaves the storage unshadowed
	 * if it was. */
	if ((state = cow__storage_shadow_state(t->storage)) == NULL &&
	    (fresh = cow__shadow_state_new(alloc)) == NULL)
		return COW_ENOMEM;
	if ((r = cow__tensor_alloc(alloc)) == NULL) {
		cow__shadow_state_free(fresh);
		return COW_ENOMEM;
	}
	if ((own = cow__shadow_new(alloc, 0)) == NULL) {
		cow__tensor_free(r);
		cow__shadow_state_free(fresh);
		return COW_ENOMEM;
	}
	/* No write bumps a generation before the state exists, so a first
	 * state starts in sync at 0. */
	if (fresh != NULL)
		state = cow__storage_shadow_state_install(t->storage, fresh);
	/* A lazy copy starts with the data as it is now: in sync. */
	cow__shadow_generation_set(own, cow__shadow_state_physical(state));
	cow_storage_retain(t->storage);
	cow__tensor_init(r, t->storage, t->dtype, l);
	r->shadow = own;
	*out = r;
	return COW_OK;
}

cow_status_t
cow_storage_physical_generation(const cow_storage_t *storage, uint64_t *out)
{
	cow__shadow_state_t *state;

	COW__RETURN_IF_NULL(storage);
	COW__RETURN_IF_NULL(out);
	state = cow__storage_shadow_state(storage);
	*out = state == NULL ? COW_GENERATION_NONE :
	    cow__shadow_state_physical(state);
	return COW_OK;
}

cow_status_t
cow_tensor_shadow_generation(const cow_tensor_t *t, uint64_t *out)
{
	cow__shadow_t *sh;

	COW__RETURN_IF_NULL(t);
	COW__RETURN_IF_NULL(out);
	sh = shadow_of(t);
	*out = sh == NULL ? COW_GENERATION_NONE : cow__shadow_generation(sh);
	return COW_OK;
}

bool
cow_tensor_shares_shadow(const cow_tensor_t *a, const cow_tensor_t *b)
{
	if (a == NULL || b == NULL)
		return false;
	/* Two null shadows: both are their storage's default, allocated or
	 * not. */
	if (a->shadow == NULL && b->shadow == NULL)
		return a->storage != NULL && a->storage == b->storage;
	return shadow_of(a) == shadow_of(b);
}
