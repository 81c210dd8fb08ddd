/*
 * loops.c - inner loops of the elementwise kernels (see loops.h).
 */
#include <string.h>

#include "tensor/dtype.h"
#include "tensor/half.h"
#include "tensor/loops.h"

#define BINARY_LOOP(name, T, EXPR)                                          \
static bool                                                                 \
name(char *const *p, const int64_t *s, int64_t n, void *arg)                \
{                                                                           \
	(void)arg;                                                          \
	for (int64_t i = 0; i < n; i++) {                                   \
		T x, y, r;                                                  \
                                                                            \
		memcpy(&x, p[1] + i * s[1], sizeof x);                      \
		memcpy(&y, p[2] + i * s[2], sizeof y);                      \
		r = (T)(EXPR);                                              \
		memcpy(p[0] + i * s[0], &r, sizeof r);                      \
	}                                                                   \
	return true;                                                        \
}

#define UNARY_LOOP(name, T, EXPR)                                           \
static bool                                                                 \
name(char *const *p, const int64_t *s, int64_t n, void *arg)                \
{                                                                           \
	(void)arg;                                                          \
	for (int64_t i = 0; i < n; i++) {                                   \
		T x, r;                                                     \
                                                                            \
		memcpy(&x, p[1] + i * s[1], sizeof x);                      \
		r = (T)(EXPR);                                              \
		memcpy(p[0] + i * s[0], &r, sizeof r);                      \
	}                                                                   \
	return true;                                                        \
}

/* The wrapping integer loops serve the signed and unsigned dtypes of one
 * width (the same bits). 16-bit products are formed in uint32_t: uint16_t
 * would promote to int, whose overflow is undefined. */
/* bool: add is or, mul is and (any non-zero byte is true). */
BINARY_LOOP(add_bool, uint8_t, (x | y) != 0)
BINARY_LOOP(add_x8, uint8_t, x + y)
BINARY_LOOP(add_x16, uint16_t, x + y)
BINARY_LOOP(add_x32, uint32_t, x + y)
BINARY_LOOP(add_x64, uint64_t, x + y)
BINARY_LOOP(add_f32, float, x + y)
BINARY_LOOP(add_f64, double, x + y)

BINARY_LOOP(mul_bool, uint8_t, x != 0 && y != 0)
BINARY_LOOP(mul_x8, uint8_t, x * y)
BINARY_LOOP(mul_x16, uint16_t, (uint32_t)x * y)
BINARY_LOOP(mul_x32, uint32_t, x * y)
BINARY_LOOP(mul_x64, uint64_t, x * y)
BINARY_LOOP(mul_f32, float, x * y)
BINARY_LOOP(mul_f64, double, x * y)

UNARY_LOOP(neg_x8, uint8_t, 0u - x)
UNARY_LOOP(neg_x16, uint16_t, 0u - x)
UNARY_LOOP(neg_x32, uint32_t, 0u - x)
UNARY_LOOP(neg_x64, uint64_t, (uint64_t)0 - x)
UNARY_LOOP(neg_f32, float, -x)
UNARY_LOOP(neg_f64, double, -x)

/* float16 and bfloat16: the op in float, rounded once to the dtype. */
#define F16(v) cow__f16_to_f32(v)
#define BF16(v) cow__bf16_to_f32(v)
BINARY_LOOP(add_f16, uint16_t, cow__f16_from_f32(F16(x) + F16(y)))
BINARY_LOOP(mul_f16, uint16_t, cow__f16_from_f32(F16(x) * F16(y)))
UNARY_LOOP(neg_f16, uint16_t, cow__f16_from_f32(-F16(x)))
BINARY_LOOP(add_bf16, uint16_t, cow__bf16_from_f32(BF16(x) + BF16(y)))
BINARY_LOOP(mul_bf16, uint16_t, cow__bf16_from_f32(BF16(x) * BF16(y)))
UNARY_LOOP(neg_bf16, uint16_t, cow__bf16_from_f32(-BF16(x)))
#undef F16
#undef BF16

/* Complex: T[2] is (re, im). STMT computes r from x (and y). */
#define COMPLEX_LOOP(name, T, NIN, STMT)                                    \
static bool                                                                 \
name(char *const *p, const int64_t *s, int64_t n, void *arg)                \
{                                                                           \
	(void)arg;                                                          \
	for (int64_t i = 0; i < n; i++) {                                   \
		T x[2], y[2], r[2];                                         \
                                                                            \
		memcpy(x, p[1] + i * s[1], sizeof x);                       \
		if (NIN == 2)                                               \
			memcpy(y, p[2] + i * s[2], sizeof y);               \
		else                                                        \
			y[0] = y[1] = 0;                                    \
		STMT;                                                       \
		memcpy(p[0] + i * s[0], r, sizeof r);                       \
	}                                                                   \
	return true;                                                        \
}

