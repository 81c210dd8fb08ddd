/*
 * save.c - saving a snapshot (snapshot.h, "Saving"): the stream and the
 * persist-first save, the tensors' bytes in C order, the writers' side of
 * a persist-first save, jobs on threads of their own, and what a fork does
 * to saves that run (docs/snapshots.md).
 *
 * Who persists a group in a persist-first save: whoever claims it (the
 * saving thread, going through the groups in order, or a writer whose
 * first write reaches the group's live storage). The claim is one
 * compare-and-swap (snapshot.c), so the two never both write a group; the
 * one that loses skips it (the saver) or waits for it (a writer, which
 * then writes in place). The interleaving checker's snapshot scenarios
 * run this under every schedule up to a preemption bound, sequentially
 * consistent and in C11's memory model (docs/interleave.md).
 *
 * The end of a persist-first save is a handshake with late writers: the
 * saver clears snap->persist, fences, and waits while any group is
 * claimed; a writer claims, fences, and loads snap->persist again, giving
 * the claim back if the save is gone. So a writer uses the save only while
 * the saver waits for it; a group given back is persisted by the saver
 * (end_group).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "alloc/allocator.h"
#include "core/error.h"
#include "core/fault.h"
#include "core/fork.h"
#include "core/mutex.h"
#include "snapshot/snapshot.h"
#include "storage/stats.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
    "a save writes the host's bytes: little-endian hosts only");

/* Bytes written per callback call: progress and cancellation granularity. */
#define SAVE_CHUNK ((size_t)8 << 20)
/* A strided tensor is gathered into C order through a buffer this big. */
#define SAVE_GATHER ((size_t)1 << 20)

struct cow__snap_save {
	struct cow_snapshot *snap;
	cow_snapshot_save_t how;
	size_t *order;              /* owned: the order, always filled */
	uint64_t *offsets;          /* persist-first: each tensor's offset */
	uint64_t total;
	cow__atomic_u64_t done;     /* bytes persisted, by anyone */
	/* The first failure: a cow_status_t, 0 for none; its message is
	 * written by the thread that set it, read after every claim ended. */
	cow__atomic_u64_t failed;
	char message[256];
	struct cow_snapshot_job *job;
	uint64_t id;                /* this save's (cow__snap_group.persisted) */
	bool published;             /* in snap->persist (persist-first) */
	bool closed;                /* taken out of it again */
	bool forked;                /* the fork's child: its threads are gone */
	struct cow__snap_save *next, *prev; /* saves_lock */
};

struct cow_snapshot_job {
	cow__job_fn run;            /* what the job's thread does */
	void *arg;
	pthread_t thread;
	cow__mutex_t lock;
	pthread_cond_t cond;
	bool done;                  /* lock */
	bool forked;                /* lock: its thread did not survive a fork */
	cow_status_t status;        /* lock, once done */
	char message[256];          /* lock, once done */
	cow__atomic_u64_t progress_done, progress_total;
	cow__atomic_u64_t cancel;   /* cow_snapshot_job_cancel */
	/* The caller's progress callback, which the job's calls. */
	void (*user_progress)(void *ctx, uint64_t done, uint64_t total);
	void *user_ctx;
	struct cow_snapshot_job *next, *prev; /* saves_lock */
};

/* ------------------------------------------------------------------ */
/* The saves and jobs that run, for a fork's child (core/fork.h). */

static cow__mutex_t saves_lock =
    COW__MUTEX_INITIALIZER(COW__RANK_SNAPSHOT_SAVES);
static struct cow__snap_save *saves;      /* saves_lock */
static struct cow_snapshot_job *jobs;     /* saves_lock */

#define LIST_ADD(head, e) do {						\
	(e)->prev = NULL;						\
	(e)->next = (head);						\
	if ((head) != NULL)						\
		(head)->prev = (e);					\
	(head) = (e);							\
} while (0)

#define LIST_DEL(head, e) do {						\
	if ((e)->prev != NULL)						\
		(e)->prev->next = (e)->next;				\
	else								\
		(head) = (e)->next;					\
	if ((e)->next != NULL)						\
		(e)->next->prev = (e)->prev;				\
} while (0)

/*
 * The child: the saves' threads are gone (unless the forking thread is one
 * of them, inside a progress callback). Their claims are abandoned, their
 * targets never written from here, their jobs done with COW_ECANCELED.
 */
