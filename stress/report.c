/*
 * report.c - the readable report (stdout) and the JSON report (--json).
 */
#include <inttypes.h>
#include <stdio.h>

#include "harness.h"

/* Set per binary (variant.c): which library this harness is linked with. */
extern const char stress_variant[];

const char *
stress_build_kind(void)
{
#if defined(STRESS_TSAN)
	return "ThreadSanitizer";
#elif defined(STRESS_ASAN)
	return "AddressSanitizer+UBSan";
#else
	return "normal";
#endif
}

static const char *
stress_compiler(void)
{
#if defined(__clang__)
	return "clang " __clang_version__;
#elif defined(__GNUC__)
	return "gcc " __VERSION__;
#else
	return "unknown compiler";
#endif
}

void
stress_report_header(const struct stress_options *opt)
{
	unsigned n = 0;

	for (unsigned i = 0; i < stress_nscenarios; i++)
		n += (opt->scenarios >> i) & 1;
	printf("cow_stress: %s build (%s), library %s, allocator %s\n",
	    stress_build_kind(), stress_compiler(), stress_variant,
	    cow_allocator_name(cow_allocator_default()));
	printf("cow_stress: seed 0x%016" PRIx64 ", %u %s on %u %s, "
	    "%zu-byte buffers, %u %s", opt->seed, opt->threads,
	    stress_plural(opt->threads, "thread", "threads"), stress_cores(),
	    stress_plural(stress_cores(), "core", "cores"), opt->size, n,
	    stress_plural(n, "scenario", "scenarios"));
	if (opt->seconds > 0)
		printf(", %.1f s%s", opt->seconds / n, n == 1 ? "" : " each");
	if (opt->iterations > 0)
		printf(", at most %" PRIu64 " %s%s", opt->iterations,
		    stress_plural(opt->iterations, "round", "rounds"),
		    n == 1 ? "" : " each");
	printf("\n");
	fflush(stdout);
}

/* How far the library statistic @field moved during run @r. */
#define RUN_DELTA(r, field) ((r)->after.field - (r)->before.field)

static bool
stress_passed(const struct stress_totals *tot)
{
	return tot->violations == 0 && tot->default_live_bytes == 0 &&
	    tot->default_live_allocs == 0 && tot->ext_live_buffers == 0 &&
	    tot->stress_live_allocs == 0;
}

