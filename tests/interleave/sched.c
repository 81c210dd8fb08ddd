/*
 * sched.c - the scheduler of the interleaving checker: scheduling points,
 * the baton, the lock model, deadlock detection (see sched.h).
 *
 * The baton: each test thread sleeps on its own semaphore; the thread that
 * holds the baton chooses the next one, posts its semaphore and waits on
 * its own. Semaphores are full memory barriers, so what one thread wrote
 * is visible to the next: the execution is sequentially consistent, one
 * thread at a time. All the scheduler's state below is touched only by the
 * baton holder (or by the main thread while no test thread runs).
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rwlock.h"
#include "sched.h"
#include "weak.h"

enum ilv_state {
	ILV_STARTING, /* created, waiting for its first turn */
	ILV_AT_POINT, /* running, or stopped at a scheduling point */
	ILV_DONE
};

#define ILV_MAX_HELD 4

struct ilv_thread {
	pthread_t pt;
	sem_t go;
	int id;
	enum ilv_state state;
	enum cow__sched_op op; /* at a point: what it will do next */
	const void *addr;
	int phase;             /* exclusive lock: 0 claim, 1 wait for readers */
	const void *held[ILV_MAX_HELD]; /* shared locks it holds */
	int nheld;
	const void *last_load;  /* the location of its last atomic load */
	const void *spin_addr;  /* in a spin wait: the location it waits on */
	bool spin_woken;        /* another thread stored there since */
};

static struct {
	int n;
	struct ilv_thread t[ILV_MAX_THREADS];
	sem_t started;
	sem_t finished;
	void (*body)(void *, int);
	void *arg;
	const struct ilv_policy *policy;
	uint64_t rng;
	struct ilv_trace *trace;
	bool active;
	int last_decision; /* index of the decision that chose the runner */
	unsigned steps;
} S;

static _Thread_local struct ilv_thread *ilv_me;

struct ilv_trace *ilv_current_trace;

static const char *const ilv_op_names[COW__SCHED_NOPS] = {
	[COW__SCHED_REF_INIT] = "refcount init",
	[COW__SCHED_REF_GET] = "refcount get",
	[COW__SCHED_REF_SUB] = "refcount sub",
	[COW__SCHED_REF_LOAD] = "refcount load",
	[COW__SCHED_PIN_LOAD] = "pin count load",
	[COW__SCHED_PTR_LOAD] = "pointer load",
	[COW__SCHED_PTR_STORE] = "pointer store",
	[COW__SCHED_PTR_INSTALL] = "pointer install",
	[COW__SCHED_COUNTER_LOAD] = "counter load",
	[COW__SCHED_COUNTER_STORE] = "counter store",
	[COW__SCHED_COUNTER_RMW] = "counter update",
	[COW__SCHED_EPOCH_LOAD] = "epoch load",
	[COW__SCHED_FENCE] = "fence",
	[COW__SCHED_LOCK_INIT] = "lock init",
	[COW__SCHED_READ_LOCK] = "shared lock",
	[COW__SCHED_READ_UNLOCK] = "shared unlock",
	[COW__SCHED_WRITE_LOCK] = "exclusive lock",
	[COW__SCHED_WRITE_UNLOCK] = "exclusive unlock",
	[COW__SCHED_WAIT_READERS] = "wait for readers",
	[COW__SCHED_LOCK_DESTROY] = "lock destroy",
	[COW__SCHED_WINDOW] = "fault window",
	[COW__SCHED_SPIN] = "spin wait",
};

static cow__rwlock_t *
ilv_lock(const void *addr)
{
	return (cow__rwlock_t *)(uintptr_t)addr;
}

static bool
ilv_is_lock_op(enum cow__sched_op op)
{
	return op == COW__SCHED_LOCK_INIT || op == COW__SCHED_READ_LOCK || op == COW__SCHED_READ_UNLOCK ||
	    op == COW__SCHED_WRITE_LOCK || op == COW__SCHED_WRITE_UNLOCK ||
	    op == COW__SCHED_WAIT_READERS || op == COW__SCHED_LOCK_DESTROY;
}

/* Can @t perform its next step now? Reads the lock it waits for: if that
 * lock was freed, AddressSanitizer reports it here. */
