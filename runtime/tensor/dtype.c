/*
 * dtype.c - element sizes, names and conversions (rules in ops.h). Every
 * conversion is defined for every input: float-to-integer conversions
 * saturate instead of invoking undefined behaviour, and integers are
 * carried as 64-bit two's complement bits, which a store truncates to the
 * target's width (modulo 2^bits). Float16 and bfloat16 rounding is in
 * half.c.
 */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "tensor/dtype.h"
#include "tensor/half.h"

size_t
cow_dtype_size(cow_dtype_t dtype)
{
	switch (dtype) {
	case COW_DTYPE_BOOL:
	case COW_DTYPE_INT8:
	case COW_DTYPE_UINT8:
		return 1;
	case COW_DTYPE_INT16:
	case COW_DTYPE_UINT16:
	case COW_DTYPE_FLOAT16:
	case COW_DTYPE_BFLOAT16:
		return 2;
	case COW_DTYPE_INT32:
	case COW_DTYPE_UINT32:
	case COW_DTYPE_FLOAT32:
		return 4;
	case COW_DTYPE_INT64:
	case COW_DTYPE_UINT64:
	case COW_DTYPE_FLOAT64:
	case COW_DTYPE_COMPLEX64:
		return 8;
	case COW_DTYPE_COMPLEX128:
		return 16;
	case COW_DTYPE_INVALID:
		break;
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
	case COW_DTYPE_INT8: return "int8";
	case COW_DTYPE_INT16: return "int16";
	case COW_DTYPE_UINT16: return "uint16";
	case COW_DTYPE_UINT32: return "uint32";
	case COW_DTYPE_UINT64: return "uint64";
	case COW_DTYPE_FLOAT16: return "float16";
	case COW_DTYPE_BFLOAT16: return "bfloat16";
	case COW_DTYPE_COMPLEX64: return "complex64";
	case COW_DTYPE_COMPLEX128: return "complex128";
	case COW_DTYPE_INVALID: break;
	}
	return "unknown";
}

cow_status_t
cow__dtype_check(cow_dtype_t dtype)
{
	if (!cow__dtype_valid(dtype))
		return cow__error(COW_EINVAL, "unknown dtype %d", (int)dtype);
	return COW_OK;
}

/*
 * Truncate @x toward zero and saturate to the integers of @bits bits
 * (signed when @sgn); NaN gives 0. Returns the two's complement bits. The
 * bounds (2^(bits-1) and 2^bits) are exact doubles; a value strictly
 * between them truncates to an integer in range, which C converts without
 * undefined behaviour.
 */
static uint64_t
f64_to_int_bits(double x, int bits, bool sgn)
{
	uint64_t half = (uint64_t)1 << (bits - 1);
	double top = (double)half;

	if (isnan(x))
		return 0;
	if (sgn) {
		if (x <= -top)
			return (uint64_t)0 - half;
		if (x >= top)
			return half - 1;
		return (uint64_t)(int64_t)x;
	}
	if (x <= 0.0)
		return 0;
	if (x >= 2.0 * top)
		return half - 1 + half;
	return (uint64_t)x;
}

/* load() and store() are always inlined: with a constant dtype each folds
 * to one case, so cow__convert_n()'s loops have no switch and no call per
 * element. cow__load() and cow__store() wrap them. */
#define ALWAYS_INLINE static inline __attribute__((always_inline))

