/*
 * cowstore tensor ops: elementwise arithmetic over any strides with
 * broadcasting, copy with dtype conversion, reductions, equality.
 *
 * Naming: an op whose name ends in "_" (cow_tensor_fill_, cow_tensor_add_,
 * cow_tensor_copy_, ...) is in place: it writes its first tensor argument
 * and makes no tensor. An op without it writes nothing it is given and
 * returns its result, a new tensor or a value, through its last argument.
 * (functional.h's cow_functional_transpose_ follows the same rule; the
 * element setters of tensor.h say what they write: cow_tensor_set_f64.)
 *
 * Reads and writes (docs/tensor.md):
 * - An op reads its inputs through const access only: it never materialises
 *   a copy-on-write input. After C = lazy_clone(T), cow_tensor_add(T, C)
 *   leaves both copy-on-write.
 * - An op writes its output through mutable access: an in-place op on a COW
 *   tensor materialises its storage first (copy, or steal when it holds the
 *   last share).
 * - An op that writes every element refuses a destination whose elements
 *   overlap in memory (an expanded view, or an as_strided layout that maps
 *   two indices to one address) with COW_EOVERLAP, as eager tensor libraries
 *   do. Inputs that overlap the destination in memory are read as they were
 *   before the op (copied to a temporary first when needed).
 * - An op over zero elements validates its arguments and then neither reads
 *   nor writes any storage (nothing is materialised).
 *
 * Broadcasting: shapes are aligned at their last dimension; two sizes match
 * when equal or when one of them is 1. In-place ops broadcast their other
 * operand to the destination's shape and never change the destination's
 * shape.
 *
 * Dtypes: binary ops require both operands to have the same dtype
 * (COW_EDTYPE otherwise; there is no type promotion). Integer arithmetic
 * wraps modulo 2^bits. For bool, add is logical or and mul is logical and;
 * neg of bool is refused (COW_EDTYPE).
 *
 * Conversions (cow_tensor_copy_, scalars, element setters):
 * - within one dtype, copy_ copies the bytes unchanged (a bool byte other
 *   than 0 or 1, read from a caller's memory, stays as it is);
 * - to bool: non-zero (NaN included) is true;
 * - integer to integer: modulo 2^bits (two's complement);
 * - floating to integer: truncation toward zero, saturating at the type's
 *   limits, NaN gives 0;
 * - to floating: the nearest representable value (float64 to float32
 *   overflows to +/-infinity).
 * Scalars are passed as double and converted to the tensor's dtype first, so
 * int64 scalars beyond 2^53 are rounded; copy from an int64 tensor (or use
 * cow_tensor_set_i64) for exact large integers.
 *
 * Thread-safety: an op is a read of each input and a write of its output
 * (storage.h contract). Errors: COW_EINVAL (NULL argument), COW_ESHAPE
 * (shapes do not broadcast; the message gives both shapes), COW_EDTYPE
 * (dtype mismatch, naming both), COW_EOVERLAP, COW_ENOMEM. A failed op
 * changes nothing.
 */
#ifndef COWSTORE_OPS_H
#define COWSTORE_OPS_H

#include <stdbool.h>

#include "common.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* In-place ops: write @t; @t keeps its shape. Ownership: none: no
 * reference is taken or dropped.                                       */

/**
 * cow_tensor_fill_ - set every element of @t to @value (converted).
 * Ownership: none. Thread-safety: a write on @t's storage.
 * Errors: COW_EINVAL (NULL), COW_EOVERLAP, COW_ENOMEM.
 */
COW_API cow_status_t cow_tensor_fill_(cow_tensor_t *t, double value);

/**
 * cow_tensor_add_scalar_ / cow_tensor_mul_scalar_ - t = t + value, t = t *
 * value, with @value converted to @t's dtype first.
 * Ownership: none. Thread-safety: a write on @t's storage.
 * Errors: COW_EINVAL (NULL), COW_EOVERLAP, COW_ENOMEM.
 */
COW_API cow_status_t cow_tensor_add_scalar_(cow_tensor_t *t, double value);
COW_API cow_status_t cow_tensor_mul_scalar_(cow_tensor_t *t, double value);

