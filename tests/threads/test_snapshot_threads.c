/*
 * Snapshots across threads (include/cowstore/snapshot.h): writer threads
 * stamp every element of their tensors with the step number; between two
 * steps (ordered by barriers) a checkpointer takes a snapshot of every
 * tensor, and the writers go on at once. A persister saves each snapshot
 * on its own thread while the writers keep stamping, in turn as a stream,
 * persist-first (so writers persist what they reach first, on their own
 * threads), and each of the two through a job; a reader calls
 * cow_snapshot_get on the latest snapshot meanwhile, and on every third
 * snapshot releases tensors early while the save runs. A verifier checks
 * that every saved tensor holds the value at its take: every element of
 * it the step the snapshot was taken at (a torn or late tensor is a
 * violation), each get likewise, and the accounting stays within bounds.
 * At the end everything is released and both allocators hold what they
 * held at the start.
 *
 * Usage: test_snapshot_threads [steps] (default 2000). A plain executable
 * (not Criterion), so it also runs under TSan. Prints "N passed, N
 * failed"; exits non-zero on any failure.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cowstore/testing.h>

#include "cow_test.h"

#define WRITERS 3
#define PER 4                  /* tensors per writer: 3 bases, 1 view */
#define TENSORS (WRITERS * PER)
#define QUEUE 1                /* snapshots queued or being saved */
#define EARLY_EVERY 3          /* snapshots whose tensors go early */

struct shot {
	cow_snapshot_t *snap;
	int32_t step;
};

static cow_tensor_t *live[TENSORS];
static char names[TENSORS][16];
static uint64_t storage_bytes;    /* the bases' bytes, all together */
static int steps = 2000;

static pthread_barrier_t stamped, taken;

/* The checkpointer's queue to the persister. */
static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qcond = PTHREAD_COND_INITIALIZER;
static struct shot queue[QUEUE];
static int qhead, qlen;
static bool qdone;

/* The latest snapshot, for the reader (qlock). */
static struct shot latest;

static atomic_int passed, failed;
static atomic_bool stop_reader;

static void
check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
check(bool ok, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		atomic_fetch_add(&passed, 1);
		return;
	}
	if (atomic_fetch_add(&failed, 1) < 10) {
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fprintf(stderr, " (last error: %s)\n", cow_last_error());
	}
}

/* Every int32 of @p (@n bytes) is @step; or, with @holes, 0 (never
 * written) or @step. */
static bool
all_step(const void *p, size_t n, int32_t step, bool holes)
{
	const int32_t *v = p;

	for (size_t i = 0; i < n / sizeof *v; i++)
		if (v[i] != step && !(holes && v[i] == 0))
			return false;
	return true;
}

/* ------------------------------------------------------------------ */
/* Writers and the checkpointer. */

static void *
writer_main(void *arg)
{
	int w = (int)(intptr_t)arg;

	for (int32_t step = 1; step <= steps; step++) {
		for (int k = 0; k < PER - 1; k++)
			check(cow_tensor_fill_(live[w * PER + k], step) ==
			    COW_OK, "writer %d: stamp tensor %d", w, k);
		pthread_barrier_wait(&stamped);
		/* The checkpointer takes the snapshot here. */
		pthread_barrier_wait(&taken);
	}
	return NULL;
}

static void
queue_push(struct shot s)
{
	pthread_mutex_lock(&qlock);
	while (qlen == QUEUE)
		pthread_cond_wait(&qcond, &qlock);
	queue[(qhead + qlen++) % QUEUE] = s;
	/* The reader's reference. */
	if (latest.snap != NULL)
		cow_snapshot_release(latest.snap);
	cow_snapshot_retain(s.snap);
	latest = s;
	pthread_cond_broadcast(&qcond);
	pthread_mutex_unlock(&qlock);
}

