/*
 * storage.c - storages: creation, references, data access, lazy clone.
 * The protocol for shared data lives in cow_ctx.c.
 */
#include <string.h>

#include "alloc/allocator.h"
#include "core/error.h"
#include "core/fault.h"
#include "core/fork.h"
#include "core/mutex.h"
#include "storage/shadow.h"
#include "storage/stats.h"
#include "storage/storage.h"

static cow_status_t
check_nbytes(size_t nbytes)
{
	if (nbytes > COW_STORAGE_MAX_NBYTES)
		return cow__error(COW_EOVERFLOW,
		    "nbytes %zu exceeds the maximum %zu", nbytes,
		    COW_STORAGE_MAX_NBYTES);
	return COW_OK;
}

/* Pinned for a while (cow_storage_pin) or for life
 * (COW_STORAGE_NOT_SHAREABLE: one pin from the start that no unpin
 * removes). */
static bool
storage_pinned(const cow_storage_t *s)
{
	return cow__pin_load(&s->pins) != 0;
}

/* The pins no unpin may remove. */
static unsigned
storage_life_pins(const cow_storage_t *s)
{
	return (s->flags & COW_STORAGE_NOT_SHAREABLE) != 0;
}

/*
 * Initialise @s, a new storage with one handle and no shadow, whose
 * @nbytes bytes are at @data: private over @buf (@ctx NULL), or sharing
 * @ctx (@buf NULL: it owns no buffer).
 */
static void
storage_init(cow_storage_t *s, cow_allocator_t *alloc, unsigned flags,
    cow__ctx_t *ctx, const cow__buffer_t *buf, void *data, size_t nbytes)
{
	cow__ref_init(&s->refs, 1);
	s->flags = flags;
	cow__ref_init(&s->pins, storage_life_pins(s));
	cow__ptr_init(&s->ctx, ctx);
	s->data = data;
	s->nbytes = nbytes;
	s->buf = buf != NULL ? *buf : (cow__buffer_t){0};
	s->alloc = alloc;
	cow__ptr_init(&s->shadow, NULL);
	s->hooks = NULL;
}

/* ------------------------------------------------------------------ */
/* Write hooks (storage.h). Adds are reads and may race on one storage:
 * they take hooks_lock, a leaf (nothing else is locked under it: the
 * hooks they unlink are dropped after it). The write that runs them, and
 * the last release, take the list alone. */

static cow__mutex_t hooks_lock =
    COW__MUTEX_INITIALIZER(COW__RANK_STORAGE_HOOKS);

static const struct cow__fork_hooks hooks_fork_hooks = {
	.mutexes = &hooks_lock, .n_mutexes = 1
};

__attribute__((constructor)) static void
hooks_fork_register(void)
{
	cow__fork_register(COW__RANK_STORAGE_HOOKS, &hooks_fork_hooks);
}

void
cow__storage_hooks_begin(struct cow__write_hook **done)
{
	*done = NULL;
	cow__mutex_lock(&hooks_lock);
}

void
cow__storage_hooks_push(cow_storage_t *storage, struct cow__write_hook *hook,
    struct cow__write_hook **done)
{
	struct cow__write_hook **pp, *h;

	for (pp = &storage->hooks; (h = *pp) != NULL;) {
		if (h->ops->finished(h)) {
			*pp = h->next;
			h->next = *done;
			*done = h;
		} else {
			pp = &h->next;
		}
	}
	hook->next = storage->hooks;
	storage->hooks = hook;
}

void
cow__storage_hooks_end(struct cow__write_hook *done)
{
	struct cow__write_hook *h;

	cow__mutex_unlock(&hooks_lock);
	for (; done != NULL; done = h) {
		h = done->next;
		done->ops->drop(done);
	}
}

/* Take @storage's hooks (the caller writes or frees it). */
static struct cow__write_hook *
hooks_take(cow_storage_t *storage)
{
	struct cow__write_hook *list = storage->hooks;

	storage->hooks = NULL;
	return list;
}

/* Run the after-part of @list's hooks and drop them; whether one of them
 * took the copy for its holder. */
static bool
hooks_after(struct cow__write_hook *list, bool copied)
{
	struct cow__write_hook *next;
	bool held = false;

	for (; list != NULL; list = next) {
		next = list->next;
		held |= list->ops->after_write(list, copied);
		list->ops->drop(list);
	}
	return held;
}

