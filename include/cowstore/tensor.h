/*
 * cowstore tensors: typed, strided views over one copy-on-write storage.
 *
 * Model (docs/tensor.md):
 * - A tensor is an immutable description (dtype, sizes, strides, storage
 *   offset) over ONE storage, plus a reference on that storage. Two tensors
 *   alias if and only if they share a storage. (Functional tensors,
 *   functional.h, have no storage: they alias within their alias group,
 *   and those made over one storage form one group; the group writes
 *   through to that storage. cow_functional_transpose_ changes their
 *   metadata in place.)
 * - Views (tensor.h, views) make a new tensor over the SAME storage and copy
 *   nothing. Lazy clones make a new storage that shares the data until one
 *   side writes.
 * - Reads go through const access (cow_storage_const_data): they never
 *   materialise a copy-on-write storage. Writes go through mutable access
 *   (cow_storage_mutable_data): the first write through a COW storage
 *   materialises it, for every tensor viewing that storage at once.
 *
 * Element types are dtype.h's; the mode of cow_tensor_reshape() is
 * reshape.h's (both included here).
 *
 * Shapes: at most COW_TENSOR_MAX_NDIM dimensions. Sizes are non-negative;
 * strides are counted in elements and are non-negative (0 is allowed:
 * broadcast/expanded dimensions). Dimension arguments may be negative and
 * then count from the end (-1 is the last dimension), as in Python.
 *
 * Thread-safety: a plain tensor's metadata is immutable after creation, so
 * any number of threads may read one tensor, make views of it and lazy-clone
 * it at once (functional tensors: functional.h). Writes follow the storage
 * contract (storage.h): the user serialises a write through a storage
 * against every other use of that storage; tensors on different storages
 * (lazy copies included) need no synchronisation. Reference counting
 * (retain/release) is thread-safe.
 *
 * Errors follow common.h: a status, out-parameters written only on success,
 * cow_last_error() naming the function and the offending value, and a failed
 * call changes nothing and leaks nothing.
 * Under the reshape-alias simulation's COW_SHADOW_ERROR policy (shadow.h),
 * any call that reads or writes elements may also fail with COW_EALIASING.
 * Functional tensors (functional.h): a call that reads one may also fail
 * with COW_ENOMEM (it syncs first), and mixing backends gives COW_EINVAL.
 */
#ifndef COWSTORE_TENSOR_H
#define COWSTORE_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "common.h"
#include "dtype.h"
#include "reshape.h"
#include "storage.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest number of dimensions a tensor may have. */
#define COW_TENSOR_MAX_NDIM 16

typedef struct cow_tensor_s cow_tensor_t;

/* ------------------------------------------------------------------ */
/* Lifecycle.                                                           */

/**
 * cow_tensor_retain - add a reference. Ownership: the caller holds one more
 * reference (cow_tensor_release). Thread-safety: any thread holding a
 * reference. Errors: none; NULL does nothing. Aborts on a dead tensor or a
 * saturated count (caller bug).
 */
COW_API void cow_tensor_retain(cow_tensor_t *t);

/**
 * cow_tensor_release - drop a reference; the last one frees the tensor and
 * drops its storage reference. NULL does nothing.
 * In builds with COW_DEBUG_BORROWS, dropping the last reference while a
 * MaybeOwned borrow of the tensor is outstanding aborts with the file:line
 * where the borrow was taken (maybe_owned.h).
 * Ownership: the caller's reference is gone.
 * Thread-safety: any thread holding a reference (functional tensors: as
 * every use of their alias group, functional.h). Errors: none; NULL does
 * nothing.
 */
COW_API void cow_tensor_release(cow_tensor_t *t);

/**
 * cow_tensor_refcount - the current number of references (a diagnostic).
 * Thread-safety: any thread holding a reference; stale as soon as another
 * thread retains or releases. Errors: none; NULL gives 0.
 */
COW_API unsigned cow_tensor_refcount(const cow_tensor_t *t);

