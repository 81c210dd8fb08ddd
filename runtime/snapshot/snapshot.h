/*
 * snapshot.h - internal layout of a snapshot (include/cowstore/snapshot.h,
 * docs/snapshots.md).
 *
 * A snapshot groups its tensors by live storage: tensors over one storage
 * share one lazy copy of it (a group). Each group is also a write hook on
 * the live storage (storage/storage.h), which runs at the live storage's
 * next write: it counts the copy the snapshot causes, and in a
 * persist-first save it persists the group before the write.
 *
 * A group's state word: the state in the low bits, flags above it and a
 * count of readers (cow_snapshot_get, inside a fork gate section) on top.
 *   HELD      the snapshot holds the lazy copy
 *   CLAIMED   one thread (a save, a writer's hook, a release) has it alone:
 *             only it may persist it or release the lazy copy
 *   RELEASED  the lazy copy is gone
 *   ABANDONED its claimant was a thread that vanished in a fork: nobody
 *             touches it again (its lazy copy stays, leaked, in the child)
 * Readers enter only while HELD or CLAIMED; the claimant that releases
 * moves it to RELEASED and then waits for the readers inside to leave.
 */
#ifndef COW_SNAPSHOT_SNAPSHOT_H
#define COW_SNAPSHOT_SNAPSHOT_H

#include <pthread.h>

#include <cowstore/snapshot.h>

#include "core/atomic.h"
#include "core/refcount.h"
#include "storage/storage.h"
#include "tensor/tensor.h"

#define COW__GROUP_HELD 0u
#define COW__GROUP_CLAIMED 1u
#define COW__GROUP_RELEASED 2u
#define COW__GROUP_ABANDONED 3u
#define COW__GROUP_STATE 3u
#define COW__GROUP_WRITTEN 8u   /* its live storage was written since the
				 * take (its bytes are extra) */
#define COW__GROUP_READER 16u   /* one reader inside */

struct cow_snapshot;
struct cow_snapshot_job;
struct cow__snap_save;

struct cow__snap_group {
	struct cow__write_hook hook;  /* in the live storage's hooks */
	struct cow_snapshot *snap;
	cow_storage_t *clone;         /* the lazy copy; owned until released */
	uint64_t nbytes;              /* the storage's bytes */
	cow__atomic_u64_t state;
	/* Tensors of the group still held. Synchronization: atomic. */
	cow__atomic_u64_t held;
	/* The id of the persist-first save whose target holds its tensors
	 * (0: none); a later save has another id, so a kept group is
	 * persisted again. Written by the claimant. Synchronization: atomic
	 * (the claim orders it). */
	cow__atomic_u64_t persisted;
	/* The thread that claimed it (a pthread_t; valid while CLAIMED;
	 * written inside a fork gate section with the claim, for the fork's
	 * child handler and for a claimant's own writes). Synchronization:
	 * atomic (relaxed). */
	cow__atomic_u64_t claimer;
	size_t first, count;          /* its tensors: members[first ...] */
	bool hooked;                  /* in a live storage's hooks */
	/* The snapshot held the storage when its write began: set by the
	 * hook's before_write, read by its after_write, on the writer's
	 * thread (the hook runs once). */
	bool held_at_write;
	bool pinned;                  /* an eager copy at the take */
};

struct cow__snap_tensor {
	const char *name;
	cow_dtype_t dtype;
	int ndim;
	size_t itemsize;
	int64_t numel;
	int64_t offset;               /* in elements, in the storage */
	const int64_t *sizes;
	const int64_t *strides;       /* in elements */
	uint64_t nbytes;              /* numel * itemsize */
	size_t group;
	/* 1 while held. Synchronization: atomic (compare-and-swap to 0). */
	cow__atomic_u64_t held;
};

struct cow_snapshot {
	/* References: the users' (the caller's, running saves and jobs).
	 * The last one releases every held group. */
	cow__refcount_t users;
	/* Holders of the memory: 1 for all users together, 1 per group in a
	 * live storage's hooks. The last one frees it. */
	cow__refcount_t holders;
	size_t count, ngroups;
	struct cow__snap_tensor *tensors;
	struct cow__snap_group *groups;
	size_t *members;              /* tensor indices, grouped */
	void *block;                  /* one allocation for all of it */
	size_t block_bytes;
	uint64_t bytes;
	uint64_t pinned_copies, pinned_bytes;
	/* Accounting. Synchronization: atomic. */
	cow__atomic_u64_t held_tensors;
	cow__atomic_u64_t extra;
	cow__atomic_u64_t extra_peak;
	cow__atomic_u64_t writer_copies;
	cow__atomic_u64_t writer_persists;
	/* 1 while a save runs (compare-and-swap). */
	cow__atomic_u64_t saving;
	/* The last save's id (each save takes the next). */
	cow__atomic_u64_t save_ids;
	/* Set by cow_snapshot_cancel; cleared when a save ends. */
	cow__atomic_u64_t cancel;
	/* The running persist-first save (struct cow__snap_save *), which
	 * writers' hooks persist into; NULL otherwise. */
	cow__atomic_ptr_t persist;
};

