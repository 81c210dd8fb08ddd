/*
 * cowstore snapshots: a consistent copy of a named set of tensors, taken
 * with no byte copied, and persisted while writers go on
 * (docs/snapshots.md).
 *
 * Contract. Taking a snapshot is a read of every tensor in it: order it
 * against writes to them, as any read. Once cow_snapshot_take returns,
 * writers need no coordination with the snapshot, its readers or its
 * persister, on any thread.
 *
 * A snapshot holds one lazy copy of each tensor (tensors over one storage
 * share one lazy copy of it). A writer's first write to a tensor the
 * snapshot still holds copies that tensor's storage (counted in
 * cow_snapshot_stats_t.writer_copies); once the snapshot has released it
 * (persisted, or released early), the write steals instead. In the
 * persist-before-write save (COW_SNAPSHOT_PERSIST_FIRST), a writer's first
 * write to a tensor not persisted yet writes that tensor to the target
 * itself, then writes in place.
 *
 * A pinned tensor (storage.h, "Pins": a DLPack export, a kept writable
 * pointer) cannot be shared: the snapshot takes an eager copy of its
 * storage, counted in pinned_copies and pinned_bytes (and in extra_bytes
 * while held). Functional tensors (functional.h) have no storage to share
 * and are refused: snapshot cow_functional_to_plain()'s result.
 *
 * Thread-safety: every function may be called from any thread, and
 * concurrently with each other on one snapshot, except cow_snapshot_release
 * of the last reference (no other call on that snapshot may run or follow).
 * At most one save (cow_snapshot_save or a job) runs on a snapshot at a
 * time: a second one fails with COW_EBUSY.
 *
 * Fork (docs/embedding.md, "Threading contract"): a child inherits snapshots as they
 * are; a save that was running in the parent does not run in the child
 * (its jobs report COW_ECANCELED there, and the child's writers never write
 * to its target).
 */
#ifndef COWSTORE_SNAPSHOT_H
#define COWSTORE_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "dtype.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cow_snapshot cow_snapshot_t;

/**
 * cow_snapshot_take - a snapshot of @count tensors with their names (each a
 * NUL-terminated string, copied; names need not be unique here).
 * Ownership: the snapshot holds its own lazy copies; @tensors stay the
 * caller's. *out holds one reference (cow_snapshot_release).
 * Thread-safety: a read of every tensor in @tensors.
 * Errors: COW_EINVAL (NULL arrays with @count > 0, a NULL tensor or name,
 * a functional tensor), COW_EALIASING (a read refused by the reshape-alias
 * check, reshape.h), COW_ENOMEM. On error nothing was taken.
 */
COW_API cow_status_t cow_snapshot_take(size_t count,
    cow_tensor_t *const *tensors, const char *const *names,
    cow_snapshot_t **out);

/**
 * cow_snapshot_retain / cow_snapshot_release - add or drop a reference; the
 * last release drops every lazy copy still held. A save in progress holds
 * its own reference.
 * Ownership: release gives up one reference the caller holds.
 * Thread-safety: any thread. Errors: none; NULL does nothing.
 */
COW_API void cow_snapshot_retain(cow_snapshot_t *snap);
COW_API void cow_snapshot_release(cow_snapshot_t *snap);

/**
 * cow_snapshot_count, _name, _dtype, _ndim, _sizes, _nbytes - what the
 * snapshot holds, in the order given to cow_snapshot_take: tensor @i's
 * name, dtype, shape and size in bytes (numel * itemsize: what a save
 * writes for it), also after the tensor is released.
 * Ownership: the name and sizes belong to the snapshot (valid while it
 * lives). Thread-safety: any thread.
 * Errors: none; an @i out of range gives NULL, COW_DTYPE_INVALID, -1 or 0.
 */
COW_API size_t cow_snapshot_count(const cow_snapshot_t *snap);
COW_API const char *cow_snapshot_name(const cow_snapshot_t *snap, size_t i);
COW_API cow_dtype_t cow_snapshot_dtype(const cow_snapshot_t *snap, size_t i);
COW_API int cow_snapshot_ndim(const cow_snapshot_t *snap, size_t i);
COW_API const int64_t *cow_snapshot_sizes(const cow_snapshot_t *snap,
    size_t i);
COW_API uint64_t cow_snapshot_nbytes(const cow_snapshot_t *snap, size_t i);