/* (a + bi)(c + di) = (ac - bd) + (ad + bc)i, each product and sum rounded
 * to T (NumPy's loop; not C's Annex G multiplication). One operation per
 * statement, so that no compiler contracts them into fused multiply-adds. */
#define CMUL(T)                                                             \
	do {                                                                \
		T ac = x[0] * y[0], bd = x[1] * y[1];                       \
		T ad = x[0] * y[1], bc = x[1] * y[0];                       \
                                                                            \
		r[0] = ac - bd;                                             \
		r[1] = ad + bc;                                             \
	} while (0)

COMPLEX_LOOP(add_c64, float, 2, (r[0] = x[0] + y[0], r[1] = x[1] + y[1]))
COMPLEX_LOOP(add_c128, double, 2, (r[0] = x[0] + y[0], r[1] = x[1] + y[1]))
COMPLEX_LOOP(mul_c64, float, 2, CMUL(float))
COMPLEX_LOOP(mul_c128, double, 2, CMUL(double))
COMPLEX_LOOP(neg_c64, float, 1, (r[0] = -x[0], r[1] = -x[1]))
COMPLEX_LOOP(neg_c128, double, 1, (r[0] = -x[0], r[1] = -x[1]))

const cow__iter_fn cow__loops_add[COW_DTYPE_COUNT] = {
	[COW_DTYPE_BOOL] = add_bool,
	[COW_DTYPE_INT8] = add_x8, [COW_DTYPE_UINT8] = add_x8,
	[COW_DTYPE_INT16] = add_x16, [COW_DTYPE_UINT16] = add_x16,
	[COW_DTYPE_INT32] = add_x32, [COW_DTYPE_UINT32] = add_x32,
	[COW_DTYPE_INT64] = add_x64, [COW_DTYPE_UINT64] = add_x64,
	[COW_DTYPE_FLOAT16] = add_f16, [COW_DTYPE_BFLOAT16] = add_bf16,
	[COW_DTYPE_FLOAT32] = add_f32, [COW_DTYPE_FLOAT64] = add_f64,
	[COW_DTYPE_COMPLEX64] = add_c64, [COW_DTYPE_COMPLEX128] = add_c128,
};

const cow__iter_fn cow__loops_mul[COW_DTYPE_COUNT] = {
	[COW_DTYPE_BOOL] = mul_bool,
	[COW_DTYPE_INT8] = mul_x8, [COW_DTYPE_UINT8] = mul_x8,
	[COW_DTYPE_INT16] = mul_x16, [COW_DTYPE_UINT16] = mul_x16,
	[COW_DTYPE_INT32] = mul_x32, [COW_DTYPE_UINT32] = mul_x32,
	[COW_DTYPE_INT64] = mul_x64, [COW_DTYPE_UINT64] = mul_x64,
	[COW_DTYPE_FLOAT16] = mul_f16, [COW_DTYPE_BFLOAT16] = mul_bf16,
	[COW_DTYPE_FLOAT32] = mul_f32, [COW_DTYPE_FLOAT64] = mul_f64,
	[COW_DTYPE_COMPLEX64] = mul_c64, [COW_DTYPE_COMPLEX128] = mul_c128,
};

const cow__iter_fn cow__loops_neg[COW_DTYPE_COUNT] = {
	[COW_DTYPE_BOOL] = NULL,
	[COW_DTYPE_INT8] = neg_x8, [COW_DTYPE_UINT8] = neg_x8,
	[COW_DTYPE_INT16] = neg_x16, [COW_DTYPE_UINT16] = neg_x16,
	[COW_DTYPE_INT32] = neg_x32, [COW_DTYPE_UINT32] = neg_x32,
	[COW_DTYPE_INT64] = neg_x64, [COW_DTYPE_UINT64] = neg_x64,
	[COW_DTYPE_FLOAT16] = neg_f16, [COW_DTYPE_BFLOAT16] = neg_bf16,
	[COW_DTYPE_FLOAT32] = neg_f32, [COW_DTYPE_FLOAT64] = neg_f64,
	[COW_DTYPE_COMPLEX64] = neg_c64, [COW_DTYPE_COMPLEX128] = neg_c128,
};