/* --- groups (snapshot.c) --------------------------------------------- */

/* Claim @g (HELD to CLAIMED) for the calling thread; false when it is not
 * HELD. */
bool cow__snap_group_claim(struct cow__snap_group *g);
/* Give a claim back (CLAIMED to HELD); a group whose tensors were all
 * released meanwhile is released instead. */
void cow__snap_group_unclaim(struct cow__snap_group *g);
/* Release the claimed group's lazy copy (CLAIMED to RELEASED), once the
 * readers inside are gone. */
void cow__snap_group_release_claimed(struct cow__snap_group *g);
/* Mark tensor @i released (after a save wrote it); the group's count
 * drops. The caller claims the group. */
void cow__snap_tensor_drop(struct cow_snapshot *snap, size_t i);
/* Wait while @g is CLAIMED; its state word after. */
uint64_t cow__snap_group_wait(struct cow__snap_group *g);

static inline unsigned
cow__snap_state(uint64_t word)
{
	return (unsigned)(word & COW__GROUP_STATE);
}

/* Whether the calling thread holds @g's claim. */
static inline bool
cow__snap_group_mine(const struct cow__snap_group *g)
{
	return cow__snap_state(cow__atomic_load_relaxed(&g->state)) ==
	    COW__GROUP_CLAIMED && pthread_equal((pthread_t)
	    cow__atomic_load_relaxed(&g->claimer), pthread_self());
}


/* --- saves (save.c) --------------------------------------------------- */

/* The before-write part of a group's hook in a persist-first save: claim
 * and persist the group, or wait for whoever has it. */
void cow__snap_persist_before_write(struct cow__snap_group *g);

/*
 * A save in three steps, for a layer that wraps it (a file: files/):
 * begin (everything that can fail before a byte is written; registers the
 * save and takes a reference on @snap), run (on any
 * thread), end (unregister, release, free; its status and message). A
 * failure of the wrapping layer's own is recorded with
 * cow__snap_save_fail: the first failure wins, from any thread.
 */
cow_status_t cow__snap_save_begin(cow_snapshot_t *snap,
    const cow_snapshot_save_t *how, struct cow__snap_save **out);
void cow__snap_save_run(struct cow__snap_save *s);
/* A persist-first save: writers persist into it from now on (run does it
 * too, if nobody did before). */
void cow__snap_save_publish(struct cow__snap_save *s);
cow_status_t cow__snap_save_end(struct cow__snap_save *s, char *message,
    size_t n);
cow_status_t cow__snap_save_fail(struct cow__snap_save *s, cow_status_t st,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
cow_status_t cow__snap_save_status(const struct cow__snap_save *s);
cow_snapshot_t *cow__snap_save_snapshot(const struct cow__snap_save *s);
bool cow__snap_save_persist_first(const struct cow__snap_save *s);
/* The save runs in @job: its cancel and progress are the job's. */
void cow__snap_save_attach(struct cow__snap_save *s,
    struct cow_snapshot_job *job);

/* --- jobs (save.c) ----------------------------------------------------- */

/* A job's task: its status, its message (if any) in @message. */
typedef cow_status_t (*cow__job_fn)(void *arg, char *message, size_t n);

/* A new job (not running yet) reporting to @progress (may be NULL). */
cow_status_t cow__job_new(void (*progress)(void *, uint64_t, uint64_t),
    void *ctx, uint64_t total, struct cow_snapshot_job **out);
/* Start @run(@arg) on the job's thread; COW_ENOMEM without a thread (the
 * job is then still the caller's to discard). */
cow_status_t cow__job_run(struct cow_snapshot_job *job, cow__job_fn run,
    void *arg);
void cow__job_discard(struct cow_snapshot_job *job);
/* A progress callback that updates @ctx (a job) and calls the user's. */
void cow__job_progress(void *ctx, uint64_t done, uint64_t total);
bool cow__job_cancelled(const struct cow_snapshot_job *job);

#endif
