/*
 * thread_test.h - helpers for the multi-threaded tests (plain programs
 * that print "N passed, N failed"): a thread's tally of its checks, reads
 * of a tensor's elements and sum that return a sentinel on failure, and the
 * main of a program that runs over both functional backends.
 */
#ifndef COW_THREAD_TEST_H
#define COW_THREAD_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cowstore/cowstore.h>
#include <cowstore/testing.h>

#include "cow_test.h"

/* One thread's checks. */
struct thr_tally {
	int id;          /* the thread's number, in messages */
	const char *who; /* NULL, or a name messages give before "thread" */
	int passed;
	int failed;
};

/* Count a check; print the first five that fail, with cow_last_error(). */
static inline void
thr_check(struct thr_tally *t, bool ok, const char *what)
{
	if (ok) {
		t->passed++;
		return;
	}
	if (t->failed++ < 5)
		fprintf(stderr, "%s%sthread %d: %s (%s)\n",
		    t->who != NULL ? t->who : "", t->who != NULL ? " " : "",
		    t->id, what, cow_last_error());
}

/* Element [i] of a 1-d @t, element [i][j] of a 2-d one: -1e9 if the read
 * fails. */
static inline double
thr_get1(const cow_tensor_t *t, int64_t i)
{
	double v = -1e9;

	(void)cow_tensor_get_f64(t, (int64_t[]){i}, &v);
	return v;
}

static inline double
thr_get2(const cow_tensor_t *t, int64_t i, int64_t j)
{
	double v = -1e9;

	(void)cow_tensor_get_f64(t, (int64_t[]){i, j}, &v);
	return v;
}

/* The sum of @t's elements: -2 if the sum fails, -1 if its read does. */
static inline double
thr_sum(const cow_tensor_t *t)
{
	cow_tensor_t *s;
	double v = -1;

	if (cow_tensor_sum(t, &s) != COW_OK)
		return -2;
	(void)cow_tensor_get_f64(s, NULL, &v);
	cow_tensor_release(s);
	return v;
}


/* The main of a program that runs its checks over the strided and the
 * opaque backend, then @more (if not NULL): each returns its failures and
 * adds its passes to *passed. A byte left live in the default allocator
 * is a failure. Prints "@name: N passed, N failed"; the exit status. */
static inline int
thr_backends_main(const char *name,
    int (*run_backend)(const cow_backend_t *, int *), int (*more)(int *))
{
	uint64_t live0 =
	    cow_test_alloc_stats(cow_allocator_default()).live_bytes;
	int passed = 0, failed = 0;

	failed += run_backend(cow_backend_strided(), &passed);
	failed += run_backend(cow_backend_opaque_test(), &passed);
	if (more != NULL)
		failed += more(&passed);
	if (cow_test_alloc_stats(cow_allocator_default()).live_bytes != live0) {
		fprintf(stderr, "leak: %llu live bytes\n", (unsigned long long)
		    (cow_test_alloc_stats(cow_allocator_default()).live_bytes -
		    live0));
		failed++;
	}
	printf("%s: %d passed, %d failed\n", name, passed, failed);
	return failed == 0 ? 0 : 1;
}

#endif
