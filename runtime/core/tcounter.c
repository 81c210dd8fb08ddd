/*
 * tcounter.c - per-thread counter blocks: registration, the fold at thread
 * exit, sums and slot ranges (tcounter.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/fault.h"
#include "core/mutex.h"
#include "core/tcounter.h"

_Thread_local struct cow__tc_block *cow__tc_mine;

cow__atomic_u64_t cow__tc_orphan[COW__TC_SLOTS];

/* The live blocks and the slot ranges in use. */
static cow__mutex_t tc_lock = COW__MUTEX_INITIALIZER(COW__RANK_THREADS);
static struct cow__tc_block *tc_live;        /* tc_lock */
static unsigned char tc_used[COW__TC_SLOTS]; /* tc_lock */

static pthread_key_t tc_key;                 /* read-only after init */
static bool tc_key_ok;                       /* read-only after init */
static pthread_once_t tc_once = PTHREAD_ONCE_INIT;

/* Fold @b's counts into the orphan totals and unlink it. Caller holds
 * tc_lock, so a concurrent sum counts the block exactly once. */
static void
tc_fold_locked(struct cow__tc_block *b)
{
	COW__FAULT_POINT(fold_at_exit,
	    for (unsigned i = 0; i < COW__TC_SLOTS; i++) {
		uint64_t v = cow__owned_load_acquire(&b->v[i]);

		if (v != 0)
			cow__atomic_add_relaxed(&cow__tc_orphan[i], v);
	    });
	if (b->prev != NULL)
		b->prev->next = b->next;
	else
		tc_live = b->next;
	if (b->next != NULL)
		b->next->prev = b->prev;
}

/* Thread exit: fold the block, in one critical section. */
static void
tc_thread_exit(void *arg)
{
	struct cow__tc_block *b = arg;

	cow__mutex_lock(&tc_lock);
	tc_fold_locked(b);
	cow__mutex_unlock(&tc_lock);
	/* A destructor that runs after this one and counts again gets a new
	 * block (and a new destructor round). */
	cow__tc_mine = NULL;
	free(b);
}

static void
tc_init(void)
{
	tc_key_ok = pthread_key_create(&tc_key, tc_thread_exit) == 0;
	for (unsigned i = 0; i < COW__TC_STATS_COUNT; i++)
		tc_used[COW__TC_STATS_FIRST + i] = 1;
}

/* Unloading the library (dlclose) must not leave a destructor behind that
 * points into unmapped code; threads that still hold blocks leak them. */
__attribute__((destructor)) static void
tc_unload(void)
{
	if (tc_key_ok)
		pthread_key_delete(tc_key);
	tc_key_ok = false;
}

struct cow__tc_block *
cow__tc_block_slow(void)
{
	struct cow__tc_block *b;

	pthread_once(&tc_once, tc_init);
	/* Cache-line aligned, so no two threads' counters share a line. */
	if (!tc_key_ok || posix_memalign((void **)&b, 64, sizeof *b) != 0)
		return NULL;
	memset(b, 0, sizeof *b);
	if (pthread_setspecific(tc_key, b) != 0) {
		free(b);
		return NULL;
	}
	cow__mutex_lock(&tc_lock);
	b->next = tc_live;
	if (b->next != NULL)
		b->next->prev = b;
	tc_live = b;
	cow__mutex_unlock(&tc_lock);
	cow__tc_mine = b;
	return b;
}

void
cow__tc_sum(unsigned first, unsigned n, uint64_t *out)
{
	cow__mutex_lock(&tc_lock);
	for (unsigned i = 0; i < n; i++)
		out[i] = cow__atomic_load_relaxed(&cow__tc_orphan[first + i]);
	for (struct cow__tc_block *b = tc_live; b != NULL; b = b->next)
		for (unsigned i = 0; i < n; i++)
			out[i] += cow__owned_load_acquire(&b->v[first + i]);
	cow__mutex_unlock(&tc_lock);
}

bool
cow__tc_slots_get(unsigned n, unsigned *first)
{
	bool ok = false;

	pthread_once(&tc_once, tc_init);
	cow__mutex_lock(&tc_lock);
	for (unsigned s = 0; s + n <= COW__TC_SLOTS && !ok; s++) {
		unsigned k = 0;

		while (k < n && !tc_used[s + k])
			k++;
		if (k == n) {
			memset(&tc_used[s], 1, n);
			*first = s;
			ok = true;
		}
	}
	cow__mutex_unlock(&tc_lock);
	return ok;
}

void
cow__tc_slots_put(unsigned first, unsigned n)
{
	cow__mutex_lock(&tc_lock);
	for (unsigned i = first; i < first + n; i++) {
		cow__atomic_store_relaxed(&cow__tc_orphan[i], 0);
		for (struct cow__tc_block *b = tc_live; b != NULL;
		    b = b->next)
			cow__owned_store_relaxed(&b->v[i], 0);
		tc_used[i] = 0;
	}
	cow__mutex_unlock(&tc_lock);
}

void
cow__tc_fork_prepare(void)
{
	cow__mutex_lock(&tc_lock);
}

void
cow__tc_fork_wait_sections(const cow__atomic_u64_t *orphan_gate)
{
	unsigned spins = 0;

	/* A thread that registers now waits for tc_lock before it can enter
	 * a section; the ones in the list are waited for here. */
	for (struct cow__tc_block *b = tc_live; b != NULL; b = b->next) {
		while (cow__atomic_load_relaxed(&b->fork_gate) != 0)
			cow__backoff(&spins);
	}
	while (cow__atomic_load_relaxed(orphan_gate) != 0)
		cow__backoff(&spins);
	/* Acquire: the sections' work (their shared unlocks) happens before
	 * the fork. */
	cow__fence_acquire(orphan_gate);
}

void
cow__tc_fork_parent(void)
{
	cow__mutex_unlock(&tc_lock);
}

void
cow__tc_fork_child(void)
{
	struct cow__tc_block *b, *next;

	/* One thread now: ours. The others' blocks will never be written
	 * or freed by their owners; fold them as at their exit. */
	for (b = tc_live; b != NULL; b = next) {
		next = b->next;
		if (b != cow__tc_mine) {
			tc_fold_locked(b);
			free(b);
		}
	}
	cow__mutex_reinit(&tc_lock);
}
