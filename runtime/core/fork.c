/*
 * fork.c - the library's pthread_atfork handlers (core/fork.h): every
 * registered subsystem's locks in rank order, and the copy sections.
 */
#include <pthread.h>
#include <stdbool.h>

#include "core/die.h"
#include "core/fault.h"
#include "core/fork.h"

/* Each rank's hooks. Synchronization: atomic pointers (written once). */
static cow__atomic_ptr_t fork_hooks[COW__RANK_COUNT];
/* The hooks the running fork's prepare ran, for its parent and child
 * handlers (a rank registered meanwhile is left alone). Synchronization:
 * fork_lock, which one fork holds from prepare to parent or child: the
 * first lock it takes (COW__RANK_FORK). */
static const struct cow__fork_hooks *fork_taken[COW__RANK_COUNT];
static cow__mutex_t fork_lock = COW__MUTEX_INITIALIZER(COW__RANK_FORK);
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* The @i-th mutex of @h. */
static cow__mutex_t *
fork_mutex(const struct cow__fork_hooks *h, size_t i)
{
	size_t stride = h->stride != 0 ? h->stride : sizeof(cow__mutex_t);

	return (cow__mutex_t *)((char *)h->mutexes + i * stride);
}

/* Every lock in rank order: fork_lock's rank comes first, then each
 * rank's hooks (debug builds check the order as the locks are taken,
 * core/lockrank.h). */
static void
fork_prepare(void)
{
	cow__lock_fork_begin();
	cow__mutex_lock(&fork_lock);
	for (int r = COW__RANK_FORK + 1; r < COW__RANK_COUNT; r++) {
		const struct cow__fork_hooks *h = cow__ptr_load(&fork_hooks[r]);

		fork_taken[r] = h;
		if (h == NULL)
			continue;
		for (size_t i = 0; i < h->n_mutexes; i++) {
			cow__mutex_t *m = fork_mutex(h, i);

			if (m->rank != (enum cow__lock_rank)r)
				cow__die("fork hooks with a mutex of another "
				    "rank");
			cow__mutex_lock(m);
		}
		if (h->prepare != NULL)
			h->prepare();
	}
}

/* After the fork, in the reverse order, the parent releases every lock
 * and the child makes each anew: the child has one thread, the one that
 * took every lock, and a lock's owner is recorded by thread id, which the
 * child's thread does not share with its parent. */
static void
fork_mutex_after(cow__mutex_t *m, bool child)
{
	if (child)
		cow__mutex_reinit(m);
	else
		cow__mutex_unlock(m);
}

static void
fork_after(bool child)
{
	for (int r = COW__RANK_COUNT - 1; r > COW__RANK_FORK; r--) {
		const struct cow__fork_hooks *h = fork_taken[r];
		void (*hook)(void);

		if (h == NULL)
			continue;
		hook = child ? h->child : h->parent;
		if (hook != NULL)
			hook();
		for (size_t i = h->n_mutexes; i-- > 0;)
			fork_mutex_after(fork_mutex(h, i), child);
	}
	fork_mutex_after(&fork_lock, child);
	cow__lock_fork_end();
}

static void
fork_parent(void)
{
	fork_after(false);
}

static void
fork_child(void)
{
	fork_after(true);
}

static void
fork_install(void)
{
	/* The negative control (tests/faults/fork_unprotected.h) skips
	 * this: a child must then hang (threads.fork_threads). */
	COW__FAULT_POINT(fork_handlers,
	    if (pthread_atfork(fork_prepare, fork_parent, fork_child) != 0)
		cow__die("pthread_atfork"));
}

void
cow__fork_register(enum cow__lock_rank rank,
    const struct cow__fork_hooks *hooks)
{
	if (rank <= COW__RANK_FORK)
		cow__die("fork hooks for a rank the fork takes no lock of");
	pthread_once(&fork_once, fork_install);
	if (cow__ptr_install(&fork_hooks[rank], (void *)hooks) != hooks)
		cow__die("fork hooks registered twice for one rank");
}

#if !defined(COW_SCHED)

cow__atomic_u64_t cow__fork_pending;
cow__atomic_u64_t cow__fork_orphan_gate;

void
cow__fork_gate_wait(cow__atomic_u64_t *word)
{
	unsigned spins = 0;

	do {
		cow__fork_gate_leave(word);
		while (cow__atomic_load_relaxed(&cow__fork_pending) != 0)
			cow__backoff(&spins);
		cow__atomic_add_relaxed(word, 1);
		cow__fence_atomic_load(word);
	} while (cow__atomic_load_relaxed(&cow__fork_pending) != 0);
}

/* Rank COW__RANK_THREADS: raise the flag, then wait for every section
 * (the other half of the handshake in cow__fork_gate_enter). */
static void
threads_prepare(void)
{
	cow__tc_fork_prepare();
	cow__atomic_add_relaxed(&cow__fork_pending, 1);
	cow__fence_atomic_load(&cow__fork_pending);
	/* The negative control (tests/faults/fork_ignores_copiers.h) forks
	 * in the middle of copies: a child's last share must then hang. */
	COW__FAULT_POINT(fork_waits_for_copiers,
	    cow__tc_fork_wait_sections(&cow__fork_orphan_gate));
}

static void
threads_parent(void)
{
	cow__tc_fork_parent();
	cow__atomic_store_relaxed(&cow__fork_pending, 0);
}

static void
threads_child(void)
{
	cow__tc_fork_child();
	/* Words of threads that stepped in after the wait and out after
	 * the fork: their steps out happen in the parent only. */
	cow__atomic_store_relaxed(&cow__fork_orphan_gate, 0);
	cow__atomic_store_relaxed(&cow__fork_pending, 0);
}

static const struct cow__fork_hooks threads_hooks = {
	.prepare = threads_prepare, .parent = threads_parent,
	.child = threads_child
};

__attribute__((constructor)) static void
threads_register(void)
{
	cow__fork_register(COW__RANK_THREADS, &threads_hooks);
}

#endif /* COW_SCHED */
