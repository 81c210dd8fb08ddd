/*
 * loops.c - inner loops of the elementwise kernels (see loops.h).
 */
#include <math.h>
#include <string.h>

#include "tensor/divmod.h"
#include "tensor/dtype.h"
#include "tensor/half.h"
#include "tensor/loops.h"

/*
 * Fast paths. The iterator hands a loop one run at a time; after it merges
 * dimensions, an op over dense operands is one run whose strides are the
 * element size, and a scalar or broadcast operand has stride 0. For those
 * runs the loops below use typed pointers with constant strides, which the
 * compiler vectorises. They need the operands aligned to the element
 * (true of every storage the library allocates and of every tensor made
 * over external memory; a caller's raw storage viewed as a wider dtype may
 * not be, and takes the general loop).
 *
 * Overlap (kernels.h): an input that overlaps the destination with another
 * element mapping was copied to a temporary first, so in a dense run an
 * input either is the destination (the same address: in place) or does not
 * overlap it at all. Each case gets a loop whose restrict-qualified
 * pointers say exactly that; inputs may overlap each other (both only
 * read).
 */
#define ALIGNED(ptr, T) (((uintptr_t)(ptr) & (_Alignof(T) - 1)) == 0)

/*
 * Wider vectors where the machine has them: on x86-64 each dense loop is
 * compiled twice, for the baseline (SSE2) and for AVX2, and the dynamic
 * loader picks one for the machine it runs on (target_clones: an ifunc,
 * resolved once). What ships never assumes AVX; a machine without it runs
 * the baseline. Measured: docs/performance.md, "Kernels against NumPy".
 * GCC only: Clang 14 gives a static function's resolver global default
 * visibility, which would export it from the shared library; Clang builds
 * (the sanitizer presets among them) run the baseline loops.
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    defined(__ELF__)
#define DENSE __attribute__((target_clones("avx2", "default")))
/*
 * The division loops are bound by the divider, not by memory, and where
 * the divider is as wide as the vectors, quotients per second follow the
 * width: 2^17 float64 quotients (two 1 MiB arrays) took 63 us with SSE2,
 * 31 us with AVX (256 bits) and 16 us with AVX-512 on the 2-vCPU AMD EPYC
 * VM of docs/performance.md (NumPy 1.24 divides with AVX-512F where the
 * machine has it). So they get an AVX-512F clone, and an AVX one (256-bit
 * floating point, without AVX2's integer instructions) for machines with
 * AVX and no AVX2. Where the divider is narrower (a core that splits
 * 512-bit operations in two), a wider clone costs nothing: the same
 * quotients per cycle.
 */
#define DENSE_DIV \
	__attribute__((target_clones("avx512f", "avx2", "avx", "default")))
#else
#define DENSE
#define DENSE_DIV
#endif

/*
 * GCC runs a vectorised loop of one load, op and store per vector as is;
 * its speed then depends on where the loop lands in the code (measured:
 * the same float32 add_s at 15 us or 31 us per MiB in two builds, the
 * loop one instruction across a 64-byte boundary in the slow one). Four
 * vectors per iteration make it stable. Clang interleaves on its own.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define UNROLL _Pragma("GCC unroll 4")
#else
#define UNROLL
#endif

/* BINARY_LOOP_ISA's dense loops carry ISA (DENSE or DENSE_DIV). */
#define BINARY_LOOP(name, T, EXPR) BINARY_LOOP_ISA(name, T, EXPR, DENSE)

#define BINARY_LOOP_ISA(name, T, EXPR, ISA)                                 \
static inline T                                                             \
name##_op(T x, T y)                                                         \
{                                                                           \
	return (T)(EXPR);                                                   \
}                                                                           \
                                                                            \
ISA static void                                                             \
name##_vv(T *restrict d, const T *restrict a, const T *restrict b,          \
    int64_t n)                                                              \
{                                                                           \
	UNROLL                                                              \
	for (int64_t i = 0; i < n; i++)                                     \
		d[i] = name##_op(a[i], b[i]);                               \
}                                                                           \
                                                                            \
ISA static void                                                             \
name##_dv(T *restrict d, const T *restrict b, int64_t n)                    \
{                                                                           \
	UNROLL                                                              \
	for (int64_t i = 0; i < n; i++)                                     \
		d[i] = name##_op(d[i], b[i]);                               \
}                                                                           \
                                                                            \
ISA static void                                                             \
name##_vd(T *restrict d, const T *restrict a, int64_t n)                    \
{                                                                           \
	UNROLL                                                              \
	for (int64_t i = 0; i < n; i++)                                     \
		d[i] = name##_op(a[i], d[i]);                               \
}                                                                           \
                                                                            \
ISA static void                                                             \
name##_dd(T *restrict d, int64_t n)                                         \
{                                                                           \
	UNROLL                                                              \
	for (int64_t i = 0; i < n; i++)                                     \
		d[i] = name##_op(d[i], d[i]);                               \
}                                                                           \
                                                                            \
ISA static void                                                             \
name##_vs(T *restrict d, const T *restrict a, T y, int64_t n)               \
{                                                                           \
	UNROLL                                                              \
	for (int64_t i = 0; i < n; i++)                                     \
		d[i] = name##_op(a[i], y);                                  \
}                                                                           \
                                                                            \
ISA static void                                                             \
name##_ds(T *restrict d, T y, int64_t n)                                    \
{                                                                           \
	UNROLL                                                              \
	for (int64_t i = 0; i < n; i++)                                     \
		d[i] = name##_op(d[i], y);                                  \
}                                                                           \
                                                                            \
ISA static void                                                             \
name##_sv(T *restrict d, T x, const T *restrict b, int64_t n)               \
{                                                                           \
	UNROLL                                                              \
	for (int64_t i = 0; i < n; i++)                                     \
		d[i] = name##_op(x, b[i]);                                  \
}                                                                           \
                                                                            \
ISA static void                                                             \
name##_sd(T *restrict d, T x, int64_t n)                                    \
{                                                                           \
	UNROLL                                                              \
	for (int64_t i = 0; i < n; i++)                                     \
		d[i] = name##_op(x, d[i]);                                  \
}                                                                           \
                                                                            \
/* A dense destination with dense or scalar operands; false: not one. */    \
static bool                                                                 \
name##_fast(char *const *p, const int64_t *s, int64_t n)                    \
{                                                                           \
	const int64_t z = (int64_t)sizeof(T);                               \
	T *d = (T *)(void *)p[0];                                           \
	const T *a = (const T *)(const void *)p[1];                         \
	const T *b = (const T *)(const void *)p[2];                         \
                                                                            \
	if (s[0] != z || !ALIGNED(d, T) || !ALIGNED(a, T) ||                \
	    !ALIGNED(b, T))                                                 \
		return false;                                               \
	if (s[1] == z && s[2] == z) {                                       \
		if (a == d && b == d)                                       \
			name##_dd(d, n);                                    \
		else if (a == d)                                            \
			name##_dv(d, b, n);                                 \
		else if (b == d)                                            \
			name##_vd(d, a, n);                                 \
		else                                                        \
			name##_vv(d, a, b, n);                              \
	} else if (s[1] == z && s[2] == 0) {                                \
		if (a == d)                                                 \
			name##_ds(d, *b, n);                                \
		else                                                        \
			name##_vs(d, a, *b, n);                             \
	} else if (s[1] == 0 && s[2] == z) {                                \
		if (b == d)                                                 \
			name##_sd(d, *a, n);                                \
		else                                                        \
			name##_sv(d, *a, b, n);                             \
	} else {                                                            \
		return false;                                               \
	}                                                                   \
	return true;                                                        \
}                                                                           \
                                                                            \
