/*
 * copy_routines.c - is the 1 MiB materialise batch's shortfall against warm
 * memcpy a property of the copy routine or of the memory it writes?
 *
 *   cc -O2 copy_routines.c -o copy_routines && taskset -c 1 ./copy_routines
 *
 * Copies 1 MiB from one hot source with four routines (glibc memcpy,
 * rep movsb, AVX2 stores, AVX-512 non-temporal stores) into one warm
 * page-aligned buffer, and into 8 buffers in turn (the working set of a
 * materialise batch at 1 MiB). Prints the best of 15 passes of 64 copies.
 * x86-64 with AVX-512F only.
 */
#define _POSIX_C_SOURCE 200809L
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BYTES (1u << 20)
#define ROTATING 8

typedef void copy_fn(void *, const void *, size_t);

static double
now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void
copy_memcpy(void *d, const void *s, size_t n)
{
	memcpy(d, s, n);
}

static void
copy_movsb(void *d, const void *s, size_t n)
{
	__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}

__attribute__((target("avx2"))) static void
copy_avx2(void *d, const void *s, size_t n)
{
	for (size_t i = 0; i < n; i += 32)
		_mm256_store_si256((__m256i *)((char *)d + i),
		    _mm256_load_si256((const __m256i *)((const char *)s + i)));
}

__attribute__((target("avx512f"))) static void
copy_nt512(void *d, const void *s, size_t n)
{
	for (size_t i = 0; i < n; i += 64)
		_mm512_stream_si512((__m512i *)((char *)d + i),
		    _mm512_load_si512((const char *)s + i));
	_mm_sfence();
}

int
main(void)
{
	static copy_fn *const fns[] = {copy_memcpy, copy_movsb, copy_avx2,
	    copy_nt512};
	static const char *const names[] = {"memcpy", "rep_movsb", "avx2",
	    "avx512_nontemporal"};
	char *src = aligned_alloc(4096, BYTES), *dst[ROTATING];

	if (src == NULL)
		return 1;
	memset(src, 1, BYTES);
	for (int i = 0; i < ROTATING; i++) {
		if ((dst[i] = aligned_alloc(4096, BYTES)) == NULL)
			return 1;
		memset(dst[i], 2, BYTES);
	}
	for (int f = 0; f < 4; f++) {
		for (int buffers = 1; buffers <= ROTATING; buffers *= ROTATING) {
			double best = 1e300;
			for (int pass = 0; pass < 15; pass++) {
				double t0 = now_ns();
				for (int i = 0; i < 64; i++)
					fns[f](dst[i % buffers], src, BYTES);
				double t = (now_ns() - t0) / 64;
				best = t < best ? t : best;
			}
			printf("{\"routine\": \"%s\", \"buffers\": %d, "
			    "\"us_per_copy\": %.1f}\n", names[f], buffers,
			    best / 1e3);
		}
	}
	for (int i = 0; i < ROTATING; i++)
		free(dst[i]);
	free(src);
	return 0;
}
