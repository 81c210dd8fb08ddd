/*
 * Tensors across threads: four threads repeatedly lazy-clone one shared
 * tensor T (a read of T), reshape it in their own thread-local reshape
 * mode, borrow it through MaybeOwned, read it with ops, and write their
 * clones (each write materialises that clone, racing with the others'
 * materialisations and releases). T is never written: it must end with its
 * original address and values (also read through the pointer
 * cow_tensor_read_data gives, while the clones are written), and every
 * clone must hold T + its writes.
 * Then a release of a shared original during an op that reads it
 * (release_during_op).
 *
 * A plain executable (not Criterion) so it also runs under TSan.
 * Prints "N passed, N failed"; exits non-zero on any failure.
 */
#include <pthread.h>
#include <stdio.h>

#include "cow_test.h"
#include "thread_test.h"

#define THREADS 4
#define ROUNDS 200
#define SIDE 32

static cow_tensor_t *T;
static const void *T_addr;
static pthread_barrier_t start;

struct worker {
	struct thr_tally tally;
};

static void
check(struct worker *w, bool ok, const char *what)
{
	thr_check(&w->tally, ok, what);
}

/* Sum of T's elements: 0 + 1 + ... + (SIDE * SIDE - 1). */
static double
base_sum(void)
{
	return (double)(SIDE * SIDE) * (SIDE * SIDE - 1) / 2.0;
}

/* The pointer cow_tensor_read_data gives for T, kept while other threads
 * write their lazy clones of T: it still gives T's address, and row @row
 * read through it still holds T's values (each clone's write copied the
 * bytes; none wrote through T's). */
static bool
read_pointer_holds_T(int row)
{
	const void *p = NULL;
	const double *v;

	if (cow_tensor_read_data(T, &p) != COW_OK || p != T_addr)
		return false;
	v = (const double *)p + (int64_t)row * SIDE;
	for (int j = 0; j < SIDE; j++)
		if (v[j] != (double)(row * SIDE + j))
			return false;
	return true;
}

static void *
run(void *arg)
{
	struct worker *w = arg;
	cow_reshape_mode_t mine = w->tally.id % 2 ? COW_RESHAPE_LAZY_COPY :
	    COW_RESHAPE_ALIAS;

	if (cow_reshape_mode_set_thread(mine, NULL) != COW_OK)
		abort();
	pthread_barrier_wait(&start);
	for (int r = 0; r < ROUNDS; r++) {
		cow_tensor_t *c, *row, *flat;
		cow_maybe_owned_t mo;
		double add = w->tally.id + 1;

		check(w, cow_reshape_mode_effective() == mine,
		    "thread-local mode changed");
		check(w, cow_tensor_expect_contiguous(T, &mo) == COW_OK &&
		    !cow_maybe_owned_is_owned(&mo), "borrow of T");
		check(w, thr_sum(cow_maybe_owned_get(&mo)) == base_sum(),
		    "read of T through the borrow");
		cow_maybe_owned_release(&mo);

		if (cow_tensor_lazy_clone(T, &c) != COW_OK)
			abort();
		if (cow_tensor_select(c, 0, r % SIDE, &row) != COW_OK ||
		    cow_tensor_reshape(c, 1, (int64_t[]){-1}, &flat) != COW_OK)
			abort();
		/* Writing a view of the clone materialises the clone. */
		check(w, cow_tensor_add_scalar_(row, add) == COW_OK,
		    "write the clone");
		check(w, !cow_storage_is_cow(cow_tensor_storage(c)) &&
		    cow_tensor_const_data(c) != T_addr, "clone materialised");
		check(w, thr_sum(c) == base_sum() + add * SIDE,
		    "clone holds T plus its write");
		check(w, read_pointer_holds_T(r % SIDE),
		    "T's bytes, read through cow_tensor_read_data's pointer "
		    "while the clones are written");
		/* In ALIAS mode flat sees the write; in LAZY_COPY it is a
		 * separate copy that still holds T's values. */
		check(w, thr_sum(flat) == (mine == COW_RESHAPE_ALIAS ?
		    base_sum() + add * SIDE : base_sum()), "reshape mode");
		cow_tensor_release(flat);
		cow_tensor_release(row);
		cow_tensor_release(c);
	}
	return NULL;
}