/**
 * cow_snapshot_get - the snapshot's value of tensor @i: a new lazy copy of
 * it. Writes to *out copy it and never reach the snapshot.
 * Ownership: *out holds one reference.
 * Thread-safety: any thread, concurrently with writers, saves and releases.
 * Errors: COW_EINVAL (NULL), COW_ERANGE (@i), COW_ERELEASED (tensor @i was
 * released: persisted or released early), COW_ENOMEM.
 */
COW_API cow_status_t cow_snapshot_get(cow_snapshot_t *snap, size_t i,
    cow_tensor_t **out);

/**
 * cow_snapshot_release_tensor - release tensor @i now. When it is the last
 * tensor of its storage the snapshot holds, the snapshot's lazy copy of
 * that storage goes, so that the live tensor's next write steals instead
 * of copying; while a save has that storage (it is writing one of its
 * tensors), the save lets it go when done. Releasing a released tensor
 * does nothing; a save that has not written it yet fails with
 * COW_ERELEASED.
 * Ownership: the snapshot's lazy copy of tensor @i goes.
 * Thread-safety: any thread.
 * Errors: COW_EINVAL (NULL), COW_ERANGE (@i).
 */
COW_API cow_status_t cow_snapshot_release_tensor(cow_snapshot_t *snap,
    size_t i);

/**
 * cow_snapshot_is_held - whether tensor @i is still held (not persisted or
 * released). Thread-safety: any thread.
 * Errors: none; false for NULL or an @i out of range.
 */
COW_API bool cow_snapshot_is_held(const cow_snapshot_t *snap, size_t i);

typedef struct cow_snapshot_stats_s {
	uint64_t tensors;         /* tensors in the snapshot */
	uint64_t bytes;           /* their bytes (what a save writes) */
	uint64_t held_tensors;    /* not persisted or released yet */
	uint64_t extra_bytes;     /* bytes only the snapshot keeps alive now:
	                             storages it holds whose live tensor was
	                             written since, or that were pinned */
	uint64_t extra_peak;      /* the most extra_bytes has been */
	uint64_t writer_copies;   /* live storages whose first write copied
	                             because the snapshot held them */
	uint64_t writer_persists; /* storages a writer persisted itself
	                             (COW_SNAPSHOT_PERSIST_FIRST) */
	uint64_t pinned_copies;   /* pinned storages copied at take */
	uint64_t pinned_bytes;    /* their bytes */
} cow_snapshot_stats_t;

/**
 * cow_snapshot_stats - the snapshot's accounting into *out.
 * Thread-safety: any thread; counts of events running meanwhile may or may
 * not be in it. Errors: none; NULL does nothing.
 */
COW_API void cow_snapshot_stats(const cow_snapshot_t *snap,
    cow_snapshot_stats_t *out);

/* ------------------------------------------------------------------ */
/* Saving: the tensors' bytes, each contiguous and row-major (a strided
 * view is written in C order), in the save's order, through callbacks. */

typedef enum cow_snapshot_save_mode {
	/* Stream: the bytes go through @write, one tensor after another, on
	 * the saving thread; each storage is released as soon as its last
	 * tensor is written. */
	COW_SNAPSHOT_STREAM = 0,
	/* Persist first: every tensor has its offset in the target (@pwrite
	 * at @base_offset plus the bytes of the tensors before it in the
	 * save's order). The saving thread persists them in order; a writer
	 * whose first write reaches a storage not persisted yet persists that
	 * storage's tensors itself, on its own thread, then writes in place.
	 * One of the two claims each storage; the other waits or skips. */
	COW_SNAPSHOT_PERSIST_FIRST = 1
} cow_snapshot_save_mode_t;

typedef struct cow_snapshot_save_s {
	cow_snapshot_save_mode_t mode;
	/* COW_SNAPSHOT_STREAM: append @nbytes (> 0). 0 on success, else an
	 * errno value (the save fails with COW_EIO and says which). Called
	 * on the saving thread only. */
	int (*write)(void *ctx, const void *data, size_t nbytes);
	/* COW_SNAPSHOT_PERSIST_FIRST: write @nbytes (> 0) at @offset. 0 or an
	 * errno value. Called from the saving thread and from writers'
	 * threads, concurrently, for disjoint ranges. */
	int (*pwrite)(void *ctx, const void *data, size_t nbytes,
	    uint64_t offset);
	void *ctx;
	uint64_t base_offset;   /* COW_SNAPSHOT_PERSIST_FIRST only */
	/* The order to save in: a permutation of 0 .. count-1, or NULL for
	 * the snapshot's own order. Copied at the start. */
	const size_t *order;
	/* Called after each chunk with the bytes persisted so far and the
	 * total; done == total at the end of a successful save. May be NULL.
	 * Called on the saving thread. */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
	/* Keep every tensor held after it is written (a failed save can be
	 * retried); by default each storage is released once written. */
	bool keep;
} cow_snapshot_save_t;

