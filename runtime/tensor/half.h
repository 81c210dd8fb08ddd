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

uint16_t cow__f16_from_f64(double x);
uint16_t cow__bf16_from_f64(double x);

/* The integer (@neg ? -@mag : @mag), exactly: no detour through double. */
uint16_t cow__f16_from_int(bool neg, uint64_t mag);
uint16_t cow__bf16_from_int(bool neg, uint64_t mag);

/* The integer (@neg ? -@mag : @mag) rounded once to float32, in software:
 * a 64-bit conversion instruction may be emulated through double (two
 * roundings; valgrind does this), which this does not depend on. */
float cow__f32_from_int(bool neg, uint64_t mag);

float cow__f16_to_f32(uint16_t h);
float cow__bf16_to_f32(uint16_t b);

/* From float: a float converts to double exactly, so this rounds once. */
static inline uint16_t
cow__f16_from_f32(float x)
{
	return cow__f16_from_f64(x);
}

uint16_t cow__bf16_from_f32(float x);

#endif
