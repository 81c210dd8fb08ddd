/*
 * cowstore tensor ops: elementwise arithmetic and comparisons over any
 * strides with broadcasting, copy with dtype conversion, reductions,
 * equality.
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
 * Dtypes (NumPy's rules, docs/tensor.md): binary ops require both operands
 * to have the same dtype (COW_EDTYPE otherwise; there is no type
 * promotion). The result has that dtype, but for the comparisons (bool)
 * and the true division of bool and integers (float64).
 * - Integers (int8 to uint64) wrap modulo 2^bits; neg of an unsigned
 *   integer wraps too (-1 of uint8 is 255).
 * - bool: add is logical or, mul is logical and; neg is refused
 *   (COW_EDTYPE).
 * - float32 and float64: IEEE arithmetic in the dtype.
 * - NaN operands (every floating and complex dtype): which NaN the result
 *   carries (payload, sign) is not specified, as IEEE 754 leaves it to
 *   the machine and compilers may commute an addition; it may differ
 *   between layouts, machines and backends.
 * - float16 and bfloat16: add and mul compute in float32 and round the
 *   result to the dtype (NumPy's float16 rule); neg flips the sign bit
 *   (exact; a NaN keeps its payload, as NumPy's half negative does).
 * - complex64 and complex128: add and neg componentwise; mul is (ac - bd) +
 *   (ad + bc)i with every product and sum rounded to the component type
 *   (NumPy's loop, not C's Annex G multiplication: no special handling of
 *   infinities).
 * - sub: every dtype but bool (COW_EDTYPE, as NumPy refuses a boolean
 *   subtract); rounding as add.
 * - div (true division): every dtype. bool and integers (out of place
 *   only) give float64, as NumPy's true_divide: each operand converted to
 *   float64 (exact, but for int64 and uint64 values beyond 2^53, rounded
 *   once to nearest, ties to even: the conversion rule below), then
 *   divided; x / 0 is +inf or -inf, 0 / 0 NaN (NumPy 1.24 gives the same
 *   values and warns; cowstore does not warn). Their in-place form is
 *   refused with COW_EDTYPE: the float64 result does not fit the
 *   destination (NumPy's same_kind casting refuses it too). float16 and
 *   bfloat16 compute in float32 and round. Complex: Smith's method in the
 *   component type (divide by the divisor's larger part first), every step
 *   rounded; a zero divisor divides each part by +0.
 * - floor_div and mod: integers and real floating dtypes (bool and complex
 *   refused with COW_EDTYPE). The quotient is rounded toward minus
 *   infinity and the remainder has the divisor's sign (Python's and
 *   NumPy's rule). Integer division by zero gives 0 for both (NumPy 1.24
 *   gives 0 with a warning; cowstore does not warn); the most negative
 *   value // -1 wraps to itself, % -1 is 0. Floating: the remainder is
 *   fmod(a, b) moved to b's sign (a zero one takes b's sign); the quotient
 *   (a - r) / b rounded to an integer; b == 0 gives a / b (+-inf or NaN)
 *   and a NaN remainder. These are NumPy 1.24's values.
 * - comparisons (eq, ne, lt, le, gt, ge): every dtype; the result is bool
 *   (0 or 1). NaN compares unequal to everything (ne is true); -0.0 equals
 *   0.0; bool compares as false < true; float16 and bfloat16 exactly.
 *   Complex values are ordered as NumPy 1.24 orders them: by real part,
 *   then imaginary part, where the real parts decide only when neither
 *   imaginary part is NaN.
 *
 * Conversions (cow_tensor_copy_, scalars, element setters, cow_tensor_full):
 * - within one dtype, copy_ copies the bytes unchanged (a bool byte other
 *   than 0 or 1, read from a caller's memory, stays as it is);
 * - to bool: non-zero is true (NaN is true; complex: either part non-zero);
 * - integer to integer, any widths and signs: modulo 2^bits, exact (a
 *   uint64 above INT64_MAX keeps its bits through uint64 or int64);
 * - floating to integer: truncation toward zero, saturating at the target's
 *   limits (uint64: [0, 2^64 - 1]; negative values give 0 for unsigned
 *   targets), NaN gives 0 (NumPy leaves out-of-range values undefined);
 * - to floating (float16, bfloat16, float32, float64): the nearest
 *   representable value, ties to even, rounded once from the exact source
 *   value (int64 and uint64 exactly; float64 to float16 or bfloat16
 *   directly), overflowing to +/-infinity, with subnormals; a NaN stays a
 *   NaN with its sign (quiet);
 * - complex to real: the real part (the imaginary part is discarded, as
 *   NumPy does); real to complex: (value, 0); complex64 <-> complex128 part
 *   by part.
 * Scalars are passed as double and converted to the tensor's dtype first, so
 * int64 and uint64 scalars beyond 2^53 are rounded; copy from an integer
 * tensor (or use cow_tensor_set_i64) for exact large integers. A scalar is
 * real: added to or multiplied with a complex tensor it is (value, 0).
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
/* In-place ops: write @t; @t keeps its shape. No reference is taken or
 * dropped.                                                             */

