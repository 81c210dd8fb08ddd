/*
 * bench.h - the cow_bench harness: each benchmark times a batch of n
 * operations itself (so preparation stays outside the clock), the harness
 * calibrates n, warms up, repeats batches and reports the median and the
 * 10th/90th percentiles of the time per operation.
 *
 * Benchmarks measure; nothing here asserts a timing.
 */
#ifndef COW_BENCH_H
#define COW_BENCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

struct bench_arg {
	size_t bytes;   /* buffer size, 0 when size does not apply */
	int threads;    /* threads, 1 unless contention */
	void *state;    /* the benchmark's own, from setup */
	int variant;    /* the benchmark's variant (struct bench) */
};

struct bench {
	const char *name;
	const char *group;  /* for --filter and the charts */
	bool sized;         /* run at every size */
	bool bandwidth;     /* report GB/s (bytes moved per op) */
	const int *threads; /* thread counts, 0-terminated; NULL: 1 */
	int variant;        /* for setup and run, which share one table */
	/* Optional: allocate state for (bytes, threads); free it after. */
	void (*setup)(struct bench_arg *arg);
	void (*teardown)(struct bench_arg *arg);
	/* Run n operations, return the nanoseconds they took. */
	uint64_t (*run)(struct bench_arg *arg, uint64_t n);
	/* Largest n one batch may use (memory bound), 0: no limit. */
	uint64_t (*max_batch)(const struct bench_arg *arg);
};

static inline uint64_t
bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Defines static uint64_t run_NAME(struct bench_arg *arg, uint64_t n): the
 * nanoseconds that n runs of the statements after @state_type take; they
 * see st (arg->state, a @state_type pointer) and the run's index i. */
#define BENCH_TIMED_RUN(name, state_type, ...)                              \
	static uint64_t                                                     \
	run_##name(struct bench_arg *arg, uint64_t n)                       \
	{                                                                   \
		state_type *st = arg->state;                                \
		uint64_t t0 = bench_now_ns();                               \
                                                                            \
		for (uint64_t i = 0; i < n; i++) {                          \
			__VA_ARGS__                                         \
		}                                                           \
		return bench_now_ns() - t0;                                 \
	}

/* Keep a value alive so the compiler cannot drop the work. */
extern volatile uintptr_t bench_sink;

static inline void
bench_consume(uintptr_t v)
{
	bench_sink ^= v;
}

_Noreturn void bench_fail(const char *what, int status);

/* A benchmark's library call must succeed: bench_fail otherwise. */
static inline void
bench_check(int status, const char *what)
{
	if (status != 0)
		bench_fail(what, status);
}

/* Read the CPUs this process may use (before any thread is pinned); with
 * @pin false, bench_pin does nothing. */
void bench_pin_init(bool pin);

/* Pin thread @t to the @i-th CPU (modulo the CPUs this process may use).
 * Best effort: nothing happens where affinity cannot be set. */
void bench_pin(pthread_t t, int i);

/* A size such as 4096, 4K, 64M or 1G into *out; false (and *out unset)
 * for anything else. */
bool bench_parse_size(const char *s, uint64_t *out);

/* The allocator every benchmark storage uses: the default, or the one
 * named by COW_BENCH_ALLOCATOR (jemalloc or system). */
struct cow_allocator_s *bench_allocator(void);

/* Print "PROGRAM: " and the message (bench_die_errno: "PROGRAM: WHAT:
 * strerror(errno)") to stderr and exit with status 2. */
_Noreturn void bench_die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
_Noreturn void bench_die_errno(const char *what);

/* Add @pid's anonymous memory to *total: Pss_Anon from smaps_rollup when
 * @pss (a page walk: milliseconds for a GiB), else RssAnon from status
 * (counters, O(1); the same for a process that shares no page). False
 * when it cannot be read (a process that has exited). */
bool bench_mem_read(pid_t pid, bool pss, uint64_t *total);

/* Add the field @key ("VmRSS", "VmHWM", ...) of /proc/@pid/@file, in kB
 * there, to *total in bytes. False when it cannot be read. */
bool bench_proc_field(pid_t pid, const char *file, const char *key,
    uint64_t *total);

/* Reset this process's peak resident set (VmHWM) to its resident set now
 * (proc(5), /proc/PID/clear_refs: 5). False when it cannot be written. */
bool bench_peak_reset(void);

/* The state of the snapshot and file benchmarks (snapbench.c, stload.c,
 * filebench.py): tensor @i's initial element @j, a small integer, so that
 * adding step counts stays exact in float32. */
static inline float
bench_state_value(size_t i, size_t j)
{
	return (float)((i * 131 + j) & 4095);
}

/* Benchmark tables, one per file. */
extern const struct bench bench_storage_table[];
extern const struct bench bench_contention_table[];
extern const struct bench bench_tensor_table[];
extern const struct bench bench_shadow_table[];
extern const struct bench bench_anchor_table[];
extern const struct bench bench_kernels_table[];
extern const struct bench bench_snapshot_table[];

#endif
