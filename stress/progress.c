/*
 * progress.c - the live progress line: on a terminal it is redrawn twice a
 * second; otherwise a plain line is printed every --progress seconds (5 by
 * default), timed from each scenario's start so that it shows the scenario
 * under way, with the expected end of the run. It goes to stderr, so the
 * report on stdout can be redirected on its own.
 *
 * The same thread is the stall watchdog (also with --quiet): a scenario
 * whose operation count, round and heartbeat (long loops over a buffer beat
 * it) have not moved for STRESS_STALL_SECONDS is stuck (a
 * deadlock, or a waiter spinning on a lock word that a use-after-free
 * scribbled on), which is reported as a violation with its replay command
 * before the process exits with status 1.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static pthread_t stress_progress_thread;
static _Atomic bool stress_progress_quit;
static bool stress_progress_running;
static bool stress_progress_tty;

/* Where the progress thread is: the run it reported on last, when and at
 * which operation count (for ops/s), and how many lines it printed for
 * that run. */
struct stress_progress {
	const struct stress_run *run;
	double t;            /* stress_now() of the last line */
	uint64_t ops;
	unsigned lines;
};

/* How many selected scenarios come before (*before) and after (*after)
 * scenario @index. */
static void
stress_position(const struct stress_options *opt, unsigned index,
    unsigned *before, unsigned *after)
{
	*before = 0;
	*after = 0;
	for (unsigned i = 0; i < stress_nscenarios; i++) {
		if (((opt->scenarios >> i) & 1) == 0)
			continue;
		if (i < index)
			(*before)++;
		else if (i > index)
			(*after)++;
	}
}

/*
 * When the run is expected to end, in stress_now() seconds, or 0 when that
 * is unknown. The current scenario ends at its deadline or, with
 * --iterations, when its rounds are done at the rate so far (whichever is
 * first). Each later scenario has the same time budget; with no time
 * budget their length is unknown.
 */
static double
stress_expected_end(const struct stress_run *run, double now, unsigned after)
{
	const struct stress_options *opt = run->opt;
	uint64_t rounds = stress_round(run);
	double end = run->deadline;
	double into = now - run->start;

	if (opt->iterations > 0 && rounds > 0 && into > 0) {
		double est = run->start + into * (double)opt->iterations /
		    (double)rounds;

		if (end == 0 || est < end)
			end = est;
	}
	if (after == 0)
		return end;
	if (end == 0 || run->deadline == 0)
		return 0;
	return end + (double)after * (run->deadline - run->start);
}

/* "in 17.5 s, at 12:34:56" (the date too when it is not today). */
static void
stress_format_end(double end, double now, char *buf, size_t len)
{
	time_t wall = time(NULL);
	time_t at = wall + (time_t)(end - now + 0.5);
	struct tm tm_now, tm_at;
	char clock[32];

	localtime_r(&wall, &tm_now);
	localtime_r(&at, &tm_at);
	if (tm_now.tm_year == tm_at.tm_year && tm_now.tm_yday == tm_at.tm_yday)
		strftime(clock, sizeof clock, "%H:%M:%S", &tm_at);
	else
		strftime(clock, sizeof clock, "%Y-%m-%d %H:%M:%S", &tm_at);
	snprintf(buf, len, "in %.1f s, at %s", end > now ? end - now : 0.0,
	    clock);
}

/*
 * One progress line about @run. Not on a terminal:
 *   cow_stress: [   7.5 s] materialize-race (2/5) at 2.5 of 5.0 s: round
 *   1234, 48055 ops/s, 52186 copies, 5799 steals, 0 violations; expected
 *   end in 17.5 s, at 12:34:56
 * (one line). On a terminal the same without "cow_stress: ", redrawn in
 * place.
 */