/* ------------------------------------------------------------------ */
/* Creation. Every new tensor holds one reference, released with
 * cow_tensor_release(). @allocator NULL means cow_allocator_default(); it
 * must outlive the tensor. @sizes may be NULL when @ndim is 0 (a scalar).
 * Any thread may create tensors; the calling thread's backend and mode
 * decide whether they are functional (functional.h).
 * Common errors: COW_EINVAL (out NULL, unknown dtype, sizes NULL with
 * ndim > 0, negative size), COW_ERANGE (ndim outside
 * [0, COW_TENSOR_MAX_NDIM]), COW_EOVERFLOW (the byte size overflows or
 * exceeds COW_STORAGE_MAX_NBYTES), COW_ENOMEM.                           */

/**
 * cow_tensor_empty - a new contiguous tensor on a new private storage. The
 * contents are unspecified (this version happens to zero them; do not rely
 * on it: use cow_tensor_zeros()).
 * Ownership: *out holds one reference. Thread-safety: any thread.
 * Errors: the common errors above.
 */
COW_API cow_status_t cow_tensor_empty(cow_dtype_t dtype, int ndim,
    const int64_t *sizes, cow_allocator_t *allocator, cow_tensor_t **out);

/**
 * cow_tensor_zeros - a new contiguous tensor filled with zeros.
 * Ownership: *out holds one reference. Thread-safety: any thread.
 * Errors: the common errors above.
 */
COW_API cow_status_t cow_tensor_zeros(cow_dtype_t dtype, int ndim,
    const int64_t *sizes, cow_allocator_t *allocator, cow_tensor_t **out);

/**
 * cow_tensor_full - a new contiguous tensor with every element @value,
 * converted to @dtype as cow_tensor_copy_() converts (ops.h).
 * Ownership: *out holds one reference. Thread-safety: any thread.
 * Errors: the common errors above.
 */
COW_API cow_status_t cow_tensor_full(cow_dtype_t dtype, int ndim,
    const int64_t *sizes, double value, cow_allocator_t *allocator,
    cow_tensor_t **out);

/**
 * cow_tensor_arange - a new 1-D tensor [0, 1, ..., n - 1] of @dtype
 * (converted as cow_tensor_copy_() converts).
 * Ownership: *out holds one reference. Thread-safety: any thread.
 * Errors: the common errors above; COW_EINVAL for n < 0.
 */
COW_API cow_status_t cow_tensor_arange(cow_dtype_t dtype, int64_t n,
    cow_allocator_t *allocator, cow_tensor_t **out);

/**
 * cow_tensor_from_data - a new contiguous tensor holding a COPY of @data:
 * numel * cow_dtype_size(dtype) bytes in row-major order.
 * Ownership: *out holds one reference.
 * Thread-safety: any thread.
 * Errors: the common errors above; COW_EINVAL (@data NULL while the shape
 * has elements).
 */
COW_API cow_status_t cow_tensor_from_data(cow_dtype_t dtype, int ndim,
    const int64_t *sizes, const void *data, cow_allocator_t *allocator,
    cow_tensor_t **out);

/**
 * cow_tensor_from_storage - a tensor over an existing storage, with explicit
 * layout. @strides NULL means contiguous strides for @sizes. @offset is in
 * elements. The whole tensor must lie inside the storage. When the thread
 * creates functional tensors, the tensor joins the storage's alias group
 * (made on first use), and its writes reach the storage (functional.h).
 * Ownership: *out holds one reference; the tensor takes its own reference
 * on @storage and the caller keeps its own. Thread-safety: a read of
 * @storage (functional: a use of the storage's alias group).
 * Errors: COW_EINVAL (NULL storage or out, unknown dtype, sizes NULL with
 * ndim > 0, negative size, stride or offset; functional: the storage's
 * live group is on another backend), COW_ERANGE (ndim, or the layout
 * reaches past the end of the storage: the message gives the byte needed
 * and the storage size), COW_EDTYPE (functional: the storage's live group
 * has another dtype), COW_EOVERFLOW, COW_ENOMEM.
 */
COW_API cow_status_t cow_tensor_from_storage(cow_storage_t *storage,
    cow_dtype_t dtype, int ndim, const int64_t *sizes, const int64_t *strides,
    int64_t offset, cow_tensor_t **out);

