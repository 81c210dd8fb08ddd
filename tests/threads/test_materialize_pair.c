/*
 * Two threads materialise two lazy peers of one storage at the same moment
 * (both start on a barrier), 10,000 rounds. Each peer ends private with the
 * original bytes plus its own writes; each round has exactly one steal and
 * one copy; the original is freed exactly once.
 *
 * A plain executable (not Criterion) so it also runs under TSan.
 * Prints "N passed, N failed"; exits non-zero on any failure.
 */
#include <pthread.h>
#include <stdio.h>

#include "cow_test.h"

#define ROUNDS 10000
#define NBYTES 256

struct round {
	cow_storage_t *peer[2];
	pthread_barrier_t start;
	pthread_barrier_t done;
	int quit;
};

static void *
writer(void *arg)
{
	struct round *r = ((struct round **)arg)[0];
	int me = (int)(intptr_t)((void **)arg)[1];

	for (;;) {
		unsigned char *p;

		pthread_barrier_wait(&r->start);
		if (r->quit)
			return NULL;
		if (cow_storage_mutable_data(r->peer[me], (void **)&p) !=
		    COW_OK)
			abort();
		/* Our own write: one byte at our index. */
		p[me] = (unsigned char)(0xf0 + me);
		pthread_barrier_wait(&r->done);
	}
}

int
main(void)
{
	struct round r = {0};
	pthread_t t[2];
	void *args[2][2] = {{&r, (void *)0}, {&r, (void *)1}};
	int failed = 0, passed = 0;

	pthread_barrier_init(&r.start, NULL, 3);
	pthread_barrier_init(&r.done, NULL, 3);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, writer, args[i]);

	for (int round = 0; round < ROUNDS; round++) {
		struct cow_test_deleter d = {0};
		unsigned char *orig = malloc(NBYTES);
		cow_storage_t *src;
		cow_stats_t before, after;
		int ok = 1;

		cow_test_fill(orig, NBYTES, (unsigned)round);
		if (cow_storage_from_external(orig, NBYTES,
		    cow_test_deleter_fn, &d, 0, &src) != COW_OK ||
		    cow_storage_lazy_clone(src, &r.peer[0]) != COW_OK)
			abort();
		r.peer[1] = src;
		cow_stats_get(&before);
		pthread_barrier_wait(&r.start);
		pthread_barrier_wait(&r.done);
		cow_stats_get(&after);

		for (int i = 0; i < 2; i++)
			ok &= !cow_storage_is_cow(r.peer[i]);
		/* The original bytes plus exactly this peer's own write. */
		for (int i = 0; i < 2; i++) {
			unsigned char want[NBYTES];
			const unsigned char *p =
			    cow_storage_const_data(r.peer[i]);

			cow_test_fill(want, NBYTES, (unsigned)round);
			want[i] = (unsigned char)(0xf0 + i);
			ok &= memcmp(p, want, NBYTES) == 0;
		}
		ok &= after.materialize_steals - before.materialize_steals == 1;
		ok &= after.materialize_copies - before.materialize_copies == 1;
		ok &= d.calls == 0;
		cow_storage_release(r.peer[0]);
		cow_storage_release(r.peer[1]);
		ok &= d.calls == 1;
		if (ok)
			passed++;
		else if (failed++ < 5)
			fprintf(stderr, "round %d: invariant violated\n",
			    round);
	}
	r.quit = 1;
	pthread_barrier_wait(&r.start);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("materialize_pair: %d rounds\n", ROUNDS);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
