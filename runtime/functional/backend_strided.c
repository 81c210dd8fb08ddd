/*
 * backend_strided.c - the strided runtime as a backend of the layer.
 *
 * A value is a plain tensor that nobody writes: view_copy is a real view
 * (no bytes copied), a scatter writes a LAZY CLONE of its parent (bytes are
 * copied only by that write's materialisation), op results come from the
 * runtime's kernels (kernels.h) on new contiguous tensors. Plain tensors
 * here never reach the dispatch step (they are not functional), and new
 * tensors are made with the internal constructors, which the thread's
 * creation implementation does not see.
 */

#include "core/error.h"
#include "functional/functional.h"
#include "storage/storage.h"
#include "tensor/dtype.h"
#include "tensor/kernels.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

/* Wrap the plain tensor @t (reference handed over) as a value. */
static cow_status_t
wrap_value(cow_tensor_t *t, cow_allocator_t *alloc, struct cow__fval **out)
{
	struct cow__fval *v = cow__fval_new(&cow__backend_strided, alloc,
	    t->dtype, t->ndim, t->sizes);

	if (v == NULL) {
		cow_tensor_release(t);
		return COW_ENOMEM;
	}
	v->strided = t;
	*out = v;
	return COW_OK;
}

static cow_status_t
s_import(const cow_backend_t *be, cow_tensor_t *t, bool owned,
    struct cow__fval **out, const char *func)
{
	cow_tensor_t *c;
	cow_status_t st;

	(void)be;
	if (owned)
		return wrap_value(t, cow__tensor_allocator(t), out);
	/* Immutable from here on, however the caller writes @t later: a
	 * lazy clone; but a copy of borrowed memory, whose storage could
	 * then no longer write it in place (its writes would copy it away
	 * from the caller's memory: storage.h). */
	if (cow__storage_borrowed_home(t->storage))
		st = cow__tensor_clone(t, &c, func);
	else if ((st = cow_tensor_lazy_clone(t, &c)) != COW_OK)
		st = cow__error_wrap(st, "");
	if (st != COW_OK)
		return st;
	return wrap_value(c, cow__tensor_allocator(t), out);
}

static bool
s_canonical(const struct cow__fval *v)
{
	const cow_tensor_t *t = v->strided;

	return t->offset == 0 && t->contiguous &&
	    cow_storage_nbytes(t->storage) == (size_t)t->numel * t->itemsize;
}

static cow_status_t
s_export(struct cow__fval *v, cow_tensor_t **out, const char *func)
{
	cow_status_t st;

	if (!v->strided->contiguous)
		return cow__tensor_clone(v->strided, out, func);
	if ((st = cow_tensor_lazy_clone(v->strided, out)) != COW_OK)
		return cow__error_wrap(st, "");
	return COW_OK;
}

/* @t seen with @sizes: a view when its strides allow, else a copy. */
static cow_status_t
reshaped(cow_tensor_t *t, int ndim, const int64_t *sizes,
    cow_tensor_t **out, const char *func)
{
	int64_t strides[COW__FN_MAXD];
	struct cow__layout l;
	cow_tensor_t *c;
	cow_status_t st;

	if (cow__view_strides(t->ndim, t->sizes, t->strides, ndim, sizes,
	    strides)) {
		cow__layout_init(&l, ndim, sizes, strides, t->offset);
		return cow__tensor_new(t->storage, t->dtype, &l, out);
	}
	if ((st = cow__tensor_clone(t, &c, func)) != COW_OK)
		return st;
	cow__layout_contiguous(&l, ndim, sizes);
	st = cow__tensor_new(c->storage, c->dtype, &l, out);
	cow_tensor_release(c);
	return st;
}

/* The real view of step @s on @t. */
static cow_status_t
s_view(const struct cow__view_step *s, cow_tensor_t *t, cow_tensor_t **out,
    const char *func)
{
	cow_status_t st;

	switch (s->kind) {
	case COW__STEP_VIEW:
		return reshaped(t, s->ndim, s->sizes, out, func);
	case COW__STEP_SELECT:
		st = cow_tensor_select(t, s->dim, s->a, out);
		break;
	case COW__STEP_SLICE:
		/* Normalised: start a, length b, step c. */
		st = cow_tensor_slice(t, s->dim, s->a,
		    s->b == 0 ? s->a : s->a + (s->b - 1) * s->c + 1, s->c, out);
		break;
	case COW__STEP_NARROW:
		st = cow_tensor_narrow(t, s->dim, s->a, s->b, out);
		break;
	case COW__STEP_TRANSPOSE:
		st = cow_tensor_transpose(t, s->dim, s->dim2, out);
		break;
	case COW__STEP_PERMUTE:
		st = cow_tensor_permute(t, s->ndim, s->perm, out);
		break;
	case COW__STEP_UNSQUEEZE:
		st = cow_tensor_unsqueeze(t, s->dim, out);
		break;
	case COW__STEP_SQUEEZE:
		st = cow_tensor_squeeze(t, s->dim, out);
		break;
	case COW__STEP_SQUEEZE_ALL:
		st = cow_tensor_squeeze_all(t, out);
		break;
	case COW__STEP_EXPAND:
		st = cow_tensor_expand(t, s->ndim, s->sizes, out);
		break;
	case COW__STEP_DIAGONAL:
		st = cow_tensor_diagonal(t, s->a, s->dim, s->dim2, out);
		break;
	case COW__STEP_AS_STRIDED:
		st = cow_tensor_as_strided(t, s->ndim, s->sizes, s->strides,
		    s->a, out);
		break;
	default:
		return cow__error(COW_EINVAL, "unknown view kind");
	}
	return st == COW_OK ? COW_OK : cow__error_wrap(st, "");
}

