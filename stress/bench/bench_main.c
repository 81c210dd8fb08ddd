/*
 * cow_bench - lazy copies against eager copies and memcpy, measured side by
 * side. See docs/performance.md.
 *
 *   cow_bench [--quick] [--json] [--no-pin] [--filter SUBSTRING] [--sizes LIST]
 *
 * --quick keeps a full run under a minute (fewer, shorter batches).
 * --json prints one JSON object per line instead of the table.
 * --filter runs only benchmarks whose name or group contains SUBSTRING.
 * --sizes overrides the sizes, e.g. --sizes 4K,1M.
 * --no-pin leaves the threads where the scheduler puts them. By default the
 * main thread (which runs every single-threaded benchmark) stays on the
 * last CPU it may use, and contention worker i on CPU i: a thread that
 * migrates mid-run between CPUs of different speed (this VM's two vCPUs
 * differ by 20%) would mix two machines in one median.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cowstore/cowstore.h>

#include "bench.h"

#ifndef COW_BENCH_LOCK
#define COW_BENCH_LOCK "ck_rwlock"
#endif

#define MAX_SIZES 8
#define MAX_REPS 64

struct options {
	bool quick;
	bool json;
	const char *filter;
	size_t sizes[MAX_SIZES];
	int nsizes;
};

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
percentile(const double *sorted, int n, double p)
{
	double idx = p * (n - 1);
	int lo = (int)idx;
	double frac = idx - lo;

	if (lo + 1 >= n)
		return sorted[n - 1];
	return sorted[lo] * (1 - frac) + sorted[lo + 1] * frac;
}

static const char *
size_name(size_t b, char *buf, size_t len)
{
	if (b == 0)
		snprintf(buf, len, "-");
	else if (b >= (1u << 20) && b % (1u << 20) == 0)
		snprintf(buf, len, "%zuMiB", b >> 20);
	else if (b >= 1024 && b % 1024 == 0)
		snprintf(buf, len, "%zuKiB", b >> 10);
	else
		snprintf(buf, len, "%zuB", b);
	return buf;
}

static void
run_one(const struct bench *b, size_t bytes, int threads,
    const struct options *o)
{
	struct bench_arg arg = {bytes, threads, NULL, b->variant};
	uint64_t target = o->quick ? 2000000u : 20000000u; /* ns per batch */
	int reps = o->quick ? 5 : 15;
	uint64_t n = 1, max = 0, t;
	double per_op[MAX_REPS];
	char sz[32];

	if (b->setup)
		b->setup(&arg);
	if (b->max_batch)
		max = b->max_batch(&arg);
	/* Calibrate: grow n until one batch takes the target time. The
	 * fastest of three runs decides, so one slow start (threads waking,
	 * cold caches) does not stop the calibration at a tiny batch. */
	for (;;) {
		t = UINT64_MAX;
		for (int k = 0; k < 3; k++) {
			uint64_t tk = b->run(&arg, n);

			t = tk < t ? tk : t;
		}
		if (t >= target || (max && n >= max) || n >= (1u << 24))
			break;
		n = t == 0 ? n * 16 : n * 2;
		if (max && n > max)
			n = max;
	}
	b->run(&arg, n); /* warm-up */
	for (int r = 0; r < reps; r++)
		per_op[r] = (double)b->run(&arg, n) / (double)n;
	if (b->teardown)
		b->teardown(&arg);
	qsort(per_op, (size_t)reps, sizeof per_op[0], cmp_double);

	double med = percentile(per_op, reps, 0.5);
	double p10 = percentile(per_op, reps, 0.1);
	double p90 = percentile(per_op, reps, 0.9);
	double gbs = b->bandwidth && med > 0 ? (double)bytes / med : 0;

	if (o->json) {
		printf("{\"bench\": \"%s\", \"bytes\": %zu, \"threads\": %d, "
		    "\"ns_per_op\": %.2f, \"p10\": %.2f, \"p90\": %.2f",
		    b->name, bytes, threads, med, p10, p90);
		if (b->bandwidth)
			printf(", \"gb_per_s\": %.3f", gbs);
		printf(", \"batch\": %llu}\n", (unsigned long long)n);
	} else {
		printf("%-28s %8s %3d %14.1f %14.1f %14.1f", b->name,
		    size_name(bytes, sz, sizeof sz), threads, med, p10, p90);
		if (b->bandwidth)
			printf(" %8.2f", gbs);
		printf("\n");
	}
	fflush(stdout);
}

static void
run_table(const struct bench *table, const struct options *o)
{
	static const int one[] = {1, 0};

	for (const struct bench *b = table; b->name != NULL; b++) {
		const int *th = b->threads ? b->threads : one;

		if (o->filter && strstr(b->name, o->filter) == NULL &&
		    (b->group == NULL || strstr(b->group, o->filter) == NULL))
			continue;
		for (; *th; th++) {
			if (!b->sized) {
				run_one(b, 0, *th, o);
				continue;
			}
			for (int s = 0; s < o->nsizes; s++)
				run_one(b, o->sizes[s], *th, o);
		}
	}
}

int
main(int argc, char **argv)
{
	struct options o = {.nsizes = 4,
	    .sizes = {4 << 10, 1 << 20, 64 << 20, 256 << 20}};
	bool pin = true;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			o.quick = true;
		} else if (strcmp(argv[i], "--json") == 0) {
			o.json = true;
		} else if (strcmp(argv[i], "--no-pin") == 0) {
			pin = false;
		} else if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc) {
			o.filter = argv[++i];
		} else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
			char *list = argv[++i], *tok;

			o.nsizes = 0;
			for (tok = strtok(list, ","); tok && o.nsizes < MAX_SIZES;
			     tok = strtok(NULL, ",")) {
				uint64_t v;

				if (!bench_parse_size(tok, &v)) {
					fprintf(stderr, "%s: bad size \"%s\"\n",
					    argv[0], tok);
					return 2;
				}
				o.sizes[o.nsizes++] = (size_t)v;
			}
		} else {
			fprintf(stderr, "usage: %s [--quick] [--json] [--no-pin] "
			    "[--filter SUBSTRING] [--sizes 4K,1M,...]\n",
			    argv[0]);
			return strcmp(argv[i], "--help") == 0 ? 0 : 2;
		}
	}
	if (!o.json) {
		printf("cow_bench: allocator %s, lock %s%s\n",
		    cow_allocator_name(bench_allocator()),
		    COW_BENCH_LOCK, o.quick ? ", quick" : "");
		printf("%-28s %8s %3s %14s %14s %14s %8s\n", "benchmark",
		    "bytes", "thr", "ns/op median", "p10", "p90", "GB/s");
	}
	bench_pin_init(pin);
	bench_pin(pthread_self(), -1);
	/* Spin first so the core runs at its working clock before the first
	 * (cheapest) benchmarks are timed. */
	for (uint64_t t0 = bench_now_ns(); bench_now_ns() - t0 < 300000000u;)
		bench_consume(t0);
	run_table(bench_storage_table, &o);
	run_table(bench_contention_table, &o);
	run_table(bench_tensor_table, &o);
	run_table(bench_shadow_table, &o);
	run_table(bench_anchor_table, &o);
	run_table(bench_kernels_table, &o);
	run_table(bench_snapshot_table, &o);
	return 0;
}
