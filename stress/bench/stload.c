/*
 * cow_stload - loading a safetensors file of the benchmark state with
 * cowstore, in a fresh process: open and index, the first tensor, all the
 * tensors summed (docs/performance.md, "Files"; scripts/bench-files.sh
 * runs it beside the NumPy and PyTorch loaders of filebench.py).
 *
 *   cow_stload FILE [--pread] [--json]
 *
 * FILE holds the state of cow_snapbench (tensors "t0000", "t0001", ...,
 * float32, one dimension, tensor i's element j bench_state_value(i, j)), as
 * cow_snapbench --method st-alone --keep writes it. One invocation, one
 * measurement, each phase timed on its own (CLOCK_MONOTONIC):
 *
 *   open    cow_safetensors_open (mapped; --pread: COW_SAFETENSORS_PREAD)
 *           and the index read: every tensor's name, dtype, shape and bytes,
 *           as a loader building its table reads them
 *   first   tensor "t0000" found, taken (cow_safetensors_get) and summed
 *           (cow_tensor_sum, its value read)
 *   all     every tensor in the header's order taken and summed; the
 *           tensors stay held to the end (as a loaded model's would)
 *   reopen  a second open and index of the same file (then closed): the
 *           same call with the library's one-time set-up already done
 *
 * Anonymous memory (RssAnon, /proc/self/status) is read before the open
 * and after each phase; open_anon_bytes is the open's new anonymous
 * memory, all_anon_bytes what holding every tensor adds to it,
 * reopen_anon_bytes the second handle's (while it is open). A mapped
 * file's pages are file pages, in neither. The page cache is whatever the
 * caller left (bench-files.sh reads the file first: warm).
 *
 * Then, outside the clocks, every element of every tensor is compared with
 * the state; a difference, a missing tensor or a wrong shape fails the run
 * (exit 3). The sums of the tensors, added in float64, are printed too.
 *
 * Output: one line, a table row or with --json a JSON object. Nothing here
 * asserts a timing.
 */
#define _GNU_SOURCE /* program_invocation_short_name */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cowstore/cowstore.h>

#include "bench.h"

struct load {
	uint64_t open_ns, first_ns, all_ns, reopen_ns;
	uint64_t anon0, anon_open, anon_first, anon_all, anon_reopen;
	uint64_t anon_before_reopen;
	double sum;          /* the tensors' sums (float32 each) in float64 */
	uint64_t bad;        /* elements that differ from the state */
	size_t count;
	uint64_t data_bytes;
	cow_safetensors_stats_t stats;
};

static uint64_t
anon_now(void)
{
	uint64_t v = 0;

	if (!bench_mem_read(getpid(), false, &v))
		bench_die_errno("/proc/self/status");
	return v;
}

/* Open @path and read its index, as a loader does. */
static cow_safetensors_t *
open_index(const char *path, unsigned flags, uint64_t *bytes)
{
	cow_safetensors_t *f;
	uintptr_t acc = 0;
	size_t n;

	bench_check(cow_safetensors_open(path, flags, &f),
	    "cow_safetensors_open");
	n = cow_safetensors_count(f);
	*bytes = 0;
	for (size_t i = 0; i < n; i++) {
		const int64_t *sizes = cow_safetensors_sizes(f, i);
		int nd = cow_safetensors_ndim(f, i);

		acc += (uintptr_t)cow_safetensors_name(f, i)[0];
		acc += (uintptr_t)cow_safetensors_dtype(f, i);
		for (int d = 0; d < nd; d++)
			acc += (uintptr_t)sizes[d];
		*bytes += cow_safetensors_nbytes(f, i);
	}
	bench_consume(acc);
	return f;
}

/* The sum of tensor @i of @f; *out is the tensor, held. */
static float
take_sum(cow_safetensors_t *f, size_t i, cow_tensor_t **out)
{
	cow_tensor_t *s;
	float v;

	bench_check(cow_safetensors_get(f, i, out), "cow_safetensors_get");
	bench_check(cow_tensor_sum(*out, &s), "cow_tensor_sum");
	v = *(const float *)cow_tensor_const_data(s);
	cow_tensor_release(s);
	return v;
}

/* Tensor @k of @f against the state: its name gives its index i. */
static uint64_t
check_tensor(cow_safetensors_t *f, size_t k, cow_tensor_t *t)
{
	const char *name = cow_safetensors_name(f, k);
	const float *p;
	uint64_t bad = 0, n;
	size_t i;
	int used = 0;

	n = cow_safetensors_nbytes(f, k) / 4;
	if (sscanf(name, "t%zu%n", &i, &used) != 1 ||
	    name[used] != '\0' || cow_safetensors_dtype(f, k) !=
	    COW_DTYPE_FLOAT32 || cow_safetensors_ndim(f, k) != 1) {
		fprintf(stderr, "verify: tensor \"%s\" is not one of the "
		    "state's (tNNNN, float32, one dimension)\n", name);
		return n > 0 ? n : 1;
	}
	p = cow_tensor_const_data(t);
	for (uint64_t j = 0; j < n; j++)
		bad += p[j] != bench_state_value(i, (size_t)j);
	return bad;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: %s FILE [--pread] [--json]\n",
	    program_invocation_short_name);
}

