/*
 * Functional tensors across threads (functional.h: different alias groups
 * may be used by different threads at once; values shared between groups
 * are immutable and reference counted atomically).
 *
 * For each backend (strided, opaque): the main thread makes a functional
 * tensor X and, per thread, a lazy clone of it: a new group that shares
 * X's base value. The threads then, all at once, take views of their
 * clone, write through them (strided: each write materialises a lazy copy
 * of the shared value, racing with the others), read, lazy-clone and
 * release, round after round. X is never written: it must keep its values,
 * and every clone must hold X's values plus its own writes.
 *
 * A plain executable (not Criterion) so it also runs under TSan.
 * Also: a thread that exits while recording a trace leaks nothing.
 * Prints "N passed, N failed"; exits non-zero on any failure.
 */
#include <pthread.h>
#include <stdio.h>

#include <cowstore/functional.h>
#include <cowstore/testing.h>

#include "cow_test.h"
#include "thread_test.h"

#define THREADS 4
#define ROUNDS 1000
#define SIDE 8

static pthread_barrier_t start;

struct worker {
	struct thr_tally tally;
	cow_tensor_t *mine;  /* a lazy clone of X, this thread's group */
};

static void
check(struct worker *w, bool ok, const char *what)
{
	thr_check(&w->tally, ok, what);
}

/* X[i][j] = i * SIDE + j. Thread w adds (w + 1) to column w and to every
 * element of row w once per round (the crossing element twice). */
static double
expected(int w, int rounds, int64_t i, int64_t j)
{
	double v = (double)(i * SIDE + j);

	if (j == w)
		v += (double)rounds * (w + 1);
	if (i == w)
		v += (double)rounds * (w + 1);
	return v;
}

static void *
run(void *arg)
{
	struct worker *w = arg;
	int id = w->tally.id;

	pthread_barrier_wait(&start);
	for (int r = 0; r < ROUNDS; r++) {
		cow_tensor_t *col, *t, *row, *snap;
		bool ok;

		/* A column, through a transpose: a view of a view. */
		check(w, cow_tensor_transpose(w->mine, 0, 1, &t) == COW_OK,
		    "transpose");
		check(w, cow_tensor_select(t, 0, id, &col) == COW_OK,
		    "select column");
		check(w, cow_tensor_add_scalar_(col, id + 1) == COW_OK,
		    "add through the column");
		check(w, cow_tensor_select(w->mine, 0, id, &row) == COW_OK,
		    "select row");
		check(w, cow_tensor_add_scalar_(row, id + 1) == COW_OK,
		    "add through the row");
		/* A lazy clone of this thread's group, read and dropped. */
		check(w, cow_tensor_lazy_clone(w->mine, &snap) == COW_OK,
		    "lazy clone");
		check(w, thr_get2(snap, id, id) == expected(id, r + 1, id, id),
		    "snapshot value");
		check(w, cow_tensor_equal(snap, w->mine, &ok) == COW_OK && ok,
		    "snapshot equals its source");
		cow_tensor_release(snap);
		cow_tensor_release(row);
		cow_tensor_release(col);
		cow_tensor_release(t);
	}
	for (int64_t i = 0; i < SIDE; i++)
		for (int64_t j = 0; j < SIDE; j++)
			check(w, thr_get2(w->mine, i, j) ==
			    expected(id, ROUNDS, i, j), "final value");
	return NULL;
}

static int
run_backend(const cow_backend_t *be, int *passed)
{
	struct worker w[THREADS];
	pthread_t th[THREADS];
	cow_tensor_t *p, *x;
	int failed = 0;

	if (cow_tensor_arange(COW_DTYPE_FLOAT64, SIDE * SIDE, NULL, &p) !=
	    COW_OK || cow_functional_wrap(p, be, &x) != COW_OK)
		abort();
	cow_tensor_release(p);
	if (cow_tensor_view(x, 2, (int64_t[]){SIDE, SIDE}, &p) != COW_OK)
		abort();
	cow_tensor_release(x);
	x = p;
	pthread_barrier_init(&start, NULL, THREADS);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){.tally.id = i};
		if (cow_tensor_lazy_clone(x, &w[i].mine) != COW_OK)
			abort();
		pthread_create(&th[i], NULL, run, &w[i]);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		failed += w[i].tally.failed;
		*passed += w[i].tally.passed;
		cow_tensor_release(w[i].mine);
	}
	pthread_barrier_destroy(&start);
	for (int64_t i = 0; i < SIDE; i++)
		for (int64_t j = 0; j < SIDE; j++) {
			if (thr_get2(x, i, j) == (double)(i * SIDE + j)) {
				(*passed)++;
				continue;
			}
			if (failed++ < 5)
				fprintf(stderr, "%s: X[%lld][%lld] changed\n",
				    cow_backend_name(be), (long long)i,
				    (long long)j);
		}
	cow_tensor_release(x);
	return failed;
}

/* A thread that exits while recording a trace: its trace is freed (the
 * leak check in main counts it). */
static void *
trace_and_exit(void *arg)
{
	cow_tensor_t *t, *v;
	int *ok = arg;

	*ok = cow_functional_trace_start() == COW_OK &&
	    cow_functional_mode_set_thread(true, NULL) == COW_OK &&
	    cow_tensor_zeros(COW_DTYPE_INT32, 1, (int64_t[]){4}, NULL, &t) ==
	    COW_OK;
	if (!*ok)
		return NULL;
	*ok = cow_tensor_narrow(t, 0, 1, 2, &v) == COW_OK &&
	    cow_tensor_fill_(v, 3) == COW_OK && thr_get1(t, 2) == 3;
	cow_tensor_release(v);
	cow_tensor_release(t);
	return NULL; /* still recording */
}

static int
run_trace_exit(int *passed)
{
	pthread_t th;
	int ok = 0;

	if (pthread_create(&th, NULL, trace_and_exit, &ok) != 0 ||
	    pthread_join(th, NULL) != 0 || !ok) {
		fprintf(stderr, "trace_and_exit failed (%s)\n",
		    cow_last_error());
		return 1;
	}
	(*passed)++;
	return 0;
}

int
main(void)
{
	return thr_backends_main("functional_threads", run_backend,
	    run_trace_exit);
}
