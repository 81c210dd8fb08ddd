/*
 * matmul.c - the matrix product of 1-D and 2-D tensors (ops.h's
 * cow_tensor_matmul): arguments checked, non-contiguous inputs copied to
 * contiguous temporaries, then one loop per dtype over row-major data.
 *
 * The loop is i, p, j: row i of the result accumulates a[i, p] * b[p, :]
 * for p = 0, 1, ..., so the inner loop streams a row of b and a row of the
 * result (contiguous; the compiler vectorises it) and each element sums
 * its products in index order from 0. Rows of b are walked in blocks of
 * BLOCK_P, so that a block of b stays in cache while every row of a uses
 * it; the order of each element's additions is the same.
 */
#include <string.h>

#include "core/error.h"
#include "tensor/kernels.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

enum { BLOCK_P = 64 };

#define MATMUL_LOOP(name, T, ACC)                                           \
static void                                                                 \
name(T *restrict c, const T *restrict a, const T *restrict b, int64_t n,    \
    int64_t k, int64_t m)                                                   \
{                                                                           \
	for (int64_t i = 0; i < n * m; i++)                                 \
		c[i] = 0;                                                   \
	for (int64_t p0 = 0; p0 < k; p0 += BLOCK_P) {                       \
		int64_t p1 = p0 + BLOCK_P < k ? p0 + BLOCK_P : k;           \
                                                                            \
		for (int64_t i = 0; i < n; i++) {                           \
			T *restrict ci = c + i * m;                         \
                                                                            \
			for (int64_t p = p0; p < p1; p++) {                 \
				T x = a[i * k + p];                         \
				const T *restrict bp = b + p * m;           \
                                                                            \
				for (int64_t j = 0; j < m; j++)             \
					ci[j] = ACC(ci[j], x, bp[j]);       \
			}                                                   \
		}                                                           \
	}                                                                   \
}

/* Floating: one product and one sum, each rounded (no contraction into
 * a fused multiply-add: two statements). */
static inline float
acc_f32(float c, float x, float y)
{
	float t = x * y;

	return c + t;
}

static inline double
acc_f64(double c, double x, double y)
{
	double t = x * y;

	return c + t;
}

/* Integers wrap: unsigned arithmetic of the width (16 bits through
 * uint32_t: uint16_t would promote to int). */
#define ACC_WRAP(T, W) ((T)((W)c + (W)x * (W)y))
static inline uint8_t acc_u8(uint8_t c, uint8_t x, uint8_t y)
{ return ACC_WRAP(uint8_t, uint32_t); }
static inline uint16_t acc_u16(uint16_t c, uint16_t x, uint16_t y)
{ return ACC_WRAP(uint16_t, uint32_t); }
static inline uint32_t acc_u32(uint32_t c, uint32_t x, uint32_t y)
{ return ACC_WRAP(uint32_t, uint32_t); }
static inline uint64_t acc_u64(uint64_t c, uint64_t x, uint64_t y)
{ return ACC_WRAP(uint64_t, uint64_t); }
#undef ACC_WRAP

MATMUL_LOOP(mm_f32, float, acc_f32)
MATMUL_LOOP(mm_f64, double, acc_f64)
MATMUL_LOOP(mm_x8, uint8_t, acc_u8)
MATMUL_LOOP(mm_x16, uint16_t, acc_u16)
MATMUL_LOOP(mm_x32, uint32_t, acc_u32)
MATMUL_LOOP(mm_x64, uint64_t, acc_u64)

static bool
matmul_dtype(cow_dtype_t dt)
{
	switch (dt) {
	case COW_DTYPE_FLOAT32: case COW_DTYPE_FLOAT64:
	case COW_DTYPE_INT8: case COW_DTYPE_UINT8:
	case COW_DTYPE_INT16: case COW_DTYPE_UINT16:
	case COW_DTYPE_INT32: case COW_DTYPE_UINT32:
	case COW_DTYPE_INT64: case COW_DTYPE_UINT64:
		return true;
	default:
		return false;
	}
}

/* Row-major data of @t, aligned to its element: its own, else that of a
 * temporary copy (*tmp, released by the caller). */
