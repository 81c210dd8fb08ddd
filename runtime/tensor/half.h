/*
 * half.h - the two 16-bit floating formats, as bit patterns (and float32
 * from 64-bit integers, by the same rounding): float16 (IEEE
 * binary16: 1 sign, 5 exponent, 10 fraction bits) and bfloat16 (the top 16
 * bits of binary32: 1 sign, 8 exponent, 7 fraction bits).
 *
 * To them: round to nearest, ties to even, once from the exact value given;
 * overflow gives +/-infinity, underflow gives subnormals or a signed zero; a
 * NaN stays a NaN with its sign, made quiet, keeping the top bits of its
 * payload. From them: exact (every value of both is a float).
 */
#ifndef COW_TENSOR_HALF_H
#define COW_TENSOR_HALF_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/fault.h"

uint16_t cow__f16_from_f64(double x);
uint16_t cow__bf16_from_f64(double x);

/* The integer (@neg ? -@mag : @mag), exactly: no detour through double. */
uint16_t cow__f16_from_int(bool neg, uint64_t mag);
uint16_t cow__bf16_from_int(bool neg, uint64_t mag);

/* The integer (@neg ? -@mag : @mag) rounded once to float32, in software:
 * a 64-bit conversion instruction may be emulated through double (two
 * roundings; valgrind does this), which this does not depend on. */
float cow__f32_from_int(bool neg, uint64_t mag);

/*
 * The conversions between float and the 16-bit formats are inline and
 * branch-free (selects, no table, no call), so that a loop over an array
 * of them vectorises like a loop over floats (loops.c). They depend on
 * float being IEEE binary32 with the default rounding (to nearest even)
 * and no flush of subnormal results, as every conversion and op of the
 * library does.
 */
/* @c ? @x : @y without a branch (a ?: on floats' bits is not always
 * if-converted, and a loop with control flow does not vectorise). */
static inline uint32_t
cow__select32(bool c, uint32_t x, uint32_t y)
{
	uint32_t m = 0u - (uint32_t)c;

	return (x & m) | (y & ~m);
}

static inline float
cow__f32_from_bits(uint32_t b)
{
	float x;

	memcpy(&x, &b, sizeof x);
	return x;
}

static inline uint32_t
cow__f32_bits(float x)
{
	uint32_t b;

	memcpy(&b, &x, sizeof b);
	return b;
}

/* Exact. A NaN is made quiet and keeps its payload (shifted up), as every
 * conversion to a floating dtype does. */
static inline float
cow__f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t e = h & 0x7c00u;
	uint32_t em = (uint32_t)(h & 0x7fffu) << 13;
	/* A normal value: rebias the exponent, 15 to 127. Infinity and NaN:
	 * exponent 31 to 255 (a NaN gets the quiet bit). Zero and subnormals (m * 2^-24): with exponent
	 * field 1 the bits read 2^-14 + m * 2^-24, and 2^-14 comes off
	 * exactly. */
	uint32_t normal = em + ((127u - 15u) << 23);
	uint32_t special = (em + ((255u - 31u) << 23)) |
	    cow__select32((h & 0x3ffu) != 0, 0x400000u, 0);
	uint32_t small = cow__f32_bits(
	    cow__f32_from_bits(em + (113u << 23)) - 0x1p-14f);
	uint32_t b = cow__select32(e == 0x7c00u, special,
	    cow__select32(e == 0, small, normal));

	return cow__f32_from_bits(b | sign);
}

/* Rounded to nearest, ties to even, once (float holds the value exactly
 * or the caller rounded it there: float's 24 bits are enough that
 * rounding an op's exact result to float, then to float16, equals
 * rounding it to float16 once). */
static inline uint16_t
cow__f16_from_f32(float x)
{
	uint32_t f = cow__f32_bits(x);
	uint32_t sign = (f >> 16) & 0x8000u;
	uint32_t a = f & 0x7fffffffu;
	/* Below 2^-14 (float16's smallest normal): adding 0.5, whose ulp is
	 * float16's smallest subnormal 2^-24, rounds |x| to a multiple of it
	 * in hardware; the low bits are the result. */
	uint32_t small = cow__f32_bits(cow__f32_from_bits(a) + 0.5f) -
	    cow__f32_bits(0.5f);
	/* Normal: rebias, then round the 13 dropped bits; a carry moves to
	 * the next binade, and past 65504 to infinity (0x7c00). */
	uint32_t normal = COW__FAULT_POINT(f16_ties_to_even,
	    (a - ((127u - 15u) << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13);
	/* A NaN is made quiet and keeps the top bits of its payload. */
	uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu);
	uint32_t r = cow__select32(a < (113u << 23), small, normal);

	r = cow__select32(a >= 0x47800000u, 0x7c00u, r); /* 2^16 up: inf */
	r = cow__select32(a > 0x7f800000u, nan, r);

	return (uint16_t)(r | sign);
}

/* Exact; a NaN is made quiet. */
static inline float
cow__bf16_to_f32(uint16_t b)
{
	uint32_t x = (uint32_t)b << 16;

	return cow__f32_from_bits(cow__select32((x & 0x7fffffffu) >
	    0x7f800000u, x | 0x400000u, x));
}

static inline uint16_t
cow__bf16_from_f32(float x)
{
	uint32_t b = cow__f32_bits(x);
	/* Round the low 16 bits to nearest even; a carry reaches the
	 * exponent (and past the largest finite value, infinity). */
	uint32_t r = COW__FAULT_POINT(bf16_ties_to_even,
	    (b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
	/* A NaN: made quiet. */
	uint32_t nan = (b >> 16) | 0x0040u;

	return (uint16_t)cow__select32((b & 0x7fffffffu) > 0x7f800000u, nan, r);
}

#endif