/**
 * cow_tensor_fill_ - set every element of @t to @value (converted).
 * Thread-safety: a write on @t's storage.
 * Errors: COW_EINVAL (NULL), COW_EOVERLAP, COW_ENOMEM.
 */
COW_API cow_status_t cow_tensor_fill_(cow_tensor_t *t, double value);

/**
 * cow_tensor_add_scalar_ / cow_tensor_mul_scalar_ - t = t + value, t = t *
 * value, with @value converted to @t's dtype first.
 * Thread-safety: a write on @t's storage.
 * Errors: COW_EINVAL (NULL), COW_EOVERLAP, COW_ENOMEM.
 */
COW_API cow_status_t cow_tensor_add_scalar_(cow_tensor_t *t, double value);
COW_API cow_status_t cow_tensor_mul_scalar_(cow_tensor_t *t, double value);

/**
 * cow_tensor_add_ / cow_tensor_mul_ - t = t + other, t = t * other, with
 * @other broadcast to @t's shape. Same dtype required. @other may alias @t.
 * Thread-safety: a write on @t's storage, a read of @other's. Errors: as
 * above (COW_EINVAL, COW_ESHAPE, COW_EDTYPE, COW_EOVERLAP, COW_ENOMEM).
 */
COW_API cow_status_t cow_tensor_add_(cow_tensor_t *t,
    const cow_tensor_t *other);
COW_API cow_status_t cow_tensor_mul_(cow_tensor_t *t,
    const cow_tensor_t *other);

/**
 * cow_tensor_sub_ / cow_tensor_div_ / cow_tensor_floor_div_ /
 * cow_tensor_mod_ - t = t - other, t / other, t // other, t % other
 * (rules above), with @other broadcast to @t's shape. Same dtype
 * required. @other may alias @t.
 * Thread-safety: a write on @t's storage, a read of @other's.
 * Errors: COW_EINVAL, COW_ESHAPE, COW_EDTYPE (dtypes differ, or the op is
 * not defined for the dtype, or its result is of another dtype: div_ of
 * bool and integers, whose quotient is float64; cow_tensor_div gives it),
 * COW_EOVERLAP, COW_ENOMEM.
 */
COW_API cow_status_t cow_tensor_sub_(cow_tensor_t *t,
    const cow_tensor_t *other);
COW_API cow_status_t cow_tensor_div_(cow_tensor_t *t,
    const cow_tensor_t *other);
COW_API cow_status_t cow_tensor_floor_div_(cow_tensor_t *t,
    const cow_tensor_t *other);
COW_API cow_status_t cow_tensor_mod_(cow_tensor_t *t,
    const cow_tensor_t *other);

