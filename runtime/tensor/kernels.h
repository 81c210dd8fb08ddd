/*
 * kernels.h - the out-of-place kernels behind every op. A kernel writes a
 * destination tensor the caller provides (any layout); inputs are
 * broadcast to the destination's shape. The public ops (ops.c) only check
 * arguments, allocate results and call these, so another layer (a dispatch
 * step) can call the same kernels on tensors it manages.
 *
 * Every kernel:
 * - validates first (dtypes, broadcasting, destination self-overlap:
 *   COW_EDTYPE, COW_ESHAPE, COW_EOVERLAP), then changes
 *   nothing until every allocation it needs has succeeded;
 * - copies an input to a temporary when it shares the destination's storage
 *   with a different element mapping and overlapping bytes, so inputs are
 *   read as they were before the op;
 * - makes every read access (cow__tensor_read_data, no side effect) before
 *   the write access (cow__tensor_write_data), so that a refused read
 *   changes nothing, then re-bases inputs that view the destination's
 *   storage, whose data the write access may have moved (one access
 *   protocol for every kernel that writes: kernel_begin/kernel_end in
 *   kernels.c);
 * - does nothing more than validation when the destination has no elements.
 */
#ifndef COW_TENSOR_KERNELS_H
#define COW_TENSOR_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include <cowstore/tensor.h>

/* Reduction masks have one bit per dimension. */
_Static_assert(COW_TENSOR_MAX_NDIM <= 32, "reduction masks are 32 bits");

/* The element-wise binary ops (ops.h). The comparisons (EQ to GE) write
 * bool, DIV of bool and integers float64; the others write the operands'
 * dtype. */
enum cow__binop {
	COW__BINOP_ADD,
	COW__BINOP_MUL,
	COW__BINOP_SUB,
	COW__BINOP_DIV,
	COW__BINOP_FLOOR_DIV,
	COW__BINOP_MOD,
	COW__BINOP_EQ,
	COW__BINOP_NE,
	COW__BINOP_LT,
	COW__BINOP_LE,
	COW__BINOP_GT,
	COW__BINOP_GE
};

/* The op's short name ("add", "sub", "lt", ...: traces, messages). */
const char *cow__binop_name(enum cow__binop op);

/* The dtype @op writes for operands of @dtype (bool for comparisons,
 * float64 for DIV of bool and integers). */
cow_dtype_t cow__binop_result_dtype(enum cow__binop op, cow_dtype_t dtype);

/* COW_EDTYPE (naming the op and @dtype) when @op is not defined
 * for @dtype (ops.h's table), else COW_OK. */
cow_status_t cow__binop_check(enum cow__binop op, cow_dtype_t dtype);

/* cow__binop_check for the in-place form, t = t op t' of @dtype: also
 * COW_EDTYPE when @op writes another dtype (DIV of bool and integers:
 * float64, which NumPy's same_kind rule does not cast back either). */
cow_status_t cow__binop_check_inplace(enum cow__binop op, cow_dtype_t dtype);

/* COW_EOVERLAP when two indices of @dst share an element (writing every
 * element would be ill-defined); COW_ENOMEM if the exact check could not
 * allocate. */
cow_status_t cow__check_writable(const cow_tensor_t *dst);

/* Does the layout (@ndim, @sizes, @strides; sizes valid) map two indices to
 * one element? Sets *overlaps; fails only with COW_ENOMEM (the exact test's
 * scratch memory, from @alloc). */
cow_status_t cow__layout_overlaps(int ndim, const int64_t *sizes,
    const int64_t *strides, cow_allocator_t *alloc, bool *overlaps);

/* dst = value (converted to dst's dtype). */
cow_status_t cow__kernel_fill(cow_tensor_t *dst, double value,
    const char *func);

/* dst = src, broadcast and converted. */
cow_status_t cow__kernel_copy(cow_tensor_t *dst, const cow_tensor_t *src,
    const char *func);

/* *out = a new contiguous tensor (@t's dtype, sizes and allocator) holding
 * a copy of @t's elements: the clone of a strided tensor, for kernels and
 * for cow_tensor_clone (tensor/copy.c), which adds the functional case.
 * Ownership: *out holds one reference. */
cow_status_t cow__kernel_clone(const cow_tensor_t *t, cow_tensor_t **out,
    const char *func);

/* dst = a op b. a and b share one dtype; dst's is
 * cow__binop_result_dtype(op, a's). */
cow_status_t cow__kernel_binary(enum cow__binop op, cow_tensor_t *dst,
    const cow_tensor_t *a, const cow_tensor_t *b, const char *func);

/* dst = a op value (value converted to a's dtype first); @op is ADD or
 * MUL. */
cow_status_t cow__kernel_binary_scalar(enum cow__binop op, cow_tensor_t *dst,
    const cow_tensor_t *a, double value, const char *func);

/* dst = -a (not for bool). */
cow_status_t cow__kernel_neg(cow_tensor_t *dst, const cow_tensor_t *a,
    const char *func);

/* The dtype a sum of @dtype produces, and the one it accumulates in
 * (float32 for float16 and bfloat16, rounded once at the end). */
cow_dtype_t cow__sum_dtype(cow_dtype_t dtype);
cow_dtype_t cow__sum_acc_dtype(cow_dtype_t dtype);

/*
 * The length of the runs that ops.h's order rule forms in a sum of every
 * element of a tensor laid out as (@ndim, @sizes, @strides): the innermost
 * dimension of size above 1 and each next one outwards (size 1 skipped)
 * whose stride is the run's stride times its length, the dimensions the
 * iterator merges (iter.h); 1 when no dimension is above 1. The runs are
 * the consecutive blocks of that many elements in row-major order.
 */
int64_t cow__sum_run(int ndim, const int64_t *sizes, const int64_t *strides);

/*
 * dst = sum of a over the dimensions in @mask (bit d: dimension d). dst's
 * shape is a's with those dimensions either kept with size 1 or removed;
 * its dtype is cow__sum_dtype(a's). @run: 0 for the runs of a's own
 * layout (ops.h); above 0 only for a sum of every element, the runs of
 * another layout of a's elements (cow__sum_run of it), which must divide
 * a's own (cow__loop_sum sums them in pieces).
 */
cow_status_t cow__kernel_sum(cow_tensor_t *dst, const cow_tensor_t *a,
    uint32_t mask, int64_t run, const char *func);

/* cow_tensor_matmul's work on plain tensors (ops.h): checks, then *out a
 * new plain contiguous tensor from @a's allocator. */
cow_status_t cow__kernel_matmul(const cow_tensor_t *a, const cow_tensor_t *b,
    cow_tensor_t **out, const char *func);

/* *equal = same sizes and equal elements; a and b share one dtype. */
cow_status_t cow__kernel_equal(const cow_tensor_t *a, const cow_tensor_t *b,
    bool *equal, const char *func);

#endif
