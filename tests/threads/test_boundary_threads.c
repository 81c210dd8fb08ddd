/*
 * The boundary under threads (storage.h, dlpack.h), as plain executables so
 * that they also run under TSan:
 *
 * 1. read_only_file: a file mapped PROT_READ is wrapped read-only; THREADS
 *    threads each lazily clone it and write every storage they hold at once
 *    (the storage over the mapping included, by its own thread). No write
 *    faults, each storage ends with its own bytes, the file is unchanged,
 *    and the mapping is unmapped exactly once, after the last share.
 * 2. exports_released_elsewhere: exports (writable, read-only, copy; both
 *    ABIs) are made on one thread, written by a consumer thread and deleted
 *    on a third; every pin is gone at the end, and snapshots taken while
 *    exported keep their bytes.
 * 3. imports_released_elsewhere: producer tensors imported on one thread
 *    are cloned and released on others; every producer deleter runs
 *    exactly once, after the last release.
 *
 * Prints "N passed, N failed"; exits non-zero on any failure.
 */
#define _DEFAULT_SOURCE /* mkstemp, MAP_SHARED */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cow_test.h"
#include "interop/dlpack_abi.h"

#define THREADS 4
#define ROUNDS 200
#define PAGES 4

static int passed, failed;

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (cond) {                                                 \
			passed++;                                           \
		} else if (failed++ < 10) {                                 \
			fprintf(stderr, "FAILED (%s:%d): ", __func__,       \
			    __LINE__);                                      \
			fprintf(stderr, __VA_ARGS__);                       \
			fprintf(stderr, "\n");                              \
		}                                                           \
	} while (0)

/* ------------------------------------------------------------------ */
/* 1. A read-only file mapping written through every storage.          */

struct mapping {
	unsigned char *map;
	size_t n;
	atomic_int unmaps;
};

static void
unmap_deleter(void *data, size_t nbytes, void *ctx)
{
	struct mapping *m = ctx;

	munmap(data, nbytes);
	atomic_fetch_add(&m->unmaps, 1);
}

struct ro_worker {
	pthread_t tid;
	pthread_barrier_t *go;
	cow_storage_t *src;   /* shared: cloned by every worker (a read) */
	cow_storage_t *own;   /* the worker's clone; worker 0: src itself */
	int id;
	bool ok;
};

static void *
ro_work(void *arg)
{
	struct ro_worker *w = arg;
	cow_storage_t *mine = NULL;
	unsigned char *p;
	size_t n;

	/* Every worker clones the shared source at once (lazy clone is a
	 * read), then all write what they hold at once. */
	if (w->id != 0 && cow_storage_lazy_clone(w->src, &mine) != COW_OK)
		abort();
	pthread_barrier_wait(w->go);
	if (w->id == 0)
		mine = w->src;
	n = cow_storage_nbytes(mine);
	if (cow_storage_mutable_data(mine, (void **)&p) != COW_OK)
		abort();
	memset(p, 0x10 + w->id, n);
	w->own = mine;
	w->ok = true;
	for (size_t i = 0; i < n; i++)
		w->ok &= p[i] == (unsigned char)(0x10 + w->id);
	return NULL;
}

static void
read_only_file(void)
{
	char path[] = "/tmp/cowstore-ro-XXXXXX";
	size_t n = (size_t)sysconf(_SC_PAGESIZE) * PAGES;
	unsigned char *want = malloc(n), *got = malloc(n);
	int fd = mkstemp(path);

	if (fd < 0 || want == NULL || got == NULL)
		abort();
	unlink(path);
	cow_test_fill(want, n, 77);
	if (write(fd, want, n) != (ssize_t)n)
		abort();
	for (int round = 0; round < ROUNDS; round++) {
		struct ro_worker w[THREADS];
		struct mapping m = {NULL, n, 0};
		pthread_barrier_t go;
		cow_storage_t *src;

		m.map = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
		if (m.map == MAP_FAILED)
			abort();
		if (cow_storage_from_external(m.map, n, unmap_deleter, &m,
		    COW_STORAGE_READ_ONLY, &src) != COW_OK)
			abort();
		pthread_barrier_init(&go, NULL, THREADS);
		for (int i = 0; i < THREADS; i++) {
			w[i] = (struct ro_worker){0, &go, src, NULL, i, false};
			pthread_create(&w[i].tid, NULL, ro_work, &w[i]);
		}
		for (int i = 0; i < THREADS; i++)
			pthread_join(w[i].tid, NULL);
		pthread_barrier_destroy(&go);
		for (int i = 0; i < THREADS; i++) {
			CHECK(w[i].ok, "round %d: worker %d's bytes", round, i);
			CHECK(cow_storage_const_data(w[i].own) !=
			    (const void *)m.map, "round %d: storage %d still "
			    "points at the mapping", round, i);
		}
		CHECK(atomic_load(&m.unmaps) == 1, "round %d: the mapping was "
		    "unmapped %d times after every share copied", round,
		    atomic_load(&m.unmaps));
		for (int i = 0; i < THREADS; i++)
			cow_storage_release(w[i].own);
		CHECK(atomic_load(&m.unmaps) == 1, "round %d: unmapped %d "
		    "times", round, atomic_load(&m.unmaps));
		if (pread(fd, got, n, 0) != (ssize_t)n)
			abort();
		CHECK(memcmp(got, want, n) == 0, "round %d: the file changed",
		    round);
	}
	close(fd);
	free(want);
	free(got);
}

