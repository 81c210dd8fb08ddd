/*
 * dispatch.c - the layer's tensor implementation (tensor/impl.h), which it
 * installs as the thread's creation implementation, and the public
 * functions of functional.h that are not ops: the thread's mode and
 * backend (their state is thread.c's), backends, wrap, to_plain, sync,
 * transpose_, info.
 */
#include <stdio.h>
#include <string.h>

#include <cowstore/testing.h>

#include "core/error.h"
#include "functional/dispatch.h"
#include "functional/functional.h"
#include "tensor/impl.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

/* The constructor: the strided implementation's tensor, adopted. */
static cow_status_t
fn_create(const struct cow__create *c, cow_tensor_t **out, const char *func)
{
	cow_tensor_t *plain = NULL;
	cow_status_t st;

	st = cow__tensor_strided_impl.create(c, &plain, func);
	switch (c->kind) {
	case COW__CREATE_FROM_STORAGE:
	case COW__CREATE_OVER_STORAGE:
		return cow__fn_adopt_storage(st, plain, out, func);
	case COW__CREATE_FULL:
		return cow__fn_adopt(st, plain, &c->value, out, func);
	default:
		return cow__fn_adopt(st, plain, NULL, out, func);
	}
}

/* A functional tensor has no memory to pin: cow_tensor_pin, _unpin. */
static cow_status_t
fn_pin(cow_tensor_t *t, void **out)
{
	(void)t;
	(void)out;
	return cow__error(COW_ENOTSUP, "a functional "
	    "tensor has no memory of its own to pin");
}

static cow_status_t
fn_unpin(cow_tensor_t *t)
{
	(void)t;
	return cow__error(COW_ENOTSUP, "a functional "
	    "tensor has no memory of its own to pin");
}

const struct cow__tensor_impl cow__fn_impl = {
	.create = fn_create,
	.destroy = cow__fn_tensor_destroy,
	.view = cow__fn_view_step,
	.reshape = cow__fn_reshape,
	.clone = cow__fn_clone,
	.lazy_clone = cow__fn_lazy_clone,
	.read_data = cow__fn_read_data,
	.mutable_data = cow__fn_mutable_data,
	.pin = fn_pin,
	.unpin = fn_unpin,
	.get = cow__fn_get,
	.set = cow__fn_set,
	.fill_ = cow__fn_fill_,
	.binary_scalar_ = cow__fn_binary_scalar_,
	.binary_ = cow__fn_binary_,
	.copy_ = cow__fn_copy_,
	.binary = cow__fn_binary,
	.neg = cow__fn_neg,
	.sum = cow__fn_sum,
	.equal = cow__fn_equal,
	.matmul = cow__fn_matmul,
};

/* The thread creates functional tensors when its mode is on or its
 * backend needs the layer: install the creation implementation
 * accordingly. */
static void
creating_update(void)
{
	struct cow__fn_thread *s = &cow__fn_tls;

	cow__tensor_impl_creating_set(s->mode || (s->backend != NULL &&
	    s->backend->needs_functionalization) ? &cow__fn_impl :
	    &cow__tensor_strided_impl);
}

const cow_backend_t *
cow_backend_strided(void)
{
	return &cow__backend_strided;
}

const cow_backend_t *
cow_backend_opaque_test(void)
{
	return &cow__backend_opaque;
}

const char *
cow_backend_name(const cow_backend_t *backend)
{
	return backend == NULL ? "none" : backend->name;
}

bool
cow_backend_needs_functionalization(const cow_backend_t *backend)
{
	return backend != NULL && backend->needs_functionalization;
}

cow_status_t
cow_backend_set_thread(const cow_backend_t *backend,
    const cow_backend_t **previous)
{
	if (previous != NULL)
		*previous = cow__fn_thread_backend();
	cow__fn_tls.backend = backend;
	creating_update();
	return COW_OK;
}

const cow_backend_t *
cow_backend_get_thread(void)
{
	return cow__fn_thread_backend();
}

cow_status_t
cow_functional_mode_set_thread(bool on, bool *previous)
{
	if (previous != NULL)
		*previous = cow__fn_tls.mode;
	cow__fn_tls.mode = on;
	creating_update();
	return COW_OK;
}

bool
cow_functional_mode_get_thread(void)
{
	return cow__fn_tls.mode;
}

bool
cow_tensor_is_functional(const cow_tensor_t *t)
{
	return t != NULL && cow__fn_of(t) != NULL;
}

const cow_backend_t *
cow_functional_backend(const cow_tensor_t *t)
{
	const struct cow__fn *fn = t != NULL ? cow__fn_of(t) : NULL;

	return fn != NULL ? fn->group->be : NULL;
}

/* ------------------------------------------------------------------ */
/* Creation.                                                             */

/* A new functional tensor holding @t's elements on @be (@owned: @t's
 * reference is handed over). The trace names it @what, with the fill
 * @value when there is one. */
static cow_status_t
adopt_as(const cow_backend_t *be, cow_tensor_t *t, bool owned,
    const char *what, const double *value, cow_tensor_t **out,
    const char *func)
{
	char extra[32] = "";

	char shape[COW__SHAPE_STR_MAX];
	struct cow__fval *v;
	cow_status_t st;

	if ((st = be->ops->import(be, t, owned, &v, func)) != COW_OK) {
		if (owned)
			cow_tensor_release(t);
		return st;
	}
	if (cow__fn_tracing()) {
		if (value != NULL)
			snprintf(extra, sizeof extra, ", %.17g", *value);
		cow__fn_trace("%%%llu = %s(%s, %s%s)", (unsigned long long)v->id,
		    what, cow_dtype_name(v->dtype),
		    cow__shape_str(shape, v->ndim, v->sizes), extra);
	}
	return cow__fn_tensor_fresh(v, out, func);
}

