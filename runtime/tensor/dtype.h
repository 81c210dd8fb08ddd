/*
 * dtype.h - element types: validity, kinds, and the conversions that
 * cow_tensor_copy_(), scalars and element access share (rules in ops.h).
 *
 * One mechanism: cow__load() reads an element of any dtype into a tagged
 * value that holds it exactly (a 64-bit integer, signed or unsigned, or a
 * complex double), and cow__store() writes a value into any dtype, rounding
 * or wrapping once. A conversion is a load and a store.
 */
#ifndef COW_TENSOR_DTYPE_H
#define COW_TENSOR_DTYPE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include <cowstore/tensor.h>

/* Large enough and aligned for one element of any dtype. */
typedef union cow__scalar {
	uint8_t u8;
	uint16_t u16;
	int32_t i32;
	int64_t i64;
	float f32;
	double f64;
	double c128[2];
} cow__scalar_t;

enum cow__value_kind {
	COW__VALUE_INT,    /* a signed integer: (int64_t)u */
	COW__VALUE_UINT,   /* an unsigned integer (or bool, 0 or 1): u */
	COW__VALUE_FLOAT   /* re + im i (im is 0 for real dtypes) */
};

/* One element's value, exact for every dtype. */
typedef struct cow__value {
	enum cow__value_kind kind;
	uint64_t u;        /* integers: the two's complement bits */
	double re, im;     /* floating and complex */
} cow__value_t;

static inline bool
cow__dtype_valid(cow_dtype_t dtype)
{
	return (unsigned)dtype < COW_DTYPE_COUNT;
}

/* Real floating: float16, bfloat16, float32, float64. */
static inline bool
cow__dtype_is_float(cow_dtype_t dtype)
{
	return dtype == COW_DTYPE_FLOAT16 || dtype == COW_DTYPE_BFLOAT16 ||
	    dtype == COW_DTYPE_FLOAT32 || dtype == COW_DTYPE_FLOAT64;
}

static inline bool
cow__dtype_is_complex(cow_dtype_t dtype)
{
	return dtype == COW_DTYPE_COMPLEX64 || dtype == COW_DTYPE_COMPLEX128;
}

/* COW_EINVAL naming the value when @dtype is unknown. */
cow_status_t cow__dtype_check(cow_dtype_t dtype);

static inline cow__value_t
cow__value_f64(double x)
{
	cow__value_t v = {COW__VALUE_FLOAT, 0, x, 0.0};

	return v;
}

static inline cow__value_t
cow__value_i64(int64_t x)
{
	cow__value_t v = {COW__VALUE_INT, (uint64_t)x, 0.0, 0.0};

	return v;
}

/* Read one element of @dtype at @p (any alignment). */
cow__value_t cow__load(cow_dtype_t dtype, const void *p);

/* Write @v converted to @dtype at @p (any alignment). */
void cow__store(cow_dtype_t dtype, void *p, cow__value_t v);

/* A value as double: integers rounded to nearest, complex: the real part. */
double cow__value_to_f64(cow__value_t v);

/* A value as int64: integers modulo 2^64, floating truncated toward zero
 * and saturated (NaN gives 0), complex: the real part. */
int64_t cow__value_to_i64(cow__value_t v);

/* Read one element as int64 or as double (the two functions above). */
static inline int64_t
cow__load_i64(cow_dtype_t dtype, const void *p)
{
	return cow__value_to_i64(cow__load(dtype, p));
}

static inline double
cow__load_f64(cow_dtype_t dtype, const void *p)
{
	return cow__value_to_f64(cow__load(dtype, p));
}

/* Write one element converted from int64 or from double. */
static inline void
cow__store_i64(cow_dtype_t dtype, void *p, int64_t v)
{
	cow__store(dtype, p, cow__value_i64(v));
}

static inline void
cow__store_f64(cow_dtype_t dtype, void *p, double v)
{
	cow__store(dtype, p, cow__value_f64(v));
}

/* Convert one element from (@st, @src) to (@dt, @dst). */
static inline void
cow__convert(cow_dtype_t dt, void *dst, cow_dtype_t st, const void *src)
{
	cow__store(dt, dst, cow__load(st, src));
}

/* Convert @n elements: from @src (stride @ss bytes) of @st to @dst (stride
 * @ds bytes) of @dt. */
void cow__convert_n(cow_dtype_t dt, char *dst, int64_t ds, cow_dtype_t st,
    const char *src, int64_t ss, int64_t n);

/* @x rounded to float32, to nearest even; a magnitude from FLT_MAX + half
 * an ulp (2^128 - 2^103) up gives infinity. Where C follows IEC 60559
 * (Annex F: __STDC_IEC_559__, every target the library is built for),
 * that is C's conversion, which vectorises; elsewhere C leaves an
 * out-of-range conversion undefined, and the guard makes it defined. */
static inline float
cow__f64_to_f32(double x)
{
#ifndef __STDC_IEC_559__
	if (x >= 0x1.ffffffp+127)
		return (float)INFINITY;
	if (x <= -0x1.ffffffp+127)
		return -(float)INFINITY;
#endif
	return (float)x;
}

#endif