static bool                                                                 \
name(char *const *p, const int64_t *s, int64_t n, void *arg)                \
{                                                                           \
	(void)arg;                                                          \
	if (name##_fast(p, s, n))                                           \
		return true;                                                \
	for (int64_t i = 0; i < n; i++) {                                   \
		T x, y, r;                                                  \
                                                                            \
		memcpy(&x, p[1] + i * s[1], sizeof x);                      \
		memcpy(&y, p[2] + i * s[2], sizeof y);                      \
		r = name##_op(x, y);                                        \
		memcpy(p[0] + i * s[0], &r, sizeof r);                      \
	}                                                                   \
	return true;                                                        \
}

#define UNARY_LOOP(name, T, EXPR)                                           \
static inline T                                                             \
name##_op(T x)                                                              \
{                                                                           \
	return (T)(EXPR);                                                   \
}                                                                           \
                                                                            \
DENSE static void                                                           \
name##_v(T *restrict d, const T *restrict a, int64_t n)                     \
{                                                                           \
	UNROLL                                                              \
	for (int64_t i = 0; i < n; i++)                                     \
		d[i] = name##_op(a[i]);                                     \
}                                                                           \
                                                                            \
DENSE static void                                                           \
name##_d(T *restrict d, int64_t n)                                          \
{                                                                           \
	UNROLL                                                              \
	for (int64_t i = 0; i < n; i++)                                     \
		d[i] = name##_op(d[i]);                                     \
}                                                                           \
                                                                            \
static bool                                                                 \
name(char *const *p, const int64_t *s, int64_t n, void *arg)                \
{                                                                           \
	const int64_t z = (int64_t)sizeof(T);                               \
                                                                            \
	(void)arg;                                                          \
	if (s[0] == z && s[1] == z && ALIGNED(p[0], T) &&                   \
	    ALIGNED(p[1], T)) {                                             \
		if (p[0] == p[1])                                           \
			name##_d((T *)(void *)p[0], n);                     \
		else                                                        \
			name##_v((T *)(void *)p[0],                         \
			    (const T *)(const void *)p[1], n);              \
		return true;                                                \
	}                                                                   \
	for (int64_t i = 0; i < n; i++) {                                   \
		T x, r;                                                     \
                                                                            \
		memcpy(&x, p[1] + i * s[1], sizeof x);                      \
		r = name##_op(x);                                           \
		memcpy(p[0] + i * s[0], &r, sizeof r);                      \
	}                                                                   \
	return true;                                                        \
}

/* The wrapping integer loops serve the signed and unsigned dtypes of one
 * width (the same bits). 16-bit products are formed in uint32_t: uint16_t
 * would promote to int, whose overflow is undefined. */
/* bool: add is or, mul is and (any non-zero byte is true). */
BINARY_LOOP(add_bool, uint8_t, (x | y) != 0)
BINARY_LOOP(add_x8, uint8_t, x + y)
BINARY_LOOP(add_x16, uint16_t, x + y)
BINARY_LOOP(add_x32, uint32_t, x + y)
BINARY_LOOP(add_x64, uint64_t, x + y)
BINARY_LOOP(add_f32, float, x + y)
BINARY_LOOP(add_f64, double, x + y)

BINARY_LOOP(mul_bool, uint8_t, x != 0 && y != 0)
BINARY_LOOP(mul_x8, uint8_t, x * y)
BINARY_LOOP(mul_x16, uint16_t, (uint32_t)x * y)
BINARY_LOOP(mul_x32, uint32_t, x * y)
BINARY_LOOP(mul_x64, uint64_t, x * y)
BINARY_LOOP(mul_f32, float, x * y)
BINARY_LOOP(mul_f64, double, x * y)

UNARY_LOOP(neg_x8, uint8_t, 0u - x)
UNARY_LOOP(neg_x16, uint16_t, 0u - x)
UNARY_LOOP(neg_x32, uint32_t, 0u - x)
UNARY_LOOP(neg_x64, uint64_t, (uint64_t)0 - x)
UNARY_LOOP(neg_f32, float, -x)
UNARY_LOOP(neg_f64, double, -x)

/* float16 and bfloat16: the op in float, rounded once to the dtype. */
#define F16(v) cow__f16_to_f32(v)
#define BF16(v) cow__bf16_to_f32(v)
BINARY_LOOP(add_f16, uint16_t, cow__f16_from_f32(F16(x) + F16(y)))
BINARY_LOOP(mul_f16, uint16_t, cow__f16_from_f32(F16(x) * F16(y)))
/* Negation flips the sign bit (IEEE 754's negate, NumPy's half negative):
 * exact, and a NaN keeps its payload. */
UNARY_LOOP(neg_f16, uint16_t, x ^ 0x8000u)
BINARY_LOOP(add_bf16, uint16_t, cow__bf16_from_f32(BF16(x) + BF16(y)))
BINARY_LOOP(mul_bf16, uint16_t, cow__bf16_from_f32(BF16(x) * BF16(y)))
UNARY_LOOP(neg_bf16, uint16_t, x ^ 0x8000u)
#undef F16
#undef BF16

/* Complex: T[2] is (re, im). STMT computes r from x (and y). Dense runs
 * (every operand contiguous, or the second one a scalar: stride 0) take
 * typed loops over the interleaved parts, which the compiler vectorises;
 * the statement is the same, so the results are too. No restrict: the
 * destination may be an input (in place), and the compiler checks for
 * overlap at run time instead. */
#define COMPLEX_LOOP(name, T, NIN, STMT)                                    \
DENSE static void                                                           \
name##_dense(T *d, const T *a, const T *b, int64_t sb, int64_t n)           \
{                                                                           \
	for (int64_t i = 0; i < n; i++) {                                   \
		T x[2] = {a[2 * i], a[2 * i + 1]}, y[2] = {0, 0}, r[2];     \
                                                                            \
		if (NIN == 2) {                                             \
			y[0] = b[sb * i];                                   \
			y[1] = b[sb * i + 1];                               \
		}                                                           \
		STMT;                                                       \
		(void)y;                                                    \
		d[2 * i] = r[0];                                            \
		d[2 * i + 1] = r[1];                                        \
	}                                                                   \
}                                                                           \
                                                                            \
static bool                                                                 \
name(char *const *p, const int64_t *s, int64_t n, void *arg)                \
{                                                                           \
	const int64_t z = (int64_t)(2 * sizeof(T));                         \
                                                                            \
	(void)arg;                                                          \
	if (s[0] == z && s[1] == z &&                                       \
	    (NIN == 1 || s[2] == z || s[2] == 0) && ALIGNED(p[0], T) &&     \
	    ALIGNED(p[1], T) && (NIN == 1 || ALIGNED(p[2], T))) {           \
		const T *b = NIN == 2 ? (const T *)(const void *)p[2] : NULL; \
                                                                            \
		name##_dense((T *)(void *)p[0],                             \
		    (const T *)(const void *)p[1], b,                       \
		    NIN == 2 && s[2] == 0 ? 0 : 2, n);                      \
		return true;                                                \
	}                                                                   \
	for (int64_t i = 0; i < n; i++) {                                   \
		T x[2], y[2], r[2];                                         \
                                                                            \
		memcpy(x, p[1] + i * s[1], sizeof x);                       \
		if (NIN == 2)                                               \
			memcpy(y, p[2] + i * s[2], sizeof y);               \
		else                                                        \
			y[0] = y[1] = 0;                                    \
		STMT;                                                       \
		memcpy(p[0] + i * s[0], r, sizeof r);                       \
	}                                                                   \
	return true;                                                        \
}

/* (a + bi)(c + di) = (ac - bd) + (ad + bc)i, each product and sum rounded
 * to T (NumPy's loop; not C's Annex G multiplication). One operation per
 * statement, so that no compiler contracts them into fused multiply-adds. */