static void
saves_fork_child(void)
{
	pthread_t me = pthread_self();

	for (struct cow__snap_save *s = saves; s != NULL; s = s->next) {
		struct cow_snapshot *snap = s->snap;

		for (size_t k = 0; k < snap->ngroups; k++) {
			struct cow__snap_group *g = &snap->groups[k];
			uint64_t w = cow__atomic_load_relaxed(&g->state);

			if (cow__snap_state(w) == COW__GROUP_CLAIMED &&
			    !pthread_equal((pthread_t)cow__atomic_load_relaxed(
			    &g->claimer), me))
				cow__atomic_store_relaxed(&g->state,
				    (w & ~(uint64_t)COW__GROUP_STATE) |
				    COW__GROUP_ABANDONED);
		}
		if (s->job == NULL || !pthread_equal(s->job->thread, me)) {
			s->forked = true;
			cow__ptr_store(&snap->persist, NULL);
		}
	}
	for (struct cow_snapshot_job *j = jobs; j != NULL; j = j->next) {
		cow__mutex_reinit(&j->lock);
		pthread_cond_init(&j->cond, NULL);
		if (!j->done) {
			j->done = j->forked = true;
			j->status = COW_ECANCELED;
			snprintf(j->message, sizeof j->message, "the job's "
			    "thread did not survive fork(): its save runs in "
			    "the parent only");
		}
	}
}

static const struct cow__fork_hooks saves_fork_hooks = {
	.mutexes = &saves_lock, .n_mutexes = 1, .child = saves_fork_child
};

__attribute__((constructor)) static void
saves_fork_register(void)
{
	cow__fork_register(COW__RANK_SNAPSHOT_SAVES, &saves_fork_hooks);
}

/* ------------------------------------------------------------------ */
/* Failures: the first one wins, from any thread. */

cow_status_t
cow__snap_save_fail(struct cow__snap_save *s, cow_status_t st, const char *fmt, ...)
{
	va_list ap;

	if (cow__atomic_cas_relaxed(&s->failed, 0, (uint64_t)(int64_t)st)) {
		va_start(ap, fmt);
		vsnprintf(s->message, sizeof s->message, fmt, ap);
		va_end(ap);
	}
	return st;
}

static cow_status_t
save_status(const struct cow__snap_save *s)
{
	return (cow_status_t)(int64_t)cow__atomic_load_relaxed(&s->failed);
}

static bool
save_cancelled(struct cow__snap_save *s)
{
	if (cow__atomic_load_relaxed(&s->snap->cancel) == 0 &&
	    (s->job == NULL || !cow__job_cancelled(s->job)))
		return false;
	cow__snap_save_fail(s, COW_ECANCELED, "cancelled");
	return true;
}

/* ------------------------------------------------------------------ */
/* A tensor's bytes, in C order, chunk by chunk. */

typedef cow_status_t (*emit_fn)(struct cow__snap_save *s, const void *data,
    size_t n, uint64_t pos, bool saver);

static cow_status_t
emit_write(struct cow__snap_save *s, const void *data, size_t n,
    uint64_t pos, bool saver)
{
	int err;

	(void)pos;
	(void)saver;
	if ((err = s->how.write(s->how.ctx, data, n)) != 0)
		return cow__snap_save_fail(s, COW_EIO, "the write callback failed: %s "
		    "(%d)", strerror(err), err);
	return COW_OK;
}

static cow_status_t
emit_pwrite(struct cow__snap_save *s, const void *data, size_t n,
    uint64_t pos, bool saver)
{
	int err;

	(void)saver;
	if ((err = s->how.pwrite(s->how.ctx, data, n, pos)) != 0)
		return cow__snap_save_fail(s, COW_EIO, "the pwrite callback failed at "
		    "offset %llu: %s (%d)", (unsigned long long)pos,
		    strerror(err), err);
	return COW_OK;
}

/* One chunk out; progress and cancellation on the saving thread. */
static cow_status_t
emit_chunk(struct cow__snap_save *s, emit_fn emit, const void *data,
    size_t n, uint64_t *pos, bool saver)
{
	cow_status_t st;

	if (saver && save_cancelled(s))
		return COW_ECANCELED;
	if ((st = emit(s, data, n, *pos, saver)) != COW_OK)
		return st;
	*pos += n;
	n = (size_t)(cow__atomic_fetch_add_relaxed(&s->done, n) + n);
	if (saver && s->how.progress != NULL)
		s->how.progress(s->how.progress_ctx, n, s->total);
	return COW_OK;
}

