/*
 * fn_ops.c - the functionalization kernels behind the dispatch step: every
 * public tensor op on a functional tensor (dispatch.h). Each keeps its
 * public function's contract and errors (validation first, in the order
 * the strided kernels validate), then works on values:
 *
 * - views record a step and compute their value from the parent's current
 *   value, never syncing;
 * - in-place ops sync the destination (they read it), compute the
 *   out-of-place result and commit it as a write (group.c);
 * - every other read syncs its functional inputs first;
 * - results of out-of-place ops are functional tensors in new groups.
 *
 * A plain argument is read through a lazy clone (strided backend) or a
 * copy (opaque backend). A plain destination written from a functional
 * source gets the source's values as a plain tensor and the ordinary op.
 */
#include <string.h>

#include "core/error.h"
#include "functional/dispatch.h"
#include "functional/functional.h"
#include "tensor/dtype.h"
#include "tensor/impl.h"
#include "tensor/kernels.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

/* ------------------------------------------------------------------ */
/* Inputs.                                                               */

/* The backend of a call: its first functional argument's. */
static const cow_backend_t *
backend_of(const cow_tensor_t *a, const cow_tensor_t *b)
{
	const struct cow__fn *fn = cow__fn_of(a);

	return (fn != NULL ? fn : cow__fn_of(b))->group->be;
}

/* The current value of @t on @be (a new reference). */
static cow_status_t
current_value(const cow_tensor_t *t, const cow_backend_t *be,
    struct cow__fval **out, const char *func)
{
	struct cow__fn *fn = cow__fn_of(t);
	cow_status_t st;

	if (fn == NULL)
		return cow__fn_import_plain(be, (cow_tensor_t *)t, out, func);
	if (fn->group->be != be)
		return cow__error(COW_EINVAL, "functional tensors on "
		    "backends %s and %s cannot be mixed", be->name,
		    fn->group->be->name);
	/* A read: sync (the layer's state changes, not the values). */
	if ((st = cow__fn_sync((cow_tensor_t *)t, func)) != COW_OK)
		return st;
	cow__fval_retain(fn->value);
	*out = fn->value;
	return COW_OK;
}

/* A plain tensor with @t's current values (plain @t: itself, retained). */
static cow_status_t
as_plain(const cow_tensor_t *t, cow_tensor_t **out, const char *func)
{
	struct cow__fn *fn = cow__fn_of(t);
	cow_status_t st;

	if (fn == NULL) {
		cow_tensor_retain((cow_tensor_t *)t);
		*out = (cow_tensor_t *)t;
		return COW_OK;
	}
	if ((st = cow__fn_sync((cow_tensor_t *)t, func)) != COW_OK)
		return st;
	return fn->value->be->ops->export_plain(fn->value, out, func);
}

static void
trace_op(const char *op, const struct cow__fval *r,
    const struct cow__fval *a, const struct cow__fval *b, const char *extra)
{
	char shape[COW__SHAPE_STR_MAX];

	if (!cow__fn_tracing())
		return;
	if (a == NULL)
		cow__fn_trace("%%%llu = %s(%s, %s%s)",
		    (unsigned long long)r->id, op, cow_dtype_name(r->dtype),
		    cow__shape_str(shape, r->ndim, r->sizes), extra);
	else if (b == NULL)
		cow__fn_trace("%%%llu = %s(%%%llu%s)",
		    (unsigned long long)r->id, op,
		    (unsigned long long)a->id, extra);
	else
		cow__fn_trace("%%%llu = %s(%%%llu, %%%llu%s)",
		    (unsigned long long)r->id, op, (unsigned long long)a->id,
		    (unsigned long long)b->id, extra);
}

/* ------------------------------------------------------------------ */
/* Views.                                                                */

/* A view of @t by the step @s (arguments set by the view function, not
 * yet checked). Never syncs. */
cow_status_t
cow__fn_view_step(cow_tensor_t *t, struct cow__view_step *s,
    cow_tensor_t **out, const char *func)
{
	struct cow__fn *fn = cow__fn_of(t);
	struct cow__fn_group *g = fn->group;
	struct cow__fn_path *path;
	struct cow__fval *v, *from;
	struct cow__layout l;
	uint64_t gen;
	cow_status_t st;

	cow__layout_of(t, &l);
	if ((st = cow__view_step_make(s, &l, t->itemsize,
	    g->base_nbytes)) != COW_OK)
		return st;
	if (s->kind == COW__STEP_AS_STRIDED) {
		/* Absolute: from the base, current only with no update
		 * pending. */
		from = g->base;
		gen = g->nupd == 0 ? g->generation : COW__FN_STALE;
	} else {
		from = fn->value;
		gen = fn->generation;
	}
	if ((st = cow__fn_path_append(fn->path, s, g->alloc, &path)) !=
	    COW_OK)
		return st;
	if ((st = cow__fn_view_copy(s, from, &v, func)) == COW_OK)
		st = cow__fn_tensor_new(g, path, v, gen, &l, out);
	cow__fn_path_release(path);
	return st;
}

