/*
 * dtype_table.c - prints what cowstore computes over a fixed grid of
 * values per dtype, for check_numpy.py to recompute with NumPy:
 *
 *   grid DTYPE HEX...           the inputs, as stored (the element's bytes
 *                               read as an unsigned integer of its width;
 *                               complex: REHEX:IMHEX)
 *   conv SRC DST I HEX          grid[SRC][I] converted by cow_tensor_copy_
 *   add DTYPE I J HEX           grid[I] + grid[J] (cow_tensor_add)
 *   mul DTYPE I J HEX           grid[I] * grid[J] (cow_tensor_mul)
 *   neg DTYPE I HEX             -grid[I] (cow_tensor_neg; not bool)
 *   sum DTYPE RDTYPE I N HEX    grid[I .. I+N-1] summed (cow_tensor_sum_dim
 *                               over windows of 3; N = all: cow_tensor_sum)
 *   rep DTYPE RDTYPE I K HEX    grid[I] summed K times (an expanded view)
 *
 * Only the public API. Exits non-zero if a call fails.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cowstore/cowstore.h>
#include <cowstore/ops.h>
#include <cowstore/tensor.h>

#define MAXN 64
#define REP 3000

static void
check(cow_status_t st, const char *what)
{
	if (st != COW_OK) {
		fprintf(stderr, "dtype_table: %s: %s (%s)\n", what,
		    cow_status_str(st), cow_last_error());
		exit(1);
	}
}

/* The inputs: raw elements of each dtype. */
struct grid {
	cow_dtype_t dtype;
	int n;
	unsigned char bytes[MAXN * 16];
};

#define DEF(T, ...)                                                         \
	do {                                                                \
		static const T v[] = {__VA_ARGS__};                         \
                                                                            \
		g->n = (int)(sizeof v / sizeof v[0]);                       \
		memcpy(g->bytes, v, sizeof v);                              \
	} while (0)

/* Corner cases: limits, signed zeros, infinities, NaN (quiet, both signs),
 * subnormals, ties of float16 (11 bits) and bfloat16 (8 bits) rounding,
 * values that round differently when rounded twice (through float32 or
 * double), saturation bounds of every integer type. */