static cow_status_t
s_view_copy(const struct cow__view_step *s, struct cow__fval *in,
    struct cow__fval **out, const char *func)
{
	cow_tensor_t *r;
	cow_status_t st;

	if ((st = s_view(s, in->strided, &r, func)) != COW_OK)
		return st;
	return wrap_value(r, in->alloc, out);
}

static cow_status_t
s_scatter(const struct cow__view_step *s, struct cow__fval *parent,
    struct cow__fval *src, struct cow__fval **out, const char *func)
{
	int perm[COW__FN_MAXD];
	cow_tensor_t *n, *v;
	cow_status_t st;

	switch (s->kind) {
	case COW__STEP_SELECT:
	case COW__STEP_SLICE:
	case COW__STEP_NARROW:
	case COW__STEP_DIAGONAL:
	case COW__STEP_AS_STRIDED:
		/* Part of the parent changes: write a lazy clone of it. */
		if ((st = cow_tensor_lazy_clone(parent->strided, &n)) != COW_OK)
			return cow__error_wrap(st, "");
		if ((st = s_view(s, n, &v, func)) != COW_OK) {
			cow_tensor_release(n);
			return st;
		}
		st = cow__kernel_copy(v, src->strided, func);
		cow_tensor_release(v);
		if (st != COW_OK) {
			cow_tensor_release(n);
			return st;
		}
		return wrap_value(n, parent->alloc, out);
	case COW__STEP_TRANSPOSE:
		if ((st = cow_tensor_transpose(src->strided, s->dim, s->dim2,
		    &n)) != COW_OK)
			return cow__error_wrap(st, "");
		return wrap_value(n, parent->alloc, out);
	case COW__STEP_PERMUTE:
		for (int d = 0; d < s->ndim; d++)
			perm[s->perm[d]] = d;
		if ((st = cow_tensor_permute(src->strided, s->ndim, perm,
		    &n)) != COW_OK)
			return cow__error_wrap(st, "");
		return wrap_value(n, parent->alloc, out);
	default:
		/* view, unsqueeze, squeeze, squeeze_all, expand (written only
		 * when it broadcasts nothing): the same elements in the
		 * parent's shape. */
		if ((st = reshaped(src->strided, s->in_ndim, s->in_sizes,
		    &n, func)) != COW_OK)
			return st;
		return wrap_value(n, parent->alloc, out);
	}
}

/* A new contiguous tensor for a kernel that writes every element: no zero
 * fill, as for plain ops (tensor.h, cow__tensor_new_output). */
static cow_status_t
s_new(cow_allocator_t *alloc, cow_dtype_t dtype, int ndim,
    const int64_t *sizes, cow_tensor_t **out)
{
	return cow__tensor_new_output(dtype, ndim, sizes, alloc, out);
}

static cow_status_t
s_full(const cow_backend_t *be, cow_allocator_t *alloc,
    cow_dtype_t dtype, int ndim, const int64_t *sizes,
    const struct cow__fn_scalar *x, struct cow__fval **out, const char *func)
{
	cow_tensor_t *r;
	cow_status_t st;
	char *p;

	(void)be;
	if ((st = s_new(alloc, dtype, ndim, sizes, &r)) != COW_OK)
		return st;
	if (!x->is_int)
		st = cow__kernel_fill(r, x->f, func);
	else if (r->numel > 0 &&
	    (st = cow__tensor_write_data(r, &p, func)) == COW_OK)
		for (int64_t i = 0; i < r->numel; i++)
			cow__store_i64(dtype, p + i * (int64_t)r->itemsize,
			    x->i);
	if (st != COW_OK) {
		cow_tensor_release(r);
		return st;
	}
	return wrap_value(r, alloc, out);
}

