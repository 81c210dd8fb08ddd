/*
 * options.c - command-line options of cow_stress.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static void
stress_usage(FILE *f)
{
	fprintf(f,
	    "usage: cow_stress [options]\n"
	    "Hammers cowstore's lazy clones and concurrent materialisations,\n"
	    "checks every buffer against its reference, and reports.\n"
	    "Exit status: 0 with no violation and nothing leaked, 1 otherwise,\n"
	    "2 on a usage error.\n\n"
	    "  --scenario NAME[,NAME...]  scenarios to run (repeatable; default"
	    " all)\n"
	    "  --threads N       threads per scenario (default 4 x cores, at"
	    " least 4)\n"
	    "  --seconds S       total time budget, split across scenarios"
	    " (default %.0f)\n"
	    "  --iterations N    rounds per scenario (no time limit unless"
	    " --seconds)\n"
	    "  --size BYTES      bytes per buffer, suffix k, m or g allowed"
	    " (default %d)\n"
	    "  --seed N          seed (decimal or 0x hex; default: random,"
	    " printed)\n"
	    "  --json FILE       also write the report as JSON\n"
	    "  --progress S      seconds between progress lines when stderr"
	    " is not a\n"
	    "                    terminal (default %.0f)\n"
	    "  --quiet           no progress; the report is one line\n"
	    "  --help            this text\n\n"
	    "scenarios:\n", STRESS_DEFAULT_SECONDS, STRESS_DEFAULT_SIZE,
	    STRESS_DEFAULT_PROGRESS);
	for (unsigned i = 0; i < stress_nscenarios; i++)
		fprintf(f, "  %-24s %s\n", stress_scenarios[i]->name,
		    stress_scenarios[i]->summary);
}

unsigned
stress_cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (unsigned)n : 1;
}

static bool
stress_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (s == NULL || *s == '\0' || *s == '-')
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0')
		return false;
	*out = v;
	return true;
}

static bool
stress_parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;
	unsigned long long mul = 1;

	if (s == NULL || *s == '\0' || *s == '-')
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0)
		return false;
	if (*end == 'k' || *end == 'K')
		mul = 1024, end++;
	else if (*end == 'm' || *end == 'M')
		mul = 1024 * 1024, end++;
	else if (*end == 'g' || *end == 'G')
		mul = 1024 * 1024 * 1024, end++;
	if (*end != '\0' || v > STRESS_MAX_SIZE / mul)
		return false;
	*out = (size_t)(v * mul);
	return true;
}

/* A number of seconds in (@min, @max], or [@min, @max] with @min_incl. */
static bool
stress_parse_seconds(const char *s, double min, bool min_incl, double max,
    double *out)
{
	char *end;
	double v;

	if (s == NULL || *s == '\0')
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !(min_incl ? v >= min : v > min) ||
	    !(v <= max))
		return false;
	*out = v;
	return true;
}