/* Row-major contiguous (dimensions of size 1 aside)? */
static bool
tensor_contiguous(const struct cow__snap_tensor *e)
{
	int64_t expect = 1;

	for (int d = e->ndim - 1; d >= 0; d--) {
		if (e->sizes[d] == 1)
			continue;
		if (e->strides[d] != expect)
			return false;
		expect *= e->sizes[d];
	}
	return true;
}

/* Gather @e's elements from @base (its storage's bytes) in C order into
 * @buf (@cap bytes, a multiple of the item size) and emit them. */
static cow_status_t
emit_gathered(struct cow__snap_save *s, emit_fn emit,
    const struct cow__snap_tensor *e, const char *base, char *buf,
    size_t cap, uint64_t *pos, bool saver)
{
	int64_t idx[COW_TENSOR_MAX_NDIM] = {0};
	int inner = e->ndim - 1;
	int64_t run = e->ndim > 0 ? e->sizes[inner] : 1;
	int64_t step = e->ndim > 0 ? e->strides[inner] : 0;
	size_t k = e->itemsize, used = 0;
	cow_status_t st;

	for (int64_t left = e->numel; left > 0; left -= run) {
		int64_t at = e->offset;
		const char *src;

		for (int d = 0; d < inner; d++)
			at += idx[d] * e->strides[d];
		src = base + at * (int64_t)k;
		for (int64_t j = 0; j < run; j++) {
			memcpy(buf + used, src + j * step * (int64_t)k, k);
			if ((used += k) == cap) {
				if ((st = emit_chunk(s, emit, buf, used, pos,
				    saver)) != COW_OK)
					return st;
				used = 0;
			}
		}
		for (int d = inner - 1; d >= 0; d--) {
			if (++idx[d] < e->sizes[d])
				break;
			idx[d] = 0;
		}
	}
	return used > 0 ? emit_chunk(s, emit, buf, used, pos, saver) : COW_OK;
}

/* Emit tensor @i of the save's snapshot (its group is claimed). */
static cow_status_t
emit_tensor(struct cow__snap_save *s, emit_fn emit, size_t i, uint64_t pos,
    bool saver)
{
	const struct cow__snap_tensor *e = &s->snap->tensors[i];
	const struct cow__snap_group *g = &s->snap->groups[e->group];
	const char *base = cow_storage_const_data(g->clone);
	cow_allocator_t *a = cow_allocator_default();
	size_t cap;
	char *buf;
	cow_status_t st;

	if (e->nbytes == 0)
		return COW_OK;
	if (tensor_contiguous(e)) {
		const char *p = base + e->offset * (int64_t)e->itemsize;

		for (uint64_t off = 0; off < e->nbytes;) {
			size_t n = e->nbytes - off < SAVE_CHUNK ?
			    (size_t)(e->nbytes - off) : SAVE_CHUNK;

			if ((st = emit_chunk(s, emit, p + off, n, &pos,
			    saver)) != COW_OK)
				return st;
			off += n;
		}
		return COW_OK;
	}
	cap = e->nbytes < SAVE_GATHER ? (size_t)e->nbytes :
	    SAVE_GATHER / e->itemsize * e->itemsize;
	if ((buf = cow__alloc(a, cap)) == NULL)
		return cow__snap_save_fail(s, COW_ENOMEM, "no memory for a %zu-byte "
		    "buffer to gather tensor %zu (\"%s\") in C order", cap, i,
		    e->name);
	st = emit_gathered(s, emit, e, base, buf, cap, &pos, saver);
	cow__free(a, buf, cap);
	return st;
}

/* ------------------------------------------------------------------ */
/* Persist-first: a claimed group's tensors at their offsets. */

/* Whether @g's tensors are in @s's target. */
static bool
group_in(const struct cow__snap_group *g, const struct cow__snap_save *s)
{
	return cow__atomic_load_relaxed(&g->persisted) == s->id;
}

/* Persist claimed group @g (by the saver when @saver); on success release
 * it (unless the save keeps its tensors), else give the claim back. */