/**
 * cow_tensor_copy_ - dst = src, with @src broadcast to @dst's shape and
 * converted to @dst's dtype (rules above). @src may alias @dst.
 * Thread-safety: a write on @dst's storage, a read of @src's.
 * Errors: COW_EINVAL (NULL), COW_ESHAPE, COW_EOVERLAP, COW_ENOMEM (no
 * COW_EDTYPE: dtypes are converted).
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
 * cow_tensor_sub / cow_tensor_div / cow_tensor_floor_div / cow_tensor_mod
 * - a - b, a / b, a // b, a % b over the broadcast shape (rules above),
 * in the operands' dtype, except cow_tensor_div of bool and integer
 * operands, whose result is float64 (NumPy's true_divide; one pass, no
 * converted copies of the operands).
 * Ownership: *out holds one reference. Thread-safety: a read of @a and @b.
 * Errors: COW_EINVAL (NULL), COW_EDTYPE (dtypes differ, or the op is not
 * defined for the dtype), COW_ESHAPE, COW_EOVERFLOW (the result's byte
 * size, float64's for a division of integers), COW_ENOMEM.
 */
COW_API cow_status_t cow_tensor_sub(const cow_tensor_t *a,
    const cow_tensor_t *b, cow_tensor_t **out);
COW_API cow_status_t cow_tensor_div(const cow_tensor_t *a,
    const cow_tensor_t *b, cow_tensor_t **out);
COW_API cow_status_t cow_tensor_floor_div(const cow_tensor_t *a,
    const cow_tensor_t *b, cow_tensor_t **out);
COW_API cow_status_t cow_tensor_mod(const cow_tensor_t *a,
    const cow_tensor_t *b, cow_tensor_t **out);

/**
 * cow_tensor_eq / _ne / _lt / _le / _gt / _ge - a == b, a != b, a < b,
 * a <= b, a > b, a >= b element by element over the broadcast shape, into
 * a bool tensor (rules above). Same dtype required.
 * Ownership: *out holds one reference. Thread-safety: a read of @a and @b.
 * Errors: COW_EINVAL (NULL), COW_EDTYPE (dtypes differ), COW_ESHAPE,
 * COW_EOVERFLOW, COW_ENOMEM.
 */
COW_API cow_status_t cow_tensor_eq(const cow_tensor_t *a,
    const cow_tensor_t *b, cow_tensor_t **out);
COW_API cow_status_t cow_tensor_ne(const cow_tensor_t *a,
    const cow_tensor_t *b, cow_tensor_t **out);
COW_API cow_status_t cow_tensor_lt(const cow_tensor_t *a,
    const cow_tensor_t *b, cow_tensor_t **out);
COW_API cow_status_t cow_tensor_le(const cow_tensor_t *a,
    const cow_tensor_t *b, cow_tensor_t **out);
COW_API cow_status_t cow_tensor_gt(const cow_tensor_t *a,
    const cow_tensor_t *b, cow_tensor_t **out);
COW_API cow_status_t cow_tensor_ge(const cow_tensor_t *a,
    const cow_tensor_t *b, cow_tensor_t **out);

/**
 * cow_tensor_neg - -a (integers wrap, unsigned ones included).
 * Ownership: *out holds one reference. Thread-safety: a read of @a.
 * Errors: COW_EINVAL (NULL), COW_EDTYPE for bool, COW_ENOMEM.
 */
COW_API cow_status_t cow_tensor_neg(const cow_tensor_t *a, cow_tensor_t **out);

