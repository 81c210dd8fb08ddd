/*
 * order.c - the lock-rank check (runtime/core/lockrank.h) and its
 * controls: takes ranked locks of the library's kinds (core/mutex.h,
 * core/rwlock.h) in one MODE.
 *
 *     lock_order MODE    prints "MODE: clean" when the mode ends, or,
 *                        after the check's message (stderr), "MODE: died
 *                        of SIGABRT" when the check aborts it; the ctest
 *                        entries match those lines and, for a control, the
 *                        message naming both locks and their ranks
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
		if (cow__rwmutex_lock(&stripes[0], true) != 0 ||
		    cow__rwmutex_lock(&stripes[1], false) != 0 ||
		    cow__rwmutex_lock(&handler, false) != 0)
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

	if (cow__rwmutex_lock(&stripes[1], false) != 0)
		exit(2);
	(void)cow__rwmutex_lock(&stripes[0], false);
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

/* The mode called @name, or NULL. */
static void (*mode_named(const char *name))(void)
{
	size_t n = sizeof modes / sizeof modes[0], i = 0;

	while (i < n && strcmp(modes[i].name, name) != 0)
		i++;
	return i < n ? modes[i].run : NULL;
}

/* The verdict a control's death prints, made before the mode runs (the
 * handler only writes it). */
static char died[80];
static size_t died_len;

static void
on_abort(int sig)
{
	(void)sig;
	if (write(STDOUT_FILENO, died, died_len) < 0)
		_exit(3);
	_exit(1);
}

int
main(int argc, char **argv)
{
	void (*run)(void) = argc == 2 ? mode_named(argv[1]) : NULL;
	struct sigaction sa;

	if (run == NULL) {
		fprintf(stderr, "usage: %s MODE\n", argv[0]);
		return 2;
	}
	/* cow__die writes its message to stderr and aborts: the handler then
	 * says so on stdout, after it. */
	died_len = (size_t)snprintf(died, sizeof died, "%s: died of SIGABRT\n",
	    argv[1]);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_abort;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGABRT, &sa, NULL) != 0) {
		perror("sigaction");
		return 2;
	}
	run();
	printf("%s: clean\n", argv[1]);
	return 0;
}