cow_status_t
cow__fn_reshape(cow_tensor_t *t, int ndim, const int64_t *sizes,
    cow_tensor_t **out)
{
	static const char func[] = "cow_tensor_reshape";
	int64_t ns[COW__FN_MAXD], nst[COW__FN_MAXD];
	struct cow__view_step s;
	cow_tensor_t *c;
	cow_status_t st;

	if ((st = cow__shape_infer(t->numel, ndim, sizes, ns)) != COW_OK)
		return st;
	cow__view_step_init(&s, COW__STEP_VIEW);
	s.ndim = ndim;
	memcpy(s.sizes, ns, (size_t)ndim * sizeof ns[0]);
	if (cow__view_strides(t->ndim, t->sizes, t->strides, ndim, ns, nst)) {
		if (cow_reshape_mode_effective() != COW_RESHAPE_LAZY_COPY)
			return cow__fn_view_step(t, &s, out, func);
		/* No aliasing: a view of a lazy clone. */
		if ((st = cow__fn_lazy_clone(t, &c)) != COW_OK)
			return st;
	} else if ((st = cow__fn_clone(t, &c, func)) != COW_OK) {
		return st;
	}
	st = cow__fn_view_step(c, &s, out, func);
	cow_tensor_release(c);
	return st;
}

/* ------------------------------------------------------------------ */
/* Copies.                                                               */

cow_status_t
cow__fn_clone(const cow_tensor_t *t, cow_tensor_t **out, const char *func)
{
	struct cow__fval *v;
	cow_status_t st;

	if ((st = current_value(t, cow__fn_of(t)->group->be, &v, func)) !=
	    COW_OK)
		return st;
	/* The value is immutable: the clone shares it (a lazy copy), and a
	 * non-canonical one is copied once into a base. */
	return cow__fn_tensor_fresh(v, out, func);
}

cow_status_t
cow__fn_lazy_clone(cow_tensor_t *t, cow_tensor_t **out)
{
	static const char func[] = "cow_tensor_lazy_clone";
	struct cow__fn *fn = cow__fn_of(t);
	struct cow__fn_group *g;
	struct cow__layout l;
	cow_status_t st;

	/* Like a strided lazy clone: a new group sharing the whole base,
	 * with @t's path and layout. The base must be current: apply the
	 * queue even when @t's own value is (its last write may be queued). */
	if ((st = cow__fn_group_flush(fn->group, func)) != COW_OK ||
	    (st = cow__fn_sync(t, func)) != COW_OK)
		return st;
	cow__fval_retain(fn->group->base);
	if ((st = cow__fn_group_new(fn->group->base, &g)) != COW_OK)
		return st;
	cow__fval_retain(fn->value);
	cow__layout_of(t, &l);
	st = cow__fn_tensor_new(g, fn->path, fn->value, 0, &l, out);
	cow__fn_group_release(g);
	return st;
}

/* ------------------------------------------------------------------ */
/* Element access.                                                       */

cow_status_t
cow__fn_read_data(const cow_tensor_t *t, const void **out, const char *func)
{
	struct cow__fn *fn = cow__fn_of(t);
	struct cow__fval *c;
	const void *p;
	cow_status_t st;
	bool copy;

	if ((st = cow__fn_sync((cow_tensor_t *)t, func)) != COW_OK)
		return st;
	p = fn->value->be->ops->dense_data(fn->value, &copy);
	if (copy) {
		/* Same elements, row-major: it becomes the tensor's value. */
		if ((st = fn->value->be->ops->convert(fn->value,
		    fn->value->dtype, fn->value->ndim, fn->value->sizes, &c,
		    func)) != COW_OK)
			return st;
		cow__fval_assign(&fn->value, c);
		p = c->be->ops->dense_data(c, &copy);
	}
	*out = p;
	return COW_OK;
}

cow_status_t
cow__fn_mutable_data(cow_tensor_t *t, void **out)
{
	(void)t;
	(void)out;
	return cow__error(COW_ENOTSUP,
	    "a functional tensor has no memory to write (its values belong "
	    "to the functionalization layer): use ops");
}

