/*
 * The reshape-alias simulation across threads (COW_RESHAPE_WARN,
 * cowstore/shadow.h), under the warn-always policy:
 *
 * - own_storages: each thread writes and reads tensors of its own storage
 *   (T, a view of it, and U = reshape(T) in warn mode): no false warning,
 *   exact generations; then a write through U warns exactly once, for that
 *   thread's storage only.
 * - shared_forks: threads reshape one shared tensor at once in warn mode
 *   (racing to install its storage's default shadow) and read it: every
 *   result gets its own shadow, nobody warns, generations stay 0.
 * - handler_switch: threads keep warning while the main thread switches the
 *   handler back and forth: every warning reaches exactly one handler, and
 *   once cow_shadow_handler_set returns, no call of the previous handler
 *   is running and none starts.
 * - handler_reentry: a handler that reads the reported tensor is not
 *   reported again on its own thread, while another thread's report still
 *   reaches it (the first thread's handler waits inside for it); after it
 *   returns, the next access is reported as before.
 *
 * A plain executable (not Criterion) so it also runs under TSan.
 * Prints "N passed, N failed"; exits non-zero on any failure.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "cow_test.h"
#include "thread_test.h"

#define THREADS 4
#define ROUNDS 300
#define FORK_ROUNDS 100
#define SWITCHES 200
#define N 256

static atomic_int failures, passes;
static pthread_barrier_t start;

/* Warnings per storage of part own_storages: storages[i] is thread i's. */
static const cow_storage_t *storages[THREADS];
static atomic_int warnings[THREADS + 1]; /* [THREADS]: unknown storage */

static void
check(int id, bool ok, const char *what)
{
	if (ok) {
		atomic_fetch_add(&passes, 1);
		return;
	}
	if (atomic_fetch_add(&failures, 1) < 10)
		fprintf(stderr, "thread %d: %s (%s)\n", id, what,
		    cow_last_error());
}

static void
count_by_storage(const cow_shadow_event_t *e, void *ctx)
{
	int i = 0;

	(void)ctx;
	while (i < THREADS && storages[i] != e->storage)
		i++;
	atomic_fetch_add(&warnings[i], 1);
}

static uint64_t
pgen(const cow_tensor_t *t)
{
	uint64_t g = 12345;

	(void)cow_storage_physical_generation(cow_tensor_storage(t), &g);
	return g;
}

static uint64_t
sgen(const cow_tensor_t *t)
{
	uint64_t g = 12345;

	(void)cow_tensor_shadow_generation(t, &g);
	return g;
}

static cow_tensor_t *
reshape_warn(cow_tensor_t *t, int ndim, const int64_t *sizes)
{
	cow_tensor_t *r;

	if (cow_reshape_mode_set_thread(COW_RESHAPE_WARN, NULL) != COW_OK ||
	    cow_tensor_reshape(t, ndim, sizes, &r) != COW_OK)
		abort();
	return r;
}

/* ------------------------------------------------------------------ */

static void *
own_storage_worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	cow_tensor_t *t, *u, *v;
	uint64_t writes = 0;

	if (cow_tensor_full(COW_DTYPE_FLOAT64, 1, (int64_t[]){N}, 0, NULL,
	    &t) != COW_OK)
		abort();
	u = reshape_warn(t, 2, (int64_t[]){16, N / 16});
	if (cow_tensor_narrow(t, 0, 8, 8, &v) != COW_OK)
		abort();
	storages[id] = cow_tensor_storage(t);
	pthread_barrier_wait(&start);
	for (int r = 0; r < ROUNDS; r++) {
		check(id, cow_tensor_add_scalar_(t, 1) == COW_OK, "T += 1");
		check(id, cow_tensor_fill_(v, r) == COW_OK, "fill V");
		writes += 2;
		check(id, thr_sum(v) == 8.0 * r, "sum of V");
		check(id, thr_sum(t) == (N - 8) * (r + 1.0) + 8.0 * r,
		    "sum of T");
	}
	check(id, pgen(t) == writes && sgen(t) == writes && sgen(v) == writes,
	    "T's and V's generations count every write");
	check(id, sgen(u) == 0, "U's generation did not move");
	pthread_barrier_wait(&start);
	/* Every thread is done: no warning anywhere yet. */
	check(id, atomic_load(&warnings[id]) == 0, "a false warning");
	check(id, atomic_load(&warnings[THREADS]) == 0, "unknown storage");
	pthread_barrier_wait(&start);
	check(id, cow_tensor_fill_(u, 1) == COW_OK, "write U");
	check(id, atomic_load(&warnings[id]) == 1, "U's write warned once");
	check(id, thr_sum(t) == N, "T sees U's write (aliasing kept)");
	check(id, atomic_load(&warnings[id]) == 2, "T's read after U's");
	cow_tensor_release(v);
	cow_tensor_release(u);
	cow_tensor_release(t);
	return NULL;
}