/*
 * Release during an op: a worker adds row 0 of C = lazy_clone(T) into row
 * 1 of C (one storage, disjoint bytes: no temporary) while the main thread
 * drops T, the other holder of the shared data. Once the worker's write
 * access has copied C's data, the shared original may be freed at any
 * moment: the worker must read row 0 from C's new data. (A kernel that kept
 * a pointer into the original reads freed memory: ASan and TSan see it.)
 */
#define RACE_ROUNDS 100
#define RACE_N 65536

struct race {
	cow_tensor_t *r0, *r1;
	pthread_barrier_t go;
	int quit;
	int failed;
};

static void *
race_worker(void *arg)
{
	struct race *r = arg;

	for (;;) {
		pthread_barrier_wait(&r->go);
		if (r->quit)
			return NULL;
		if (cow_tensor_add_(r->r1, r->r0) != COW_OK)
			r->failed++;
		pthread_barrier_wait(&r->go);
	}
}

static int
release_during_op(void)
{
	struct race r = {0};
	pthread_t th;
	int failed = 0;

	pthread_barrier_init(&r.go, NULL, 2);
	pthread_create(&th, NULL, race_worker, &r);
	for (int round = 0; round < RACE_ROUNDS; round++) {
		cow_tensor_t *t, *flat, *c;
		double v0 = -1, v1 = -1;

		if (cow_tensor_arange(COW_DTYPE_FLOAT64, 2 * RACE_N, NULL,
		    &flat) != COW_OK ||
		    cow_tensor_view(flat, 2, (int64_t[]){2, RACE_N}, &t) !=
		    COW_OK || cow_tensor_lazy_clone(t, &c) != COW_OK ||
		    cow_tensor_select(c, 0, 0, &r.r0) != COW_OK ||
		    cow_tensor_select(c, 0, 1, &r.r1) != COW_OK)
			return 1;
		cow_tensor_release(flat);
		pthread_barrier_wait(&r.go);
		/* Let the worker's copy start, then drop T's share. */
		for (volatile int spin = 0; spin < (round % 10) * 2000; spin++)
			;
		cow_tensor_release(t);
		pthread_barrier_wait(&r.go);
		(void)cow_tensor_get_f64(r.r1, (int64_t[]){RACE_N - 1}, &v1);
		(void)cow_tensor_get_f64(r.r0, (int64_t[]){RACE_N - 1}, &v0);
		if (v0 != RACE_N - 1 || v1 != (double)RACE_N + 2 * (RACE_N - 1))
			failed++;
		cow_tensor_release(r.r0);
		cow_tensor_release(r.r1);
		cow_tensor_release(c);
	}
	r.quit = 1;
	pthread_barrier_wait(&r.go);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&r.go);
	return failed + r.failed;
}

int
main(void)
{
	struct worker w[THREADS];
	pthread_t th[THREADS];
	cow_tensor_t *flat;
	int failed = 0, passed = 0;

	if (cow_tensor_arange(COW_DTYPE_FLOAT64, SIDE * SIDE, NULL, &flat) !=
	    COW_OK ||
	    cow_tensor_view(flat, 2, (int64_t[]){SIDE, SIDE}, &T) != COW_OK)
		return 2;
	cow_tensor_release(flat);
	T_addr = cow_tensor_const_data(T);
	pthread_barrier_init(&start, NULL, THREADS);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){.tally.id = i};
		pthread_create(&th[i], NULL, run, &w[i]);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		failed += w[i].tally.failed;
		passed += w[i].tally.passed;
	}
	pthread_barrier_destroy(&start);
	/* T was only read. */
	if (cow_tensor_const_data(T) == T_addr && thr_sum(T) == base_sum() &&
	    cow_storage_share_count(cow_tensor_storage(T)) == 1)
		passed++;
	else
		failed++;
	cow_tensor_release(T);
	if (release_during_op() == 0)
		passed++;
	else
		failed++;
	printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
