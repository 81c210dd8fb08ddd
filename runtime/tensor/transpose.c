/*
 * transpose.c - transposing copies (transpose.h).
 *
 * Element by element, one of the two sides walks memory a whole row at a
 * time, touching a new cache line per element. In TILE x TILE tiles both
 * stay within TILE lines of each. Inside a tile, 4- and 8-byte elements
 * move in small square blocks through SSE registers (x86-64's baseline:
 * no dispatch; four or two loads, the shuffles, as many stores), which
 * roughly halves the time of element-by-element tiles (docs/performance.md,
 * "Kernels against NumPy"); elsewhere, and for 1- and 2-byte elements,
 * plain loops whose write side is unit-stride.
 */
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "tensor/transpose.h"

#define TILE 32

/* Each element of the [r_begin, r_end) x [c_begin, c_end) part of the
 * output, from its source, as T. */
#define COPY_ELEMENTS(T, r_begin, r_end, c_begin, c_end)                    \
	for (int64_t i = (r_begin); i < (r_end); i++)                       \
		for (int64_t j = (c_begin); j < (c_end); j++)               \
			COPY_ELEMENT(T, i, j)

#define COPY_ELEMENT(T, r, c)                                               \
	memcpy(out + ((r) * ldo + (c)) * (int64_t)sizeof(T),                \
	    in + ((c) * ldi + (r)) * (int64_t)sizeof(T), sizeof(T))

/* BLOCK(r, c) for each BS x BS block of [0, rows) x [0, cols) (multiples
 * of BS; TILE is one), tile by tile. */
#define FOR_BLOCKS(BS, rows, cols, BLOCK)                                   \
	for (int64_t r0 = 0; r0 < (rows); r0 += TILE)                       \
		for (int64_t c0 = 0; c0 < (cols); c0 += TILE) {             \
			int64_t re = r0 + TILE < (rows) ? r0 + TILE : (rows); \
			int64_t ce = c0 + TILE < (cols) ? c0 + TILE : (cols); \
                                                                            \
			for (int64_t r = r0; r < re; r += (BS))             \
				for (int64_t c = c0; c < ce; c += (BS))     \
					BLOCK(r, c);                        \
		}

/* Blocks of BS x BS elements of type T over the largest such part of the
 * output, then the rows and columns left, element by element. */
#define TRANSPOSE(T, BS, BLOCK)                                             \
	do {                                                                \
		int64_t rb = rows - rows % (BS), cb = cols - cols % (BS);   \
                                                                            \
		FOR_BLOCKS(BS, rb, cb, BLOCK);                              \
		COPY_ELEMENTS(T, 0, rb, cb, cols);                          \
		COPY_ELEMENTS(T, rb, rows, 0, cols);                        \
	} while (0)

#define ELEMENT_8(r, c) COPY_ELEMENT(uint8_t, r, c)
#define ELEMENT_16(r, c) COPY_ELEMENT(uint16_t, r, c)

#if defined(__SSE2__)
#define OUT_AT(T, r, c) ((T *)(void *)(out +                                 \
	((r) * ldo + (c)) * (int64_t)sizeof(T)))
#define IN_AT(T, r, c) ((const T *)(const void *)(in +                       \
	((c) * ldi + (r)) * (int64_t)sizeof(T)))

/* 2 x 2 doubles' bits: two source rows in, their halves paired out. */
#define BLOCK_64(r, c)                                                      \
	do {                                                                \
		__m128d a0 = _mm_loadu_pd(IN_AT(double, r, c));             \
		__m128d a1 = _mm_loadu_pd(IN_AT(double, r, c + 1));         \
                                                                            \
		_mm_storeu_pd(OUT_AT(double, r, c), _mm_unpacklo_pd(a0, a1)); \
		_mm_storeu_pd(OUT_AT(double, r + 1, c),                     \
		    _mm_unpackhi_pd(a0, a1));                               \
	} while (0)

/* 4 x 4 floats' bits (shuffles only: no value is computed). */
#define BLOCK_32(r, c)                                                      \
	do {                                                                \
		__m128 a0 = _mm_loadu_ps(IN_AT(float, r, c));               \
		__m128 a1 = _mm_loadu_ps(IN_AT(float, r, c + 1));           \
		__m128 a2 = _mm_loadu_ps(IN_AT(float, r, c + 2));           \
		__m128 a3 = _mm_loadu_ps(IN_AT(float, r, c + 3));           \
                                                                            \
		_MM_TRANSPOSE4_PS(a0, a1, a2, a3);                          \
		_mm_storeu_ps(OUT_AT(float, r, c), a0);                     \
		_mm_storeu_ps(OUT_AT(float, r + 1, c), a1);                 \
		_mm_storeu_ps(OUT_AT(float, r + 2, c), a2);                 \
		_mm_storeu_ps(OUT_AT(float, r + 3, c), a3);                 \
	} while (0)
#define BS_64 2
#define BS_32 4
#else
#define BLOCK_64(r, c) COPY_ELEMENT(uint64_t, r, c)
#define BLOCK_32(r, c) COPY_ELEMENT(uint32_t, r, c)
#define BS_64 1
#define BS_32 1
#endif

void
cow__transpose(char *out, int64_t ldo, const char *in, int64_t ldi,
    int64_t rows, int64_t cols, size_t size)
{
	switch (size) {
	case 1:
		TRANSPOSE(uint8_t, 1, ELEMENT_8);
		break;
	case 2:
		TRANSPOSE(uint16_t, 1, ELEMENT_16);
		break;
	case 4:
		TRANSPOSE(uint32_t, BS_32, BLOCK_32);
		break;
	default:
		TRANSPOSE(uint64_t, BS_64, BLOCK_64);
	}
}
