/*
 * The statistics and an allocator's counters are per-thread counters
 * summed on read (core/tcounter.h). This checks that they stay exact:
 * threads count concurrently and exit; the totals read after the joins are
 * exactly the events they made (nothing lost, and a thread's counts outlive
 * it); a reset during counting loses nothing either; an allocator's live
 * bytes return to zero and its counters are gone when its slots are reused
 * by a new handle.
 *
 * A plain executable (not Criterion) so it also runs under TSan.
 * Prints "N passed, N failed"; exits non-zero on any failure.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#include "cow_test.h"
#include "storage/stats.h"

#define THREADS 4
#define ROUNDS 2000
#define NBYTES 512

static int passed, failed;

static void
expect(bool ok, const char *what)
{
	if (ok) {
		passed++;
	} else {
		failed++;
		fprintf(stderr, "FAILED: %s\n", what);
	}
}

/* A user allocator over malloc (its own handle, its own counter slots). */
static void *
plain_alloc(void *state, size_t nbytes, size_t alignment)
{
	void *p = NULL;

	(void)state;
	return posix_memalign(&p, alignment, nbytes) == 0 ? p : NULL;
}

static void
plain_free(void *state, void *ptr, size_t nbytes, size_t alignment)
{
	(void)state;
	(void)nbytes;
	(void)alignment;
	free(ptr);
}

static const cow_allocator_ops_t plain_ops = {
	.alloc = plain_alloc,
	.free = plain_free,
};

struct job {
	cow_allocator_t *alloc;
	cow_storage_t *shared; /* cloned by every thread */
};

/* Per round: one lazy clone of the shared source materialised by copy,
 * one private storage cloned and then stolen. */
static void *
worker(void *arg)
{
	struct job *j = arg;

	for (int r = 0; r < ROUNDS; r++) {
		cow_storage_t *c, *own, *peer;

		if (cow_storage_lazy_clone(j->shared, &c) != COW_OK ||
		    cow_storage_materialize(c) != COW_OK ||
		    cow_storage_new(NBYTES, j->alloc, &own) != COW_OK ||
		    cow_storage_lazy_clone(own, &peer) != COW_OK)
			abort();
		cow_storage_release(own);
		if (cow_storage_materialize(peer) != COW_OK)
			abort();
		cow_storage_release(peer);
		cow_storage_release(c);
	}
	return NULL;
}

static void
run_threads(struct job *j)
{
	pthread_t t[THREADS];

	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, j);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
}

/* The lazy clones counted since the process started, resets ignored: the
 * sum of every thread's counter (a reset only moves the zero point). */
static uint64_t
raw_lazy_clones(void)
{
	uint64_t n;

	cow__tc_sum(COW__TC_STATS_FIRST + COW__STAT_LAZY_CLONES, 1, &n);
	return n;
}

/* A thread that resets the statistics while the workers count; resets
 * counts the resets it has made. */
static int resetting;      /* Synchronization: atomic. */
static unsigned resets;    /* Synchronization: atomic. */

static void *
resetter(void *arg)
{
	(void)arg;
	while (__atomic_load_n(&resetting, __ATOMIC_RELAXED)) {
		cow_stats_reset();
		__atomic_add_fetch(&resets, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

int
main(void)
{
	struct job j;
	cow_stats_t before, after;
	cow_alloc_stats_t as, as0;
	const uint64_t events = (uint64_t)THREADS * ROUNDS;
	cow_storage_t *first;

	if (cow_allocator_new(&plain_ops, NULL, "counted", &j.alloc) != COW_OK ||
	    cow_storage_new(NBYTES, j.alloc, &j.shared) != COW_OK)
		abort();
	/* The shared source's first lazy clone gives it its context here,
	 * so the workers' first clones do not race to create it (a loser of
	 * that race allocates a context and frees it: two more events). */
	if (cow_storage_lazy_clone(j.shared, &first) != COW_OK)
		abort();
	cow_storage_release(first);
	cow_allocator_stats(j.alloc, &as0);

	/* Exact totals after the threads have exited. */
	cow_stats_get(&before);
	run_threads(&j);
	cow_stats_get(&after);
	expect(after.lazy_clones - before.lazy_clones == 2 * events,
	    "lazy clones counted exactly across exited threads");
	expect(after.materialize_copies - before.materialize_copies == events,
	    "copies counted exactly");
	expect(after.materialize_steals - before.materialize_steals == events,
	    "steals counted exactly");
	expect(after.bytes_copied - before.bytes_copied == events * NBYTES,
	    "bytes copied counted exactly");
	cow_allocator_stats(j.alloc, &as);
	/* Live: the shared source (struct, buffer) and its context. Per
	 * round: the clone's struct and its copy; the private storage's
	 * struct, buffer and context and its peer's struct. */
	expect(as.live_allocs == 3 && as.live_bytes > NBYTES,
	    "allocator: only the source and its context are live");
	expect(as.allocs - as0.allocs == events * 6 &&
	    as.frees - as0.frees == events * 6,
	    "allocator: every allocation and free counted");

	/* A reset while the workers count: afterwards the counts lie between
	 * nothing and everything, no increment is lost (the raw totals grow
	 * by exactly the events), and a final reset plus known work is
	 * exact again. */
	{
		pthread_t r;
		uint64_t raw0 = raw_lazy_clones();

		__atomic_store_n(&resetting, 1, __ATOMIC_RELAXED);
		pthread_create(&r, NULL, resetter, NULL);
		/* At least one reset before the workers start (the resetter
		 * may otherwise not run before they end). */
		while (__atomic_load_n(&resets, __ATOMIC_ACQUIRE) == 0)
			sched_yield();
		run_threads(&j);
		__atomic_store_n(&resetting, 0, __ATOMIC_RELAXED);
		pthread_join(r, NULL);
		cow_stats_get(&after);
		expect(after.lazy_clones <= 2 * events,
		    "a reset during counting never counts more than happened");
		expect(raw_lazy_clones() - raw0 == 2 * events,
		    "a reset during counting loses no increment");
		cow_stats_reset();
		run_threads(&j);
		cow_stats_get(&after);
		expect(after.lazy_clones == 2 * events &&
		    after.materialize_copies == events,
		    "after a reset, counting is exact again");
	}

	/* The handle's slots go back on destroy; a new handle starts at 0. */
	cow_storage_release(j.shared);
	cow_allocator_stats(j.alloc, &as);
	expect(as.live_allocs == 0 && as.live_bytes == 0,
	    "allocator: nothing live after the last release");
	expect(cow_allocator_destroy(j.alloc) == COW_OK, "destroy");
	if (cow_allocator_new(&plain_ops, NULL, "fresh", &j.alloc) != COW_OK)
		abort();
	cow_allocator_stats(j.alloc, &as);
	expect(as.allocs == 0 && as.frees == 0 && as.total_bytes == 0,
	    "a new handle starts with zero counters");
	cow_allocator_destroy(j.alloc);

	printf("counters: %d threads x %d rounds\n", THREADS, ROUNDS);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