static cow_status_t
persist_group(struct cow__snap_save *s, struct cow__snap_group *g,
    bool saver)
{
	struct cow_snapshot *snap = s->snap;
	cow_status_t st = COW_OK;

	for (size_t m = 0; m < g->count && st == COW_OK; m++) {
		size_t i = snap->members[g->first + m];

		if (cow__atomic_load_relaxed(&snap->tensors[i].held) == 0)
			st = cow__snap_save_fail(s, COW_ERELEASED, "tensor %zu (\"%s\") "
			    "was released before it was saved", i,
			    snap->tensors[i].name);
		else
			st = emit_tensor(s, emit_pwrite, i, s->offsets[i],
			    saver);
	}
	if (st != COW_OK) {
		cow__snap_group_unclaim(g);
		return st;
	}
	cow__atomic_store_relaxed(&g->persisted, s->id);
	if (s->how.keep) {
		cow__snap_group_unclaim(g);
		return COW_OK;
	}
	for (size_t m = 0; m < g->count; m++)
		cow__snap_tensor_drop(snap, snap->members[g->first + m]);
	cow__snap_group_release_claimed(g);
	return COW_OK;
}

void
cow__snap_persist_before_write(struct cow__snap_group *g)
{
	struct cow_snapshot *snap = g->snap;
	struct cow__snap_save *s;

	/* @s is not looked at until the claim is ours and the save is seen
	 * again after it: only then is it alive for us (the end's wait). */
	while (cow__ptr_load(&snap->persist) != NULL) {
		uint64_t w = cow__atomic_load_relaxed(&g->state);

		if (cow__snap_state(w) == COW__GROUP_CLAIMED) {
			/* A write from inside this thread's own persisting
			 * (a pwrite or progress callback) cannot wait for
			 * itself: it copies. */
			if (cow__snap_group_mine(g))
				return;
			/* The saver (or another writer) persists it: wait,
			 * then write in place or copy as the shares say. */
			cow__snap_group_wait(g);
			continue;
		}
		if (cow__snap_state(w) != COW__GROUP_HELD)
			return;
		if (!cow__snap_group_claim(g))
			continue;
		/* The save may have ended since the hook looked: look again
		 * (the other half of the saver's end, above). */
		cow__fence_atomic_load(&snap->persist);
		s = cow__ptr_load(&snap->persist);
		if (s == NULL || group_in(g, s)) {
			cow__snap_group_unclaim(g);
			return;
		}
		if (persist_group(s, g, false) == COW_OK) {
			cow__atomic_add_relaxed(&snap->writer_persists, 1);
			cow__stat_add(COW__STAT_SNAPSHOT_PERSISTS, 1);
		}
		return;
	}
}

/* ------------------------------------------------------------------ */
/* The saving thread. */

/* Claim @g for the stream, waiting for a brief holder (a release). */
static bool
stream_claim(struct cow__snap_group *g)
{
	for (;;) {
		if (cow__snap_group_claim(g))
			return true;
		if (cow__snap_state(cow__snap_group_wait(g)) !=
		    COW__GROUP_HELD)
			return false;
	}
}

static cow_status_t
run_stream(struct cow__snap_save *s)
{
	struct cow_snapshot *snap = s->snap;
	uint64_t pos = 0;

	for (size_t k = 0; k < snap->count; k++) {
		size_t i = s->order[k];
		struct cow__snap_tensor *e = &snap->tensors[i];
		struct cow__snap_group *g = &snap->groups[e->group];
		cow_status_t st;

		if (save_cancelled(s))
			return COW_ECANCELED;
		if (!stream_claim(g))
			return cow__snap_save_fail(s, COW_ERELEASED, "tensor %zu "
			    "(\"%s\") was released before it was saved", i,
			    e->name);
		if (cow__atomic_load_relaxed(&e->held) == 0) {
			cow__snap_group_unclaim(g);
			return cow__snap_save_fail(s, COW_ERELEASED, "tensor %zu "
			    "(\"%s\") was released before it was saved", i,
			    e->name);
		}
		st = emit_tensor(s, emit_write, i, pos, true);
		pos += e->nbytes;
		if (st == COW_OK && !s->how.keep)
			cow__snap_tensor_drop(snap, i);
		if (cow__atomic_load_relaxed(&g->held) == 0)
			cow__snap_group_release_claimed(g);
		else
			cow__snap_group_unclaim(g);
		if (st != COW_OK)
			return st;
	}
	/* No chunk, no call yet: say it is complete. */
	if (s->how.progress != NULL && s->total == 0)
		s->how.progress(s->how.progress_ctx, 0, 0);
	return COW_OK;
}