static bool
ilv_runnable(const struct ilv_thread *t)
{
	if (t->state == ILV_DONE)
		return false;
	if (t->state == ILV_STARTING)
		return true;
	switch (t->op) {
	case COW__SCHED_READ_LOCK:
		/* Write bias: a claimed writer flag stops new readers. */
		return ilv_lock(t->addr)->writer == 0;
	case COW__SCHED_WRITE_LOCK:
		if (t->phase == 0)
			return ilv_lock(t->addr)->writer == 0;
		return ilv_lock(t->addr)->readers == 0;
	case COW__SCHED_WAIT_READERS:
		if (S.policy->weak)
			return ilv_weak_may_wait_readers(t->id,
			    ilv_lock(t->addr));
		return ilv_lock(t->addr)->readers == 0;
	case COW__SCHED_SPIN:
		/* Loading again before a store there would read what made
		 * it spin: a step that changes nothing. */
		return t->spin_woken || (S.policy->weak &&
		    ilv_weak_may_read_newer(t->id, t->spin_addr));
	default:
		return true;
	}
}

static void
ilv_describe_waits(char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < S.n && used < size; i++) {
		const struct ilv_thread *t = &S.t[i];

		if (t->state == ILV_DONE)
			continue;
		used += (size_t)snprintf(buf + used, size - used,
		    "%sthread %c waits in %s%s", used > 0 ? "; " : "",
		    'a' + i, ilv_op_names[t->op],
		    t->op == COW__SCHED_WRITE_LOCK ? (t->phase == 0 ?
		    " (claim)" : " (for readers)") : t->op ==
		    COW__SCHED_SPIN ? " (for a store nobody makes)" : "");
	}
}

static uint64_t
ilv_rand(void)
{
	/* xorshift64* */
	S.rng ^= S.rng >> 12;
	S.rng ^= S.rng << 25;
	S.rng ^= S.rng >> 27;
	return S.rng * 0x2545f4914f6cdd1dULL;
}

/* A member of the non-empty set @mask, uniformly at random. */
static int
ilv_random_member(unsigned mask)
{
	unsigned pick = (unsigned)(ilv_rand() %
	    (unsigned)__builtin_popcount(mask));

	for (;; mask &= mask - 1)
		if (pick-- == 0)
			return __builtin_ctz(mask);
}

/* Decision tr->n over @mask (a set of threads, or with @read of the stores
 * a load may read), @current the choice that is no preemption (-1: none):
 * record it and choose, from the prefix being replayed (which must fit),
 * at random, or by default. */
static int
ilv_make_decision(unsigned mask, int current, bool read)
{
	const struct ilv_policy *p = S.policy;
	struct ilv_trace *tr = S.trace;
	struct ilv_decision *d;
	int k = tr->n, choice;

	if (k >= ILV_MAX_DECISIONS)
		ilv_fail("more than %d decisions in one execution",
		    ILV_MAX_DECISIONS);
	d = &tr->d[k];
	d->enabled = (uint8_t)mask;
	d->current = (int8_t)current;
	if (k < p->prefix_len) {
		choice = p->prefix[k];
		if (p->masks != NULL && p->masks[k] != mask)
			ilv_unfit(read ? "nondeterministic execution: read "
			    "decision %d found stores %#x, earlier %#x" :
			    "nondeterministic execution: decision %d found "
			    "runnable set %#x, earlier %#x", k, mask,
			    p->masks[k]);
		if ((!read && choice >= S.n) || !(mask >> choice & 1))
			ilv_unfit(read ? "read decision %d chooses store %c, "
			    "readable %#x" : "decision %d chooses thread %c, "
			    "runnable set %#x", k, 'a' + choice, mask);
	} else if (p->random != 0) {
		choice = ilv_random_member(mask);
	} else {
		choice = ilv_default_choice(d);
	}
	d->chosen = (uint8_t)choice;
	tr->n = k + 1;
	return choice;
}

/* Choose who runs next; @cur is the baton holder's id, or -1 (the main
 * thread starting the run). Returns -1 when nobody can run. */
static int
ilv_decide(int cur)
{
	unsigned mask = 0;

	for (int i = 0; i < S.n; i++)
		if (ilv_runnable(&S.t[i]))
			mask |= 1u << i;
	if (mask == 0)
		return -1;
	S.last_decision = -1;
	if ((mask & (mask - 1)) == 0)
		return __builtin_ctz(mask); /* forced: not a decision */
	S.last_decision = S.trace->n;
	return ilv_make_decision(mask,
	    cur >= 0 && (mask >> cur & 1) ? cur : -1, false);
}

static const char *const ilv_mo_names[] = {
	[COW__MO_RELAXED] = "relaxed", [COW__MO_ACQUIRE] = "acquire",
	[COW__MO_RELEASE] = "release", [COW__MO_ACQ_REL] = "acq_rel",
	[COW__MO_SEQ_CST] = "seq_cst",
};

