/*
 * cow_snapbench - saving a tensor state while two writer threads go on:
 * cowstore's snapshots against eager staging and fork(), side by side
 * (docs/performance.md, "Snapshots"; scripts/bench-snapshots.sh runs every
 * configuration back to back), and the same state saved as a safetensors
 * file (the st- methods; docs/performance.md, "Files";
 * scripts/bench-files.sh).
 *
 *   cow_snapbench --method M [--write-pct P] [--state SIZE] [--tensors N]
 *       [--shape equal|mixed] [--dir DIR] [--baseline-ms MS]
 *       [--compute PASSES] [--sample-ms MS] [--keep] [--no-pin] [--json]
 *       [--warm-take] [--quick]
 *
 * One invocation measures one configuration, in a fresh process: the state
 * is --tensors float32 tensors (default 256) totalling --state bytes
 * (default 1G; --quick: 64M), of equal sizes or, with --shape mixed, sizes
 * in the ratio 1:2:4:8 repeating. Two writer threads own half of the
 * tensors each (writer 0 the first half) and run steps: a step adds 1 to
 * every element of the writer's "hot" tensors (cow_tensor_add_scalar_:
 * each hot tensor read and written fully), then does --compute passes of
 * arithmetic over a private 256 KiB buffer (default 256, about 0.6 ms on
 * the development machine: the work a step does besides writing the
 * state, so that a step at 0% takes time too).
 * --warm-take (snapshot methods): one snapshot of the state is taken and
 * released before the writers start, so that the timed take is not the
 * process's first (an engine that checkpoints every N steps takes its first
 * snapshot once): the first take in a process also pays the page faults of
 * the fresh memory its metadata lands on. stall_faults (the JSON's and the
 * line's "faults") counts the minor page faults of the stall.
 *
 * The hot tensors are --write-pct percent of the tensors, spread evenly
 * (tensor i is hot when floor((i + 1) p / 100) > floor(i p / 100)), the same
 * ones every step.
 *
 * A run: the state is filled, the writers warm up for a quarter of
 * --baseline-ms (default 2000; --quick: 300) and run --baseline-ms with no
 * save (the baseline step times), then the writers stop at a step boundary, the
 * method's stall runs (timed), the writers resume and the save runs to its
 * end (durable: fsync), and the writers stop. The file goes to DIR/
 * cow_snapbench.bin (a new file each run: unlinked, then created; opened,
 * and for cow-persist-first sized with ftruncate, before the stall), then
 * it is read back and every element compared with the state at the
 * snapshot step (initial value plus the number of steps the tensor's owner
 * had completed), and the live state with the writers' final counts; any
 * difference fails the run (exit 3). The file is unlinked at the end,
 * unless --keep.
 *
 * Methods:
 *   plain              the reference: the state's bytes written in order by
 *                      one thread (write(2), 8 MiB calls) and fsync, with
 *                      no writer running
 *   plain-busy         the same while the writers run steps that write no
 *                      tensor (--write-pct 0 only): what sharing the CPUs
 *                      with the writers costs any save, with no copy
 *   cow-stream         stall: cow_snapshot_take; then a job
 *                      (cow_snapshot_save_start, COW_SNAPSHOT_STREAM)
 *                      writes it with write(2), releasing as written
 *   cow-persist-first  stall: cow_snapshot_take; then a job in
 *                      COW_SNAPSHOT_PERSIST_FIRST with pwrite(2) at each
 *                      tensor's offset, started before the writers resume
 *                      (a write before the save runs copies instead of
 *                      persisting; the start is timed apart, start_ns, and
 *                      the writers wait for it); writers persist what they
 *                      reach first
 *   eager              stall: each tensor copied (memcpy) into a fresh
 *                      buffer (posix_memalign, first touched by the copy);
 *                      then a thread writes the buffers and frees them
 *   eager-pre          the same into buffers allocated and touched before
 *                      the run (a stager that keeps its staging buffers)
 *   fork               stall: fork(); the child writes the state from its
 *                      copy-on-write address space and exits
 *   nocopy             negative control of the verifier: no copy at all
 *                      (the live tensors written after the writers ran a
 *                      step, the torn save of PyTorch issue 144657); must
 *                      fail with "torn"
 *
 * The st- methods save the state as the safetensors file
 * DIR/cow_snapbench.safetensors (safetensors.h: a temporary file in DIR,
 * written, fsynced, renamed over it, DIR fsynced), read back through the
 * library's loader (cow_safetensors_open, each tensor found by its name):
 *   st-alone           plain's counterpart: no writer; the calling thread
 *                      takes a snapshot and saves it (cow_safetensors_save);
 *                      the save's wall time includes the take
 *   st-stream          as cow-stream, the job cow_safetensors_save_start
 *                      in COW_SNAPSHOT_STREAM
 *   st-persist-first   as cow-persist-first, the job
 *                      cow_safetensors_save_start in
 *                      COW_SNAPSHOT_PERSIST_FIRST, started before the
 *                      writers resume (start_ns: the temporary file made,
 *                      its space reserved, the header written)
 *   st-nocopy          negative control of the safetensors verifier: the
 *                      snapshot taken after the writers ran a step and
 *                      stopped, saved on the calling thread; must fail
 *                      with "torn"
 *
 * Memory: a sampler thread reads the processes' anonymous memory from the
 * end of the stall to the end of the save, every --sample-ms (default 5).
 * Extra memory is the peak less the same figure after the warm-up (the
 * writers and the sampler running, the method's own threads and buffers
 * not yet there). For fork,
 * the parent's and the child's Pss_Anon (smaps_rollup), summed, and once
 * more at the child's end (its extra only grows while it lives); Pss, not
 * Private_Dirty: after fork() the parent's pages are shared with the child
 * and count in neither's Private_Dirty, while Pss splits them, so the sum
 * is the memory both hold. A smaps_rollup read walks the page tables (10
 * ms of CPU for 1 GiB of this program on the development machine), so the
 * sampler then waits at least nine times its CPU time between reads (at
 * most a tenth of a CPU). The other methods run in one process, which
 * shares no page: RssAnon (/proc/PID/status, counters read in O(1)) is its
 * Pss_Anon. plain and st-alone run no sampler: their extra memory is the
 * peak resident set during the save (VmHWM, reset through
 * /proc/self/clear_refs just before it) less the resident set before.
 * The file's page cache counts in none of these.
 *
 * Figures: the stall is the method's call while the writers wait (take,
 * copy, fork); the save's wall time runs from the stall's start to the end
 * of its fsync (the child's exit for fork), and its throughput is the
 * state's bytes over that time. Step times are those of the steps that
 * started in the baseline and during the save; the writers' time lost is
 * both writers' stall (and start), plus the steps during the save times
 * their mean's excess over the baseline's mean.
 *
 * Output: one line, a table row or with --json a JSON object (fields in
 * print_result). Nothing here asserts a timing.
 */