static bool
stress_add_scenarios(const char *list, unsigned *mask)
{
	const char *p = list;

	while (*p != '\0') {
		size_t len = strcspn(p, ",");
		bool found = false;

		if (len == 3 && strncmp(p, "all", 3) == 0) {
			*mask |= (1u << stress_nscenarios) - 1;
			found = true;
		}
		for (unsigned i = 0; i < stress_nscenarios && !found; i++) {
			if (strlen(stress_scenarios[i]->name) == len &&
			    strncmp(p, stress_scenarios[i]->name, len) == 0) {
				*mask |= 1u << i;
				found = true;
			}
		}
		if (!found) {
			fprintf(stderr, "cow_stress: unknown scenario '%.*s' "
			    "(--help lists them)\n", (int)len, p);
			return false;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	return true;
}

static uint64_t
stress_random_seed(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return stress_mix64((uint64_t)ts.tv_sec * 1000000007ULL ^
	    (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32));
}

int
stress_options_parse(int argc, char **argv, struct stress_options *opt)
{
	uint64_t v;
	unsigned cores = stress_cores();

	memset(opt, 0, sizeof *opt);
	/* More threads than cores, to force preemption inside the
	 * protocol's windows (up to the harness's limit). */
	opt->threads = cores * 4 < 4 ? 4 : cores * 4;
	if (opt->threads > STRESS_MAX_THREADS)
		opt->threads = STRESS_MAX_THREADS;
	opt->size = STRESS_DEFAULT_SIZE;
	opt->seed = stress_random_seed();
	opt->progress = STRESS_DEFAULT_PROGRESS;

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const char *val = NULL;
		const char *eq = strchr(arg, '=');
		char name[32];
		size_t nlen = eq != NULL ? (size_t)(eq - arg) : strlen(arg);

		if (nlen >= sizeof name) {
			fprintf(stderr, "cow_stress: unknown option '%s'\n",
			    arg);
			return 2;
		}
		memcpy(name, arg, nlen);
		name[nlen] = '\0';
		if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
			stress_usage(stdout);
			return 1;
		}
		if (strcmp(name, "--quiet") == 0) {
			opt->quiet = true;
			continue;
		}
		if (strcmp(name, "--scenario") != 0 &&
		    strcmp(name, "--threads") != 0 &&
		    strcmp(name, "--seconds") != 0 &&
		    strcmp(name, "--iterations") != 0 &&
		    strcmp(name, "--size") != 0 &&
		    strcmp(name, "--seed") != 0 &&
		    strcmp(name, "--progress") != 0 &&
		    strcmp(name, "--json") != 0) {
			fprintf(stderr, "cow_stress: unknown option '%s' "
			    "(try --help)\n", arg);
			return 2;
		}
		if (eq != NULL)
			val = eq + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		if (val == NULL) {
			fprintf(stderr, "cow_stress: %s needs a value\n",
			    name);
			return 2;
		}
		if (strcmp(name, "--scenario") == 0) {
			if (!stress_add_scenarios(val, &opt->scenarios))
				return 2;
		} else if (strcmp(name, "--threads") == 0) {
			if (!stress_parse_u64(val, &v) || v < 2 ||
			    v > STRESS_MAX_THREADS) {
				fprintf(stderr, "cow_stress: --threads %s: "
				    "need 2 to %d\n", val, STRESS_MAX_THREADS);
				return 2;
			}
			opt->threads = (unsigned)v;
		} else if (strcmp(name, "--seconds") == 0) {
			if (!stress_parse_seconds(val, 0, false,
			    STRESS_MAX_SECONDS, &opt->seconds)) {
				fprintf(stderr, "cow_stress: --seconds %s: "
				    "need a number above 0 and at most %.0f\n",
				    val, STRESS_MAX_SECONDS);
				return 2;
			}
			opt->seconds_given = true;
		} else if (strcmp(name, "--iterations") == 0) {
			if (!stress_parse_u64(val, &opt->iterations) ||
			    opt->iterations == 0) {
				fprintf(stderr, "cow_stress: --iterations %s: "
				    "need a positive integer\n", val);
				return 2;
			}
			opt->iterations_given = true;
		} else if (strcmp(name, "--size") == 0) {
			if (!stress_parse_size(val, &opt->size) ||
			    opt->size < STRESS_MIN_SIZE) {
				fprintf(stderr, "cow_stress: --size %s: need "
				    "%d bytes to 1 GiB, as a number of bytes "
				    "with an optional suffix k, m or g (KiB, "
				    "MiB, GiB)\n", val, STRESS_MIN_SIZE);
				return 2;
			}
		} else if (strcmp(name, "--progress") == 0) {
			if (!stress_parse_seconds(val, STRESS_MIN_PROGRESS,
			    true, STRESS_MAX_SECONDS, &opt->progress)) {
				fprintf(stderr, "cow_stress: --progress %s: "
				    "need %.1f to %.0f seconds\n", val,
				    STRESS_MIN_PROGRESS, STRESS_MAX_SECONDS);
				return 2;
			}
		} else if (strcmp(name, "--seed") == 0) {
			if (!stress_parse_u64(val, &opt->seed)) {
				fprintf(stderr, "cow_stress: --seed %s: need "
				    "an unsigned integer\n", val);
				return 2;
			}
		} else {
			opt->json = val;
		}
	}
	if (opt->scenarios == 0)
		opt->scenarios = (1u << stress_nscenarios) - 1;
	if (!opt->seconds_given && !opt->iterations_given)
		opt->seconds = STRESS_DEFAULT_SECONDS;
	if (opt->size < 2 * (size_t)opt->threads) {
		fprintf(stderr, "cow_stress: --size %zu is too small for %u "
		    "threads (need at least %u bytes)\n", opt->size,
		    opt->threads, 2 * opt->threads);
		return 2;
	}
	return 0;
}
