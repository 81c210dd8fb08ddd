/*
 * bench_util.c - what cow_bench, cow_snapbench and cow_stload share
 * (bench.h): failing on a library error or a system call, pinning threads,
 * the benchmarks' allocator, reading a process's anonymous memory.
 */
/* pthread_setaffinity_np, CPU_SET, program_invocation_short_name */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cowstore/cowstore.h>

#include "bench.h"

volatile uintptr_t bench_sink;

_Noreturn void
bench_fail(const char *what, int status)
{
	fprintf(stderr, "%s: %s failed: %s (%s)\n",
	    program_invocation_short_name, what,
	    cow_status_str((cow_status_t)status), cow_last_error());
	exit(2);
}

_Noreturn void
bench_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", program_invocation_short_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(2);
}

_Noreturn void
bench_die_errno(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what,
	    strerror(errno));
	exit(2);
}

bool
bench_proc_field(pid_t pid, const char *file, const char *key,
    uint64_t *total)
{
	char path[64], line[256];
	size_t klen = strlen(key);
	FILE *f;
	bool found = false;

	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
	if ((f = fopen(path, "r")) == NULL)
		return false;
	while (!found && fgets(line, sizeof line, f) != NULL) {
		unsigned long long kb;

		if (strncmp(line, key, klen) == 0 && line[klen] == ':' &&
		    sscanf(line + klen + 1, " %llu kB", &kb) == 1) {
			*total += (uint64_t)kb << 10;
			found = true;
		}
	}
	fclose(f);
	return found;
}

bool
bench_mem_read(pid_t pid, bool pss, uint64_t *total)
{
	return pss ? bench_proc_field(pid, "smaps_rollup", "Pss_Anon", total) :
	    bench_proc_field(pid, "status", "RssAnon", total);
}

bool
bench_peak_reset(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	bool ok;

	if (f == NULL)
		return false;
	ok = fputs("5", f) >= 0;
	return fclose(f) == 0 && ok;
}

static bool bench_pinning = true;
/* The CPUs the process may use, read once before any thread is pinned (a
 * pinned thread's own mask, and its children's, is one CPU). */
static cpu_set_t bench_allowed;
static int bench_nallowed;

void
bench_pin_init(bool pin)
{
	bench_pinning = pin;
	if (sched_getaffinity(0, sizeof bench_allowed, &bench_allowed) == 0)
		bench_nallowed = CPU_COUNT(&bench_allowed);
}

void
bench_pin(pthread_t t, int i)
{
	cpu_set_t one;
	int k = 0;

	if (!bench_pinning || bench_nallowed == 0)
		return;
	if (i < 0)
		i = bench_nallowed - 1;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &bench_allowed) ||
		    k++ != i % bench_nallowed)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		(void)pthread_setaffinity_np(t, sizeof one, &one);
		return;
	}
}

cow_allocator_t *
bench_allocator(void)
{
	static cow_allocator_t *chosen;
	const char *name = getenv("COW_BENCH_ALLOCATOR");

	if (chosen != NULL)
		return chosen;
	chosen = cow_allocator_default();
	if (name != NULL && strcmp(name, "system") == 0)
		chosen = cow_allocator_system();
	else if (name != NULL && strcmp(name, "jemalloc") == 0 &&
	    cow_allocator_jemalloc(&chosen) != COW_OK)
		bench_fail("cow_allocator_jemalloc", COW_ENOTSUP);
	return chosen;
}

bool
bench_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned shift = 0;

	if (end == s)
		return false;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (end[shift != 0] != '\0')
		return false;
	*out = (uint64_t)v << shift;
	return true;
}