static void
own_storages(void)
{
	pthread_t th[THREADS];

	cow_shadow_handler_set(count_by_storage, NULL);
	for (intptr_t i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, own_storage_worker, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < THREADS; i++)
		check(-1, atomic_load(&warnings[i]) == 2,
		    "warnings per storage");
	check(-1, atomic_load(&warnings[THREADS]) == 0, "unknown storage");
}

/* ------------------------------------------------------------------ */

static cow_tensor_t *shared_t;
static cow_tensor_t *forks[THREADS];
static atomic_int fork_warnings;

static void
count_all(const cow_shadow_event_t *e, void *ctx)
{
	(void)e;
	atomic_fetch_add((atomic_int *)ctx, 1);
}

static void *
fork_worker(void *arg)
{
	int id = (int)(intptr_t)arg;

	for (int r = 0; r < FORK_ROUNDS; r++) {
		cow_tensor_t *u, *v;

		pthread_barrier_wait(&start);
		u = reshape_warn(shared_t, 2, (int64_t[]){N / 8, 8});
		check(id, thr_sum(shared_t) == N * (N - 1) / 2.0, "read T");
		check(id, thr_sum(u) == N * (N - 1) / 2.0, "read U");
		if (cow_tensor_view(u, 1, (int64_t[]){N}, &v) != COW_OK)
			abort();
		check(id, cow_tensor_shares_shadow(u, v) &&
		    !cow_tensor_shares_shadow(u, shared_t), "shadows");
		check(id, sgen(u) == 0 && pgen(u) == 0, "generations");
		cow_tensor_release(v);
		forks[id] = u;
		pthread_barrier_wait(&start);
		/* The main thread checks and releases. */
		pthread_barrier_wait(&start);
	}
	return NULL;
}

static void
shared_forks(void)
{
	pthread_t th[THREADS];

	pthread_barrier_destroy(&start);
	pthread_barrier_init(&start, NULL, THREADS + 1);
	cow_shadow_handler_set(count_all, &fork_warnings);
	for (intptr_t i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, fork_worker, (void *)i);
	for (int r = 0; r < FORK_ROUNDS; r++) {
		if (cow_tensor_arange(COW_DTYPE_FLOAT64, N, NULL, &shared_t) !=
		    COW_OK)
			abort();
		check(-1, pgen(shared_t) == COW_GENERATION_NONE, "fresh");
		pthread_barrier_wait(&start);
		pthread_barrier_wait(&start);
		check(-1, pgen(shared_t) == 0 && sgen(shared_t) == 0,
		    "one default shadow, in sync");
		for (int i = 0; i < THREADS; i++)
			for (int j = i + 1; j < THREADS; j++)
				check(-1, !cow_tensor_shares_shadow(forks[i],
				    forks[j]), "each fork has its own shadow");
		for (int i = 0; i < THREADS; i++)
			cow_tensor_release(forks[i]);
		cow_tensor_release(shared_t);
		pthread_barrier_wait(&start);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	check(-1, atomic_load(&fork_warnings) == 0, "no warning from reads");
}

/* ------------------------------------------------------------------ */

#define WARN_WRITES 200

static atomic_int switch_done;

/* A handler's context: its calls, those running now, and whether it has
 * been replaced (a call that starts then, or runs then, is a failure). */
struct switched {
	atomic_int calls, running, retired, late;
};

static struct switched handler_a, handler_b;

static void
count_switched(const cow_shadow_event_t *e, void *ctx)
{
	struct switched *h = ctx;

	(void)e;
	atomic_fetch_add(&h->running, 1);
	if (atomic_load(&h->retired))
		atomic_fetch_add(&h->late, 1);
	atomic_fetch_add(&h->calls, 1);
	sched_yield(); /* a longer call: a switch that does not wait shows */
	atomic_fetch_sub(&h->running, 1);
}

static void *
switch_worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	cow_tensor_t *t, *u;

	if (cow_tensor_full(COW_DTYPE_INT32, 1, (int64_t[]){64}, 0, NULL,
	    &t) != COW_OK)
		abort();
	u = reshape_warn(t, 2, (int64_t[]){8, 8});
	pthread_barrier_wait(&start);
	/* After the first, every write follows one through the other set. */
	for (int k = 0; k < WARN_WRITES; k++)
		check(id, cow_tensor_fill_(k % 2 ? u : t, k) == COW_OK,
		    "write");
	cow_tensor_release(u);
	cow_tensor_release(t);
	atomic_fetch_add(&switch_done, 1);
	return NULL;
}