/**
 * cow_tensor_from_external - a tensor over memory the caller provides, with
 * no copy: element [i0, ..., in] is at @data + (offset + sum(i * stride)) *
 * itemsize. The library works out the bytes the layout reaches (the
 * storage's size, given to @deleter) and checks them. @strides NULL means
 * contiguous; strides and @offset are in elements and non-negative. @data
 * must be aligned to the dtype's element size (for complex dtypes, to the
 * size of one part); it may be NULL only when the layout reaches no byte.
 * @deleter, @deleter_ctx and @flags are cow_storage_from_external's, with
 * its ownership rules (storage.h): with a deleter the memory is handed over
 * and may be stolen; without one it is borrowed and never written but
 * through this tensor's storage; COW_STORAGE_READ_ONLY: never written (the
 * first write copies); COW_STORAGE_NOT_SHAREABLE: pinned for life.
 * @allocator: for the metadata and later copies, as
 * cow_storage_from_external_with_allocator. On a thread that creates
 * functional tensors, the tensor joins the new storage's alias group
 * (cow_tensor_from_storage).
 * Ownership: *out holds one reference. With a deleter, @data is handed over
 * on success; on failure nothing is taken and the deleter is not called.
 * Thread-safety: any thread.
 * Errors: COW_EINVAL (out NULL, unknown dtype, sizes NULL with ndim > 0,
 * negative size, stride or offset, unknown flag, data NULL while the
 * layout reaches bytes, data misaligned), COW_ERANGE (ndim),
 * COW_EOVERFLOW (the extent overflows or exceeds COW_STORAGE_MAX_NBYTES),
 * COW_ENOMEM.
 */
COW_API cow_status_t cow_tensor_from_external(void *data, cow_dtype_t dtype,
    int ndim, const int64_t *sizes, const int64_t *strides, int64_t offset,
    cow_deleter_fn deleter, void *deleter_ctx, unsigned flags,
    cow_allocator_t *allocator, cow_tensor_t **out);

/* ------------------------------------------------------------------ */
/* Accessors. A NULL tensor gives 0, false or NULL (a dtype:
 * COW_DTYPE_INVALID).                                                   */

/**
 * cow_tensor_ndim / cow_tensor_numel / cow_tensor_offset - the number of
 * dimensions; the number of elements (the product of the sizes; 1 for a
 * scalar); the storage offset of element [0, ..., 0], in elements.
 * Thread-safety: any thread holding a reference. Errors: none; NULL gives 0.
 */
COW_API int cow_tensor_ndim(const cow_tensor_t *t);
COW_API int64_t cow_tensor_numel(const cow_tensor_t *t);
COW_API int64_t cow_tensor_offset(const cow_tensor_t *t);

/**
 * cow_tensor_dtype - the dtype. Thread-safety: any thread holding a
 * reference. Errors: none; NULL gives COW_DTYPE_INVALID (-1, never a
 * tensor's dtype; cow_dtype_size() gives 0 for it). (Before 0.2 it gave
 * 0, COW_DTYPE_BOOL.)
 */
COW_API cow_dtype_t cow_tensor_dtype(const cow_tensor_t *t);

/**
 * cow_tensor_nbytes - the bytes the tensor's elements span in its
 * storage: from the lowest byte any element occupies to one past the
 * highest, that is (1 + sum over dimensions of stride * (size - 1)) *
 * itemsize. It counts the bytes between elements that the view skips
 * (a slice with a step, a column) and counts shared bytes once (an
 * expanded dimension, stride 0, adds nothing): numel * itemsize for a
 * contiguous tensor (and its transposes), more or less for other views.
 * The span starts at byte cow_tensor_offset() * itemsize of the storage.
 * 0 when the tensor has no elements. A functional tensor (functional.h)
 * gives the span of its layout in its alias group's base, as the strided
 * runtime would give it.
 * Thread-safety: any thread holding a reference. Errors: none; NULL gives
 * 0.
 */
COW_API size_t cow_tensor_nbytes(const cow_tensor_t *t);

/**
 * cow_tensor_sizes / cow_tensor_strides - the sizes and strides arrays (ndim
 * entries each).
 * Ownership: borrowed pointer into the tensor, valid while the caller holds
 * a reference on @t (cow_functional_transpose_ rewrites a functional
 * tensor's arrays in place). Thread-safety: any thread holding a reference.
 * Errors: none; NULL gives NULL.
 */
COW_API const int64_t *cow_tensor_sizes(const cow_tensor_t *t);
COW_API const int64_t *cow_tensor_strides(const cow_tensor_t *t);