static void *
checkpointer_main(void *arg)
{
	const char *np[TENSORS];

	(void)arg;
	for (int i = 0; i < TENSORS; i++)
		np[i] = names[i];
	for (int32_t step = 1; step <= steps; step++) {
		struct shot s = {NULL, step};

		pthread_barrier_wait(&stamped);
		check(cow_snapshot_take(TENSORS, live, np, &s.snap) == COW_OK,
		    "take at step %d", step);
		/* Queued before the writers resume (once the previous save is
		 * done), so that they stamp the next step while this one is
		 * saved: the first writes after the take race with the save
		 * (in persist-first saves the writers persist what they reach
		 * first). */
		if (s.snap != NULL)
			queue_push(s);
		pthread_barrier_wait(&taken);
	}
	pthread_mutex_lock(&qlock);
	qdone = true;
	pthread_cond_broadcast(&qcond);
	pthread_mutex_unlock(&qlock);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The persister and the verifier. */

struct buffer {
	unsigned char *p;
	size_t len, cap;
};

static int
buf_write(void *ctx, const void *data, size_t n)
{
	struct buffer *b = ctx;

	if (n == 0 || n > b->cap - b->len)
		return 1;
	memcpy(b->p + b->len, data, n);
	b->len += n;
	return 0;
}

/* Called from the saver and from writers at once, for disjoint ranges. */
static int
buf_pwrite(void *ctx, const void *data, size_t n, uint64_t off)
{
	struct buffer *b = ctx;

	if (n == 0 || off > b->cap || n > b->cap - off)
		return 1;
	memcpy(b->p + off, data, n);
	return 0;
}

/* Progress as the save reports it (the saver's thread only): the last
 * call's figures, and whether one went back, past the total, or changed
 * the total (never 0 here). */
struct watch {
	uint64_t done, total;
	bool backwards;
};

static void
watch_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct watch *w = ctx;

	w->backwards |= done > total || done < w->done ||
	    (w->total != 0 && total != w->total);
	w->done = done;
	w->total = total;
}

/* Verify a save's bytes: each tensor's all the step (or, for a save that
 * failed, each element the step or never written). */
static void
verify(const struct shot *s, const struct buffer *b, const size_t *order,
    bool complete, const char *how)
{
	size_t off = 0;

	for (size_t k = 0; k < TENSORS; k++) {
		size_t i = order != NULL ? order[k] : k;
		size_t n = (size_t)cow_snapshot_nbytes(s->snap, i);

		check(all_step(b->p + off, n, s->step, !complete),
		    "%s of step %d: tensor %zu (%s) torn or late", how,
		    s->step, i, cow_snapshot_name(s->snap, i));
		off += n;
	}
}

static void
persist_one(const struct shot *s, struct buffer *b)
{
	static size_t reverse[TENSORS];
	cow_snapshot_save_t how = {0};
	cow_snapshot_job_t *job = NULL;
	cow_snapshot_stats_t st;
	struct watch w = {0};
	int kind = s->step % 4;
	bool early = s->step % EARLY_EVERY == 0;
	cow_status_t rc;
	const char *name[4] = {"stream", "persist-first", "stream job",
	    "persist-first job"};

	for (size_t k = 0; k < TENSORS; k++)
		reverse[k] = TENSORS - 1 - k;
	memset(b->p, 0, b->cap);
	b->len = 0;
	how.ctx = b;
	how.progress = watch_progress;
	how.progress_ctx = &w;
	if (kind % 2 == 0) {
		how.mode = COW_SNAPSHOT_STREAM;
		how.write = buf_write;
	} else {
		/* Backwards: the writers reach the first tensors first. */
		how.mode = COW_SNAPSHOT_PERSIST_FIRST;
		how.pwrite = buf_pwrite;
		how.order = reverse;
	}
	if (kind < 2) {
		rc = cow_snapshot_save(s->snap, &how);
	} else if ((rc = cow_snapshot_save_start(s->snap, &how, &job)) ==
	    COW_OK) {
		rc = cow_snapshot_job_wait(job);
		check(cow_snapshot_job_done(job), "job done after wait");
		cow_snapshot_job_release(job);
	}
	if (early)
		check(rc == COW_OK || rc == COW_ERELEASED, "%s of step %d: %s",
		    name[kind], s->step, cow_status_str(rc));
	else
		check(rc == COW_OK, "%s of step %d: %s", name[kind], s->step,
		    cow_status_str(rc));
	verify(s, b, how.order, rc == COW_OK, name[kind]);
	cow_snapshot_stats(s->snap, &st);
	check(st.extra_peak <= storage_bytes, "%s of step %d: extra_peak "
	    "%llu above the %llu bytes of the storages", name[kind], s->step,
	    (unsigned long long)st.extra_peak,
	    (unsigned long long)storage_bytes);
	check(st.writer_copies <= WRITERS * (PER - 1), "writer copies %llu",
	    (unsigned long long)st.writer_copies);
	if (rc == COW_OK) {
		/* held_tensors is the save's own count, exact when it returns.
		 * extra_bytes may still count a writer's copy that ran as the
		 * save released its storage (hook_after_write: counted a
		 * moment longer than held, never less; cow_snapshot_stats:
		 * events running meanwhile may or may not be in it): it must
		 * be 0 once that write ends, within 5 s. */
		for (int ms = 0; st.extra_bytes != 0 && ms < 5000; ms++) {
			nanosleep(&(struct timespec){0, 1000000}, NULL);
			cow_snapshot_stats(s->snap, &st);
		}
		check(st.held_tensors == 0 && st.extra_bytes == 0,
		    "%s of step %d: %llu tensors, %llu extra bytes left",
		    name[kind], s->step, (unsigned long long)st.held_tensors,
		    (unsigned long long)st.extra_bytes);
		check(!w.backwards && w.done == st.bytes && w.total == st.bytes,
		    "%s of step %d: progress %llu of %llu, %s", name[kind],
		    s->step, (unsigned long long)w.done,
		    (unsigned long long)w.total, w.backwards ? "backwards" :
		    "monotone");
	}
}