#define CMUL(T)                                                             \
	do {                                                                \
		T ac = x[0] * y[0], bd = x[1] * y[1];                       \
		T ad = x[0] * y[1], bc = x[1] * y[0];                       \
                                                                            \
		r[0] = ac - bd;                                             \
		r[1] = ad + bc;                                             \
	} while (0)

COMPLEX_LOOP(add_c64, float, 2, (r[0] = x[0] + y[0], r[1] = x[1] + y[1]))
COMPLEX_LOOP(add_c128, double, 2, (r[0] = x[0] + y[0], r[1] = x[1] + y[1]))
COMPLEX_LOOP(mul_c64, float, 2, CMUL(float))
COMPLEX_LOOP(mul_c128, double, 2, CMUL(double))
COMPLEX_LOOP(neg_c64, float, 1, (r[0] = -x[0], r[1] = -x[1]))
COMPLEX_LOOP(neg_c128, double, 1, (r[0] = -x[0], r[1] = -x[1]))

/* sub: integers wrap; float16 and bfloat16 in float, rounded once. bool
 * has none (NumPy refuses a boolean subtract). */
BINARY_LOOP(sub_x8, uint8_t, x - y)
BINARY_LOOP(sub_x16, uint16_t, x - y)
BINARY_LOOP(sub_x32, uint32_t, x - y)
BINARY_LOOP(sub_x64, uint64_t, x - y)
BINARY_LOOP(sub_f32, float, x - y)
BINARY_LOOP(sub_f64, double, x - y)
BINARY_LOOP_ISA(div_f32, float, x / y, DENSE_DIV)
BINARY_LOOP_ISA(div_f64, double, x / y, DENSE_DIV)

/*
 * True division of bool and integers (ops.h): both operands converted to
 * float64, then divided, into a float64 destination (NumPy's true_divide
 * casts them to double first). The conversions are exact but for int64
 * and uint64 values beyond 2^53, which round once to nearest, ties to
 * even, as C's and NumPy's casts do; x / 0 is +-inf, 0 / 0 NaN (IEEE).
 *
 * The conversions are written so that they vectorise at every ISA level:
 * x86-64 converts 32-bit signed integers to double in vectors from SSE2 on
 * (cvtdq2pd), but 64-bit ones only from AVX-512DQ on and unsigned ones
 * from AVX-512F on, and one scalar conversion leaves the loop's divisions
 * scalar too (2^17 int64 quotients: 125 us scalar with AVX2, 77 us as
 * below). So a uint32 is its bits read as int32, plus 2^31; a 64-bit value
 * is hi * 2^32 + lo (hi its high 32 bits, signed for int64, lo its low 32
 * bits, unsigned), two parts that are exact in double (hi * 2^32, plus
 * 2^31 for int64, and lo, less 2^31 for int64), added with one rounding:
 * C's conversion, bit for bit (unit.binops checks it against the cast at
 * the rounding boundaries).
 */
static inline double
f64_of_u32(uint32_t x)
{
	return (double)(int32_t)(x ^ 0x80000000u) + 2147483648.0;
}

static inline double
f64_of_i64(int64_t x)
{
	uint64_t u = (uint64_t)x;
	double hi = (double)(int32_t)(uint32_t)(u >> 32) * 4294967296.0 +
	    2147483648.0;
	double lo = (double)(int32_t)((uint32_t)u ^ 0x80000000u);

	return hi + lo;
}

static inline double
f64_of_u64(uint64_t x)
{
	double hi = f64_of_u32((uint32_t)(x >> 32)) * 4294967296.0;

	return hi + f64_of_u32((uint32_t)x);
}

#define F64_OF(x) ((double)(x))
#define F64_OF_BOOL(x) ((double)((x) != 0))

/* The destination (float64) is a new tensor, or the very bytes of an
 * 8-byte input (kernels.h: an input that overlaps it otherwise was copied
 * first); that one case takes the general loop, element by element. */
#define TRUEDIV_LOOP(name, T, CVT)                                          \
static inline double                                                        \
name##_op(T x, T y)                                                         \
{                                                                           \
	return CVT(x) / CVT(y);                                             \
}                                                                           \
                                                                            \
DENSE_DIV static void                                                       \
name##_vv(double *restrict d, const T *restrict a, const T *restrict b,     \
    int64_t n)                                                              \
{                                                                           \
	UNROLL                                                              \
	for (int64_t i = 0; i < n; i++)                                     \
		d[i] = name##_op(a[i], b[i]);                               \
}                                                                           \
                                                                            \
DENSE_DIV static void                                                       \
name##_vs(double *restrict d, const T *restrict a, double y, int64_t n)     \
{                                                                           \
	UNROLL                                                              \
	for (int64_t i = 0; i < n; i++)                                     \
		d[i] = CVT(a[i]) / y;                                       \
}                                                                           \
                                                                            \
DENSE_DIV static void                                                       \
name##_sv(double *restrict d, double x, const T *restrict b, int64_t n)     \
{                                                                           \
	UNROLL                                                              \
	for (int64_t i = 0; i < n; i++)                                     \
		d[i] = x / CVT(b[i]);                                       \
}                                                                           \
                                                                            \
static bool                                                                 \
name(char *const *p, const int64_t *s, int64_t n, void *arg)                \
{                                                                           \
	const int64_t z = (int64_t)sizeof(T);                               \
	double *d = (double *)(void *)p[0];                                 \
	const T *a = (const T *)(const void *)p[1];                         \
	const T *b = (const T *)(const void *)p[2];                         \
                                                                            \
	(void)arg;                                                          \
	if (s[0] == (int64_t)sizeof(double) && ALIGNED(d, double) &&        \
	    ALIGNED(a, T) && ALIGNED(b, T) && p[1] != p[0] &&               \
	    p[2] != p[0]) {                                                 \
		if (s[1] == z && s[2] == z) {                               \
			name##_vv(d, a, b, n);                              \
			return true;                                        \
		}                                                           \
		if (s[1] == z && s[2] == 0) {                               \
			name##_vs(d, a, CVT(*b), n);                        \
			return true;                                        \
		}                                                           \
		if (s[1] == 0 && s[2] == z) {                               \
			name##_sv(d, CVT(*a), b, n);                        \
			return true;                                        \
		}                                                           \
	}                                                                   \
	for (int64_t i = 0; i < n; i++) {                                   \
		T x, y;                                                     \
		double r;                                                   \
                                                                            \
		memcpy(&x, p[1] + i * s[1], sizeof x);                      \
		memcpy(&y, p[2] + i * s[2], sizeof y);                      \
		r = name##_op(x, y);                                        \
		memcpy(p[0] + i * s[0], &r, sizeof r);                      \
	}                                                                   \
	return true;                                                        \
}

TRUEDIV_LOOP(div_bool, uint8_t, F64_OF_BOOL)
TRUEDIV_LOOP(div_i8, int8_t, F64_OF)
TRUEDIV_LOOP(div_u8, uint8_t, F64_OF)
TRUEDIV_LOOP(div_i16, int16_t, F64_OF)
TRUEDIV_LOOP(div_u16, uint16_t, F64_OF)
TRUEDIV_LOOP(div_i32, int32_t, F64_OF)
TRUEDIV_LOOP(div_u32, uint32_t, f64_of_u32)
TRUEDIV_LOOP(div_i64, int64_t, f64_of_i64)
TRUEDIV_LOOP(div_u64, uint64_t, f64_of_u64)
#undef TRUEDIV_LOOP
#undef F64_OF
#undef F64_OF_BOOL

/* Floor division and modulo (divmod.h): integers through int64_t or
 * uint64_t (exact; the result fits the width, but MIN // -1, which wraps
 * back to MIN in the cast). */
