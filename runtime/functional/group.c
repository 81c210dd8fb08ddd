/*
 * group.c - alias groups ("Alias", docs/functionalization.md) and the
 * per-tensor state
 * ("View"): the update queue, sync (apply the queue to the base, then
 * replay a reader's path) and the commit of a write.
 *
 * Applying one update (value U written through the path s1 ... sn):
 *   i0 = base, i1 = s1(i0), ..., i(n-1) = s(n-1)(i(n-2))   view_copy
 *   c = U; for k = n .. 1: c = sk_scatter(i(k-1), c)          scatter
 *   base = c
 * Every scatter is well defined because every prefix of the path is an
 * injective layout over the base; a path with an overlapping prefix (an
 * expand that broadcasts, then a select) is queued as the one absolute
 * as_strided step of the written tensor's layout instead, which writes the
 * same base elements.
 *
 * Memory bound: after every write, a group holds at most
 * COW_FUNCTIONAL_MAX_UPDATES updates whose values take at most the base's
 * bytes; a write through a path already queued replaces that update (the
 * later write covers exactly the same elements), and a write that exceeds
 * either limit applies the whole queue to the base. (Only when memory to
 * apply it cannot be had does the queue keep one more update.)
 */
#include <string.h>

#include "alloc/allocator.h"
#include "core/die.h"
#include "core/error.h"
#include "core/fault.h"
#include "functional/dispatch.h"
#include "functional/functional.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

cow_status_t
cow__fn_group_new(struct cow__fval *base, struct cow__fn_group **out)
{
	struct cow__fn_group *g = cow__alloc(base->alloc, sizeof *g);

	if (g == NULL) {
		cow__fval_release(base);
		return COW_ENOMEM;
	}
	memset(g, 0, sizeof *g);
	cow__ref_init(&g->refs, 1);
	g->be = base->be;
	g->alloc = base->alloc;
	g->dtype = base->dtype;
	g->ndim = base->ndim;
	for (int d = 0; d < base->ndim; d++)
		g->sizes[d] = base->sizes[d];
	g->base_nbytes = cow__fval_nbytes(base);
	g->base = base;
	*out = g;
	return COW_OK;
}

static void
update_drop(struct cow__fn_group *g, size_t i)
{
	g->pending_bytes -= cow__fval_nbytes(g->upd[i].value);
	cow__fval_release(g->upd[i].value);
	cow__fn_path_release(g->upd[i].path);
	memmove(&g->upd[i], &g->upd[i + 1],
	    (g->nupd - i - 1) * sizeof g->upd[0]);
	g->nupd--;
}

void
cow__fn_group_release(struct cow__fn_group *g)
{
	if (g == NULL || !cow__fn_group_put(g))
		return;
	/* Nothing to write back: every write reached the storage when it
	 * was made (cow__fn_commit_write). */
	while (g->nupd > 0)
		update_drop(g, g->nupd - 1);
	cow__fval_release(g->base);
	cow_tensor_release(g->input);
	cow__free(g->alloc, g, sizeof *g);
}

cow_status_t
cow__fn_tensor_new(struct cow__fn_group *g, struct cow__fn_path *path,
    struct cow__fval *value, uint64_t generation,
    const struct cow__layout *l, cow_tensor_t **out)
{
	struct cow__fn *fn;
	cow_tensor_t *t;

	if ((t = cow__tensor_alloc(g->alloc)) == NULL) {
		cow__fval_release(value);
		return COW_ENOMEM;
	}
	if ((fn = cow__alloc(g->alloc, sizeof *fn)) == NULL) {
		cow__tensor_free(t);
		cow__fval_release(value);
		return COW_ENOMEM;
	}
	/* No storage: the values belong to the layer. The layout is the
	 * one the strided runtime would give this tensor. */
	cow__tensor_init(t, NULL, g->dtype, l);
	cow__ref_get(&g->refs);
	cow__fn_path_retain(path);
	fn->group = g;
	fn->path = path;
	fn->value = value;
	fn->generation = generation;
	cow__tensor_impl_attach(t, &cow__fn_impl, fn);
	*out = t;
	return COW_OK;
}