static void
make_grid(struct grid *g, cow_dtype_t dtype)
{
	g->dtype = dtype;
	switch (dtype) {
	case COW_DTYPE_BOOL:
		DEF(uint8_t, 0, 1);
		break;
	case COW_DTYPE_INT8:
		DEF(int8_t, 0, 1, -1, 2, 127, -128, 100, -100, 7, -3);
		break;
	case COW_DTYPE_UINT8:
		DEF(uint8_t, 0, 1, 2, 127, 128, 255, 200, 7);
		break;
	case COW_DTYPE_INT16:
		DEF(int16_t, 0, 1, -1, 2, 32767, -32768, 1000, -1000, 255, 256,
		    -257, 2049, 2051, 257, 259);
		break;
	case COW_DTYPE_UINT16:
		DEF(uint16_t, 0, 1, 2, 32767, 32768, 65535, 1000, 256, 2049,
		    2051, 257, 65520, 65519);
		break;
	case COW_DTYPE_INT32:
		DEF(int32_t, 0, 1, -1, 2, INT32_MAX, INT32_MIN, 65536, -65537,
		    16777217, -16777217, 2049, 33554435, 65520, -65519);
		break;
	case COW_DTYPE_UINT32:
		DEF(uint32_t, 0, 1, 2, UINT32_MAX, 0x80000000u, 65535, 16777217,
		    UINT32_MAX - 1, 2049, 0x80000080u, 0x80800001u);
		break;
	case COW_DTYPE_INT64:
		DEF(int64_t, 0, 1, -1, 2, INT64_MAX, INT64_MIN,
		    ((int64_t)1 << 53) + 1, -(((int64_t)1 << 53) + 1), 16777217,
		    2049, 257, 259, (int64_t)0x4000004000000001,
		    (int64_t)0x4040000000000001, -(int64_t)0x4040000000000001,
		    (int64_t)0x0020000020000001);
		break;
	case COW_DTYPE_UINT64:
		DEF(uint64_t, 0, 1, 2, UINT64_MAX, (uint64_t)1 << 63,
		    ((uint64_t)1 << 63) + 1, 0x8000008000000001u,
		    0xc040000000000001u, 12345678901234567890u, 257,
		    0x7fffffffffffffffu, 0xfffffffffffff800u, 0x8080000000000001u,
		    0xfffffffffffff801u);
		break;
	case COW_DTYPE_FLOAT16:
		/* 0 -0 1 -1 max -max inf -inf nan -nan min-subnormal
		 * max-subnormal min-normal 1/3 pi 100 32768 1+ulp -10 nan
		 * with payload 2 0.5 */
		DEF(uint16_t, 0x0000, 0x8000, 0x3c00, 0xbc00, 0x7bff, 0xfbff,
		    0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x0001, 0x03ff, 0x0400,
		    0x3555, 0x4248, 0x5640, 0x7800, 0x3c01, 0xc900, 0x7e01,
		    0x4000, 0x3800);
		break;
	case COW_DTYPE_BFLOAT16:
		/* 0 -0 1 -1 max -max inf -inf nan -nan min-subnormal
		 * max-subnormal min-normal 1/3 pi 100 65536 1+ulp 2^31 2^63
		 * 2^64 -2^63 2^24 -10 2 0.5 */
		DEF(uint16_t, 0x0000, 0x8000, 0x3f80, 0xbf80, 0x7f7f, 0xff7f,
		    0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x0001, 0x007f, 0x0080,
		    0x3eab, 0x4049, 0x42c8, 0x4780, 0x3f81, 0x4f00, 0x5f00,
		    0x5f80, 0xdf00, 0x4b80, 0xc120, 0x4000, 0x3f00);
		break;
	case COW_DTYPE_FLOAT32:
		DEF(float, 0.0f, -0.0f, 1.0f, -1.0f, FLT_MAX, -FLT_MAX,
		    INFINITY, -INFINITY, NAN, -NAN, FLT_TRUE_MIN, FLT_MIN,
		    0.1f, 65504.0f, 65520.0f, 65519.996f, 1.0f + 0x1p-11f,
		    1.0f + 0x3p-11f, 0x1p-25f, 0x3p-26f, 0x1p-24f,
		    1.0f + 0x1p-8f, 1.0f + 0x3p-9f, 3e9f, -3e9f, 4e9f, 1e20f,
		    -1.5f, 2.5f, 255.9f, 256.0f, -128.5f, 2147483520.0f,
		    0x1p63f, 0x1p64f, 0x1.fffffep63f, -0x1p63f, 1.0f + 0x1p-23f,
		    3.14159265f, -65505.0f, 0x1.fep127f, 1e-40f);
		break;
	case COW_DTYPE_FLOAT64:
		DEF(double, 0.0, -0.0, 1.0, -1.0, DBL_MAX, -DBL_MAX, INFINITY,
		    -INFINITY, NAN, -NAN, DBL_TRUE_MIN, DBL_MIN, 0.1, 65504.0,
		    65519.99999, 65520.0, 1.0 + 0x1p-11, 1.0 + 0x1p-11 + 0x1p-40,
		    1.0 + 0x1p-8 + 0x1p-30, 0x1.ffffffp127, 0x1.fffffefffffffp127,
		    1e300, 9007199254740993.0, 0x1p63, 0x1p64, 0x1.fffffffffffffp63,
		    -0x1.0000000000001p63, 0x1.fffffffffffffp62, -1.5, 2.5, 255.9,
		    0x1p-25, 0x1p-25 + 0x1p-60, 1e-40, 0x1p-150,
		    0x1p-150 + 0x1p-170, 1.0 + 0x1p-23, 3.141592653589793,
		    4294967295.5, 4294967296.0, -2147483648.9, -2147483649.0,
		    0x1.0000010000001p0, 0x1p-133, 0x1.8p-134, 1.0 / 3.0);
		break;
	case COW_DTYPE_COMPLEX64:
		DEF(float, 0.0f, 0.0f, -0.0f, 0.0f, 0.0f, -0.0f, 1.0f, 0.0f,
		    0.0f, 1.0f, 1.0f, 2.0f, -1.5f, 2.5f, INFINITY, 0.0f,
		    0.0f, INFINITY, NAN, 0.0f, 0.0f, NAN, FLT_MAX, FLT_MAX,
		    3e9f, -7.0f, 1e-40f, 1.0f, 0.1f, -0.1f, 65520.0f, 1.0f,
		    1.0f + 0x1p-11f, 0.0f, 1.0f + 0x3p-24f, 1.0f - 0x1p-24f);
		g->n /= 2;
		break;
	case COW_DTYPE_COMPLEX128:
		DEF(double, 0.0, 0.0, -0.0, 0.0, 0.0, -0.0, 1.0, 0.0, 0.0, 1.0,
		    1.0, 2.0, -1.5, 2.5, INFINITY, 0.0, 0.0, INFINITY, NAN, 0.0,
		    0.0, NAN, DBL_MAX, -DBL_MAX, 1e300, 1e300, 3e9, -7.0,
		    1.0 + 0x1p-11 + 0x1p-40, 3.0, 0.1, -0.1, 0x1.ffffffp127,
		    1e-320, 1.0 + 0x3p-53, 1.0 - 0x1p-53, 1e200, -1e-200);
		g->n /= 2;
		break;
	case COW_DTYPE_INVALID: /* not a dtype: never asked for */
		break;
	}
}

/* One element as HEX (complex: REHEX:IMHEX). */
static void
put_hex(cow_dtype_t dtype, const unsigned char *p)
{
	size_t w = cow_dtype_size(dtype), half = w / 2;
	uint64_t a = 0, b = 0;

	if (dtype == COW_DTYPE_COMPLEX64 || dtype == COW_DTYPE_COMPLEX128) {
		memcpy(&a, p, half);
		memcpy(&b, p + half, half);
		printf("%llx:%llx", (unsigned long long)a,
		    (unsigned long long)b);
		return;
	}
	memcpy(&a, p, w);
	printf("%llx", (unsigned long long)a);
}