/* A storage struct around @buf (which it then owns). */
static cow_status_t
storage_wrap(cow_allocator_t *alloc, const cow__buffer_t *buf,
    unsigned flags, cow_storage_t **out)
{
	cow_storage_t *s = cow__alloc(alloc, sizeof *s);

	if (s == NULL)
		return COW_ENOMEM;
	/* storage.h: 0 bytes, NULL data */
	storage_init(s, alloc, flags, NULL, buf,
	    buf->nbytes > 0 ? buf->data : NULL, buf->nbytes);
	*out = s;
	return COW_OK;
}

/* A private storage with a fresh buffer of @nbytes; zeroed: see buffer.h. */
static cow_status_t
storage_alloc(cow_allocator_t *alloc, size_t nbytes, bool zeroed,
    unsigned flags, cow_storage_t **out)
{
	cow__buffer_t buf;

	if ((zeroed ? cow__buffer_alloc_zeroed(alloc, nbytes, &buf) :
	    cow__buffer_alloc(alloc, nbytes, &buf)) != COW_OK)
		return COW_ENOMEM;
	if (storage_wrap(alloc, &buf, flags, out) != COW_OK) {
		cow__buffer_free(&buf);
		return COW_ENOMEM;
	}
	return COW_OK;
}

cow_status_t
cow_storage_new(size_t nbytes, cow_allocator_t *allocator, cow_storage_t **out)
{
	cow_storage_t *s;
	cow_status_t st;

	COW__RETURN_IF_NULL(out);
	if ((st = check_nbytes(nbytes)) != COW_OK)
		return COW__NAMED(st);
	if (allocator == NULL)
		allocator = cow_allocator_default();
	/* Zero-filled by the allocator, which need not touch fresh pages. */
	if ((st = storage_alloc(allocator, nbytes, true, 0, &s)) != COW_OK)
		return COW__NAMED(st);
	*out = s;
	return COW_OK;
}

cow_status_t
cow__storage_external(void *data, size_t nbytes, cow_deleter_fn deleter,
    void *deleter_ctx, unsigned flags, cow_allocator_t *allocator,
    cow_storage_t **out)
{
	cow__buffer_t buf = {data, nbytes, deleter, deleter_ctx,
	    (flags & COW_STORAGE_READ_ONLY) ? COW__BUFFER_READ_ONLY :
	    deleter == NULL ? COW__BUFFER_BORROWED : COW__BUFFER_OWNED};
	cow_status_t st;

	if (out == NULL)
		return cow__error(COW_EINVAL, "argument 'out' is NULL");
	if ((st = check_nbytes(nbytes)) != COW_OK)
		return st;
	if (data == NULL && nbytes > 0)
		return cow__error(COW_EINVAL,
		    "data is NULL but nbytes is %zu", nbytes);
	if ((flags & ~(unsigned)COW__STORAGE_FLAGS) != 0)
		return cow__error(COW_EINVAL, "unknown flags 0x%x",
		    flags & ~(unsigned)COW__STORAGE_FLAGS);
	/* Read-only travels with the buffer (buf.access), pinned for life
	 * stays with this storage, and borrowed memory may be written by this
	 * storage alone (storage.h). */
	flags &= ~(unsigned)COW_STORAGE_READ_ONLY;
	if (deleter == NULL)
		flags |= COW__STORAGE_HOME;
	return storage_wrap(allocator != NULL ? allocator :
	    cow_allocator_default(), &buf, flags, out);
}

cow_status_t
cow_storage_from_external(void *data, size_t nbytes, cow_deleter_fn deleter,
    void *deleter_ctx, unsigned flags, cow_storage_t **out)
{
	return COW__NAMED(cow__storage_external(data, nbytes, deleter,
	    deleter_ctx, flags, NULL, out));
}

cow_status_t
cow_storage_from_external_with_allocator(void *data, size_t nbytes,
    cow_deleter_fn deleter, void *deleter_ctx, unsigned flags,
    cow_allocator_t *allocator, cow_storage_t **out)
{
	return COW__NAMED(cow__storage_external(data, nbytes, deleter,
	    deleter_ctx, flags, allocator, out));
}