static void *
persister_main(void *arg)
{
	struct buffer b;

	(void)arg;
	b.cap = (size_t)storage_bytes * 2;
	if ((b.p = malloc(b.cap)) == NULL)
		abort();
	for (;;) {
		struct shot s;

		pthread_mutex_lock(&qlock);
		while (qlen == 0 && !qdone)
			pthread_cond_wait(&qcond, &qlock);
		if (qlen == 0) {
			pthread_mutex_unlock(&qlock);
			break;
		}
		s = queue[qhead];
		/* Still queued while it is saved (the checkpointer waits). */
		pthread_mutex_unlock(&qlock);
		persist_one(&s, &b);
		cow_snapshot_release(s.snap);
		pthread_mutex_lock(&qlock);
		qhead = (qhead + 1) % QUEUE;
		qlen--;
		pthread_cond_broadcast(&qcond);
		pthread_mutex_unlock(&qlock);
	}
	free(b.p);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The reader: gets of the latest snapshot, early releases. */

static void *
reader_main(void *arg)
{
	unsigned seed = 12345;

	(void)arg;
	while (!atomic_load(&stop_reader)) {
		struct shot s;
		size_t i;
		cow_tensor_t *g;
		cow_status_t rc;
		cow_snapshot_stats_t st;

		pthread_mutex_lock(&qlock);
		s = latest;
		if (s.snap != NULL)
			cow_snapshot_retain(s.snap);
		pthread_mutex_unlock(&qlock);
		if (s.snap == NULL)
			continue;
		seed = seed * 1103515245u + 12345u;
		i = (seed >> 16) % TENSORS;
		if ((rc = cow_snapshot_get(s.snap, i, &g)) == COW_OK) {
			const int32_t *p;
			const int64_t *sz = cow_tensor_sizes(g);
			const int64_t *str = cow_tensor_strides(g);
			bool ok = cow_tensor_read_data(g, (const void **)&p) ==
			    COW_OK;

			/* Two dimensions, any strides: walk them. */
			for (int64_t r = 0; ok && r < sz[0]; r++)
				for (int64_t c = 0; ok && c < sz[1]; c++)
					ok = p[r * str[0] + c * str[1]] ==
					    s.step;
			check(ok, "get %zu of step %d: not the value at the "
			    "take", i, s.step);
			/* Writing the copy never reaches the snapshot. */
			if ((seed & 0x300) == 0)
				check(cow_tensor_fill_(g, -1) == COW_OK,
				    "write a get's copy");
			cow_tensor_release(g);
		} else {
			check(rc == COW_ERELEASED, "get %zu of step %d: %s", i,
			    s.step, cow_status_str(rc));
		}
		if (s.step % EARLY_EVERY == 0 && (seed & 0x3000) == 0)
			check(cow_snapshot_release_tensor(s.snap,
			    (seed >> 20) % TENSORS) == COW_OK,
			    "early release");
		cow_snapshot_stats(s.snap, &st);
		check(st.held_tensors <= TENSORS && st.extra_bytes <=
		    storage_bytes, "stats of step %d: %llu held, %llu extra",
		    s.step, (unsigned long long)st.held_tensors,
		    (unsigned long long)st.extra_bytes);
		cow_snapshot_release(s.snap);
	}
	return NULL;
}

/* ------------------------------------------------------------------ */

static void
make_tensors(void)
{
	for (int w = 0; w < WRITERS; w++) {
		for (int k = 0; k < PER - 1; k++) {
			/* 1 KiB to 256 KiB of int32. */
			int64_t rows = 16 << ((w + 2 * k) % 5);
			int64_t cols = 16 << ((2 * w + k) % 5);
			cow_tensor_t **t = &live[w * PER + k];

			if (cow_tensor_zeros(COW_DTYPE_INT32, 2,
			    (int64_t[]){rows, cols}, NULL, t) != COW_OK)
				abort();
			storage_bytes += (uint64_t)(rows * cols) * 4;
			snprintf(names[w * PER + k], sizeof names[0],
			    "w%d.t%d", w, k);
		}
		/* A view: the first tensor transposed (its storage's group
		 * holds two tensors). */
		if (cow_tensor_transpose(live[w * PER], 0, 1,
		    &live[w * PER + PER - 1]) != COW_OK)
			abort();
		snprintf(names[w * PER + PER - 1], sizeof names[0],
		    "w%d.t0T", w);
	}
}

int
main(int argc, char **argv)
{
	pthread_t wt[WRITERS], ct, pt, rt;
	cow_allocator_t *def = cow_allocator_default();
	uint64_t def_live = cow_test_alloc_stats(def).live_bytes;
	cow_stats_t g;

	/* A count of steps; other arguments (memcheck's --jobs) are not. */
	if (argc > 1 && atoi(argv[1]) > 0)
		steps = atoi(argv[1]);
	make_tensors();
	pthread_barrier_init(&stamped, NULL, WRITERS + 1);
	pthread_barrier_init(&taken, NULL, WRITERS + 1);
	pthread_create(&pt, NULL, persister_main, NULL);
	pthread_create(&rt, NULL, reader_main, NULL);
	pthread_create(&ct, NULL, checkpointer_main, NULL);
	for (int w = 0; w < WRITERS; w++)
		pthread_create(&wt[w], NULL, writer_main, (void *)(intptr_t)w);
	for (int w = 0; w < WRITERS; w++)
		pthread_join(wt[w], NULL);
	pthread_join(ct, NULL);
	pthread_join(pt, NULL);
	atomic_store(&stop_reader, true);
	pthread_join(rt, NULL);
	pthread_barrier_destroy(&stamped);
	pthread_barrier_destroy(&taken);
	cow_stats_get(&g);
	/* The writers persisted some tensors themselves and copied others;
	 * the test goes on either way, but says how many. */
	printf("%d steps: %llu snapshot copies, %llu writer persists\n",
	    steps, (unsigned long long)g.snapshot_copies,
	    (unsigned long long)g.snapshot_persists);
	if (latest.snap != NULL)
		cow_snapshot_release(latest.snap);
	for (int i = 0; i < TENSORS; i++) {
		check(cow_storage_share_count(cow_tensor_storage(live[i])) == 1,
		    "tensor %d still shared at the end", i);
		cow_tensor_release(live[i]);
	}
	check(cow_test_alloc_stats(def).live_bytes == def_live,
	    "the default allocator holds %lld bytes more than at the start",
	    (long long)(cow_test_alloc_stats(def).live_bytes - def_live));
	printf("%d passed, %d failed\n", atomic_load(&passed),
	    atomic_load(&failed));
	return atomic_load(&failed) == 0 ? 0 : 1;
}