static void
stress_progress_line(struct stress_progress *p, struct stress_run *run)
{
	const struct stress_options *opt = run->opt;
	double now = stress_now();
	double t = stress_since_start();
	double into = now - run->start;
	double budget = run->deadline > 0 ? run->deadline - run->start : 0;
	unsigned before, after;
	uint64_t ops = stress_run_ops(run), rounds = stress_round(run);
	uint64_t viol = atomic_load(&run->violations), copies, steals;
	double rate, end;
	char of[48], iters[48], ends[96], line[512];
	cow_stats_t cs;

	if (run != p->run) {
		p->run = run;
		p->ops = 0;
		p->t = run->start;
		p->lines = 0;
	}
	rate = now > p->t ? (double)(ops - p->ops) / (now - p->t) : 0;
	p->ops = ops;
	p->t = now;
	p->lines++;
	/* The library's counters since this scenario started (run->before
	 * was taken before the run was published). */
	cow_stats_get(&cs);
	copies = cs.materialize_copies - run->before.materialize_copies;
	steals = cs.materialize_steals - run->before.materialize_steals;
	stress_position(opt, run->index, &before, &after);
	end = stress_expected_end(run, now, after);
	if (budget > 0)
		snprintf(of, sizeof of, " of %.1f", budget);
	else
		of[0] = '\0';
	if (opt->iterations > 0)
		snprintf(iters, sizeof iters, " of %" PRIu64, opt->iterations);
	else
		iters[0] = '\0';
	if (end > 0)
		stress_format_end(end, now, ends, sizeof ends);
	else
		snprintf(ends, sizeof ends, "unknown (%u more %s with no time "
		    "limit)", after, stress_plural(after, "scenario",
		    "scenarios"));
	snprintf(line, sizeof line, "[%6.1f s] %s (%u/%u) at %.1f%s s: "
	    "round %" PRIu64 "%s, %.0f ops/s, %" PRIu64 " %s, %" PRIu64
	    " %s, %" PRIu64 " %s; expected end %s", t, run->scn->name,
	    before + 1, before + 1 + after, into, of, rounds, iters, rate,
	    copies, stress_plural(copies, "copy", "copies"), steals,
	    stress_plural(steals, "steal", "steals"), viol,
	    stress_plural(viol, "violation", "violations"), ends);
	if (stress_progress_tty) {
		/* Redrawn in place: cut to the terminal's width, since a line
		 * that wraps cannot be erased by the next one. */
		struct winsize ws;

		if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 &&
		    ws.ws_col > 1 && (size_t)ws.ws_col - 1 < strlen(line))
			line[ws.ws_col - 1] = '\0';
		fprintf(stderr, "\r\033[K%s", line);
	} else {
		fprintf(stderr, "cow_stress: %s\n", line);
	}
	fflush(stderr);
}

/*
 * Is a line about @run due? On a terminal every @every seconds. Otherwise
 * lines are timed from the scenario's own start, so that they show it
 * running rather than starting: the first one after @every seconds or
 * halfway through the scenario's budget, whichever comes first, then every
 * @every seconds.
 */
static bool
stress_progress_due(const struct stress_progress *p,
    const struct stress_run *run, double every, double now, double *next)
{
	double budget, first;
	unsigned lines;

	if (stress_progress_tty) {
		if (now < *next)
			return false;
		*next = now + every;
		return true;
	}
	lines = run == p->run ? p->lines : 0;
	budget = run->deadline > 0 ? run->deadline - run->start : 0;
	first = budget > 0 && budget / 2 < every ? budget / 2 : every;
	return now >= run->start + first + (double)lines * every;
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
	/* Progress is a library call, a round, or a stretch of a long loop
	 * over a buffer (the heartbeat). */
	ops = stress_run_ops(run) + stress_round(run) +
	    atomic_load_explicit(&stress_heartbeat, memory_order_relaxed);
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
	double every = stress_progress_tty ? 0.5 : opt->progress;
	double next = stress_now() + every;
	double since = 0;
	uint64_t seen_ops = 0;
	const struct stress_run *seen = NULL;
	struct stress_progress p = {0};

	while (!atomic_load(&stress_progress_quit)) {
		struct timespec ts = {0, 50 * 1000 * 1000};
		struct stress_run *run;

		nanosleep(&ts, NULL);
		stress_watchdog(&seen, &seen_ops, &since);
		if (opt->quiet || (run = stress_current()) == NULL)
			continue;
		if (stress_progress_due(&p, run, every, stress_now(), &next))
			stress_progress_line(&p, run);
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
