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
 *
 * float16 and bfloat16 convert each operand to float (exact) and sum in
 * float32, rounding once: the one-column loop in its float accumulators,
 * the general one over blocks of a row's columns in a local float array.
 *
 * bool walks each element's products in order and stops at the first true
 * one (NumPy's loop), for both shapes.
 */
#include <string.h>

#include "core/error.h"
#include "tensor/half.h"
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
		c[i] = (T){0};                                              \
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

/* float16 and bfloat16 (LD to float, exact; ST back, rounded once): the
 * sums in float32, HALF_COLS columns of a row at a time in a local
 * array, each over every p in index order from 0. */
enum { HALF_COLS = 256 };
#define HALF_LOOP(name, LD, ST)                                             \
static void                                                                 \
name(uint16_t *restrict c, const uint16_t *restrict a,                      \
    const uint16_t *restrict b, int64_t n, int64_t k, int64_t m)            \
{                                                                           \
	float acc[HALF_COLS];                                               \
                                                                            \
	for (int64_t i = 0; i < n; i++)                                     \
		for (int64_t j0 = 0; j0 < m; j0 += HALF_COLS) {             \
			int64_t jn = m - j0 < HALF_COLS ? m - j0 : HALF_COLS; \
                                                                            \
			for (int64_t j = 0; j < jn; j++)                    \
				acc[j] = 0;                                 \
			for (int64_t p = 0; p < k; p++) {                   \
				float x = LD(a[i * k + p]);                 \
				const uint16_t *restrict bp =               \
				    b + p * m + j0;                         \
                                                                            \
				for (int64_t j = 0; j < jn; j++)            \
					acc[j] = acc_f32(acc[j], x,         \
					    LD(bp[j]));                     \
			}                                                   \
			for (int64_t j = 0; j < jn; j++)                    \
				c[i * m + j0 + j] = ST(acc[j]);             \
		}                                                           \
}

#define MATVEC_ROWS 8
#define MATVEC_COLS 64
#define MATVEC_LOOP(name, T, A, LD, ST, ACC)                                \
static void                                                                 \
name(T *restrict c, const T *restrict a, const T *restrict b, int64_t n,    \
    int64_t k)                                                              \
{                                                                           \
	A tile[MATVEC_COLS][MATVEC_ROWS];                                   \
	int64_t i0 = 0;                                                     \
                                                                            \
	for (; i0 + MATVEC_ROWS <= n; i0 += MATVEC_ROWS) {                  \
		A acc[MATVEC_ROWS];                                         \
                                                                            \
		for (int r = 0; r < MATVEC_ROWS; r++)                       \
			acc[r] = (A){0};                                    \
		for (int64_t p0 = 0; p0 < k; p0 += MATVEC_COLS) {           \
			int64_t pn = k - p0 < MATVEC_COLS ? k - p0 :        \
			    MATVEC_COLS;                                    \
                                                                            \
			for (int r = 0; r < MATVEC_ROWS; r++)               \
				for (int64_t p = 0; p < pn; p++)            \
					tile[p][r] =                        \
					    LD(a[(i0 + r) * k + p0 + p]);   \
			for (int64_t p = 0; p < pn; p++) {                  \
				A y = LD(b[p0 + p]);                        \
                                                                            \
				for (int r = 0; r < MATVEC_ROWS; r++)       \
					acc[r] = ACC(acc[r], tile[p][r], y); \
			}                                                   \
		}                                                           \
		for (int r = 0; r < MATVEC_ROWS; r++)                       \
			c[i0 + r] = ST(acc[r]);                             \
	}                                                                   \
	for (; i0 < n; i0++) {                                              \
		A acc = (A){0};                                             \
                                                                            \
		for (int64_t p = 0; p < k; p++)                             \
			acc = ACC(acc, LD(a[i0 * k + p]), LD(b[p]));        \
		c[i0] = ST(acc);                                            \
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

/* bool: NumPy's logical or of ands, as its loop computes it: an element
 * is 1 at its first true product, and its scan over p stops there (on
 * random bits a few steps, where the accumulating loops above would take
 * all k: 100 times NumPy's time for a 1 MiB matrix x vector). */
static void
mm_bool(uint8_t *restrict c, const uint8_t *restrict a,
    const uint8_t *restrict b, int64_t n, int64_t k, int64_t m)
{
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = 0; j < m; j++) {
			uint8_t v = 0;

			for (int64_t p = 0; p < k && v == 0; p++)
				v = a[i * k + p] != 0 && b[p * m + j] != 0;
			c[i * m + j] = v;
		}
}

static void
mv_bool(uint8_t *restrict c, const uint8_t *restrict a,
    const uint8_t *restrict b, int64_t n, int64_t k)
{
	mm_bool(c, a, b, n, k, 1);
}

/* Complex: re += ar * br - ai * bi, im += ar * bi + ai * br, NumPy's
 * loop, one rounded operation per statement. */
struct c64 { float re, im; };
struct c128 { double re, im; };
#define ACC_COMPLEX(name, C, R)                                             \
static inline C                                                             \
name(C c, C x, C y)                                                         \
{                                                                           \
	R rr = x.re * y.re;                                                 \
	R ii = x.im * y.im;                                                 \
	R ri = x.re * y.im;                                                 \
	R ir = x.im * y.re;                                                 \
	R re = rr - ii;                                                     \
	R im = ri + ir;                                                     \
                                                                            \
	c.re = c.re + re;                                                   \
	c.im = c.im + im;                                                   \
	return c;                                                           \
}
ACC_COMPLEX(acc_c64, struct c64, float)
ACC_COMPLEX(acc_c128, struct c128, double)
#undef ACC_COMPLEX

#define ID(x) (x)
#define LOOPS(sfx, T, ACC)                                                  \
	MATMUL_LOOP(mm_##sfx, T, ACC)                                       \
	MATVEC_LOOP(mv_##sfx, T, T, ID, ID, ACC)
LOOPS(f32, float, acc_f32)
LOOPS(f64, double, acc_f64)
LOOPS(c64, struct c64, acc_c64)
LOOPS(c128, struct c128, acc_c128)
LOOPS(x8, uint8_t, acc_u8)
LOOPS(x16, uint16_t, acc_u16)
LOOPS(x32, uint32_t, acc_u32)
LOOPS(x64, uint64_t, acc_u64)
HALF_LOOP(mm_f16, cow__f16_to_f32, cow__f16_from_f32)
HALF_LOOP(mm_bf16, cow__bf16_to_f32, cow__bf16_from_f32)
MATVEC_LOOP(mv_f16, uint16_t, float, cow__f16_to_f32, cow__f16_from_f32,
    acc_f32)
MATVEC_LOOP(mv_bf16, uint16_t, float, cow__bf16_to_f32, cow__bf16_from_f32,
    acc_f32)
#undef LOOPS
#undef ID

/* c = a @ b over row-major data of @dt: the one-column loop for m = 1. */
static void
run(cow_dtype_t dt, char *c, const char *a, const char *b, int64_t n,
    int64_t k, int64_t m)
{
	void *pc = c;
	const void *pa = a, *pb = b;

#define RUN(sfx)                                                            \
	do {                                                                \
		if (m == 1)                                                 \
			mv_##sfx(pc, pa, pb, n, k);                          \
		else                                                        \
			mm_##sfx(pc, pa, pb, n, k, m);                       \
	} while (0)
	switch (dt) {
	case COW_DTYPE_FLOAT32: RUN(f32); break;
	case COW_DTYPE_FLOAT64: RUN(f64); break;
	case COW_DTYPE_FLOAT16: RUN(f16); break;
	case COW_DTYPE_BFLOAT16: RUN(bf16); break;
	case COW_DTYPE_COMPLEX64: RUN(c64); break;
	case COW_DTYPE_COMPLEX128: RUN(c128); break;
	case COW_DTYPE_BOOL: RUN(bool); break;
	default:
		if (cow_dtype_size(dt) == 1)
			RUN(x8);
		else if (cow_dtype_size(dt) == 2)
			RUN(x16);
		else if (cow_dtype_size(dt) == 4)
			RUN(x32);
		else
			RUN(x64);
	}
#undef RUN
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