/* "a, b": the stores of @mask by letter (no allocation). */
static const char *
ilv_store_letters(unsigned mask)
{
	static char buf[2 * 8 + 1];
	int used = 0;

	for (int k = 0; k < 8; k++)
		if (mask >> k & 1) {
			buf[used++] = (char)('a' + k);
			buf[used++] = ' ';
		}
	buf[used > 0 ? used - 1 : 0] = '\0';
	return buf;
}

/* The weak-memory mode's read decision (weak.h): a load that may read
 * more than one store. The default reads the newest it may (the lowest
 * bit), so choosing an older one counts against the bound as a preemption
 * does. */
int
ilv_choose_read(unsigned mask)
{
	int k = S.trace->n;
	int choice = ilv_make_decision(mask, __builtin_ctz(mask), true);

	if (S.policy->verbose)
		printf("           reads store %c (a: the newest; may read "
		    "%s)  [decision %d%s]\n", 'a' + choice,
		    ilv_store_letters(mask), k, choice != __builtin_ctz(mask) ?
		    ", stale: counts as a preemption" : "");
	return choice;
}

void
ilv_note_read(int k, int n)
{
	if (S.policy->verbose)
		printf("           reads store %c of %d (a: the newest; the "
		    "only one it may read)\n", 'a' + k, n);
}

/* The baton holder @me (NULL: the main thread) lets the chosen thread run
 * and, unless it is done, sleeps until it is chosen again. */
static void
ilv_switch(struct ilv_thread *me)
{
	int next = ilv_decide(me != NULL ? me->id : -1);

	if (next < 0) {
		char waits[256];

		for (int i = 0; i < S.n; i++)
			if (S.t[i].state != ILV_DONE)
				goto deadlock;
		sem_post(&S.finished);
		return;
deadlock:
		ilv_describe_waits(waits, sizeof waits);
		ilv_fail("deadlock: no thread can run (%s)", waits);
	}
	if (me != NULL && next == me->id)
		return;
	sem_post(&S.t[next].go);
	if (me != NULL && me->state != ILV_DONE)
		while (sem_wait(&me->go) != 0)
			if (errno != EINTR)
				ilv_fail("sem_wait: %s", strerror(errno));
}

/* --trace: one line per step of the thread that now runs. */
static void
ilv_trace_step(const struct ilv_thread *me, const char *what)
{
	char choice[64] = "";
	int k = S.last_decision;

	if (!S.policy->verbose)
		return;
	if (k >= 0) {
		const struct ilv_decision *d = &S.trace->d[k];
		int used = snprintf(choice, sizeof choice, "  [decision %d:",
		    k);

		for (int i = 0; i < S.n; i++)
			if (d->enabled >> i & 1)
				used += snprintf(choice + used,
				    sizeof choice - (size_t)used, " %c",
				    'a' + i);
		snprintf(choice + used, sizeof choice - (size_t)used, "%s]",
		    ilv_is_preemption(d, d->chosen) ? ", preemption" : "");
	}
	printf("step %4u  thread %c  %s%s\n", ++S.steps, 'a' + me->id, what,
	    choice);
}

static int
ilv_held_index(const struct ilv_thread *t, const void *lock)
{
	for (int i = 0; i < t->nheld; i++)
		if (t->held[i] == lock)
			return i;
	return -1;
}

/* Perform a lock operation (the caller may perform it: it is runnable).
 * @t is NULL for a thread outside the run. */
static void
ilv_lock_effect(struct ilv_thread *t, enum cow__sched_op op, const void *a)
{
	cow__rwlock_t *l = ilv_lock(a);
	int h;

	switch (op) {
	case COW__SCHED_READ_LOCK:
		if (t != NULL) {
			ilv_check(ilv_held_index(t, a) < 0,
			    "a thread takes a shared lock it already holds");
			ilv_check(t->nheld < ILV_MAX_HELD,
			    "a thread holds more than %d shared locks",
			    ILV_MAX_HELD);
			t->held[t->nheld++] = a;
		}
		l->readers++;
		break;
	case COW__SCHED_READ_UNLOCK:
		ilv_check(l->readers > 0, "shared unlock of a lock nobody "
		    "holds shared");
		if (t != NULL) {
			h = ilv_held_index(t, a);
			ilv_check(h >= 0, "shared unlock by a thread that does "
			    "not hold the lock");
			t->held[h] = t->held[--t->nheld];
		}
		l->readers--;
		break;
	case COW__SCHED_WRITE_LOCK:
		/* Phase 0 (the claim); phase 1 changes nothing. */
		if (t == NULL || t->phase == 0)
			l->writer = 1;
		break;
	case COW__SCHED_WRITE_UNLOCK:
		ilv_check(l->writer != 0, "exclusive unlock of a lock nobody "
		    "holds exclusively");
		l->writer = 0;
		break;
	case COW__SCHED_LOCK_DESTROY:
		ilv_check(l->writer == 0 && l->readers == 0, "a lock is "
		    "destroyed while held (exclusive %u, shared %u): its "
		    "holder will touch freed memory", l->writer, l->readers);
		break;
	default:
		break;
	}
}