static cow_tensor_t *
grid_tensor(const struct grid *g)
{
	int64_t n = g->n;
	cow_tensor_t *t;

	check(cow_tensor_from_data(g->dtype, 1, &n, g->bytes, NULL, &t),
	    "from_data");
	return t;
}

/* Print element @k of the contiguous tensor @t. */
static void
put_elem(const cow_tensor_t *t, int64_t k)
{
	const unsigned char *p = cow_tensor_const_data(t);
	cow_dtype_t dt = cow_tensor_dtype(t);

	put_hex(dt, p + k * (int64_t)cow_dtype_size(dt));
}

static void
table_conv(const struct grid *src, cow_dtype_t dst)
{
	cow_tensor_t *s = grid_tensor(src), *d;
	int64_t n = src->n;

	check(cow_tensor_empty(dst, 1, &n, NULL, &d), "empty");
	check(cow_tensor_copy_(d, s), "copy_");
	for (int i = 0; i < src->n; i++) {
		printf("conv %s %s %d ", cow_dtype_name(src->dtype),
		    cow_dtype_name(dst), i);
		put_elem(d, i);
		printf("\n");
	}
	cow_tensor_release(d);
	cow_tensor_release(s);
}

static void
table_ops(const struct grid *g)
{
	const char *name = cow_dtype_name(g->dtype);
	cow_tensor_t *t = grid_tensor(g), *a, *b, *r, *w;
	int64_t n = g->n, col[2] = {n, 1}, row[2] = {1, n};
	int64_t wsz[2] = {n - 2, 3}, wst[2] = {1, 1};

	check(cow_tensor_view(t, 2, col, &a), "view");
	check(cow_tensor_view(t, 2, row, &b), "view");
	for (int op = 0; op < 2; op++) {
		check((op == 0 ? cow_tensor_add : cow_tensor_mul)(a, b, &r),
		    "add/mul");
		for (int i = 0; i < n; i++) {
			for (int j = 0; j < n; j++) {
				printf("%s %s %d %d ", op == 0 ? "add" : "mul",
				    name, i, j);
				put_elem(r, i * n + j);
				printf("\n");
			}
		}
		cow_tensor_release(r);
	}
	cow_tensor_release(a);
	cow_tensor_release(b);
	if (g->dtype != COW_DTYPE_BOOL) {
		check(cow_tensor_neg(t, &r), "neg");
		for (int i = 0; i < n; i++) {
			printf("neg %s %d ", name, i);
			put_elem(r, i);
			printf("\n");
		}
		cow_tensor_release(r);
	}
	/* Windows of 3 (overlapping: strides 1, 1), then everything. */
	check(cow_tensor_as_strided(t, 2, wsz, wst, 0, &w), "as_strided");
	check(cow_tensor_sum_dim(w, 1, false, &r), "sum_dim");
	for (int i = 0; i < n - 2; i++) {
		printf("sum %s %s %d 3 ", name,
		    cow_dtype_name(cow_tensor_dtype(r)), i);
		put_elem(r, i);
		printf("\n");
	}
	cow_tensor_release(r);
	cow_tensor_release(w);
	check(cow_tensor_sum(t, &r), "sum");
	printf("sum %s %s 0 %d ", name, cow_dtype_name(cow_tensor_dtype(r)),
	    g->n);
	put_elem(r, 0);
	printf("\n");
	cow_tensor_release(r);
	/* Each element REP times: rounding once (float16, bfloat16: in
	 * float32) or at every step shows here. */
	for (int i = 0; i < n; i++) {
		int64_t rep = REP;
		cow_tensor_t *e;

		check(cow_tensor_narrow(t, 0, i, 1, &w), "narrow");
		check(cow_tensor_expand(w, 1, &rep, &e), "expand");
		check(cow_tensor_sum(e, &r), "sum");
		printf("rep %s %s %d %d ", name,
		    cow_dtype_name(cow_tensor_dtype(r)), i, REP);
		put_elem(r, 0);
		printf("\n");
		cow_tensor_release(r);
		cow_tensor_release(e);
		cow_tensor_release(w);
	}
	cow_tensor_release(t);
}

int
main(void)
{
	static struct grid g[COW_DTYPE_COUNT];

	for (int d = 0; d < COW_DTYPE_COUNT; d++) {
		make_grid(&g[d], (cow_dtype_t)d);
		printf("grid %s", cow_dtype_name((cow_dtype_t)d));
		for (int i = 0; i < g[d].n; i++) {
			printf(" ");
			put_hex((cow_dtype_t)d, g[d].bytes +
			    (size_t)i * cow_dtype_size((cow_dtype_t)d));
		}
		printf("\n");
	}
	for (int s = 0; s < COW_DTYPE_COUNT; s++)
		for (int d = 0; d < COW_DTYPE_COUNT; d++)
			table_conv(&g[s], (cow_dtype_t)d);
	for (int d = 0; d < COW_DTYPE_COUNT; d++)
		table_ops(&g[d]);
	return 0;
}