cow_status_t
cow__fn_get(const cow_tensor_t *t, const int64_t *index, double *f,
    int64_t *i, const char *func)
{
	int64_t idx[COW__FN_MAXD];
	const char *p;
	cow_status_t st;

	if ((st = cow__index_check(t, index, idx)) != COW_OK ||
	    (st = cow__fn_sync((cow_tensor_t *)t, func)) != COW_OK)
		return st;
	p = cow__fn_of(t)->value->be->ops->element(cow__fn_of(t)->value, idx);
	if (f != NULL)
		*f = cow__load_f64(t->dtype, p);
	else
		*i = cow__load_i64(t->dtype, p);
	return COW_OK;
}

cow_status_t
cow__fn_set(cow_tensor_t *t, const int64_t *index, const double *f,
    const int64_t *i, const char *func)
{
	struct cow__fn_scalar x = {f == NULL, f != NULL ? *f : 0.0,
	    i != NULL ? *i : 0};
	int64_t idx[COW__FN_MAXD], off;
	const cow_backend_t *be;
	struct cow__view_step s;
	struct cow__fval *v;
	cow_tensor_t *e;
	cow_status_t st;

	if ((st = cow__index_check(t, index, idx)) != COW_OK)
		return st;
	/* The one element, as an absolute view of the base: exact even when
	 * @t's elements overlap (an expanded view writes its one element). */
	off = t->offset;
	for (int d = 0; d < t->ndim; d++)
		off += idx[d] * t->strides[d];
	cow__view_step_init(&s, COW__STEP_AS_STRIDED);
	s.a = off;
	if ((st = cow__fn_view_step(t, &s, &e, "cow_tensor_as_strided")) !=
	    COW_OK)
		return st;
	be = cow__fn_of(e)->group->be;
	if ((st = be->ops->full(be, e->alloc, t->dtype, 0, NULL, &x, &v,
	    func)) == COW_OK) {
		trace_op("full", v, NULL, NULL, "");
		st = cow__fn_commit_write(e, v, func);
	}
	cow_tensor_release(e);
	return st;
}

/* ------------------------------------------------------------------ */
/* In-place ops.                                                         */

cow_status_t
cow__fn_fill_(cow_tensor_t *t, double value)
{
	static const char func[] = "cow_tensor_fill_";
	struct cow__fn_scalar x = {false, value, 0};
	struct cow__fn_group *g = cow__fn_of(t)->group;
	const cow_backend_t *be = g->be;
	struct cow__fval *v;
	char extra[64];
	cow_status_t st;

	if (t->numel == 0)
		return COW_OK;
	if ((st = cow__check_writable(t)) != COW_OK ||
	    (st = be->ops->full(be, g->alloc, t->dtype, t->ndim, t->sizes, &x,
	    &v, func)) != COW_OK)
		return st;
	snprintf(extra, sizeof extra, ", %.17g", value);
	trace_op("full", v, NULL, NULL, extra);
	return cow__fn_commit_write(t, v, func);
}

cow_status_t
cow__fn_binary_scalar_(enum cow__binop op, cow_tensor_t *t, double value,
    const char *func)
{
	struct cow__fval *a, *v;
	char extra[64];
	cow_status_t st;

	if (t->numel == 0)
		return COW_OK;
	if ((st = cow__check_writable(t)) != COW_OK ||
	    (st = current_value(t, cow__fn_of(t)->group->be, &a, func)) !=
	    COW_OK)
		return st;
	st = a->be->ops->binary_scalar(op, a, value, &v, func);
	if (st == COW_OK) {
		snprintf(extra, sizeof extra, ", %.17g", value);
		trace_op(op == COW__BINOP_ADD ? "add_scalar" :
		    "mul_scalar", v, a, NULL, extra);
	}
	cow__fval_release(a);
	return st == COW_OK ? cow__fn_commit_write(t, v, func) : st;
}

/* Validation of dst = dst op other / dst = other, as the kernels do. */
static cow_status_t
check_into(const cow_tensor_t *dst, const cow_tensor_t *other, bool same_dtype)
{
	int64_t bs[COW__FN_MAXD];
	cow_status_t st;

	if (same_dtype && dst->dtype != other->dtype)
		return cow__error(COW_EDTYPE, "operands: dtypes %s and "
		    "%s differ (no type promotion)", cow_dtype_name(dst->dtype),
		    cow_dtype_name(other->dtype));
	if ((st = cow__broadcast_strides(dst->ndim, dst->sizes, dst->strides,
	    dst->ndim, dst->sizes, bs)) != COW_OK ||
	    (st = cow__broadcast_strides(other->ndim, other->sizes,
	    other->strides, dst->ndim, dst->sizes, bs)) != COW_OK)
		return st;
	if (dst->numel == 0)
		return COW_OK;
	return cow__check_writable(dst);
}

