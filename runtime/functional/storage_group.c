/*
 * storage_group.c - functional tensors over a user's storage
 * (cow_tensor_from_storage): one alias group per storage.
 *
 * In the strided runtime every tensor over one storage aliases every other
 * one (tensor.h). Here they belong to one alias group, found by the
 * storage's address whatever order the tensors are made and released in:
 * - the group's base is the storage's elements in the group's dtype (a
 *   1-d tensor over the whole storage, read once when the group is made);
 * - a tensor's path is the one step that gives its layout over the base
 *   (none for the whole storage, a view for the whole storage reshaped,
 *   else the absolute as_strided step of its layout), so its layout is its
 *   place in the storage and every view, as_strided included, computes
 *   exactly the strided runtime's layout;
 * - one dtype per group: a tensor of another dtype over a storage whose
 *   group lives is refused (COW_EDTYPE), as is one on another backend
 *   (COW_EINVAL), because a group's base has one dtype and one backend.
 * The storage is the program's input, and mutations reach it: every write
 * through the group is also written to the storage before the op returns
 * (cow__fn_commit_write). PyTorch's functionalization copies input
 * mutations back at the end of the program; here nothing is left to copy
 * when the group's last tensor goes, so the release (which cannot fail)
 * does no work, and a write that cannot reach the storage (COW_ENOMEM
 * while materialising it) is refused with nothing changed.
 *
 * The table maps a storage's address to its group: BUCKETS buckets,
 * each a list under its own mutex. The group holds a reference on the
 * storage (through its input tensor), so the address cannot be reused
 * while the group is in the table.
 * - A lookup takes its reference on the group under the bucket's lock.
 * - A storage group's last reference is dropped, and the group taken out
 *   of the table, in one critical section of the same lock
 *   (cow__fn_group_put).
 * So a lookup never finds a group whose last tensor is gone, and threads
 * that create and release tensors of different storages at the same time
 * meet only in a bucket's short critical section (a list walk). Uses of
 * one group stay the user's to serialise (functional.h); if two first
 * creations over one storage race anyway, both build a group, the first
 * to insert its own wins and the other joins it, so the table never holds
 * two groups for one storage.
 */
#include <stdint.h>
#include <string.h>

#include "core/die.h"
#include "core/error.h"
#include "core/fault.h"
#include "core/fork.h"
#include "core/mutex.h"
#include "functional/dispatch.h"
#include "functional/functional.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

#define BUCKET_BITS 4
#define BUCKETS (1 << BUCKET_BITS)

struct bucket {
	cow__mutex_t lock;
	struct cow__fn_group *head; /* Synchronization: lock. */
};

#define BUCKET_INIT {COW__MUTEX_INITIALIZER(COW__RANK_FN_BUCKETS), NULL}

static struct bucket buckets[BUCKETS] = {
	BUCKET_INIT, BUCKET_INIT, BUCKET_INIT, BUCKET_INIT,
	BUCKET_INIT, BUCKET_INIT, BUCKET_INIT, BUCKET_INIT,
	BUCKET_INIT, BUCKET_INIT, BUCKET_INIT, BUCKET_INIT,
	BUCKET_INIT, BUCKET_INIT, BUCKET_INIT, BUCKET_INIT
};

/* A fork takes every bucket's lock, in index order (core/fork.h). */
static const struct cow__fork_hooks bucket_fork_hooks = {
	.mutexes = &buckets[0].lock, .n_mutexes = BUCKETS,
	.stride = sizeof buckets[0]
};

__attribute__((constructor)) static void
bucket_fork_register(void)
{
	cow__fork_register(COW__RANK_FN_BUCKETS, &bucket_fork_hooks);
}

/* Fibonacci hashing of the address: its high bits pick the bucket. */
static struct bucket *
bucket_of(const cow_storage_t *s)
{
	uint64_t h = (uint64_t)(uintptr_t)s * UINT64_C(0x9e3779b97f4a7c15);

	return &buckets[h >> (64 - BUCKET_BITS)];
}

static void
bucket_lock(struct bucket *b)
{
	COW__FAULT_POINT(bucket_lock, cow__mutex_lock(&b->lock));
}

static void
bucket_unlock(struct bucket *b)
{
	COW__FAULT_POINT(bucket_unlock, cow__mutex_unlock(&b->lock));
}

