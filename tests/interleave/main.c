/*
 * main.c - cow_interleave: runs the scenarios of the interleaving checker
 * under every schedule up to a preemption bound, or under seeded random
 * schedules, or replays one schedule (docs/interleave.md).
 *
 *   cow_interleave --list
 *   cow_interleave SCENARIO --bound B        depth-first, bounds 0 .. B
 *   cow_interleave SCENARIO --random N [--seed S]
 *            either with --counters: statistics counters are scheduling
 *            points too (in every scenario, not only where they carry
 *            synchronisation)
 *   cow_interleave --replay SCENARIO:SCHEDULE [--trace]
 *                                            --trace: print every step
 *
 * Exhaustive search (CHESS's iterative preemption bounding): bound 0 runs
 * every schedule without a preemption (a thread runs until it finishes or
 * must wait; which thread goes next is still a choice), bound c every
 * schedule with exactly c preemptions, found from the prefixes that the
 * previous bound left with one preemption too many; no schedule runs twice.
 * A decision's alternatives are every other runnable thread.
 *
 * A schedule string is SCENARIO:CHOICES, the choice at each decision (a
 * thread letter, a to d) with runs written as a letter and a count (a3 =
 * aaa), cut after the last choice that differs from the default (keep the
 * current thread, else the lowest runnable one), which a replay makes
 * after the string ends.
 *
 * Exit status: 0 no violation (and, with --bound, the search exhausted);
 * 1 a violation, printed with its schedule; 2 usage; 3 the replay did not
 * fit (the program is not deterministic or the string is not its).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sanitizer/common_interface_defs.h>

#include "scenario.h"
#include "weak.h"

/* One execution may run this long (seconds) before it counts as hung. */
#define ILV_EXEC_TIMEOUT 60
/* Largest preemption bound; a search that leaves no prefix beyond its
 * bound ran every schedule. */
#define ILV_MAX_BOUND 63

static const struct ilv_scenario *const ilv_scenarios[] = {
	&ilv_scn_pair, &ilv_scn_trio, &ilv_scn_wrap, &ilv_scn_chain,
	&ilv_scn_shadow, &ilv_scn_functional, &ilv_scn_count, &ilv_scn_keep,
	&ilv_scn_borrowed, &ilv_scn_budget, &ilv_scn_litmus, &ilv_scn_sb,
	&ilv_scn_spin, &ilv_scn_snapshot, &ilv_scn_snapshot_get,
	&ilv_scn_snapshot_release, &ilv_scn_snapshot_fail,
};
#define ILV_NSCENARIOS (sizeof ilv_scenarios / sizeof ilv_scenarios[0])

/* What the report of a violation says about the search (main thread
 * writes, any thread reads it once the process is ending). */
static struct {
	const char *scenario;
	const char *mode;  /* "bound", "random", "replay" */
	int bound;         /* current preemption bound (mode "bound") */
	uint64_t seed;     /* mode "random" */
	uint64_t schedules; /* executions started, this one included */
	volatile sig_atomic_t reported;
} ilv_run;

static const char *ilv_argv0 = "cow_interleave";

/* --counters: counters are scheduling points in every scenario (the
 * schedule strings then name the scenario SCENARIO+counters). */
static bool ilv_all_counters;

static bool
ilv_counters(const struct ilv_scenario *scn)
{
	return scn->counters || ilv_all_counters;
}

/* --weak: the weak-memory mode, keeping ilv_history stores per location
 * (the schedule strings then name the scenario SCENARIO+weakH). */
static bool ilv_weak;
static int ilv_history = 3;

/* The policy's fields that every execution of the run shares. */
static struct ilv_policy
ilv_base_policy(const struct ilv_scenario *scn)
{
	return (struct ilv_policy){.counters = ilv_counters(scn),
	    .weak = ilv_weak, .history = ilv_history};
}

/* "+counters", "+weakH": the modes a schedule string names. */
static int
ilv_mode_suffix(char *buf, size_t size)
{
	int used = snprintf(buf, size, "%s", ilv_all_counters ?
	    "+counters" : "");

	if (ilv_weak && used >= 0 && (size_t)used < size)
		used += snprintf(buf + used, size - (size_t)used, "+weak%d",
		    ilv_history);
	return used;
}

