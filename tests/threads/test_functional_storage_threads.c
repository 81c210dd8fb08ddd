/*
 * Functional tensors over users' storages across threads (functional.h:
 * the tensors made over one storage form one alias group,
 * found in a table keyed by the storage, storage_group.c).
 *
 * For each backend (functional mode on the strided backend, the opaque
 * backend):
 *
 * 1. Different storages at once: each of THREADS threads owns STORES
 *    storages and, round after round, makes two tensors over each (in
 *    alternating order), writes through one, reads through the other and
 *    releases both (in alternating order). Odd storages keep a holder
 *    tensor, so their group lives across rounds and is found in the table;
 *    even storages get a new group every round (built, inserted, removed).
 *    All threads do this at the same time, on 4 * 8 storages in the
 *    table's 16 buckets, so they share buckets. The storages must end with
 *    every thread's writes and nothing else.
 *
 * 2. One storage used by every thread in turn (the user serialises the
 *    uses of its group with a mutex, as functional.h asks): each turn
 *    makes a tensor over it, which joins the group that other threads'
 *    tensors keep alive (phase "shared"), or, with no tensor kept
 *    (phase "fresh"), a group that lives for that turn only and is made
 *    and freed on whichever thread runs it. Every write must reach the
 *    storage and every later tensor over it.
 *
 * A plain executable (not Criterion) so it also runs under TSan. Prints
 * "N passed, N failed"; exits non-zero on any failure.
 */
#include <pthread.h>
#include <stdio.h>

#include <cowstore/functional.h>
#include <cowstore/testing.h>

#include "cow_test.h"
#include "thread_test.h"

#define THREADS 4
#define STORES 8
#define ROUNDS 200
#define SIDE 8
#define TURNS 100

static pthread_barrier_t start;
static pthread_mutex_t user_lock = PTHREAD_MUTEX_INITIALIZER;
static const cow_backend_t *backend;

struct worker {
	struct thr_tally tally; /* who: the backend's name */
	cow_storage_t *own[STORES];
	cow_storage_t *shared;
};

static void
check(struct worker *w, bool ok, const char *what)
{
	thr_check(&w->tally, ok, what);
}

static void
enter(void)
{
	(void)cow_backend_set_thread(backend, NULL);
	(void)cow_functional_mode_set_thread(true, NULL);
}

static double
stored(const cow_storage_t *s, int64_t i)
{
	return ((const double *)cow_storage_const_data(s))[i];
}

static cow_tensor_t *
over(struct worker *w, cow_storage_t *s, int ndim, const int64_t *sizes)
{
	cow_tensor_t *t = NULL;

	check(w, cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, ndim, sizes,
	    NULL, 0, &t) == COW_OK, "from_storage");
	check(w, cow_tensor_is_functional(t), "functional");
	return t;
}

/* Phase 1: element k of storage i of thread w holds k + rounds made. */
static void *
run_own(void *arg)
{
	struct worker *w = arg;
	cow_tensor_t *holder[STORES] = {NULL};

	enter();
	for (int i = 1; i < STORES; i += 2)
		holder[i] = over(w, w->own[i], 1, (int64_t[]){SIDE});
	pthread_barrier_wait(&start);
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < STORES; i++) {
			cow_tensor_t *a, *b, *half = NULL;
			bool flip = (r + i) % 2 == 1;

			if (flip) {
				b = over(w, w->own[i], 2,
				    (int64_t[]){2, SIDE / 2});
				a = over(w, w->own[i], 1, (int64_t[]){SIDE});
			} else {
				a = over(w, w->own[i], 1, (int64_t[]){SIDE});
				b = over(w, w->own[i], 2,
				    (int64_t[]){2, SIDE / 2});
			}
			/* Half through b's row, half through a's narrow. */
			check(w, cow_tensor_select(b, 0, 0, &half) == COW_OK,
			    "select");
			check(w, cow_tensor_add_scalar_(half, 1) == COW_OK,
			    "add through b");
			cow_tensor_release(half);
			check(w, cow_tensor_narrow(a, 0, SIDE / 2, SIDE / 2,
			    &half) == COW_OK, "narrow");
			check(w, cow_tensor_add_scalar_(half, 1) == COW_OK,
			    "add through a");
			cow_tensor_release(half);
			check(w, thr_get1(a, 1) == 1 + r + 1, "read through a");
			check(w, thr_get2(b, 1, 0) == 4 + r + 1,
			    "read through b");
			check(w, stored(w->own[i], SIDE - 1) ==
			    SIDE - 1 + r + 1, "the storage has the write");
			if (flip) {
				cow_tensor_release(a);
				cow_tensor_release(b);
			} else {
				cow_tensor_release(b);
				cow_tensor_release(a);
			}
		}
	}
	for (int i = 0; i < STORES; i++) {
		if (holder[i] != NULL)
			check(w, thr_get1(holder[i], 3) == 3 + ROUNDS,
			    "holder sees every round");
		cow_tensor_release(holder[i]);
		for (int64_t k = 0; k < SIDE; k++)
			check(w, stored(w->own[i], k) == (double)(k + ROUNDS),
			    "final storage");
	}
	return NULL;
}