/* Finish an op whose kernel wrote @r. */
static cow_status_t
s_done(cow_status_t st, cow_tensor_t *r, cow_allocator_t *alloc,
    struct cow__fval **out)
{
	if (st != COW_OK) {
		cow_tensor_release(r);
		return st;
	}
	return wrap_value(r, alloc, out);
}

static cow_status_t
s_binary(enum cow__binop op, struct cow__fval *a, struct cow__fval *b,
    int ndim, const int64_t *sizes, struct cow__fval **out, const char *func)
{
	cow_tensor_t *r;
	cow_status_t st;

	if ((st = s_new(a->alloc, cow__binop_result_dtype(op, a->dtype), ndim,
	    sizes, &r)) != COW_OK)
		return st;
	return s_done(cow__kernel_binary(op, r, a->strided, b->strided,
	    func), r, a->alloc, out);
}

static cow_status_t
s_binary_scalar(enum cow__binop op, struct cow__fval *a, double x,
    struct cow__fval **out, const char *func)
{
	cow_tensor_t *r;
	cow_status_t st;

	if ((st = s_new(a->alloc, a->dtype, a->ndim, a->sizes, &r)) != COW_OK)
		return st;
	return s_done(cow__kernel_binary_scalar(op, r, a->strided, x,
	    func), r, a->alloc, out);
}

static cow_status_t
s_neg(struct cow__fval *a, struct cow__fval **out, const char *func)
{
	cow_tensor_t *r;
	cow_status_t st;

	if ((st = s_new(a->alloc, a->dtype, a->ndim, a->sizes, &r)) != COW_OK)
		return st;
	return s_done(cow__kernel_neg(r, a->strided, func), r, a->alloc, out);
}

static cow_status_t
s_convert(struct cow__fval *src, cow_dtype_t dtype, int ndim,
    const int64_t *sizes, struct cow__fval **out, const char *func)
{
	cow_tensor_t *r;
	cow_status_t st;

	if ((st = s_new(src->alloc, dtype, ndim, sizes, &r)) !=
	    COW_OK)
		return st;
	return s_done(cow__kernel_copy(r, src->strided, func), r,
	    src->alloc, out);
}

static cow_status_t
s_sum(struct cow__fval *a, uint32_t mask, int64_t run, int ndim,
    const int64_t *sizes, struct cow__fval **out, const char *func)
{
	cow_tensor_t *r, *in = a->strided, *c = NULL;
	cow_status_t st;

	/*
	 * The runs of the tensor's layout (@run) are pieces of the value's
	 * own when the value merges at least as many dimensions (a view of
	 * the base has the tensor's strides; a write's result is
	 * contiguous); otherwise a contiguous copy's are.
	 */
	if (run > 0 && cow__sum_run(in->ndim, in->sizes, in->strides) % run !=
	    0) {
		if ((st = cow__tensor_clone(in, &c, func)) != COW_OK)
			return st;
		in = c;
	}
	if ((st = cow__tensor_new_contiguous(cow__sum_dtype(a->dtype), ndim,
	    sizes, a->alloc, &r)) != COW_OK) {
		cow_tensor_release(c);
		return st;
	}
	st = cow__kernel_sum(r, in, mask, run, func);
	cow_tensor_release(c);
	return s_done(st, r, a->alloc, out);
}

static cow_status_t
s_equal(struct cow__fval *a, struct cow__fval *b, bool *out,
    const char *func)
{
	return cow__kernel_equal(a->strided, b->strided, out, func);
}

static const char *
s_element(struct cow__fval *v, const int64_t *index)
{
	const cow_tensor_t *t = v->strided;
	const char *p;
	int64_t off = 0;

	if (cow__tensor_read_data(t, &p, "cow_tensor_get_f64") != COW_OK ||
	    p == NULL)
		return NULL;
	for (int d = 0; d < t->ndim; d++)
		off += index[d] * t->strides[d];
	return p + off * (int64_t)t->itemsize;
}

static const void *
s_dense_data(struct cow__fval *v, bool *need_copy)
{
	*need_copy = !v->strided->contiguous;
	return *need_copy ? NULL : cow_tensor_const_data(v->strided);
}

static void
s_destroy(struct cow__fval *v)
{
	cow_tensor_release(v->strided);
}

static const struct cow__backend_ops strided_ops = {
	.import = s_import,
	.export_plain = s_export,
	.canonical = s_canonical,
	.view_copy = s_view_copy,
	.scatter = s_scatter,
	.full = s_full,
	.binary = s_binary,
	.binary_scalar = s_binary_scalar,
	.neg = s_neg,
	.convert = s_convert,
	.sum = s_sum,
	.equal = s_equal,
	.element = s_element,
	.dense_data = s_dense_data,
	.destroy = s_destroy,
};

const struct cow_backend_s cow__backend_strided = {
	"strided", false, &strided_ops
};
