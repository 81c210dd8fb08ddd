/*
 * The inline, branch-free float16 and bfloat16 conversions of
 * runtime/tensor/half.h (what the vectorised loops use) against the
 * library's reference rounding (half.c's cow__f16_from_f64 and
 * cow__bf16_from_f64, one rounding from the exact value): every float16
 * and bfloat16 value, and floats of every sign, exponent and top fraction
 * bits with the low bits at each rounding boundary (zero, one, just below,
 * at and above half an ulp, all ones). An exhaustive run over all 2^32
 * floats agreed as well (docs/tensor.md, "Dtypes"); this one takes well
 * under a second.
 */
#include <math.h>
#include <string.h>

#include <criterion/criterion.h>

#include "tensor/half.h"

static float
from_bits(uint32_t b)
{
	float x;

	memcpy(&x, &b, sizeof x);
	return x;
}

static uint32_t
bits_of(float x)
{
	uint32_t b;

	memcpy(&b, &x, sizeof b);
	return b;
}

/* @h's value by the definition of binary16, or its bits for infinities
 * and NaNs (a NaN made quiet, its payload at the top of float's). */
static uint32_t
f16_reference_bits(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	double v;

	if (e == 0x1f)
		return sign | 0x7f800000u | (uint32_t)m << 13 |
		    (m != 0 ? 0x400000u : 0);
	v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
	return sign | bits_of((float)v);
}

Test(half, every_float16_to_float_is_exact_and_round_trips)
{
	for (uint32_t h = 0; h < 0x10000u; h++) {
		float x = cow__f16_to_f32((uint16_t)h);
		bool nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;

		cr_assert_eq(bits_of(x), f16_reference_bits((uint16_t)h),
		    "float16 %04x to float: %08x", h, bits_of(x));
		/* Back: the same bits (a NaN made quiet). */
		cr_assert_eq(cow__f16_from_f32(x),
		    nan ? (uint16_t)(h | 0x200u) : (uint16_t)h,
		    "float16 %04x round trip", h);
	}
}

Test(half, every_bfloat16_to_float_is_exact_and_round_trips)
{
	for (uint32_t b = 0; b < 0x10000u; b++) {
		float x = cow__bf16_to_f32((uint16_t)b);
		bool nan = (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0;

		cr_assert_eq(bits_of(x), nan ? (b | 0x40u) << 16 : b << 16,
		    "bfloat16 %04x", b);
		cr_assert_eq(cow__bf16_from_f32(x),
		    nan ? (uint16_t)(b | 0x40u) : (uint16_t)b,
		    "bfloat16 %04x round trip", b);
	}
}

/* Floats whose top bits are @top << @low_bits and whose low @low_bits
 * bits take each boundary pattern. */
static void
check_boundaries(int low_bits, void (*check)(float))
{
	uint32_t half = 1u << (low_bits - 1), all = (1u << low_bits) - 1;
	uint32_t lows[] = {0, 1, half - 1, half, half + 1, all - 1, all};

	for (uint32_t top = 0; top < (1u << (32 - low_bits)); top++)
		for (size_t k = 0; k < sizeof lows / sizeof lows[0]; k++)
			check(from_bits(top << low_bits | lows[k]));
}

static void
check_f16(float x)
{
	cr_assert_eq(cow__f16_from_f32(x), cow__f16_from_f64((double)x),
	    "float %08x (%a) to float16", bits_of(x), (double)x);
}

static void
check_bf16(float x)
{
	cr_assert_eq(cow__bf16_from_f32(x), cow__bf16_from_f64((double)x),
	    "float %08x (%a) to bfloat16", bits_of(x), (double)x);
}

/* A normal float16 keeps 10 of float's 23 fraction bits: 13 dropped. Its
 * subnormals keep fewer, so the patterns are also tried 1 to 10 bits
 * higher there (float exponents 100 to 113). */
Test(half, float_to_float16_at_every_rounding_boundary)
{
	check_boundaries(13, check_f16);
	for (int drop = 14; drop <= 24; drop++) {
		uint32_t half = 1u << (drop - 1), all = (1u << drop) - 1;
		uint32_t lows[] = {0, 1, half - 1, half, half + 1, all};

		for (uint32_t e = 100; e <= 113; e++)
			for (uint32_t s = 0; s < 2; s++)
				for (size_t k = 0; k < 6; k++)
					check_f16(from_bits(s << 31 | e << 23 |
					    (lows[k] & 0x7fffffu)));
	}
}

Test(half, float_to_bfloat16_at_every_rounding_boundary)
{
	check_boundaries(16, check_bf16);
}