/**
 * cow_tensor_size / cow_tensor_stride - size or stride of dimension @dim
 * (negative counts from the end).
 * Thread-safety: any thread holding a reference. Errors: COW_EINVAL (NULL t
 * or out), COW_ERANGE (dim outside [-ndim, ndim), naming it).
 */
COW_API cow_status_t cow_tensor_size(const cow_tensor_t *t, int dim,
    int64_t *out);
COW_API cow_status_t cow_tensor_stride(const cow_tensor_t *t, int dim,
    int64_t *out);

/**
 * cow_tensor_is_contiguous - true when the elements are laid out densely in
 * row-major order (dimensions of size 1 are ignored; a tensor with no
 * elements is contiguous). Thread-safety: any thread holding a reference.
 * Errors: none; NULL gives false.
 */
COW_API bool cow_tensor_is_contiguous(const cow_tensor_t *t);

/**
 * cow_tensor_storage - the storage the tensor views. Ownership: borrowed;
 * valid while the caller holds a reference on @t (retain it to keep it).
 * Thread-safety: any thread holding a reference. Errors: none; NULL for a
 * NULL or functional tensor.
 */
COW_API cow_storage_t *cow_tensor_storage(const cow_tensor_t *t);

/**
 * cow_tensor_read_data - address of element [0, ..., 0] for reading, with
 * a status. Never materialises. A tensor with no elements gives COW_OK and
 * *out NULL (it reads nothing, so the reshape-alias check is not made).
 * A functional tensor (functional.h) gives a contiguous row-major copy's
 * address, valid until the next op on any tensor of its alias group.
 * Ownership: *out is borrowed; valid until the next write through the
 * tensor's storage (which may move a COW storage's data) or its release;
 * never write through it.
 * Thread-safety: a read of the tensor's storage.
 * Errors: COW_EINVAL (NULL t or out), COW_EALIASING (the reshape-alias
 * check refuses the read under COW_SHADOW_ERROR, shadow.h), COW_ENOMEM (a
 * functional tensor's sync or copy failed); *out is untouched on failure.
 */
COW_API cow_status_t cow_tensor_read_data(const cow_tensor_t *t,
    const void **out);

/**
 * cow_tensor_const_data - cow_tensor_read_data() without the status: the
 * address, or NULL. NULL is ambiguous: it is given for a NULL tensor, for a
 * tensor with no elements (no error), and when the read is refused (the
 * reshape-alias check, COW_SHADOW_ERROR; a functional tensor's COW_ENOMEM;
 * cow_last_error() says why). Use cow_tensor_read_data() to tell them
 * apart.
 * Ownership: borrowed, as cow_tensor_read_data's *out; never write
 * through it. Thread-safety: a read of the tensor's storage.
 * Errors: none reported by status (above).
 */
COW_API const void *cow_tensor_const_data(const cow_tensor_t *t);

/**
 * cow_tensor_mutable_data - address of element [0, ..., 0] for writing. A
 * COW storage is materialised first (cow_storage_mutable_data), which moves
 * the data for every tensor viewing that storage. A tensor with no
 * elements gives COW_OK and *out NULL, and nothing happens: no
 * materialisation and no reshape-alias check (a functional one is refused
 * all the same, COW_ENOTSUP).
 * Ownership: *out is borrowed from the storage, as cow_storage_mutable_data:
 * kept across a lazy clone, it writes into the clone's bytes too (pin the
 * storage instead: cow_tensor_pin).
 * Thread-safety: a write on the tensor's storage.
 * Errors: COW_EINVAL (NULL), COW_ENOMEM (nothing changed), COW_EALIASING
 * (refused by the reshape-alias check, shadow.h; nothing changed),
 * COW_ENOTSUP (a functional tensor); *out is untouched on failure.
 */
COW_API cow_status_t cow_tensor_mutable_data(cow_tensor_t *t, void **out);

