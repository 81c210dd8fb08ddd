/*
 * storage.h - internal layout of a storage.
 */
#ifndef COW_STORAGE_STORAGE_H
#define COW_STORAGE_STORAGE_H

#include <cowstore/storage.h>

#include "storage/cow_ctx.h"

/*
 * Internal storage flag, beside the public COW_STORAGE_* ones: the storage
 * the caller created over borrowed memory (no deleter). It alone may write
 * that memory (cow__buffer_may_write): in place while private, or by taking
 * it back from its context when it holds the last share. Lazy clones never
 * inherit it. A home storage only ever holds or shares that one borrowed
 * buffer (a copy it makes is owned), so the flag never needs clearing.
 */
#define COW__STORAGE_HOME (1u << 31)

/* Every public creation flag (cow_storage_from_external). */
#define COW__STORAGE_FLAGS \
	((unsigned)COW_STORAGE_NOT_SHAREABLE | (unsigned)COW_STORAGE_READ_ONLY)

/*
 * Write hooks: what a layer above wants done at a storage's next write (a
 * snapshot that holds a lazy copy of it, snapshot/snapshot.h). A hook is
 * added by a read of the storage (cow__storage_hooks_push) and runs once, on
 * the writer's thread: before_write before the storage is materialised,
 * after_write after it (@copied: the write copied the shared bytes rather
 * than stealing them), then drop. A write that fails (its materialisation
 * had no memory, and nothing changed) keeps its hooks for the next one,
 * which runs before_write again. No lock is held while they run.
 */
struct cow__write_hook;

struct cow__write_hook_ops {
	void (*before_write)(struct cow__write_hook *hook);
	/* True when @copied and the copy was made for the hook's holder
	 * (a snapshot that held the bytes): the write is then counted once
	 * in cow_stats_t.snapshot_copies, however many hooks say so. */
	bool (*after_write)(struct cow__write_hook *hook, bool copied);
	/* Nothing is left to do at a write: a later add may unlink it. */
	bool (*finished)(const struct cow__write_hook *hook);
	/* The storage lets go of the hook (after it ran, or unrun). */
	void (*drop)(struct cow__write_hook *hook);
};

struct cow__write_hook {
	const struct cow__write_hook_ops *ops;
	struct cow__write_hook *next; /* the storage's list */
};

struct cow_storage_s {
	cow__refcount_t refs; /* Handles. Synchronization: atomic. */
	unsigned flags;       /* COW_STORAGE_NOT_SHAREABLE, COW__STORAGE_HOME
	                         (who may write the memory: buf.access).
	                         Read-only after init. */
	/*
	 * Pins (cow_storage_pin): while non-zero the storage is private and
	 * its lazy clones copy. A COW_STORAGE_NOT_SHAREABLE storage starts
	 * with one that no unpin removes. Synchronization: atomic
	 * (cow__pin_*); pinned by writes of this storage, unpinned from any
	 * thread.
	 */
	cow__refcount_t pins;
	/*
	 * NULL while the storage owns its data privately. Synchronization:
	 * installed by compare-and-swap by the first lazy clone (a read, so
	 * clones may race); cleared by materialisation (a write, which the
	 * user serialises against every other use of this storage).
	 */
	cow__atomic_ptr_t ctx; /* cow__ctx_t * */
	/* The bytes: ctx->buf.data while COW, else buf.data. Changed only by
	 * materialisation (a write). */
	void *data;
	/*
	 * The reshape-alias simulation's state (storage/shadow.h): NULL until
	 * the first simulated lazy copy of this storage, then its default
	 * shadow, physical generation and warn-once flag. Owned. Synchronization:
	 * installed by compare-and-swap (simulated copies are reads and may
	 * race); freed with the storage.
	 */
	cow__atomic_ptr_t shadow; /* struct cow__shadow_state * */
	size_t nbytes;          /* Read-only after init. */
	cow__buffer_t buf;      /* Owned data while ctx is NULL. */
	cow_allocator_t *alloc; /* Read-only: metadata and copies. */
	/*
	 * Write hooks to run at the next write (above). Synchronization:
	 * reads add them, under a process-wide lock (storage.c's hooks_lock)
	 * since reads may race; the next write takes them all, with no lock,
	 * since the user orders it against every read; so does the last
	 * release.
	 */
	struct cow__write_hook *hooks;
};

/* cow_storage_new, without the zero fill: the bytes are unspecified, for a
 * creator that writes every one before anyone reads (a kernel's output).
 * @allocator NULL: the default. Errors as cow_storage_new. */
cow_status_t cow__storage_new_uninit(size_t nbytes, cow_allocator_t *allocator,
    cow_storage_t **out);

/* cow_storage_from_external_with_allocator, its errors not yet named. */
cow_status_t cow__storage_external(void *data, size_t nbytes,
    cow_deleter_fn deleter, void *deleter_ctx, unsigned flags,
    cow_allocator_t *allocator, cow_storage_t **out);

/* cow_storage_pin / cow_storage_unpin, their errors not yet named (the
 * storage is not NULL). */
cow_status_t cow__storage_pin(cow_storage_t *storage, void **ptr);
cow_status_t cow__storage_unpin(cow_storage_t *storage);

/* Is @storage the one made over borrowed memory, still holding or sharing
 * that memory (so that only it may write the memory: a lazy clone of it
 * would make its writes copy)? A read of @storage. */
bool cow__storage_borrowed_home(const cow_storage_t *storage);

/* Add write hooks (a read of each storage), under one hold of the lock:
 *	struct cow__write_hook *done;
 *	cow__storage_hooks_begin(&done);
 *	cow__storage_hooks_push(storage, hook, &done);  (any number)
 *	cow__storage_hooks_end(done);
 * Hooks that say they are finished are unlinked on the way and dropped at
 * the end, after the lock. Any thread; push nothing that takes a lock. */
void cow__storage_hooks_begin(struct cow__write_hook **done);
void cow__storage_hooks_push(cow_storage_t *storage,
    struct cow__write_hook *hook, struct cow__write_hook **done);
void cow__storage_hooks_end(struct cow__write_hook *done);

/* Undo the hand-over of cow_storage_from_external's memory: the storage
 * forgets its deleter, so that releasing it leaves the memory with the
 * caller. Only for the creator of a private storage, holding its only
 * reference (a creation that failed after the storage was made). */
void cow__storage_disown(cow_storage_t *storage);

#endif
