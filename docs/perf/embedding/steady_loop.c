/*
 * steady_loop.c - warm memcpy against the steady materialise loop, for the
 * before/after pair of issue 16 (run-steady-pair.sh builds and runs it).
 *
 *   steady_loop SIZE_MIB ROUNDS
 *
 * Each round times two loops of about 20 ms each, one after the other:
 * memcpy from a storage's data into one page-aligned buffer written before
 * (memcpy_warm), and lazy clone, first write, release of that storage (the
 * allocator hands the freed buffer back to the next clone). Prints one JSON
 * line per loop with the median round and the 10th and 90th percentiles.
 * Uses only the public API that every cowstore version has, so it links
 * against the code before the change as well as after it.
 */
#define _POSIX_C_SOURCE 200809L
#include <cowstore/cowstore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_ROUNDS 64

static double
now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void
report(const char *name, size_t bytes, double *ns, int rounds)
{
	qsort(ns, (size_t)rounds, sizeof *ns, cmp_double);
	printf("{\"bench\": \"%s\", \"bytes\": %zu, \"ns_per_op\": %.2f, "
	    "\"p10\": %.2f, \"p90\": %.2f, \"rounds\": %d}\n", name, bytes,
	    ns[rounds / 2], ns[rounds / 10], ns[rounds - 1 - rounds / 10],
	    rounds);
}

static void
die(const char *what)
{
	fprintf(stderr, "steady_loop: %s: %s\n", what, cow_last_error());
	exit(1);
}

int
main(int argc, char **argv)
{
	cow_storage_t *src, *clone;
	double warm[MAX_ROUNDS], steady[MAX_ROUNDS];
	size_t bytes;
	long iters;
	int rounds;
	void *p;

	if (argc != 3) {
		fprintf(stderr, "usage: steady_loop SIZE_MIB ROUNDS\n");
		return 2;
	}
	bytes = strtoul(argv[1], NULL, 10) << 20;
	rounds = atoi(argv[2]);
	if (bytes == 0 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "steady_loop: size 1+ MiB, 1-%d rounds\n",
		    MAX_ROUNDS);
		return 2;
	}
	if (cow_storage_new(bytes, NULL, &src) != COW_OK)
		die("cow_storage_new");
	if (cow_storage_mutable_data(src, &p) != COW_OK)
		die("cow_storage_mutable_data");
	memset(p, 1, bytes);
	const void *from = cow_storage_const_data(src);
	char *to = aligned_alloc(4096, bytes);
	if (to == NULL)
		return 1;
	memset(to, 2, bytes);
	iters = (long)(20e6 / ((double)bytes / 20.0)); /* ~20 GB/s */
	if (iters < 4)
		iters = 4;
	for (int r = -2; r < rounds; r++) { /* two rounds warm up */
		double t0 = now_ns();
		for (long i = 0; i < iters; i++) {
			memcpy(to, from, bytes);
			__asm__ volatile("" : : "r"(to) : "memory");
		}
		double t1 = now_ns();
		for (long i = 0; i < iters; i++) {
			if (cow_storage_lazy_clone(src, &clone) != COW_OK)
				die("cow_storage_lazy_clone");
			if (cow_storage_mutable_data(clone, &p) != COW_OK)
				die("cow_storage_mutable_data");
			((char *)p)[0] = 3;
			cow_storage_release(clone);
		}
		double t2 = now_ns();
		if (r >= 0) {
			warm[r] = (t1 - t0) / (double)iters;
			steady[r] = (t2 - t1) / (double)iters;
		}
	}
	report("memcpy_warm", bytes, warm, rounds);
	report("materialize_steady", bytes, steady, rounds);
	cow_storage_release(src);
	free(to);
	return 0;
}
