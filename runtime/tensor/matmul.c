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
 *
 * A product with one column (b 1-D, or m = 1) has an inner loop of one
 * element: there rows of a are taken eight at a time, a tile of 64
 * columns of those rows is transposed into a local array, and the eight
 * sums advance together over it (one vector lane per row), each still in
 * index order from 0.
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

#define MATVEC_ROWS 8
#define MATVEC_COLS 64
#define MATVEC_LOOP(name, T, ACC)                                           \
static void                                                                 \
name(T *restrict c, const T *restrict a, const T *restrict b, int64_t n,    \
    int64_t k)                                                              \
{                                                                           \
	T tile[MATVEC_COLS][MATVEC_ROWS];                                   \
	int64_t i0 = 0;                                                     \
                                                                            \
	for (; i0 + MATVEC_ROWS <= n; i0 += MATVEC_ROWS) {                  \
		T acc[MATVEC_ROWS];                                         \
                                                                            \
		for (int r = 0; r < MATVEC_ROWS; r++)                       \
			acc[r] = 0;                                         \
		for (int64_t p0 = 0; p0 < k; p0 += MATVEC_COLS) {           \
			int64_t pn = k - p0 < MATVEC_COLS ? k - p0 :        \
			    MATVEC_COLS;                                    \
                                                                            \
			for (int r = 0; r < MATVEC_ROWS; r++)               \
				for (int64_t p = 0; p < pn; p++)            \
					tile[p][r] =                        \
					    a[(i0 + r) * k + p0 + p];       \
			for (int64_t p = 0; p < pn; p++) {                  \
				T y = b[p0 + p];                            \
                                                                            \
				for (int r = 0; r < MATVEC_ROWS; r++)       \
					acc[r] = ACC(acc[r], tile[p][r], y); \
			}                                                   \
		}                                                           \
		for (int r = 0; r < MATVEC_ROWS; r++)                       \
			c[i0 + r] = acc[r];                                 \
	}                                                                   \
	for (; i0 < n; i0++) {                                              \
		T acc = 0;                                                  \
                                                                            \
		for (int64_t p = 0; p < k; p++)                             \
			acc = ACC(acc, a[i0 * k + p], b[p]);                \
		c[i0] = acc;                                                \
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
MATVEC_LOOP(mv_f32, float, acc_f32)
MATVEC_LOOP(mv_f64, double, acc_f64)
MATVEC_LOOP(mv_x8, uint8_t, acc_u8)
MATVEC_LOOP(mv_x16, uint16_t, acc_u16)
MATVEC_LOOP(mv_x32, uint32_t, acc_u32)
MATVEC_LOOP(mv_x64, uint64_t, acc_u64)

/* c = a @ b over row-major data of @dt: the one-column loop for m = 1. */
static void
run(cow_dtype_t dt, char *c, const char *a, const char *b, int64_t n,
    int64_t k, int64_t m)
{
	void *pc = c;
	const void *pa = a, *pb = b;

#define RUN(mm, mv)                                                         \
	do {                                                                \
		if (m == 1)                                                 \
			mv(pc, pa, pb, n, k);                               \
		else                                                        \
			mm(pc, pa, pb, n, k, m);                            \
	} while (0)
	if (dt == COW_DTYPE_FLOAT32)
		RUN(mm_f32, mv_f32);
	else if (dt == COW_DTYPE_FLOAT64)
		RUN(mm_f64, mv_f64);
	else if (cow_dtype_size(dt) == 1)
		RUN(mm_x8, mv_x8);
	else if (cow_dtype_size(dt) == 2)
		RUN(mm_x16, mv_x16);
	else if (cow_dtype_size(dt) == 4)
		RUN(mm_x32, mv_x32);
	else
		RUN(mm_x64, mv_x64);
#undef RUN
}

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
	if ((st = cow__kernel_clone(t, tmp, func)) != COW_OK)
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
		return cow__error(COW_EDTYPE, "operands: dtypes %s and "
		    "%s differ (no type promotion)", cow_dtype_name(a->dtype),
		    cow_dtype_name(b->dtype));
	if (!matmul_dtype(a->dtype))
		return cow__error(COW_EDTYPE, "matmul is not defined for "
		    "dtype %s (integers, float32 and float64)",
		    cow_dtype_name(a->dtype));
	if (a->ndim < 1 || a->ndim > 2 || b->ndim < 1 || b->ndim > 2)
		return cow__error(COW_ESHAPE, "operands of 1 or 2 "
		    "dimensions, not shapes %s and %s",
		    cow__shape_str(sa, a->ndim, a->sizes),
		    cow__shape_str(sb, b->ndim, b->sizes));
	n = a->ndim == 2 ? a->sizes[0] : 1;
	k = a->sizes[a->ndim - 1];
	kb = b->sizes[0];
	m = b->ndim == 2 ? b->sizes[1] : 1;
	if (k != kb)
		return cow__error(COW_ESHAPE, "shapes %s and %s: the "
		    "inner sizes %lld and %lld differ",
		    cow__shape_str(sa, a->ndim, a->sizes),
		    cow__shape_str(sb, b->ndim, b->sizes), (long long)k,
		    (long long)kb);
	if (a->ndim == 2)
		sizes[nd++] = n;
	if (b->ndim == 2)
		sizes[nd++] = m;
	if ((st = cow__tensor_new_output(a->dtype, nd, sizes,
	    cow__tensor_allocator(a), &r)) != COW_OK)
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
		run(a->dtype, pc, pa, pb, n, k, m);
		cow_tensor_release(ta);
		cow_tensor_release(tb);
	}
	*out = r;
	return COW_OK;
}