/* The group of @s, with a new reference, or NULL. Caller holds @b. */
static struct cow__fn_group *
find_locked(struct bucket *b, const cow_storage_t *s)
{
	for (struct cow__fn_group *g = b->head; g != NULL; g = g->next)
		if (g->input->storage == s) {
			/* The count is above 0: it reaches 0 only under
			 * this lock, and then the group leaves the list. */
			cow__ref_get(&g->refs);
			return g;
		}
	return NULL;
}

bool
cow__fn_group_put(struct cow__fn_group *g)
{
	struct cow__fn_group **pp;
	struct bucket *b;
	bool last;

	if (g->input == NULL)
		return cow__ref_put(&g->refs);
	b = bucket_of(g->input->storage);
	bucket_lock(b);
	if ((last = cow__ref_put(&g->refs))) {
		for (pp = &b->head; *pp != g; pp = &(*pp)->next)
			if (*pp == NULL)
				cow__die("a storage group is not in its table");
		*pp = g->next;
	}
	bucket_unlock(b);
	return last;
}

/*
 * A new group for @plain's storage: its base is the storage's elements in
 * @plain's dtype, read on @be. Not yet in the table: *whole receives the
 * plain tensor over the whole storage that becomes its input.
 */
static cow_status_t
group_build(const cow_backend_t *be, const cow_tensor_t *plain,
    struct cow__fn_group **out, cow_tensor_t **whole, const char *func)
{
	char shape[COW__SHAPE_STR_MAX];
	struct cow__layout l;
	struct cow__fval *v;
	cow_tensor_t *w;
	cow_status_t st;
	int64_t n;

	/* Every byte a tensor of this dtype can reach: the storage's size
	 * rounded down to whole elements (at most PTRDIFF_MAX). */
	n = (int64_t)(cow_storage_nbytes(plain->storage) / plain->itemsize);
	cow__layout_contiguous(&l, 1, &n);
	if ((st = cow__tensor_new(plain->storage, plain->dtype, &l,
	    &w)) != COW_OK)
		return st;
	/* Read, not owned: the storage stays the user's (a lazy clone on
	 * the strided backend, a copy on the opaque one). */
	if ((st = be->ops->import(be, w, false, &v, func)) != COW_OK) {
		cow_tensor_release(w);
		return st;
	}
	if (cow__fn_tracing())
		cow__fn_trace("%%%llu = from_storage(%s, %s)",
		    (unsigned long long)v->id, cow_dtype_name(v->dtype),
		    cow__shape_str(shape, v->ndim, v->sizes));
	if ((st = cow__fn_group_fresh(v, out, func)) != COW_OK) {
		cow_tensor_release(w);
		return st;
	}
	*whole = w;
	return COW_OK;
}

/* The group of @plain's storage (a new reference): the table's, or a new
 * one inserted into it. */
static cow_status_t
group_of(const cow_backend_t *be, const cow_tensor_t *plain,
    struct cow__fn_group **out, const char *func)
{
	struct bucket *b = bucket_of(plain->storage);
	struct cow__fn_group *g, *mine = NULL;
	cow_tensor_t *whole = NULL;
	cow_status_t st;

	bucket_lock(b);
	g = find_locked(b, plain->storage);
	bucket_unlock(b);
	if (g == NULL) {
		/* Built outside the lock (it reads the whole storage). */
		if ((st = group_build(be, plain, &mine, &whole, func)) !=
		    COW_OK)
			return st;
		bucket_lock(b);
		if ((g = find_locked(b, plain->storage)) == NULL) {
			mine->input = whole;
			mine->next = b->head;
			b->head = mine;
			g = mine;
			mine = NULL;
			whole = NULL;
		}
		bucket_unlock(b);
		/* Lost a race (see the top): join the winner. */
		cow__fn_group_release(mine);
		cow_tensor_release(whole);
	}
	if (g->be != be) {
		st = cow__error(COW_EINVAL, "the storage already has "
		    "functional tensors on backend %s, not %s (one alias "
		    "group per storage)", g->be->name, be->name);
		cow__fn_group_release(g);
		return st;
	}
	if (g->dtype != plain->dtype) {
		st = cow__error(COW_EDTYPE, "the storage already has "
		    "functional tensors of dtype %s, not %s (one alias group "
		    "per storage, of one dtype: release them first)",
		    cow_dtype_name(g->dtype), cow_dtype_name(plain->dtype));
		cow__fn_group_release(g);
		return st;
	}
	*out = g;
	return COW_OK;
}