int
main(int argc, char **argv)
{
	const char *path = NULL;
	unsigned flags = 0;
	bool json = false;
	struct load r = {0};
	cow_safetensors_t *f, *again;
	cow_tensor_t *first, **held;
	uint64_t t0, unused;
	size_t k0;
	struct stat sb;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--pread") == 0) {
			flags = COW_SAFETENSORS_PREAD;
		} else if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (argv[i][0] != '-' && path == NULL) {
			path = argv[i];
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (path == NULL) {
		usage(stderr);
		return 2;
	}
	if (stat(path, &sb) != 0)
		bench_die_errno(path);

	r.anon0 = anon_now();
	t0 = bench_now_ns();
	f = open_index(path, flags, &r.data_bytes);
	r.open_ns = bench_now_ns() - t0;
	r.anon_open = anon_now();
	r.count = cow_safetensors_count(f);

	t0 = bench_now_ns();
	bench_check(cow_safetensors_find(f, "t0000", &k0),
	    "cow_safetensors_find(\"t0000\")");
	bench_consume((uintptr_t)take_sum(f, k0, &first));
	r.first_ns = bench_now_ns() - t0;
	r.anon_first = anon_now();

	if ((held = calloc(r.count ? r.count : 1, sizeof *held)) == NULL)
		bench_die("out of memory");
	t0 = bench_now_ns();
	for (size_t k = 0; k < r.count; k++)
		r.sum += take_sum(f, k, &held[k]);
	r.all_ns = bench_now_ns() - t0;
	r.anon_all = anon_now();

	r.anon_before_reopen = anon_now();
	t0 = bench_now_ns();
	again = open_index(path, flags, &unused);
	r.reopen_ns = bench_now_ns() - t0;
	r.anon_reopen = anon_now();
	cow_safetensors_close(again);

	for (size_t k = 0; k < r.count; k++)
		r.bad += check_tensor(f, k, held[k]);
	cow_safetensors_stats(f, &r.stats);
	for (size_t k = 0; k < r.count; k++)
		cow_tensor_release(held[k]);
	cow_tensor_release(first);
	cow_safetensors_close(f);
	free(held);

	if (json) {
		printf("{\"method\": \"%s\", \"file_bytes\": %lld, "
		    "\"tensors\": %zu, \"state_bytes\": %" PRIu64
		    ", \"open_ns\": %" PRIu64 ", \"first_ns\": %" PRIu64
		    ", \"all_ns\": %" PRIu64 ", \"reopen_ns\": %" PRIu64
		    ", \"anon_before_bytes\": %" PRIu64
		    ", \"open_anon_bytes\": %" PRId64
		    ", \"first_anon_bytes\": %" PRId64
		    ", \"all_anon_bytes\": %" PRId64
		    ", \"reopen_anon_bytes\": %" PRId64
		    ", \"mapped_bytes\": %" PRIu64 ", \"bytes_read\": %" PRIu64
		    ", \"unaligned_copies\": %" PRIu64 ", \"sum\": %.17g"
		    ", \"verify\": \"%s\", \"bad_elements\": %" PRIu64 "}\n",
		    flags ? "cow-pread" : "cow-mmap", (long long)sb.st_size,
		    r.count, r.data_bytes, r.open_ns, r.first_ns, r.all_ns,
		    r.reopen_ns, r.anon0,
		    (int64_t)(r.anon_open - r.anon0),
		    (int64_t)(r.anon_first - r.anon_open),
		    (int64_t)(r.anon_all - r.anon_first),
		    (int64_t)(r.anon_reopen - r.anon_before_reopen),
		    r.stats.mapped_bytes, r.stats.bytes_read,
		    r.stats.unaligned_copies, r.sum,
		    r.bad ? "failed" : "ok", r.bad);
	} else {
		printf("%-9s %zu tensors, %" PRIu64 " bytes: open+index %.3f ms"
		    " (+%" PRId64 " KiB anon; again %.3f ms)  first %.3f ms"
		    "  all summed %.3f ms (+%" PRId64 " KiB anon)  sum %.17g"
		    "  verify %s\n", flags ? "cow-pread" : "cow-mmap", r.count,
		    r.data_bytes, (double)r.open_ns / 1e6,
		    (int64_t)(r.anon_open - r.anon0) / 1024,
		    (double)r.reopen_ns / 1e6, (double)r.first_ns / 1e6,
		    (double)r.all_ns / 1e6,
		    (int64_t)(r.anon_all - r.anon_first) / 1024, r.sum,
		    r.bad ? "FAILED" : "ok");
	}
	fflush(stdout);
	if (r.bad != 0) {
		fprintf(stderr, "%s: %s: %" PRIu64 " elements differ from the "
		    "state\n", program_invocation_short_name, path, r.bad);
		return 3;
	}
	return 0;
}