/* ------------------------------------------------------------------ */
/* 2 and 3. A hand-off between threads: a one-slot mailbox per stage.   */

struct mailbox {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	void *item;
	bool closed;
};

static void
mailbox_init(struct mailbox *b)
{
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	b->item = NULL;
	b->closed = false;
}

/* Once @b is empty: leave @item in it, or close it if @close. */
static void
mailbox_post(struct mailbox *b, void *item, bool close)
{
	pthread_mutex_lock(&b->lock);
	while (b->item != NULL)
		pthread_cond_wait(&b->cond, &b->lock);
	if (close)
		b->closed = true;
	else
		b->item = item;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

static void
mailbox_put(struct mailbox *b, void *item)
{
	mailbox_post(b, item, false);
}

static void
mailbox_close(struct mailbox *b)
{
	mailbox_post(b, NULL, true);
}

/* NULL once closed and empty. */
static void *
mailbox_take(struct mailbox *b)
{
	void *item;

	pthread_mutex_lock(&b->lock);
	while (b->item == NULL && !b->closed)
		pthread_cond_wait(&b->cond, &b->lock);
	item = b->item;
	b->item = NULL;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	return item;
}

#define NELEM 64

/* One export on its way: made by main, written by the consumer, deleted by
 * the deleter thread. */
struct export {
	bool versioned;
	unsigned flags;
	struct DLManagedTensor *legacy;
	struct DLManagedTensorVersioned *vers;
	cow_tensor_t *snapshot; /* taken while exported (main thread) */
	double first;           /* the snapshot's element 0 when taken */
};

static struct cow__dl_tensor *
export_tensor(struct export *e)
{
	return e->versioned ? &e->vers->dl_tensor : &e->legacy->dl_tensor;
}

static void *
export_consumer(void *arg)
{
	struct mailbox **boxes = arg;
	struct export *e;

	while ((e = mailbox_take(boxes[0])) != NULL) {
		/* A consumer writes only a writable or copied export. */
		if (!(e->flags & COW_DLPACK_READ_ONLY)) {
			double *d = export_tensor(e)->data;

			for (int i = 0; i < NELEM; i++)
				d[i] = -1.0 - i;
		}
		mailbox_put(boxes[1], e);
	}
	mailbox_close(boxes[1]);
	return NULL;
}

/* Exports the deleter thread has finished (main waits on it). */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int n;
} deleted = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static void *
export_deleter(void *arg)
{
	struct mailbox *box = arg;
	struct export *e;

	while ((e = mailbox_take(box)) != NULL) {
		double v;

		/* The snapshot, taken while exported, kept its bytes. */
		CHECK(cow_tensor_get_f64(e->snapshot, (int64_t[]){0}, &v) ==
		    COW_OK && v == e->first, "a snapshot of an exported "
		    "tensor changed: %g, not %g", v, e->first);
		cow_tensor_release(e->snapshot);
		if (e->versioned)
			e->vers->deleter(e->vers);
		else
			e->legacy->deleter(e->legacy);
		free(e);
		pthread_mutex_lock(&deleted.lock);
		deleted.n++;
		pthread_cond_broadcast(&deleted.cond);
		pthread_mutex_unlock(&deleted.lock);
	}
	return NULL;
}