cow_status_t
cow__fn_adopt(cow_status_t st, cow_tensor_t *plain, const double *value,
    cow_tensor_t **out, const char *func)
{
	const char *what = func;

	if (st != COW_OK)
		return st;
	if (strncmp(what, "cow_tensor_", 11) == 0)
		what += 11;
	/* Imported as a read (the plain tensor's storage may be the
	 * caller's: cow_tensor_from_storage), then dropped. */
	st = adopt_as(cow__fn_thread_backend(), plain, false, what, value,
	    out, func);
	cow_tensor_release(plain);
	return st;
}

cow_status_t
cow__fn_import_plain(const cow_backend_t *be, cow_tensor_t *t,
    struct cow__fval **out, const char *func)
{
	char shape[COW__SHAPE_STR_MAX];
	cow_status_t st;

	if ((st = be->ops->import(be, t, false, out, func)) == COW_OK &&
	    cow__fn_tracing())
		cow__fn_trace("%%%llu = input(%s, %s)",
		    (unsigned long long)(*out)->id,
		    cow_dtype_name((*out)->dtype),
		    cow__shape_str(shape, (*out)->ndim, (*out)->sizes));
	return st;
}

/* ------------------------------------------------------------------ */
/* Functional tensors.                                                   */

cow_status_t
cow_functional_wrap(cow_tensor_t *t, const cow_backend_t *backend,
    cow_tensor_t **out)
{
	const struct cow__fn *fn;

	COW__RETURN_IF_NULL(t);
	COW__RETURN_IF_NULL(out);
	if (backend == NULL)
		backend = cow__fn_thread_backend();
	if ((fn = cow__fn_of(t)) != NULL) {
		if (fn->group->be != backend)
			return COW__NAMED(cow__error(COW_EINVAL,
			    "the tensor is functional on backend %s, not %s",
			    fn->group->be->name, backend->name));
		return COW__NAMED(cow__fn_clone(t, out, __func__));
	}
	return COW__NAMED(adopt_as(backend, t, false, "input", NULL, out,
	    __func__));
}

cow_status_t
cow_functional_to_plain(cow_tensor_t *t, cow_tensor_t **out)
{
	const struct cow__fn *fn;
	cow_status_t st;

	COW__RETURN_IF_NULL(t);
	COW__RETURN_IF_NULL(out);
	if ((fn = cow__fn_of(t)) == NULL)
		return COW__NAMED(cow_tensor_lazy_clone(t, out));
	if ((st = cow__fn_sync(t, __func__)) != COW_OK)
		return COW__NAMED(st);
	return COW__NAMED(fn->value->be->ops->export_plain(fn->value, out,
	    __func__));
}

cow_status_t
cow_functional_sync(cow_tensor_t *t)
{
	COW__RETURN_IF_NULL(t);
	if (cow__fn_of(t) == NULL)
		return COW_OK;
	return COW__NAMED(cow__fn_sync(t, __func__));
}

cow_status_t
cow_functional_transpose_(cow_tensor_t *t, int dim0, int dim1)
{
	struct cow__layout l;
	struct cow__fn_path *path;
	struct cow__view_step s;
	struct cow__fval *v;
	struct cow__fn *fn;
	cow_status_t st;

	COW__RETURN_IF_NULL(t);
	if ((fn = cow__fn_of(t)) == NULL)
		return COW__NAMED(cow__error(COW_ENOTSUP, "a plain tensor's "
		    "metadata is immutable: use cow_tensor_transpose()"));
	cow__view_step_init(&s, COW__STEP_TRANSPOSE);
	s.dim = dim0;
	s.dim2 = dim1;
	cow__layout_of(t, &l);
	if ((st = cow__view_step_make(&s, &l, t->itemsize,
	    fn->group->base_nbytes)) != COW_OK)
		return COW__NAMED(st);
	if ((st = cow__fn_path_append(fn->path, &s, fn->group->alloc,
	    &path)) != COW_OK)
		return COW__NAMED(st);
	if ((st = cow__fn_view_copy(&s, fn->value, &v, __func__)) != COW_OK) {
		cow__fn_path_release(path);
		return COW__NAMED(st);
	}
	/* Only this tensor changes: its path, value and layout. The
	 * generation its value reflects stays what it was. */
	cow__fn_path_release(fn->path);
	fn->path = path;
	cow__fval_assign(&fn->value, v);
	cow__tensor_set_layout(t, &l);
	return COW_OK;
}

cow_status_t
cow_functional_info(const cow_tensor_t *t, cow_functional_info_t *out)
{
	const struct cow__fn_group *g;
	const struct cow__fn *fn;

	COW__RETURN_IF_NULL(t);
	COW__RETURN_IF_NULL(out);
	if ((fn = cow__fn_of(t)) == NULL)
		return COW__NAMED(cow__error(COW_EINVAL,
		    "the tensor is not functional"));
	g = fn->group;
	out->generation = g->generation;
	out->tensor_generation = fn->generation;
	out->pending_updates = g->nupd;
	out->pending_bytes = g->pending_bytes;
	out->base_bytes = g->base_nbytes;
	out->path_length = fn->path->len;
	out->updates_applied = g->applied;
	out->updates_coalesced = g->coalesced;
	out->eager_flushes = g->flushes;
	return COW_OK;
}