/* Is @l exactly @t's layout? */
static bool
layout_is(const struct cow__layout *l, const cow_tensor_t *t)
{
	if (l->ndim != t->ndim || l->offset != t->offset)
		return false;
	for (int d = 0; d < t->ndim; d++)
		if (l->sizes[d] != t->sizes[d] || l->strides[d] != t->strides[d])
			return false;
	return true;
}

/*
 * The path from @g's base to @plain's place in the storage: the cheapest
 * that gives exactly @plain's layout (every step of a written tensor's
 * path is scattered through when its write is applied, and a scatter may
 * copy its parent): none when @plain is the whole base, a view when it is
 * the whole base reshaped, else the absolute as_strided step of its
 * layout. *l receives the layout (@plain's).
 */
static cow_status_t
member_path(struct cow__fn_group *g, const cow_tensor_t *plain,
    struct cow__view_step *s, struct cow__fn_path **out, struct cow__layout *l)
{
	struct cow__layout in;
	cow_status_t st;

	cow__layout_contiguous(&in, g->ndim, g->sizes);
	if (layout_is(&in, plain)) {
		*l = in;
		*out = cow__fn_path_empty();
		return COW_OK;
	}
	/* The whole base reshaped (the view cannot be refused then, so no
	 * error is recorded for a call that succeeds). */
	if (plain->contiguous && plain->offset == 0 &&
	    plain->numel == g->sizes[0]) {
		cow__view_step_init(s, COW__STEP_VIEW);
		s->ndim = plain->ndim;
		for (int d = 0; d < plain->ndim; d++)
			s->sizes[d] = plain->sizes[d];
		*l = in;
		if (cow__view_step_make(s, l, plain->itemsize,
		    g->base_nbytes) == COW_OK && layout_is(l, plain))
			return cow__fn_path_one(s, g->alloc, out);
	}
	cow__view_step_init(s, COW__STEP_AS_STRIDED);
	s->ndim = plain->ndim;
	for (int d = 0; d < plain->ndim; d++) {
		s->sizes[d] = plain->sizes[d];
		s->strides[d] = plain->strides[d];
	}
	s->a = plain->offset;
	/* The plain creation validated the layout against the storage, and
	 * the base holds every element it can reach. */
	*l = in;
	if ((st = cow__view_step_make(s, l, plain->itemsize,
	    g->base_nbytes)) != COW_OK)
		return st;
	return cow__fn_path_one(s, g->alloc, out);
}

/* A new tensor of @g at @plain's place in the storage. */
static cow_status_t
member(struct cow__fn_group *g, const cow_tensor_t *plain,
    cow_tensor_t **out, const char *func)
{
	struct cow__fn_path *path;
	struct cow__layout l;
	struct cow__view_step s;
	struct cow__fval *v;
	uint64_t gen;
	cow_status_t st;

	if ((st = member_path(g, plain, &s, &path, &l)) != COW_OK)
		return st;
	/* As a view of the base: current only with no update pending. */
	gen = g->nupd == 0 ? g->generation : COW__FN_STALE;
	if (path->len == 0) {
		cow__fval_retain(g->base);
		v = g->base;
		st = COW_OK;
	} else {
		st = cow__fn_view_copy(&path->steps[0], g->base, &v, func);
	}
	if (st == COW_OK)
		st = cow__fn_tensor_new(g, path, v, gen, &l, out);
	cow__fn_path_release(path);
	return st;
}

/* cow__fn_adopt_storage: @plain joins the one group of its storage. */
static cow_status_t
join_storage_group(cow_status_t st, cow_tensor_t *plain, cow_tensor_t **out,
    const char *func)
{
	struct cow__fn_group *g = NULL;

	if (st != COW_OK)
		return st;
	if ((st = group_of(cow__fn_thread_backend(), plain, &g, func)) ==
	    COW_OK) {
		st = member(g, plain, out, func);
		cow__fn_group_release(g);
	}
	cow_tensor_release(plain);
	return st;
}

cow_status_t
cow__fn_adopt_storage(cow_status_t st, cow_tensor_t *plain,
    cow_tensor_t **out, const char *func)
{
	return COW__FAULT_POINT(group_per_storage,
	    join_storage_group(st, plain, out, func));
}
