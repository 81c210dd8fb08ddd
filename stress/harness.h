/*
 * harness.h - what the cow_stress scenarios share: options, the state of one
 * scenario run, thread teams with barriers and rounds, seeded generators,
 * scheduler perturbation, reference patterns and checksums, the poisoning
 * allocator, counted external buffers, and invariant checks.
 *
 * The harness uses only the public API (include/cowstore/). Its own shared
 * counters are C11 atomics, which ThreadSanitizer understands.
 */
#ifndef COW_STRESS_HARNESS_H
#define COW_STRESS_HARNESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cowstore/cowstore.h>

#define STRESS_MAX_THREADS 256
#define STRESS_DEFAULT_SECONDS 25.0
#define STRESS_DEFAULT_SIZE 16384
#define STRESS_MIN_SIZE 64
#define STRESS_MAX_SIZE ((size_t)1 << 30)
/* Upper bound of --seconds and --progress (about 115 days). */
#define STRESS_MAX_SECONDS 1e7
/* Seconds between progress lines when stderr is not a terminal. */
#define STRESS_DEFAULT_PROGRESS 5.0
#define STRESS_MIN_PROGRESS 0.1

/* Freed memory is overwritten with this byte, so a copier that reads data
 * after it was freed copies junk and fails its content check. */
#define STRESS_POISON 0x5a
/* Blocks smaller than this (metadata) are not poisoned (memory.c). */
#define STRESS_POISON_MIN 1024
/* A round that makes no progress for this long is a deadlock. */
#define STRESS_STALL_SECONDS 20.0
/* Loops over buffer bytes or tensor elements beat the watchdog's
 * heartbeat once per this many iterations (a power of two), so that a
 * round over huge buffers (--size 1g) is not taken for a deadlock. */
#define STRESS_BEAT_EVERY ((uint64_t)1 << 18)

#if defined(__SANITIZE_THREAD__)
#define STRESS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STRESS_TSAN 1
#endif
#endif

#if defined(__SANITIZE_ADDRESS__)
#define STRESS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRESS_ASAN 1
#endif
#endif

struct stress_options {
	unsigned scenarios;   /* bit i: scenario i of stress_scenarios[] */
	unsigned threads;
	double seconds;       /* total budget; 0: no time limit */
	uint64_t iterations;  /* rounds per scenario; 0: no round limit */
	size_t size;          /* bytes per buffer */
	uint64_t seed;
	const char *json;     /* NULL: no JSON report */
	double progress;      /* seconds between progress lines (no tty) */
	bool quiet;
	bool seconds_given;
	bool iterations_given;
};

struct stress_run;

struct stress_scenario {
	const char *name;
	const char *summary;
	/* Shared state for the run (in run->state); false on failure. NULL:
	 * the state is state_size zeroed bytes. */
	bool (*setup)(struct stress_run *run);
	size_t state_size;
	/* Every team thread runs this, tid 0 .. threads-1. */
	void (*worker)(struct stress_run *run, unsigned tid);
	/* Free the shared state and fill run->note. */
	void (*teardown)(struct stress_run *run);
};

extern const struct stress_scenario *const stress_scenarios[];
extern const unsigned stress_nscenarios;

/* One counter per thread, on its own cache line. */
struct stress_slot {
	_Atomic uint64_t ops;
	char pad[56];
};

/* The state of one scenario run. */
struct stress_run {
	const struct stress_options *opt;
	const struct stress_scenario *scn;
	unsigned index;          /* in stress_scenarios[] */
	unsigned threads;
	uint64_t seed;           /* scenario seed, derived from opt->seed */
	double start;            /* stress_now() at start */
	double deadline;         /* 0: none */
	pthread_barrier_t barrier;
	_Atomic bool go;         /* this round runs (written by tid 0) */
	_Atomic uint64_t rounds;
	_Atomic uint64_t checks;
	_Atomic uint64_t violations;
	_Atomic bool stop;       /* a violation: finish at the round's end */
	/* State is corrupt (a broken count, say): leak it rather than
	 * release it into a crash. */
	_Atomic bool abandon;
	struct stress_slot ops[STRESS_MAX_THREADS];
	void *state;             /* the scenario's */
	/* Results. */
	cow_stats_t before, after;
	double elapsed;
	double first_violation;  /* seconds since the program started; <0 */
	uint64_t first_violation_round;
	char note[256];          /* scenario-specific line for the report */
	bool ran;
};

/* ---- words ------------------------------------------------------------ */

/* @one or @many, whichever goes with the count @n: "1 copy", "2 copies",
 * "0 copies". */
static inline const char *
stress_plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* ---- time, generators, perturbation ---------------------------------- */

double stress_now(void);          /* monotonic seconds */
double stress_since_start(void);  /* seconds since the program started */

struct stress_rng {
	uint64_t s;
};

uint64_t stress_mix64(uint64_t x);
void stress_rng_init(struct stress_rng *r, uint64_t seed, uint64_t a,
    uint64_t b);
uint64_t stress_rng_next(struct stress_rng *r);
/* Uniform in [0, n); n > 0. */
uint64_t stress_rng_below(struct stress_rng *r, uint64_t n);

/* Random scheduler noise: usually nothing or a short spin, sometimes
 * sched_yield, rarely a sleep of a few microseconds. Races show up on two
 * cores because preemption lands at different points every round. */
void stress_perturb(struct stress_rng *r);

/* ---- rounds and teams ------------------------------------------------- */

/* Counts the beats of every thread; only the stall watchdog reads it. */
extern _Atomic uint64_t stress_heartbeat;

/* Call with the iteration count of a long loop: beats the heartbeat once
 * every STRESS_BEAT_EVERY iterations. */
