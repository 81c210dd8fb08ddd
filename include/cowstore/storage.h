/*
 * cowstore storages: a refcounted owner of one data allocation, with lazy
 * (copy-on-write) clones.
 *
 * Model (docs/design.md): lazy copies are distinct storages that share one
 * data allocation through a refcounted COW context. The first write through
 * any of them (cow_storage_mutable_data) materialises that storage: it copies
 * the data while others still share it, or, when it holds the last
 * reference, steals the data without copying.
 *
 * Thread-safety contract:
 * - The user serialises writes against reads on ONE storage, as in every
 *   tensor library: cow_storage_mutable_data(s) (a write) must not run
 *   concurrently with any other call on s except retain/release by holders
 *   of other references. Lazy clone, const access and the queries are reads
 *   and may run concurrently with each other on one storage.
 * - Across DIFFERENT storages that share data (lazy copies of each other),
 *   everything is safe with no user synchronisation: different threads may
 *   clone, write, materialise and release them at the same time.
 *
 * Memory the library does not own (cow_storage_from_external):
 * - With a deleter, the memory is handed over: the storage and its lazy
 *   copies own it, the last share's first write may take it over (steal)
 *   instead of copying, and the deleter runs once when no storage
 *   references it.
 * - Without a deleter, the memory is borrowed: the caller keeps it (valid
 *   until the last storage sharing it is released). It is shared lazily as
 *   usual but never stolen: only the storage created over it writes it in
 *   place (while private, or after taking it back as the last share); the
 *   first write through any other storage copies.
 * - With COW_STORAGE_READ_ONLY, no write ever reaches the memory, not even
 *   through the storage created over it: its first write copies too (and
 *   gives the memory back to its owner). Reads never copy. The memory must
 *   not change while a storage references it.
 * The owner's contract: write wrapped memory only through its storage, or
 * pin the storage (cow_storage_pin) while you write the memory directly.
 * cow_stats_t says whether a write copied or stole (external_copies,
 * materialize_copies, materialize_steals).
 *
 * Pins: a storage whose writable pointer is held outside the library (a
 * DLPack export, a pointer an engine keeps) is pinned; while it is, its
 * lazy clones are eager copies (cow_stats_t.pinned_clones), so no snapshot
 * shares bytes that the pointer's holder may still write.
 *
 * Alignment: the library needs none from storage memory; tensors over it
 * need their dtype's (cow_tensor_from_external, tensor.h).
 *
 * Zero-byte storages hold no data: const data is NULL, mutable data is NULL
 * with COW_OK, and they are never copy-on-write (a lazy clone of one is a
 * new, independent zero-byte storage; nothing is copied, so it is not
 * counted in cow_stats_t.eager_fallbacks).
 */
#ifndef COWSTORE_STORAGE_H
#define COWSTORE_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cow_storage_s cow_storage_t;

/* Called once when external data is no longer referenced, on the thread
 * that drops the last reference. */
typedef void (*cow_deleter_fn)(void *data, size_t nbytes, void *ctx);

/* cow_storage_from_external flags. */
enum {
	/*
	 * Pinned for life: someone may write the memory behind the library's
	 * back for as long as the storage lives (a producer's writable DLPack
	 * tensor). Every lazy clone is an eager copy, counted in
	 * cow_stats_t.eager_fallbacks and pinned_clones unless it has no
	 * bytes. For a while only, pin instead (cow_storage_pin); for memory
	 * the owner writes only through the storage, no flag is needed.
	 */
	COW_STORAGE_NOT_SHAREABLE = 1u << 0,
	/*
	 * Read-only memory (a PROT_READ mapping, an immutable buffer): no
	 * write reaches it; the first write through any storage over it
	 * copies. Shared lazily; never stolen.
	 */
	COW_STORAGE_READ_ONLY = 1u << 1
};

/* Largest nbytes a storage may have. */
#define COW_STORAGE_MAX_NBYTES ((size_t)PTRDIFF_MAX)

/**
 * cow_storage_new - a private storage of @nbytes zero-filled bytes.
 * @allocator: NULL for cow_allocator_default(); must outlive the storage.
 * The allocator zero-fills (its alloc_zeroed): with the built-in ones a
 * large storage costs next to no resident memory until its pages are written
 * (a fresh GiB, under 16 MiB).
 * Ownership: *out holds one reference, released with cow_storage_release().
 * Thread-safety: any thread.
 * Errors: COW_EINVAL (out NULL), COW_EOVERFLOW (nbytes above
 * COW_STORAGE_MAX_NBYTES), COW_ENOMEM (the back end failed, or @nbytes is
 * over what the allocator's limit leaves: cow_allocator_set_limit).
 */