/**
 * cow_tensor_pin - cow_tensor_mutable_data(), and pin the tensor's storage
 * (cow_storage_pin): until the matching cow_tensor_unpin() (or
 * cow_storage_unpin() of the storage), lazy clones of any tensor on that
 * storage are eager copies, so no snapshot shares the bytes written through
 * *out. Use it for a writable pointer kept across lazy clones or handed to
 * another library. *out is NULL when the tensor has no elements (the
 * storage is pinned all the same).
 * Ownership: *out is borrowed from the storage, valid while it is pinned
 * and referenced; unpin once for every successful pin.
 * Thread-safety: a write on the tensor's storage.
 * Errors: COW_EINVAL (NULL), COW_ENOMEM, COW_EALIASING (as
 * cow_tensor_mutable_data), COW_EBUSY (as cow_storage_pin), COW_ENOTSUP (a
 * functional tensor); nothing changed on failure.
 */
COW_API cow_status_t cow_tensor_pin(cow_tensor_t *t, void **out);

/**
 * cow_tensor_unpin - drop one pin of the tensor's storage.
 * Thread-safety: any thread holding a reference.
 * Errors: COW_EINVAL (NULL, or the storage is not pinned), COW_ENOTSUP (a
 * functional tensor); nothing changed on failure.
 */
COW_API cow_status_t cow_tensor_unpin(cow_tensor_t *t);

/**
 * cow_tensor_get_f64 / cow_tensor_get_i64 - read the element at @index
 * (ndim entries; each may be negative, counting from the end; NULL for a
 * scalar). A read: never materialises. get_f64 converts integers to double
 * (int64 and uint64 values beyond 2^53 are rounded to nearest) and gives the
 * real part of a complex element; get_i64 converts floating values as
 * cow_tensor_copy_() does (truncation, saturation to int64, NaN to 0; the
 * real part of a complex element) and gives a uint64 element's bits as
 * int64 (modulo 2^64: values above INT64_MAX come out negative).
 * Thread-safety: a read of the tensor's storage.
 * Errors: COW_EINVAL (NULL t or out, NULL index with ndim > 0),
 * COW_ERANGE (an index out of range, naming the dimension and the value).
 */
COW_API cow_status_t cow_tensor_get_f64(const cow_tensor_t *t,
    const int64_t *index, double *out);
COW_API cow_status_t cow_tensor_get_i64(const cow_tensor_t *t,
    const int64_t *index, int64_t *out);

/**
 * cow_tensor_set_f64 / cow_tensor_set_i64 - write one element, converted to
 * the tensor's dtype as cow_tensor_copy_() converts (ops.h): set_i64 into
 * any integer dtype is modulo 2^bits (into uint64: the value modulo 2^64,
 * so -1 gives 2^64 - 1), into a floating dtype rounded once from the exact
 * integer; into a complex dtype the value is (value, 0). A write: materialises a
 * COW storage. Writing one element of an expanded view is allowed (it
 * changes every element that shares its memory).
 * Thread-safety: a write on the tensor's storage.
 * Errors: COW_EINVAL (NULL t, NULL index with ndim > 0), COW_ERANGE (as the
 * getters), COW_ENOMEM (materialisation failed; nothing changed).
 */
COW_API cow_status_t cow_tensor_set_f64(cow_tensor_t *t, const int64_t *index,
    double value);
COW_API cow_status_t cow_tensor_set_i64(cow_tensor_t *t, const int64_t *index,
    int64_t value);

/* ------------------------------------------------------------------ */
/* Views: a new tensor over the SAME storage; nothing is copied and
 * nothing is read or written. Thread-safety: a read of @t.
 * Common errors: COW_EINVAL (NULL argument), COW_ERANGE (a dimension or
 * index out of range, naming it), COW_ENOMEM.                           */

/**
 * cow_tensor_view - the same elements with shape @sizes (one entry may be
 * -1: inferred). Possible only when the strides allow it (every group of
 * old dimensions that the new shape splits or merges is contiguous in
 * memory); otherwise COW_ESHAPE, and cow_tensor_reshape() copies instead.
 * Ownership: *out holds one reference. Thread-safety: a read of @t.
 * Errors: common (above); COW_EINVAL (negative size other than one -1),
 * COW_ESHAPE (element count differs, or the strides do not allow a view),
 * COW_EOVERFLOW.
 */
COW_API cow_status_t cow_tensor_view(cow_tensor_t *t, int ndim,
    const int64_t *sizes, cow_tensor_t **out);