void
cow__fn_tensor_destroy(cow_tensor_t *t)
{
	struct cow__fn *fn = cow__fn_of(t);

	cow__fval_release(fn->value);
	cow__fn_path_release(fn->path);
	cow__fn_group_release(fn->group);
	cow__free(t->alloc, fn, sizeof *fn);
}

/* ------------------------------------------------------------------ */
/* Traced backend calls.                                                */

cow_status_t
cow__fn_view_copy(const struct cow__view_step *s, struct cow__fval *in,
    struct cow__fval **out, const char *func)
{
	char args[COW__SHAPE_STR_MAX * 2 + 64];
	cow_status_t st;

	if ((st = in->be->ops->view_copy(s, in, out, func)) != COW_OK)
		return st;
	if (cow__fn_tracing())
		cow__fn_trace("%%%llu = %s_copy(%%%llu, %s)",
		    (unsigned long long)(*out)->id,
		    cow__step_kind_name(s->kind), (unsigned long long)in->id,
		    cow__fn_step_args(s, args, sizeof args));
	return COW_OK;
}

static cow_status_t
traced_scatter(const struct cow__view_step *s, struct cow__fval *parent,
    struct cow__fval *src, struct cow__fval **out, const char *func)
{
	char args[COW__SHAPE_STR_MAX * 2 + 64];
	cow_status_t st;

	if ((st = parent->be->ops->scatter(s, parent, src, out, func)) !=
	    COW_OK)
		return st;
	if (cow__fn_tracing())
		cow__fn_trace("%%%llu = %s_scatter(%%%llu, %%%llu, %s)",
		    (unsigned long long)(*out)->id,
		    cow__step_kind_name(s->kind),
		    (unsigned long long)parent->id,
		    (unsigned long long)src->id,
		    cow__fn_step_args(s, args, sizeof args));
	return COW_OK;
}

/* A canonical base holding @v's elements (@v's reference is consumed). */
static cow_status_t
make_canonical(struct cow__fval *v, struct cow__fval **out, const char *func)
{
	struct cow__fval *c;
	cow_status_t st;

	if (v->be->ops->canonical(v)) {
		*out = v;
		return COW_OK;
	}
	st = v->be->ops->convert(v, v->dtype, v->ndim, v->sizes, &c, func);
	if (st == COW_OK && cow__fn_tracing())
		cow__fn_trace("%%%llu = clone(%%%llu)",
		    (unsigned long long)c->id, (unsigned long long)v->id);
	cow__fval_release(v);
	if (st == COW_OK)
		*out = c;
	return st;
}

/* The base with update @u applied (a new value in *out). */
static cow_status_t
apply_update(struct cow__fn_group *g, const struct cow__fn_update *u,
    struct cow__fval **out, const char *func)
{
	const struct cow__fn_path *p = u->path;
	struct cow__fval **inter, *cur, *next;
	size_t n = p->len, bytes = n * sizeof *inter, k;
	cow_status_t st = COW_OK;

	cow__fval_retain(u->value);
	if (n == 0)
		return make_canonical(u->value, out, func);
	if ((inter = cow__alloc(g->alloc, bytes)) == NULL) {
		cow__fval_release(u->value);
		return COW_ENOMEM;
	}
	inter[0] = g->base;
	cow__fval_retain(g->base);
	for (k = 1; k < n && st == COW_OK; k++)
		if ((st = cow__fn_view_copy(&p->steps[k - 1], inter[k - 1],
		    &inter[k], func)) != COW_OK)
			break;
	cur = u->value;
	if (st == COW_OK) {
		for (k = n; k-- > 0;) {
			if ((st = traced_scatter(&p->steps[k], inter[k], cur,
			    &next, func)) != COW_OK)
				break;
			cow__fval_release(cur);
			cur = next;
		}
		k = n;
	}
	/* k intermediates exist (all of them, or those made before the
	 * failure). */
	while (k-- > 0)
		cow__fval_release(inter[k]);
	cow__free(g->alloc, inter, bytes);
	if (st != COW_OK) {
		cow__fval_release(cur);
		return st;
	}
	return make_canonical(cur, out, func);
}