/**
 * cow_snapshot_save - save @snap on the calling thread as @how says.
 * Returns once every tensor is persisted (by this thread or, in
 * COW_SNAPSHOT_PERSIST_FIRST, by writers), or on the first failure.
 * Thread-safety: any thread; one save per snapshot at a time.
 * Errors: COW_EINVAL (NULL, a missing callback for @how's mode, a bad
 * order), COW_EBUSY (another save runs on @snap), COW_ERELEASED (a tensor
 * to save was released before the save), COW_ECANCELED
 * (cow_snapshot_cancel), COW_EIO (a callback failed), COW_ENOMEM. On
 * failure the tensors already written are released (unless @how->keep),
 * the others are still held, and the snapshot stays usable.
 */
COW_API cow_status_t cow_snapshot_save(cow_snapshot_t *snap,
    const cow_snapshot_save_t *how);

/**
 * cow_snapshot_cancel - make the save running on @snap (or the next one to
 * start, if none runs) stop at its next chunk with COW_ECANCELED.
 * The request is a flag of the snapshot's, cleared when that save ends.
 * Thread-safety: any thread. Errors: none; NULL does nothing.
 */
COW_API void cow_snapshot_cancel(cow_snapshot_t *snap);

/* A save on a thread of the library's (cow_snapshot_save_start). */
typedef struct cow_snapshot_job cow_snapshot_job_t;

/**
 * cow_snapshot_save_start - run cow_snapshot_save(@snap, @how) on a new
 * thread; returns at once. A persist-first save is in force when it
 * returns: writers persist what they reach first from then on.
 * Ownership: the job holds a reference on @snap; *out holds the caller's
 * reference on the job (cow_snapshot_job_release). @how is copied (with
 * its order); its callbacks and contexts must stay valid until the job is
 * done.
 * Thread-safety: any thread. Errors: as cow_snapshot_save's immediate ones
 * (COW_EINVAL, COW_EBUSY, COW_ENOMEM), and COW_ENOMEM when no thread could
 * be started.
 */
COW_API cow_status_t cow_snapshot_save_start(cow_snapshot_t *snap,
    const cow_snapshot_save_t *how, cow_snapshot_job_t **out);

/**
 * cow_snapshot_job_progress - bytes persisted so far and the total.
 * cow_snapshot_job_done - whether the save has ended.
 * Thread-safety: any thread.
 * Errors: none (NULL arguments are skipped).
 */
COW_API void cow_snapshot_job_progress(const cow_snapshot_job_t *job,
    uint64_t *done, uint64_t *total);
COW_API bool cow_snapshot_job_done(const cow_snapshot_job_t *job);

/**
 * cow_snapshot_job_wait - wait for the save to end; returns its status (as
 * cow_snapshot_save's), its message in cow_last_error().
 * Thread-safety: any thread, any number of times.
 * Errors: the save's; COW_EINVAL for NULL; COW_ECANCELED in a process
 * forked while the job ran (its thread is not there).
 */
COW_API cow_status_t cow_snapshot_job_wait(cow_snapshot_job_t *job);

/**
 * cow_snapshot_job_cancel - make the job's save stop at its next chunk
 * with COW_ECANCELED.
 * Thread-safety: any thread. Errors: none; NULL does nothing.
 */
COW_API void cow_snapshot_job_cancel(cow_snapshot_job_t *job);

/**
 * cow_snapshot_job_release - drop the caller's reference: cancel the save
 * if it still runs, wait for it, free the job.
 * Ownership: the job is gone; its reference on the snapshot too.
 * Thread-safety: once per job, from any thread.
 * Errors: none; NULL does nothing.
 */
COW_API void cow_snapshot_job_release(cow_snapshot_job_t *job);

#ifdef __cplusplus
}
#endif
#endif
