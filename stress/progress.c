/*
 * progress.c - the live progress line: on a terminal it is redrawn twice a
 * second, otherwise a plain line is printed every five seconds. It goes to
 * stderr, so the report on stdout can be redirected on its own.
 *
 * The same thread is the stall watchdog (also with --quiet): a scenario
 * whose operation count has not moved for STRESS_STALL_SECONDS is stuck (a
 * deadlock, or a waiter spinning on a lock word that a use-after-free
 * scribbled on), which is reported as a violation with its replay command
 * before the process exits with status 1.
 */
#include <inttypes.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static pthread_t stress_progress_thread;
static _Atomic bool stress_progress_quit;
static bool stress_progress_running;
static bool stress_progress_tty;

static void
stress_progress_line(double *last_t, uint64_t *last_ops,
    const struct stress_run **last_run)
{
	struct stress_run *run = stress_current();
	double t = stress_since_start();
	cow_stats_t cs;
	uint64_t ops;
	double rate;

	if (run == NULL)
		return;
	ops = stress_run_ops(run);
	if (run != *last_run) {
		*last_run = run;
		*last_ops = 0;
		*last_t = run->start - (stress_now() - t);
	}
	rate = t > *last_t ? (double)(ops - *last_ops) / (t - *last_t) : 0;
	*last_ops = ops;
	*last_t = t;
	cow_stats_get(&cs);
	fprintf(stderr,
	    "%s[%6.1f s] %-22s round %-7" PRIu64 " %9.0f ops/s  copies %-9"
	    PRIu64 " steals %-9" PRIu64 " violations %" PRIu64 "%s",
	    stress_progress_tty ? "\r\033[K" : "cow_stress: ", t,
	    run->scn->name, stress_round(run), rate, cs.materialize_copies,
	    cs.materialize_steals, atomic_load(&run->violations),
	    stress_progress_tty ? "" : "\n");
	fflush(stderr);
}

/* Exit if the current run has made no progress for too long. */
static void
stress_watchdog(const struct stress_run **seen, uint64_t *seen_ops,
    double *since)
{
	struct stress_run *run = stress_current();
	uint64_t ops;
	char replay[256];

	if (run == NULL)
		return;
	ops = stress_run_ops(run) + stress_round(run);
	if (run != *seen || ops != *seen_ops) {
		*seen = run;
		*seen_ops = ops;
		*since = stress_now();
		return;
	}
	if (stress_now() - *since < STRESS_STALL_SECONDS)
		return;
	stress_replay_command(run, replay, sizeof replay);
	fprintf(stderr, "\ncow_stress: VIOLATION in %s (round %" PRIu64
	    ", %.3f s): no progress for %.0f s: deadlock or a thread spinning "
	    "forever\ncow_stress: seed 0x%016" PRIx64 ", scenario %s; replay "
	    "with: %s\n", run->scn->name, stress_round(run),
	    stress_since_start(), STRESS_STALL_SECONDS, run->opt->seed,
	    run->scn->name, replay);
	fflush(stderr);
	_exit(1);
}

static void *
stress_progress_main(void *arg)
{
	const struct stress_options *opt = arg;
	double every = stress_progress_tty ? 0.5 : 5.0;
	double next = stress_now() + every;
	double last_t = 0, since = 0;
	uint64_t last_ops = 0, seen_ops = 0;
	const struct stress_run *last_run = NULL, *seen = NULL;

	while (!atomic_load(&stress_progress_quit)) {
		struct timespec ts = {0, 50 * 1000 * 1000};

		nanosleep(&ts, NULL);
		stress_watchdog(&seen, &seen_ops, &since);
		if (opt->quiet || stress_now() < next)
			continue;
		next += every;
		stress_progress_line(&last_t, &last_ops, &last_run);
	}
	if (stress_progress_tty && !opt->quiet)
		fprintf(stderr, "\r\033[K");
	return NULL;
}

void
stress_progress_start(const struct stress_options *opt)
{
	stress_progress_tty = isatty(STDERR_FILENO) == 1;
	atomic_store(&stress_progress_quit, false);
	stress_progress_running = pthread_create(&stress_progress_thread, NULL,
	    stress_progress_main, (void *)opt) == 0;
}

void
stress_progress_stop(void)
{
	if (!stress_progress_running)
		return;
	atomic_store(&stress_progress_quit, true);
	pthread_join(stress_progress_thread, NULL);
	stress_progress_running = false;
}