cow_status_t
cow__fn_binary_(enum cow__binop op, cow_tensor_t *t,
    const cow_tensor_t *other, const char *func)
{
	const cow_backend_t *be;
	struct cow__fval *a, *b, *v;
	cow_tensor_t *p;
	cow_status_t st;

	if (cow__fn_of(t) == NULL) {
		/* A plain destination: the ordinary op with plain values. */
		if ((st = as_plain(other, &p, func)) != COW_OK)
			return st;
		st = cow__tensor_binary_(op, t, p, func);
		cow_tensor_release(p);
		return st;
	}
	be = cow__fn_of(t)->group->be;
	/* The kernel's order: dtypes, the op's dtype (and its in-place
	 * form's), shapes, overlap. */
	if ((t->dtype == other->dtype &&
	    (st = cow__binop_check_inplace(op, t->dtype)) != COW_OK) ||
	    (st = check_into(t, other, true)) != COW_OK ||
	    t->numel == 0)
		return st;
	/* Read both (other may alias t: it is read as it was before). */
	if ((st = current_value(t, be, &a, func)) != COW_OK)
		return st;
	if ((st = current_value(other, be, &b, func)) != COW_OK) {
		cow__fval_release(a);
		return st;
	}
	st = be->ops->binary(op, a, b, t->ndim, t->sizes, &v, func);
	if (st == COW_OK)
		trace_op(cow__binop_name(op), v, a, b, "");
	cow__fval_release(a);
	cow__fval_release(b);
	return st == COW_OK ? cow__fn_commit_write(t, v, func) : st;
}

cow_status_t
cow__fn_copy_(cow_tensor_t *dst, const cow_tensor_t *src)
{
	static const char func[] = "cow_tensor_copy_";
	const cow_backend_t *be;
	struct cow__fval *s, *v;
	char extra[32];
	cow_tensor_t *p;
	cow_status_t st;

	if (cow__fn_of(dst) == NULL) {
		if ((st = as_plain(src, &p, func)) != COW_OK)
			return st;
		st = cow_tensor_copy_(dst, p);
		cow_tensor_release(p);
		return st;
	}
	be = cow__fn_of(dst)->group->be;
	if ((st = check_into(dst, src, false)) != COW_OK ||
	    dst->numel == 0)
		return st;
	if ((st = current_value(src, be, &s, func)) != COW_OK)
		return st;
	st = be->ops->convert(s, dst->dtype, dst->ndim, dst->sizes, &v, func);
	if (st == COW_OK) {
		snprintf(extra, sizeof extra, ", %s", cow_dtype_name(v->dtype));
		trace_op("copy", v, s, NULL, extra);
	}
	cow__fval_release(s);
	return st == COW_OK ? cow__fn_commit_write(dst, v, func) : st;
}

/* ------------------------------------------------------------------ */
/* Out-of-place ops: results are functional tensors in new groups.      */

/* Finish an op: the result @v (reference consumed) as a new tensor. */
static cow_status_t
fresh_result(cow_status_t st, struct cow__fval *v, cow_tensor_t **out,
    const char *func)
{
	if (st != COW_OK)
		return st;
	return cow__fn_tensor_fresh(v, out, func);
}

cow_status_t
cow__fn_binary(enum cow__binop op, const cow_tensor_t *a,
    const cow_tensor_t *b, cow_tensor_t **out, const char *func)
{
	const cow_backend_t *be = backend_of(a, b);
	int64_t sizes[COW__FN_MAXD];
	struct cow__fval *va, *vb, *v;
	cow_status_t st;
	int ndim;

	if (a->dtype != b->dtype)
		return cow__error(COW_EDTYPE, "operands: dtypes %s and "
		    "%s differ (no type promotion)", cow_dtype_name(a->dtype),
		    cow_dtype_name(b->dtype));
	if ((st = cow__binop_check(op, a->dtype)) != COW_OK ||
	    (st = cow__broadcast_shape(a->ndim, a->sizes, b->ndim, b->sizes,
	    &ndim, sizes)) != COW_OK ||
	    (st = cow__shape_check(ndim, sizes,
	    cow_dtype_size(cow__binop_result_dtype(op, a->dtype)), NULL,
	    NULL)) != COW_OK)
		return st;
	if ((st = current_value(a, be, &va, func)) != COW_OK)
		return st;
	if ((st = current_value(b, be, &vb, func)) != COW_OK) {
		cow__fval_release(va);
		return st;
	}
	st = be->ops->binary(op, va, vb, ndim, sizes, &v, func);
	if (st == COW_OK)
		trace_op(cow__binop_name(op), v, va, vb, "");
	cow__fval_release(va);
	cow__fval_release(vb);
	return fresh_result(st, v, out, func);
}