void
stress_report_text(const struct stress_options *opt, struct stress_run *runs,
    unsigned nruns, const struct stress_totals *tot)
{
	uint64_t rounds = 0, ops = 0, checks = 0, viol = 0, copies = 0;
	uint64_t steals = 0, bytes = 0, clones = 0;
	uint64_t leaked = tot->default_live_bytes + tot->ext_live_bytes;

	if (opt->quiet) {
		for (unsigned i = 0; i < nruns; i++)
			checks += atomic_load(&runs[i].checks);
		printf("cow_stress: %s: %u %s, %" PRIu64 " %s checked, %"
		    PRIu64 " %s, %" PRIu64 " %s leaked (seed 0x%016" PRIx64
		    ", %s build)\n", stress_passed(tot) ? "PASS" : "FAIL",
		    nruns, stress_plural(nruns, "scenario", "scenarios"),
		    checks, stress_plural(checks, "invariant", "invariants"),
		    tot->violations, stress_plural(tot->violations,
		    "violation", "violations"), leaked,
		    stress_plural(leaked, "byte", "bytes"), opt->seed,
		    stress_build_kind());
		return;
	}
	printf("\ncow_stress report (%s build, library %s, seed 0x%016" PRIx64
	    ", %u %s on %u %s, %zu-byte buffers)\n\n",
	    stress_build_kind(), stress_variant, opt->seed, opt->threads,
	    stress_plural(opt->threads, "thread", "threads"), stress_cores(),
	    stress_plural(stress_cores(), "core", "cores"), opt->size);
	printf("%-23s %8s %11s %10s %12s %10s %10s %9s %13s %10s %7s\n",
	    "scenario", "rounds", "operations", "ops/s", "invariants",
	    "violations", "lazyclones", "copies", "bytes copied", "steals",
	    "seconds");
	for (unsigned i = 0; i < nruns; i++) {
		struct stress_run *r = &runs[i];
		uint64_t o = stress_run_ops(r);
		uint64_t run_clones = RUN_DELTA(r, lazy_clones);
		uint64_t run_copies = RUN_DELTA(r, materialize_copies);
		uint64_t run_steals = RUN_DELTA(r, materialize_steals);
		uint64_t run_bytes = RUN_DELTA(r, bytes_copied);

		printf("%-23s %8" PRIu64 " %11" PRIu64 " %10.0f %12" PRIu64
		    " %10" PRIu64 " %10" PRIu64 " %9" PRIu64 " %13" PRIu64
		    " %10" PRIu64 " %7.2f\n", r->scn->name,
		    atomic_load(&r->rounds), o,
		    r->elapsed > 0 ? (double)o / r->elapsed : 0.0,
		    atomic_load(&r->checks), atomic_load(&r->violations),
		    run_clones, run_copies, run_bytes, run_steals,
		    r->elapsed);
		rounds += atomic_load(&r->rounds);
		ops += o;
		checks += atomic_load(&r->checks);
		viol += atomic_load(&r->violations);
		copies += run_copies;
		steals += run_steals;
		bytes += run_bytes;
		clones += run_clones;
	}
	printf("%-23s %8" PRIu64 " %11" PRIu64 " %10.0f %12" PRIu64 " %10"
	    PRIu64 " %10" PRIu64 " %9" PRIu64 " %13" PRIu64 " %10" PRIu64
	    " %7.2f\n\n", "total", rounds, ops,
	    tot->elapsed > 0 ? (double)ops / tot->elapsed : 0.0, checks, viol,
	    clones, copies, bytes, steals, tot->elapsed);
	for (unsigned i = 0; i < nruns; i++) {
		printf("  %-23s %s\n", runs[i].scn->name, runs[i].note);
		if (atomic_load(&runs[i].violations) > 0)
			printf("  %-23s first violation in round %" PRIu64
			    ", %.3f s after start\n", "",
			    runs[i].first_violation_round,
			    runs[i].first_violation);
	}
	for (unsigned i = 0; i < stress_nscenarios; i++) {
		bool ran = false;

		if (((opt->scenarios >> i) & 1) == 0)
			continue;
		for (unsigned j = 0; j < nruns; j++)
			ran |= runs[j].index == i;
		if (!ran)
			printf("  %-23s skipped: an earlier scenario failed\n",
			    stress_scenarios[i]->name);
	}
	printf("\nallocator live bytes at the end: default allocator (%s) %"
	    PRIu64 " %s in %" PRIu64 " %s; harness allocator %" PRIu64
	    " %s in %" PRIu64 " %s%s; external buffers %" PRIu64
	    " %s in %" PRIu64 " %s\n",
	    cow_allocator_name(cow_allocator_default()),
	    tot->default_live_bytes,
	    stress_plural(tot->default_live_bytes, "byte", "bytes"),
	    tot->default_live_allocs,
	    stress_plural(tot->default_live_allocs, "block", "blocks"),
	    tot->stress_live_bytes,
	    stress_plural(tot->stress_live_bytes, "byte", "bytes"),
	    tot->stress_live_allocs,
	    stress_plural(tot->stress_live_allocs, "block", "blocks"),
	    tot->stress_destroyed ? " (handle destroyed)" :
	    " (handle still busy)", tot->ext_live_bytes,
	    stress_plural(tot->ext_live_bytes, "byte", "bytes"),
	    tot->ext_live_buffers,
	    stress_plural(tot->ext_live_buffers, "buffer", "buffers"));
	printf("result: %s: %" PRIu64 " %s, %" PRIu64 " %s leaked, %" PRIu64
	    " %s checked in %.1f s\n", stress_passed(tot) ? "PASS" : "FAIL",
	    tot->violations, stress_plural(tot->violations, "violation",
	    "violations"), leaked, stress_plural(leaked, "byte", "bytes"),
	    checks, stress_plural(checks, "invariant", "invariants"),
	    tot->elapsed);
	for (unsigned i = 0; i < nruns; i++) {
		char replay[256];

		if (atomic_load(&runs[i].violations) == 0)
			continue;
		stress_replay_command(&runs[i], replay, sizeof replay);
		printf("replay: %s\n", replay);
		break;
	}
	fflush(stdout);
}