void
cow_storage_retain(cow_storage_t *storage)
{
	if (storage == NULL)
		return;
	cow__ref_get(&storage->refs);
}

void
cow_storage_release(cow_storage_t *storage)
{
	cow__ctx_t *ctx;

	if (storage == NULL)
		return;
	/*
	 * Sole handle: skip the decrement. The caller's handle is the only
	 * one, so no other thread can release this storage, nor retain it
	 * (retaining needs a handle): nobody else can touch refs any more.
	 * The acquire of cow__ref_load orders every earlier holder's work
	 * (each dropped its handle with a releasing decrement) before the
	 * frees below. Otherwise the decrement decides who is last.
	 */
	if (cow__ref_load(&storage->refs) != 1 &&
	    !cow__ref_put(&storage->refs))
		return;
	if (storage->hooks != NULL)
		(void)hooks_after(hooks_take(storage), false); /* unwritten */
	ctx = cow__ptr_load(&storage->ctx);
	if (ctx != NULL)
		cow__ctx_unshare(ctx);
	else
		cow__buffer_free(&storage->buf);
	cow__shadow_state_free(cow__storage_shadow_state(storage));
	cow__free(storage->alloc, storage, sizeof *storage);
}

size_t
cow_storage_nbytes(const cow_storage_t *storage)
{
	return storage == NULL ? 0 : storage->nbytes;
}

const void *
cow_storage_const_data(const cow_storage_t *storage)
{
	return storage == NULL ? NULL : storage->data;
}

/* A private storage's first write when it may not write its buffer
 * (read-only memory): a copy replaces the buffer, whose owner gets it back
 * (its deleter). On COW_ENOMEM nothing changed. */
static __attribute__((noinline, cold)) cow_status_t
storage_copy_private(cow_storage_t *storage)
{
	cow__buffer_t copy;

	if (cow__buffer_alloc(storage->alloc, storage->nbytes, &copy) !=
	    COW_OK)
		return COW_ENOMEM;
	if (storage->nbytes > 0)
		memcpy(copy.data, storage->buf.data, storage->nbytes);
	cow__buffer_free(&storage->buf);
	storage->buf = copy;
	storage->data = copy.data;
	if (storage->nbytes == 0) /* an empty buffer: nothing copied */
		return COW_OK;
	cow__stat_add(COW__STAT_MATERIALIZE_COPIES, 1);
	cow__stat_add(COW__STAT_EXTERNAL_COPIES, 1);
	cow__stat_add(COW__STAT_BYTES_COPIED, storage->nbytes);
	return COW_OK;
}

static cow_status_t storage_own(cow_storage_t *storage);

/* storage_own for a storage with write hooks: they run around the
 * materialisation (out of line: the common write has none). */
static __attribute__((noinline)) cow_status_t
storage_own_hooked(cow_storage_t *storage)
{
	struct cow__write_hook *list = hooks_take(storage), *h;
	const void *before;
	cow_status_t st;

	for (h = list; h != NULL; h = h->next)
		h->ops->before_write(h);
	before = storage->data;
	if ((st = storage_own(storage)) != COW_OK) {
		/* Nothing changed: the hooks wait for the next write. (The
		 * write holds the storage alone: no add runs meanwhile.) */
		storage->hooks = list;
		return st;
	}
	/* One write, one copy: counted once, however many snapshots held
	 * the bytes (each counts it in its own writer_copies). */
	if (hooks_after(list, storage->data != before))
		cow__stat_add(COW__STAT_SNAPSHOT_COPIES, 1);
	return COW_OK;
}

/* Make @storage private and writable: materialise a
 * COW storage; copy the memory of a private one it may not write. */
static cow_status_t
storage_own(cow_storage_t *storage)
{
	cow__ctx_t *ctx = cow__ptr_load(&storage->ctx);
	bool home = (storage->flags & COW__STORAGE_HOME) != 0;
	cow__buffer_t buf;
	cow_status_t st;

	if (__builtin_expect(storage->hooks != NULL, 0))
		return storage_own_hooked(storage);
	if (ctx != NULL) {
		COW__SCHED_ACCESS(&ctx->buf, sizeof ctx->buf, 0);
		COW__FAULT_POINT(materialize,
		    st = cow__ctx_materialize(ctx, storage->alloc,
		    cow__buffer_may_write(&ctx->buf, home), &buf));
		if (st != COW_OK)
			return st;
		storage->buf = buf;
		storage->data = buf.data;
		COW__FAULT_POINT(detach_context,
		    cow__ptr_store(&storage->ctx, NULL));
	} else if (!cow__buffer_may_write(&storage->buf, home)) {
		return storage_copy_private(storage);
	}
	/* The caller writes the buffer next. */
	COW__SCHED_ACCESS(storage->data, storage->nbytes, 1);
	return COW_OK;
}