#define FDIV_INT(name, T, W)                                                \
	BINARY_LOOP(floor_div_##name, T,                                    \
	    (T)cow__floor_div_##W(x, y))                                    \
	BINARY_LOOP(mod_##name, T, (T)cow__mod_##W(x, y))
FDIV_INT(i8, int8_t, i64)
FDIV_INT(i16, int16_t, i64)
FDIV_INT(i32, int32_t, i64)
FDIV_INT(i64, int64_t, i64)
FDIV_INT(u8, uint8_t, u64)
FDIV_INT(u16, uint16_t, u64)
FDIV_INT(u32, uint32_t, u64)
FDIV_INT(u64, uint64_t, u64)
#undef FDIV_INT
BINARY_LOOP(floor_div_f32, float, cow__floor_div_f32(x, y))
BINARY_LOOP(floor_div_f64, double, cow__floor_div_f64(x, y))
BINARY_LOOP(mod_f32, float, cow__mod_f32(x, y))
BINARY_LOOP(mod_f64, double, cow__mod_f64(x, y))

#define F16(v) cow__f16_to_f32(v)
#define BF16(v) cow__bf16_to_f32(v)
BINARY_LOOP(sub_f16, uint16_t, cow__f16_from_f32(F16(x) - F16(y)))
BINARY_LOOP(div_f16, uint16_t, cow__f16_from_f32(F16(x) / F16(y)))
BINARY_LOOP(floor_div_f16, uint16_t,
    cow__f16_from_f32(cow__floor_div_f32(F16(x), F16(y))))
BINARY_LOOP(mod_f16, uint16_t,
    cow__f16_from_f32(cow__mod_f32(F16(x), F16(y))))
BINARY_LOOP(sub_bf16, uint16_t, cow__bf16_from_f32(BF16(x) - BF16(y)))
BINARY_LOOP(div_bf16, uint16_t, cow__bf16_from_f32(BF16(x) / BF16(y)))
BINARY_LOOP(floor_div_bf16, uint16_t,
    cow__bf16_from_f32(cow__floor_div_f32(BF16(x), BF16(y))))
BINARY_LOOP(mod_bf16, uint16_t,
    cow__bf16_from_f32(cow__mod_f32(BF16(x), BF16(y))))

/*
 * Complex division, Smith's method in the component type: divide by the
 * larger part of the divisor first, so that no intermediate overflows
 * where the quotient does not. A zero divisor divides each part by +0
 * (infinities or NaN). One operation per statement (no contraction).
 */
#define CDIV(T)                                                             \
	do {                                                                \
		T ar = (T)fabs(y[0]), ai = (T)fabs(y[1]);                   \
                                                                            \
		if (ar >= ai && ar == 0 && ai == 0) {                       \
			r[0] = x[0] / ar;                                   \
			r[1] = x[1] / ar;                                   \
		} else if (ar >= ai) {                                      \
			T q = y[1] / y[0];                                  \
			T dq = y[1] * q;                                    \
			T den = y[0] + dq;                                  \
			T sc = (T)1 / den;                                  \
			T bq = x[1] * q, aq = x[0] * q;                     \
			T nr = x[0] + bq, ni = x[1] - aq;                   \
                                                                            \
			r[0] = nr * sc;                                     \
			r[1] = ni * sc;                                     \
		} else {                                                    \
			T q = y[0] / y[1];                                  \
			T cq = y[0] * q;                                    \
			T den = y[1] + cq;                                  \
			T sc = (T)1 / den;                                  \
			T aq = x[0] * q, bq = x[1] * q;                     \
			T nr = aq + x[1], ni = bq - x[0];                   \
                                                                            \
			r[0] = nr * sc;                                     \
			r[1] = ni * sc;                                     \
		}                                                           \
	} while (0)

COMPLEX_LOOP(sub_c64, float, 2, (r[0] = x[0] - y[0], r[1] = x[1] - y[1]))
COMPLEX_LOOP(sub_c128, double, 2, (r[0] = x[0] - y[0], r[1] = x[1] - y[1]))
COMPLEX_LOOP(div_c64, float, 2, CDIV(float))
COMPLEX_LOOP(div_c128, double, 2, CDIV(double))

/*
 * Comparisons: operands of T, a bool destination (0 or 1). A dense run
 * (the destination dense, each operand dense or a scalar) takes typed
 * loops; the destination is a new tensor, never an operand (kernels.h
 * copies an overlapping input first).
 */
#define COMPARE_LOOP(name, T, EXPR)                                         \
static inline uint8_t                                                       \
name##_op(T x, T y)                                                         \
{                                                                           \
	return (uint8_t)(EXPR);                                             \
}                                                                           \
                                                                            \
DENSE static void                                                           \
name##_dense(uint8_t *restrict d, const T *restrict a, int64_t sa,          \
    const T *restrict b, int64_t sb, int64_t n)                             \
{                                                                           \
	if (sa == 1 && sb == 1) {                                           \
		UNROLL                                                      \
		for (int64_t i = 0; i < n; i++)                             \
			d[i] = name##_op(a[i], b[i]);                       \
	} else if (sa == 1) {                                               \
		T y = *b;                                                   \
                                                                            \
		UNROLL                                                      \
		for (int64_t i = 0; i < n; i++)                             \
			d[i] = name##_op(a[i], y);                          \
	} else {                                                            \
		T x = *a;                                                   \
                                                                            \
		UNROLL                                                      \
		for (int64_t i = 0; i < n; i++)                             \
			d[i] = name##_op(x, b[i]);                          \
	}                                                                   \
}                                                                           \
                                                                            \
static bool                                                                 \
name(char *const *p, const int64_t *s, int64_t n, void *arg)                \
{                                                                           \
	const int64_t z = (int64_t)sizeof(T);                               \
                                                                            \
	(void)arg;                                                          \
	if (s[0] == 1 && (s[1] == z || s[1] == 0) &&                        \
	    (s[2] == z || s[2] == 0) && (s[1] != 0 || s[2] != 0) &&         \
	    ALIGNED(p[1], T) && ALIGNED(p[2], T)) {                         \
		name##_dense((uint8_t *)(void *)p[0],                       \
		    (const T *)(const void *)p[1], s[1] / z,                \
		    (const T *)(const void *)p[2], s[2] / z, n);            \
		return true;                                                \
	}                                                                   \
	for (int64_t i = 0; i < n; i++) {                                   \
		T x, y;                                                     \
		uint8_t r;                                                  \
                                                                            \
		memcpy(&x, p[1] + i * s[1], sizeof x);                      \
		memcpy(&y, p[2] + i * s[2], sizeof y);                      \
		r = name##_op(x, y);                                        \
		memcpy(p[0] + i * s[0], &r, sizeof r);                      \
	}                                                                   \
	return true;                                                        \
}

/* One comparison over every real dtype: Q is the dtype's loop suffix, T
 * its element type, V(v) its value as compared (bool as true/false,
 * float16 and bfloat16 as float: exact). */
