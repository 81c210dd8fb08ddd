/*
 * snapshot.c - taking a snapshot, its accessors, releases and accounting,
 * and the group protocol (snapshot/snapshot.h). Saving is save.c.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc/allocator.h"
#include "core/error.h"
#include "core/fault.h"
#include "core/fork.h"
#include "snapshot/snapshot.h"
#include "tensor/entry_accessors.h"
#include "tensor/impl.h"

/* ------------------------------------------------------------------ */
/* Memory. One block holds the snapshot and everything it describes; it
 * goes when its last holder does (the users, and each group still in a
 * live storage's hooks). */

static void
snap_hold(struct cow_snapshot *snap)
{
	cow__ref_get(&snap->holders);
}

static void
snap_unhold(struct cow_snapshot *snap)
{
	if (cow__ref_put(&snap->holders))
		cow__free(cow_allocator_default(), snap->block,
		    snap->block_bytes);
}

/* ------------------------------------------------------------------ */
/* Group protocol. */

/* The peak of extra is at least @now (a value extra had). */
static void
snap_peak_raise(struct cow_snapshot *snap, uint64_t now)
{
	uint64_t peak = cow__atomic_load_relaxed(&snap->extra_peak);

	while (now > peak &&
	    !cow__atomic_cas_relaxed(&snap->extra_peak, peak, now))
		peak = cow__atomic_load_relaxed(&snap->extra_peak);
}

static void
snap_extra_add(struct cow_snapshot *snap, uint64_t n)
{
	snap_peak_raise(snap,
	    cow__atomic_fetch_add_relaxed(&snap->extra, n) + n);
}

bool
cow__snap_group_claim(struct cow__snap_group *g)
{
	cow__fork_gate_t gate = cow__fork_gate_enter();
	uint64_t w;
	bool won = false;

	/* In a fork gate section: a fork sees the claim together with its
	 * claimer (the child handler abandons other threads' claims). */
	for (;;) {
		w = cow__atomic_load_relaxed(&g->state);
		if (cow__snap_state(w) != COW__GROUP_HELD)
			break;
		if (COW__FAULT_POINT(snap_claim_cas,
		    cow__atomic_cas_relaxed(&g->state, w,
		    (w & ~(uint64_t)COW__GROUP_STATE) | COW__GROUP_CLAIMED))) {
			/* Acquire: the previous claimant's work is ours now,
			 * its write of g->claimer included, so ours comes
			 * after it. */
			cow__fence_acquire(&g->state);
			COW__TSAN_ACQUIRE(&g->state);
			won = true;
			cow__atomic_store_relaxed(&g->claimer,
			    (uint64_t)pthread_self());
			break;
		}
	}
	cow__fork_gate_leave(gate);
	return won;
}

/* CLAIMED -> @to, keeping the flags and readers. */
static uint64_t
group_leave_claim(struct cow__snap_group *g, unsigned to)
{
	uint64_t w;

	/* Release: what the claimant did is seen by the next one, and by a
	 * writer that waited for the claim to go. */
	COW__TSAN_RELEASE(&g->state);
	COW__FAULT_POINT(snap_claim_release, cow__fence_release(&g->state));
	do
		w = cow__atomic_load_relaxed(&g->state);
	while (!cow__atomic_cas_relaxed(&g->state, w,
	    (w & ~(uint64_t)COW__GROUP_STATE) | to));
	return w;
}

void
cow__snap_group_release_claimed(struct cow__snap_group *g)
{
	struct cow_snapshot *snap = g->snap;
	unsigned spins = 0;
	uint64_t w = group_leave_claim(g, COW__GROUP_RELEASED);

	/* No reader enters any more; wait for the ones inside (each in a
	 * fork gate section, so none is left behind by a fork). */
	while (cow__atomic_load_acquire(&g->state) >= COW__GROUP_READER)
		cow__backoff(&spins);
	if ((w & COW__GROUP_WRITTEN) != 0 || g->pinned)
		cow__atomic_add_relaxed(&snap->extra, -g->nbytes);
	cow_storage_release(g->clone);
}

