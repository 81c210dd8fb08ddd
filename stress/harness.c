/*
 * harness.c - time, seeded generators, scheduler perturbation, thread teams
 * and rounds, invariant checks and violation reports.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

/* Read-only once the first team starts (set in main before any thread). */
static double stress_t0;
/* The run executing now. Synchronization: atomic. */
static _Atomic(struct stress_run *) stress_cur;
/* Beaten by long loops over buffers (stress_beat); read by the stall
 * watchdog. Synchronization: atomic (relaxed: only its movement counts). */
_Atomic uint64_t stress_heartbeat;
/* Serialises violation messages. */
static pthread_mutex_t stress_print_lock = PTHREAD_MUTEX_INITIALIZER;
/* The format strings of the violations printed so far, so that the first
 * violation of every kind is printed even after the first ten.
 * Synchronization: stress_print_lock. */
#define STRESS_KINDS_PRINTED 64
static const char *stress_kinds[STRESS_KINDS_PRINTED];
static unsigned stress_nkinds;

double
stress_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double
stress_since_start(void)
{
	if (stress_t0 == 0)
		stress_t0 = stress_now();
	return stress_now() - stress_t0;
}

struct stress_run *
stress_current(void)
{
	return atomic_load_explicit(&stress_cur, memory_order_acquire);
}

void
stress_set_current(struct stress_run *run)
{
	atomic_store_explicit(&stress_cur, run, memory_order_release);
}

/* ---- generators --------------------------------------------------------- */

/* splitmix64 finaliser. */
uint64_t
stress_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

void
stress_rng_init(struct stress_rng *r, uint64_t seed, uint64_t a, uint64_t b)
{
	r->s = stress_mix64(seed ^ stress_mix64(a * 0x100000001b3ULL ^
	    stress_mix64(b + 0x632be59bd9b4e019ULL)));
}

uint64_t
stress_rng_next(struct stress_rng *r)
{
	r->s += 0x9e3779b97f4a7c15ULL;
	return stress_mix64(r->s);
}

uint64_t
stress_rng_below(struct stress_rng *r, uint64_t n)
{
	return stress_rng_next(r) % n;
}

void
stress_perturb(struct stress_rng *r)
{
	uint64_t x = stress_rng_next(r);
	unsigned kind = (unsigned)(x & 31);

	if (kind < 6) {
		sched_yield();
	} else if (kind == 6) {
		struct timespec ts = {0, (long)(1000 * (1 + (x >> 8) % 40))};

		nanosleep(&ts, NULL);
	} else if (kind < 16) {
		/* A short spin shifts this thread's timing a little. */
		volatile unsigned sink = 0;

		for (unsigned i = (unsigned)((x >> 8) % 256); i > 0; i--)
			sink += i;
		(void)sink;
	}
}

/* ---- teams and rounds ----------------------------------------------------- */

struct stress_thread_arg {
	struct stress_run *run;
	unsigned tid;
};

static void *
stress_thread_main(void *p)
{
	struct stress_thread_arg *a = p;

	a->run->scn->worker(a->run, a->tid);
	return NULL;
}

void
stress_team_run(struct stress_run *run)
{
	pthread_t th[STRESS_MAX_THREADS];
	struct stress_thread_arg args[STRESS_MAX_THREADS];
	int err;

	if ((err = pthread_barrier_init(&run->barrier, NULL, run->threads)) !=
	    0) {
		fprintf(stderr, "cow_stress: pthread_barrier_init: %s\n",
		    strerror(err));
		exit(2);
	}
	for (unsigned i = 0; i < run->threads; i++) {
		args[i].run = run;
		args[i].tid = i;
		if ((err = pthread_create(&th[i], NULL, stress_thread_main,
		    &args[i])) != 0) {
			fprintf(stderr, "cow_stress: pthread_create: %s\n",
			    strerror(err));
			exit(2);
		}
	}
	for (unsigned i = 0; i < run->threads; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&run->barrier);
}

void
stress_barrier(struct stress_run *run)
{
	pthread_barrier_wait(&run->barrier);
}

