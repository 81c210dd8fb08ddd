/*
 * dtype.c - element sizes, names and conversions (rules in ops.h). Every
 * conversion is defined for every input: float-to-integer conversions
 * saturate instead of invoking undefined behaviour, and integer narrowing
 * goes through the unsigned type of the target width (modulo 2^bits).
 */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "tensor/dtype.h"

size_t
cow_dtype_size(cow_dtype_t dtype)
{
	switch (dtype) {
	case COW_DTYPE_BOOL:
	case COW_DTYPE_UINT8:
		return 1;
	case COW_DTYPE_INT32:
	case COW_DTYPE_FLOAT32:
		return 4;
	case COW_DTYPE_INT64:
	case COW_DTYPE_FLOAT64:
		return 8;
	}
	return 0;
}

const char *
cow_dtype_name(cow_dtype_t dtype)
{
	switch (dtype) {
	case COW_DTYPE_BOOL: return "bool";
	case COW_DTYPE_UINT8: return "uint8";
	case COW_DTYPE_INT32: return "int32";
	case COW_DTYPE_INT64: return "int64";
	case COW_DTYPE_FLOAT32: return "float32";
	case COW_DTYPE_FLOAT64: return "float64";
	}
	return "unknown";
}

cow_status_t
cow__dtype_check(cow_dtype_t dtype, const char *func)
{
	if (!cow__dtype_valid(dtype))
		return cow__error(COW_EINVAL, func, "unknown dtype %d",
		    (int)dtype);
	return COW_OK;
}

/* Truncate toward zero and clamp to [lo, hi]; NaN gives 0. lo and hi are
 * exactly representable as doubles (or, for INT64_MAX, rounded up to 2^63,
 * which the >= comparison handles). */
static int64_t
f64_to_int(double v, double lo, double hi, int64_t ilo, int64_t ihi)
{
	if (isnan(v))
		return 0;
	if (v <= lo)
		return ilo;
	if (v >= hi)
		return ihi;
	return (int64_t)v;
}

int64_t
cow__load_i64(cow_dtype_t dtype, const void *p)
{
	uint8_t u8;
	int32_t i32;
	int64_t i64;
	float f32;
	double f64;

	switch (dtype) {
	case COW_DTYPE_BOOL:
		memcpy(&u8, p, 1);
		return u8 != 0;
	case COW_DTYPE_UINT8:
		memcpy(&u8, p, 1);
		return u8;
	case COW_DTYPE_INT32:
		memcpy(&i32, p, 4);
		return i32;
	case COW_DTYPE_INT64:
		memcpy(&i64, p, 8);
		return i64;
	case COW_DTYPE_FLOAT32:
		memcpy(&f32, p, 4);
		return f64_to_int(f32, -9223372036854775808.0,
		    9223372036854775808.0, INT64_MIN, INT64_MAX);
	case COW_DTYPE_FLOAT64:
		memcpy(&f64, p, 8);
		return f64_to_int(f64, -9223372036854775808.0,
		    9223372036854775808.0, INT64_MIN, INT64_MAX);
	}
	return 0;
}

double
cow__load_f64(cow_dtype_t dtype, const void *p)
{
	float f32;
	double f64;

	switch (dtype) {
	case COW_DTYPE_FLOAT32:
		memcpy(&f32, p, 4);
		return f32;
	case COW_DTYPE_FLOAT64:
		memcpy(&f64, p, 8);
		return f64;
	default:
		return (double)cow__load_i64(dtype, p);
	}
}

void
cow__store_i64(cow_dtype_t dtype, void *p, int64_t v)
{
	uint8_t u8;
	uint32_t u32;
	float f32;
	double f64;

	switch (dtype) {
	case COW_DTYPE_BOOL:
		u8 = v != 0;
		memcpy(p, &u8, 1);
		break;
	case COW_DTYPE_UINT8:
		u8 = (uint8_t)(uint64_t)v;
		memcpy(p, &u8, 1);
		break;
	case COW_DTYPE_INT32:
		/* Modulo 2^32, stored as the two's complement bit pattern. */
		u32 = (uint32_t)(uint64_t)v;
		memcpy(p, &u32, 4);
		break;
	case COW_DTYPE_INT64:
		memcpy(p, &v, 8);
		break;
	case COW_DTYPE_FLOAT32:
		f32 = (float)v;
		memcpy(p, &f32, 4);
		break;
	case COW_DTYPE_FLOAT64:
		f64 = (double)v;
		memcpy(p, &f64, 8);
		break;
	}
}

void
cow__store_f64(cow_dtype_t dtype, void *p, double v)
{
	uint8_t u8;
	int32_t i32;
	int64_t i64;
	float f32;

	switch (dtype) {
	case COW_DTYPE_BOOL:
		u8 = v != 0.0 || isnan(v);
		memcpy(p, &u8, 1);
		break;
	case COW_DTYPE_UINT8:
		u8 = (uint8_t)f64_to_int(v, 0.0, 255.0, 0, 255);
		memcpy(p, &u8, 1);
		break;
	case COW_DTYPE_INT32:
		i32 = (int32_t)f64_to_int(v, -2147483648.0, 2147483647.0,
		    INT32_MIN, INT32_MAX);
		memcpy(p, &i32, 4);
		break;
	case COW_DTYPE_INT64:
		i64 = f64_to_int(v, -9223372036854775808.0,
		    9223372036854775808.0, INT64_MIN, INT64_MAX);
		memcpy(p, &i64, 8);
		break;
	case COW_DTYPE_FLOAT32:
		/* Round to nearest; a magnitude from FLT_MAX + half an ulp
		 * (2^128 - 2^103) up rounds to infinity. Done here because C
		 * leaves the out-of-range conversion undefined. */
		if (v >= 0x1.ffffffp+127)
			f32 = INFINITY;
		else if (v <= -0x1.ffffffp+127)
			f32 = -INFINITY;
		else
			f32 = (float)v;
		memcpy(p, &f32, 4);
		break;
	case COW_DTYPE_FLOAT64:
		memcpy(p, &v, 8);
		break;
	}
}

void
cow__convert(cow_dtype_t dt, void *dst, cow_dtype_t st, const void *src)
{
	if (cow__dtype_is_float(st))
		cow__store_f64(dt, dst, cow__load_f64(st, src));
	else
		cow__store_i64(dt, dst, cow__load_i64(st, src));
}
