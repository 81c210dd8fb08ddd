/*
 * dtype.h - element types: validity, kinds, and the conversions that
 * cow_tensor_copy_(), scalars and element access share (rules in ops.h).
 */
#ifndef COW_TENSOR_DTYPE_H
#define COW_TENSOR_DTYPE_H

#include <stdbool.h>
#include <stdint.h>

#include <cowstore/tensor.h>

/* Large enough and aligned for one element of any dtype. */
typedef union cow__scalar {
	uint8_t u8;
	int32_t i32;
	int64_t i64;
	float f32;
	double f64;
} cow__scalar_t;

static inline bool
cow__dtype_valid(cow_dtype_t dtype)
{
	return (unsigned)dtype < COW_DTYPE_COUNT;
}

static inline bool
cow__dtype_is_float(cow_dtype_t dtype)
{
	return dtype == COW_DTYPE_FLOAT32 || dtype == COW_DTYPE_FLOAT64;
}

/* COW_EINVAL naming @func and the value when @dtype is unknown. */
cow_status_t cow__dtype_check(cow_dtype_t dtype, const char *func);

/* Read one element as int64 (floating values converted: truncation,
 * saturation, NaN to 0) or as double. */
int64_t cow__load_i64(cow_dtype_t dtype, const void *p);
double cow__load_f64(cow_dtype_t dtype, const void *p);

/* Write one element converted from int64 or from double. */
void cow__store_i64(cow_dtype_t dtype, void *p, int64_t v);
void cow__store_f64(cow_dtype_t dtype, void *p, double v);

/* Convert one element from (@st, @src) to (@dt, @dst). */
void cow__convert(cow_dtype_t dt, void *dst, cow_dtype_t st, const void *src);

#endif