/**
 * cow_tensor_sum - the sum of every element, as a 0-dimensional tensor.
 * Result dtype: int64 for bool, int8, int16, int32, int64 and uint8; uint64
 * for uint16, uint32 and uint64 (both wrapping modulo 2^64); the input's
 * dtype for floating and complex inputs: float32, float64, complex64 and
 * complex128 accumulate in that dtype; float16 and bfloat16 accumulate in
 * float32 and round once at the end (into a float32 scratch of the
 * result's shape, from the same allocator). The sum of no elements is 0.
 * Order (floating dtypes; integer sums are exact in any order): the
 * elements form runs, the innermost dimensions that the strides let one
 * walk (all of a contiguous tensor; for cow_tensor_sum_dim, dimension @dim
 * when it is the innermost of size above 1). Each run of n elements is
 * summed pairwise, as NumPy 1.24 sums (real: fewer than 8 in index order
 * from +0; up to 128 in eight interleaved partial sums; longer runs split
 * in two; complex: the same with four partial sums of complex values, 4
 * and 64 for 8 and 128), and the run sums are added to 0 in index order;
 * a sum over an outer dimension adds in index order. A contiguous tensor
 * of up to 8192 elements therefore sums to NumPy's result, bit for bit;
 * NumPy sums a longer one in buffered chunks of 8192, each pairwise, added
 * in order, where cowstore sums the whole run pairwise (the bound below
 * grows with log n, not n / 8192). Error bound, with u = 2^-24 (float32,
 * float16, bfloat16, complex64) or 2^-53 (float64, complex128) and S the
 * sum of the absolute values (of each part, for complex): |computed -
 * exact| <= k u S / (1 - k u), with k = 26 + ceil(log2(n / 128)) (n > 128;
 * k = n for n < 8, 26 for n <= 128; complex: 21 + ceil(log2(n / 64)), n
 * for n < 4, 21 for n <= 64) for a single run, plus one for each further
 * run; float16 and bfloat16 then round once to the dtype. An index-order
 * sum's k is the element count: 2^25 float32 ones sum to 2^25 here, to
 * 2^24 in index order.
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
 * through dimension @dim and its other sizes are huge, or the 64-bit result
 * of a narrower integer or bool input, or the float32 scratch of a float16
 * or bfloat16 input, is too large), COW_ENOMEM.
 */
COW_API cow_status_t cow_tensor_sum_dim(const cow_tensor_t *a, int dim,
    bool keepdim, cow_tensor_t **out);

/**
 * cow_tensor_matmul - the matrix product a @ b of 1-D and 2-D tensors, as
 * NumPy's matmul: (n, k) @ (k, m) is (n, m); a 1-D @a is a row (k) and
 * its dimension is dropped from the result, a 1-D @b a column, so (k) @
 * (k) is a 0-dimensional tensor. Every dtype; both the same, which the
 * result has. Each element sums its products in index order from 0:
 * integers wrap modulo 2^bits; float32 and float64 round every product
 * and sum to the dtype; complex64 and complex128 add ar*br - ai*bi to the
 * real part and ar*bi + ai*br to the imaginary part, every product and
 * sum rounded to the component type; float16 (NumPy's loop) and bfloat16
 * (no NumPy dtype: the same rule) sum float32 products in float32 and
 * round once to the dtype; bool is true when some a[i,k] and b[k,j] are
 * both true (1). NumPy's BLAS (float32, float64, complex) adds in another
 * order: those results differ in the last bits. Any strides; a
 * non-contiguous input is copied first.
 * Ownership: *out holds one reference. Thread-safety: a read of @a and @b.
 * Errors: COW_EINVAL (NULL), COW_EDTYPE (dtypes differ), COW_ESHAPE (0 or
 * more than 2 dimensions, inner sizes differ), COW_EOVERFLOW, COW_ENOMEM.
 */
COW_API cow_status_t cow_tensor_matmul(const cow_tensor_t *a,
    const cow_tensor_t *b, cow_tensor_t **out);

/**
 * cow_tensor_equal - *out = true when @a and @b have the same sizes and
 * every element is equal (NaN is not equal to anything; -0.0 equals 0.0;
 * complex values are equal when both parts are; bools compare as
 * true/false). Different sizes give false. Strides and
 * storages do not matter.
 * Thread-safety: a read of both.
 * Errors: COW_EINVAL (NULL), COW_EDTYPE (dtypes differ).
 */
COW_API cow_status_t cow_tensor_equal(const cow_tensor_t *a,
    const cow_tensor_t *b, bool *out);

#ifdef __cplusplus
}
#endif
#endif