/**
 * cow_tensor_select - index @index (negative counts from the end) of
 * dimension @dim, removing that dimension. x = select(y, 0, 0) then
 * fill_(x, 2) changes y.
 * Ownership: *out holds one reference. Thread-safety: a read of @t.
 * Errors: common (above); COW_ERANGE for @dim or @index.
 */
COW_API cow_status_t cow_tensor_select(cow_tensor_t *t, int dim,
    int64_t index, cow_tensor_t **out);

/**
 * cow_tensor_slice - elements start, start + step, ... (below end) of
 * dimension @dim. start and end are clamped to [0, size] after negative
 * values are counted from the end (Python slicing); step must be positive.
 * Ownership: *out holds one reference. Thread-safety: a read of @t.
 * Errors: common (above); COW_EINVAL (step <= 0), COW_ERANGE (dim).
 */
COW_API cow_status_t cow_tensor_slice(cow_tensor_t *t, int dim,
    int64_t start, int64_t end, int64_t step, cow_tensor_t **out);

/**
 * cow_tensor_narrow - elements [start, start + length) of dimension @dim.
 * Strict: start in [-size, size] (negative counts from the end), length >= 0
 * and start + length <= size, else COW_ERANGE.
 * Ownership: *out holds one reference. Thread-safety: a read of @t.
 * Errors: common (above); COW_ERANGE (dim, start or length).
 */
COW_API cow_status_t cow_tensor_narrow(cow_tensor_t *t, int dim,
    int64_t start, int64_t length, cow_tensor_t **out);

/**
 * cow_tensor_transpose - swap dimensions @dim0 and @dim1.
 * Ownership: *out holds one reference. Thread-safety: a read of @t.
 * Errors: common (above); COW_ERANGE (a dim).
 */
COW_API cow_status_t cow_tensor_transpose(cow_tensor_t *t, int dim0,
    int dim1, cow_tensor_t **out);

/**
 * cow_tensor_permute - dimension i of the result is dimension dims[i] of @t.
 * @ndim must equal the tensor's; @dims must be a permutation.
 * Ownership: *out holds one reference. Thread-safety: a read of @t.
 * Errors: common (above); COW_ESHAPE (ndim differs), COW_ERANGE (a dim),
 * COW_EINVAL (dims NULL with ndim > 0, repeated dim).
 */
COW_API cow_status_t cow_tensor_permute(cow_tensor_t *t, int ndim,
    const int *dims, cow_tensor_t **out);

/**
 * cow_tensor_unsqueeze - insert a dimension of size 1 at position @dim
 * (in [-(ndim + 1), ndim]).
 * Ownership: *out holds one reference. Thread-safety: a read of @t.
 * Errors: common (above); COW_ERANGE (dim, or the result would exceed
 * COW_TENSOR_MAX_NDIM).
 */
COW_API cow_status_t cow_tensor_unsqueeze(cow_tensor_t *t, int dim,
    cow_tensor_t **out);

/**
 * cow_tensor_squeeze - remove dimension @dim if its size is 1; otherwise the
 * result has the same shape (a new view all the same).
 * Ownership: *out holds one reference. Thread-safety: a read of @t.
 * Errors: common (above); COW_ERANGE (dim, or @t has no dimensions).
 */
COW_API cow_status_t cow_tensor_squeeze(cow_tensor_t *t, int dim,
    cow_tensor_t **out);

/**
 * cow_tensor_squeeze_all - remove every dimension of size 1.
 * Ownership: *out holds one reference. Thread-safety: a read of @t.
 * Errors: COW_EINVAL (NULL), COW_ENOMEM.
 */
COW_API cow_status_t cow_tensor_squeeze_all(cow_tensor_t *t,
    cow_tensor_t **out);

/**
 * cow_tensor_expand - broadcast to @sizes (@ndim >= the tensor's ndim; new
 * dimensions are added in front). Entry -1 keeps an existing dimension's
 * size; a dimension of size 1 may take any size (stride 0). The result's
 * elements share memory: writing it through an op is refused (COW_EOVERLAP).
 * Ownership: *out holds one reference. Thread-safety: a read of @t.
 * Errors: common (above); COW_EINVAL (sizes NULL with ndim > 0, negative
 * size other than -1 on an existing dimension), COW_ESHAPE (a non-1
 * dimension asked to change size), COW_ERANGE (ndim), COW_EOVERFLOW (the
 * expanded byte size exceeds COW_STORAGE_MAX_NBYTES).
 */
