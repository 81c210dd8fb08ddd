/*
 * order.c - the lock-rank check (runtime/core/lockrank.h) and its
 * controls: takes ranked locks of the library's kinds (core/mutex.h,
 * core/rwlock.h) in one MODE, in a child process.
 *
 *     lock_order MODE    the parent prints the child's messages, then
 *                        "MODE: clean" (it exited 0) or "MODE: died of
 *                        SIGABRT" (the check caught it) or "MODE: ended
 *                        otherwise"; the ctest entries match those lines
 *                        and, for a control, the check's message naming
 *                        both locks and their ranks
 *
 * Modes: in_order takes locks the way the rank table allows (every rank
 * that has a lock of this kind, outermost first; two locks of an ordered
 * rank in address order; a context's shared lock last; and again after a
 * release), and must run clean. The controls each break one rule and must
 * die of the check: reversed (a lock of an earlier rank while holding a
 * later one), address_reversed (two stripes against their address order),
 * context_twice (a second context's shared lock while holding one).
 * Debug builds only: a release build has no check.
 */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/mutex.h"
#include "core/rwlock.h"

#ifndef COW__DEBUG
#error "the lock-rank check exists in debug builds only"
#endif

static void
mode_in_order(void)
{
	cow__rwmutex_t stripes[2] = {
		COW__RWMUTEX_INITIALIZER(COW__RANK_PY_STRIPES),
		COW__RWMUTEX_INITIALIZER(COW__RANK_PY_STRIPES)
	};
	cow__rwmutex_t handler =
	    COW__RWMUTEX_INITIALIZER(COW__RANK_SHADOW_HANDLER);
	cow__mutex_t stats = COW__MUTEX_INITIALIZER(COW__RANK_STATS);
	cow__mutex_t threads = COW__MUTEX_INITIALIZER(COW__RANK_THREADS);
	cow__rwlock_t ctx;

	cow__rwlock_init(&ctx);
	for (int round = 0; round < 2; round++) {
		if (cow__rwmutex_write_lock(&stripes[0]) != 0 ||
		    cow__rwmutex_read_lock(&stripes[1]) != 0 ||
		    cow__rwmutex_read_lock(&handler) != 0)
			exit(2);
		cow__mutex_lock(&stats);
		cow__mutex_lock(&threads);
		cow__rwlock_read_lock(&ctx);
		if (!cow__rwlock_held_shared(&ctx))
			exit(3);
		cow__rwlock_read_unlock(&ctx);
		cow__mutex_unlock(&threads);
		cow__mutex_unlock(&stats);
		cow__rwmutex_unlock(&handler);
		cow__rwmutex_unlock(&stripes[1]);
		cow__rwmutex_unlock(&stripes[0]);
	}
	/* Nothing held: the wait for readers is an acquisition too. */
	cow__rwlock_wait_readers(&ctx);
	cow__rwlock_destroy(&ctx);
}

static void
mode_reversed(void)
{
	cow__mutex_t stats = COW__MUTEX_INITIALIZER(COW__RANK_STATS);
	cow__mutex_t threads = COW__MUTEX_INITIALIZER(COW__RANK_THREADS);

	cow__mutex_lock(&threads);
	cow__mutex_lock(&stats);
}

static void
mode_address_reversed(void)
{
	cow__rwmutex_t stripes[2] = {
		COW__RWMUTEX_INITIALIZER(COW__RANK_PY_STRIPES),
		COW__RWMUTEX_INITIALIZER(COW__RANK_PY_STRIPES)
	};

	if (cow__rwmutex_read_lock(&stripes[1]) != 0)
		exit(2);
	(void)cow__rwmutex_read_lock(&stripes[0]);
}

static void
mode_context_twice(void)
{
	cow__rwlock_t a, b;

	cow__rwlock_init(&a);
	cow__rwlock_init(&b);
	cow__rwlock_read_lock(&a);
	cow__rwlock_read_lock(&b);
}

static const struct {
	const char *name;
	void (*run)(void);
} modes[] = {
	{"in_order", mode_in_order}, {"reversed", mode_reversed},
	{"address_reversed", mode_address_reversed},
	{"context_twice", mode_context_twice},
};

int
main(int argc, char **argv)
{
	void (*run)(void) = NULL;
	int status;
	pid_t pid;

	for (size_t i = 0; argc > 1 && i < sizeof modes / sizeof modes[0]; i++)
		if (strcmp(argv[1], modes[i].name) == 0)
			run = modes[i].run;
	if (run == NULL) {
		fprintf(stderr, "usage: %s MODE\n", argv[0]);
		return 2;
	}
	fflush(stdout);
	if ((pid = fork()) < 0) {
		perror("lock_order");
		return 2;
	}
	if (pid == 0) {
		/* The child's report and the parent's verdict in one stream,
		 * in order. */
		dup2(STDOUT_FILENO, STDERR_FILENO);
		run();
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid) {
		perror("waitpid");
		return 2;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		printf("%s: clean\n", argv[1]);
		return 0;
	}
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) {
		printf("%s: died of SIGABRT\n", argv[1]);
		return 1;
	}
	printf("%s: ended otherwise (status %d)\n", argv[1], status);
	return 1;
}