static void
exports_released_elsewhere(void)
{
	static const unsigned kinds[] = {0, COW_DLPACK_READ_ONLY,
	    COW_DLPACK_COPY};
	struct mailbox written, done, *boxes[2] = {&written, &done};
	pthread_t consumer, deleter;
	cow_tensor_t *t;
	cow_stats_t before, after;

	mailbox_init(&written);
	mailbox_init(&done);
	pthread_create(&consumer, NULL, export_consumer, boxes);
	pthread_create(&deleter, NULL, export_deleter, &done);
	if (cow_tensor_arange(COW_DTYPE_FLOAT64, NELEM, NULL, &t) != COW_OK)
		abort();
	cow_stats_get(&before);
	for (int round = 0; round < ROUNDS * 10; round++) {
		struct export *e = calloc(1, sizeof *e);
		cow_status_t st;
		bool writable;

		e->versioned = round & 1;
		e->flags = kinds[(round >> 1) % 3];
		/* Main writes its tensor, which every earlier export has
		 * materialised away from or snapshotted. */
		if (cow_tensor_fill_(t, (double)round) != COW_OK)
			abort();
		st = e->versioned ?
		    cow_tensor_to_dlpack_versioned(t, e->flags, &e->vers) :
		    cow_tensor_to_dlpack(t, e->flags, &e->legacy);
		if (st != COW_OK)
			abort();
		if (cow_tensor_lazy_clone(t, &e->snapshot) != COW_OK)
			abort();
		e->first = (double)round;
		writable = e->flags == 0;
		mailbox_put(&written, e); /* e is the other threads' now */
		/* A writable export's consumer writes t's own memory: main,
		 * as a user must, leaves t alone until that export is
		 * deleted (its deleter unpins on the deleter thread). */
		if (writable) {
			pthread_mutex_lock(&deleted.lock);
			while (deleted.n < round + 1)
				pthread_cond_wait(&deleted.cond, &deleted.lock);
			pthread_mutex_unlock(&deleted.lock);
			CHECK(!cow_storage_is_pinned(cow_tensor_storage(t)),
			    "round %d: still pinned after the deleter", round);
		}
	}
	mailbox_close(&written);
	pthread_join(consumer, NULL);
	pthread_join(deleter, NULL);
	cow_stats_get(&after);
	CHECK(!cow_storage_is_pinned(cow_tensor_storage(t)), "a pin outlived "
	    "every export's deleter");
	CHECK(after.pinned_clones - before.pinned_clones >= 1, "snapshots of "
	    "pinned tensors copied (%llu)", (unsigned long long)
	    (after.pinned_clones - before.pinned_clones));
	cow_tensor_release(t);
}

/* 3. Producers: their own memory and a counting deleter. */
struct producer {
	struct DLManagedTensorVersioned v;
	struct DLManagedTensor l;
	int64_t shape[1];
	double data[NELEM];
	atomic_int deleted;
};

static void
producer_v_deleter(struct DLManagedTensorVersioned *self)
{
	atomic_fetch_add(&((struct producer *)self->manager_ctx)->deleted, 1);
}

static void
producer_l_deleter(struct DLManagedTensor *self)
{
	atomic_fetch_add(&((struct producer *)self->manager_ctx)->deleted, 1);
}

static void *
import_releaser(void *arg)
{
	struct mailbox *box = arg;
	cow_tensor_t *t;

	while ((t = mailbox_take(box)) != NULL) {
		cow_tensor_t *c;

		/* Clone here, write the clone, release both here. */
		if (cow_tensor_lazy_clone(t, &c) != COW_OK ||
		    cow_tensor_fill_(c, 5.0) != COW_OK)
			abort();
		cow_tensor_release(t);
		cow_tensor_release(c);
	}
	return NULL;
}

static void
imports_released_elsewhere(void)
{
	enum { N = ROUNDS * 10 };
	struct producer *p = calloc(N, sizeof *p);
	struct mailbox box;
	pthread_t releaser;

	mailbox_init(&box);
	pthread_create(&releaser, NULL, import_releaser, &box);
	for (int i = 0; i < N; i++) {
		struct cow__dl_tensor dl = {p[i].data, {COW__DL_CPU, 0}, 1,
		    {COW__DL_FLOAT, 64, 1}, p[i].shape, NULL, 0};
		uint64_t flags = (i % 3 == 0) ? COW__DL_FLAG_READ_ONLY :
		    (i % 3 == 1) ? COW__DL_FLAG_IS_COPIED : 0;
		cow_tensor_t *t;
		cow_status_t st;

		p[i].shape[0] = NELEM;
		for (int k = 0; k < NELEM; k++)
			p[i].data[k] = k;
		p[i].v = (struct DLManagedTensorVersioned){{1, 0}, &p[i],
		    producer_v_deleter, flags, dl};
		p[i].l = (struct DLManagedTensor){dl, &p[i],
		    producer_l_deleter};
		st = (i & 1) ? cow_tensor_from_dlpack_versioned(&p[i].v, 0,
		    &t) : cow_tensor_from_dlpack(&p[i].l, 0, &t);
		if (st != COW_OK)
			abort();
		mailbox_put(&box, t);
	}
	mailbox_close(&box);
	pthread_join(releaser, NULL);
	for (int i = 0; i < N; i++) {
		bool wrote = !(i & 1) || p[i].v.flags == 0 ||
		    (p[i].v.flags & COW__DL_FLAG_IS_COPIED);

		CHECK(atomic_load(&p[i].deleted) == 1, "producer %d's deleter "
		    "ran %d times", i, atomic_load(&p[i].deleted));
		/* A read-only import's memory is never written. */
		if (!wrote)
			CHECK(p[i].data[NELEM - 1] == NELEM - 1, "producer %d's "
			    "read-only memory was written", i);
	}
	free(p);
}

int
main(void)
{
	read_only_file();
	exports_released_elsewhere();
	imports_released_elsewhere();
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