#define COPY_RUN(T)                                                         \
	do {                                                                \
		for (int64_t i = 0; i < n; i++) {                           \
			T x;                                                \
                                                                            \
			memcpy(&x, p[1] + i * s[1], sizeof x);              \
			memcpy(p[0] + i * s[0], &x, sizeof x);              \
		}                                                           \
	} while (0)

bool
cow__loop_copy_same(char *const *p, const int64_t *s, int64_t n, void *arg)
{
	int64_t size = (int64_t)*(const size_t *)arg;
	cow__scalar_t v;

	if (s[0] == size && s[1] == size) {
		/* One dense run: the regions may be identical (copy onto
		 * itself), hence memmove. */
		memmove(p[0], p[1], (size_t)(n * size));
		return true;
	}
	/* Strided: a fixed-size copy per element, which the compiler inlines
	 * (a memcpy of a run-time size is a call per element). */
	switch (size) {
	case 1:
		COPY_RUN(uint8_t);
		break;
	case 2:
		COPY_RUN(uint16_t);
		break;
	case 4:
		COPY_RUN(uint32_t);
		break;
	case 8:
		COPY_RUN(uint64_t);
		break;
	default:
		for (int64_t i = 0; i < n; i++) {
			memcpy(&v, p[1] + i * s[1], (size_t)size);
			memcpy(p[0] + i * s[0], &v, (size_t)size);
		}
	}
	return true;
}

bool
cow__loop_convert(char *const *p, const int64_t *s, int64_t n, void *arg)
{
	const struct cow__convert_arg *c = arg;

	cow__convert_n(c->dst, p[0], s[0], c->src, p[1], s[1], n);
	return true;
}

#define SUM_RUN(T, LOAD)                                                    \
	do {                                                                \
		T acc;                                                      \
                                                                            \
		if (s[0] == 0) {                                            \
			/* Every element goes to one output element. */     \
			memcpy(&acc, p[0], sizeof acc);                     \
			for (int64_t i = 0; i < n; i++)                     \
				acc += (T)LOAD(p[1] + i * s[1]);            \
			memcpy(p[0], &acc, sizeof acc);                     \
			return true;                                        \
		}                                                           \
		for (int64_t i = 0; i < n; i++) {                           \
			memcpy(&acc, p[0] + i * s[0], sizeof acc);          \
			acc += (T)LOAD(p[1] + i * s[1]);                    \
			memcpy(p[0] + i * s[0], &acc, sizeof acc);          \
		}                                                           \
	} while (0)

/* One element of each dtype a sum reads, as its accumulator type. */
#define LOADER(name, T, R, EXPR)                                            \
static R                                                                    \
name(const char *p)                                                         \
{                                                                           \
	T x;                                                                \
                                                                            \
	memcpy(&x, p, sizeof x);                                            \
	return (R)(EXPR);                                                   \
}

LOADER(load_bool, uint8_t, uint64_t, x != 0)
LOADER(load_u8, uint8_t, uint64_t, x)
LOADER(load_u16, uint16_t, uint64_t, x)
LOADER(load_u32, uint32_t, uint64_t, x)
LOADER(load_u64, uint64_t, uint64_t, x)
/* Signed: sign-extended, then the two's complement bits. */
LOADER(load_i8, int8_t, uint64_t, (int64_t)x)
LOADER(load_i16, int16_t, uint64_t, (int64_t)x)
LOADER(load_i32, int32_t, uint64_t, (int64_t)x)
LOADER(load_i64, int64_t, uint64_t, x)
LOADER(load_f16, uint16_t, float, cow__f16_to_f32(x))
LOADER(load_bf16, uint16_t, float, cow__bf16_to_f32(x))
LOADER(load_f32, float, float, x)
LOADER(load_f64, double, double, x)

/* Complex: T[2] accumulated componentwise. */
#define SUM_RUN_COMPLEX(T)                                                  \
	do {                                                                \
		for (int64_t i = 0; i < n; i++) {                           \
			char *q = p[0] + i * s[0];                          \
			T acc[2], x[2];                                     \
                                                                            \
			memcpy(acc, q, sizeof acc);                         \
			memcpy(x, p[1] + i * s[1], sizeof x);               \
			acc[0] += x[0];                                     \
			acc[1] += x[1];                                     \
			memcpy(q, acc, sizeof acc);                         \
		}                                                           \
	} while (0)

