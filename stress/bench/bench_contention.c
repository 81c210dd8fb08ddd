/*
 * Contention benchmarks: threads lazy-cloning and releasing one source, and
 * N lazy peers materialising at the same moment (N-1 copies under the shared
 * lock, one steal under the exclusive lock).
 *
 * A pool of worker threads runs each batch between two barriers; the time is
 * the main thread's wall clock between them. Worker i is pinned to CPU
 * i mod (CPUs), so N threads always spread over the cores the same way (left
 * to the scheduler, two threads sometimes share one core, which serialises
 * them and hides the cache-line transfers this benchmark is about).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cowstore/cowstore.h>

#include "bench.h"

struct pool {
	int threads;
	pthread_t *tid;
	pthread_barrier_t start, done;
	uint64_t n;
	bool quit;
	void (*work)(struct pool *p, int me);
	cow_storage_t *src;
	cow_storage_t **peers;
	size_t bytes;
};

struct worker_arg {
	struct pool *pool;
	int me;
};

static void *
worker_main(void *arg)
{
	struct worker_arg *w = arg;
	struct pool *p = w->pool;

	for (;;) {
		pthread_barrier_wait(&p->start);
		if (p->quit)
			break;
		p->work(p, w->me);
		pthread_barrier_wait(&p->done);
	}
	free(w);
	return NULL;
}

static void
pool_setup(struct bench_arg *arg, void (*work)(struct pool *, int))
{
	struct pool *p = calloc(1, sizeof *p);

	p->threads = arg->threads;
	p->work = work;
	p->bytes = arg->bytes ? arg->bytes : 4096;
	p->tid = calloc((size_t)p->threads, sizeof *p->tid);
	p->peers = calloc((size_t)p->threads, sizeof *p->peers);
	pthread_barrier_init(&p->start, NULL, (unsigned)p->threads + 1);
	pthread_barrier_init(&p->done, NULL, (unsigned)p->threads + 1);
	for (int i = 0; i < p->threads; i++) {
		struct worker_arg *w = malloc(sizeof *w);

		w->pool = p;
		w->me = i;
		pthread_create(&p->tid[i], NULL, worker_main, w);
		bench_pin(p->tid[i], i);
	}
	arg->state = p;
}

static void
pool_teardown(struct bench_arg *arg)
{
	struct pool *p = arg->state;

	p->quit = true;
	pthread_barrier_wait(&p->start);
	for (int i = 0; i < p->threads; i++)
		pthread_join(p->tid[i], NULL);
	pthread_barrier_destroy(&p->start);
	pthread_barrier_destroy(&p->done);
	cow_storage_release(p->src);
	free(p->tid);
	free(p->peers);
	free(p);
}

static uint64_t
pool_run_batch(struct pool *p)
{
	uint64_t t0 = bench_now_ns();

	pthread_barrier_wait(&p->start);
	pthread_barrier_wait(&p->done);
	return bench_now_ns() - t0;
}

/* 1, 2 and 4 threads lazy-clone and release one shared source. */
static void
clone_storm_work(struct pool *p, int me)
{
	(void)me;
	for (uint64_t i = 0; i < p->n; i++) {
		cow_storage_t *c;
		cow_status_t st = cow_storage_lazy_clone(p->src, &c);

		if (st != COW_OK)
			bench_fail("lazy_clone", st);
		cow_storage_release(c);
	}
}

static void
setup_clone_storm(struct bench_arg *arg)
{
	struct pool *p;
	cow_storage_t *keeper;

	pool_setup(arg, clone_storm_work);
	p = arg->state;
	if (cow_storage_new(p->bytes, bench_allocator(), &p->src) != COW_OK ||
	    cow_storage_lazy_clone(p->src, &keeper) != COW_OK)
		bench_fail("setup", COW_ENOMEM);
	cow_storage_release(keeper); /* src stays COW with one share */
}

/* Time per operation as each thread sees it (wall time / ops per thread):
 * constant across thread counts means perfect scaling. */
static uint64_t
run_clone_storm(struct bench_arg *arg, uint64_t n)
{
	struct pool *p = arg->state;

	p->n = n;
	return pool_run_batch(p);
}

/* The floor under clone_release_contended: the same threads doing only an
 * atomic increment and decrement of one shared counter (the share count's
 * two operations, with nothing between them), compiler atomics rather than
 * the library. What a transfer of one cache line between this machine's
 * CPUs costs moves with the host; this measures it in the same run. */
static unsigned long bench_shared_count __attribute__((aligned(64)));

static void
atomic_pair_work(struct pool *p, int me)
{
	(void)me;
	for (uint64_t i = 0; i < p->n; i++) {
		__atomic_fetch_add(&bench_shared_count, 1, __ATOMIC_ACQ_REL);
		__atomic_fetch_sub(&bench_shared_count, 1, __ATOMIC_ACQ_REL);
	}
}

static void
setup_atomic_pair(struct bench_arg *arg)
{
	pool_setup(arg, atomic_pair_work);
}

/* N peers of one storage materialise at once: one round per op. */
static void
peers_work(struct pool *p, int me)
{
	cow_status_t st = cow_storage_materialize(p->peers[me]);

	if (st != COW_OK)
		bench_fail("materialize", st);
}

static void
setup_peers(struct bench_arg *arg)
{
	struct pool *p;

	pool_setup(arg, peers_work);
	p = arg->state;
	if (cow_storage_new(p->bytes, bench_allocator(), &p->src) != COW_OK)
		bench_fail("setup", COW_ENOMEM);
}

static uint64_t
run_peers(struct bench_arg *arg, uint64_t n)
{
	struct pool *p = arg->state;
	uint64_t total = 0;

	p->n = 1;
	for (uint64_t r = 0; r < n; r++) {
		cow_storage_t *base;

		/* A private copy of src (untimed), then N-1 lazy peers of it:
		 * the N peers hold every share of the context. */
		if (cow_storage_lazy_clone(p->src, &base) != COW_OK ||
		    cow_storage_materialize(base) != COW_OK)
			bench_fail("prepare", COW_ENOMEM);
		p->peers[0] = base;
		for (int i = 1; i < p->threads; i++)
			if (cow_storage_lazy_clone(base, &p->peers[i]) !=
			    COW_OK)
				bench_fail("lazy_clone", COW_ENOMEM);
		total += pool_run_batch(p);
		for (int i = 0; i < p->threads; i++)
			cow_storage_release(p->peers[i]);
	}
	return total;
}

static uint64_t
peers_max(const struct bench_arg *arg)
{
	(void)arg;
	return 64;
}

static const int storm_threads[] = {1, 2, 4, 0};
static const int peer_threads[] = {2, 4, 0};

const struct bench bench_contention_table[] = {
	{.name = "atomic_pair_contended", .group = "contention",
	    .threads = storm_threads, .setup = setup_atomic_pair,
	    .teardown = pool_teardown, .run = run_clone_storm},
	{.name = "clone_release_contended", .group = "contention",
	    .threads = storm_threads, .setup = setup_clone_storm,
	    .teardown = pool_teardown, .run = run_clone_storm},
	{.name = "peers_materialize", .group = "contention", .sized = true,
	    .threads = peer_threads, .setup = setup_peers,
	    .teardown = pool_teardown, .run = run_peers,
	    .max_batch = peers_max},
	{0},
};
