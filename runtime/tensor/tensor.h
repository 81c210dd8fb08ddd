/*
 * tensor.h - internal layout of a tensor and the functions the tensor files
 * share.
 *
 * Data access rule: every op reads a tensor's elements through
 * cow__tensor_read_data() and writes them through cow__tensor_write_data(),
 * and nothing else in runtime/tensor/ touches cow_storage_const_data() or
 * cow_storage_mutable_data(). Checks that must see every read or every
 * write (the reshape-alias simulation) belong inside those two functions.
 */
#ifndef COW_TENSOR_TENSOR_H
#define COW_TENSOR_TENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include <cowstore/tensor.h>

#include "core/refcount.h"

struct cow__borrow;
struct cow__shadow;
struct cow__tensor_impl;

struct cow_tensor_s {
	cow__refcount_t refs;   /* Handles. Synchronization: atomic. */
	/*
	 * Everything below is read-only after initialisation, except the
	 * layout of a non-strided tensor, which its implementation may
	 * change (cow__tensor_set_layout; cow_functional_transpose_).
	 */
	cow_dtype_t dtype;
	int ndim;
	bool contiguous;
	size_t itemsize;
	int64_t numel;
	int64_t offset;           /* in elements */
	cow_storage_t *storage;   /* one reference, owned */
	/*
	 * Own shadow storage (reshape-alias simulation, tensor/shadow.h): one
	 * reference, owned; NULL (the usual case) means the storage's default
	 * shadow. Set by the simulated lazy copy that creates the tensor, or
	 * inherited from a view's base.
	 */
	struct cow__shadow *shadow;
	cow_allocator_t *alloc;   /* allocator of this struct */
	/*
	 * Outstanding recorded MaybeOwned borrows (COW_DEBUG_BORROWS builds;
	 * always NULL otherwise). Synchronization: the borrow lock in
	 * maybe_owned.c.
	 */
	struct cow__borrow *borrows;
	/*
	 * The tensor's implementation (tensor/impl.h; never NULL, a plain
	 * tensor's is cow__tensor_strided_impl) and its state (NULL exactly
	 * for a strided tensor). A non-strided tensor may have no storage (NULL):
	 * every call goes to its table, and the layout below is what the
	 * implementation says it is (a functional tensor's: its place in its
	 * alias group's base). Synchronization: the implementation's
	 * (functional tensors: the user serialises uses of the group).
	 */
	const struct cow__tensor_impl *impl;
	void *impl_state;
	int64_t sizes[COW_TENSOR_MAX_NDIM];
	int64_t strides[COW_TENSOR_MAX_NDIM]; /* in elements, >= 0 */
};

/* An uninitialised tensor struct from @alloc (NULL on COW_ENOMEM). Free it
 * with cow__tensor_free() until it is initialised. */
cow_tensor_t *cow__tensor_alloc(cow_allocator_t *alloc);
void cow__tensor_free(cow_tensor_t *t);

/* A layout: sizes, strides and offset in elements. */
struct cow__layout {
	int ndim;
	int64_t sizes[COW_TENSOR_MAX_NDIM];
	int64_t strides[COW_TENSOR_MAX_NDIM];
	int64_t offset;
};

/* *@l = (@ndim, @sizes, @strides, @offset). @strides NULL means contiguous
 * (row-major). */
void cow__layout_init(struct cow__layout *l, int ndim, const int64_t *sizes,
    const int64_t *strides, int64_t offset);

/* Row-major layout of a shape at offset 0. */
static inline void
cow__layout_contiguous(struct cow__layout *l, int ndim, const int64_t *sizes)
{
	cow__layout_init(l, ndim, sizes, NULL, 0);
}

/* @t's layout. */
static inline void
cow__layout_of(const cow_tensor_t *t, struct cow__layout *l)
{
	l->ndim = t->ndim;
	l->offset = t->offset;
	for (int d = 0; d < t->ndim; d++) {
		l->sizes[d] = t->sizes[d];
		l->strides[d] = t->strides[d];
	}
}

/* Initialise @t (from cow__tensor_alloc) over @storage with the layout *@l,
 * taking over the caller's reference on @storage. The struct's allocator
 * (set by cow__tensor_alloc) is kept. */
void cow__tensor_init(cow_tensor_t *t, cow_storage_t *storage,
    cow_dtype_t dtype, const struct cow__layout *l);

/*
 * A new tensor over @storage (the tensor takes one new reference on it) with
 * the layout *@l, which the caller has validated (shape checked, layout
 * inside the storage). The struct comes from the storage's allocator.
 * COW_ENOMEM on failure.
 */
cow_status_t cow__tensor_new(cow_storage_t *storage, cow_dtype_t dtype,
    const struct cow__layout *l, cow_tensor_t **out);

/*
 * A view of @base: cow__tensor_new() over @base's storage with @base's
 * dtype, sharing @base's shadow storage (one more reference on it).
 */
cow_status_t cow__tensor_new_view(const cow_tensor_t *base,
    const struct cow__layout *l, cow_tensor_t **out);