bool
cow__loop_sum(char *const *p, const int64_t *s, int64_t n, void *arg)
{
	cow_dtype_t src = *(const cow_dtype_t *)arg;

	/* Integers and bools sum into 64 bits, wrapping; float16 and
	 * bfloat16 into a float32 scratch (cow__kernel_sum rounds it once). */
	switch (src) {
	case COW_DTYPE_BOOL:
		SUM_RUN(uint64_t, load_bool);
		break;
	case COW_DTYPE_UINT8:
		SUM_RUN(uint64_t, load_u8);
		break;
	case COW_DTYPE_UINT16:
		SUM_RUN(uint64_t, load_u16);
		break;
	case COW_DTYPE_UINT32:
		SUM_RUN(uint64_t, load_u32);
		break;
	case COW_DTYPE_UINT64:
		SUM_RUN(uint64_t, load_u64);
		break;
	case COW_DTYPE_INT8:
		SUM_RUN(uint64_t, load_i8);
		break;
	case COW_DTYPE_INT16:
		SUM_RUN(uint64_t, load_i16);
		break;
	case COW_DTYPE_INT32:
		SUM_RUN(uint64_t, load_i32);
		break;
	case COW_DTYPE_INT64:
		SUM_RUN(uint64_t, load_i64);
		break;
	case COW_DTYPE_FLOAT16:
		SUM_RUN(float, load_f16);
		break;
	case COW_DTYPE_BFLOAT16:
		SUM_RUN(float, load_bf16);
		break;
	case COW_DTYPE_FLOAT32:
		SUM_RUN(float, load_f32);
		break;
	case COW_DTYPE_FLOAT64:
		SUM_RUN(double, load_f64);
		break;
	case COW_DTYPE_COMPLEX64:
		SUM_RUN_COMPLEX(float);
		break;
	case COW_DTYPE_COMPLEX128:
		SUM_RUN_COMPLEX(double);
		break;
	}
	return true;
}

/* Stop at the first pair of elements (T[N] each) for which SAME fails. */
#define EQUAL_RUN(T, N, SAME)                                               \
	do {                                                                \
		for (int64_t i = 0; i < n; i++) {                           \
			T x[N], y[N];                                       \
                                                                            \
			memcpy(x, p[0] + i * s[0], sizeof x);               \
			memcpy(y, p[1] + i * s[1], sizeof y);               \
			if (!(SAME)) {                                      \
				e->equal = false;                           \
				return false;                               \
			}                                                   \
		}                                                           \
	} while (0)

bool
cow__loop_equal(char *const *p, const int64_t *s, int64_t n, void *arg)
{
	struct cow__equal_arg *e = arg;

	/* Integers compare their bits (bools as true/false); floating
	 * values as numbers (NaN unequal, -0 == 0), complex ones by part. */
	switch (e->dtype) {
	case COW_DTYPE_BOOL:
		EQUAL_RUN(uint8_t, 1, (x[0] != 0) == (y[0] != 0));
		break;
	case COW_DTYPE_INT8:
	case COW_DTYPE_UINT8:
		EQUAL_RUN(uint8_t, 1, x[0] == y[0]);
		break;
	case COW_DTYPE_INT16:
	case COW_DTYPE_UINT16:
		EQUAL_RUN(uint16_t, 1, x[0] == y[0]);
		break;
	case COW_DTYPE_INT32:
	case COW_DTYPE_UINT32:
		EQUAL_RUN(uint32_t, 1, x[0] == y[0]);
		break;
	case COW_DTYPE_INT64:
	case COW_DTYPE_UINT64:
		EQUAL_RUN(uint64_t, 1, x[0] == y[0]);
		break;
	case COW_DTYPE_FLOAT16:
		EQUAL_RUN(uint16_t, 1,
		    cow__f16_to_f32(x[0]) == cow__f16_to_f32(y[0]));
		break;
	case COW_DTYPE_BFLOAT16:
		EQUAL_RUN(uint16_t, 1,
		    cow__bf16_to_f32(x[0]) == cow__bf16_to_f32(y[0]));
		break;
	case COW_DTYPE_FLOAT32:
		EQUAL_RUN(float, 1, x[0] == y[0]);
		break;
	case COW_DTYPE_FLOAT64:
		EQUAL_RUN(double, 1, x[0] == y[0]);
		break;
	case COW_DTYPE_COMPLEX64:
		EQUAL_RUN(float, 2, x[0] == y[0] && x[1] == y[1]);
		break;
	case COW_DTYPE_COMPLEX128:
		EQUAL_RUN(double, 2, x[0] == y[0] && x[1] == y[1]);
		break;
	}
	return true;
}