cow_status_t
cow__fn_neg(const cow_tensor_t *a, cow_tensor_t **out)
{
	static const char func[] = "cow_tensor_neg";
	struct cow__fval *va, *v;
	cow_status_t st;

	if (a->dtype == COW_DTYPE_BOOL)
		return cow__error(COW_EDTYPE,
		    "negation is not defined for dtype bool");
	if ((st = current_value(a, cow__fn_of(a)->group->be, &va, func)) !=
	    COW_OK)
		return st;
	st = va->be->ops->neg(va, &v, func);
	if (st == COW_OK)
		trace_op("neg", v, va, NULL, "");
	cow__fval_release(va);
	return fresh_result(st, v, out, func);
}

cow_status_t
cow__fn_sum(const cow_tensor_t *a, bool all, int dim, bool keepdim,
    cow_tensor_t **out, const char *func)
{
	int64_t sizes[COW__FN_MAXD];
	struct cow__fval *va, *v;
	char extra[48] = "";
	uint32_t mask;
	cow_status_t st;
	int d = 0, n = 0;

	if (all) {
		mask = a->ndim == 0 ? 0 : (uint32_t)((1ull << a->ndim) - 1);
	} else {
		if ((st = cow__wrap_dim(dim, a->ndim, &d)) != COW_OK)
			return st;
		mask = 1u << d;
		for (int i = 0; i < a->ndim; i++) {
			if (i != d)
				sizes[n++] = a->sizes[i];
			else if (keepdim)
				sizes[n++] = 1;
		}
		snprintf(extra, sizeof extra, ", dim=%d, keepdim=%d", d,
		    (int)keepdim);
	}
	if ((st = current_value(a, cow__fn_of(a)->group->be, &va, func)) !=
	    COW_OK)
		return st;
	/* The order follows @a's layout (ops.h), which a value need not
	 * have (the opaque backend's are row-major, a write's result is
	 * contiguous where the tensor it wrote is not). */
	st = va->be->ops->sum(va, mask, all ? cow__sum_run(a->ndim, a->sizes,
	    a->strides) : 0, n, sizes, &v, func);
	if (st == COW_OK)
		trace_op("sum", v, va, NULL, extra);
	cow__fval_release(va);
	return fresh_result(st, v, out, func);
}

cow_status_t
cow__fn_equal(const cow_tensor_t *a, const cow_tensor_t *b, bool *out)
{
	static const char func[] = "cow_tensor_equal";
	const cow_backend_t *be = backend_of(a, b);
	struct cow__fval *va, *vb;
	cow_status_t st;

	if (a->dtype != b->dtype)
		return cow__error(COW_EDTYPE, "operands: dtypes %s and "
		    "%s differ (no type promotion)", cow_dtype_name(a->dtype),
		    cow_dtype_name(b->dtype));
	if ((st = current_value(a, be, &va, func)) != COW_OK)
		return st;
	if ((st = current_value(b, be, &vb, func)) != COW_OK) {
		cow__fval_release(va);
		return st;
	}
	st = be->ops->equal(va, vb, out, func);
	cow__fval_release(va);
	cow__fval_release(vb);
	return st;
}

/* The product of the current values, computed on plain copies of them by
 * the plain kernel (no backend op: a backend holds elements, and both
 * give their values as plain tensors), its result imported as a new
 * value. */
cow_status_t
cow__fn_matmul(const cow_tensor_t *a, const cow_tensor_t *b,
    cow_tensor_t **out)
{
	static const char func[] = "cow_tensor_matmul";
	const cow_backend_t *be = backend_of(a, b);
	cow_tensor_t *pa, *pb, *r = NULL;
	struct cow__fval *v;
	cow_status_t st;

	if ((st = as_plain(a, &pa, func)) != COW_OK)
		return st;
	if ((st = as_plain(b, &pb, func)) != COW_OK) {
		cow_tensor_release(pa);
		return st;
	}
	st = cow__kernel_matmul(pa, pb, &r, func);
	cow_tensor_release(pa);
	cow_tensor_release(pb);
	if (st != COW_OK)
		return st;
	st = be->ops->import(be, r, false, &v, func);
	cow_tensor_release(r);
	if (st == COW_OK)
		trace_op("matmul", v, NULL, NULL, "");
	return fresh_result(st, v, out, func);
}