cow_status_t
cow__fn_group_flush(struct cow__fn_group *g, const char *func)
{
	struct cow__fval *nb;
	cow_status_t st;

	while (g->nupd > 0) {
		size_t i = COW__FAULT_POINT(oldest_update, 0);
		if ((st = apply_update(g, &g->upd[i], &nb, func)) != COW_OK)
			return st;
		cow__fval_assign(&g->base, nb);
		update_drop(g, i);
		g->applied++;
	}
	return COW_OK;
}

cow_status_t
cow__fn_sync(cow_tensor_t *t, const char *func)
{
	struct cow__fn *fn = cow__fn_of(t);
	struct cow__fn_group *g = fn->group;
	struct cow__fval *v, *next;
	cow_status_t st;

	if (fn->generation == g->generation)
		return COW_OK;
	if ((st = cow__fn_group_flush(g, func)) != COW_OK)
		return st;
	/* Replay the reader's path on the new base. */
	v = g->base;
	cow__fval_retain(v);
	for (size_t k = 0; k < fn->path->len; k++) {
		if ((st = cow__fn_view_copy(&fn->path->steps[k], v, &next,
		    func)) != COW_OK) {
			cow__fval_release(v);
			return st;
		}
		cow__fval_release(v);
		v = next;
	}
	cow__fval_assign(&fn->value, v);
	fn->generation = g->generation;
	return COW_OK;
}

/* The path an update of @t is queued with (a new reference). */
static cow_status_t
update_path(cow_tensor_t *t, struct cow__fn_path **out)
{
	struct cow__fn *fn = cow__fn_of(t);
	struct cow__fn_group *g = fn->group;
	struct cow__layout l;
	struct cow__view_step s;
	bool overlaps = false;
	cow_status_t st;

	cow__layout_contiguous(&l, g->ndim, g->sizes);
	for (size_t k = 0; k < fn->path->len && !overlaps; k++) {
		cow__view_step_layout(&fn->path->steps[k], &l);
		if ((st = cow__layout_overlaps(l.ndim, l.sizes, l.strides,
		    g->alloc, &overlaps)) != COW_OK)
			return st;
	}
	if (!overlaps) {
		cow__fn_path_retain(fn->path);
		*out = fn->path;
		return COW_OK;
	}
	/* The one absolute step that reaches the same base elements. */
	cow__view_step_init(&s, COW__STEP_AS_STRIDED);
	s.ndim = s.out_ndim = t->ndim;
	s.a = t->offset;
	for (int d = 0; d < t->ndim; d++) {
		s.sizes[d] = s.out_sizes[d] = t->sizes[d];
		s.strides[d] = t->strides[d];
	}
	s.in_ndim = g->ndim;
	for (int d = 0; d < g->ndim; d++)
		s.in_sizes[d] = g->sizes[d];
	return cow__fn_path_one(&s, g->alloc, out);
}

/*
 * A storage group's write-through, the part that can fail: *src = @v's
 * elements in row-major order (@v itself, or a dense copy of it in *tmp)
 * and *dst = the storage's element 0 for writing (the storage is
 * materialised when it is copy-on-write, through the tensor layer's one
 * write access, as a plain write through the same elements would be).
 */
static cow_status_t
through_begin(struct cow__fn_group *g, struct cow__fval *v,
    struct cow__fval **tmp, const char **src, char **dst, const char *func)
{
	cow_status_t st;
	bool copy;

	*tmp = NULL;
	*src = v->be->ops->dense_data(v, &copy);
	if (copy) {
		if ((st = v->be->ops->convert(v, v->dtype, v->ndim, v->sizes,
		    tmp, func)) != COW_OK)
			return st;
		*src = (*tmp)->be->ops->dense_data(*tmp, &copy);
	}
	/* Values are the layer's own: their reads are never refused. */
	if (*src == NULL)
		cow__die("a written value has no readable elements");
	if ((st = cow__tensor_write_data(g->input, dst, func)) != COW_OK) {
		cow__fval_release(*tmp);
		*tmp = NULL;
	}
	return st;
}