/* Phase 2: each turn adds 1 to element w->tally.id of the shared
 * storage. */
static void *
run_shared(void *arg)
{
	struct worker *w = arg;

	enter();
	pthread_barrier_wait(&start);
	for (int r = 0; r < TURNS; r++) {
		cow_tensor_t *t, *e = NULL;

		pthread_mutex_lock(&user_lock);
		t = over(w, w->shared, 1, (int64_t[]){THREADS});
		check(w, thr_get1(t, w->tally.id) == 2 * (double)r ||
		    thr_get1(t, w->tally.id) == 2 * (double)r + TURNS * 2,
		    "own element before the turn");
		check(w, cow_tensor_select(t, 0, w->tally.id, &e) == COW_OK,
		    "select");
		check(w, cow_tensor_add_scalar_(e, 1) == COW_OK, "add");
		cow_tensor_release(t);
		/* The view outlives its tensor within the turn. */
		check(w, cow_tensor_add_scalar_(e, 1) == COW_OK, "add again");
		cow_tensor_release(e);
		pthread_mutex_unlock(&user_lock);
	}
	return NULL;
}

static void
start_all(struct worker *w, void *(*fn)(void *))
{
	pthread_t th[THREADS];

	pthread_barrier_init(&start, NULL, THREADS);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, fn, &w[i]);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&start);
}

static int
run_backend(const cow_backend_t *be, int *passed)
{
	struct worker w[THREADS];
	cow_storage_t *shared;
	cow_tensor_t *keep[THREADS];
	int failed = 0;
	double *p;

	backend = be;
	if (cow_storage_new(THREADS * sizeof(double), NULL, &shared) !=
	    COW_OK)
		abort();
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){.tally = {.id = i,
		    .who = cow_backend_name(backend)}, .shared = shared};
		for (int s = 0; s < STORES; s++) {
			if (cow_storage_new(SIDE * sizeof(double), NULL,
			    &w[i].own[s]) != COW_OK ||
			    cow_storage_mutable_data(w[i].own[s],
			    (void **)&p) != COW_OK)
				abort();
			for (int k = 0; k < SIDE; k++)
				p[k] = k;
		}
	}
	start_all(w, run_own);
	/* Phase 2, shared: tensors made here keep the group alive while the
	 * threads take turns (made on this thread, joined on theirs). */
	enter();
	for (int i = 0; i < THREADS; i++)
		keep[i] = over(&w[0], shared, 1, (int64_t[]){THREADS});
	start_all(w, run_shared);
	for (int i = 0; i < THREADS; i++) {
		check(&w[0], thr_get1(keep[i], i) == 2 * TURNS,
		    "a kept tensor sees every turn");
		cow_tensor_release(keep[i]);
	}
	/* Phase 2, fresh: no tensor kept, a group per turn. */
	start_all(w, run_shared);
	(void)cow_backend_set_thread(NULL, NULL);
	(void)cow_functional_mode_set_thread(false, NULL);
	for (int i = 0; i < THREADS; i++) {
		check(&w[0], ((const double *)cow_storage_const_data(
		    shared))[i] == 4 * TURNS, "shared storage");
		failed += w[i].tally.failed;
		*passed += w[i].tally.passed;
		for (int s = 0; s < STORES; s++)
			cow_storage_release(w[i].own[s]);
	}
	cow_storage_release(shared);
	return failed;
}

int
main(void)
{
	return thr_backends_main("functional_storage_threads", run_backend,
	    NULL);
}