void
cow__snap_group_unclaim(struct cow__snap_group *g)
{
	group_leave_claim(g, COW__GROUP_HELD);
	/* A release_tensor that emptied the group while we had it could not
	 * claim it; whoever sees the count at zero after its own step
	 * releases it (a handshake: both fence between the two). */
	COW__FAULT_POINT(snap_unclaim_fence, cow__fence_atomic_load(&g->held));
	if (cow__atomic_load_relaxed(&g->held) == 0 &&
	    cow__snap_group_claim(g))
		cow__snap_group_release_claimed(g);
}

uint64_t
cow__snap_group_wait(struct cow__snap_group *g)
{
	unsigned spins = 0;
	uint64_t w;

	while (cow__snap_state(w = cow__atomic_load_acquire(&g->state)) ==
	    COW__GROUP_CLAIMED)
		cow__backoff(&spins);
	return w;
}

void
cow__snap_tensor_drop(struct cow_snapshot *snap, size_t i)
{
	struct cow__snap_tensor *t = &snap->tensors[i];

	if (!cow__atomic_cas_relaxed(&t->held, 1, 0))
		return;
	cow__atomic_add_relaxed(&snap->held_tensors, (uint64_t)-1);
	cow__atomic_add_relaxed(&snap->groups[t->group].held, (uint64_t)-1);
}

/* A reader enters @g: false when its lazy copy is gone. */
static bool
group_reader_enter(struct cow__snap_group *g)
{
	uint64_t w;

	do {
		w = cow__atomic_load_relaxed(&g->state);
		if (cow__snap_state(w) > COW__GROUP_CLAIMED)
			return false;
	} while (!cow__atomic_cas_relaxed(&g->state, w,
	    w + COW__GROUP_READER));
	return true;
}

static void
group_reader_leave(struct cow__snap_group *g)
{
	/* Release: our reads of the lazy copy happen before its release. */
	cow__atomic_add_release(&g->state, -(uint64_t)COW__GROUP_READER);
}

/* ------------------------------------------------------------------ */
/* The group as a write hook on its live storage. */

#define GROUP_OF(hook) \
	((struct cow__snap_group *)(void *)((char *)(hook) - \
	    offsetof(struct cow__snap_group, hook)))

static void
hook_before_write(struct cow__write_hook *hook)
{
	struct cow__snap_group *g = GROUP_OF(hook);

	if (cow__ptr_load(&g->snap->persist) != NULL)
		cow__snap_persist_before_write(g);
	/* Whether the snapshot still holds the storage as the write begins
	 * (after a persist-first save's claim, which may release it): a copy
	 * the write then makes is the snapshot's doing, even when the
	 * snapshot lets go while it copies. */
	g->held_at_write = cow__snap_state(cow__atomic_load_relaxed(
	    &g->state)) <= COW__GROUP_CLAIMED;
}

static bool
hook_after_write(struct cow__write_hook *hook, bool copied)
{
	struct cow__snap_group *g = GROUP_OF(hook);
	struct cow_snapshot *snap = g->snap;
	uint64_t w;

	if (!copied || !g->held_at_write)
		return false;
	/* The write copied because the snapshot held the bytes when it
	 * began: count it, whatever the snapshot did since (a stream that
	 * released the storage during the copy). The process's count
	 * (snapshot_copies) is the storage's, once per write. */
	cow__atomic_add_relaxed(&snap->writer_copies, 1);
	/* The bytes are extra while the snapshot still holds them. Add them
	 * first, then mark the group WRITTEN, so that the release that sees
	 * the mark takes back bytes already added: marking first let a
	 * release subtract before the add, and extra_bytes wrapped below
	 * zero for a moment (and extra_peak with it, when another group
	 * added then). A group released meanwhile gives the bytes back
	 * here: they are counted a moment longer than held, never less. */
	snap_extra_add(snap, g->nbytes);
	do {
		w = cow__atomic_load_relaxed(&g->state);
		if (cow__snap_state(w) > COW__GROUP_CLAIMED ||
		    (w & COW__GROUP_WRITTEN) != 0) {
			cow__atomic_add_relaxed(&snap->extra, -g->nbytes);
			return true;
		}
	} while (!cow__atomic_cas_relaxed(&g->state, w,
	    w | COW__GROUP_WRITTEN));
	return true;
}