/* A thread outside the run (the set-up and the checks): no stopping. */
static void
ilv_unmanaged(enum cow__sched_op op, const void *addr)
{
	cow__rwlock_t *l;

	if (op == COW__SCHED_SPIN)
		ilv_fail("the set-up or tear-down would spin (no other thread "
		    "runs to end the wait)");
	if (!ilv_is_lock_op(op))
		return;
	l = ilv_lock(addr);
	if ((op == COW__SCHED_READ_LOCK && l->writer != 0) ||
	    (op == COW__SCHED_WRITE_LOCK && (l->writer != 0 ||
	    l->readers != 0)) ||
	    (op == COW__SCHED_WAIT_READERS && l->readers != 0))
		ilv_fail("the set-up or tear-down would wait for a lock");
	ilv_lock_effect(NULL, op, addr);
}

/* The weak-memory mode's part of a step: the memory model's record of
 * the access (weak.h). */
static void
ilv_weak_step(struct ilv_thread *me, enum cow__sched_op op, const void *a,
    enum cow__mo order)
{
	if (S.policy->verbose && !cow__sched_is_point(op))
		printf("           thread %c  %s (%s)\n", 'a' + me->id,
		    ilv_op_names[op], ilv_mo_names[order]);
	if (ilv_is_lock_op(op))
		ilv_weak_lock(me->id, op, ilv_lock(a), me->phase);
	else
		ilv_weak_atomic(me->id, op, a, order);
}

static bool
ilv_is_load(enum cow__sched_op op)
{
	return op == COW__SCHED_REF_LOAD || op == COW__SCHED_PIN_LOAD ||
	    op == COW__SCHED_PTR_LOAD || op == COW__SCHED_COUNTER_LOAD ||
	    op == COW__SCHED_EPOCH_LOAD;
}

static bool
ilv_is_store(enum cow__sched_op op)
{
	return op == COW__SCHED_REF_INIT || op == COW__SCHED_REF_GET ||
	    op == COW__SCHED_REF_SUB || op == COW__SCHED_PTR_STORE ||
	    op == COW__SCHED_PTR_INSTALL || op == COW__SCHED_COUNTER_STORE ||
	    op == COW__SCHED_COUNTER_RMW;
}

/* @me stores at @addr (or may: a compare-and-swap): the threads that spin
 * on @addr may find a new value there. */
static void
ilv_wake_spinners(const struct ilv_thread *me, const void *addr)
{
	for (int i = 0; i < S.n; i++) {
		struct ilv_thread *t = &S.t[i];

		if (t != me && t->state == ILV_AT_POINT &&
		    t->op == COW__SCHED_SPIN && t->spin_addr == addr)
			t->spin_woken = true;
	}
}

/* Is the counter at @addr a scheduling point in this run? */
static bool
ilv_counter_is_point(const void *addr)
{
	uintptr_t a = (uintptr_t)addr;

	return S.policy->counters || (a >= S.policy->sync_lo &&
	    a < S.policy->sync_hi);
}

/* cow__backoff: @me loaded its last_load, found what it waits to
 * change, and will load it again. It stops until that can give another
 * value; in the weak-memory mode its next load then reads a newer store
 * than the last (re-reading the same one is a step that changes nothing). */
static void
ilv_spin(struct ilv_thread *me)
{
	me->op = COW__SCHED_SPIN;
	me->addr = NULL;
	me->phase = 0;
	me->spin_addr = me->last_load;
	me->spin_woken = false;
	ilv_switch(me);
	ilv_trace_step(me, "spin wait (the location changed)");
	if (S.policy->weak)
		ilv_weak_spin_resume(me->id, me->spin_addr);
}

void
cow__sched_point(enum cow__sched_op op, const void *addr,
    enum cow__mo order)
{
	struct ilv_thread *me = ilv_me;
	bool weak;