static cow_status_t
dense(const cow_tensor_t *t, cow_tensor_t **tmp, const char **data,
    const char *func)
{
	cow_status_t st;

	*tmp = NULL;
	if (t->contiguous) {
		if ((st = cow__tensor_read_data(t, data, func)) != COW_OK)
			return st;
		if ((uintptr_t)*data % t->itemsize == 0)
			return COW_OK;
	}
	if ((st = cow__tensor_clone(t, tmp, func)) != COW_OK)
		return st;
	return cow__tensor_read_data(*tmp, data, func);
}

cow_status_t
cow__kernel_matmul(const cow_tensor_t *a, const cow_tensor_t *b,
    cow_tensor_t **out, const char *func)
{
	char sa[COW__SHAPE_STR_MAX], sb[COW__SHAPE_STR_MAX];
	int64_t n, k, kb, m, sizes[2];
	cow_tensor_t *r, *ta = NULL, *tb = NULL;
	const char *pa, *pb;
	cow_status_t st;
	char *pc;
	int nd = 0;

	if (a->dtype != b->dtype)
		return cow__error(COW_EDTYPE, func, "operands: dtypes %s and "
		    "%s differ (no type promotion)", cow_dtype_name(a->dtype),
		    cow_dtype_name(b->dtype));
	if (!matmul_dtype(a->dtype))
		return cow__error(COW_EDTYPE, func, "matmul is not defined for "
		    "dtype %s (integers, float32 and float64)",
		    cow_dtype_name(a->dtype));
	if (a->ndim < 1 || a->ndim > 2 || b->ndim < 1 || b->ndim > 2)
		return cow__error(COW_ESHAPE, func, "operands of 1 or 2 "
		    "dimensions, not shapes %s and %s",
		    cow__shape_str(sa, a->ndim, a->sizes),
		    cow__shape_str(sb, b->ndim, b->sizes));
	n = a->ndim == 2 ? a->sizes[0] : 1;
	k = a->sizes[a->ndim - 1];
	kb = b->sizes[0];
	m = b->ndim == 2 ? b->sizes[1] : 1;
	if (k != kb)
		return cow__error(COW_ESHAPE, func, "shapes %s and %s: the "
		    "inner sizes %lld and %lld differ",
		    cow__shape_str(sa, a->ndim, a->sizes),
		    cow__shape_str(sb, b->ndim, b->sizes), (long long)k,
		    (long long)kb);
	if (a->ndim == 2)
		sizes[nd++] = n;
	if (b->ndim == 2)
		sizes[nd++] = m;
	if ((st = cow__tensor_new_output(a->dtype, nd, sizes,
	    cow__tensor_allocator(a), &r, func)) != COW_OK)
		return st;
	if (n * m > 0) {
		if ((st = dense(a, &ta, &pa, func)) != COW_OK ||
		    (st = dense(b, &tb, &pb, func)) != COW_OK ||
		    (st = cow__tensor_write_data(r, &pc, func)) != COW_OK) {
			cow_tensor_release(ta);
			cow_tensor_release(tb);
			cow_tensor_release(r);
			return st;
		}
		switch (cow_dtype_size(a->dtype) +
		    (a->dtype == COW_DTYPE_FLOAT32 ? 100 :
		    a->dtype == COW_DTYPE_FLOAT64 ? 200 : 0)) {
		case 104:
			mm_f32((void *)pc, (const void *)pa, (const void *)pb, n, k, m);
			break;
		case 208:
			mm_f64((void *)pc, (const void *)pa, (const void *)pb, n, k, m);
			break;
		case 1:
			mm_x8((void *)pc, (const void *)pa, (const void *)pb, n, k,
			    m);
			break;
		case 2:
			mm_x16((void *)pc, (const void *)pa, (const void *)pb, n, k,
			    m);
			break;
		case 4:
			mm_x32((void *)pc, (const void *)pa, (const void *)pb, n, k,
			    m);
			break;
		default:
			mm_x64((void *)pc, (const void *)pa, (const void *)pb, n, k,
			    m);
			break;
		}
		cow_tensor_release(ta);
		cow_tensor_release(tb);
	}
	*out = r;
	return COW_OK;
}