/* ------------------------------------------------------------------ */
/* Schedule strings.                                                    */

#define ILV_SCHEDULE_MAX (ILV_MAX_DECISIONS * 6 + 64)

/* Write SCENARIO:CHOICES for @tr into @buf (no allocation: the signal
 * handlers use it). */
static void
ilv_schedule_string(const struct ilv_trace *tr, const char *scenario,
    char *buf, size_t size)
{
	int last = -1, used;

	for (int k = 0; k < tr->n; k++)
		if (tr->d[k].chosen != ilv_default_choice(&tr->d[k]))
			last = k;
	used = snprintf(buf, size, "%s", scenario);
	used += ilv_mode_suffix(buf + used, size - (size_t)used);
	used += snprintf(buf + used, size - (size_t)used, ":");
	for (int k = 0; k <= last && used >= 0 && (size_t)used < size;) {
		int run = 1;

		while (k + run <= last && tr->d[k + run].chosen ==
		    tr->d[k].chosen)
			run++;
		if (run == 1)
			used += snprintf(buf + used, size - (size_t)used, "%c",
			    'a' + tr->d[k].chosen);
		else
			used += snprintf(buf + used, size - (size_t)used,
			    "%c%d", 'a' + tr->d[k].chosen, run);
		k += run;
	}
}