COW_API cow_status_t cow_storage_new(size_t nbytes, cow_allocator_t *allocator,
    cow_storage_t **out);

/**
 * cow_storage_from_external - a storage over memory the caller provides,
 * with no copy (the ownership rules above).
 * @data: may be NULL only when nbytes is 0.
 * @deleter: called exactly once with (data, nbytes, deleter_ctx) when no
 * storage references the data any more (on the thread that drops the last
 * share); the memory is then owned by the storage family. NULL: borrowed,
 * the caller keeps ownership and must keep the memory valid until then.
 * @flags: 0, or COW_STORAGE_NOT_SHAREABLE and/or COW_STORAGE_READ_ONLY.
 * Metadata and later copies use cow_allocator_default().
 * Ownership: *out holds one reference (cow_storage_release). With a deleter,
 * @data is handed over on success; on failure nothing is taken and the
 * deleter is not called. Thread-safety: any thread.
 * Errors: COW_EINVAL (out NULL, data NULL with nbytes > 0, unknown flag),
 * COW_EOVERFLOW, COW_ENOMEM.
 */
COW_API cow_status_t cow_storage_from_external(void *data, size_t nbytes,
    cow_deleter_fn deleter, void *deleter_ctx, unsigned flags,
    cow_storage_t **out);

/**
 * cow_storage_from_external_with_allocator - cow_storage_from_external(),
 * with the storage's metadata and later copies (materialisation, the eager
 * clone of a COW_STORAGE_NOT_SHAREABLE storage) from @allocator (NULL:
 * cow_allocator_default()), which must outlive the storage and its copies.
 * Ownership: *out holds one reference; @data as cow_storage_from_external.
 * Thread-safety: any thread. Errors: as cow_storage_from_external.
 */
COW_API cow_status_t cow_storage_from_external_with_allocator(void *data,
    size_t nbytes, cow_deleter_fn deleter, void *deleter_ctx, unsigned flags,
    cow_allocator_t *allocator, cow_storage_t **out);

/**
 * cow_storage_retain - add a reference. Ownership: the caller holds one more
 * reference (cow_storage_release). Thread-safety: any thread holding a
 * reference. Errors: none; NULL does nothing. Aborts on a dead storage or
 * refcount overflow (a bug in the caller).
 */
COW_API void cow_storage_retain(cow_storage_t *storage);

/**
 * cow_storage_release - drop a reference; the last one frees the storage,
 * and gives back its share of the data (the last share frees the data, after
 * waiting for any peer still copying it).
 * Ownership: the caller's reference is gone (the caller must not use
 * @storage through it again).
 * Thread-safety: any thread holding a reference; safe against peers that
 * materialise or clone at the same time. Errors: none; NULL does nothing.
 */
COW_API void cow_storage_release(cow_storage_t *storage);

/**
 * cow_storage_nbytes - size in bytes. Thread-safety: any thread. Errors:
 * none; NULL gives 0.
 */
COW_API size_t cow_storage_nbytes(const cow_storage_t *storage);

/**
 * cow_storage_const_data - the data for reading. Never materialises and
 * costs no atomic operation.
 * Ownership: borrowed from the storage; valid until the next write
 * (cow_storage_mutable_data) through this storage or its release. The
 * caller must not write through it. Thread-safety: a read of @storage.
 * Errors: none; NULL for NULL or zero-byte storages.
 */
COW_API const void *cow_storage_const_data(const cow_storage_t *storage);

/**
 * cow_storage_mutable_data - the data for writing. A COW storage is
 * materialised first (copy, or steal when it holds the last share and may
 * write the memory); memory the storage may not write (read-only, or
 * borrowed by another storage) is copied first. After that the storage
 * owns its data privately.
 * Ownership: *ptr is borrowed from the storage; write through it only until
 * @storage is next lazy-cloned or released. A pointer kept across a lazy
 * clone writes into the bytes the clone shares: to keep a writable pointer,
 * pin the storage (cow_storage_pin), and its lazy clones copy instead.
 * Thread-safety: a write on @storage (see the contract above); safe against
 * any concurrent operation on other storages, shared data included.
 * Errors: COW_EINVAL (NULL), COW_ENOMEM (the copy could not be allocated:
 * the storage, its data and every share count are exactly as before).
 */
COW_API cow_status_t cow_storage_mutable_data(cow_storage_t *storage,
    void **ptr);