/*
 * A new contiguous tensor on a new zero-filled private storage. Validates
 * dtype and shape (COW_EINVAL, COW_ERANGE, COW_EOVERFLOW).
 * @alloc NULL means the default allocator.
 */
cow_status_t cow__tensor_new_contiguous(cow_dtype_t dtype, int ndim,
    const int64_t *sizes, cow_allocator_t *alloc, cow_tensor_t **out);

/*
 * cow__tensor_new_contiguous without the zero fill: for a kernel's output,
 * every element of which the kernel writes (add, mul, neg, copies). The
 * bytes are unspecified until then; a caller whose kernel fails releases
 * the tensor unseen.
 */
cow_status_t cow__tensor_new_output(cow_dtype_t dtype, int ndim,
    const int64_t *sizes, cow_allocator_t *alloc, cow_tensor_t **out);

/*
 * cow_tensor_from_external (tensor.h), @func for creation's reshape-alias
 * events (the reads and writes below); *out must
 * not be NULL. On failure the memory stays the caller's (the deleter is not
 * called).
 */
cow_status_t cow__tensor_over_external(void *data, cow_dtype_t dtype,
    int ndim, const int64_t *sizes, const int64_t *strides, int64_t offset,
    cow_deleter_fn deleter, void *deleter_ctx, unsigned flags,
    cow_allocator_t *alloc, cow_tensor_t **out, const char *func);

/* The write access of cow_tensor_pin (pins @t's storage too; for a tensor
 * with no elements *out is NULL). */
cow_status_t cow__tensor_pin_data(cow_tensor_t *t, char **out,
    const char *func);

/* An eager contiguous copy of @t (cow_tensor_clone); @func for its
 * reshape-alias events. */
cow_status_t cow__tensor_clone(const cow_tensor_t *t, cow_tensor_t **out,
    const char *func);

/* Give @t (a non-strided tensor) the layout @l, with the same number of
 * elements. For its implementation only: a plain tensor's layout never
 * changes. */
void cow__tensor_set_layout(cow_tensor_t *t, const struct cow__layout *l);

/* The allocator new storages derived from @t use (its storage's). */
cow_allocator_t *cow__tensor_allocator(const cow_tensor_t *t);

/*
 * The ONE read access: *out = the address of element [0, ..., 0] for
 * reading, or NULL when the tensor has no elements. Never materialises and
 * changes no data. The reshape-alias check (tensor/shadow.h) may report
 * the read to the warning handler, or refuse it with COW_EALIASING under
 * COW_SHADOW_ERROR. @func, the public function, is the event's
 * (cow_shadow_event_t.func): the one name still passed down, as the event
 * fires inside the call; errors are named where the call returns
 * (core/error.h).
 */
cow_status_t cow__tensor_read_data(const cow_tensor_t *t, const char **out,
    const char *func);

/*
 * The ONE write access: materialise the storage if it is copy-on-write and
 * give the address of element [0, ..., 0] for writing. Call it only for a
 * tensor with elements. On failure (COW_ENOMEM, or COW_EALIASING from the
 * reshape-alias check) everything is as it was. @func: as for the read.
 *
 * Order in an op: every read access first (they have no side effect, so a
 * refused read changes nothing), then the write access, then re-base the
 * read pointers of inputs that view the destination's storage on the
 * address the write access returned (cow__tensor_rebase): materialisation
 * moves that storage's data. Inputs on other storages keep their pointers:
 * materialising one storage never moves another's data. The kernels
 * (kernels.c) take this order from one function, kernel_begin().
 */
cow_status_t cow__tensor_write_data(cow_tensor_t *t, char **out,
    const char *func);

/*
 * The read address of @in after @dst's write access returned @dst_data,
 * when @in views @dst's storage; @in_data (its read access result)
 * otherwise.
 */
const char *cow__tensor_rebase(const cow_tensor_t *in, const char *in_data,
    const cow_tensor_t *dst, const char *dst_data);

/* Normalise @dim (negative counts from the end) into [0, ndim). COW_ERANGE
 * names the dimension and the valid range. */
cow_status_t cow__wrap_dim(int dim, int ndim, int *out);

/* Check the element index @index (NULL allowed for 0-d) against @t's sizes,
 * negative entries counting from the end; write it normalised to @idx.
 * COW_EINVAL (NULL index) or COW_ERANGE. */
cow_status_t cow__index_check(const cow_tensor_t *t, const int64_t *index,
    int64_t *idx);

/* COW_EINVAL naming @name when @p is NULL. */
cow_status_t cow__check_tensor(const cow_tensor_t *t, const char *name);

/* Debug borrow check on the last release (maybe_owned.c): aborts when a
 * recorded borrow of @t is outstanding. Without COW_DEBUG_BORROWS it
 * compiles to nothing. */
#ifdef COW_DEBUG_BORROWS
void cow__borrow_check_release(cow_tensor_t *t);
#else
static inline void
cow__borrow_check_release(cow_tensor_t *t)
{
	(void)t;
}
#endif

#endif