bool
stress_report_json(FILE *f, const struct stress_options *opt,
    struct stress_run *runs, unsigned nruns, const struct stress_totals *tot)
{
	fprintf(f, "{\n  \"tool\": \"cow_stress\",\n  \"build\": \"%s\",\n"
	    "  \"library\": \"%s\",\n  \"allocator\": \"%s\",\n"
	    "  \"seed\": \"0x%016" PRIx64 "\",\n  \"threads\": %u,\n"
	    "  \"cores\": %u,\n  \"size\": %zu,\n  \"seconds\": %.3f,\n"
	    "  \"iterations\": %" PRIu64 ",\n  \"scenarios\": [\n",
	    stress_build_kind(), stress_variant,
	    cow_allocator_name(cow_allocator_default()), opt->seed,
	    opt->threads, stress_cores(), opt->size, opt->seconds,
	    opt->iterations);
	for (unsigned i = 0; i < nruns; i++) {
		struct stress_run *r = &runs[i];

		fprintf(f, "    {\"name\": \"%s\", \"rounds\": %" PRIu64
		    ", \"operations\": %" PRIu64 ", \"invariants_checked\": %"
		    PRIu64 ", \"violations\": %" PRIu64 ", \"lazy_clones\": %"
		    PRIu64 ", \"copies\": %" PRIu64 ", \"steals\": %" PRIu64
		    ", \"bytes_copied\": %" PRIu64 ", \"seconds\": %.3f",
		    r->scn->name, atomic_load(&r->rounds), stress_run_ops(r),
		    atomic_load(&r->checks), atomic_load(&r->violations),
		    RUN_DELTA(r, lazy_clones), RUN_DELTA(r, materialize_copies),
		    RUN_DELTA(r, materialize_steals), RUN_DELTA(r, bytes_copied),
		    r->elapsed);
		if (atomic_load(&r->violations) > 0) {
			char replay[256];

			stress_replay_command(r, replay, sizeof replay);
			fprintf(f, ", \"first_violation_round\": %" PRIu64
			    ", \"first_violation_seconds\": %.3f"
			    ", \"replay\": \"%s\"",
			    r->first_violation_round, r->first_violation,
			    replay);
		}
		fprintf(f, ", \"note\": \"%s\"}%s\n", r->note,
		    i + 1 < nruns ? "," : "");
	}
	fprintf(f, "  ],\n  \"violations\": %" PRIu64 ",\n"
	    "  \"live_bytes\": {\"default\": %" PRIu64 ", \"harness\": %"
	    PRIu64 ", \"external\": %" PRIu64 "},\n"
	    "  \"live_blocks\": {\"default\": %" PRIu64 ", \"harness\": %"
	    PRIu64 ", \"external\": %" PRIu64 "},\n"
	    "  \"elapsed\": %.3f,\n  \"result\": \"%s\"\n}\n",
	    tot->violations, tot->default_live_bytes, tot->stress_live_bytes,
	    tot->ext_live_bytes, tot->default_live_allocs,
	    tot->stress_live_allocs, tot->ext_live_buffers, tot->elapsed,
	    stress_passed(tot) ? "pass" : "fail");
	return fflush(f) == 0 && !ferror(f);
}
