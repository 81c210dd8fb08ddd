/*
 * engine.c - an engine that uses the installed cowstore from several
 * threads, built with -fsanitize=thread (docs/tsan.md, "Running your engine
 * under ThreadSanitizer"; tests/consumer/check_tsan.cmake runs it).
 *
 * The main thread owns a parameter tensor and keeps updating it in place.
 * For each request it takes a lazy-clone snapshot of the parameters and
 * hands the snapshot to a worker through a mutex-protected queue; that is
 * all the synchronisation the engine does, which is what the library
 * promises suffices (storage.h: lazy copies handed to different threads
 * need none). A worker reads its snapshot, which must hold the values of
 * its step; every third request it also writes the snapshot (the library
 * then copies the shared bytes, or steals them when the snapshot holds the
 * last share) and reads it back; then it releases the snapshot and counts
 * it served. The owner never synchronises with the workers: on odd steps it
 * writes at once, usually while a worker still shares the bytes (the
 * library copies them for the owner); on even steps it first waits until
 * the served count says every earlier request is done, so it writes in
 * place, into the bytes the workers have just read and copied. The count is
 * relaxed: it only paces the owner and orders nothing, so what makes that
 * in-place write safe is the library's own synchronisation, on which the
 * owner's write follows the workers' releases. TSan sees that
 * synchronisation only in an instrumented library; against a plain one it
 * reports the owner's write racing with the workers' reads and with the
 * library's memcpy (tests/consumer/check_tsan.cmake, the control).
 *
 * Built with -DENGINE_STALE_WRITE, the owner also has a real race (a
 * write through a pointer kept across the lazy clone), which TSan must
 * report against the instrumented library too: its silence is not
 * blindness.
 *
 * Prints "ok: N requests, N snapshot writes" and exits 0 when every
 * snapshot held its step's values; exits 1 otherwise.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <cowstore/cowstore.h>

#define WORKERS 2
#define STEPS 400
#define QUEUE 4
#define NUMEL 4096

struct request {
	cow_tensor_t *snapshot; /* NULL: stop */
	int step;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t nonempty, nonfull;
	struct request items[QUEUE];
	int head, count;
} queue = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
	PTHREAD_COND_INITIALIZER, {{NULL, 0}}, 0, 0};

static void
push(struct request r)
{
	pthread_mutex_lock(&queue.mu);
	while (queue.count == QUEUE)
		pthread_cond_wait(&queue.nonfull, &queue.mu);
	queue.items[(queue.head + queue.count++) % QUEUE] = r;
	pthread_cond_signal(&queue.nonempty);
	pthread_mutex_unlock(&queue.mu);
}

static struct request
pop(void)
{
	struct request r;

	pthread_mutex_lock(&queue.mu);
	while (queue.count == 0)
		pthread_cond_wait(&queue.nonempty, &queue.mu);
	r = queue.items[queue.head];
	queue.head = (queue.head + 1) % QUEUE;
	queue.count--;
	pthread_cond_signal(&queue.nonfull);
	pthread_mutex_unlock(&queue.mu);
	return r;
}

/* Requests served: paces the owner; relaxed, so it orders nothing. */
static atomic_int served;

static void
die(const char *what)
{
	fprintf(stderr, "engine: %s: %s\n", what, cow_last_error());
	exit(1);
}

/* Every element of @t equals @value. */
static bool
holds(const cow_tensor_t *t, float value)
{
	const float *p = cow_tensor_const_data(t);

	for (int i = 0; p != NULL && i < NUMEL; i++)
		if (p[i] != value)
			return false;
	return p != NULL;
}

struct worker {
	pthread_t thread;
	int requests, writes, wrong;
};

static void *
serve(void *arg)
{
	struct worker *w = arg;

	for (;;) {
		struct request r = pop();
		void *data;

		if (r.snapshot == NULL)
			return NULL;
		w->requests++;
		if (!holds(r.snapshot, (float)r.step))
			w->wrong++;
		if (r.step % 3 == 0) {
			if (cow_tensor_mutable_data(r.snapshot, &data) != COW_OK)
				die("cow_tensor_mutable_data (snapshot)");
			for (int i = 0; i < NUMEL; i++)
				((float *)data)[i] = -(float)r.step;
			if (!holds(r.snapshot, -(float)r.step))
				w->wrong++;
			w->writes++;
		}
		cow_tensor_release(r.snapshot);
		atomic_fetch_add_explicit(&served, 1, memory_order_relaxed);
	}
}

#ifdef ENGINE_STALE_WRITE
/* The bug of the engine control: the pointer kept across the lazy clone
 * writes into the snapshot's bytes (tensor.h, cow_tensor_mutable_data)
 * while a worker reads or copies them. The value does not change, so only
 * TSan can tell. */
static void
stale_write(void *data, int step)
{
	((float *)data)[0] = (float)step;
}
#endif

int
main(void)
{
	struct worker workers[WORKERS] = {0};
	int64_t n = NUMEL;
	cow_tensor_t *params;
	int requests = 0, writes = 0, wrong = 0;

	if (cow_tensor_zeros(COW_DTYPE_FLOAT32, 1, &n, NULL, &params) != COW_OK)
		die("cow_tensor_zeros");
	for (int i = 0; i < WORKERS; i++)
		if (pthread_create(&workers[i].thread, NULL, serve, &workers[i]))
			die("pthread_create");
	for (int step = 1; step <= STEPS; step++) {
		struct request r = {NULL, step};
		void *data;

		/* The owner's update: on even steps after every earlier
		 * request is served, so in place. */
		while (step % 2 == 0 && atomic_load_explicit(&served,
		    memory_order_relaxed) < step - 1)
			sched_yield();
		if (cow_tensor_mutable_data(params, &data) != COW_OK)
			die("cow_tensor_mutable_data (parameters)");
		for (int i = 0; i < NUMEL; i++)
			((float *)data)[i] = (float)step;
		if (cow_tensor_lazy_clone(params, &r.snapshot) != COW_OK)
			die("cow_tensor_lazy_clone");
		push(r);
#ifdef ENGINE_STALE_WRITE
		if (step % 2 == 1)
			stale_write(data, step);
#endif
	}
	for (int i = 0; i < WORKERS; i++)
		push((struct request){NULL, 0});
	for (int i = 0; i < WORKERS; i++) {
		pthread_join(workers[i].thread, NULL);
		requests += workers[i].requests;
		writes += workers[i].writes;
		wrong += workers[i].wrong;
	}
	if (!holds(params, (float)STEPS))
		wrong++;
	cow_tensor_release(params);
	if (wrong || requests != STEPS) {
		fprintf(stderr, "engine: %d wrong snapshots, %d of %d requests\n",
		    wrong, requests, STEPS);
		return 1;
	}
	printf("ok: %d requests, %d snapshot writes\n", requests, writes);
	return 0;
}