bool
stress_stopping(struct stress_run *run)
{
	return atomic_load_explicit(&run->stop, memory_order_relaxed);
}

bool
stress_next_round(struct stress_run *run, unsigned tid)
{
	/* Everyone has finished the previous round before tid 0 decides, and
	 * tid 0 has decided before anyone reads the decision. */
	stress_barrier(run);
	if (tid == 0) {
		uint64_t done = atomic_load(&run->rounds);
		bool go = !stress_stopping(run) &&
		    (run->opt->iterations == 0 ||
		    done < run->opt->iterations) &&
		    (run->deadline == 0 || stress_now() < run->deadline);

		if (go)
			atomic_store(&run->rounds, done + 1);
		atomic_store(&run->go, go);
	}
	stress_barrier(run);
	return atomic_load(&run->go);
}

uint64_t
stress_round(const struct stress_run *run)
{
	return atomic_load(&((struct stress_run *)run)->rounds);
}

uint64_t
stress_run_ops(struct stress_run *run)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < run->threads; i++)
		n += atomic_load_explicit(&run->ops[i].ops,
		    memory_order_relaxed);
	return n;
}

/* ---- invariants ------------------------------------------------------------ */

void
stress_replay_command(const struct stress_run *run, char *buf, size_t len)
{
	char budget[64];

	/* The failing run's own budget: its rounds, or its time (at least
	 * the time it had; the seed fixes the choices, not the schedule). */
	if (run->opt->iterations_given)
		snprintf(budget, sizeof budget, "--iterations %" PRIu64,
		    run->opt->iterations);
	else if (run->deadline > 0)
		snprintf(budget, sizeof budget, "--seconds %.0f",
		    run->deadline - run->start < 1 ? 1.0 :
		    run->deadline - run->start + 0.5);
	else
		snprintf(budget, sizeof budget, "--seconds 60");
	snprintf(buf, len,
	    "cow_stress --scenario %s --seed 0x%016" PRIx64
	    " --threads %u --size %zu %s",
	    run->scn->name, run->opt->seed, run->threads, run->opt->size,
	    budget);
}

void
stress_checks_passed(struct stress_run *run, uint64_t n)
{
	atomic_fetch_add_explicit(&run->checks, n, memory_order_relaxed);
}

/* True the first time a violation with format @fmt is seen (while the
 * table has room); records it. stress_print_lock held. */
static bool
stress_new_kind(const char *fmt)
{
	for (unsigned i = 0; i < stress_nkinds; i++)
		if (stress_kinds[i] == fmt)
			return false;
	if (stress_nkinds == STRESS_KINDS_PRINTED)
		return false;
	stress_kinds[stress_nkinds++] = fmt;
	return true;
}

bool
stress_check(struct stress_run *run, bool ok, const char *fmt, ...)
{
	uint64_t nth;
	char msg[512], replay[256];
	bool fresh;
	va_list ap;

	atomic_fetch_add_explicit(&run->checks, 1, memory_order_relaxed);
	if (ok)
		return true;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&stress_print_lock);
	nth = atomic_fetch_add(&run->violations, 1);
	if (nth == 0) {
		run->first_violation = stress_since_start();
		run->first_violation_round = stress_round(run);
	}
	/* The first ten, and after them the first of every other kind. */
	fresh = stress_new_kind(fmt);
	if (nth < 10 || fresh) {
		fprintf(stderr,
		    "cow_stress: VIOLATION in %s (round %" PRIu64
		    ", %.3f s): %s\n", run->scn->name, stress_round(run),
		    stress_since_start(), msg);
	}
	if (nth == 0) {
		stress_replay_command(run, replay, sizeof replay);
		fprintf(stderr, "cow_stress: seed 0x%016" PRIx64
		    ", scenario %s; replay with: %s\n", run->opt->seed,
		    run->scn->name, replay);
	}
	fflush(stderr);
	pthread_mutex_unlock(&stress_print_lock);
	atomic_store(&run->stop, true);
	return false;
}