/* The saver claims @g and persists it, unless it is persisted already;
 * false when another thread has it (a writer, which persists it, or a
 * release). *st: the persist's status. */
static bool
saver_persist(struct cow__snap_save *s, struct cow__snap_group *g,
    cow_status_t *st)
{
	if (!cow__snap_group_claim(g))
		return false;
	if (group_in(g, s))
		cow__snap_group_unclaim(g);
	else
		*st = persist_group(s, g, true);
	return true;
}

/*
 * The end of the save, for group @g (number @k): wait while it is
 * claimed; if it is still not persisted, persist it now. A writer that
 * claimed it while the saving thread went past it, and then found the
 * save ended (snap->persist cleared), gave it back unpersisted: the saving
 * thread, which still has the save, persists it. Fails the save when the
 * group was released before it was saved, or the save already failed.
 */
static void
end_group(struct cow__snap_save *s, struct cow__snap_group *g, size_t k)
{
	cow_status_t st = COW_OK;

	for (;;) {
		uint64_t w = cow__snap_group_wait(g);

		if (group_in(g, s))
			return;
		if (cow__snap_state(w) != COW__GROUP_HELD) {
			cow__snap_save_fail(s, COW_ERELEASED, "the tensors of storage "
			    "group %zu were released before they were saved",
			    k);
			return;
		}
		if (save_status(s) != COW_OK) {
			cow__snap_save_fail(s, COW_ECANCELED, "stopped before every "
			    "tensor was saved");
			return;
		}
		if (COW__FAULT_POINT(snap_end_persists,
		    saver_persist(s, g, &st)))
			return;
	}
}

void
cow__snap_save_publish(struct cow__snap_save *s)
{
	if (s->how.mode != COW_SNAPSHOT_PERSIST_FIRST || s->published)
		return;
	s->published = true;
	cow__ptr_store(&s->snap->persist, s);
}

/* The end of a published persist-first save: no writer starts on it
 * after this (its claims look at snap->persist again); the ones that did,
 * finish, and the groups still not persisted are persisted here
 * (end_group). */
static void
persist_close(struct cow__snap_save *s)
{
	struct cow_snapshot *snap = s->snap;

	s->closed = true;
	cow__ptr_store(&snap->persist, NULL);
	COW__FAULT_POINT(snap_end_fence,
	    cow__fence_atomic_load(&snap->persist));
	for (size_t k = 0; k < snap->ngroups; k++)
		end_group(s, &snap->groups[k], k);
}

static cow_status_t
run_persist_first(struct cow__snap_save *s)
{
	struct cow_snapshot *snap = s->snap;
	cow_status_t st = COW_OK;

	cow__snap_save_publish(s);
	for (size_t k = 0; k < snap->count && st == COW_OK; k++) {
		struct cow__snap_group *g =
		    &snap->groups[snap->tensors[s->order[k]].group];

		if (group_in(g, s))
			continue;
		if (save_cancelled(s) || (st = save_status(s)) != COW_OK)
			break;
		/* Claimed by a writer: it persists the group, or gives it
		 * back if it finds the save ended; the end sees to both. */
		(void)saver_persist(s, g, &st);
	}
	persist_close(s);
	if (s->how.progress != NULL && save_status(s) == COW_OK)
		s->how.progress(s->how.progress_ctx,
		    cow__atomic_load_relaxed(&s->done), s->total);
	return save_status(s);
}

/* ------------------------------------------------------------------ */
/* Beginning and ending a save. */

static void
save_free(struct cow__snap_save *s)
{
	cow_allocator_t *a = cow_allocator_default();
	size_t n = s->snap->count;

	cow__free(a, s->order, n * sizeof *s->order);
	cow__free(a, s->offsets, n * sizeof *s->offsets);
	cow__free(a, s, sizeof *s);
}