static bool
hook_finished(const struct cow__write_hook *hook)
{
	const struct cow__snap_group *g = GROUP_OF(hook);

	return cow__snap_state(cow__atomic_load_relaxed(&g->state)) >
	    COW__GROUP_CLAIMED;
}

static void
hook_drop(struct cow__write_hook *hook)
{
	snap_unhold(GROUP_OF(hook)->snap);
}

static const struct cow__write_hook_ops group_hook_ops = {
	.before_write = hook_before_write,
	.after_write = hook_after_write,
	.finished = hook_finished,
	.drop = hook_drop,
};

/* ------------------------------------------------------------------ */
/* Taking a snapshot. */

/* A tensor's index under its storage's address, for grouping. */
struct snap_key {
	uintptr_t storage;
	size_t index;
};

static int
by_storage(const void *a, const void *b)
{
	const struct snap_key *x = a, *y = b;

	if (x->storage != y->storage)
		return x->storage < y->storage ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Round @n up to a multiple of 16 (every part of the block starts so). */
static size_t
round16(size_t n)
{
	return (n + 15) & ~(size_t)15;
}

/* The block's size for @count tensors, @ngroups groups, @ndims dimensions
 * in all and @names_bytes bytes of names; 0 when it overflows. */
static size_t
block_size(size_t count, size_t ngroups, size_t ndims, size_t names_bytes)
{
	size_t parts[5], total = 0;

	if (__builtin_mul_overflow(count, sizeof(struct cow__snap_tensor),
	    &parts[0]) ||
	    __builtin_mul_overflow(ngroups, sizeof(struct cow__snap_group),
	    &parts[1]) ||
	    __builtin_mul_overflow(count, sizeof(size_t), &parts[2]) ||
	    __builtin_mul_overflow(ndims, 2 * sizeof(int64_t), &parts[3]))
		return 0;
	parts[4] = names_bytes;
	total = round16(sizeof(struct cow_snapshot));
	for (int i = 0; i < 5; i++)
		if (parts[i] > SIZE_MAX - 32 - total)
			return 0;
		else
			total += round16(parts[i]);
	return total;
}

/* Check the arguments and read every tensor (the take's read); the number
 * of dimensions and of name bytes in all. */
static cow_status_t
take_check(size_t count, cow_tensor_t *const *tensors,
    const char *const *names, size_t *ndims, size_t *names_bytes)
{
	static const char func[] = "cow_snapshot_take";
	const char *p;
	cow_status_t st;

	*ndims = *names_bytes = 0;
	if (count > 0 && (tensors == NULL || names == NULL))
		return cow__error(COW_EINVAL, "%s is NULL for %zu "
		    "tensors", tensors == NULL ? "tensors" : "names", count);
	for (size_t i = 0; i < count; i++) {
		if (tensors[i] == NULL || names[i] == NULL)
			return cow__error(COW_EINVAL, "%s[%zu] is NULL",
			    tensors[i] == NULL ? "tensors" : "names", i);
		if (!cow__tensor_is_strided(tensors[i]) ||
		    tensors[i]->storage == NULL)
			return cow__error(COW_EINVAL, "tensor %zu (\"%s\") "
			    "is functional: it has no storage to share; "
			    "snapshot cow_functional_to_plain()'s result", i,
			    names[i]);
		if ((st = cow__tensor_read_data(tensors[i], &p, func)) !=
		    COW_OK)
			return st;
		*ndims += (size_t)tensors[i]->ndim;
		*names_bytes += strlen(names[i]) + 1;
	}
	return COW_OK;
}

/* Lay the block out: the snapshot at its start, then its arrays; *pool is
 * where the sizes and strides go (the names follow them). */
static struct cow_snapshot *
block_layout(void *block, size_t bytes, size_t count, size_t ngroups,
    int64_t **pool)
{
	struct cow_snapshot *snap = block;
	char *p = (char *)block + round16(sizeof *snap);

	memset(block, 0, bytes);
	snap->block = block;
	snap->block_bytes = bytes;
	snap->count = count;
	snap->ngroups = ngroups;
	snap->tensors = (void *)p;
	p += round16(count * sizeof *snap->tensors);
	snap->groups = (void *)p;
	p += round16(ngroups * sizeof *snap->groups);
	snap->members = (void *)p;
	p += round16(count * sizeof *snap->members);
	*pool = (void *)p;
	return snap;
}

/* Describe tensor @i (@t, named @name) in @snap. */
static void
take_describe(struct cow_snapshot *snap, size_t i, const cow_tensor_t *t,
    const char *name, int64_t **pool, char **names)
{
	struct cow__snap_tensor *e = &snap->tensors[i];
	size_t len = strlen(name) + 1;

	memcpy(*names, name, len);
	e->name = *names;
	*names += len;
	e->dtype = t->dtype;
	e->ndim = t->ndim;
	e->itemsize = t->itemsize;
	e->numel = t->numel;
	e->offset = t->offset;
	memcpy(*pool, t->sizes, (size_t)t->ndim * sizeof(int64_t));
	e->sizes = *pool;
	*pool += t->ndim;
	memcpy(*pool, t->strides, (size_t)t->ndim * sizeof(int64_t));
	e->strides = *pool;
	*pool += t->ndim;
	e->nbytes = (uint64_t)t->numel * t->itemsize;
	cow__atomic_store_relaxed(&e->held, 1);
	snap->bytes += e->nbytes;
}

/* Make group @k's lazy copy of @live. */
static cow_status_t
take_clone(struct cow_snapshot *snap, size_t k, cow_storage_t *live)
{
	struct cow__snap_group *g = &snap->groups[k];
	cow_status_t st;

	g->snap = snap;
	g->hook.ops = &group_hook_ops;
	g->nbytes = cow_storage_nbytes(live);
	cow__atomic_store_relaxed(&g->held, g->count);
	/* The group's lazy copy (stress.control.h shares the live storage
	 * itself instead, for one group). */
	if ((st = COW__FAULT_POINT(snapshot_lazy_copy,
	    cow_storage_lazy_clone(live, &g->clone))) != COW_OK)
		return cow__error_wrap(st, "");
	return COW_OK;
}

/* Group @k's clone is made for every group: hook it into its live
 * storage, or count the eager copy of a pinned one. */
static void
take_hook(struct cow_snapshot *snap, size_t k, cow_storage_t *live,
    struct cow__write_hook **done)
{
	struct cow__snap_group *g = &snap->groups[k];

	if (g->nbytes == 0)
		return;
	if (!cow_storage_shares_data(live, g->clone)) {
		g->pinned = true;
		snap->pinned_copies++;
		snap->pinned_bytes += g->nbytes;
		snap_extra_add(snap, g->nbytes);
		return;
	}
	g->hooked = true;
	snap_hold(snap);
	cow__storage_hooks_push(live, &g->hook, done);
}

cow_status_t
cow_snapshot_take(size_t count, cow_tensor_t *const *tensors,
    const char *const *names, cow_snapshot_t **out)
{
	cow_allocator_t *a = cow_allocator_default();
	struct cow_snapshot *snap;
	struct snap_key *keys = NULL;
	struct cow__write_hook *done;
	size_t ndims, names_bytes, ngroups = 0, bytes, k, made = 0;
	int64_t *pool;
	char *namep;
	void *block;
	cow_status_t st;

	COW__RETURN_IF_NULL(out);
	if ((st = take_check(count, tensors, names, &ndims, &names_bytes)) !=
	    COW_OK)
		return COW__NAMED(st);
	if (count > 0) {
		if ((keys = cow__alloc(a, count * sizeof *keys)) ==
		    NULL)
			return COW__NAMED(COW_ENOMEM);
		for (size_t i = 0; i < count; i++)
			keys[i] = (struct snap_key){
			    (uintptr_t)tensors[i]->storage, i};
		qsort(keys, count, sizeof *keys, by_storage);
		for (size_t i = 0; i < count; i++)
			ngroups += i == 0 || keys[i].storage !=
			    keys[i - 1].storage;
	}
	if ((bytes = block_size(count, ngroups, ndims, names_bytes)) == 0) {
		cow__free(a, keys, count * sizeof *keys);
		return COW__NAMED(cow__error(COW_EOVERFLOW, "%zu tensors with "
		    "%zu dimensions and %zu bytes of names are too many",
		    count, ndims, names_bytes));
	}
	if ((block = cow__alloc(a, bytes)) == NULL) {
		cow__free(a, keys, count * sizeof *keys);
		return COW__NAMED(COW_ENOMEM);
	}
	snap = block_layout(block, bytes, count, ngroups, &pool);
	namep = (char *)(pool + 2 * ndims);
	for (size_t i = 0; i < count; i++)
		take_describe(snap, i, tensors[i], names[i], &pool, &namep);
	/* Groups: runs of one storage in the sorted keys. */
	k = 0;
	for (size_t i = 0; i < count; i++) {
		if (i > 0 && keys[i].storage != keys[i - 1].storage)
			k++;
		if (snap->groups[k].count++ == 0)
			snap->groups[k].first = i;
		snap->members[i] = keys[i].index;
		snap->tensors[keys[i].index].group = k;
	}
	for (k = 0; k < ngroups; k++, made++) {
		cow_storage_t *live =
		    tensors[snap->members[snap->groups[k].first]]->storage;

		if ((st = take_clone(snap, k, live)) != COW_OK)
			break;
	}
	if (made < ngroups) { /* nothing was hooked yet: undo the clones */
		for (k = 0; k < made; k++)
			cow_storage_release(snap->groups[k].clone);
		cow__free(a, keys, count * sizeof *keys);
		cow__free(a, block, bytes);
		return COW__NAMED(st);
	}
	cow__ref_init(&snap->users, 1);
	cow__ref_init(&snap->holders, 1);
	cow__atomic_store_relaxed(&snap->held_tensors, count);
	cow__storage_hooks_begin(&done);
	for (k = 0; k < ngroups; k++)
		take_hook(snap, k,
		    tensors[snap->members[snap->groups[k].first]]->storage,
		    &done);
	cow__storage_hooks_end(done);
	cow__free(a, keys, count * sizeof *keys);
	*out = snap;
	return COW_OK;
}

/* ------------------------------------------------------------------ */
/* References and releases. */

void
cow_snapshot_retain(cow_snapshot_t *snap)
{
	if (snap != NULL)
		cow__ref_get(&snap->users);
}

/* The last user is gone: release every group still held. */
static void
group_teardown(struct cow_snapshot *snap, struct cow__snap_group *g)
{
	for (;;) {
		unsigned st = cow__snap_state(cow__snap_group_wait(g));

		if (st != COW__GROUP_HELD)
			return;
		if (cow__snap_group_claim(g)) {
			for (size_t m = 0; m < g->count; m++)
				cow__snap_tensor_drop(snap,
				    snap->members[g->first + m]);
			cow__snap_group_release_claimed(g);
			return;
		}
	}
}

void
cow_snapshot_release(cow_snapshot_t *snap)
{
	if (snap == NULL || !cow__ref_put(&snap->users))
		return;
	for (size_t k = 0; k < snap->ngroups; k++)
		group_teardown(snap, &snap->groups[k]);
	snap_unhold(snap);
}

cow_status_t
cow_snapshot_release_tensor(cow_snapshot_t *snap, size_t i)
{
	struct cow__snap_group *g;

	COW__RETURN_IF_NULL(snap);
	if (i >= snap->count)
		return COW__NAMED(cow__error(COW_ERANGE, "tensor %zu of a "
		    "snapshot of %zu", i, snap->count));
	g = &snap->groups[snap->tensors[i].group];
	if (!cow__atomic_cas_relaxed(&snap->tensors[i].held, 1, 0))
		return COW_OK;
	cow__atomic_add_relaxed(&snap->held_tensors, (uint64_t)-1);
	if (cow__atomic_fetch_add_relaxed(&g->held, (uint64_t)-1) != 1)
		return COW_OK;
	/* The group's last tensor: release it, or leave it to whoever has
	 * it claimed (cow__snap_group_unclaim's handshake). */
	cow__fence_atomic_load(&g->state);
	if (cow__snap_group_claim(g))
		cow__snap_group_release_claimed(g);
	return COW_OK;
}

/* ------------------------------------------------------------------ */
/* Access. */

size_t
cow_snapshot_count(const cow_snapshot_t *snap)
{
	return snap == NULL ? 0 : snap->count;
}

static const struct cow__snap_tensor *
entry(const cow_snapshot_t *snap, size_t i)
{
	return snap != NULL && i < snap->count ? &snap->tensors[i] : NULL;
}

COW__ENTRY_ACCESSORS(cow_snapshot_t, struct cow__snap_tensor, entry,
    cow_snapshot_name, cow_snapshot_dtype, cow_snapshot_ndim,
    cow_snapshot_sizes, cow_snapshot_nbytes)

bool
cow_snapshot_is_held(const cow_snapshot_t *snap, size_t i)
{
	const struct cow__snap_tensor *e = entry(snap, i);

	return e != NULL && cow__atomic_load_relaxed(&e->held) != 0 &&
	    cow__snap_state(cow__atomic_load_relaxed(
	    &snap->groups[e->group].state)) <= COW__GROUP_CLAIMED;
}

cow_status_t
cow_snapshot_get(cow_snapshot_t *snap, size_t i, cow_tensor_t **out)
{
	const struct cow__snap_tensor *e;
	struct cow__snap_group *g;
	struct cow__layout l;
	cow__fork_gate_t gate;
	cow_storage_t *s = NULL;
	cow_status_t st;

	COW__RETURN_IF_NULL(snap);
	COW__RETURN_IF_NULL(out);
	if ((e = entry(snap, i)) == NULL)
		return COW__NAMED(cow__error(COW_ERANGE, "tensor %zu of a "
		    "snapshot of %zu", i, snap->count));
	g = &snap->groups[e->group];
	/* A reader inside the group keeps its lazy copy alive; the section
	 * is one a fork waits for (it leaves no reader behind). */
	gate = cow__fork_gate_enter();
	if (!group_reader_enter(g)) {
		cow__fork_gate_leave(gate);
		return COW__NAMED(cow__error(COW_ERELEASED,
		    "tensor %zu (\"%s\") "
		    "was released", i, e->name));
	}
	if (cow__atomic_load_relaxed(&e->held) == 0)
		st = cow__error(COW_ERELEASED, "tensor %zu (\"%s\") "
		    "was released", i, e->name);
	else if ((st = cow_storage_lazy_clone(g->clone, &s)) != COW_OK)
		st = cow__error_wrap(st, "");
	group_reader_leave(g);
	cow__fork_gate_leave(gate);
	if (st != COW_OK)
		return COW__NAMED(st);
	cow__layout_init(&l, e->ndim, e->sizes, e->strides, e->offset);
	st = cow__tensor_new(s, e->dtype, &l, out);
	cow_storage_release(s);
	return COW__NAMED(st);
}

void
cow_snapshot_stats(const cow_snapshot_t *snap, cow_snapshot_stats_t *out)
{
	if (snap == NULL || out == NULL)
		return;
	out->tensors = snap->count;
	out->bytes = snap->bytes;
	out->held_tensors = cow__atomic_load_relaxed(&snap->held_tensors);
	out->extra_bytes = cow__atomic_load_relaxed(&snap->extra);
	out->extra_peak = cow__atomic_load_relaxed(&snap->extra_peak);
	out->writer_copies = cow__atomic_load_relaxed(&snap->writer_copies);
	out->writer_persists =
	    cow__atomic_load_relaxed(&snap->writer_persists);
	out->pinned_copies = snap->pinned_copies;
	out->pinned_bytes = snap->pinned_bytes;
}