static void
handler_switch(void)
{
	pthread_t th[THREADS];
	int s = 0;

	pthread_barrier_destroy(&start);
	pthread_barrier_init(&start, NULL, THREADS + 1);
	int busy = 0;

	cow_shadow_handler_set(count_switched, &handler_a);
	for (intptr_t i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, switch_worker, (void *)i);
	pthread_barrier_wait(&start);
	while (atomic_load(&switch_done) < THREADS || s < SWITCHES) {
		struct switched *next = s % 2 ? &handler_a : &handler_b;
		struct switched *prev = s % 2 ? &handler_b : &handler_a;

		/* Counted: a call of prev still running at the load below,
		 * or starting after the store of retired (sequentially
		 * consistent atomics: one of the two sees the other). */
		atomic_store(&next->retired, 0);
		cow_shadow_handler_set(count_switched, next);
		atomic_store(&prev->retired, 1);
		busy += atomic_load(&prev->running) != 0;
		s++;
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	check(-1, atomic_load(&handler_a.calls) + atomic_load(&handler_b.calls)
	    == THREADS * (WARN_WRITES - 1), "every warning reached a handler");
	check(-1, busy == 0, "the previous handler still ran after the switch");
	check(-1, atomic_load(&handler_a.late) + atomic_load(&handler_b.late)
	    == 0, "the previous handler was called after the switch");
}

/* ------------------------------------------------------------------ */

/* Thread 0 stays in its handler until thread 1's report arrived. */
static const cow_storage_t *reentry_storage[2];
static atomic_int reentry_calls[2], reentry_inside, reentry_reads_ok;
static atomic_int reentry_timeouts;

/* Spin until *flag is set; false after 10 s (a failure, not a hang). */
static bool
wait_for(atomic_int *flag)
{
	struct timespec t0, now;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!atomic_load(flag)) {
		sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec > 10) {
			atomic_fetch_add(&reentry_timeouts, 1);
			return false;
		}
	}
	return true;
}

static void
reentry_handler(const cow_shadow_event_t *e, void *ctx)
{
	int id = e->storage == reentry_storage[1];
	int64_t idx[2] = {0, 0};
	double x = -1;

	(void)ctx;
	atomic_fetch_add(&reentry_calls[id], 1);
	/* Out of sync, like the access reported: not reported again. */
	if (cow_tensor_get_f64(e->tensor, idx, &x) == COW_OK && x == 1)
		atomic_fetch_add(&reentry_reads_ok, 1);
	if (id == 0) {
		atomic_store(&reentry_inside, 1);
		(void)wait_for(&reentry_calls[1]);
	}
}

static void *
reentry_worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	cow_tensor_t *t, *u;
	double x = -1;

	if (cow_tensor_full(COW_DTYPE_FLOAT64, 1, (int64_t[]){4}, 0, NULL,
	    &t) != COW_OK)
		abort();
	u = reshape_warn(t, 2, (int64_t[]){2, 2});
	reentry_storage[id] = cow_tensor_storage(t);
	check(id, cow_tensor_fill_(t, 1) == COW_OK, "write T");
	pthread_barrier_wait(&start);
	if (id == 1)
		(void)wait_for(&reentry_inside);
	check(id, cow_tensor_get_f64(u, (int64_t[]){0, 0}, &x) == COW_OK &&
	    x == 1, "read U");
	check(id, atomic_load(&reentry_calls[id]) == 1,
	    "one call for the read and none for the handler's own");
	if (id == 0)
		check(id, atomic_load(&reentry_calls[1]) == 1,
		    "thread 1's report reached the handler meanwhile");
	pthread_barrier_wait(&start);
	/* Both handlers returned: the next read is reported again. */
	check(id, cow_tensor_get_f64(u, (int64_t[]){1, 1}, &x) == COW_OK,
	    "read U again");
	check(id, atomic_load(&reentry_calls[id]) == 2, "reported again");
	cow_tensor_release(u);
	cow_tensor_release(t);
	return NULL;
}

static void
handler_reentry(void)
{
	pthread_t th[2];

	pthread_barrier_destroy(&start);
	pthread_barrier_init(&start, NULL, 2);
	cow_shadow_handler_set(reentry_handler, NULL);
	for (intptr_t i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, reentry_worker, (void *)i);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	check(-1, atomic_load(&reentry_reads_ok) == 4,
	    "every handler read its tensor");
	check(-1, atomic_load(&reentry_timeouts) == 0,
	    "a report waited for never came");
}

int
main(void)
{
	if (cow_shadow_policy_set(COW_SHADOW_WARN_ALWAYS) != COW_OK)
		return 2;
	pthread_barrier_init(&start, NULL, THREADS);
	own_storages();
	shared_forks();
	handler_switch();
	handler_reentry();
	cow_shadow_handler_set(NULL, NULL);
	pthread_barrier_destroy(&start);
	printf("%d passed, %d failed\n", atomic_load(&passes),
	    atomic_load(&failures));
	return atomic_load(&failures) == 0 ? 0 : 1;
}
