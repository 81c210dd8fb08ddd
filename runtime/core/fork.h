/*
 * fork.h - what fork() finds when a process that uses cowstore forks while
 * other threads are inside the library: nothing held. The child has one
 * thread; a lock that another thread held when the parent forked would stay
 * held for good, and a COW context whose shared lock a vanished copier held
 * would make the child's last share wait for that copier for ever.
 *
 * So the library registers one set of pthread_atfork handlers (fork.c):
 * before the fork, the forking thread takes every lock of the library in
 * rank order (enum cow__lock_rank, core/lockrank.h, outermost first: its
 * own lock, COW__RANK_FORK, then each rank's) and waits until no thread is
 * inside a copy section (below); after it, the parent releases them in the
 * reverse order and the child re-initialises them, since every thread that
 * could have held them is gone. A subsystem with a lock registers its
 * three hooks under its rank (cow__fork_register). Debug builds check
 * those acquisitions like any other (core/lockrank.h).
 *
 * Copy sections. A materialiser copies under its context's shared lock
 * (storage/cow_ctx.c, [RLOCK] to [RUNLOCK]); there is one such lock per set
 * of lazy copies, too many to take at a fork. Instead a copier announces
 * itself in a word of its own thread (cow__fork_gate_enter: an atomic add
 * on the thread's counter block, core/tcounter.h, then a full fence and a
 * load of cow__fork_pending), and the forking thread raises
 * cow__fork_pending, fences and waits until every thread's word is zero
 * (the handshake of Dekker's algorithm: at least one of the two sees the
 * other's store). A copier that sees the fork pending steps out and waits
 * until the fork is over. A copy section holds no other lock and calls
 * nothing that takes one, so the wait ends.
 *
 * The interleaving checker's build (COW_SCHED) has no fork and no gate: the
 * checker explores the protocol's schedules, which the gate does not
 * change.
 */
#ifndef COW_CORE_FORK_H
#define COW_CORE_FORK_H

#include "core/atomic.h"
#include "core/lockrank.h"
#include "core/mutex.h"
#include "core/tcounter.h"

/* A subsystem's part of a fork, in the forking thread: its mutexes (an
 * array of @n_mutexes, @stride bytes apart; 0: packed; each of the rank
 * the hooks are registered under) are locked in array order before
 * fork(), unlocked in the parent and re-initialised in the child;
 * @prepare, @parent and @child (each may be NULL) do what plain mutexes
 * cannot, after the mutexes are locked and before they are unlocked. */
struct cow__fork_hooks {
	cow__mutex_t *mutexes;
	size_t n_mutexes;
	size_t stride;
	void (*prepare)(void);
	void (*parent)(void);
	void (*child)(void);
};

/* Install @hooks (static storage) for @rank, once per rank. Any thread;
 * a fork that starts later runs them. */
void cow__fork_register(enum cow__lock_rank rank,
    const struct cow__fork_hooks *hooks);

#if defined(COW_SCHED)

typedef int cow__fork_gate_t;
#define cow__fork_gate_enter() 0
#define cow__fork_gate_leave(gate) ((void)(gate))

#else

/* Nonzero while a fork is being prepared. Synchronization: atomic; the
 * full fences of the handshake above. */
extern cow__atomic_u64_t cow__fork_pending;
/* The copy-section word of threads that have no counter block. */
extern cow__atomic_u64_t cow__fork_orphan_gate;

typedef cow__atomic_u64_t *cow__fork_gate_t;

/* A fork is pending: step out of the section, wait, step in again (fork.c). */
void cow__fork_gate_wait(cow__atomic_u64_t *word);

/* Enter a copy section; returns what cow__fork_gate_leave takes. */
static inline cow__fork_gate_t
cow__fork_gate_enter(void)
{
	struct cow__tc_block *b = cow__tc_block();
	cow__atomic_u64_t *word = b != NULL ? &b->fork_gate :
	    &cow__fork_orphan_gate;

	cow__atomic_add_relaxed(word, 1);
	/* Full fence: the forking thread sees our word, or we see its
	 * pending flag (or both). */
	cow__fence_atomic_load(word);
	if (__builtin_expect(cow__atomic_load_relaxed(&cow__fork_pending) != 0,
	    0))
		cow__fork_gate_wait(word);
	return word;
}

/* Leave it: release, so that a fork that sees the word drop also sees the
 * section's work (the shared unlock) done. A thread's own word has one
 * writer, its owner, and is back to zero with a store (no locked
 * instruction); the shared word of threads without a block takes a
 * decrement. */
static inline void
cow__fork_gate_leave(cow__fork_gate_t word)
{
	if (__builtin_expect(word != &cow__fork_orphan_gate, 1))
		cow__atomic_store_release(word, 0);
	else
		cow__atomic_add_release(word, (uint64_t)-1);
}

#endif /* COW_SCHED */

#endif
