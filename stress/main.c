/*
 * main.c - cow_stress: run the selected scenarios one after another, each
 * on its own thread team, then report. Exit 0 only with no violation and
 * nothing leaked; 1 otherwise; 2 on a usage or set-up error (a --json path
 * that cannot be written among them: it is opened before the run).
 *
 * See docs/stress.md for the scenarios, the options, replaying a failure
 * from its seed, running under ThreadSanitizer and the negative controls.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* crash.c: what to print if the process dies or TSan reports. */
void stress_failure_prepare(const char *scenario, const char *replay);
void stress_failure_handlers(void);

static struct stress_run stress_runs[32];

/* The scenario's shared state: its setup's, or state_size zeroed bytes. */
static bool
setup_state(struct stress_run *run)
{
	if (run->scn->setup != NULL)
		return run->scn->setup(run);
	run->state = calloc(1, run->scn->state_size);
	return run->state != NULL;
}

static void
stress_run_one(const struct stress_options *opt, struct stress_run *run,
    unsigned index, double budget)
{
	char replay[256];

	run->opt = opt;
	run->scn = stress_scenarios[index];
	run->index = index;
	run->threads = opt->threads;
	run->seed = stress_mix64(opt->seed + index);
	run->first_violation = -1;
	run->start = stress_now();
	run->deadline = budget > 0 ? run->start + budget : 0;
	if (!setup_state(run)) {
		fprintf(stderr, "cow_stress: %s: out of memory\n",
		    run->scn->name);
		exit(2);
	}
	stress_replay_command(run, replay, sizeof replay);
	stress_failure_prepare(run->scn->name, replay);
	cow_stats_get(&run->before);
	stress_set_current(run);
	stress_team_run(run);
	cow_stats_get(&run->after);
	run->elapsed = stress_now() - run->start;
	run->scn->teardown(run);
	run->ran = true;
}

int
main(int argc, char **argv)
{
	struct stress_options opt;
	struct stress_totals tot = {0};
	cow_alloc_stats_t st;
	unsigned nsel = 0, nruns = 0;
	double budget = 0;
	FILE *json = NULL;
	int rc, err, result;

	stress_since_start();
	rc = stress_options_parse(argc, argv, &opt);
	if (rc != 0)
		return rc == 1 ? 0 : 2;
	/* Open the JSON report now: a path that cannot be written is a usage
	 * error, found before the run rather than after it. */
	if (opt.json != NULL && (json = fopen(opt.json, "w")) == NULL) {
		fprintf(stderr, "cow_stress: cannot write %s: %s\n", opt.json,
		    strerror(errno));
		return 2;
	}
	stress_failure_handlers();
	if (!stress_alloc_init(opt.size < STRESS_POISON_MIN ? opt.size :
	    STRESS_POISON_MIN))
		return 2;
	for (unsigned i = 0; i < stress_nscenarios; i++)
		nsel += (opt.scenarios >> i) & 1;
	if (opt.seconds > 0)
		budget = opt.seconds / nsel;
	if (!opt.quiet)
		stress_report_header(&opt);
	stress_progress_start(&opt);
	for (unsigned i = 0; i < stress_nscenarios; i++) {
		if (((opt.scenarios >> i) & 1) == 0)
			continue;
		stress_run_one(&opt, &stress_runs[nruns], i, budget);
		tot.violations += atomic_load(&stress_runs[nruns].violations);
		nruns++;
		if (tot.violations > 0)
			break; /* The state may be corrupt: stop here. */
	}
	stress_set_current(NULL);
	stress_progress_stop();

	cow_allocator_stats(stress_allocator(), &st);
	tot.stress_live_bytes = st.live_bytes;
	tot.stress_live_allocs = st.live_allocs;
	tot.stress_destroyed = stress_alloc_fini();
	cow_allocator_stats(cow_allocator_default(), &st);
	tot.default_live_bytes = st.live_bytes;
	tot.default_live_allocs = st.live_allocs;
	tot.ext_live_bytes = stress_ext_live_bytes();
	tot.ext_live_buffers = stress_ext_live_buffers();
	tot.elapsed = stress_since_start();

	stress_report_text(&opt, stress_runs, nruns, &tot);
	result = tot.violations == 0 && tot.default_live_allocs == 0 &&
	    tot.default_live_bytes == 0 && tot.ext_live_buffers == 0 &&
	    tot.stress_live_allocs == 0 ? 0 : 1;
	if (json != NULL) {
		errno = 0;
		rc = stress_report_json(json, &opt, stress_runs, nruns, &tot);
		err = errno;
		if (fclose(json) != 0 && rc) {
			rc = 0;
			err = errno;
		}
		if (!rc) {
			/* The report above stands; its JSON copy is missing.
			 * A failed run keeps exit status 1, a passed one
			 * exits 2 (it could not deliver its output). */
			fprintf(stderr, "cow_stress: cannot write %s: %s\n",
			    opt.json, strerror(err != 0 ? err : EIO));
			if (result == 0)
				result = 2;
		}
	}
	return result;
}