ALWAYS_INLINE cow__value_t
load(cow_dtype_t dtype, const void *p)
{
	cow__value_t v = {COW__VALUE_INT, 0, 0.0, 0.0};
	uint8_t u8;
	int8_t i8;
	uint16_t u16;
	int16_t i16;
	uint32_t u32;
	int32_t i32;
	int64_t i64;
	float f32[2];
	double f64[2];

	switch (dtype) {
	case COW_DTYPE_BOOL:
		memcpy(&u8, p, 1);
		v.kind = COW__VALUE_UINT;
		v.u = u8 != 0;
		break;
	case COW_DTYPE_UINT8:
		memcpy(&u8, p, 1);
		v.kind = COW__VALUE_UINT;
		v.u = u8;
		break;
	case COW_DTYPE_UINT16:
		memcpy(&u16, p, 2);
		v.kind = COW__VALUE_UINT;
		v.u = u16;
		break;
	case COW_DTYPE_UINT32:
		memcpy(&u32, p, 4);
		v.kind = COW__VALUE_UINT;
		v.u = u32;
		break;
	case COW_DTYPE_UINT64:
		memcpy(&v.u, p, 8);
		v.kind = COW__VALUE_UINT;
		break;
	case COW_DTYPE_INT8:
		memcpy(&i8, p, 1);
		v.u = (uint64_t)(int64_t)i8;
		break;
	case COW_DTYPE_INT16:
		memcpy(&i16, p, 2);
		v.u = (uint64_t)(int64_t)i16;
		break;
	case COW_DTYPE_INT32:
		memcpy(&i32, p, 4);
		v.u = (uint64_t)(int64_t)i32;
		break;
	case COW_DTYPE_INT64:
		memcpy(&i64, p, 8);
		v.u = (uint64_t)i64;
		break;
	case COW_DTYPE_FLOAT16:
		memcpy(&u16, p, 2);
		v = cow__value_f64(cow__f16_to_f32(u16));
		break;
	case COW_DTYPE_BFLOAT16:
		memcpy(&u16, p, 2);
		v = cow__value_f64(cow__bf16_to_f32(u16));
		break;
	case COW_DTYPE_FLOAT32:
		memcpy(f32, p, 4);
		v = cow__value_f64(f32[0]);
		break;
	case COW_DTYPE_FLOAT64:
		memcpy(f64, p, 8);
		v = cow__value_f64(f64[0]);
		break;
	case COW_DTYPE_COMPLEX64:
		memcpy(f32, p, 8);
		v = cow__value_f64(f32[0]);
		v.im = f32[1];
		break;
	case COW_DTYPE_COMPLEX128:
		memcpy(f64, p, 16);
		v = cow__value_f64(f64[0]);
		v.im = f64[1];
		break;
	case COW_DTYPE_INVALID: /* never a tensor's dtype */
		break;
	}
	return v;
}

double
cow__value_to_f64(cow__value_t v)
{
	switch (v.kind) {
	case COW__VALUE_INT:
		return (double)(int64_t)v.u;
	case COW__VALUE_UINT:
		return (double)v.u;
	case COW__VALUE_FLOAT:
		break;
	}
	return v.re;
}

int64_t
cow__value_to_i64(cow__value_t v)
{
	if (v.kind == COW__VALUE_FLOAT)
		return (int64_t)f64_to_int_bits(v.re, 64, true);
	return (int64_t)v.u;
}

/* The bits of an integer of @bits bits (signed when @sgn) holding @v. */
static uint64_t
int_bits(cow__value_t v, int bits, bool sgn)
{
	return v.kind == COW__VALUE_FLOAT ? f64_to_int_bits(v.re, bits, sgn) :
	    v.u;
}

/* A real value rounded once to float32 or float64; integers exactly. */
static float
real_f32(cow__value_t v)
{
	bool neg = v.kind == COW__VALUE_INT && (int64_t)v.u < 0;

	if (v.kind == COW__VALUE_FLOAT)
		return cow__f64_to_f32(v.re);
	return cow__f32_from_int(neg, neg ? (uint64_t)0 - v.u : v.u);
}

static double
real_f64(cow__value_t v)
{
	return cow__value_to_f64(v);
}

static uint16_t
real_f16(cow__value_t v, bool bf)
{
	bool neg = v.kind == COW__VALUE_INT && (int64_t)v.u < 0;
	uint64_t mag = neg ? (uint64_t)0 - v.u : v.u;

	if (v.kind == COW__VALUE_FLOAT)
		return bf ? cow__bf16_from_f64(v.re) : cow__f16_from_f64(v.re);
	return bf ? cow__bf16_from_int(neg, mag) : cow__f16_from_int(neg, mag);
}