cow_status_t
cow_storage_mutable_data(cow_storage_t *storage, void **ptr)
{
	cow_status_t st;

	COW__RETURN_IF_NULL(storage);
	COW__RETURN_IF_NULL(ptr);
	if ((st = storage_own(storage)) != COW_OK)
		return COW__NAMED(st);
	*ptr = storage->data;
	return COW_OK;
}

cow_status_t
cow_storage_materialize(cow_storage_t *storage)
{
	COW__RETURN_IF_NULL(storage);
	return COW__NAMED(storage_own(storage));
}

cow_status_t
cow__storage_pin(cow_storage_t *storage, void **ptr)
{
	cow__ctx_t *ctx = cow__ptr_load(&storage->ctx);
	unsigned shares;
	cow_status_t st;

	/* The home of borrowed memory pins that memory in place: its owner
	 * is about to write it directly, so it must not stay shared by
	 * lazy clones, and copying it away would not help them. */
	if (ctx != NULL && (storage->flags & COW__STORAGE_HOME) &&
	    ctx->buf.access == COW__BUFFER_BORROWED &&
	    (shares = cow__ref_load(&ctx->shares)) > 1)
		return cow__error(COW_EBUSY, "the borrowed memory is "
		    "still shared by %u lazy clone(s) taken before the pin: "
		    "release them, or pin before cloning", shares - 1);
	if ((st = storage_own(storage)) != COW_OK)
		return st;
	cow__pin_get(&storage->pins);
	*ptr = storage->data;
	return COW_OK;
}

cow_status_t
cow_storage_pin(cow_storage_t *storage, void **ptr)
{
	COW__RETURN_IF_NULL(storage);
	COW__RETURN_IF_NULL(ptr);
	return COW__NAMED(cow__storage_pin(storage, ptr));
}

cow_status_t
cow__storage_unpin(cow_storage_t *storage)
{
	if (!cow__pin_put(&storage->pins, storage_life_pins(storage)))
		return cow__error(COW_EINVAL,
		    "the storage is not pinned (more unpins than pins)");
	return COW_OK;
}

cow_status_t
cow_storage_unpin(cow_storage_t *storage)
{
	COW__RETURN_IF_NULL(storage);
	return COW__NAMED(cow__storage_unpin(storage));
}

bool
cow__storage_borrowed_home(const cow_storage_t *storage)
{
	cow__ctx_t *ctx = cow__ptr_load(&storage->ctx);

	return (storage->flags & COW__STORAGE_HOME) != 0 &&
	    (ctx != NULL ? &ctx->buf : &storage->buf)->access ==
	    COW__BUFFER_BORROWED;
}

void
cow__storage_disown(cow_storage_t *storage)
{
	storage->buf.deleter = NULL;
}

bool
cow_storage_is_pinned(const cow_storage_t *storage)
{
	return storage != NULL && storage_pinned(storage);
}

bool
cow_storage_is_read_only(const cow_storage_t *storage)
{
	cow__ctx_t *ctx;

	if (storage == NULL)
		return false;
	ctx = cow__ptr_load(&storage->ctx);
	return (ctx != NULL ? &ctx->buf : &storage->buf)->access ==
	    COW__BUFFER_READ_ONLY;
}

/* Lazy clone of a storage that cannot share its data: an eager copy
 * (@pinned: because of a pin, counted as such). */
static cow_status_t
storage_eager_clone(cow_storage_t *src, bool pinned, cow_storage_t **out)
{
	cow_storage_t *dst;

	if (storage_alloc(src->alloc, src->nbytes, false, 0, &dst) !=
	    COW_OK)
		return COW_ENOMEM;
	if (src->nbytes > 0) {
		memcpy(dst->data, src->data, src->nbytes);
		cow__stat_add(COW__STAT_EAGER_FALLBACKS, 1);
		cow__stat_add(COW__STAT_BYTES_COPIED, src->nbytes);
		if (pinned)
			cow__stat_add(COW__STAT_PINNED_CLONES, 1);
	}
	*out = dst;
	return COW_OK;
}