static cow_status_t
save_check(const cow_snapshot_t *snap, const cow_snapshot_save_t *how)
{
	if (how->mode != COW_SNAPSHOT_STREAM &&
	    how->mode != COW_SNAPSHOT_PERSIST_FIRST)
		return cow__error(COW_EINVAL, "unknown save mode %d",
		    (int)how->mode);
	if (how->mode == COW_SNAPSHOT_STREAM && how->write == NULL)
		return cow__error(COW_EINVAL, "COW_SNAPSHOT_STREAM needs "
		    "a write callback");
	if (how->mode == COW_SNAPSHOT_PERSIST_FIRST && how->pwrite == NULL)
		return cow__error(COW_EINVAL, "COW_SNAPSHOT_PERSIST_FIRST "
		    "needs a pwrite callback");
	for (size_t i = 0; i < snap->count; i++)
		if (!cow_snapshot_is_held(snap, i))
			return cow__error(COW_ERELEASED, "tensor %zu "
			    "(\"%s\") was released before the save", i,
			    snap->tensors[i].name);
	return COW_OK;
}

/* The order (a copy, checked), and the offsets of a persist-first save. */
static cow_status_t
save_layout(struct cow__snap_save *s)
{
	struct cow_snapshot *snap = s->snap;
	const size_t *order = s->how.order;
	uint64_t at = s->how.base_offset;
	size_t n = snap->count;

	for (size_t k = 0; k < n; k++)
		s->order[k] = order != NULL ? order[k] : k;
	if (order != NULL) {
		/* A permutation: every index once (offsets, zeroed, mark). */
		for (size_t k = 0; k < n; k++) {
			size_t i = s->order[k];

			if (i >= n || s->offsets[i] != 0)
				return cow__error(COW_EINVAL, "order is "
				    "not a permutation of 0..%zu: entry %zu is "
				    "%zu", n - 1, k, i);
			s->offsets[i] = 1;
		}
	}
	for (size_t k = 0; k < n; k++) {
		size_t i = s->order[k];

		s->offsets[i] = at;
		s->total += snap->tensors[i].nbytes;
		if (__builtin_add_overflow(at, snap->tensors[i].nbytes, &at))
			return cow__error(COW_EOVERFLOW, "base_offset "
			    "%llu plus the snapshot's bytes overflows",
			    (unsigned long long)s->how.base_offset);
	}
	return COW_OK;
}

/* Everything that can fail before a byte is written; on COW_OK *out is a
 * registered save holding a reference on @snap. */
cow_status_t
cow__snap_save_begin(cow_snapshot_t *snap, const cow_snapshot_save_t *how,
    struct cow__snap_save **out)
{
	cow_allocator_t *a = cow_allocator_default();
	struct cow__snap_save *s;
	size_t n;
	cow_status_t st;

	if (snap == NULL || how == NULL)
		return cow__error(COW_EINVAL, "argument '%s' is NULL",
		    snap == NULL ? "snap" : "how");
	/* Busy first: a save that runs makes the other checks moot. */
	if (!cow__atomic_cas_relaxed(&snap->saving, 0, 1))
		return cow__error(COW_EBUSY, "another save runs on this "
		    "snapshot");
	if ((st = save_check(snap, how)) != COW_OK) {
		cow__atomic_store_relaxed(&snap->saving, 0);
		return st;
	}
	n = snap->count;
	if ((s = cow__alloc(a, sizeof *s)) == NULL) {
		cow__atomic_store_relaxed(&snap->saving, 0);
		return COW_ENOMEM;
	}
	memset(s, 0, sizeof *s);
	s->snap = snap;
	s->how = *how;
	s->id = cow__atomic_fetch_add_relaxed(&snap->save_ids, 1) + 1;
	s->order = n > 0 ? cow__alloc(a, n * sizeof *s->order) : NULL;
	s->offsets = n > 0 ? cow__alloc_zeroed(a,
	    n * sizeof *s->offsets) : NULL;
	if (n > 0 && (s->order == NULL || s->offsets == NULL))
		st = COW_ENOMEM;
	else
		st = save_layout(s);
	if (st != COW_OK) {
		save_free(s);
		cow__atomic_store_relaxed(&snap->saving, 0);
		return st;
	}
	s->how.order = NULL;
	cow_snapshot_retain(snap);
	cow__mutex_lock(&saves_lock);
	LIST_ADD(saves, s);
	cow__mutex_unlock(&saves_lock);
	*out = s;
	return COW_OK;
}

