/*
 * transpose.h - a transposing copy of a 2-D block (the copy kernel's
 * copy_(d, a.T) case; kernels.c).
 */
#ifndef COW_TENSOR_TRANSPOSE_H
#define COW_TENSOR_TRANSPOSE_H

#include <stddef.h>
#include <stdint.h>

/*
 * out[r * ldo + c] = in[c * ldi + r] for every r < @rows, c < @cols:
 * elements of @size bytes (1, 2, 4 or 8; any alignment), @ldo and @ldi in
 * elements. @out and @in do not overlap. Bits are copied as they are (a
 * NaN keeps its payload).
 */
void cow__transpose(char *out, int64_t ldo, const char *in, int64_t ldi,
    int64_t rows, int64_t cols, size_t size);

#endif