ALWAYS_INLINE void
store(cow_dtype_t dtype, void *p, cow__value_t v)
{
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;
	float f32[2];
	double f64[2];

	switch (dtype) {
	case COW_DTYPE_BOOL:
		/* NaN != 0 holds: NaN is true. */
		u8 = v.kind == COW__VALUE_FLOAT ? v.re != 0.0 || v.im != 0.0 :
		    v.u != 0;
		memcpy(p, &u8, 1);
		break;
	case COW_DTYPE_INT8:
	case COW_DTYPE_UINT8:
		u8 = (uint8_t)int_bits(v, 8, dtype == COW_DTYPE_INT8);
		memcpy(p, &u8, 1);
		break;
	case COW_DTYPE_INT16:
	case COW_DTYPE_UINT16:
		u16 = (uint16_t)int_bits(v, 16, dtype == COW_DTYPE_INT16);
		memcpy(p, &u16, 2);
		break;
	case COW_DTYPE_INT32:
	case COW_DTYPE_UINT32:
		u32 = (uint32_t)int_bits(v, 32, dtype == COW_DTYPE_INT32);
		memcpy(p, &u32, 4);
		break;
	case COW_DTYPE_INT64:
	case COW_DTYPE_UINT64:
		u64 = int_bits(v, 64, dtype == COW_DTYPE_INT64);
		memcpy(p, &u64, 8);
		break;
	case COW_DTYPE_FLOAT16:
	case COW_DTYPE_BFLOAT16:
		u16 = real_f16(v, dtype == COW_DTYPE_BFLOAT16);
		memcpy(p, &u16, 2);
		break;
	case COW_DTYPE_FLOAT32:
		f32[0] = real_f32(v);
		memcpy(p, f32, 4);
		break;
	case COW_DTYPE_FLOAT64:
		f64[0] = real_f64(v);
		memcpy(p, f64, 8);
		break;
	case COW_DTYPE_COMPLEX64:
		f32[0] = real_f32(v);
		f32[1] = cow__f64_to_f32(v.im);
		memcpy(p, f32, 8);
		break;
	case COW_DTYPE_COMPLEX128:
		f64[0] = real_f64(v);
		f64[1] = v.im;
		memcpy(p, f64, 16);
		break;
	case COW_DTYPE_INVALID: /* never a tensor's dtype */
		break;
	}
}

cow__value_t
cow__load(cow_dtype_t dtype, const void *p)
{
	return load(dtype, p);
}

void
cow__store(cow_dtype_t dtype, void *p, cow__value_t v)
{
	store(dtype, p, v);
}

#define CASES(X)                                                            \
	X(COW_DTYPE_BOOL) X(COW_DTYPE_UINT8) X(COW_DTYPE_INT32)             \
	X(COW_DTYPE_INT64) X(COW_DTYPE_FLOAT32) X(COW_DTYPE_FLOAT64)        \
	X(COW_DTYPE_INT8) X(COW_DTYPE_INT16) X(COW_DTYPE_UINT16)            \
	X(COW_DTYPE_UINT32) X(COW_DTYPE_UINT64) X(COW_DTYPE_FLOAT16)        \
	X(COW_DTYPE_BFLOAT16) X(COW_DTYPE_COMPLEX64) X(COW_DTYPE_COMPLEX128)

/* @n elements of @dtype at @p (stride @ps bytes) into @v[0 .. n). */
static void
load_n(cow_dtype_t dtype, const char *p, int64_t ps, cow__value_t *v,
    int64_t n)
{
	switch (dtype) {
#define LOAD_CASE(D)                                                        \
	case D:                                                             \
		for (int64_t i = 0; i < n; i++)                             \
			v[i] = load(D, p + i * ps);                         \
		break;
	CASES(LOAD_CASE)
#undef LOAD_CASE
	case COW_DTYPE_INVALID: /* never a tensor's dtype */
		break;
	}
}

static void
store_n(cow_dtype_t dtype, char *p, int64_t ps, const cow__value_t *v,
    int64_t n)
{
	switch (dtype) {
#define STORE_CASE(D)                                                       \
	case D:                                                             \
		for (int64_t i = 0; i < n; i++)                             \
			store(D, p + i * ps, v[i]);                         \
		break;
	CASES(STORE_CASE)
#undef STORE_CASE
	case COW_DTYPE_INVALID: /* never a tensor's dtype */
		break;
	}
}

/* In chunks: loads, then stores, each loop with its dtype fixed. */
void
cow__convert_n(cow_dtype_t dt, char *dst, int64_t ds, cow_dtype_t st,
    const char *src, int64_t ss, int64_t n)
{
	cow__value_t v[64];

	while (n > 0) {
		int64_t k = n < 64 ? n : 64;

		load_n(st, src, ss, v, k);
		store_n(dt, dst, ds, v, k);
		src += k * ss;
		dst += k * ds;
		n -= k;
	}
}
