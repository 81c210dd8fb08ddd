/*
 * divmod.h - one element of floor division and modulo (ops.h), shared by
 * the kernels' loops (loops.c) and the functionalization layer's opaque
 * backend, so that both compute the same values.
 *
 * Floating (in the type given, float or double; float16 and bfloat16 go
 * through float): the remainder r = fmod(a, b) (exact) moved to the sign
 * of b (r + b when r and b have opposite signs; a zero r gets b's sign);
 * the quotient (a - r) / b, one less when r was moved, rounded to the
 * nearest integer (it is one up to rounding), its zero signed as a / b.
 * b == 0: the quotient is a / b (+-inf or NaN), the remainder NaN. These
 * are NumPy 1.24's values (tests/python/test_operators.py compares them).
 *
 * Integers: the quotient rounded toward minus infinity and the remainder
 * with the sign of the divisor; b == 0 gives 0 for both (NumPy 1.24 gives
 * 0 and warns; cowstore does not warn); the most negative value // -1 is
 * that value (it wraps) and its % -1 is 0.
 */
#ifndef COW_TENSOR_DIVMOD_H
#define COW_TENSOR_DIVMOD_H

#include <math.h>
#include <stdint.h>

#include "core/fault.h"

#define COW__DIVMOD_FLOAT(sfx, T, FMOD, FLOOR, COPYSIGN)                    \
static inline T                                                             \
cow__mod_##sfx(T a, T b)                                                    \
{                                                                           \
	T r = FMOD(a, b);                                                   \
                                                                            \
	if (b == 0)                                                         \
		return r;                                                   \
	if (r != 0) {                                                       \
		if ((b < 0) != (r < 0))                                     \
			r += b;                                             \
	} else {                                                            \
		r = COPYSIGN((T)0, b);                                      \
	}                                                                   \
	return r;                                                           \
}                                                                           \
                                                                            \
static inline T                                                             \
cow__floor_div_##sfx(T a, T b)                                              \
{                                                                           \
	T r, q, f;                                                          \
                                                                            \
	if (b == 0)                                                         \
		return a / b;                                               \
	r = FMOD(a, b);                                                     \
	q = (a - r) / b;                                                    \
	if (r != 0 && (b < 0) != (r < 0))                                   \
		q -= 1;                                                     \
	if (q == 0)                                                         \
		return COPYSIGN((T)0, a / b);                               \
	f = FLOOR(q);                                                       \
	if (q - f > (T)0.5)                                                 \
		f += 1;                                                     \
	return f;                                                           \
}

COW__DIVMOD_FLOAT(f32, float, fmodf, floorf, copysignf)
COW__DIVMOD_FLOAT(f64, double, fmod, floor, copysign)
#undef COW__DIVMOD_FLOAT

/* Signed integers as int64_t (narrower ones convert exactly; the wrap of
 * MIN // -1 is the caller's cast back to its width, except for int64). */
static inline int64_t
cow__floor_div_i64(int64_t a, int64_t b)
{
	int64_t q;

	if (b == 0)
		return 0;
	if (b == -1)
		return (int64_t)(0 - (uint64_t)a);
	q = a / b;
	if (a % b != 0 && (a < 0) != (b < 0))
		q--;
	return q;
}

static inline int64_t
cow__mod_i64(int64_t a, int64_t b)
{
	int64_t r;

	if (b == 0 || b == -1)
		return 0;
	r = a % b;
	/* C's remainder has the dividend's sign: move it to the divisor's
	 * (the fault point of fuzz_tensor's negative control). */
	if (r != 0 && (r < 0) != (b < 0))
		COW__FAULT_POINT(mod_divisor_sign, r += b);
	return r;
}

static inline uint64_t
cow__floor_div_u64(uint64_t a, uint64_t b)
{
	return b == 0 ? 0 : a / b;
}

static inline uint64_t
cow__mod_u64(uint64_t a, uint64_t b)
{
	return b == 0 ? 0 : a % b;
}

#endif
