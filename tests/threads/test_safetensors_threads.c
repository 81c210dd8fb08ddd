/*
 * A mapped safetensors file used from several threads (safetensors.h,
 * docs/files.md, "Loading"): four workers take every tensor of one open
 * file at once (cow_safetensors_get concurrently) and lazy clones of
 * half of them, check their values, then release them all at once while
 * the main thread closes the handle; one user, chosen per round, is kept:
 * the handle, a worker's tensor or a worker's lazy clone. The file must
 * stay mapped while that last user lives (its values still read) and be
 * unmapped as soon as it goes, on whichever thread (the mappings of the
 * file's path in /proc/self/maps).
 *
 * A plain executable (not Criterion) so it also runs under TSan.
 * Prints "safetensors_threads: N rounds passed" or "FAILED: ..." (exit 1).
 */
#define _DEFAULT_SOURCE /* mkdtemp, realpath */
#include <pthread.h>

#include "cow_test.h"
#include "st_test.h"

#define WORKERS 4
#define TENSORS 32
#define ELEMS 256
#define ROUNDS 200

enum last { LAST_HANDLE, LAST_TENSOR, LAST_CLONE, NLAST };

struct round {
	cow_safetensors_t *file;
	const char *path;
	enum last last;
	int last_worker;
	pthread_barrier_t gotten, released, checked;
	int failed;            /* set by workers; read after the barriers */
};

struct held {
	cow_tensor_t *t;
	unsigned seed;
	bool clone;
};

struct worker {
	struct round *r;
	int id;
	struct held held[2 * TENSORS];
	size_t nheld;
};

static void
fail(struct round *r, const char *what)
{
	printf("FAILED: %s\n", what);
	__atomic_store_n(&r->failed, 1, __ATOMIC_RELAXED);
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct round *r = w->r;
	bool keeper = r->last != LAST_HANDLE && w->id == r->last_worker;
	struct held *kept = NULL;

	/* Every tensor, by every worker at once, and half of them cloned. */
	for (size_t i = 0; i < TENSORS; i++) {
		size_t k = (i + (size_t)w->id * 7) % TENSORS;
		cow_tensor_t *t, *c;

		if (cow_safetensors_get(r->file, k, &t) != COW_OK) {
			fail(r, "cow_safetensors_get");
			continue;
		}
		if (!cow_test_check(cow_tensor_const_data(t), ELEMS * 4,
		    (unsigned)k))
			fail(r, "a tensor's values");
		w->held[w->nheld++] = (struct held){t, (unsigned)k, false};
		if (k % 2 == 0) {
			if (cow_tensor_lazy_clone(t, &c) != COW_OK) {
				fail(r, "cow_tensor_lazy_clone");
				continue;
			}
			w->held[w->nheld++] = (struct held){c, (unsigned)k,
			    true};
		}
	}
	pthread_barrier_wait(&r->gotten);
	/* Release everything at once with the others (and the handle's
	 * close), but the one kept. */
	for (size_t i = 0; i < w->nheld; i++) {
		struct held *h = &w->held[i];

		if (keeper && kept == NULL &&
		    h->clone == (r->last == LAST_CLONE)) {
			kept = h;
			continue;
		}
		cow_tensor_release(h->t);
	}
	pthread_barrier_wait(&r->released);
	/* The main thread looks at the mapping. */
	pthread_barrier_wait(&r->checked);
	if (kept != NULL) {
		if (!cow_test_check(cow_tensor_const_data(kept->t), ELEMS * 4,
		    kept->seed))
			fail(r, "the last user's values");
		cow_tensor_release(kept->t);
	}
	return NULL;
}

static int
save_file(const char *path)
{
	cow_tensor_t *ts[TENSORS];
	char buf[TENSORS][16];
	const char *names[TENSORS];
	cow_snapshot_t *snap;
	cow_status_t st;

	for (int i = 0; i < TENSORS; i++) {
		void *p;

		if (cow_tensor_empty(COW_DTYPE_FLOAT32, 1, &(int64_t){ELEMS},
		    NULL, &ts[i]) != COW_OK ||
		    cow_tensor_mutable_data(ts[i], &p) != COW_OK)
			return -1;
		cow_test_fill(p, ELEMS * 4, (unsigned)i);
		/* Zero-padded names: the file's order is the index order. */
		snprintf(buf[i], sizeof buf[i], "t%03d", i);
		names[i] = buf[i];
	}
	if (cow_snapshot_take(TENSORS, ts, names, &snap) != COW_OK)
		return -1;
	st = cow_safetensors_save(snap, path, NULL);
	cow_snapshot_release(snap);
	for (int i = 0; i < TENSORS; i++)
		cow_tensor_release(ts[i]);
	return st == COW_OK ? 0 : -1;
}

int
main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : ROUNDS, passed = 0;
	char *dir = st_test_tmpdir(), path[PATH_MAX];

	if (dir == NULL) {
		printf("FAILED: mkdtemp\n");
		return 1;
	}
	snprintf(path, sizeof path, "%s/threads.safetensors", dir);
	if (save_file(path) != 0) {
		printf("FAILED: save: %s\n", cow_last_error());
		st_test_rmdir(dir);
		return 1;
	}
	for (int n = 0; n < rounds; n++) {
		struct round r = {.path = path, .last = (enum last)(n % NLAST),
		    .last_worker = n % WORKERS};
		struct worker w[WORKERS];
		pthread_t t[WORKERS];
		int maps;

		if (cow_safetensors_open(path, 0, &r.file) != COW_OK) {
			printf("FAILED: open: %s\n", cow_last_error());
			break;
		}
		pthread_barrier_init(&r.gotten, NULL, WORKERS + 1);
		pthread_barrier_init(&r.released, NULL, WORKERS + 1);
		pthread_barrier_init(&r.checked, NULL, WORKERS + 1);
		for (int i = 0; i < WORKERS; i++) {
			w[i] = (struct worker){.r = &r, .id = i};
			pthread_create(&t[i], NULL, worker_main, &w[i]);
		}
		pthread_barrier_wait(&r.gotten);
		/* The handle goes while the workers release, unless it is
		 * the last user. */
		if (r.last != LAST_HANDLE)
			cow_safetensors_close(r.file);
		pthread_barrier_wait(&r.released);
		maps = st_test_mappings(path);
		if (maps < 1)
			fail(&r, "unmapped while its last user lives");
		pthread_barrier_wait(&r.checked);
		if (r.last == LAST_HANDLE) {
			if (st_test_mappings(path) < 1)
				fail(&r, "unmapped while the handle is open");
			cow_safetensors_close(r.file);
		}
		for (int i = 0; i < WORKERS; i++)
			pthread_join(t[i], NULL);
		if (st_test_mappings(path) != 0)
			fail(&r, "still mapped after its last user went");
		pthread_barrier_destroy(&r.gotten);
		pthread_barrier_destroy(&r.released);
		pthread_barrier_destroy(&r.checked);
		if (r.failed) {
			printf("FAILED: round %d (last user: %s)\n", n,
			    r.last == LAST_HANDLE ? "the handle" :
			    r.last == LAST_TENSOR ? "a tensor" : "a clone");
			st_test_rmdir(dir);
			return 1;
		}
		passed++;
	}
	st_test_rmdir(dir);
	if (passed != rounds)
		return 1;
	printf("safetensors_threads: %d rounds passed\n", passed);
	return 0;
}