#define COMPARE_ALL(Q, T, V)                                                \
	COMPARE_LOOP(eq_##Q, T, V(x) == V(y))                               \
	COMPARE_LOOP(ne_##Q, T, V(x) != V(y))                               \
	COMPARE_LOOP(lt_##Q, T, V(x) < V(y))                                \
	COMPARE_LOOP(le_##Q, T, V(x) <= V(y))                               \
	COMPARE_LOOP(gt_##Q, T, V(x) > V(y))                                \
	COMPARE_LOOP(ge_##Q, T, V(x) >= V(y))
#define ID(v) (v)
#define TRUTH(v) ((v) != 0)
COMPARE_ALL(bool, uint8_t, TRUTH)
COMPARE_ALL(i8, int8_t, ID)
COMPARE_ALL(u8, uint8_t, ID)
COMPARE_ALL(i16, int16_t, ID)
COMPARE_ALL(u16, uint16_t, ID)
COMPARE_ALL(i32, int32_t, ID)
COMPARE_ALL(u32, uint32_t, ID)
COMPARE_ALL(i64, int64_t, ID)
COMPARE_ALL(u64, uint64_t, ID)
COMPARE_ALL(f16, uint16_t, F16)
COMPARE_ALL(bf16, uint16_t, BF16)
COMPARE_ALL(f32, float, ID)
COMPARE_ALL(f64, double, ID)
#undef COMPARE_ALL
#undef ID
#undef TRUTH
#undef F16
#undef BF16

/*
 * Complex comparisons, NumPy's order: lexicographic (real parts first,
 * then imaginary parts), where the real parts decide only when neither
 * imaginary part is NaN. eq: both parts equal; ne: its negation.
 */
#define CLESS(T, xr, xi, yr, yi, OP)                                        \
	(((xr) < (yr) && (xi) == (xi) && (yi) == (yi)) ||                   \
	    ((xr) == (yr) && (xi) OP (yi)))
#define COMPLEX_COMPARE(name, T, EXPR)                                      \
static bool                                                                 \
name(char *const *p, const int64_t *s, int64_t n, void *arg)                \
{                                                                           \
	(void)arg;                                                          \
	for (int64_t i = 0; i < n; i++) {                                   \
		T x[2], y[2];                                               \
		uint8_t r;                                                  \
                                                                            \
		memcpy(x, p[1] + i * s[1], sizeof x);                       \
		memcpy(y, p[2] + i * s[2], sizeof y);                       \
		r = (uint8_t)(EXPR);                                        \
		memcpy(p[0] + i * s[0], &r, sizeof r);                      \
	}                                                                   \
	return true;                                                        \
}
#define COMPLEX_COMPARE_ALL(Q, T)                                           \
	COMPLEX_COMPARE(eq_##Q, T, x[0] == y[0] && x[1] == y[1])            \
	COMPLEX_COMPARE(ne_##Q, T, !(x[0] == y[0] && x[1] == y[1]))         \
	COMPLEX_COMPARE(lt_##Q, T, CLESS(T, x[0], x[1], y[0], y[1], <))     \
	COMPLEX_COMPARE(le_##Q, T, CLESS(T, x[0], x[1], y[0], y[1], <=))    \
	COMPLEX_COMPARE(gt_##Q, T, CLESS(T, y[0], y[1], x[0], x[1], <))     \
	COMPLEX_COMPARE(ge_##Q, T, CLESS(T, y[0], y[1], x[0], x[1], <=))
COMPLEX_COMPARE_ALL(c64, float)
COMPLEX_COMPARE_ALL(c128, double)
#undef COMPLEX_COMPARE_ALL
#undef COMPLEX_COMPARE
#undef CLESS

const cow__iter_fn cow__loops_sub[COW_DTYPE_COUNT] = {
	[COW_DTYPE_INT8] = sub_x8, [COW_DTYPE_UINT8] = sub_x8,
	[COW_DTYPE_INT16] = sub_x16, [COW_DTYPE_UINT16] = sub_x16,
	[COW_DTYPE_INT32] = sub_x32, [COW_DTYPE_UINT32] = sub_x32,
	[COW_DTYPE_INT64] = sub_x64, [COW_DTYPE_UINT64] = sub_x64,
	[COW_DTYPE_FLOAT16] = sub_f16, [COW_DTYPE_BFLOAT16] = sub_bf16,
	[COW_DTYPE_FLOAT32] = sub_f32, [COW_DTYPE_FLOAT64] = sub_f64,
	[COW_DTYPE_COMPLEX64] = sub_c64, [COW_DTYPE_COMPLEX128] = sub_c128,
};

const cow__iter_fn cow__loops_div[COW_DTYPE_COUNT] = {
	[COW_DTYPE_BOOL] = div_bool,
	[COW_DTYPE_INT8] = div_i8, [COW_DTYPE_UINT8] = div_u8,
	[COW_DTYPE_INT16] = div_i16, [COW_DTYPE_UINT16] = div_u16,
	[COW_DTYPE_INT32] = div_i32, [COW_DTYPE_UINT32] = div_u32,
	[COW_DTYPE_INT64] = div_i64, [COW_DTYPE_UINT64] = div_u64,
	[COW_DTYPE_FLOAT16] = div_f16, [COW_DTYPE_BFLOAT16] = div_bf16,
	[COW_DTYPE_FLOAT32] = div_f32, [COW_DTYPE_FLOAT64] = div_f64,
	[COW_DTYPE_COMPLEX64] = div_c64, [COW_DTYPE_COMPLEX128] = div_c128,
};

#define INT_TABLE(op)                                                       \
	[COW_DTYPE_INT8] = op##_i8, [COW_DTYPE_UINT8] = op##_u8,            \
	[COW_DTYPE_INT16] = op##_i16, [COW_DTYPE_UINT16] = op##_u16,        \
	[COW_DTYPE_INT32] = op##_i32, [COW_DTYPE_UINT32] = op##_u32,        \
	[COW_DTYPE_INT64] = op##_i64, [COW_DTYPE_UINT64] = op##_u64
#define FLOAT_TABLE(op)                                                     \
	[COW_DTYPE_FLOAT16] = op##_f16, [COW_DTYPE_BFLOAT16] = op##_bf16,   \
	[COW_DTYPE_FLOAT32] = op##_f32, [COW_DTYPE_FLOAT64] = op##_f64

const cow__iter_fn cow__loops_floor_div[COW_DTYPE_COUNT] = {
	INT_TABLE(floor_div), FLOAT_TABLE(floor_div),
};

const cow__iter_fn cow__loops_mod[COW_DTYPE_COUNT] = {
	INT_TABLE(mod), FLOAT_TABLE(mod),
};

#define COMPARE_TABLE(op)                                                   \
const cow__iter_fn cow__loops_##op[COW_DTYPE_COUNT] = {                     \
	[COW_DTYPE_BOOL] = op##_bool, INT_TABLE(op), FLOAT_TABLE(op),       \
	[COW_DTYPE_COMPLEX64] = op##_c64, [COW_DTYPE_COMPLEX128] = op##_c128, \
};
COMPARE_TABLE(eq)
COMPARE_TABLE(ne)
COMPARE_TABLE(lt)
COMPARE_TABLE(le)
COMPARE_TABLE(gt)
COMPARE_TABLE(ge)
#undef COMPARE_TABLE
#undef INT_TABLE
#undef FLOAT_TABLE

const cow__iter_fn cow__loops_add[COW_DTYPE_COUNT] = {
	[COW_DTYPE_BOOL] = add_bool,
	[COW_DTYPE_INT8] = add_x8, [COW_DTYPE_UINT8] = add_x8,
	[COW_DTYPE_INT16] = add_x16, [COW_DTYPE_UINT16] = add_x16,
	[COW_DTYPE_INT32] = add_x32, [COW_DTYPE_UINT32] = add_x32,
	[COW_DTYPE_INT64] = add_x64, [COW_DTYPE_UINT64] = add_x64,
	[COW_DTYPE_FLOAT16] = add_f16, [COW_DTYPE_BFLOAT16] = add_bf16,
	[COW_DTYPE_FLOAT32] = add_f32, [COW_DTYPE_FLOAT64] = add_f64,
	[COW_DTYPE_COMPLEX64] = add_c64, [COW_DTYPE_COMPLEX128] = add_c128,
};

const cow__iter_fn cow__loops_mul[COW_DTYPE_COUNT] = {
	[COW_DTYPE_BOOL] = mul_bool,
	[COW_DTYPE_INT8] = mul_x8, [COW_DTYPE_UINT8] = mul_x8,
	[COW_DTYPE_INT16] = mul_x16, [COW_DTYPE_UINT16] = mul_x16,
	[COW_DTYPE_INT32] = mul_x32, [COW_DTYPE_UINT32] = mul_x32,
	[COW_DTYPE_INT64] = mul_x64, [COW_DTYPE_UINT64] = mul_x64,
	[COW_DTYPE_FLOAT16] = mul_f16, [COW_DTYPE_BFLOAT16] = mul_bf16,
	[COW_DTYPE_FLOAT32] = mul_f32, [COW_DTYPE_FLOAT64] = mul_f64,
	[COW_DTYPE_COMPLEX64] = mul_c64, [COW_DTYPE_COMPLEX128] = mul_c128,
};

const cow__iter_fn cow__loops_neg[COW_DTYPE_COUNT] = {
	[COW_DTYPE_BOOL] = NULL,
	[COW_DTYPE_INT8] = neg_x8, [COW_DTYPE_UINT8] = neg_x8,
	[COW_DTYPE_INT16] = neg_x16, [COW_DTYPE_UINT16] = neg_x16,
	[COW_DTYPE_INT32] = neg_x32, [COW_DTYPE_UINT32] = neg_x32,
	[COW_DTYPE_INT64] = neg_x64, [COW_DTYPE_UINT64] = neg_x64,
	[COW_DTYPE_FLOAT16] = neg_f16, [COW_DTYPE_BFLOAT16] = neg_bf16,
	[COW_DTYPE_FLOAT32] = neg_f32, [COW_DTYPE_FLOAT64] = neg_f64,
	[COW_DTYPE_COMPLEX64] = neg_c64, [COW_DTYPE_COMPLEX128] = neg_c128,
};

#define COPY_RUN(T)                                                         \
	do {                                                                \
		for (int64_t i = 0; i < n; i++) {                           \
			T x;                                                \
                                                                            \
			memcpy(&x, p[1] + i * s[1], sizeof x);              \
			memcpy(p[0] + i * s[0], &x, sizeof x);              \
		}                                                           \
	} while (0)

/* Fill a dense run: one value (a scalar, or a broadcast element that is
 * not in the run: kernels.h) stored n times; false: not aligned. */
#define FILL_DENSE(T)                                                       \
	do {                                                                \
		T *restrict d = (T *)(void *)dst;                           \
		T x;                                                        \
                                                                            \
		if (!ALIGNED(d, T))                                         \
			return false;                                       \
		memcpy(&x, v, sizeof x);                                    \
		for (int64_t i = 0; i < n; i++)                             \
			d[i] = x;                                           \
	} while (0)

DENSE static bool
fill_dense(char *dst, const char *v, int64_t size, int64_t n)
{
	switch (size) {
	case 1:
		memset(dst, (unsigned char)*v, (size_t)n);
		return true;
	case 2:
		FILL_DENSE(uint16_t);
		return true;
	case 4:
		FILL_DENSE(uint32_t);
		return true;
	case 8:
		FILL_DENSE(uint64_t);
		return true;
	default:
		return false;
	}
}

bool
cow__loop_copy_same(char *const *p, const int64_t *s, int64_t n, void *arg)
{
	int64_t size = (int64_t)*(const size_t *)arg;
	cow__scalar_t v;

	if (s[0] == size && s[1] == size) {
		/* One dense run: the regions may be identical (copy onto
		 * itself), hence memmove. */
		memmove(p[0], p[1], (size_t)(n * size));
		return true;
	}
	if (s[0] == size && s[1] == 0 && fill_dense(p[0], p[1], size, n))
		return true;
	/* Strided: a fixed-size copy per element, which the compiler inlines
	 * (a memcpy of a run-time size is a call per element). */
	switch (size) {
	case 1:
		COPY_RUN(uint8_t);
		break;
	case 2:
		COPY_RUN(uint16_t);
		break;
	case 4:
		COPY_RUN(uint32_t);
		break;
	case 8:
		COPY_RUN(uint64_t);
		break;
	default:
		for (int64_t i = 0; i < n; i++) {
			memcpy(&v, p[1] + i * s[1], (size_t)size);
			memcpy(p[0] + i * s[0], &v, (size_t)size);
		}
	}
	return true;
}

/*
 * Dense runs of the conversions whose C conversion is the rule of ops.h
 * (one rounding, to nearest even; exact where the target holds the value),
 * in a typed loop the compiler vectorises; every other pair, and every
 * other run, goes through cow__convert_n (dtype.c), which the rules are
 * written in. float64 to float32 keeps dtype.c's guard: C leaves an
 * out-of-range conversion undefined.
 */
#define CONVERT_DENSE(DT, ST, EXPR)                                         \
	do {                                                                \
		DT *restrict d = (DT *)(void *)p[0];                        \
		const ST *restrict a = (const ST *)(const void *)p[1];      \
                                                                            \
		if (s[0] != (int64_t)sizeof(DT) ||                          \
		    s[1] != (int64_t)sizeof(ST) || !ALIGNED(d, DT) ||       \
		    !ALIGNED(a, ST))                                        \
			break;                                              \
		for (int64_t i = 0; i < n; i++) {                           \
			ST x = a[i];                                        \
			d[i] = (DT)(EXPR);                                  \
		}                                                           \
		return true;                                                \
	} while (0)

#define PAIR(d, s) ((unsigned)(d) * COW_DTYPE_COUNT + (unsigned)(s))

bool
cow__loop_convert(char *const *p, const int64_t *s, int64_t n, void *arg)
{
	const struct cow__convert_arg *c = arg;

	switch (PAIR(c->dst, c->src)) {
	case PAIR(COW_DTYPE_FLOAT64, COW_DTYPE_FLOAT32):
		CONVERT_DENSE(double, float, x);
		break;
	case PAIR(COW_DTYPE_FLOAT32, COW_DTYPE_FLOAT64):
		CONVERT_DENSE(float, double, cow__f64_to_f32(x));
		break;
	case PAIR(COW_DTYPE_FLOAT32, COW_DTYPE_FLOAT16):
		CONVERT_DENSE(float, uint16_t, cow__f16_to_f32(x));
		break;
	case PAIR(COW_DTYPE_FLOAT64, COW_DTYPE_FLOAT16):
		CONVERT_DENSE(double, uint16_t, cow__f16_to_f32(x));
		break;
	case PAIR(COW_DTYPE_FLOAT16, COW_DTYPE_FLOAT32):
		CONVERT_DENSE(uint16_t, float, cow__f16_from_f32(x));
		break;
	case PAIR(COW_DTYPE_FLOAT32, COW_DTYPE_BFLOAT16):
		CONVERT_DENSE(float, uint16_t, cow__bf16_to_f32(x));
		break;
	case PAIR(COW_DTYPE_FLOAT64, COW_DTYPE_BFLOAT16):
		CONVERT_DENSE(double, uint16_t, cow__bf16_to_f32(x));
		break;
	case PAIR(COW_DTYPE_BFLOAT16, COW_DTYPE_FLOAT32):
		CONVERT_DENSE(uint16_t, float, cow__bf16_from_f32(x));
		break;
	case PAIR(COW_DTYPE_FLOAT64, COW_DTYPE_INT32):
		CONVERT_DENSE(double, int32_t, x);
		break;
	case PAIR(COW_DTYPE_FLOAT32, COW_DTYPE_INT32):
		CONVERT_DENSE(float, int32_t, x);
		break;
	case PAIR(COW_DTYPE_FLOAT64, COW_DTYPE_INT64):
		CONVERT_DENSE(double, int64_t, x);
		break;
	case PAIR(COW_DTYPE_INT64, COW_DTYPE_INT32):
		CONVERT_DENSE(int64_t, int32_t, x);
		break;
	default:
		break;
	}
	cow__convert_n(c->dst, p[0], s[0], c->src, p[1], s[1], n);
	return true;
}

/*
 * A run every element of which goes to one output element (s[0] is 0: a
 * full sum, or a sum over the innermost dimension) is summed by RUN_SUM,
 * or RUN_SUM_dense when it is dense (below), and added to that element;
 * otherwise each input element is added to its own output element, in
 * index order. T: the accumulator; LOAD: one element as a T.
 */
#define SUM_RUN(T, LOAD, RUN_SUM, SRC_SIZE)                                 \
	do {                                                                \
		T acc;                                                      \
                                                                            \
		if (s[0] == 0) {                                            \
			memcpy(&acc, p[0], sizeof acc);                     \
			acc += s[1] == (SRC_SIZE) ?                         \
			    RUN_SUM##_dense(p[1], n, s[1]) :                \
			    RUN_SUM(p[1], n, s[1]);                         \
			memcpy(p[0], &acc, sizeof acc);                     \
			return true;                                        \
		}                                                           \
		for (int64_t i = 0; i < n; i++) {                           \
			memcpy(&acc, p[0] + i * s[0], sizeof acc);          \
			acc += (T)LOAD(p[1] + i * s[1]);                    \
			memcpy(p[0] + i * s[0], &acc, sizeof acc);          \
		}                                                           \
	} while (0)

/* One element of each dtype a sum reads, as its accumulator type. */
#define LOADER(name, T, R, EXPR)                                            \
static R                                                                    \
name(const char *p)                                                         \
{                                                                           \
	T x;                                                                \
                                                                            \
	memcpy(&x, p, sizeof x);                                            \
	return (R)(EXPR);                                                   \
}

LOADER(load_bool, uint8_t, uint64_t, x != 0)
LOADER(load_u8, uint8_t, uint64_t, x)
LOADER(load_u16, uint16_t, uint64_t, x)
LOADER(load_u32, uint32_t, uint64_t, x)
LOADER(load_u64, uint64_t, uint64_t, x)
/* Signed: sign-extended, then the two's complement bits. */
LOADER(load_i8, int8_t, uint64_t, (int64_t)x)
LOADER(load_i16, int16_t, uint64_t, (int64_t)x)
LOADER(load_i32, int32_t, uint64_t, (int64_t)x)
LOADER(load_i64, int64_t, uint64_t, x)
LOADER(load_f16, uint16_t, float, cow__f16_to_f32(x))
LOADER(load_bf16, uint16_t, float, cow__bf16_to_f32(x))
LOADER(load_f32, float, float, x)
LOADER(load_f64, double, double, x)

/*
 * Floating runs are summed pairwise, exactly as NumPy 1.24 does
 * (pairwise_sum in its loops_utils.h): fewer than 8 elements in index
 * order from +0; up to 128 in eight interleaved partial sums (element i
 * into sum i % 8, the tail of n % 8 added last to their combination
 * ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))); longer runs split
 * in two (the first half n / 2 rounded down to a multiple of 8) and summed
 * recursively. Error bound: ops.h. The _dense version's stride is a
 * constant, which lets the compiler vectorise it.
 */
#define PAIRWISE_BODY(name, R, LOAD, S)                                     \
{                                                                           \
	int64_t i, n2;                                                      \
	R r[8], res;                                                        \
                                                                            \
	if (n < 8) {                                                        \
		res = 0;                                                    \
		for (i = 0; i < n; i++)                                     \
			res += LOAD(a + i * (S));                           \
		return res;                                                 \
	}                                                                   \
	if (n <= 128) {                                                     \
		for (int j = 0; j < 8; j++)                                 \
			r[j] = LOAD(a + j * (S));                           \
		for (i = 8; i < n - n % 8; i += 8)                          \
			for (int j = 0; j < 8; j++)                         \
				r[j] += LOAD(a + (i + j) * (S));            \
		res = ((r[0] + r[1]) + (r[2] + r[3])) +                     \
		    ((r[4] + r[5]) + (r[6] + r[7]));                        \
		for (; i < n; i++)                                          \
			res += LOAD(a + i * (S));                           \
		return res;                                                 \
	}                                                                   \
	n2 = n / 2;                                                         \
	n2 -= n2 % 8;                                                       \
	return name(a, n2, s) + name(a + n2 * (S), n - n2, s);              \
}

/* name(a, n, s): a run of stride s bytes; name_dense(a, n, s): s is
 * SRC_SIZE, a constant the compiler builds on. */
#define PAIRWISE(name, R, LOAD, SRC_SIZE)                                   \
static R                                                                    \
name(const char *a, int64_t n, int64_t s)                                   \
PAIRWISE_BODY(name, R, LOAD, s)                                             \
                                                                            \
DENSE static R                                                              \
name##_dense(const char *a, int64_t n, int64_t s)                           \
PAIRWISE_BODY(name##_dense, R, LOAD, (int64_t)(SRC_SIZE))

PAIRWISE(pairwise_f16, float, load_f16, 2)
PAIRWISE(pairwise_bf16, float, load_bf16, 2)
PAIRWISE(pairwise_f32, float, load_f32, 4)
PAIRWISE(pairwise_f64, double, load_f64, 8)

/* Integer sums wrap modulo 2^64: any order gives the same bits. */
#define INDEX_ORDER(name, LOAD, SRC_SIZE)                                   \
static uint64_t                                                             \
name(const char *a, int64_t n, int64_t s)                                   \
{                                                                           \
	uint64_t res = 0;                                                   \
                                                                            \
	for (int64_t i = 0; i < n; i++)                                     \
		res += LOAD(a + i * s);                                     \
	return res;                                                         \
}                                                                           \
                                                                            \
DENSE static uint64_t                                                       \
name##_dense(const char *a, int64_t n, int64_t s)                           \
{                                                                           \
	uint64_t res = 0;                                                   \
                                                                            \
	(void)s;                                                            \
                                                                            \
	for (int64_t i = 0; i < n; i++)                                     \
		res += LOAD(a + i * (SRC_SIZE));                            \
	return res;                                                         \
}

INDEX_ORDER(sum_bool, load_bool, 1)
INDEX_ORDER(sum_u8, load_u8, 1)
INDEX_ORDER(sum_u16, load_u16, 2)
INDEX_ORDER(sum_u32, load_u32, 4)
INDEX_ORDER(sum_u64, load_u64, 8)
INDEX_ORDER(sum_i8, load_i8, 1)
INDEX_ORDER(sum_i16, load_i16, 2)
INDEX_ORDER(sum_i32, load_i32, 4)
INDEX_ORDER(sum_i64, load_i64, 8)

/*
 * Complex runs are summed pairwise as NumPy 1.24 sums them (its complex
 * pairwise_sum, over the interleaved parts): the scheme above with four
 * partial sums of complex values instead of eight: fewer than 4 elements
 * in index order from +0; up to 64 in four partial sums (element i into
 * sum i % 4, combined (s0 + s1) + (s2 + s3), the tail of n % 4 added
 * last); longer runs split at n / 2 rounded down to a multiple of 4. The
 * parts add independently. @out receives the sum.
 */
#define CPAIRWISE_BODY(name, T, S)                                          \
{                                                                           \
	int64_t i, n2;                                                      \
	T r[4][2], x[2];                                                    \
                                                                            \
	if (n <= 64) {                                                      \
		out[0] = out[1] = 0;                                        \
		i = 0;                                                      \
		if (n >= 4) {                                               \
			for (int j = 0; j < 4; j++)                         \
				memcpy(r[j], a + j * (S), sizeof r[j]);     \
			for (i = 4; i < n - n % 4; i += 4)                  \
				for (int j = 0; j < 4; j++) {               \
					memcpy(x, a + (i + j) * (S),        \
					    sizeof x);                      \
					r[j][0] += x[0];                    \
					r[j][1] += x[1];                    \
				}                                           \
			out[0] = (r[0][0] + r[1][0]) + (r[2][0] + r[3][0]); \
			out[1] = (r[0][1] + r[1][1]) + (r[2][1] + r[3][1]); \
		}                                                           \
		for (; i < n; i++) {                                        \
			memcpy(x, a + i * (S), sizeof x);                   \
			out[0] += x[0];                                     \
			out[1] += x[1];                                     \
		}                                                           \
		return;                                                     \
	}                                                                   \
	n2 = n / 2;                                                         \
	n2 -= n2 % 4;                                                       \
	name(a, n2, s, out);                                                \
	name(a + n2 * (S), n - n2, s, x);                                   \
	out[0] += x[0];                                                     \
	out[1] += x[1];                                                     \
}

#define CPAIRWISE(name, T)                                                  \
static void                                                                 \
name(const char *a, int64_t n, int64_t s, T out[2])                         \
CPAIRWISE_BODY(name, T, s)                                                  \
                                                                            \
DENSE static void                                                           \
name##_dense(const char *a, int64_t n, int64_t s, T out[2])                 \
CPAIRWISE_BODY(name##_dense, T, (int64_t)(2 * sizeof(T)))

CPAIRWISE(pairwise_c64, float)
CPAIRWISE(pairwise_c128, double)

/* Complex: T[2] accumulated componentwise; a run into one output element
 * pairwise (above), otherwise each element into its own, in index order. */
#define SUM_RUN_COMPLEX(T, RUN_SUM)                                         \
	do {                                                                \
		T acc[2], x[2];                                             \
                                                                            \
		if (s[0] == 0) {                                            \
			if (s[1] == (int64_t)(2 * sizeof(T)))               \
				RUN_SUM##_dense(p[1], n, s[1], x);          \
			else                                                \
				RUN_SUM(p[1], n, s[1], x);                  \
			memcpy(acc, p[0], sizeof acc);                      \
			acc[0] += x[0];                                     \
			acc[1] += x[1];                                     \
			memcpy(p[0], acc, sizeof acc);                      \
			return true;                                        \
		}                                                           \
		for (int64_t i = 0; i < n; i++) {                           \
			char *q = p[0] + i * s[0];                          \
                                                                            \
			memcpy(acc, q, sizeof acc);                         \
			memcpy(x, p[1] + i * s[1], sizeof x);               \
			acc[0] += x[0];                                     \
			acc[1] += x[1];                                     \
			memcpy(q, acc, sizeof acc);                         \
		}                                                           \
	} while (0)

static bool
sum_loop(char *const *p, const int64_t *s, int64_t n, cow_dtype_t src)
{
	/* Integers and bools sum into 64 bits, wrapping; float16 and
	 * bfloat16 into a float32 scratch (cow__kernel_sum rounds it once). */
	switch (src) {
	case COW_DTYPE_BOOL:
		SUM_RUN(uint64_t, load_bool, sum_bool, 1);
		break;
	case COW_DTYPE_UINT8:
		SUM_RUN(uint64_t, load_u8, sum_u8, 1);
		break;
	case COW_DTYPE_UINT16:
		SUM_RUN(uint64_t, load_u16, sum_u16, 2);
		break;
	case COW_DTYPE_UINT32:
		SUM_RUN(uint64_t, load_u32, sum_u32, 4);
		break;
	case COW_DTYPE_UINT64:
		SUM_RUN(uint64_t, load_u64, sum_u64, 8);
		break;
	case COW_DTYPE_INT8:
		SUM_RUN(uint64_t, load_i8, sum_i8, 1);
		break;
	case COW_DTYPE_INT16:
		SUM_RUN(uint64_t, load_i16, sum_i16, 2);
		break;
	case COW_DTYPE_INT32:
		SUM_RUN(uint64_t, load_i32, sum_i32, 4);
		break;
	case COW_DTYPE_INT64:
		SUM_RUN(uint64_t, load_i64, sum_i64, 8);
		break;
	case COW_DTYPE_FLOAT16:
		SUM_RUN(float, load_f16, pairwise_f16, 2);
		break;
	case COW_DTYPE_BFLOAT16:
		SUM_RUN(float, load_bf16, pairwise_bf16, 2);
		break;
	case COW_DTYPE_FLOAT32:
		SUM_RUN(float, load_f32, pairwise_f32, 4);
		break;
	case COW_DTYPE_FLOAT64:
		SUM_RUN(double, load_f64, pairwise_f64, 8);
		break;
	case COW_DTYPE_COMPLEX64:
		SUM_RUN_COMPLEX(float, pairwise_c64);
		break;
	case COW_DTYPE_COMPLEX128:
		SUM_RUN_COMPLEX(double, pairwise_c128);
		break;
	case COW_DTYPE_INVALID: /* never a tensor's dtype */
		break;
	}
	return true;
}

bool
cow__loop_sum(char *const *p, const int64_t *s, int64_t n, void *arg)
{
	const struct cow__sum_arg *a = arg;
	int64_t k = a->run;

	if (k <= 0 || s[0] != 0 || n <= k)
		return sum_loop(p, s, n, a->src);
	for (int64_t i = 0; i < n; i += k) {
		char *q[2] = {p[0], p[1] + i * s[1]};

		(void)sum_loop(q, s, n - i < k ? n - i : k, a->src);
	}
	return true;
}

/* Stop at the first pair of elements (T[N] each) for which SAME fails. */
#define EQUAL_RUN(T, N, SAME)                                               \
	do {                                                                \
		for (int64_t i = 0; i < n; i++) {                           \
			T x[N], y[N];                                       \
                                                                            \
			memcpy(x, p[0] + i * s[0], sizeof x);               \
			memcpy(y, p[1] + i * s[1], sizeof y);               \
			if (!(SAME)) {                                      \
				e->equal = false;                           \
				return false;                               \
			}                                                   \
		}                                                           \
	} while (0)

bool
cow__loop_equal(char *const *p, const int64_t *s, int64_t n, void *arg)
{
	struct cow__equal_arg *e = arg;

	/* Integers compare their bits (bools as true/false); floating
	 * values as numbers (NaN unequal, -0 == 0), complex ones by part. */
	switch (e->dtype) {
	case COW_DTYPE_BOOL:
		EQUAL_RUN(uint8_t, 1, (x[0] != 0) == (y[0] != 0));
		break;
	case COW_DTYPE_INT8:
	case COW_DTYPE_UINT8:
		EQUAL_RUN(uint8_t, 1, x[0] == y[0]);
		break;
	case COW_DTYPE_INT16:
	case COW_DTYPE_UINT16:
		EQUAL_RUN(uint16_t, 1, x[0] == y[0]);
		break;
	case COW_DTYPE_INT32:
	case COW_DTYPE_UINT32:
		EQUAL_RUN(uint32_t, 1, x[0] == y[0]);
		break;
	case COW_DTYPE_INT64:
	case COW_DTYPE_UINT64:
		EQUAL_RUN(uint64_t, 1, x[0] == y[0]);
		break;
	case COW_DTYPE_FLOAT16:
		EQUAL_RUN(uint16_t, 1,
		    cow__f16_to_f32(x[0]) == cow__f16_to_f32(y[0]));
		break;
	case COW_DTYPE_BFLOAT16:
		EQUAL_RUN(uint16_t, 1,
		    cow__bf16_to_f32(x[0]) == cow__bf16_to_f32(y[0]));
		break;
	case COW_DTYPE_FLOAT32:
		EQUAL_RUN(float, 1, x[0] == y[0]);
		break;
	case COW_DTYPE_FLOAT64:
		EQUAL_RUN(double, 1, x[0] == y[0]);
		break;
	case COW_DTYPE_COMPLEX64:
		EQUAL_RUN(float, 2, x[0] == y[0] && x[1] == y[1]);
		break;
	case COW_DTYPE_COMPLEX128:
		EQUAL_RUN(double, 2, x[0] == y[0] && x[1] == y[1]);
		break;
	case COW_DTYPE_INVALID: /* never a tensor's dtype */
		break;
	}
	return true;
}
