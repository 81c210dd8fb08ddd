/*
 * loops.h - the inner loops of the elementwise kernels: one function per
 * (operation, dtype), run by the strided iterator (iter.h) over one inner
 * run of n elements. Operand 0 is the destination.
 *
 * Integer arithmetic runs on the unsigned type of the same width, so it
 * wraps modulo 2^bits with no undefined behaviour; the bit pattern stored
 * is the two's complement result. Elements are moved with memcpy (no
 * aliasing or alignment assumptions, no overlapping copies).
 */
#ifndef COW_TENSOR_LOOPS_H
#define COW_TENSOR_LOOPS_H

#include <stdbool.h>
#include <stdint.h>

#include <cowstore/tensor.h>

#include "tensor/iter.h"

/* dst op= ... tables indexed by cow_dtype_t. NULL: not defined for it.
 * The destination has the operands' dtype, but for div of bool and
 * integers: float64 (cow__binop_result_dtype). */
extern const cow__iter_fn cow__loops_add[COW_DTYPE_COUNT];
extern const cow__iter_fn cow__loops_mul[COW_DTYPE_COUNT];
extern const cow__iter_fn cow__loops_neg[COW_DTYPE_COUNT];
extern const cow__iter_fn cow__loops_sub[COW_DTYPE_COUNT];
extern const cow__iter_fn cow__loops_div[COW_DTYPE_COUNT];
extern const cow__iter_fn cow__loops_floor_div[COW_DTYPE_COUNT];
extern const cow__iter_fn cow__loops_mod[COW_DTYPE_COUNT];
/* Comparisons: operands of the table's dtype, a bool destination. */
extern const cow__iter_fn cow__loops_eq[COW_DTYPE_COUNT];
extern const cow__iter_fn cow__loops_ne[COW_DTYPE_COUNT];
extern const cow__iter_fn cow__loops_lt[COW_DTYPE_COUNT];
extern const cow__iter_fn cow__loops_le[COW_DTYPE_COUNT];
extern const cow__iter_fn cow__loops_gt[COW_DTYPE_COUNT];
extern const cow__iter_fn cow__loops_ge[COW_DTYPE_COUNT];

/* dst = src, same dtype; arg: const size_t *itemsize. */
bool cow__loop_copy_same(char *const *p, const int64_t *s, int64_t n,
    void *arg);

/* dst = convert(src); arg: const struct cow__convert_arg *. */
struct cow__convert_arg {
	cow_dtype_t dst;
	cow_dtype_t src;
};
bool cow__loop_convert(char *const *p, const int64_t *s, int64_t n,
    void *arg);

/*
 * dst += src in ops.h's order; arg: const struct cow__sum_arg *. dst is of
 * cow__sum_dtype(src), except for float16 and bfloat16, whose sums
 * accumulate in float32. A run into one element (s[0] == 0) is summed as
 * one pairwise run when @run is 0; when @run is above 0, in consecutive
 * pieces of @run elements, each pairwise, added in order (the runs of a
 * tensor whose layout merges fewer dimensions than the operand's: the
 * functionalization layer's values).
 */
struct cow__sum_arg {
	cow_dtype_t src;
	int64_t run;
};
bool cow__loop_sum(char *const *p, const int64_t *s, int64_t n, void *arg);

/* Compare operands 0 and 1; arg: struct cow__equal_arg *, whose equal
 * field is cleared (and the iteration stopped) at the first difference. */
struct cow__equal_arg {
	cow_dtype_t dtype;
	bool equal;
};
bool cow__loop_equal(char *const *p, const int64_t *s, int64_t n, void *arg);

#endif
