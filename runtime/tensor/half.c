/*
 * half.c - float16 and bfloat16 conversions, and float32 from 64-bit
 * integers (half.h). One rounding routine serves the three formats: a finite value is sign * sig * 2^exp2 with an
 * integer sig, rounded to the format's precision at its exponent (or at
 * the smallest subnormal's), ties to even.
 */
#include <string.h>

#include "tensor/half.h"

/* A binary format of 1 sign, @ebits exponent and @mbits fraction bits. */
struct fmt {
	int ebits;
	int mbits;
};

static const struct fmt f16 = {5, 10};
static const struct fmt bf16 = {8, 7};
static const struct fmt f32 = {8, 23};

static uint32_t
inf_bits(struct fmt f, bool neg)
{
	return (uint32_t)((neg ? 1u << (f.ebits + f.mbits) : 0u) |
	    (((1u << f.ebits) - 1) << f.mbits));
}

/* Round sig * 2^exp2 (sig != 0) with sign @neg to the format. */
static uint32_t
round_to(struct fmt f, bool neg, uint64_t sig, int exp2)
{
	int bias = (1 << (f.ebits - 1)) - 1, emin = 1 - bias;
	int top = 63 - __builtin_clzll(sig);
	int e = exp2 + top;           /* sig * 2^exp2 is in [2^e, 2^(e+1)) */
	int q = (e < emin ? emin : e) - f.mbits; /* exponent of one ulp */
	int shift = q - exp2;          /* low bits of sig below one ulp */
	uint32_t sign = neg ? 1u << (f.ebits + f.mbits) : 0u;
	uint64_t k, rem, half;
	uint32_t bits;

	if (e > bias)
		return inf_bits(f, neg);
	if (shift <= 0) {
		k = sig << -shift;     /* exact: fewer than mbits + 1 bits */
	} else if (shift > 64) {
		k = 0;                 /* below half the smallest subnormal */
	} else {
		k = shift == 64 ? 0 : sig >> shift;
		rem = shift == 64 ? sig : sig & ((UINT64_C(1) << shift) - 1);
		half = UINT64_C(1) << (shift - 1);
		if (COW__FAULT_POINT(ties_to_even,
		    rem > half || (rem == half && (k & 1))))
			k++;
	}
	/* Subnormal: k is the fraction field (a carry to 2^mbits makes the
	 * smallest normal, whose bits are the same). Normal: k holds the
	 * implicit bit, which adds one to the exponent field; a carry to
	 * 2^(mbits + 1) moves to the next binade the same way. */
	if (e < emin)
		bits = (uint32_t)k;
	else
		bits = ((uint32_t)(e + bias - 1) << f.mbits) + (uint32_t)k;
	if (bits >= ((1u << f.ebits) - 1) << f.mbits)
		return inf_bits(f, neg);
	return sign | bits;
}

static uint32_t
from_f64(struct fmt f, double x)
{
	uint64_t b, m;
	int e;
	bool neg;

	memcpy(&b, &x, sizeof b);
	neg = b >> 63;
	e = (int)((b >> 52) & 0x7ff);
	m = b & ((UINT64_C(1) << 52) - 1);
	if (e == 0x7ff) {
		if (m == 0)
			return inf_bits(f, neg);
		/* NaN: quiet bit set, top payload bits kept. */
		return inf_bits(f, neg) | (1u << (f.mbits - 1)) |
		    (uint32_t)(m >> (52 - f.mbits));
	}
	if (e == 0 && m == 0)
		return neg ? 1u << (f.ebits + f.mbits) : 0u;
	if (e == 0)
		return round_to(f, neg, m, -1074);
	return round_to(f, neg, m | UINT64_C(1) << 52, e - 1075);
}

uint16_t
cow__f16_from_f64(double x)
{
	return (uint16_t)from_f64(f16, x);
}

uint16_t
cow__bf16_from_f64(double x)
{
	return (uint16_t)from_f64(bf16, x);
}

uint16_t
cow__f16_from_int(bool neg, uint64_t mag)
{
	if (mag == 0)
		return 0;
	return (uint16_t)round_to(f16, neg, mag, 0);
}

uint16_t
cow__bf16_from_int(bool neg, uint64_t mag)
{
	if (mag == 0)
		return 0;
	return (uint16_t)round_to(bf16, neg, mag, 0);
}

float
cow__f32_from_int(bool neg, uint64_t mag)
{
	uint32_t bits;
	float x;

	if (mag < (UINT64_C(1) << 24)) {      /* exact */
		x = (float)mag;
		return neg ? -x : x;
	}
	bits = round_to(f32, neg, mag, 0);
	memcpy(&x, &bits, sizeof x);
	return x;
}
