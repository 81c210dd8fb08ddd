/*
 * reshape.c - reshape and its mode (docs/reshape.md).
 *
 * When the strides allow a view, the legacy mode returns an aliasing view
 * on the same storage; the lazy-copy mode returns a lazy copy (a new
 * storage sharing the data) seen with the new shape: the same O(1) cost,
 * but no aliasing, so the program cannot tell a view from a copy. The warn
 * mode returns the legacy aliasing view with a new shadow storage (a
 * simulated lazy copy, tensor/shadow.h), so that the accesses that would
 * behave differently under the lazy-copy mode are reported. When no view
 * is possible, every mode copies eagerly.
 *
 * The process-wide mode is one word read with a relaxed atomic load (it
 * publishes no data: an operation that races with a change may use either
 * mode). The thread-local override takes precedence.
 */

#include "core/atomic.h"
#include "core/error.h"
#include "tensor/impl.h"
#include "tensor/shadow.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

/* Synchronization: atomic (relaxed; cow__atomic_* from core/atomic.h). */
static cow__atomic_u64_t reshape_global = {COW_RESHAPE_ALIAS};
/* COW_RESHAPE_INHERIT when the thread has no override. */
static _Thread_local cow_reshape_mode_t reshape_thread =
    COW_RESHAPE_INHERIT;

static cow_status_t
reshape_mode_check(cow_reshape_mode_t mode, bool inherit_ok)
{
	switch (mode) {
	case COW_RESHAPE_ALIAS:
	case COW_RESHAPE_LAZY_COPY:
	case COW_RESHAPE_WARN:
		return COW_OK;
	case COW_RESHAPE_INHERIT:
		if (inherit_ok)
			return COW_OK;
		break;
	}
	return cow__error(COW_EINVAL, "invalid reshape mode %d%s",
	    (int)mode, mode == COW_RESHAPE_INHERIT ?
	    " (COW_RESHAPE_INHERIT is only for thread overrides)" : "");
}

cow_status_t
cow_reshape_mode_set(cow_reshape_mode_t mode)
{
	cow_status_t st;

	if ((st = reshape_mode_check(mode, false)) != COW_OK)
		return COW__NAMED(st);
	cow__atomic_store_relaxed(&reshape_global, (uint64_t)mode);
	return COW_OK;
}

cow_reshape_mode_t
cow_reshape_mode_get(void)
{
	return (cow_reshape_mode_t)cow__atomic_load_relaxed(&reshape_global);
}

cow_status_t
cow_reshape_mode_set_thread(cow_reshape_mode_t mode,
    cow_reshape_mode_t *previous)
{
	cow_status_t st;

	if ((st = reshape_mode_check(mode, true)) != COW_OK)
		return COW__NAMED(st);
	if (previous != NULL)
		*previous = reshape_thread;
	reshape_thread = mode;
	return COW_OK;
}

cow_reshape_mode_t
cow_reshape_mode_get_thread(void)
{
	return reshape_thread;
}

cow_reshape_mode_t
cow_reshape_mode_effective(void)
{
	if (reshape_thread != COW_RESHAPE_INHERIT)
		return reshape_thread;
	return cow_reshape_mode_get();
}

/* A lazy copy of @t's storage seen with the layout *@l. */
static cow_status_t
reshape_lazy(cow_tensor_t *t, const struct cow__layout *l, cow_tensor_t **out)
{
	cow_tensor_t *r;
	cow_storage_t *s;
	cow_status_t st;

	/* The struct first, so a failure leaves t's storage as it was. */
	if ((r = cow__tensor_alloc(cow__tensor_allocator(t))) == NULL)
		return COW_ENOMEM;
	if ((st = cow_storage_lazy_clone(t->storage, &s)) != COW_OK) {
		cow__tensor_free(r);
		return cow__error_wrap(st, "");
	}
	cow__tensor_init(r, s, t->dtype, l);
	*out = r;
	return COW_OK;
}

cow_status_t
cow__strided_reshape(cow_tensor_t *t, int ndim, const int64_t *sizes,
    cow_tensor_t **out)
{
	const char *func = "cow_tensor_reshape";
	int64_t ns[COW_TENSOR_MAX_NDIM], nst[COW_TENSOR_MAX_NDIM];
	struct cow__layout l;
	cow_tensor_t *c;
	cow_status_t st;

	if ((st = cow__shape_infer(t->numel, ndim, sizes, ns)) !=
	    COW_OK)
		return st;
	if (cow__view_strides(t->ndim, t->sizes, t->strides, ndim, ns, nst)) {
		cow__layout_init(&l, ndim, ns, nst, t->offset);
		switch (cow_reshape_mode_effective()) {
		case COW_RESHAPE_LAZY_COPY:
			return reshape_lazy(t, &l, out);
		case COW_RESHAPE_WARN:
			return cow__shadow_fork(t, &l, out);
		default:
			/* A view: it shares t's shadow storage. */
			return cow__tensor_new_view(t, &l, out);
		}
	}
	/* No view possible: copy, then see the copy with the new shape. */
	if ((st = cow__tensor_clone(t, &c, func)) != COW_OK)
		return st;
	cow__layout_contiguous(&l, ndim, ns);
	st = cow__tensor_new(c->storage, c->dtype, &l, out);
	cow_tensor_release(c);
	return st;
}

cow_status_t
cow_tensor_reshape(cow_tensor_t *t, int ndim, const int64_t *sizes,
    cow_tensor_t **out)
{
	COW__RETURN_IF_NULL(t);
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(t->impl->reshape(t, ndim, sizes, out));
}
