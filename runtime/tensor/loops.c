/*
 * loops.c - inner loops of the elementwise kernels (see loops.h).
 */
#include <string.h>

#include "tensor/dtype.h"
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

/* bool: add is or, mul is and (any non-zero byte is true). */
BINARY_LOOP(add_bool, uint8_t, (x | y) != 0)
BINARY_LOOP(add_u8, uint8_t, x + y)
BINARY_LOOP(add_i32, uint32_t, x + y)
BINARY_LOOP(add_i64, uint64_t, x + y)
BINARY_LOOP(add_f32, float, x + y)
BINARY_LOOP(add_f64, double, x + y)

BINARY_LOOP(mul_bool, uint8_t, x != 0 && y != 0)
BINARY_LOOP(mul_u8, uint8_t, x * y)
BINARY_LOOP(mul_i32, uint32_t, x * y)
BINARY_LOOP(mul_i64, uint64_t, x * y)
BINARY_LOOP(mul_f32, float, x * y)
BINARY_LOOP(mul_f64, double, x * y)

UNARY_LOOP(neg_u8, uint8_t, 0u - x)
UNARY_LOOP(neg_i32, uint32_t, 0u - x)
UNARY_LOOP(neg_i64, uint64_t, (uint64_t)0 - x)
UNARY_LOOP(neg_f32, float, -x)
UNARY_LOOP(neg_f64, double, -x)

const cow__iter_fn cow__loops_add[COW_DTYPE_COUNT] = {
	[COW_DTYPE_BOOL] = add_bool, [COW_DTYPE_UINT8] = add_u8,
	[COW_DTYPE_INT32] = add_i32, [COW_DTYPE_INT64] = add_i64,
	[COW_DTYPE_FLOAT32] = add_f32, [COW_DTYPE_FLOAT64] = add_f64,
};

const cow__iter_fn cow__loops_mul[COW_DTYPE_COUNT] = {
	[COW_DTYPE_BOOL] = mul_bool, [COW_DTYPE_UINT8] = mul_u8,
	[COW_DTYPE_INT32] = mul_i32, [COW_DTYPE_INT64] = mul_i64,
	[COW_DTYPE_FLOAT32] = mul_f32, [COW_DTYPE_FLOAT64] = mul_f64,
};

const cow__iter_fn cow__loops_neg[COW_DTYPE_COUNT] = {
	[COW_DTYPE_BOOL] = NULL, [COW_DTYPE_UINT8] = neg_u8,
	[COW_DTYPE_INT32] = neg_i32, [COW_DTYPE_INT64] = neg_i64,
	[COW_DTYPE_FLOAT32] = neg_f32, [COW_DTYPE_FLOAT64] = neg_f64,
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

	for (int64_t i = 0; i < n; i++)
		cow__convert(c->dst, p[0] + i * s[0], c->src, p[1] + i * s[1]);
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

static float
load_f32(const char *p)
{
	float v;

	memcpy(&v, p, sizeof v);
	return v;
}

static double
load_f64(const char *p)
{
	double v;

	memcpy(&v, p, sizeof v);
	return v;
}

bool
cow__loop_sum(char *const *p, const int64_t *s, int64_t n, void *arg)
{
	cow_dtype_t src = *(const cow_dtype_t *)arg;

#define LOAD_INT(q) cow__load_i64(src, (q))
	switch (src) {
	case COW_DTYPE_FLOAT32:
		SUM_RUN(float, load_f32);
		break;
	case COW_DTYPE_FLOAT64:
		SUM_RUN(double, load_f64);
		break;
	default:
		/* Integers and bools sum into int64, wrapping. */
		SUM_RUN(uint64_t, LOAD_INT);
		break;
	}
#undef LOAD_INT
	return true;
}

bool
cow__loop_equal(char *const *p, const int64_t *s, int64_t n, void *arg)
{
	struct cow__equal_arg *e = arg;
	bool fl = cow__dtype_is_float(e->dtype);

	for (int64_t i = 0; i < n; i++) {
		const char *a = p[0] + i * s[0], *b = p[1] + i * s[1];
		bool same = fl ?
		    cow__load_f64(e->dtype, a) == cow__load_f64(e->dtype, b) :
		    cow__load_i64(e->dtype, a) == cow__load_i64(e->dtype, b);

		if (!same) {
			e->equal = false;
			return false;
		}
	}
	return true;
}