#define _GNU_SOURCE /* program_invocation_short_name */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cowstore/cowstore.h>

#include "bench.h"

#define WRITERS 2
#define CHUNK ((size_t)8 << 20)      /* bytes per write(2), as the library */
#define SCRATCH_FLOATS (64 * 1024)   /* the step's private 256 KiB */
#define FILE_NAME "cow_snapbench.bin"

#define ST_FILE_NAME "cow_snapbench.safetensors"

enum method {
	M_PLAIN, M_PLAIN_BUSY, M_COW_STREAM, M_COW_PERSIST_FIRST, M_EAGER, M_EAGER_PRE,
	M_FORK, M_NOCOPY, M_ST_ALONE, M_ST_STREAM, M_ST_PERSIST_FIRST,
	M_ST_NOCOPY, M_COUNT
};

static const char *const method_names[M_COUNT] = {
	"plain", "plain-busy", "cow-stream", "cow-persist-first", "eager", "eager-pre",
	"fork", "nocopy", "st-alone", "st-stream", "st-persist-first",
	"st-nocopy"
};

/* The methods that save a safetensors file (cow_safetensors_save). */
static bool
is_st(enum method m)
{
	return m >= M_ST_ALONE;
}

struct options {
	enum method method;
	unsigned write_pct;
	uint64_t state_bytes;
	size_t tensors;
	bool mixed;
	const char *dir;
	unsigned baseline_ms;
	unsigned compute;
	unsigned sample_ms;
	bool json;
	bool keep;
	bool warm_take;
};

struct step {
	uint64_t start, ns;
};

struct writer {
	int id;
	pthread_t thread;
	size_t first, end;          /* its tensors: [first, end) */
	float *scratch;
	struct step *log;
	size_t nlog, cap;
	atomic_uint_fast64_t steps; /* steps completed */
	uint64_t steps_at_pause;
};

/* The run: the state, the writers and the phases' clocks. */
static struct {
	struct options o;
	size_t n;
	cow_tensor_t **t;
	char **names;
	uint64_t *nbytes;
	bool *hot;
	uint64_t total, hot_bytes;
	struct writer w[WRITERS];
	pthread_barrier_t paused, resumed;
	atomic_bool pause, stop;
	bool stopped;
	char path[4096];
	int fd;
} run;

/* ------------------------------------------------------------------ */
/* Small helpers. */

/* All of @n bytes: write(2) for @off < 0, else pwrite(2) at @off. 0 or an
 * errno value. */