/* End @s (unregister, drop its reference) and free it; its status, and
 * its message in @message (@n bytes). */
cow_status_t
cow__snap_save_end(struct cow__snap_save *s, char *message, size_t n)
{
	struct cow_snapshot *snap = s->snap;
	cow_status_t st;

	if (s->published && !s->closed && !s->forked)
		persist_close(s); /* published, never run: writers may have
				   * claimed groups meanwhile */
	st = save_status(s);

	snprintf(message, n, "%s", s->message);
	cow__mutex_lock(&saves_lock);
	LIST_DEL(saves, s);
	cow__mutex_unlock(&saves_lock);
	if (!s->forked) {
		cow__atomic_store_relaxed(&snap->cancel, 0);
		cow__atomic_store_relaxed(&snap->saving, 0);
	}
	save_free(s);
	cow_snapshot_release(snap);
	return st;
}

void
cow__snap_save_run(struct cow__snap_save *s)
{
	if (s->how.mode == COW_SNAPSHOT_STREAM)
		run_stream(s);
	else
		run_persist_first(s);
}

void
cow__snap_save_attach(struct cow__snap_save *s, struct cow_snapshot_job *job)
{
	s->job = job;
	s->how.progress = cow__job_progress;
	s->how.progress_ctx = job;
	cow__atomic_store_relaxed(&job->progress_total, s->total);
}

cow_status_t
cow__snap_save_status(const struct cow__snap_save *s)
{
	return save_status(s);
}

cow_snapshot_t *
cow__snap_save_snapshot(const struct cow__snap_save *s)
{
	return s->snap;
}

bool
cow__snap_save_persist_first(const struct cow__snap_save *s)
{
	return s->how.mode == COW_SNAPSHOT_PERSIST_FIRST;
}

static cow_status_t
save_run_end(struct cow__snap_save *s, char *message, size_t n)
{
	cow__snap_save_run(s);
	return cow__snap_save_end(s, message, n);
}

cow_status_t
cow_snapshot_save(cow_snapshot_t *snap, const cow_snapshot_save_t *how)
{
	struct cow__snap_save *s;
	char message[sizeof s->message];
	cow_status_t st;

	if ((st = cow__snap_save_begin(snap, how, &s)) != COW_OK)
		return COW__NAMED(st);
	if ((st = save_run_end(s, message, sizeof message)) != COW_OK)
		return COW__NAMED(cow__error(st, "%s", message));
	return COW_OK;
}

void
cow_snapshot_cancel(cow_snapshot_t *snap)
{
	if (snap != NULL)
		cow__atomic_store_relaxed(&snap->cancel, 1);
}

/* ------------------------------------------------------------------ */
/* Jobs: a task on a thread of its own (snapshot/snapshot.h). */

void
cow__job_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct cow_snapshot_job *job = ctx;

	cow__atomic_store_relaxed(&job->progress_done, done);
	cow__atomic_store_relaxed(&job->progress_total, total);
	if (job->user_progress != NULL)
		job->user_progress(job->user_ctx, done, total);
}

bool
cow__job_cancelled(const struct cow_snapshot_job *job)
{
	return cow__atomic_load_relaxed(&job->cancel) != 0;
}

static void *
job_main(void *arg)
{
	struct cow_snapshot_job *job = arg;
	char message[sizeof job->message] = "";
	cow_status_t st = job->run(job->arg, message, sizeof message);

	cow__mutex_lock(&job->lock);
	job->status = st;
	memcpy(job->message, message, sizeof message);
	job->done = true;
	pthread_cond_broadcast(&job->cond);
	cow__mutex_unlock(&job->lock);
	return NULL;
}

static void
job_free(struct cow_snapshot_job *job)
{
	cow__mutex_lock(&saves_lock);
	LIST_DEL(jobs, job);
	cow__mutex_unlock(&saves_lock);
	cow__mutex_destroy(&job->lock);
	pthread_cond_destroy(&job->cond);
	cow__free(cow_allocator_default(), job, sizeof *job);
}