static inline void
stress_beat(uint64_t iteration)
{
	if ((iteration & (STRESS_BEAT_EVERY - 1)) == 0)
		atomic_fetch_add_explicit(&stress_heartbeat, 1,
		    memory_order_relaxed);
}

/* Run scn->worker on run->threads threads and wait for them. */
void stress_team_run(struct stress_run *run);

/* All team threads wait here. */
void stress_barrier(struct stress_run *run);

/*
 * All team threads call this at the top of each round; tid 0 decides whether
 * the round runs (time, iterations, violations). Returns true to run it.
 */
bool stress_next_round(struct stress_run *run, unsigned tid);

/* The current round number (1-based; valid inside a round). */
uint64_t stress_round(const struct stress_run *run);

static inline void
stress_ops(struct stress_run *run, unsigned tid, uint64_t n)
{
	atomic_fetch_add_explicit(&run->ops[tid].ops, n,
	    memory_order_relaxed);
}

uint64_t stress_run_ops(struct stress_run *run);

/* ---- invariants ------------------------------------------------------- */

/* Count one invariant check; on failure record a violation (message, seed
 * and replay command on stderr) and ask the run to stop. Returns @ok. */
bool stress_check(struct stress_run *run, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Count @n checks that passed (bulk checks done in a loop). */
void stress_checks_passed(struct stress_run *run, uint64_t n);

bool stress_stopping(struct stress_run *run);

/* Write the command that replays @run into @buf. */
void stress_replay_command(const struct stress_run *run, char *buf,
    size_t len);

/* The run that is executing now (for progress and TSan reports). */
struct stress_run *stress_current(void);
void stress_set_current(struct stress_run *run);

/* ---- patterns and checksums ------------------------------------------- */

/* Reference content: byte i of pattern @key. */
uint8_t stress_pattern_byte(uint64_t key, size_t i);
void stress_pattern_fill(void *p, size_t n, uint64_t key);
/* 64-bit checksum of @n bytes. */
uint64_t stress_checksum(const void *p, size_t n);
/* Index of the first byte where @a and @b differ, or @n. */
size_t stress_first_diff(const void *a, const void *b, size_t n);

/*
 * Compare @p with pattern @key, except that bytes at offsets i with
 * i % @mod == @rem carry mark value stress_mark(key, i, @who). mod 0: no
 * marks. Returns @n when everything matches, else the first bad offset.
 */
size_t stress_verify_marked(const void *p, size_t n, uint64_t key,
    size_t mod, size_t rem, unsigned who);
uint8_t stress_mark(uint64_t key, size_t i, unsigned who);
/* Write the marks described above. */
void stress_write_marks(void *p, size_t n, uint64_t key, size_t mod,
    size_t rem, unsigned who);

/* ---- memory accounting ------------------------------------------------ */

/*
 * The harness allocator: counted by the library like any handle, layered
 * over cow_allocator_default() (so the default handle counts it too), and
 * poisoning every block of @poison_min bytes or more (data, not metadata)
 * before it frees it.
 */
bool stress_alloc_init(size_t poison_min);
cow_allocator_t *stress_allocator(void);
/* Destroy the handle; false if blocks are still live (a leak). */
bool stress_alloc_fini(void);

/* An external data buffer with a counting, poisoning deleter. */
struct stress_ext {
	_Atomic unsigned calls;  /* deleter calls: must end at exactly 1 */
	void *data;
	size_t nbytes;
	struct stress_run *run;
};

/*
 * A storage over a new external buffer filled with pattern @key; the
 * deleter records into @rec (which must outlive the data). NULL on failure.
 */
cow_storage_t *stress_ext_storage(struct stress_run *run,
    struct stress_ext *rec, size_t n, uint64_t key);

/* A private storage from the harness allocator filled with pattern @key. */
cow_storage_t *stress_alloc_storage(struct stress_run *run, size_t n,
    uint64_t key);

/* Count a buffer a scenario makes itself and gives to the library (a
 * DLPack producer's memory, borrowed memory, a mapping) in the live
 * totals below, from when it is made (add) until it is given back (sub). */
void stress_ext_add(size_t nbytes);
void stress_ext_sub(size_t nbytes);

/* External buffers and bytes still live (never freed by their deleter). */
uint64_t stress_ext_live_buffers(void);
uint64_t stress_ext_live_bytes(void);

/* Live allocations of the default allocator handle (which every harness
 * and library allocation reaches). */
uint64_t stress_default_live_allocs(void);

/* ---- reports ---------------------------------------------------------- */

struct stress_totals {
	uint64_t violations;
	uint64_t stress_live_bytes, stress_live_allocs;
	uint64_t default_live_bytes, default_live_allocs;
	uint64_t ext_live_bytes, ext_live_buffers;
	bool stress_destroyed;
	double elapsed;
};

void stress_report_text(const struct stress_options *opt,
    struct stress_run *runs, unsigned nruns,
    const struct stress_totals *tot);
/* Write the JSON report to @f (opened before the run, so that a path that
 * cannot be written is refused before the run); false if a write failed. */
bool stress_report_json(FILE *f, const struct stress_options *opt,
    struct stress_run *runs, unsigned nruns,
    const struct stress_totals *tot);
void stress_report_header(const struct stress_options *opt);
const char *stress_build_kind(void);

/* Live progress line and stall watchdog (a thread); stop it before the
 * report. The watchdog reports a violation and exits 1 when the current
 * round has not moved for STRESS_STALL_SECONDS. */
void stress_progress_start(const struct stress_options *opt);
void stress_progress_stop(void);

/* ---- options ---------------------------------------------------------- */

/* Parse argv; returns 0 to run, 1 if it printed help (exit 0), 2 on a
 * usage error (message printed). */
int stress_options_parse(int argc, char **argv, struct stress_options *opt);
unsigned stress_cores(void);

#endif