static int
write_all_at(int fd, const void *data, size_t n, int64_t off)
{
	const char *p = data;

	while (n > 0) {
		size_t want = n < CHUNK ? n : CHUNK;
		ssize_t k = off < 0 ? write(fd, p, want) :
		    pwrite(fd, p, want, (off_t)off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return errno;
		p += k;
		n -= (size_t)k;
		if (off >= 0)
			off += k;
	}
	return 0;
}

static int
write_all(int fd, const void *data, size_t n)
{
	return write_all_at(fd, data, n, -1);
}

static int
cb_write(void *ctx, const void *data, size_t n)
{
	return write_all(*(int *)ctx, data, n);
}

static int
cb_pwrite(void *ctx, const void *data, size_t n, uint64_t off)
{
	return write_all_at(*(int *)ctx, data, n, (int64_t)off);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void
sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------ */
/* Memory: anonymous memory, pages shared between processes split among
 * them. */

struct sampler {
	pthread_t thread;
	pthread_mutex_t lock;      /* sample_once */
	atomic_bool go, done;
	atomic_int child;          /* the fork's child, 0 when none */
	bool pss;                  /* Pss_Anon (fork), else RssAnon */
	cow_snapshot_t *snap;      /* set before the sampler starts */
	unsigned period_ms;
	uint64_t peak;             /* the processes' sum */
	uint64_t snap_extra_peak;  /* the largest extra_bytes sampled */
	unsigned samples;
};

/* One sample; from the sampler and, at the fork child's end, from the
 * main thread. */
static void
sample_once(struct sampler *s)
{
	uint64_t total = 0;
	pid_t child = atomic_load(&s->child);

	pthread_mutex_lock(&s->lock);
	if (!bench_mem_read(getpid(), s->pss, &total))
		bench_die_errno("/proc/self");
	if (child > 0)
		(void)bench_mem_read(child, s->pss, &total);
	if (total > s->peak)
		s->peak = total;
	if (s->snap != NULL) {
		cow_snapshot_stats_t st;

		cow_snapshot_stats(s->snap, &st);
		if (st.extra_bytes > s->snap_extra_peak)
			s->snap_extra_peak = st.extra_bytes;
	}
	s->samples++;
	pthread_mutex_unlock(&s->lock);
}

static uint64_t
thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* This process's minor page faults so far (all threads). */
static long
minor_faults(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		bench_die_errno("getrusage");
	return ru.ru_minflt;
}

static void *
sampler_main(void *arg)
{
	struct sampler *s = arg;
	uint64_t unused = 0;

	/* One read now, so that this thread's own start-up memory (stdio's
	 * buffers) is in the baseline. Then it waits for the end of the
	 * stall: a read of smaps_rollup holds the address space's lock
	 * (mmap_lock) for reading, which fork() and a fresh mapping must
	 * wait for. */
	(void)bench_mem_read(getpid(), s->pss, &unused);
	while (!atomic_load(&s->go))
		sleep_ms(1);
	while (!atomic_load(&s->done)) {
		uint64_t t0 = thread_cpu_ns(), ms;

		sample_once(s);
		/* A smaps_rollup read walks the page tables (10 ms of CPU
		 * for this program's 1 GiB here): at most a tenth of a CPU
		 * goes to sampling. CPU time, not wall time: on a loaded
		 * machine a read's wall time includes waiting for a CPU. */
		ms = (thread_cpu_ns() - t0) * 9 / 1000000;
		sleep_ms(ms > s->period_ms ? (unsigned)ms : s->period_ms);
	}
	sample_once(s);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The state and the writers. */

static void
state_create(void)
{
	size_t n = run.o.tensors;
	uint64_t elems = run.o.state_bytes / 4, unit, used = 0;
	static const unsigned mix[4] = {1, 2, 4, 8};

	run.n = n;
	run.t = calloc(n, sizeof *run.t);
	run.names = calloc(n, sizeof *run.names);
	run.nbytes = calloc(n, sizeof *run.nbytes);
	run.hot = calloc(n, sizeof *run.hot);
	if (!run.t || !run.names || !run.nbytes || !run.hot)
		bench_die("out of memory");
	unit = run.o.mixed ? elems / ((n / 4) * 15 + (n % 4 ? 15 : 0)) :
	    elems / n;
	if (unit == 0)
		bench_die("state too small for that many tensors");
	for (size_t i = 0; i < n; i++) {
		int64_t numel = (int64_t)(run.o.mixed ? unit * mix[i % 4] : unit);
		float *p;

		if (i == n - 1) /* the remainder: the total is exact */
			numel = (int64_t)(elems - used);
		used += (uint64_t)numel;
		bench_check(cow_tensor_empty(COW_DTYPE_FLOAT32, 1, &numel,
		    bench_allocator(), &run.t[i]), "cow_tensor_empty");
		bench_check(cow_tensor_mutable_data(run.t[i], (void **)&p),
		    "cow_tensor_mutable_data");
		for (int64_t j = 0; j < numel; j++)
			p[j] = bench_state_value(i, (size_t)j);
		run.nbytes[i] = (uint64_t)numel * 4;
		run.total += run.nbytes[i];
		run.hot[i] = ((i + 1) * run.o.write_pct) / 100 >
		    (i * run.o.write_pct) / 100;
		if (run.hot[i])
			run.hot_bytes += run.nbytes[i];
		if (asprintf(&run.names[i], "t%04zu", i) < 0)
			bench_die("out of memory");
	}
}

static void
log_step(struct writer *w, uint64_t start, uint64_t ns)
{
	if (w->nlog == w->cap) {
		w->cap *= 2;
		if ((w->log = realloc(w->log, w->cap * sizeof *w->log)) == NULL)
			bench_die("out of memory");
	}
	w->log[w->nlog++] = (struct step){start, ns};
}

static void
step(struct writer *w)
{
	for (size_t i = w->first; i < w->end; i++)
		if (run.hot[i])
			bench_check(cow_tensor_add_scalar_(run.t[i], 1.0),
			    "cow_tensor_add_scalar_");
	for (unsigned p = 0; p < run.o.compute; p++)
		for (size_t k = 0; k < SCRATCH_FLOATS; k++)
			w->scratch[k] = w->scratch[k] * 0.5f + 1.0f;
	bench_consume((uintptr_t)w->scratch[0]);
}

static void *
writer_main(void *arg)
{
	struct writer *w = arg;

	for (;;) {
		uint64_t t0, t1;

		if (atomic_load(&run.stop))
			break;
		if (atomic_load(&run.pause)) {
			w->steps_at_pause = atomic_load(&w->steps);
			pthread_barrier_wait(&run.paused);
			pthread_barrier_wait(&run.resumed);
			continue;
		}
		t0 = bench_now_ns();
		step(w);
		t1 = bench_now_ns();
		atomic_fetch_add(&w->steps, 1);
		log_step(w, t0, t1 - t0);
	}
	return NULL;
}

/* The writers' memory, touched, so that the baseline holds it. */
static void
writers_prepare(void)
{
	for (int k = 0; k < WRITERS; k++) {
		struct writer *w = &run.w[k];

		w->id = k;
		w->first = run.n * (size_t)k / WRITERS;
		w->end = run.n * (size_t)(k + 1) / WRITERS;
		w->cap = 1u << 16;
		w->log = malloc(w->cap * sizeof *w->log);
		w->scratch = calloc(SCRATCH_FLOATS, sizeof *w->scratch);
		if (w->log == NULL || w->scratch == NULL)
			bench_die("out of memory");
		memset(w->log, 0, w->cap * sizeof *w->log);
		memset(w->scratch, 0, SCRATCH_FLOATS * sizeof *w->scratch);
	}
}

static void
writers_start(void)
{
	pthread_barrier_init(&run.paused, NULL, WRITERS + 1);
	pthread_barrier_init(&run.resumed, NULL, WRITERS + 1);
	for (int k = 0; k < WRITERS; k++) {
		struct writer *w = &run.w[k];

		if (pthread_create(&w->thread, NULL, writer_main, w) != 0)
			bench_die("pthread_create failed");
		bench_pin(w->thread, k);
	}
}

/* Stop the writers at a step boundary; they wait until writers_resume. */
static void
writers_pause(void)
{
	atomic_store(&run.pause, true);
	pthread_barrier_wait(&run.paused);
}

static void
writers_resume(void)
{
	atomic_store(&run.pause, false);
	pthread_barrier_wait(&run.resumed);
}

static void
writers_stop(void)
{
	if (run.stopped)
		return;
	run.stopped = true;
	atomic_store(&run.stop, true);
	for (int k = 0; k < WRITERS; k++)
		pthread_join(run.w[k].thread, NULL);
}

/* Wait until every writer has completed @n more steps than at the pause. */
static void
writers_wait_steps(uint64_t n)
{
	for (int k = 0; k < WRITERS; k++)
		while (atomic_load(&run.w[k].steps) <
		    run.w[k].steps_at_pause + n)
			sched_yield();
}

/* ------------------------------------------------------------------ */
/* Checking the bytes. */

/* Compare tensor @i's @n floats at element @j0 in @p with the state after
 * @steps writes (when hot); the count of elements that differ. */
static uint64_t
check_floats(size_t i, size_t j0, const float *p, size_t n, uint64_t steps)
{
	float add = run.hot[i] ? (float)steps : 0.0f;
	uint64_t bad = 0;

	for (size_t j = 0; j < n; j++)
		bad += p[j] != bench_state_value(i, j0 + j) + add;
	return bad;
}

static uint64_t
owner_steps(size_t i, bool at_pause)
{
	const struct writer *w = &run.w[i < run.w[1].first ? 0 : 1];

	return at_pause ? w->steps_at_pause : atomic_load(&w->steps);
}

/* The file against the state at the snapshot step: the number of elements
 * that differ (a short file counts its missing elements). */
static uint64_t
verify_file(void)
{
	float *buf = malloc(CHUNK);
	uint64_t bad = 0, off = 0;
	struct stat sb;

	if (buf == NULL)
		bench_die("out of memory");
	if (fstat(run.fd, &sb) != 0)
		bench_die_errno("fstat");
	if ((uint64_t)sb.st_size != run.total)
		fprintf(stderr, "verify: the file has %lld bytes, the state "
		    "%" PRIu64 "\n", (long long)sb.st_size, run.total);
	for (size_t i = 0; i < run.n; i++) {
		uint64_t steps = run.o.method == M_PLAIN ? owner_steps(i, false) :
		    owner_steps(i, true);

		for (uint64_t done = 0; done < run.nbytes[i];) {
			size_t want = run.nbytes[i] - done < CHUNK ?
			    (size_t)(run.nbytes[i] - done) : CHUNK;
			ssize_t k = pread(run.fd, buf, want, (off_t)(off + done));

			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0)
				bench_die_errno("pread");
			if (k == 0) { /* short file */
				bad += (run.nbytes[i] - done) / 4;
				break;
			}
			bad += check_floats(i, (size_t)(done / 4), buf,
			    (size_t)k / 4, steps);
			done += (uint64_t)k / 4 * 4;
		}
		off += run.nbytes[i];
	}
	free(buf);
	return bad;
}

/* The safetensors file of an st- method against the state at the snapshot
 * step, through the library's loader (which checks every rule of the
 * format; tests/files/st_interop.py checks the loader against an
 * independent reader): every tensor by its name, float32, one dimension of
 * the tensor's elements, each element compared. A tensor missing or of
 * another shape counts all its elements. */
static uint64_t
verify_st_file(void)
{
	cow_safetensors_t *f;
	uint64_t bad = 0;
	cow_status_t st = cow_safetensors_open(run.path, 0, &f);

	if (st != COW_OK)
		bench_fail("cow_safetensors_open of the saved file", st);
	if (cow_safetensors_count(f) != run.n)
		fprintf(stderr, "verify: the file has %zu tensors, the state "
		    "%zu\n", cow_safetensors_count(f), run.n);
	for (size_t i = 0; i < run.n; i++) {
		uint64_t steps = run.o.method == M_ST_ALONE ?
		    owner_steps(i, false) : owner_steps(i, true);
		cow_tensor_t *t;
		size_t k;

		if (cow_safetensors_find(f, run.names[i], &k) != COW_OK ||
		    cow_safetensors_dtype(f, k) != COW_DTYPE_FLOAT32 ||
		    cow_safetensors_ndim(f, k) != 1 ||
		    (uint64_t)cow_safetensors_sizes(f, k)[0] * 4 !=
		    run.nbytes[i]) {
			fprintf(stderr, "verify: tensor %s is missing or not "
			    "float32 [%" PRIu64 "]\n", run.names[i],
			    run.nbytes[i] / 4);
			bad += run.nbytes[i] / 4;
			continue;
		}
		bench_check(cow_safetensors_get(f, k, &t), "cow_safetensors_get");
		bad += check_floats(i, 0, cow_tensor_const_data(t),
		    (size_t)(run.nbytes[i] / 4), steps);
		cow_tensor_release(t);
	}
	cow_safetensors_close(f);
	return bad;
}

/* The live state against the writers' final counts. */
static uint64_t
verify_live(void)
{
	uint64_t bad = 0;

	for (size_t i = 0; i < run.n; i++)
		bad += check_floats(i, 0, cow_tensor_const_data(run.t[i]),
		    (size_t)(run.nbytes[i] / 4), owner_steps(i, false));
	return bad;
}

/* ------------------------------------------------------------------ */
/* The methods' persisters. */

struct stager {
	pthread_t thread;
	void **buf;
	bool fresh;               /* free the buffers when written */
	int err;
};

static void *
stager_main(void *arg)
{
	struct stager *s = arg;

	for (size_t i = 0; i < run.n && s->err == 0; i++)
		s->err = write_all(run.fd, s->buf[i], run.nbytes[i]);
	if (s->err == 0 && fsync(run.fd) != 0)
		s->err = errno;
	if (s->fresh)
		for (size_t i = 0; i < run.n; i++) {
			free(s->buf[i]);
			s->buf[i] = NULL;
		}
	return NULL;
}

static void
stage_alloc(struct stager *s, size_t i)
{
	if (posix_memalign(&s->buf[i], 64, run.nbytes[i] ? run.nbytes[i] : 1))
		bench_die("out of memory for staging");
}

/* The fork's child: the state from its copy of the address space, through
 * raw pointers taken before the fork (no library call, no lock). Once the
 * file is durable it says so on @done and waits for a byte on @go before it
 * exits, so that the parent measures the memory both hold at the end (a
 * fork's extra memory only grows while the child lives). */
static _Noreturn void
child_save(const void *const *ptrs, int done, int go)
{
	char ok = 1;

	for (size_t i = 0; i < run.n && ok; i++)
		ok = write_all(run.fd, ptrs[i], run.nbytes[i]) == 0;
	ok = ok && fsync(run.fd) == 0;
	if (write(done, &ok, 1) != 1 || read(go, &ok, 1) != 1)
		_exit(1);
	_exit(0);
}

static void
write_live(void)
{
	for (size_t i = 0; i < run.n; i++) {
		int err = write_all(run.fd, cow_tensor_const_data(run.t[i]),
		    run.nbytes[i]);

		if (err != 0) {
			errno = err;
			bench_die_errno("write");
		}
	}
	if (fsync(run.fd) != 0)
		bench_die_errno("fsync");
}

/* ------------------------------------------------------------------ */
/* Results. */

struct stats {
	size_t count;
	uint64_t p50, p99, max;
	double mean;
};

/* The step times of every writer whose step started in [from, to). */
static struct stats
step_stats(uint64_t from, uint64_t to)
{
	struct stats r = {0};
	uint64_t *v;
	size_t n = 0, cap = 0;
	double sum = 0;

	for (int k = 0; k < WRITERS; k++)
		cap += run.w[k].nlog;
	if ((v = malloc((cap ? cap : 1) * sizeof *v)) == NULL)
		bench_die("out of memory");
	for (int k = 0; k < WRITERS; k++)
		for (size_t s = 0; s < run.w[k].nlog; s++) {
			const struct step *e = &run.w[k].log[s];

			if (e->start >= from && e->start < to) {
				v[n++] = e->ns;
				sum += (double)e->ns;
			}
		}
	if (n > 0) {
		qsort(v, n, sizeof *v, cmp_u64);
		r.count = n;
		r.p50 = v[(n - 1) / 2];
		r.p99 = v[(size_t)ceil(0.99 * (double)n) - 1];
		r.max = v[n - 1];
		r.mean = sum / (double)n;
	}
	free(v);
	return r;
}

struct result {
	uint64_t stall_ns, start_ns, pause_ns, save_ns;
	long stall_faults; /* minor page faults during the stall */
	struct stats base, during;
	double lost_ns;
	uint64_t mem_base, mem_peak;
	unsigned samples;
	cow_snapshot_stats_t snap;
	uint64_t snap_extra_sampled;
	uint64_t bad_file, bad_live;
	uint64_t file_bytes;
};

static void
print_result(const struct result *r)
{
	const struct options *o = &run.o;
	double gbps = r->save_ns ? (double)run.total / (double)r->save_ns : 0;
	int64_t extra = (int64_t)r->mem_peak - (int64_t)r->mem_base;
	bool cow = o->method == M_COW_STREAM ||
	    o->method == M_COW_PERSIST_FIRST || is_st(o->method);

	if (!o->json) {
		printf("%-18s %3u%% stall %10.1f us (%ld faults, +%.1f us start)  save %8.1f ms %6.2f GB/s"
		    "  steps base p50/p99/max %.2f/%.2f/%.2f ms (%zu)"
		    "  during %.2f/%.2f/%.2f ms (%zu)  lost %.1f ms"
		    "  extra %.3fx (%" PRId64 " MiB)", method_names[o->method],
		    o->write_pct, (double)r->stall_ns / 1e3, r->stall_faults,
		    (double)r->start_ns / 1e3, (double)r->save_ns / 1e6, gbps,
		    (double)r->base.p50 / 1e6, (double)r->base.p99 / 1e6,
		    (double)r->base.max / 1e6, r->base.count,
		    (double)r->during.p50 / 1e6, (double)r->during.p99 / 1e6,
		    (double)r->during.max / 1e6, r->during.count,
		    r->lost_ns / 1e6, (double)extra / (double)run.total,
		    extra / (1 << 20));
		if (cow)
			printf("  snapshot extra_peak %.3fx, %" PRIu64
			    " writer copies, %" PRIu64 " writer persists",
			    (double)r->snap.extra_peak / (double)run.total,
			    r->snap.writer_copies, r->snap.writer_persists);
		printf("  verify %s\n", r->bad_file || r->bad_live ? "FAILED" :
		    "ok");
		return;
	}
	printf("{\"method\": \"%s\", \"write_pct\": %u, \"state_bytes\": %"
	    PRIu64 ", \"tensors\": %zu, \"shape\": \"%s\", \"hot_bytes\": %"
	    PRIu64 ", \"compute\": %u, \"warm_take\": %s, \"stall_faults\": %ld, \"stall_ns\": %" PRIu64
	    ", \"start_ns\": %" PRIu64 ", \"pause_ns\": %" PRIu64
	    ", \"save_ns\": %" PRIu64 ", \"save_gb_per_s\": %.4f",
	    method_names[o->method], o->write_pct, run.total, run.n,
	    o->mixed ? "mixed" : "equal", run.hot_bytes, o->compute,
	    o->warm_take ? "true" : "false", r->stall_faults, r->stall_ns, r->start_ns, r->pause_ns, r->save_ns, gbps);
	printf(", \"base_steps\": %zu, \"base_p50_ns\": %" PRIu64
	    ", \"base_p99_ns\": %" PRIu64 ", \"base_max_ns\": %" PRIu64
	    ", \"base_mean_ns\": %.0f", r->base.count, r->base.p50,
	    r->base.p99, r->base.max, r->base.mean);
	printf(", \"save_steps\": %zu, \"save_p50_ns\": %" PRIu64
	    ", \"save_p99_ns\": %" PRIu64 ", \"save_max_ns\": %" PRIu64
	    ", \"save_mean_ns\": %.0f, \"lost_ns\": %.0f", r->during.count,
	    r->during.p50, r->during.p99, r->during.max, r->during.mean,
	    r->lost_ns);
	printf(", \"mem_base_bytes\": %" PRIu64 ", \"mem_peak_bytes\": %"
	    PRIu64 ", \"extra_bytes\": %" PRId64 ", \"extra_ratio\": %.4f"
	    ", \"mem_samples\": %u, \"mem_kind\": \"%s\"", r->mem_base,
	    r->mem_peak, extra, (double)extra / (double)run.total, r->samples,
	    r->samples == 0 ? "VmHWM less VmRSS before" : o->method == M_FORK ?
	    "Pss_Anon sampled" : "RssAnon sampled");
	if (cow)
		printf(", \"snap_extra_peak_bytes\": %" PRIu64
		    ", \"snap_extra_sampled_bytes\": %" PRIu64
		    ", \"snap_writer_copies\": %" PRIu64
		    ", \"snap_writer_persists\": %" PRIu64,
		    r->snap.extra_peak, r->snap_extra_sampled,
		    r->snap.writer_copies, r->snap.writer_persists);
	printf(", \"file_bytes\": %" PRIu64 ", \"verify\": \"%s\""
	    ", \"bad_file_elements\": %" PRIu64 ", \"bad_live_elements\": %"
	    PRIu64 "}\n", r->file_bytes,
	    r->bad_file || r->bad_live ? "failed" : "ok", r->bad_file,
	    r->bad_live);
}

/* ------------------------------------------------------------------ */
/* One run. */

/* The file: unlinked, then (except for the st- methods, whose save makes
 * its own temporary file and renames it) created. */
static void
open_target(void)
{
	bool st = is_st(run.o.method);
	int n = snprintf(run.path, sizeof run.path, "%s/%s", run.o.dir,
	    st ? ST_FILE_NAME : FILE_NAME);

	run.fd = -1;
	if (n < 0 || (size_t)n >= sizeof run.path)
		bench_die("--dir too long");
	if (unlink(run.path) != 0 && errno != ENOENT)
		bench_die_errno(run.path);
	if (st)
		return;
	run.fd = open(run.path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (run.fd < 0)
		bench_die_errno(run.path);
}

static void
job_finish(cow_snapshot_job_t *job, const char *what)
{
	cow_status_t st = cow_snapshot_job_wait(job);

	if (st != COW_OK)
		bench_fail(what, st);
	cow_snapshot_job_release(job);
	if (run.fd >= 0 && fsync(run.fd) != 0) /* st-: the save's own */
		bench_die_errno("fsync");
}

/* The snapshot of the whole state (the writers paused or not running). */
static cow_snapshot_t *
take(void)
{
	cow_snapshot_t *snap;

	bench_check(cow_snapshot_take(run.n, run.t,
	    (const char *const *)run.names, &snap), "cow_snapshot_take");
	return snap;
}

static void
save_st(cow_snapshot_t *snap)
{
	bench_check(cow_safetensors_save(snap, run.path, NULL),
	    "cow_safetensors_save");
}

/* plain and st-alone: no writer, the calling thread writes (st-alone: takes
 * a snapshot and saves it, cow_safetensors_save). Memory: the peak
 * resident set during the save (VmHWM, reset before it) against the
 * resident set before; no file is mapped meanwhile, so what grows is
 * anonymous memory (and any code page first touched). */
static void
run_alone(struct result *r)
{
	uint64_t t0;
	cow_snapshot_t *snap;
	pid_t self = getpid();

	if (!bench_proc_field(self, "status", "VmRSS", &r->mem_base) ||
	    !bench_peak_reset())
		bench_die_errno("/proc/self");
	t0 = bench_now_ns();
	if (run.o.method == M_PLAIN) {
		write_live();
	} else {
		snap = take();
		save_st(snap);
		cow_snapshot_stats(snap, &r->snap);
		cow_snapshot_release(snap);
	}
	r->save_ns = bench_now_ns() - t0;
	if (!bench_proc_field(self, "status", "VmHWM", &r->mem_peak))
		bench_die_errno("/proc/self/status");
}

static void
run_saving(struct result *r)
{
	const enum method m = run.o.method;
	struct sampler smp = {.period_ms = run.o.sample_ms};
	struct stager stg = {.fresh = m == M_EAGER};
	const void **ptrs = NULL;
	cow_snapshot_t *snap = NULL;
	cow_snapshot_job_t *job = NULL;
	cow_snapshot_save_t how = {.ctx = &run.fd};
	cow_safetensors_save_t st_how = {0};
	uint64_t t_base, t_pause, t_stall, t_resume, t_start, t_end = 0;
	pid_t child = -1;
	long faults, stall_faults;
	int status, done[2] = {-1, -1}, go[2] = {-1, -1};
	char ok = 0;

	if ((stg.buf = calloc(run.n, sizeof *stg.buf)) == NULL ||
	    (ptrs = calloc(run.n, sizeof *ptrs)) == NULL)
		bench_die("out of memory");
	smp.pss = m == M_FORK;
	pthread_mutex_init(&smp.lock, NULL);
	if (m == M_FORK && (pipe(done) != 0 || pipe(go) != 0))
		bench_die_errno("pipe");
	if (m == M_COW_PERSIST_FIRST && ftruncate(run.fd, (off_t)run.total))
		bench_die_errno("ftruncate");
	writers_prepare();
	if (run.o.warm_take) /* before any writer runs: nothing to order */
		cow_snapshot_release(take());
	writers_start();
	if (pthread_create(&smp.thread, NULL, sampler_main, &smp) != 0)
		bench_die("pthread_create failed");
	sleep_ms(run.o.baseline_ms / 4 + 1); /* warm-up, not counted */
	/* The memory before anything of the method's exists, the writers
	 * and the sampler running. Pss for fork (the child shares the
	 * parent's pages), else the cheaper RssAnon. */
	if (!bench_mem_read(getpid(), smp.pss, &r->mem_base))
		bench_die_errno("/proc/self");
	if (m == M_EAGER_PRE)
		for (size_t i = 0; i < run.n; i++) {
			stage_alloc(&stg, i);
			memset(stg.buf[i], 0, run.nbytes[i]);
		}
	t_base = bench_now_ns();
	sleep_ms(run.o.baseline_ms);

	t_pause = bench_now_ns();
	writers_pause();
	for (size_t i = 0; i < run.n; i++) /* stable: nothing shares them */
		ptrs[i] = cow_tensor_const_data(run.t[i]);

	faults = minor_faults();
	t_stall = bench_now_ns();
	switch (m) {
	case M_COW_STREAM:
	case M_COW_PERSIST_FIRST:
	case M_ST_STREAM:
	case M_ST_PERSIST_FIRST:
		snap = take();
		break;
	case M_EAGER:
	case M_EAGER_PRE:
		for (size_t i = 0; i < run.n; i++) {
			if (m == M_EAGER)
				stage_alloc(&stg, i);
			memcpy(stg.buf[i], ptrs[i], run.nbytes[i]);
		}
		break;
	case M_FORK:
		if ((child = fork()) < 0)
			bench_die_errno("fork");
		if (child == 0)
			child_save(ptrs, done[1], go[0]);
		close(done[1]);
		close(go[0]);
		break;
	default:
		break;
	}
	t_resume = bench_now_ns();
	stall_faults = minor_faults() - faults;
	if (m == M_COW_PERSIST_FIRST) {
		/* Started before the writers resume: a writer's first write
		 * persists a tensor only while the save runs. */
		how.mode = COW_SNAPSHOT_PERSIST_FIRST;
		how.pwrite = cb_pwrite;
		bench_check(cow_snapshot_save_start(snap, &how, &job),
		    "cow_snapshot_save_start");
	} else if (m == M_ST_PERSIST_FIRST) {
		/* The same, with the file made (posix_fallocate) and its
		 * header written here. */
		st_how.mode = COW_SNAPSHOT_PERSIST_FIRST;
		bench_check(cow_safetensors_save_start(snap, run.path, &st_how,
		    &job), "cow_safetensors_save_start");
	}
	t_start = bench_now_ns();
	smp.snap = snap; /* the sampler reads it from its next sample */
	atomic_store(&smp.child, child > 0 ? child : 0);
	atomic_store(&smp.go, true);
	writers_resume();

	switch (m) {
	case M_COW_STREAM:
		how.mode = COW_SNAPSHOT_STREAM;
		how.write = cb_write;
		bench_check(cow_snapshot_save_start(snap, &how, &job),
		    "cow_snapshot_save_start");
		job_finish(job, "the stream save");
		break;
	case M_COW_PERSIST_FIRST:
	case M_ST_PERSIST_FIRST:
		job_finish(job, "the persist-first save");
		break;
	case M_ST_STREAM:
		st_how.mode = COW_SNAPSHOT_STREAM;
		bench_check(cow_safetensors_save_start(snap, run.path, &st_how,
		    &job), "cow_safetensors_save_start");
		job_finish(job, "the stream save");
		break;
	case M_EAGER:
	case M_EAGER_PRE:
		if (pthread_create(&stg.thread, NULL, stager_main, &stg) != 0)
			bench_die("pthread_create failed");
		pthread_join(stg.thread, NULL);
		if (stg.err != 0) {
			errno = stg.err;
			bench_die_errno("the staged save");
		}
		break;
	case M_FORK:
		if (read(done[0], &ok, 1) == 1 && ok) {
			t_end = bench_now_ns();
			sample_once(&smp); /* the end: both still hold theirs */
		}
		if (write(go[1], &ok, 1) != 1 && ok)
			bench_die_errno("write to the fork's child");
		if (waitpid(child, &status, 0) != child)
			bench_die_errno("waitpid");
		if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			bench_die("the fork's child failed to save");
		close(done[0]);
		close(go[1]);
		break;
	case M_PLAIN_BUSY:
		write_live();
		break;
	case M_NOCOPY:
		/* The live bytes, after each writer wrote its hot tensors
		 * once more: what a save that skips the copy persists. */
		writers_wait_steps(1);
		write_live();
		break;
	case M_ST_NOCOPY:
		/* The same for a safetensors save: the snapshot taken after
		 * the writers ran a step, once they have stopped. */
		writers_wait_steps(1);
		writers_stop();
		snap = take();
		save_st(snap);
		break;
	default:
		break;
	}
	if (t_end == 0)
		t_end = bench_now_ns();
	atomic_store(&smp.child, 0);
	atomic_store(&smp.done, true);
	pthread_join(smp.thread, NULL);
	writers_stop();

	r->stall_ns = t_resume - t_stall;
	r->stall_faults = stall_faults;
	r->start_ns = m == M_COW_PERSIST_FIRST || m == M_ST_PERSIST_FIRST ?
	    t_start - t_resume : 0;
	r->pause_ns = t_start - t_pause;
	r->save_ns = t_end - t_stall;
	r->base = step_stats(t_base, t_pause);
	r->during = step_stats(t_start, t_end);
	/* Time lost to the save: both writers' stall and the save's start
	 * where they wait for it, and what their steps during the save took
	 * beyond the baseline's mean. */
	r->lost_ns = (double)WRITERS * (double)(r->stall_ns + r->start_ns) +
	    (double)r->during.count * (r->during.mean - r->base.mean);
	pthread_mutex_destroy(&smp.lock);
	r->mem_peak = smp.peak;
	r->samples = smp.samples;
	r->snap_extra_sampled = smp.snap_extra_peak;
	if (snap != NULL) {
		cow_snapshot_stats(snap, &r->snap);
		cow_snapshot_release(snap);
	}
	if (m == M_EAGER_PRE)
		for (size_t i = 0; i < run.n; i++)
			free(stg.buf[i]);
	free(stg.buf);
	free(ptrs);
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: %s --method plain|plain-busy|cow-stream|cow-persist-first|"
	    "eager|eager-pre|fork|nocopy|st-alone|st-stream|st-persist-first|"
	    "st-nocopy [--write-pct 0-100] [--state SIZE] "
	    "[--tensors N] [--shape equal|mixed] [--dir DIR] "
	    "[--baseline-ms MS] [--compute PASSES] [--sample-ms MS] "
	    "[--keep] [--no-pin] [--json] [--warm-take] [--quick]\n",
	    program_invocation_short_name);
}

static void
parse_args(int argc, char **argv)
{
	struct options *o = &run.o;
	bool quick = false, have_method = false, have_state = false;
	bool have_baseline = false;

	*o = (struct options){.tensors = 256, .dir = ".", .baseline_ms = 2000,
	    .compute = 256, .sample_ms = 5, .state_bytes = (uint64_t)1 << 30};
	bench_pin_init(true);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--quick") == 0) {
			quick = true;
			continue;
		} else if (strcmp(a, "--json") == 0) {
			o->json = true;
			continue;
		} else if (strcmp(a, "--keep") == 0) {
			o->keep = true;
			continue;
		} else if (strcmp(a, "--warm-take") == 0) {
			o->warm_take = true;
			continue;
		} else if (strcmp(a, "--no-pin") == 0) {
			bench_pin_init(false);
			continue;
		} else if (strcmp(a, "--help") == 0) {
			usage(stdout);
			exit(0);
		}
		if (v == NULL) {
			usage(stderr);
			exit(2);
		}
		i++;
		if (strcmp(a, "--method") == 0) {
			int m;

			for (m = 0; m < M_COUNT; m++)
				if (strcmp(v, method_names[m]) == 0)
					break;
			if (m == M_COUNT)
				bench_die("unknown method \"%s\"", v);
			o->method = (enum method)m;
			have_method = true;
		} else if (strcmp(a, "--write-pct") == 0) {
			o->write_pct = (unsigned)strtoul(v, NULL, 10);
			if (o->write_pct > 100)
				bench_die("--write-pct %s: 0 to 100", v);
		} else if (strcmp(a, "--state") == 0) {
			if (!bench_parse_size(v, &o->state_bytes))
				bench_die("bad size \"%s\"", v);
			have_state = true;
		} else if (strcmp(a, "--tensors") == 0) {
			o->tensors = (size_t)strtoul(v, NULL, 10);
		} else if (strcmp(a, "--shape") == 0) {
			if (strcmp(v, "mixed") != 0 && strcmp(v, "equal") != 0)
				bench_die("--shape %s: equal or mixed", v);
			o->mixed = strcmp(v, "mixed") == 0;
		} else if (strcmp(a, "--dir") == 0) {
			o->dir = v;
		} else if (strcmp(a, "--baseline-ms") == 0) {
			o->baseline_ms = (unsigned)strtoul(v, NULL, 10);
			have_baseline = true;
		} else if (strcmp(a, "--compute") == 0) {
			o->compute = (unsigned)strtoul(v, NULL, 10);
		} else if (strcmp(a, "--sample-ms") == 0) {
			o->sample_ms = (unsigned)strtoul(v, NULL, 10);
		} else {
			usage(stderr);
			exit(2);
		}
	}
	if (!have_method) {
		usage(stderr);
		exit(2);
	}
	if (quick && !have_state)
		o->state_bytes = (uint64_t)64 << 20;
	if (quick && !have_baseline)
		o->baseline_ms = 300;
	if (o->method == M_PLAIN_BUSY && o->write_pct != 0)
		bench_die("plain-busy writes the live state: --write-pct 0 only");
	if (o->tensors < WRITERS)
		bench_die("--tensors: at least 2");
	if (o->sample_ms == 0)
		o->sample_ms = 1;
}

int
main(int argc, char **argv)
{
	struct result r = {0};
	struct stat sb;

	parse_args(argc, argv);
	state_create();
	open_target();
	if (run.o.method == M_PLAIN || run.o.method == M_ST_ALONE)
		run_alone(&r);
	else
		run_saving(&r);
	r.bad_file = is_st(run.o.method) ? verify_st_file() : verify_file();
	if (stat(run.path, &sb) != 0)
		bench_die_errno(run.path);
	r.file_bytes = (uint64_t)sb.st_size;
	r.bad_live = verify_live();
	print_result(&r);
	fflush(stdout);
	if (run.fd >= 0)
		close(run.fd);
	if (!run.o.keep && unlink(run.path) != 0)
		bench_die_errno(run.path);
	if (r.bad_file != 0 || r.bad_live != 0) {
		fprintf(stderr, "%s: %s: the save is torn: %" PRIu64 " of %"
		    PRIu64 " elements of the file differ from the state at the "
		    "snapshot step, %" PRIu64 " of the live state from the "
		    "writers' counts\n", program_invocation_short_name,
		    method_names[run.o.method], r.bad_file, run.total / 4,
		    r.bad_live);
		return 3;
	}
	return 0;
}
