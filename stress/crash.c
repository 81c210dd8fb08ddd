/*
 * crash.c - when the process dies (a fatal signal) or ThreadSanitizer
 * reports, say which scenario was running, after how long, and how to
 * replay it. Both paths run in a restricted context (a signal handler, or
 * inside the TSan runtime), so they format nothing at that point: the
 * message is prepared before each scenario starts and written with raw
 * system calls. The TSan hook is not instrumented.
 *
 * The signal handler reports, puts the previous handler back and returns:
 * a synchronous fault then happens again and reaches the sanitizer's own
 * handler or the default action (so the exit status still says how the
 * process died).
 */
#define _DEFAULT_SOURCE 1 /* syscall() */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

/* Written by the main thread before each team starts (its threads are
 * created after that); only read by the handlers below. */
static char stress_fail_msg[512];
static size_t stress_fail_len;
static struct timespec stress_fail_t0;

static const int stress_fatal_signals[] = {
	SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL
};
#define STRESS_NSIG (sizeof stress_fatal_signals / sizeof(int))
static struct sigaction stress_old_action[STRESS_NSIG];

void stress_failure_prepare(const char *scenario, const char *replay);
void stress_failure_handlers(void);

void
stress_failure_prepare(const char *scenario, const char *replay)
{
	int n;

	if (stress_fail_t0.tv_sec == 0)
		clock_gettime(CLOCK_MONOTONIC, &stress_fail_t0);
	n = snprintf(stress_fail_msg, sizeof stress_fail_msg,
	    " s after start, in scenario %s; replay with: %s\n", scenario,
	    replay);
	stress_fail_len = n < 0 ? 0 : (size_t)n < sizeof stress_fail_msg ?
	    (size_t)n : sizeof stress_fail_msg - 1;
}

/* "cow_stress: <head> <S.mmm> s after start, in scenario ...". */
#if defined(__clang__)
__attribute__((no_sanitize("thread")))
#endif
static void
stress_failure_write(const char *head, size_t hlen)
{
	static const char pre[] = "\ncow_stress: ";
	struct timespec now;
	char num[32];
	long ms;
	int i = (int)sizeof num;

	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &now);
	ms = (now.tv_sec - stress_fail_t0.tv_sec) * 1000 +
	    (now.tv_nsec - stress_fail_t0.tv_nsec) / 1000000;
	if (ms < 0)
		ms = 0;
	for (int d = 0; d < 3; d++) {
		num[--i] = (char)('0' + ms % 10);
		ms /= 10;
	}
	num[--i] = '.';
	do {
		num[--i] = (char)('0' + ms % 10);
		ms /= 10;
	} while (ms > 0 && i > 1);
	num[--i] = ' ';
	syscall(SYS_write, 2, pre, sizeof pre - 1);
	syscall(SYS_write, 2, head, hlen);
	syscall(SYS_write, 2, num + i, sizeof num - (size_t)i);
	syscall(SYS_write, 2, stress_fail_msg, stress_fail_len);
}

static void
stress_fatal(int sig)
{
	static const char head[] = "VIOLATION: the process died of signal";
	char msg[sizeof head + 8];
	size_t n = sizeof head - 1;

	memcpy(msg, head, n);
	msg[n++] = ' ';
	if (sig >= 10)
		msg[n++] = (char)('0' + sig / 10);
	msg[n++] = (char)('0' + sig % 10);
	stress_failure_write(msg, n);
	for (size_t i = 0; i < STRESS_NSIG; i++)
		if (stress_fatal_signals[i] == sig)
			sigaction(sig, &stress_old_action[i], NULL);
}

void
stress_failure_handlers(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = stress_fatal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < STRESS_NSIG; i++)
		sigaction(stress_fatal_signals[i], &sa, &stress_old_action[i]);
}

#ifdef STRESS_TSAN
/* Called by the TSan runtime after it printed a report. */
void __tsan_on_report(const void *report);

__attribute__((no_sanitize("thread"))) void
__tsan_on_report(const void *report)
{
	static const char head[] = "ThreadSanitizer report";

	(void)report;
	stress_failure_write(head, sizeof head - 1);
}
#endif