cow_status_t
cow__job_new(void (*progress)(void *, uint64_t, uint64_t), void *ctx,
    uint64_t total, struct cow_snapshot_job **out)
{
	struct cow_snapshot_job *job;

	if ((job = cow__alloc(cow_allocator_default(), sizeof *job)) ==
	    NULL)
		return COW_ENOMEM;
	memset(job, 0, sizeof *job);
	cow__mutex_init(&job->lock, COW__RANK_SNAPSHOT_JOB);
	pthread_cond_init(&job->cond, NULL);
	job->user_progress = progress;
	job->user_ctx = ctx;
	cow__atomic_store_relaxed(&job->progress_total, total);
	cow__mutex_lock(&saves_lock);
	LIST_ADD(jobs, job);
	cow__mutex_unlock(&saves_lock);
	*out = job;
	return COW_OK;
}

cow_status_t
cow__job_run(struct cow_snapshot_job *job, cow__job_fn run, void *arg)
{
	int err;

	job->run = run;
	job->arg = arg;
	if ((err = pthread_create(&job->thread, NULL, job_main, job)) != 0)
		return cow__error(COW_ENOMEM, "pthread_create: %s",
		    strerror(err));
	return COW_OK;
}

void
cow__job_discard(struct cow_snapshot_job *job)
{
	job_free(job);
}

/* The task of cow_snapshot_save_start's job. */
static cow_status_t
save_task(void *arg, char *message, size_t n)
{
	return save_run_end(arg, message, n);
}

cow_status_t
cow_snapshot_save_start(cow_snapshot_t *snap, const cow_snapshot_save_t *how,
    cow_snapshot_job_t **out)
{
	struct cow_snapshot_job *job;
	struct cow__snap_save *s;
	cow_status_t st;

	COW__RETURN_IF_NULL(out);
	COW__RETURN_IF_NULL(how);
	if ((st = cow__job_new(how->progress, how->progress_ctx, 0,
	    &job)) != COW_OK)
		return COW__NAMED(st);
	if ((st = cow__snap_save_begin(snap, how, &s)) != COW_OK) {
		job_free(job);
		return COW__NAMED(st);
	}
	cow__snap_save_attach(s, job);
	/* Writers persist from now on, before the thread starts. */
	cow__snap_save_publish(s);
	if ((st = cow__job_run(job, save_task, s)) != COW_OK) {
		char message[sizeof s->message];

		cow__snap_save_end(s, message, sizeof message); /* nothing ran */
		job_free(job);
		return COW__NAMED(st);
	}
	*out = job;
	return COW_OK;
}

void
cow_snapshot_job_progress(const cow_snapshot_job_t *job, uint64_t *done,
    uint64_t *total)
{
	if (job == NULL)
		return;
	if (done != NULL)
		*done = cow__atomic_load_relaxed(&job->progress_done);
	if (total != NULL)
		*total = cow__atomic_load_relaxed(&job->progress_total);
}

bool
cow_snapshot_job_done(const cow_snapshot_job_t *job)
{
	struct cow_snapshot_job *j = (struct cow_snapshot_job *)job;
	bool done;

	if (j == NULL)
		return true;
	cow__mutex_lock(&j->lock);
	done = j->done;
	cow__mutex_unlock(&j->lock);
	return done;
}

cow_status_t
cow_snapshot_job_wait(cow_snapshot_job_t *job)
{
	cow_status_t st;
	char message[sizeof job->message];

	COW__RETURN_IF_NULL(job);
	cow__mutex_lock(&job->lock);
	while (!job->done)
		cow__mutex_wait(&job->lock, &job->cond);
	st = job->status;
	memcpy(message, job->message, sizeof message);
	cow__mutex_unlock(&job->lock);
	if (st != COW_OK)
		return COW__NAMED(cow__error(st, "%s", message));
	return COW_OK;
}

void
cow_snapshot_job_cancel(cow_snapshot_job_t *job)
{
	if (job != NULL)
		cow__atomic_store_relaxed(&job->cancel, 1);
}

void
cow_snapshot_job_release(cow_snapshot_job_t *job)
{
	bool forked;

	if (job == NULL)
		return;
	cow_snapshot_job_cancel(job);
	cow__mutex_lock(&job->lock);
	while (!job->done)
		cow__mutex_wait(&job->lock, &job->cond);
	forked = job->forked;
	cow__mutex_unlock(&job->lock);
	if (!forked)
		pthread_join(job->thread, NULL);
	job_free(job);
}