/**
 * cow_tensor_add_ / cow_tensor_mul_ - t = t + other, t = t * other, with
 * @other broadcast to @t's shape. Same dtype required. @other may alias @t.
 * Ownership: none. Thread-safety: a write on @t's storage, a read of
 * @other's. Errors: as above (COW_EINVAL, COW_ESHAPE, COW_EDTYPE,
 * COW_EOVERLAP, COW_ENOMEM).
 */
COW_API cow_status_t cow_tensor_add_(cow_tensor_t *t,
    const cow_tensor_t *other);
COW_API cow_status_t cow_tensor_mul_(cow_tensor_t *t,
    const cow_tensor_t *other);

/**
 * cow_tensor_copy_ - dst = src, with @src broadcast to @dst's shape and
 * converted to @dst's dtype (rules above). @src may alias @dst.
 * Ownership: none. Thread-safety: a write on @dst's storage, a read of
 * @src's. Errors: COW_EINVAL (NULL), COW_ESHAPE, COW_EOVERLAP, COW_ENOMEM
 * (no COW_EDTYPE: dtypes are converted).
 */
COW_API cow_status_t cow_tensor_copy_(cow_tensor_t *dst,
    const cow_tensor_t *src);

/* ------------------------------------------------------------------ */
/* Out-of-place ops: *out is a new contiguous tensor on a new storage
 * (allocated from the first input's storage's allocator) holding one
 * reference. The inputs are only read.                                  */

/**
 * cow_tensor_add / cow_tensor_mul - a + b, a * b over the broadcast shape.
 * Ownership: *out holds one reference. Thread-safety: a read of @a and @b.
 * Errors: COW_EINVAL (NULL), COW_EDTYPE, COW_ESHAPE, COW_EOVERFLOW (the
 * broadcast shape's byte size overflows or exceeds COW_STORAGE_MAX_NBYTES),
 * COW_ENOMEM.
 */
COW_API cow_status_t cow_tensor_add(const cow_tensor_t *a,
    const cow_tensor_t *b, cow_tensor_t **out);
COW_API cow_status_t cow_tensor_mul(const cow_tensor_t *a,
    const cow_tensor_t *b, cow_tensor_t **out);

/**
 * cow_tensor_neg - -a (integers wrap).
 * Ownership: *out holds one reference. Thread-safety: a read of @a.
 * Errors: COW_EINVAL (NULL), COW_EDTYPE for bool, COW_ENOMEM.
 */
COW_API cow_status_t cow_tensor_neg(const cow_tensor_t *a, cow_tensor_t **out);

/**
 * cow_tensor_sum - the sum of every element, as a 0-dimensional tensor.
 * Result dtype: int64 for bool and integer inputs (wrapping), the input's
 * dtype for floating inputs (accumulated in that dtype, in index order).
 * The sum of no elements is 0.
 * Ownership: *out holds one reference. Thread-safety: a read of @a.
 * Errors: COW_EINVAL (NULL), COW_ENOMEM.
 */
COW_API cow_status_t cow_tensor_sum(const cow_tensor_t *a, cow_tensor_t **out);

/**
 * cow_tensor_sum_dim - the sum over dimension @dim (negative counts from
 * the end); @keepdim keeps it with size 1. Dtype as cow_tensor_sum().
 * Ownership: *out holds one reference. Thread-safety: a read of @a.
 * Errors: COW_EINVAL (NULL), COW_ERANGE (dim), COW_EOVERFLOW (the result's
 * size overflows or exceeds COW_STORAGE_MAX_NBYTES: e.g. @a is empty only
 * through dimension @dim and its other sizes are huge, or the int64 result
 * of a narrower integer or bool input is too large), COW_ENOMEM.
 */
COW_API cow_status_t cow_tensor_sum_dim(const cow_tensor_t *a, int dim,
    bool keepdim, cow_tensor_t **out);

/**
 * cow_tensor_equal - *out = true when @a and @b have the same sizes and
 * every element is equal (NaN is not equal to anything; -0.0 equals 0.0;
 * bools compare as true/false). Different sizes give false. Strides and
 * storages do not matter.
 * Ownership: none (fills *out). Thread-safety: a read of both.
 * Errors: COW_EINVAL (NULL), COW_EDTYPE (dtypes differ).
 */
COW_API cow_status_t cow_tensor_equal(const cow_tensor_t *a,
    const cow_tensor_t *b, bool *out);

#ifdef __cplusplus
}
#endif
#endif