/* The part that cannot fail: @src's elements to @t's place in the
 * storage (@dst is its element 0). */
static void
through_end(const cow_tensor_t *t, const char *src, char *dst)
{
	int64_t idx[COW__FN_MAXD] = {0}, is = (int64_t)t->itemsize;

	for (int64_t k = 0; k < t->numel; k++) {
		int64_t off = t->offset;

		for (int d = 0; d < t->ndim; d++)
			off += idx[d] * t->strides[d];
		memcpy(dst + off * is, src + k * is, (size_t)is);
		for (int d = t->ndim - 1; d >= 0; d--) {
			if (++idx[d] < t->sizes[d])
				break;
			idx[d] = 0;
		}
	}
}

/* The queue holds more than its bound allows after a write. */
static bool
update_over_bound(const struct cow__fn_group *g)
{
	return g->nupd > COW_FUNCTIONAL_MAX_UPDATES ||
	    g->pending_bytes > g->base_nbytes;
}

cow_status_t
cow__fn_commit_write(cow_tensor_t *t, struct cow__fval *value,
    const char *func)
{
	struct cow__fn *fn = cow__fn_of(t);
	struct cow__fn_group *g = fn->group;
	struct cow__fval *tmp = NULL;
	struct cow__fn_path *path;
	const char *src = NULL;
	char *dst = NULL;
	cow_status_t st;
	size_t i;

	if ((st = update_path(t, &path)) != COW_OK) {
		cow__fval_release(value);
		return st;
	}
	/* An earlier write left the queue over a bound (its flush could not
	 * allocate): apply the queue before adding to it, or refuse the write.
	 * So a queue never holds more than one update past either bound. A
	 * failure here changes no value anyone can read. A storage group's
	 * write is also written to the storage: materialising it may fail
	 * too (last, because its success is reported to the reshape-alias
	 * simulation). */
	if ((update_over_bound(g) &&
	    (st = cow__fn_group_flush(g, func)) != COW_OK) ||
	    (g->input != NULL && t->numel > 0 &&
	    (st = through_begin(g, value, &tmp, &src, &dst, func)) !=
	    COW_OK)) {
		cow__fn_path_release(path);
		cow__fval_release(value);
		return st;
	}
	/* Nothing can fail from here on. The storage gets the write now, so
	 * it always holds the group's current values. */
	if (dst != NULL) {
		through_end(t, src, dst);
		cow__fval_release(tmp);
	}
	for (i = 0; i < g->nupd;) {
		if (cow__fn_path_equal(g->upd[i].path, path)) {
			update_drop(g, i);
			g->coalesced++;
		} else {
			i++;
		}
	}
	cow__fval_retain(value);
	g->upd[g->nupd].value = value;
	g->upd[g->nupd].path = path;
	g->nupd++;
	g->pending_bytes += cow__fval_nbytes(value);
	g->generation++;
	cow__fval_assign(&fn->value, value);
	fn->generation = g->generation;
	if (update_over_bound(g)) {
		g->flushes++;
		/* The write has happened; a flush that cannot allocate
		 * leaves the rest queued (still correct, one over). */
		(void)cow__fn_group_flush(g, func);
	}
	return COW_OK;
}

cow_status_t
cow__fn_group_fresh(struct cow__fval *v, struct cow__fn_group **out,
    const char *func)
{
	cow_status_t st;

	if ((st = make_canonical(v, &v, func)) != COW_OK)
		return st;
	return cow__fn_group_new(v, out);
}

cow_status_t
cow__fn_tensor_fresh(struct cow__fval *v, cow_tensor_t **out,
    const char *func)
{
	struct cow__fn_group *g;
	struct cow__layout l;
	cow_status_t st;

	if ((st = cow__fn_group_fresh(v, &g, func)) != COW_OK)
		return st;
	cow__fval_retain(g->base);
	cow__layout_contiguous(&l, g->ndim, g->sizes);
	st = cow__fn_tensor_new(g, cow__fn_path_empty(), g->base, 0, &l, out);
	cow__fn_group_release(g);
	return st;
}