/**
 * cow_storage_materialize - make the storage private now, as
 * cow_storage_mutable_data() does, without returning the pointer.
 * Thread-safety: a write on @storage, as cow_storage_mutable_data().
 * Errors: COW_EINVAL (NULL), COW_ENOMEM (nothing changed).
 */
COW_API cow_status_t cow_storage_materialize(cow_storage_t *storage);

/**
 * cow_storage_pin - make the storage private and writable as
 * cow_storage_mutable_data() does, return its data, and pin it: until the
 * matching cow_storage_unpin(), its lazy clones are eager copies, so no
 * snapshot shares the bytes written through *ptr. Pins nest (a count).
 * Over borrowed memory, the storage created over it pins that memory in
 * place (*ptr is the memory), so its owner may write it directly.
 * Ownership: *ptr is borrowed from the storage, valid while it is pinned
 * and referenced; unpin once for every successful pin.
 * Thread-safety: a write on @storage. Errors: COW_EINVAL (NULL),
 * COW_ENOMEM (nothing changed), COW_EBUSY (the storage created over
 * borrowed memory, while lazy clones taken before still share that
 * memory; nothing changed).
 */
COW_API cow_status_t cow_storage_pin(cow_storage_t *storage, void **ptr);

/**
 * cow_storage_unpin - drop one pin (cow_storage_pin). When the last pin
 * goes, later lazy clones share the data again.
 * Thread-safety: any thread holding a reference, at any time (an export's
 * deleter may unpin on another thread). Errors: COW_EINVAL (NULL, or the
 * storage is not pinned; nothing changed).
 */
COW_API cow_status_t cow_storage_unpin(cow_storage_t *storage);

/**
 * cow_storage_is_pinned - true while the storage has a pin, or was made
 * COW_STORAGE_NOT_SHAREABLE (pinned for life). Thread-safety: any thread
 * holding a reference; stale once another thread unpins. Errors: none;
 * NULL gives false.
 */
COW_API bool cow_storage_is_pinned(const cow_storage_t *storage);

/**
 * cow_storage_is_read_only - true while the storage's data is read-only
 * memory (COW_STORAGE_READ_ONLY, a read-only DLPack import): its next write
 * copies. Thread-safety: a read of @storage. Errors: none; NULL gives false.
 */
COW_API bool cow_storage_is_read_only(const cow_storage_t *storage);

/**
 * cow_storage_lazy_clone - a new storage with the same bytes, sharing @src's
 * data until one of them is written. O(1) in the size, no byte copied. It
 * allocates the new storage, and the first time @src is cloned a context
 * too. A clone of a copy-on-write storage adds one to the share count; the
 * first clone instead installs, by compare-and-swap, a context that already
 * counts both shares. Falls back to an eager copy when @src is pinned
 * (cow_storage_pin, COW_STORAGE_NOT_SHAREABLE). The clone shares @src's
 * memory with its rules (read-only or borrowed memory stays so: the clone
 * never writes it).
 * Ownership: *out holds one reference. The new storage uses @src's allocator.
 * Thread-safety: a read of @src: any number of threads may lazy-clone one
 * storage at the same time (the first clones race to install one context;
 * one wins).
 * Errors: COW_EINVAL (NULL), COW_ENOMEM (nothing changed: @src is not made
 * copy-on-write and share counts are unchanged).
 */
COW_API cow_status_t cow_storage_lazy_clone(cow_storage_t *src,
    cow_storage_t **out);

/**
 * cow_storage_is_cow - true while the storage shares (or may share) its data
 * through a COW context, i.e. until its next materialisation. Thread-safety:
 * a read. Errors: none; NULL gives false.
 */
COW_API bool cow_storage_is_cow(const cow_storage_t *storage);

/**
 * cow_storage_share_count - how many storages share this storage's data (1
 * when private). Thread-safety: a read; under concurrent materialisation of
 * peers the value may be stale by the time it returns. Errors: none; NULL
 * gives 0.
 */
COW_API size_t cow_storage_share_count(const cow_storage_t *storage);

/**
 * cow_storage_shares_data - true when @a and @b share one data allocation
 * (the same storage, or lazy copies that neither has materialised).
 * Thread-safety: a read of both. Errors: none; NULL gives false.
 */
COW_API bool cow_storage_shares_data(const cow_storage_t *a,
    const cow_storage_t *b);

/**
 * cow_storage_allocator - the allocator the storage uses for its metadata
 * and its copies. Ownership: borrowed (the allocator outlives the storage).
 * Thread-safety: any thread holding a reference. Errors: none; NULL gives
 * NULL.
 */
COW_API cow_allocator_t *cow_storage_allocator(const cow_storage_t *storage);

#ifdef __cplusplus
}
#endif
#endif