	if (me == NULL || !S.active) {
		if (cow__sched_is_point(op))
			ilv_unmanaged(op, addr);
		return;
	}
	weak = S.policy->weak;
	if (ilv_is_load(op))
		me->last_load = addr;
	/* Counters are not modelled where they are not scheduling points,
	 * nor is the budget's epoch (a counter's load). */
	if ((cow__sched_is_counter(op) || op == COW__SCHED_EPOCH_LOAD) &&
	    !ilv_counter_is_point(addr)) {
		if (ilv_is_store(op))
			ilv_wake_spinners(me, addr);
		return;
	}
	if (weak)
		ilv_weak_settle(me->id);
	if (op == COW__SCHED_SPIN) {
		ilv_spin(me);
		return;
	}
	if (!cow__sched_is_point(op)) {
		/* Fences, initialisations and the loads with nothing to
		 * choose under sequential consistency: no scheduling point,
		 * but the memory model sees them. */
		if (weak) {
			me->phase = 0;
			ilv_weak_step(me, op, addr, order);
		}
		if (ilv_is_store(op))
			ilv_wake_spinners(me, addr);
		return;
	}
	/* A lock operation reads the lock first, as ck's code would: on a
	 * freed lock, AddressSanitizer reports it in this thread. */
	if (ilv_is_lock_op(op))
		(void)*(volatile unsigned *)&ilv_lock(addr)->writer;
	me->op = op;
	me->addr = addr;
	me->phase = 0;
	ilv_switch(me);
	ilv_trace_step(me, op == COW__SCHED_WRITE_LOCK ?
	    "exclusive lock (claim)" : ilv_op_names[op]);
	if (weak)
		ilv_weak_step(me, op, addr, order);
	ilv_lock_effect(me, op, addr);
	if (ilv_is_store(op))
		ilv_wake_spinners(me, addr);
	if (op == COW__SCHED_WRITE_LOCK) {
		/* Claimed: new readers now wait. Then wait for the readers
		 * inside, at a scheduling point of its own. */
		me->phase = 1;
		ilv_switch(me);
		ilv_trace_step(me, "exclusive lock (no reader inside)");
		if (weak)
			ilv_weak_step(me, op, addr, order);
	}
}

void
cow__sched_access(const void *addr, size_t n, int write)
{
	struct ilv_thread *me = ilv_me;

	if (me == NULL || !S.active || !S.policy->weak)
		return;
	ilv_weak_access(me->id, addr, n, write != 0);
}

static void *
ilv_thread_main(void *arg)
{
	struct ilv_thread *me = arg;

	ilv_me = me;
	sem_post(&S.started);
	while (sem_wait(&me->go) != 0)
		if (errno != EINTR)
			ilv_fail("sem_wait: %s", strerror(errno));
	me->state = ILV_AT_POINT;
	me->op = COW__SCHED_NOPS;
	ilv_trace_step(me, "start");
	S.body(S.arg, me->id);
	if (S.policy->weak)
		ilv_weak_settle(me->id);
	ilv_check(me->nheld == 0, "thread %c ends holding a shared lock",
	    'a' + me->id);
	me->state = ILV_DONE;
	ilv_switch(me);
	ilv_me = NULL;
	return NULL;
}

void
ilv_sched_run(int nthreads, void (*body)(void *arg, int id), void *arg,
    const struct ilv_policy *policy, struct ilv_trace *trace)
{
	if (nthreads < 1 || nthreads > ILV_MAX_THREADS)
		ilv_fail("%d threads (1 to %d)", nthreads, ILV_MAX_THREADS);
	memset(&S, 0, sizeof S);
	S.n = nthreads;
	S.body = body;
	S.arg = arg;
	S.policy = policy;
	S.rng = policy->random;
	S.trace = trace;
	trace->n = 0;
	ilv_current_trace = trace;
	if (policy->weak)
		ilv_weak_reset(nthreads, policy->history);
	sem_init(&S.started, 0, 0);
	sem_init(&S.finished, 0, 0);
	S.active = true;
	for (int i = 0; i < nthreads; i++) {
		struct ilv_thread *t = &S.t[i];

		t->id = i;
		t->state = ILV_STARTING;
		sem_init(&t->go, 0, 0);
		if (pthread_create(&t->pt, NULL, ilv_thread_main, t) != 0)
			ilv_fail("pthread_create failed");
	}
	for (int i = 0; i < nthreads; i++)
		while (sem_wait(&S.started) != 0)
			if (errno != EINTR)
				ilv_fail("sem_wait: %s", strerror(errno));
	/* Every thread waits for its first turn: choose it. */
	ilv_switch(NULL);
	while (sem_wait(&S.finished) != 0)
		if (errno != EINTR)
			ilv_fail("sem_wait: %s", strerror(errno));
	for (int i = 0; i < nthreads; i++) {
		pthread_join(S.t[i].pt, NULL);
		sem_destroy(&S.t[i].go);
	}
	S.active = false;
	sem_destroy(&S.started);
	sem_destroy(&S.finished);
}