COW_API cow_status_t cow_tensor_expand(cow_tensor_t *t, int ndim,
    const int64_t *sizes, cow_tensor_t **out);

/**
 * cow_tensor_diagonal - the diagonal of dimensions @dim1 and @dim2 (above
 * it for @offset > 0, below for @offset < 0), appended as the last
 * dimension; both dimensions are removed. An offset past the edge gives an
 * empty diagonal.
 * Ownership: *out holds one reference. Thread-safety: a read of @t.
 * Errors: common (above); COW_ERANGE (dims), COW_EINVAL (dim1 == dim2).
 */
COW_API cow_status_t cow_tensor_diagonal(cow_tensor_t *t, int64_t offset,
    int dim1, int dim2, cow_tensor_t **out);

/**
 * cow_tensor_as_strided - any layout over @t's storage: @sizes, @strides (in
 * elements, non-negative) and @storage_offset (absolute, in elements, not
 * relative to @t's offset). Bounds-checked against the storage.
 * Ownership: *out holds one reference. Thread-safety: a read of @t.
 * Errors: common (above); COW_EINVAL (NULL sizes or strides with
 * ndim > 0, negative size, stride or offset), COW_ERANGE (ndim, or the
 * layout reaches past the storage, naming the byte and the size),
 * COW_EOVERFLOW.
 */
COW_API cow_status_t cow_tensor_as_strided(cow_tensor_t *t, int ndim,
    const int64_t *sizes, const int64_t *strides, int64_t storage_offset,
    cow_tensor_t **out);

/* ------------------------------------------------------------------ */
/* Copies.                                                              */

/**
 * cow_tensor_clone - an eager copy: a new contiguous tensor with the same
 * dtype, sizes and values on a new private storage (allocated from @t's
 * storage's allocator).
 * Ownership: *out holds one reference. Thread-safety: a read of @t.
 * Errors: COW_EINVAL (NULL), COW_ENOMEM.
 */
COW_API cow_status_t cow_tensor_clone(const cow_tensor_t *t,
    cow_tensor_t **out);

/**
 * cow_tensor_contiguous - @t itself (one more reference) when it is
 * contiguous, else cow_tensor_clone(). Ownership: *out holds one reference
 * either way. Thread-safety: a read of @t. Errors: COW_EINVAL (NULL),
 * COW_ENOMEM.
 */
COW_API cow_status_t cow_tensor_contiguous(cow_tensor_t *t,
    cow_tensor_t **out);

/**
 * cow_tensor_lazy_clone - a lazy copy: a NEW storage that shares @t's data
 * (cow_storage_lazy_clone), viewed with @t's dtype, sizes, strides and
 * offset. A lazy clone of a view therefore shares the whole allocation. O(1)
 * and copies no bytes; the first write through either side materialises that
 * side. @t's storage becomes copy-on-write (its data address does not
 * change). Exceptions (cow_storage_lazy_clone): a COW_STORAGE_NOT_SHAREABLE
 * or zero-byte storage is copied eagerly instead.
 * Ownership: *out holds one reference. Thread-safety: a read of @t.
 * Errors: COW_EINVAL (NULL), COW_ENOMEM (nothing changed: @t's storage is
 * not made copy-on-write).
 */
COW_API cow_status_t cow_tensor_lazy_clone(cow_tensor_t *t,
    cow_tensor_t **out);

/* ------------------------------------------------------------------ */
/* Reshape (its mode: reshape.h).                                        */

/**
 * cow_tensor_reshape - the elements of @t with shape @sizes (one entry may
 * be -1). When the strides allow a view, the result depends on
 * cow_reshape_mode_effective() (see cow_reshape_mode_t): either way no byte
 * is copied until someone writes. Otherwise the result is a contiguous copy
 * (cow_tensor_clone) with the new shape, in every mode.
 * Ownership: *out holds one reference. Thread-safety: a read of @t.
 * Errors: as cow_tensor_view() (except that non-viewable strides copy
 * instead of failing), COW_ENOMEM (nothing changed).
 */
COW_API cow_status_t cow_tensor_reshape(cow_tensor_t *t, int ndim,
    const int64_t *sizes, cow_tensor_t **out);

#ifdef __cplusplus
}
#endif
#endif