cow_status_t
cow_storage_lazy_clone(cow_storage_t *src, cow_storage_t **out)
{
	cow_storage_t *dst;
	cow__ctx_t *ctx, *fresh;
	cow_status_t st;
	bool share;

	COW__RETURN_IF_NULL(src);
	COW__RETURN_IF_NULL(out);
	/* A pinned storage's bytes may be written through a pointer the
	 * library does not see: a snapshot must not share them. */
	if (src->nbytes == 0 ||
	    COW__FAULT_POINT(clone_checks_pin, storage_pinned(src))) {
		st = storage_eager_clone(src, src->nbytes > 0, out);
		if (st == COW_OK)
			cow__stat_add(COW__STAT_LAZY_CLONES, 1);
		return COW__NAMED(st);
	}
	COW__ASSERT(!storage_pinned(src), "a pinned storage is shared");
	/* Allocate everything before changing anything: on failure the
	 * source is left exactly as it was (not even made COW). */
	dst = cow__alloc(src->alloc, sizeof *dst);
	if (dst == NULL)
		return COW__NAMED(COW_ENOMEM);
	ctx = cow__ptr_load(&src->ctx);
	share = true;
	if (ctx == NULL) {
		/* [WRAP] First clone: hand the data to a new context that
		 * already counts two shares, the source's and dst's. Other
		 * threads may be cloning src too; one install wins. */
		if (cow__ctx_new(src->alloc, &src->buf, 2, &fresh) != COW_OK) {
			cow__free(src->alloc, dst, sizeof *dst);
			return COW__NAMED(COW_ENOMEM);
		}
		ctx = cow__ptr_install(&src->ctx, fresh);
		if (ctx == fresh) {
			share = false;
			cow__stat_add(COW__STAT_CTX_WRAPS, 1);
		} else {
			cow__ctx_discard(fresh);
		}
	}
	/*
	 * Flags 0: neither pinned nor home, the memory's rules are its
	 * buffer's, in the context. src->data is ctx->buf.data (only a write
	 * to src, never concurrent with this read of it, changes it): reading
	 * it here leaves the context's cache line to the increment below. A
	 * real lazy copy: a new physical storage, never shadowed yet.
	 */
	storage_init(dst, src->alloc, 0, ctx, NULL, src->data,
	    src->nbytes);
	cow__stat_add(COW__STAT_LAZY_CLONES, 1);
	/* Last, so that threads cloning one source touch its context's line
	 * once each, as briefly as possible (src holds a share meanwhile, so
	 * the context cannot go away). */
	if (share)
		cow__ctx_share(ctx); /* [CLONE] */
	*out = dst;
	return COW_OK;
}

bool
cow_storage_is_cow(const cow_storage_t *storage)
{
	return storage != NULL &&
	    cow__ptr_load(&storage->ctx) != NULL;
}

size_t
cow_storage_share_count(const cow_storage_t *storage)
{
	cow__ctx_t *ctx;

	if (storage == NULL)
		return 0;
	ctx = cow__ptr_load(&storage->ctx);
	return ctx == NULL ? 1 : cow__ref_load(&ctx->shares);
}

bool
cow_storage_shares_data(const cow_storage_t *a, const cow_storage_t *b)
{
	cow__ctx_t *ca, *cb;

	if (a == NULL || b == NULL)
		return false;
	if (a == b)
		return true;
	ca = cow__ptr_load(&a->ctx);
	cb = cow__ptr_load(&b->ctx);
	return ca != NULL && ca == cb;
}

cow_allocator_t *
cow_storage_allocator(const cow_storage_t *storage)
{
	return storage == NULL ? NULL : storage->alloc;
}

cow_status_t
cow__storage_new_uninit(size_t nbytes, cow_allocator_t *allocator,
    cow_storage_t **out)
{
	cow_status_t st;

	if ((st = check_nbytes(nbytes)) != COW_OK)
		return st;
	if (allocator == NULL)
		allocator = cow_allocator_default();
	return storage_alloc(allocator, nbytes, false, 0, out);
}