/* Parse CHOICES into @out; returns the number of decisions, -1 if bad. */
static int
ilv_parse_choices(const char *s, uint8_t *out, int max)
{
	int n = 0;

	while (*s != '\0') {
		long run = 1;
		int c = *s++ - 'a';
		char *end;

		if (c < 0 || c >= 8)
			return -1;
		if (*s >= '0' && *s <= '9') {
			errno = 0;
			run = strtol(s, &end, 10);
			if (errno != 0 || run < 1 || run > max)
				return -1;
			s = end;
		}
		if (n + run > max)
			return -1;
		while (run-- > 0)
			out[n++] = (uint8_t)c;
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* Reports.                                                             */

static void
ilv_write_all(const char *s)
{
	size_t n = strlen(s);

	while (n > 0) {
		ssize_t w = write(STDERR_FILENO, s, n);

		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* The violation (@kind) line, the schedule and how to replay it; at most
 * once. */
static void
ilv_report_kind(const char *kind, const char *what)
{
	static char sched[ILV_SCHEDULE_MAX];
	static char line[1024];
	const char *scn = ilv_run.scenario != NULL ? ilv_run.scenario : "?";

	if (ilv_run.reported)
		return;
	ilv_run.reported = 1;
	fflush(stdout);
	if (ilv_current_trace != NULL)
		ilv_schedule_string(ilv_current_trace, scn, sched,
		    sizeof sched);
	else
		ilv_schedule_string(&(struct ilv_trace){.n = 0}, scn, sched,
		    sizeof sched);
	snprintf(line, sizeof line, "interleave: %s: %s: %s\n", kind, scn,
	    what);
	ilv_write_all(line);
	if (ilv_run.mode != NULL && strcmp(ilv_run.mode, "bound") == 0)
		snprintf(line, sizeof line, "interleave: found in schedule "
		    "%" PRIu64 " of the search, at preemption bound %d\n",
		    ilv_run.schedules, ilv_run.bound);
	else if (ilv_run.mode != NULL && strcmp(ilv_run.mode, "random") == 0)
		snprintf(line, sizeof line, "interleave: found in random "
		    "schedule %" PRIu64 " (seed %" PRIu64 ")\n",
		    ilv_run.schedules, ilv_run.seed);
	else
		snprintf(line, sizeof line, "interleave: found in the "
		    "replay\n");
	ilv_write_all(line);
	ilv_write_all("interleave: schedule ");
	ilv_write_all(sched);
	ilv_write_all("\ninterleave: replay: ");
	ilv_write_all(ilv_argv0);
	ilv_write_all(" --replay ");
	ilv_write_all(sched);
	ilv_write_all("\n");
}

static void
ilv_report(const char *what)
{
	ilv_report_kind("VIOLATION", what);
}

/* Report the message of @fmt and @ap as @kind, then exit with @status. */
static _Noreturn void __attribute__((format(printf, 3, 0)))
ilv_report_exit(const char *kind, int status, const char *fmt, va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof msg, fmt, ap);
	ilv_report_kind(kind, msg);
	_exit(status);
}

void
ilv_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ilv_report_exit("VIOLATION", 1, fmt, ap);
	va_end(ap); /* not reached */
}

void
ilv_unfit(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ilv_report_exit("SCHEDULE DOES NOT FIT", 3, fmt, ap);
	va_end(ap); /* not reached */
}

/* AddressSanitizer and UBSan call this before they end the process. */
static void
ilv_on_sanitizer_death(void)
{
	ilv_report("a sanitizer report (above)");
}

static void
ilv_on_signal(int sig)
{
	if (sig == SIGALRM) {
		ilv_report("an execution hung (a wait the scheduler does not "
		    "model)");
		_exit(1);
	}
	ilv_report(sig == SIGABRT ? "abort (above: cow__die or an "
	    "assertion)" : "a fatal signal");
	signal(sig, SIG_DFL);
	raise(sig);
}

/* ------------------------------------------------------------------ */
/* One execution.                                                       */

static void
ilv_execute(const struct ilv_scenario *scn, const struct ilv_policy *p,
    struct ilv_trace *tr)
{
	cow_alloc_stats_t a0, a1;
	struct ilv_policy q = *p;
	void *st;

	ilv_run.schedules++;
	ilv_current_trace = tr;
	tr->n = 0;
	alarm(ILV_EXEC_TIMEOUT);
	cow_allocator_stats(cow_allocator_default(), &a0);
	st = scn->setup();
	if (scn->sync_words != NULL)
		scn->sync_words(st, &q.sync_lo, &q.sync_hi);
	ilv_sched_run(scn->nthreads, scn->thread, st, &q, tr);
	scn->check(st);
	scn->teardown(st);
	cow_allocator_stats(cow_allocator_default(), &a1);
	ilv_check(a1.live_allocs == a0.live_allocs &&
	    a1.live_bytes == a0.live_bytes, "leak: %" PRIu64 " allocations "
	    "(%" PRIu64 " bytes) still live after tear-down",
	    a1.live_allocs - a0.live_allocs, a1.live_bytes - a0.live_bytes);
	alarm(0);
}

/* ------------------------------------------------------------------ */
/* Depth-first search with iterative preemption bounding.              */

/* A schedule prefix still to run: its choices and the runnable sets they
 * were made in. */
struct ilv_item {
	int len;
	int preemptions;
	uint8_t *choices;
	uint8_t *masks;
};

struct ilv_stack {
	struct ilv_item *v;
	size_t n, cap;
};

static void
ilv_push(struct ilv_stack *s, const struct ilv_trace *tr, int upto,
    uint8_t last, int preemptions)
{
	struct ilv_item it;

	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		s->v = realloc(s->v, s->cap * sizeof *s->v);
		if (s->v == NULL)
			ilv_fail("out of memory (search stack)");
	}
	it.len = upto + 1;
	it.preemptions = preemptions;
	it.choices = malloc((size_t)it.len * 2);
	if (it.choices == NULL)
		ilv_fail("out of memory (search stack)");
	it.masks = it.choices + it.len;
	for (int k = 0; k < upto; k++) {
		it.choices[k] = tr->d[k].chosen;
		it.masks[k] = tr->d[k].enabled;
	}
	it.choices[upto] = last;
	it.masks[upto] = tr->d[upto].enabled;
	s->v[s->n++] = it;
}

static double
ilv_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
ilv_search(const struct ilv_scenario *scn, int bound)
{
	static struct ilv_trace tr;
	struct ilv_stack now = {0}, next = {0};
	uint64_t per_bound[ILV_MAX_BOUND + 1] = {0}, beyond = 0, total = 0;
	double t0 = ilv_now();
	int last = 0;

	ilv_run.mode = "bound";
	/* Round 0 starts from the empty prefix. */
	now.v = calloc(1, sizeof *now.v);
	if (now.v == NULL)
		ilv_fail("out of memory");
	now.n = now.cap = 1;
	for (int c = 0; c <= bound && now.n > 0; c++) {
		ilv_run.bound = c;
		last = c;
		while (now.n > 0) {
			struct ilv_item it = now.v[--now.n];
			struct ilv_policy p = ilv_base_policy(scn);

			p.prefix = it.choices;
			p.masks = it.masks;
			p.prefix_len = it.len;
			ilv_execute(scn, &p, &tr);
			per_bound[c]++;
			total++;
			/* The alternatives of every decision past the prefix
			 * (those are default choices: no preemption). */
			for (int k = tr.n - 1; k >= it.len; k--) {
				const struct ilv_decision *d = &tr.d[k];

				for (int t = 0; t < 8; t++) {
					int pre;

					if (!(d->enabled >> t & 1) ||
					    t == d->chosen)
						continue;
					pre = it.preemptions +
					    ilv_is_preemption(d, t);
					if (pre <= c)
						ilv_push(&now, &tr, k,
						    (uint8_t)t, pre);
					else if (c < bound)
						ilv_push(&next, &tr, k,
						    (uint8_t)t, pre);
					else
						beyond++;
				}
			}
			free(it.choices);
		}
		free(now.v);
		now = next;
		next = (struct ilv_stack){0};
	}
	free(now.v);
	printf("%s: explored %" PRIu64 " schedules (bound %d), exhausted\n",
	    scn->name, total, bound);
	printf("%s: by preemptions:", scn->name);
	for (int c = 0; c <= last; c++)
		printf(" %d: %" PRIu64 "%s", c, per_bound[c],
		    c < last ? "," : "");
	printf("; %" PRIu64 " prefixes beyond the bound%s; %.1f s\n", beyond,
	    beyond == 0 ? " (so that was every schedule)" : "",
	    ilv_now() - t0);
	return 0;
}

static int
ilv_random(const struct ilv_scenario *scn, long n, uint64_t seed)
{
	static struct ilv_trace tr;
	double t0 = ilv_now();

	ilv_run.mode = "random";
	ilv_run.seed = seed;
	for (long i = 0; i < n; i++) {
		/* splitmix64 of (seed, i): never 0 in practice; 0 would mean
		 * the default policy, so avoid it. */
		uint64_t z = seed + (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ULL;
		struct ilv_policy p = ilv_base_policy(scn);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		z ^= z >> 31;
		p.random = z != 0 ? z : 1;
		ilv_execute(scn, &p, &tr);
	}
	printf("%s: explored %ld random schedules (seed %" PRIu64 "), "
	    "%.1f s\n", scn->name, n, seed, ilv_now() - t0);
	return 0;
}

static int
ilv_replay(const struct ilv_scenario *scn, const char *choices, bool verbose)
{
	static uint8_t prefix[ILV_MAX_DECISIONS];
	static struct ilv_trace tr;
	struct ilv_policy p = ilv_base_policy(scn);
	int n = ilv_parse_choices(choices, prefix, ILV_MAX_DECISIONS);

	if (n < 0) {
		fprintf(stderr, "%s: bad schedule '%s'\n", ilv_argv0, choices);
		return 2;
	}
	ilv_run.mode = "replay";
	p.verbose = verbose;
	p.prefix = prefix;
	p.prefix_len = n;
	printf("%s: replaying %d decisions\n", scn->name, n);
	fflush(stdout);
	ilv_execute(scn, &p, &tr);
	if (tr.n < n)
		ilv_unfit("the execution made %d decisions, the schedule has "
		    "%d", tr.n, n);
	printf("%s: replayed schedule: no violation (%d decisions)\n",
	    scn->name, tr.n);
	return 0;
}

/* ------------------------------------------------------------------ */

static const struct ilv_scenario *
ilv_find(const char *name, size_t len)
{
	for (size_t i = 0; i < ILV_NSCENARIOS; i++)
		if (strlen(ilv_scenarios[i]->name) == len &&
		    strncmp(ilv_scenarios[i]->name, name, len) == 0)
			return ilv_scenarios[i];
	return NULL;
}

static int
ilv_usage(void)
{
	fprintf(stderr, "usage: %s --list\n"
	    "       %s SCENARIO --bound B [--counters] [--weak [--history H]]\n"
	    "       %s SCENARIO --random N [--seed S] [--counters] [--weak "
	    "[--history H]]\n"
	    "       %s --replay SCENARIO:SCHEDULE [--trace]\n", ilv_argv0,
	    ilv_argv0,
	    ilv_argv0, ilv_argv0);
	return 2;
}

static bool
ilv_number(const char *s, long min, long max, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return errno == 0 && end != s && *end == '\0' && *out >= min &&
	    *out <= max;
}

int
main(int argc, char **argv)
{
	const struct ilv_scenario *scn = NULL;
	const char *replay = NULL;
	bool verbose = false;
	long bound = -1, random = -1, seed = 1;

	ilv_argv0 = argv[0];
	setvbuf(stdout, NULL, _IOLBF, 0);
	__sanitizer_set_death_callback(ilv_on_sanitizer_death);
	signal(SIGABRT, ilv_on_signal);
	signal(SIGALRM, ilv_on_signal);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--list") == 0) {
			for (size_t k = 0; k < ILV_NSCENARIOS; k++)
				printf("%-10s %d threads: %s\n",
				    ilv_scenarios[k]->name,
				    ilv_scenarios[k]->nthreads,
				    ilv_scenarios[k]->what);
			return 0;
		} else if (strcmp(a, "--bound") == 0 && i + 1 < argc) {
			if (!ilv_number(argv[++i], 0, ILV_MAX_BOUND, &bound))
				return ilv_usage();
		} else if (strcmp(a, "--random") == 0 && i + 1 < argc) {
			if (!ilv_number(argv[++i], 1, 100000000, &random))
				return ilv_usage();
		} else if (strcmp(a, "--seed") == 0 && i + 1 < argc) {
			if (!ilv_number(argv[++i], 0, 0x7fffffffL, &seed))
				return ilv_usage();
		} else if (strcmp(a, "--replay") == 0 && i + 1 < argc) {
			replay = argv[++i];
		} else if (strcmp(a, "--trace") == 0) {
			verbose = true;
		} else if (strcmp(a, "--counters") == 0) {
			ilv_all_counters = true;
		} else if (strcmp(a, "--weak") == 0) {
			ilv_weak = true;
		} else if (strcmp(a, "--history") == 0 && i + 1 < argc) {
			long h;

			if (!ilv_number(argv[++i], 1, ILV_HISTORY_MAX, &h))
				return ilv_usage();
			ilv_history = (int)h;
		} else if (a[0] != '-' && scn == NULL) {
			if ((scn = ilv_find(a, strlen(a))) == NULL) {
				fprintf(stderr, "%s: no scenario '%s' (--list)"
				    "\n", argv[0], a);
				return 2;
			}
		} else {
			return ilv_usage();
		}
	}
	if (replay != NULL) {
		const char *colon = strchr(replay, ':');
		const char *plus = strchr(replay, '+');
		size_t len;

		if (scn != NULL || bound >= 0 || random >= 0 || colon == NULL ||
		    ilv_weak)
			return ilv_usage();
		len = (size_t)(colon - replay);
		if (plus != NULL && plus < colon) {
			const char *m = plus;

			len = (size_t)(plus - replay);
			if (strncmp(m, "+counters", 9) == 0) {
				ilv_all_counters = true;
				m += 9;
			}
			if (strncmp(m, "+weak", 5) == 0 && m[5] >= '1' &&
			    m[5] <= '0' + ILV_HISTORY_MAX) {
				ilv_weak = true;
				ilv_history = m[5] - '0';
				m += 6;
			}
			if (m != colon)
				return ilv_usage();
		}
		if ((scn = ilv_find(replay, len)) == NULL) {
			fprintf(stderr, "%s: no scenario in '%s'\n", argv[0],
			    replay);
			return 2;
		}
		ilv_run.scenario = scn->name;
		return ilv_replay(scn, colon + 1, verbose);
	}
	if (scn == NULL || (bound < 0) == (random < 0) || verbose)
		return ilv_usage();
	ilv_run.scenario = scn->name;
	if (bound >= 0)
		return ilv_search(scn, (int)bound);
	return ilv_random(scn, random, (uint64_t)seed);
}
