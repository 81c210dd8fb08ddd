/*
 * sched.h - the interleaving checker's scheduler (docs/interleave.md).
 *
 * The library under test is built with COW_SCHED: every primitive of
 * runtime/core/atomic.h, refcount.h and rwlock.h calls cow__sched_point
 * first (core/sync_sched.h).
 * ilv_sched_run starts one real pthread per test thread but lets exactly
 * one of them run at a time: a thread that reaches a scheduling point hands
 * the baton to the thread the scheduler chooses and sleeps until it gets it
 * back. A choice among two or more runnable threads is a decision; the
 * decisions of one execution are its schedule. A thread that would wait for
 * the lock (the scheduler's model of it) is not runnable; when no thread is
 * runnable and some have not finished, that is a deadlock.
 *
 * Anything that breaks (a deadlock, a lock misuse, a failed invariant of a
 * scenario) ends the process at once through ilv_fail, which prints the
 * schedule so far; so does an AddressSanitizer or UBSan report (a death
 * callback) and an abort (cow__die).
 */
#ifndef ILV_SCHED_H
#define ILV_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#define ILV_MAX_THREADS 4
#define ILV_MAX_DECISIONS 4096

/* One decision: who could run, who reached the point (-1: that thread
 * could not go on, so choosing anyone is no preemption), who was chosen.
 * In the weak-memory mode a load's read decision uses the same record:
 * the stores it may read (bit k: the k-th newest), the default (the
 * newest of them: reading an older one counts as a preemption) and the
 * store it read. */
struct ilv_decision {
	uint8_t enabled; /* bit i: thread i runnable */
	int8_t current;
	uint8_t chosen;
};

struct ilv_trace {
	int n;
	struct ilv_decision d[ILV_MAX_DECISIONS];
};

/* How one execution chooses. */
struct ilv_policy {
	/* The first decisions, given: thread ids, and when @masks is not
	 * NULL the runnable set each must meet (a check that the program is
	 * deterministic). */
	const uint8_t *prefix;
	const uint8_t *masks;
	int prefix_len;
	/* After the prefix: random choices from this state when non-zero,
	 * else the default (keep the current thread; else the lowest
	 * runnable one: never a preemption). */
	uint64_t random;
	/* cow__atomic_* and cow__owned_* operations are scheduling points:
	 * all of them, or those in [@sync_lo, @sync_hi) (the words of the
	 * scenario's protocol that carry synchronisation). */
	bool counters;
	uintptr_t sync_lo, sync_hi;
	/* The weak-memory mode (weak.h), keeping @history stores per
	 * location; else every execution is sequentially consistent. */
	bool weak;
	int history;
	/* Print every step (a thread passing a scheduling point) to stdout. */
	bool verbose;
};

/*
 * Run @body(@arg, id) for id = 0 .. @nthreads - 1, each in its own thread,
 * under the scheduler; return once all have finished. The decisions are
 * written to @trace. Calls from other threads (set-up, checks, tear-down)
 * pass through the scheduling points without stopping.
 */
void ilv_sched_run(int nthreads, void (*body)(void *arg, int id), void *arg,
    const struct ilv_policy *policy, struct ilv_trace *trace);

/* The default choice at @d (what a replay does after its prefix). */
static inline int
ilv_default_choice(const struct ilv_decision *d)
{
	if (d->current >= 0)
		return d->current;
	return __builtin_ctz(d->enabled);
}

/* True when @d's choice preempted a runnable thread. */
static inline bool
ilv_is_preemption(const struct ilv_decision *d, int chosen)
{
	return d->current >= 0 && chosen != d->current;
}

/*
 * A violation: print "interleave: VIOLATION: <scenario>: <message>", the
 * schedule so far and how to replay it, then end the process (status 1).
 * Callable from any thread. The message must not contain addresses: a
 * replay prints the same one.
 */
_Noreturn void ilv_fail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* The schedule being followed does not fit the program: a decision of
 * the prefix finds another runnable set, or chooses a thread that cannot
 * run (the program is not deterministic, or the string is not its). Not a
 * violation: ends the process with status 3. */
_Noreturn void ilv_unfit(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* ilv_fail(@fmt ...) unless @ok. */
#define ilv_check(ok, ...)                                              \
	do {                                                            \
		if (!(ok))                                              \
			ilv_fail(__VA_ARGS__);                          \
	} while (0)

/* The trace of the execution under way (for ilv_fail's report). */
extern struct ilv_trace *ilv_current_trace;

#endif
