/*
 * scn_checkpoint.c - snapshots of a whole tensor set taken at step
 * boundaries and persisted while the writers go on (include/cowstore/
 * snapshot.h, docs/snapshots.md; docs/stress.md says what is checked).
 *
 * Thread 0 is the checkpointer and verifier; every other team thread is a
 * writer that owns a few tensors (4 KiB to 16 MiB, mixed dtypes; a plain
 * tensor, two halves of one storage, or a transposed view) and stamps
 * every element of each with the step number (the round) in every step.
 * At a step boundary (all writers done with the step) the checkpointer
 * takes a snapshot of every writer's tensors and the writers resume at
 * once. A persister saves it on another thread, the library's (a job) or
 * the scenario's own, while the writers stamp the next steps:
 * COW_SNAPSHOT_STREAM into memory or a file, or COW_SNAPSHOT_PERSIST_FIRST
 * through pwrite into a file or memory, the tensors released as written.
 * Launched at the take, just after the writers resumed, or a whole step
 * later (when every writer has already written every tensor again); in the
 * snapshot's order or a random one; now and then kept (verified through
 * cow_snapshot_get a step later, then released tensor by tensor) or
 * cancelled (the rest released early while the writers write).
 *
 * When the save is over the checkpointer reads back what was persisted:
 * every element of every tensor must carry the snapshot's step, or the
 * snapshot was torn. At the next step boundary (writers paused again) it
 * checks the accounting where it is exact, then releases the snapshot. One
 * snapshot is in flight at a time, so every copy a writer's write makes is
 * one the snapshot caused.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cowstore/ops.h>
#include <cowstore/snapshot.h>
#include <cowstore/tensor.h>

#include "harness.h"

#define CK_ITEMS 3                           /* storages per writer */
#define CK_MIN_BYTES ((size_t)4 << 10)
#define CK_BIG_BYTES ((size_t)16 << 20)      /* writer 1's first item */
#define CK_MAX_BYTES ((size_t)4 << 20)       /* every other item */
#define CK_STATE_BYTES ((size_t)48 << 20)    /* all storages, at most */
#define CK_STRIDED_MAX ((size_t)1 << 20)     /* a transposed item */
#define CK_HEADER_MAX 4096                   /* persist-first base offset */
#define CK_VERIFY_CHUNK ((size_t)1 << 20)    /* read back a file by this */
#define CK_PATTERN ((size_t)64 << 10)        /* a multiple of every itemsize */
#define CK_HEADER_BYTE 0xc5

enum ck_kind { CK_PLAIN, CK_HALVES, CK_TRANSPOSED };
enum ck_mode { CK_STREAM_MEMORY, CK_STREAM_FILE, CK_PERSIST_FILE,
    CK_PERSIST_MEMORY, CK_NMODES };
enum ck_launch { CK_AT_TAKE, CK_AFTER_RESUME, CK_LATE, CK_NLAUNCH };
enum ck_role { CK_OTHER, CK_WRITER, CK_CHECKPOINTER };

/* Which thread this is: pwrite calls tell a writer's from the saver's. */
static _Thread_local enum ck_role ck_role;
/* A writer's generator, for the callbacks a writer's write runs. */
static _Thread_local struct stress_rng *ck_tls_rng;

/* One storage of a writer's, and the tensors over it in the snapshot. */
struct ck_item {
	enum ck_kind kind;
	cow_dtype_t dtype;
	size_t nbytes;           /* its storage's */
	int64_t rows, cols;      /* rows 0: one dimension of cols */
	cow_tensor_t *base;      /* the whole storage, row-major */
	cow_tensor_t *part[2];   /* what the snapshot takes */
	unsigned nparts;
};

/* The scenario's own persister: one save at a time, posted by thread 0.
 * cond is broadcast when a save is posted, when one is done, and at the
 * end (quit). */
struct ck_persister {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	cow_snapshot_t *snap;    /* lock: the save to run; NULL: none */
	cow_snapshot_save_t how; /* lock */
	bool done, quit;         /* lock */
	cow_status_t status;     /* lock, once done */
	char message[256];       /* lock, once done */
};

/*
 * The checkpoint in flight. Thread 0 owns it; the save's callbacks write
 * the fields marked so (the saving thread, or writers for the atomics),
 * and thread 0 reads them once the save is over (its end orders them).
 */
struct ck_save {
	struct stress_run *run;
	struct ck_state *st;
	bool active, launched, done, cancel_sent, late_recorded;
	cow_snapshot_t *snap;
	uint64_t step;            /* what its tensors hold */
	uint64_t taken_round;
	enum ck_mode mode;
	enum ck_launch launch;
	bool job_run, keep, cancel, shuffled;
	cow_snapshot_job_t *job;
	cow_status_t status;
	char message[256];
	size_t *order;            /* position -> tensor */
	uint64_t *start;          /* position -> bytes before it; [n]: total */
	uint64_t base;            /* persist-first: the header's bytes */
	_Atomic uint64_t *written;  /* persist-first: bytes per position */
	_Atomic bool *by_writer;    /* persist-first: a writer wrote it */
	uint64_t sink_len;        /* stream (saving thread): bytes so far */
	uint64_t last_done;       /* progress (saving thread) */
	uint64_t progress_calls;  /* saving thread */
	struct stress_rng rng;    /* saving thread */
	cow_stats_t stats0;       /* at the take (writers paused) */
	cow_snapshot_stats_t late; /* at a late launch (writers paused) */
};

struct ck_state {
	unsigned writers;
	struct ck_item *items;    /* writers x CK_ITEMS, writer w's at
	                             (w - 1) * CK_ITEMS */
	size_t nitems, count;     /* storages; tensors in a snapshot */
	cow_tensor_t **tensors;   /* count: the snapshot's tensors */
	const char **names;
	char (*name_buf)[32];
	size_t *item_of;          /* tensor -> item */
	unsigned char *by_writer; /* item -> 1 a writer, 2 the saver
	                             persisted its tensors (ck_account) */
	uint64_t state_bytes;     /* every storage's bytes */
	uint64_t total;           /* a snapshot's bytes (what a save writes) */
	unsigned char *sink;      /* total + CK_HEADER_MAX */
	unsigned char *scratch;   /* CK_VERIFY_CHUNK */
	unsigned char *pattern;   /* CK_PATTERN */
	int fd;                   /* an unlinked temporary file */
	struct ck_persister persister;
	bool persister_started;
	struct ck_save save;
	uint64_t base_allocs;
	cow_stats_t stats_start;
	/* Thread 0 only. */
	uint64_t n_ckpt, n_mode[CK_NMODES], n_launch[CK_NLAUNCH], n_job;
	uint64_t n_kept, n_cancelled, n_copies, n_persists, n_bytes;
	uint64_t groups_rewritten; /* groups of snapshots a whole step old */
};

/* ---- dtypes and stamps ------------------------------------------------- */

static const cow_dtype_t ck_dtypes[] = {
	COW_DTYPE_FLOAT32, COW_DTYPE_FLOAT64, COW_DTYPE_INT32,
	COW_DTYPE_INT64, COW_DTYPE_INT16, COW_DTYPE_UINT8, COW_DTYPE_FLOAT16,
	COW_DTYPE_BFLOAT16, COW_DTYPE_COMPLEX64, COW_DTYPE_UINT32,
	COW_DTYPE_INT8, COW_DTYPE_UINT16, COW_DTYPE_UINT64,
	COW_DTYPE_COMPLEX128,
};

/* Step s is stamped as s modulo this (a value the dtype holds exactly,
 * and consecutive steps always differ). */
static uint64_t
ck_modulus(cow_dtype_t dt)
{
	switch (dt) {
	case COW_DTYPE_UINT8:
	case COW_DTYPE_BFLOAT16:
		return 251;
	case COW_DTYPE_INT8:
		return 127;
	case COW_DTYPE_FLOAT16:
		return 2039;
	case COW_DTYPE_INT16:
		return 32749;
	case COW_DTYPE_UINT16:
		return 65521;
	case COW_DTYPE_FLOAT32:
	case COW_DTYPE_COMPLEX64:
		return 16777213;
	default:
		return 2147483647;
	}
}

static double
ck_stamp(cow_dtype_t dt, uint64_t step)
{
	return (double)(step % ck_modulus(dt));
}

/* The bytes of one element stamped with @step, as the library converts
 * the stamp (cow_tensor_full). */
static bool
ck_element(struct stress_run *run, cow_dtype_t dt, uint64_t step,
    unsigned char *out)
{
	cow_tensor_t *t;
	bool ok;

	if (!stress_check(run, cow_tensor_full(dt, 0, NULL, ck_stamp(dt, step),
	    NULL, &t) == COW_OK, "cow_tensor_full(%s): %s", cow_dtype_name(dt),
	    cow_last_error()))
		return false;
	ok = cow_tensor_const_data(t) != NULL;
	if (ok)
		memcpy(out, cow_tensor_const_data(t), cow_dtype_size(dt));
	cow_tensor_release(t);
	return ok;
}

/* The value an element's bytes hold (for a report). */
static double
ck_decode(cow_dtype_t dt, const unsigned char *p)
{
	cow_tensor_t *t;
	double x = -1;

	if (cow_tensor_from_data(dt, 0, NULL, p, NULL, &t) != COW_OK)
		return x;
	if (cow_tensor_get_f64(t, NULL, &x) != COW_OK)
		x = -1;
	cow_tensor_release(t);
	return x;
}

/* ---- the writers' tensors ---------------------------------------------- */

static bool
ck_item_make(struct stress_run *run, struct ck_item *it, unsigned w,
    unsigned j, char (*names)[32], const char **namep,
    cow_tensor_t **tensors)
{
	size_t es = cow_dtype_size(it->dtype);
	int64_t numel = (int64_t)(it->nbytes / es), sizes[2];
	int ndim;

	if (it->kind == CK_PLAIN && numel % 7 == 0)
		it->rows = 0; /* some are one-dimensional */
	else
		it->rows = 2 + (int64_t)(numel % 15);
	if (it->rows > numel / 2)
		it->rows = 2;
	it->cols = it->rows == 0 ? numel : numel / it->rows;
	ndim = it->rows == 0 ? 1 : 2;
	sizes[0] = it->rows == 0 ? it->cols : it->rows;
	sizes[1] = it->cols;
	it->nbytes = (size_t)(it->rows == 0 ? 1 : it->rows) *
	    (size_t)it->cols * es;
	if (!stress_check(run, cow_tensor_zeros(it->dtype, ndim, sizes,
	    stress_allocator(), &it->base) == COW_OK, "cow_tensor_zeros: %s",
	    cow_last_error()))
		return false;
	switch (it->kind) {
	case CK_PLAIN:
		it->nparts = 1;
		cow_tensor_retain(it->base);
		it->part[0] = it->base;
		snprintf(names[0], sizeof names[0], "w%u.i%u", w, j);
		break;
	case CK_HALVES:
		it->nparts = 2;
		if (cow_tensor_narrow(it->base, 0, 0, it->rows / 2,
		    &it->part[0]) != COW_OK ||
		    cow_tensor_narrow(it->base, 0, it->rows / 2,
		    it->rows - it->rows / 2, &it->part[1]) != COW_OK)
			return stress_check(run, false, "cow_tensor_narrow: %s",
			    cow_last_error());
		snprintf(names[0], sizeof names[0], "w%u.i%u.lo", w, j);
		snprintf(names[1], sizeof names[1], "w%u.i%u.hi", w, j);
		break;
	case CK_TRANSPOSED:
		it->nparts = 1;
		if (cow_tensor_transpose(it->base, 0, 1, &it->part[0]) !=
		    COW_OK)
			return stress_check(run, false, "cow_tensor_transpose: "
			    "%s", cow_last_error());
		snprintf(names[0], sizeof names[0], "w%u.i%u.T", w, j);
		break;
	}
	for (unsigned p = 0; p < it->nparts; p++) {
		namep[p] = names[p];
		tensors[p] = it->part[p];
	}
	return true;
}

/* Sizes, kinds and dtypes of every writer's storages, from the seed:
 * writer 1's first is 16 MiB, every other one 4 KiB to 4 MiB
 * (log-uniform), all together at most CK_STATE_BYTES. */
static void
ck_plan(struct ck_state *st, struct stress_rng *r)
{
	size_t used = 0;

	for (size_t k = 0; k < st->nitems; k++) {
		struct ck_item *it = &st->items[k];
		size_t left = st->nitems - k - 1, room, bytes;

		if (k == 0) {
			bytes = CK_BIG_BYTES;
			it->dtype = COW_DTYPE_FLOAT32;
		} else {
			bytes = CK_MIN_BYTES << stress_rng_below(r, 11);
			bytes += stress_rng_below(r, bytes);
			if (bytes > CK_MAX_BYTES)
				bytes = CK_MAX_BYTES;
			it->dtype = ck_dtypes[stress_rng_below(r,
			    sizeof ck_dtypes / sizeof ck_dtypes[0])];
		}
		room = used + left * CK_MIN_BYTES < CK_STATE_BYTES ?
		    CK_STATE_BYTES - used - left * CK_MIN_BYTES : 0;
		if (bytes > room)
			bytes = room > CK_MIN_BYTES ? room : CK_MIN_BYTES;
		it->nbytes = bytes;
		it->kind = k == 0 ? CK_PLAIN :
		    (enum ck_kind)stress_rng_below(r, bytes <= CK_STRIDED_MAX ?
		    3 : 2);
		used += bytes;
	}
}

/* Stamp every element of @it with @step: whole, or in pieces (the
 * tensor is torn between the pieces, as a writer's tensors are mid-step;
 * no snapshot is taken then). */
static void
ck_stamp_item(struct stress_run *run, struct ck_item *it, uint64_t step,
    struct stress_rng *rng)
{
	double v = ck_stamp(it->dtype, step);
	cow_status_t rc = COW_OK;
	unsigned a;

	switch (it->kind) {
	case CK_PLAIN:
		if (it->rows >= 4 && stress_rng_below(rng, 2) == 0) {
			int64_t pieces = 2 + (int64_t)stress_rng_below(rng, 3);
			int64_t at = 0;

			for (int64_t p = 0; p < pieces && rc == COW_OK; p++) {
				int64_t len = p + 1 == pieces ? it->rows - at :
				    it->rows / pieces;
				cow_tensor_t *n;

				rc = cow_tensor_narrow(it->base, 0, at, len,
				    &n);
				if (rc == COW_OK) {
					rc = cow_tensor_fill_(n, v);
					cow_tensor_release(n);
				}
				at += len;
				stress_perturb(rng);
			}
		} else {
			rc = cow_tensor_fill_(it->base, v);
		}
		break;
	case CK_HALVES:
		a = (unsigned)stress_rng_below(rng, 2);
		rc = cow_tensor_fill_(it->part[a], v);
		stress_perturb(rng);
		if (rc == COW_OK)
			rc = cow_tensor_fill_(it->part[1 - a], v);
		break;
	case CK_TRANSPOSED:
		rc = cow_tensor_fill_(stress_rng_below(rng, 2) ? it->part[0] :
		    it->base, v);
		break;
	}
	stress_check(run, rc == COW_OK, "stamping step %" PRIu64 " into a %s "
	    "tensor: %s", step, cow_dtype_name(it->dtype), cow_last_error());
}

/* ---- the persister ----------------------------------------------------- */

static void *
ck_persister_main(void *arg)
{
	struct ck_persister *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		cow_snapshot_t *snap;
		cow_snapshot_save_t how;
		cow_status_t rc;

		while (!p->quit && p->snap == NULL)
			pthread_cond_wait(&p->cond, &p->lock);
		if (p->snap == NULL)
			break;
		snap = p->snap;
		how = p->how;
		pthread_mutex_unlock(&p->lock);
		rc = cow_snapshot_save(snap, &how);
		pthread_mutex_lock(&p->lock);
		p->status = rc;
		snprintf(p->message, sizeof p->message, "%s",
		    rc == COW_OK ? "" : cow_last_error());
		p->snap = NULL;
		p->done = true;
		pthread_cond_broadcast(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static const char *
ck_mode_name(enum ck_mode m)
{
	static const char *const names[] = {"stream to memory",
	    "stream to a file", "persist-first to a file",
	    "persist-first to memory"};

	return names[m];
}

static const char *
ck_launch_name(enum ck_launch l)
{
	static const char *const names[] = {"launched at the take",
	    "launched as the writers resumed", "launched a step late"};

	return names[l];
}

/* What the checkpoint in flight is, for a violation's message. */
static const char *
ck_describe(const struct ck_save *sv, char *buf, size_t len)
{
	snprintf(buf, len, "the snapshot of step %" PRIu64 ", %s by %s, "
	    "%s%s%s%s", sv->step, ck_mode_name(sv->mode),
	    sv->job_run ? "a job" : "the persister thread",
	    ck_launch_name(sv->launch),
	    sv->shuffled ? ", in a random order" : "",
	    sv->keep ? ", kept" : "", sv->cancel ? ", cancelled" : "");
	return buf;
}

/* Now and then the saving thread (or a writer persisting) takes its
 * time, so that the writers overtake it. */
static void
ck_slow(struct ck_save *sv)
{
	struct stress_rng *r = ck_role == CK_WRITER ? ck_tls_rng : &sv->rng;

	if (r == NULL)
		return;
	stress_perturb(r);
	if (stress_rng_below(r, 16) == 0) {
		struct timespec ts = {0, (long)(50000 +
		    stress_rng_below(r, 400000))};

		nanosleep(&ts, NULL);
	}
}

static int
ck_write(void *ctx, const void *data, size_t n)
{
	struct ck_save *sv = ctx;
	struct ck_state *st = sv->st;

	stress_check(sv->run, ck_role == CK_OTHER, "the write callback ran "
	    "on %s thread, not the saving thread", ck_role == CK_WRITER ?
	    "a writer's" : "the checkpointer's");
	if (!stress_check(sv->run, n > 0 && sv->sink_len + n <= st->total,
	    "the stream wrote %zu bytes at %" PRIu64 " of a snapshot of %"
	    PRIu64, n, sv->sink_len, st->total))
		return EFBIG;
	if (sv->mode == CK_STREAM_MEMORY) {
		memcpy(st->sink + sv->sink_len, data, n);
	} else {
		const unsigned char *p = data;

		for (size_t done = 0; done < n;) {
			ssize_t w = write(st->fd, p + done, n - done);

			if (w < 0 && errno != EINTR)
				return errno;
			if (w > 0)
				done += (size_t)w;
		}
	}
	sv->sink_len += n;
	ck_slow(sv);
	return 0;
}

/* The position whose bytes hold offset @rel (bytes after the header). */
static size_t
ck_position(const struct ck_save *sv, uint64_t rel)
{
	size_t lo = 0, hi = sv->st->count;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (sv->start[mid] <= rel)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static int
ck_pwrite(void *ctx, const void *data, size_t n, uint64_t off)
{
	struct ck_save *sv = ctx;
	struct ck_state *st = sv->st;
	uint64_t rel, prev;
	size_t k;

	stress_check(sv->run, ck_role != CK_CHECKPOINTER, "the pwrite callback "
	    "ran on the checkpointer's thread");
	if (!stress_check(sv->run, n > 0 && off >= sv->base &&
	    off - sv->base + n <= st->total, "pwrite of %zu bytes at %" PRIu64
	    ": outside the snapshot's %" PRIu64 " bytes after a %" PRIu64
	    "-byte header", n, off, st->total, sv->base))
		return EINVAL;
	rel = off - sv->base;
	k = ck_position(sv, rel);
	if (!stress_check(sv->run, rel + n <= sv->start[k + 1], "pwrite of %zu "
	    "bytes at %" PRIu64 " crosses the end of tensor \"%s\" (position "
	    "%zu)", n, off, st->names[sv->order[k]], k))
		return EINVAL;
	prev = atomic_fetch_add(&sv->written[k], n);
	stress_check(sv->run, prev == rel - sv->start[k], "tensor \"%s\" "
	    "(position %zu) written twice or out of order: %zu bytes at %"
	    PRIu64 " of it after %" PRIu64 " bytes were written",
	    st->names[sv->order[k]], k, n, rel - sv->start[k], prev);
	if (ck_role == CK_WRITER)
		atomic_store(&sv->by_writer[k], true);
	if (sv->mode == CK_PERSIST_MEMORY) {
		memcpy(st->sink + off, data, n);
	} else {
		const unsigned char *p = data;

		for (size_t done = 0; done < n;) {
			ssize_t w = pwrite(st->fd, p + done, n - done,
			    (off_t)(off + done));

			if (w < 0 && errno != EINTR)
				return errno;
			if (w > 0)
				done += (size_t)w;
		}
	}
	ck_slow(sv);
	return 0;
}

static void
ck_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct ck_save *sv = ctx;

	stress_check(sv->run, ck_role == CK_OTHER && total == sv->st->total &&
	    done >= sv->last_done && done <= total, "progress %" PRIu64 " of %"
	    PRIu64 " after %" PRIu64 " (a snapshot of %" PRIu64 " bytes; on %s "
	    "thread)", done, total, sv->last_done, sv->st->total,
	    ck_role == CK_OTHER ? "the saving" : "another");
	sv->last_done = done;
	sv->progress_calls++;
}

/* ---- verification ------------------------------------------------------ */

/* The offset of the first of @n bytes at @p (whole elements of @es bytes)
 * that is not a copy of element @elem, or @n; @pattern holds CK_PATTERN
 * bytes of copies of it. */
static size_t
ck_first_bad(const unsigned char *p, size_t n, const unsigned char *elem,
    size_t es, const unsigned char *pattern)
{
	for (size_t c = 0; c < n; c += CK_PATTERN) {
		size_t m = n - c < CK_PATTERN ? n - c : CK_PATTERN;
		size_t e = 0;

		stress_beat(c / CK_PATTERN);
		if (memcmp(p + c, pattern, m) == 0)
			continue;
		while (e + es <= m && memcmp(p + c + e, elem, es) == 0)
			e += es;
		return c + e;
	}
	return n;
}

static void
ck_pattern_fill(unsigned char *pattern, const unsigned char *elem, size_t es)
{
	for (size_t f = 0; f < CK_PATTERN; f += es)
		memcpy(pattern + f, elem, es);
}

/*
 * Check @len bytes of the tensor at position @k of the save, persisted at
 * @at (memory: the sink; else the file): every element must hold @elem
 * (the stamp of the snapshot's step). A torn snapshot is a violation.
 */
static bool
ck_verify_range(struct stress_run *run, struct ck_save *sv, size_t k,
    uint64_t at, uint64_t len, const unsigned char *elem)
{
	struct ck_state *st = sv->st;
	size_t i = sv->order[k];
	cow_dtype_t dt = cow_tensor_dtype(st->tensors[i]);
	size_t es = cow_dtype_size(dt);
	bool memory = sv->mode == CK_STREAM_MEMORY ||
	    sv->mode == CK_PERSIST_MEMORY;
	char what[256];

	ck_pattern_fill(st->pattern, elem, es);
	for (uint64_t off = 0; off < len;) {
		size_t n = len - off < CK_VERIFY_CHUNK ?
		    (size_t)(len - off) : CK_VERIFY_CHUNK;
		const unsigned char *p;
		size_t bad;

		if (memory) {
			p = st->sink + at + off;
		} else {
			ssize_t got = pread(st->fd, st->scratch, n,
			    (off_t)(at + off));

			if (!stress_check(run, got == (ssize_t)n,
			    "reading back %zu bytes at %" PRIu64 " of the "
			    "file: %s", n, at + off, got < 0 ?
			    strerror(errno) : "short read"))
				return false;
			p = st->scratch;
		}
		if ((bad = ck_first_bad(p, n, elem, es, st->pattern)) < n)
			return stress_check(run, false, "torn snapshot: tensor "
			    "\"%s\" (%s, %" PRIu64 " bytes, position %zu of "
			    "the save) of %s: element %" PRIu64 " holds %g "
			    "where the step's stamp is %g", st->names[i],
			    cow_dtype_name(dt),
			    cow_snapshot_nbytes(sv->snap, i), k,
			    ck_describe(sv, what, sizeof what),
			    (off + bad) / es, ck_decode(dt, p + bad),
			    ck_stamp(dt, sv->step));
		off += n;
	}
	stress_checks_passed(run, 1);
	return true;
}

/* Read back what the save persisted and check it. */
static void
ck_verify(struct stress_run *run, struct ck_save *sv)
{
	struct ck_state *st = sv->st;
	bool ok = sv->status == COW_OK, stream = sv->mode < CK_PERSIST_FILE;
	unsigned char elem[COW_DTYPE_COUNT][16];
	bool have[COW_DTYPE_COUNT] = {false};
	char what[256];

	if (stream)
		stress_check(run, ok ? sv->sink_len == st->total :
		    sv->sink_len <= st->total, "the stream wrote %" PRIu64
		    " bytes of %" PRIu64 " (%s)", sv->sink_len, st->total,
		    ck_describe(sv, what, sizeof what));
	if (ok)
		stress_check(run, sv->progress_calls > 0 &&
		    sv->last_done == st->total, "the last progress was %" PRIu64
		    " of %" PRIu64 " bytes after %" PRIu64 " calls (%s)",
		    sv->last_done, st->total, sv->progress_calls,
		    ck_describe(sv, what, sizeof what));
	for (size_t k = 0; k < st->count && !stress_stopping(run); k++) {
		size_t i = sv->order[k];
		cow_dtype_t dt = cow_tensor_dtype(st->tensors[i]);
		uint64_t nb = sv->start[k + 1] - sv->start[k], len;

		if (stream) {
			len = sv->sink_len <= sv->start[k] ? 0 :
			    sv->sink_len - sv->start[k];
		} else {
			len = atomic_load(&sv->written[k]);
			stress_check(run, ok ? len == nb : len <= nb, "tensor "
			    "\"%s\": %" PRIu64 " of its %" PRIu64 " bytes were "
			    "persisted (%s)", st->names[i], len, nb,
			    ck_describe(sv, what, sizeof what));
		}
		if (len > nb)
			len = nb;
		len -= len % cow_dtype_size(dt);
		if (len == 0)
			continue;
		if (!have[dt]) {
			if (!ck_element(run, dt, sv->step, elem[dt]))
				return;
			have[dt] = true;
		}
		if (!ck_verify_range(run, sv, k, sv->base + sv->start[k], len,
		    elem[dt]))
			return;
		sv->st->n_bytes += len;
	}
	if (!stream && sv->base > 0) { /* the header is left alone */
		unsigned char *h = st->scratch;

		if (sv->mode == CK_PERSIST_MEMORY)
			h = st->sink;
		else if (pread(st->fd, h, sv->base, 0) != (ssize_t)sv->base)
			memset(h, 0, sv->base);
		for (uint64_t b = 0; b < sv->base; b++)
			if (!stress_check(run, h[b] == CK_HEADER_BYTE, "byte %"
			    PRIu64 " of the %" PRIu64 "-byte header was "
			    "overwritten (%s)", b, sv->base,
			    ck_describe(sv, what, sizeof what)))
				break;
	}
}

/* A tensor the snapshot still holds (kept, or left by a cancelled save),
 * read through cow_snapshot_get: the snapshot's own values, whatever the
 * writers wrote since the take. A get tensor lives only while the
 * snapshot holds the storage, so every copy a write makes meanwhile is
 * still the snapshot's. */
static void
ck_verify_held(struct stress_run *run, struct ck_save *sv, size_t i)
{
	struct ck_state *st = sv->st;
	cow_tensor_t *t, *c;
	cow_dtype_t dt = cow_tensor_dtype(st->tensors[i]);
	unsigned char elem[16];
	size_t es = cow_dtype_size(dt);
	const unsigned char *p;
	size_t n, bad;
	char what[256];

	if (!stress_check(run, cow_snapshot_get(sv->snap, i, &t) == COW_OK,
	    "cow_snapshot_get(%zu): %s", i, cow_last_error()))
		return;
	/* A contiguous copy, to compare bytes in one sweep. */
	if (!stress_check(run, cow_tensor_contiguous(t, &c) == COW_OK,
	    "cow_tensor_contiguous: %s", cow_last_error()) ||
	    !ck_element(run, dt, sv->step, elem)) {
		cow_tensor_release(t);
		return;
	}
	p = cow_tensor_const_data(c);
	n = (size_t)cow_tensor_numel(c) * es;
	ck_pattern_fill(st->pattern, elem, es);
	if ((bad = ck_first_bad(p, n, elem, es, st->pattern)) < n)
		stress_check(run, false, "torn snapshot: tensor \"%s\" (%s) "
		    "of %s, read through cow_snapshot_get after the writers "
		    "moved on: element %zu holds %g where the step's stamp is "
		    "%g", st->names[i], cow_dtype_name(dt), ck_describe(sv,
		    what, sizeof what), bad / es, ck_decode(dt, p + bad),
		    ck_stamp(dt, sv->step));
	else
		stress_checks_passed(run, 1);
	cow_tensor_release(c);
	cow_tensor_release(t);
}

/* ---- the checkpointer -------------------------------------------------- */

static void
ck_save_free(struct ck_save *sv)
{
	free(sv->order);
	free(sv->start);
	free((void *)sv->written);
	free((void *)sv->by_writer);
	sv->order = NULL;
	sv->start = NULL;
	sv->written = NULL;
	sv->by_writer = NULL;
}

/* Take the snapshot of step @step (writers paused) and decide how it is
 * saved. */
static bool
ck_take(struct stress_run *run, struct ck_state *st, struct stress_rng *r,
    uint64_t step)
{
	struct ck_save *sv = &st->save;
	cow_snapshot_stats_t ss;
	size_t n = st->count;

	memset(sv, 0, sizeof *sv);
	sv->run = run;
	sv->st = st;
	sv->step = step;
	sv->taken_round = step;
	sv->mode = (enum ck_mode)stress_rng_below(r, CK_NMODES);
	sv->launch = (enum ck_launch)stress_rng_below(r, CK_NLAUNCH);
	sv->job_run = stress_rng_below(r, 2) == 0;
	sv->keep = stress_rng_below(r, 4) == 0;
	sv->cancel = stress_rng_below(r, 8) == 0;
	sv->shuffled = stress_rng_below(r, 2) == 0;
	sv->base = sv->mode >= CK_PERSIST_FILE ? 1 + stress_rng_below(r,
	    CK_HEADER_MAX) : 0;
	stress_rng_init(&sv->rng, run->seed, step, 0xc5);
	sv->order = malloc(n * sizeof *sv->order);
	sv->start = malloc((n + 1) * sizeof *sv->start);
	sv->written = calloc(n, sizeof *sv->written);
	sv->by_writer = calloc(n, sizeof *sv->by_writer);
	if (sv->order == NULL || sv->start == NULL || sv->written == NULL ||
	    sv->by_writer == NULL)
		abort();
	for (size_t k = 0; k < n; k++)
		sv->order[k] = k;
	for (size_t k = n; sv->shuffled && k > 1; k--) {
		size_t j = (size_t)stress_rng_below(r, k), t = sv->order[k - 1];

		sv->order[k - 1] = sv->order[j];
		sv->order[j] = t;
	}
	sv->start[0] = 0;
	for (size_t k = 0; k < n; k++)
		sv->start[k + 1] = sv->start[k] +
		    cow_tensor_nbytes(st->tensors[sv->order[k]]);
	cow_stats_get(&sv->stats0);
	if (!stress_check(run, cow_snapshot_take(n, st->tensors, st->names,
	    &sv->snap) == COW_OK, "cow_snapshot_take: %s", cow_last_error())) {
		ck_save_free(sv);
		return false;
	}
	sv->active = true;
	cow_snapshot_stats(sv->snap, &ss);
	stress_check(run, cow_snapshot_count(sv->snap) == n &&
	    ss.tensors == n && ss.bytes == st->total && ss.held_tensors == n &&
	    ss.extra_bytes == 0 && ss.writer_copies == 0 &&
	    ss.pinned_copies == 0, "a new snapshot of %zu tensors (%" PRIu64
	    " bytes) says %zu tensors, %" PRIu64 " bytes, %" PRIu64 " held, %"
	    PRIu64 " extra bytes, %" PRIu64 " writer copies, %" PRIu64
	    " pinned copies", n, st->total, cow_snapshot_count(sv->snap),
	    ss.bytes, ss.held_tensors, ss.extra_bytes, ss.writer_copies,
	    ss.pinned_copies);
	st->n_ckpt++;
	st->n_mode[sv->mode]++;
	st->n_launch[sv->launch]++;
	st->n_job += sv->job_run;
	return true;
}

/* Start the save on a job or the persister. */
static void
ck_launch(struct stress_run *run, struct ck_state *st, struct ck_save *sv)
{
	cow_snapshot_save_t how;
	struct ck_persister *p = &st->persister;

	memset(&how, 0, sizeof how);
	if (sv->mode < CK_PERSIST_FILE) {
		how.mode = COW_SNAPSHOT_STREAM;
		how.write = ck_write;
	} else {
		how.mode = COW_SNAPSHOT_PERSIST_FIRST;
		how.pwrite = ck_pwrite;
		how.base_offset = sv->base;
	}
	if (sv->mode == CK_STREAM_FILE || sv->mode == CK_PERSIST_FILE) {
		if (!stress_check(run, ftruncate(st->fd, 0) == 0 &&
		    lseek(st->fd, 0, SEEK_SET) == 0, "truncating the "
		    "checkpoint file: %s", strerror(errno)))
			return;
	}
	if (sv->mode == CK_PERSIST_MEMORY) {
		memset(st->sink, CK_HEADER_BYTE, sv->base);
	} else if (sv->mode == CK_PERSIST_FILE) {
		memset(st->scratch, CK_HEADER_BYTE, sv->base);
		if (!stress_check(run, pwrite(st->fd, st->scratch, sv->base,
		    0) == (ssize_t)sv->base, "writing the checkpoint file's "
		    "header: %s", strerror(errno)))
			return;
	}
	how.ctx = sv;
	how.order = sv->shuffled ? sv->order : NULL;
	how.progress = ck_progress;
	how.progress_ctx = sv;
	how.keep = sv->keep;
	sv->launched = true;
	if (sv->job_run) {
		if (!stress_check(run, cow_snapshot_save_start(sv->snap, &how,
		    &sv->job) == COW_OK, "cow_snapshot_save_start: %s",
		    cow_last_error())) {
			sv->done = true;
			sv->status = COW_EINVAL;
		}
		return;
	}
	pthread_mutex_lock(&p->lock);
	p->how = how;
	p->snap = sv->snap;
	p->done = false;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/* Read every tensor @sv still holds through cow_snapshot_get, then
 * release every tensor, in a random order. */
static void
ck_release_rest(struct stress_run *run, struct ck_save *sv,
    struct stress_rng *r)
{
	size_t n = sv->st->count, at = (size_t)stress_rng_below(r, n);

	for (size_t i = 0; i < n && !stress_stopping(run); i++)
		if (cow_snapshot_is_held(sv->snap, i))
			ck_verify_held(run, sv, i);
	for (size_t k = 0; k < n; k++) {
		size_t i = (at + k) % n;

		stress_check(run, cow_snapshot_release_tensor(sv->snap, i) ==
		    COW_OK, "cow_snapshot_release_tensor(%zu): %s", i,
		    cow_last_error());
		stress_check(run, !cow_snapshot_is_held(sv->snap, i),
		    "tensor %zu is held after cow_snapshot_release_tensor", i);
	}
}

/* The save has ended (or thread 0 waits for it, @wait): its status, then
 * what it persisted. */
static void
ck_finish(struct stress_run *run, struct ck_state *st, struct ck_save *sv,
    struct stress_rng *r, bool wait)
{
	struct ck_persister *p = &st->persister;
	char what[256];

	if (sv->done || !sv->launched)
		return;
	if (sv->job_run) {
		if (!wait && !cow_snapshot_job_done(sv->job))
			return;
		sv->status = cow_snapshot_job_wait(sv->job);
		snprintf(sv->message, sizeof sv->message, "%s",
		    sv->status == COW_OK ? "" : cow_last_error());
		cow_snapshot_job_release(sv->job);
		sv->job = NULL;
	} else {
		pthread_mutex_lock(&p->lock);
		while (wait && !p->done)
			pthread_cond_wait(&p->cond, &p->lock);
		if (!p->done) {
			pthread_mutex_unlock(&p->lock);
			return;
		}
		sv->status = p->status;
		memcpy(sv->message, p->message, sizeof sv->message);
		p->done = false;
		pthread_mutex_unlock(&p->lock);
	}
	sv->done = true;
	stress_ops(run, 0, 1);
	if (!stress_check(run, sv->status == COW_OK || (sv->cancel_sent &&
	    sv->status == COW_ECANCELED), "the save of %s failed: %s",
	    ck_describe(sv, what, sizeof what), sv->message))
		return;
	if (sv->status == COW_ECANCELED)
		st->n_cancelled++;
	ck_verify(run, sv);
	/* A cancelled save leaves tensors held: read them and release them
	 * now, while the writers write (a kept snapshot is read a step later,
	 * then released). */
	if (sv->status != COW_OK && !sv->keep)
		ck_release_rest(run, sv, r);
}

/* Writers are paused (a step boundary): check the accounting where it is
 * exact, and release the snapshot. @round: the step just completed. */
static void
ck_account(struct stress_run *run, struct ck_state *st, struct ck_save *sv,
    struct stress_rng *r, uint64_t round)
{
	cow_snapshot_stats_t ss;
	cow_stats_t now;
	uint64_t copies, persisted_by_writers = 0, ngroups = st->nitems;
	char what[256];

	ck_describe(sv, what, sizeof what);
	cow_stats_get(&now);
	if (sv->status == COW_OK || sv->status == COW_ECANCELED)
		ck_release_rest(run, sv, r);
	cow_snapshot_stats(sv->snap, &ss);
	copies = now.materialize_copies - sv->stats0.materialize_copies;
	stress_check(run, ss.held_tensors == 0 && ss.extra_bytes == 0,
	    "%s: %" PRIu64 " tensors held and %" PRIu64 " extra bytes once "
	    "every tensor was released", what, ss.held_tensors,
	    ss.extra_bytes);
	stress_check(run, ss.extra_peak <= st->state_bytes, "%s: extra_peak "
	    "%" PRIu64 " above the %" PRIu64 " bytes of the storages",
	    what, ss.extra_peak, st->state_bytes);
	stress_check(run, copies == ss.writer_copies &&
	    now.snapshot_copies - sv->stats0.snapshot_copies ==
	    ss.writer_copies, "%s: the writers' writes copied %" PRIu64
	    " storages, the snapshot counted %" PRIu64 " writer copies and "
	    "the library %" PRIu64 " snapshot copies", what, copies,
	    ss.writer_copies, now.snapshot_copies -
	    sv->stats0.snapshot_copies);
	stress_check(run, ss.writer_copies <= ngroups &&
	    ss.writer_persists <= ngroups, "%s: %" PRIu64 " writer copies and %"
	    PRIu64 " writer persists for %" PRIu64 " storages", what,
	    ss.writer_copies, ss.writer_persists, ngroups);
	/* Storages whose tensors a writer's thread persisted: all of them
	 * (a claim is per storage), or none. */
	memset(st->by_writer, 0, st->nitems * sizeof *st->by_writer);
	for (size_t k = 0; k < st->count; k++) {
		size_t item = st->item_of[sv->order[k]];

		if (atomic_load(&sv->written[k]) > 0)
			st->by_writer[item] |= atomic_load(&sv->by_writer[k]) ?
			    1 : 2;
	}
	for (size_t k = 0; k < st->nitems; k++) {
		stress_check(run, st->by_writer[k] != 3, "%s: the tensors of "
		    "storage %zu were persisted partly by a writer, partly by "
		    "the saver", what, k);
		persisted_by_writers += (st->by_writer[k] & 1) != 0;
	}
	stress_check(run, ss.writer_persists == persisted_by_writers &&
	    now.snapshot_persists - sv->stats0.snapshot_persists ==
	    ss.writer_persists, "%s: writers' threads persisted %" PRIu64
	    " storages, the snapshot counted %" PRIu64 " writer persists and "
	    "the library %" PRIu64, what, persisted_by_writers,
	    ss.writer_persists, now.snapshot_persists -
	    sv->stats0.snapshot_persists);
	if (sv->late_recorded)
		stress_check(run, sv->late.writer_copies == ngroups &&
		    sv->late.extra_bytes == st->state_bytes, "%s: a step after "
		    "the take every storage was written, so each copied: "
		    "expected %" PRIu64 " writer copies and %" PRIu64 " extra "
		    "bytes, the snapshot said %" PRIu64 " and %" PRIu64, what,
		    ngroups, st->state_bytes, sv->late.writer_copies,
		    sv->late.extra_bytes);
	/* A whole step since the take: every storage's first write since
	 * copied or stole (checked over the run, at the end). */
	if (round > sv->taken_round)
		st->groups_rewritten += ngroups;
	st->n_copies += ss.writer_copies;
	st->n_persists += ss.writer_persists;
	st->n_kept += sv->keep;
	cow_snapshot_release(sv->snap);
	sv->snap = NULL;
	sv->active = false;
	ck_save_free(sv);
}

/* The snapshot's accounting while the writers write and the save runs:
 * whatever is counted yet, never more than the storages' bytes. */
static void
ck_sample(struct stress_run *run, struct ck_state *st, struct ck_save *sv)
{
	cow_snapshot_stats_t ss;

	if (!sv->active)
		return;
	cow_snapshot_stats(sv->snap, &ss);
	stress_check(run, ss.extra_bytes <= st->state_bytes &&
	    ss.extra_peak <= st->state_bytes && ss.held_tensors <= st->count &&
	    ss.writer_copies <= st->nitems, "the snapshot of step %" PRIu64
	    " while it is saved: %" PRIu64 " extra bytes (peak %" PRIu64 "), %"
	    PRIu64 " held tensors, %" PRIu64 " writer copies, for %zu storages "
	    "of %" PRIu64 " bytes and %zu tensors", sv->step, ss.extra_bytes,
	    ss.extra_peak, ss.held_tensors, ss.writer_copies, st->nitems,
	    st->state_bytes, st->count);
}

static void
ck_checkpointer(struct stress_run *run, struct ck_state *st)
{
	struct ck_save *sv = &st->save;
	struct stress_rng r;
	uint64_t round = 0;

	stress_rng_init(&r, run->seed, 0, 0xc4);
	cow_stats_get(&st->stats_start);
	while (stress_next_round(run, 0)) {
		round = stress_round(run);
		if (sv->active && !sv->launched &&
		    sv->launch == CK_AFTER_RESUME)
			ck_launch(run, st, sv);
		/* The writers stamp step `round` meanwhile. */
		if (sv->active && sv->launched && !sv->done) {
			if (sv->cancel && !sv->cancel_sent) {
				if (sv->job_run && stress_rng_below(&r, 2))
					cow_snapshot_job_cancel(sv->job);
				else
					cow_snapshot_cancel(sv->snap);
				sv->cancel_sent = true;
			}
			ck_finish(run, st, sv, &r, false);
			ck_sample(run, st, sv);
		}
		stress_barrier(run); /* every writer is done with the step */
		if (sv->active && !sv->launched && sv->launch == CK_LATE &&
		    round > sv->taken_round) {
			cow_snapshot_stats(sv->snap, &sv->late);
			sv->late_recorded = true;
			ck_launch(run, st, sv);
		}
		if (sv->active && sv->done)
			ck_account(run, st, sv, &r, round);
		if (!sv->active && !stress_stopping(run) &&
		    ck_take(run, st, &r, round) && sv->launch == CK_AT_TAKE)
			ck_launch(run, st, sv);
		stress_ops(run, 0, 1);
	}
	/* The end: writers are paused for good. */
	if (sv->active) {
		if (!sv->launched)
			ck_launch(run, st, sv);
		ck_finish(run, st, sv, &r, true);
		ck_account(run, st, sv, &r, round);
	}
}

/* ---- the scenario ------------------------------------------------------ */

static void
ck_teardown(struct stress_run *run)
{
	struct ck_state *st = run->state;
	uint64_t n = st->n_ckpt;

	if (st->persister_started) {
		pthread_mutex_lock(&st->persister.lock);
		st->persister.quit = true;
		pthread_cond_broadcast(&st->persister.cond);
		pthread_mutex_unlock(&st->persister.lock);
		pthread_join(st->persister.thread, NULL);
	}
	pthread_mutex_destroy(&st->persister.lock);
	pthread_cond_destroy(&st->persister.cond);
	snprintf(run->note, sizeof run->note,
	    "%" PRIu64 " %s of %zu %s (%" PRIu64 " MiB; %" PRIu64 " streamed "
	    "to memory, %" PRIu64 " to a file, %" PRIu64 " persist-first to "
	    "a file, %" PRIu64 " to memory; %" PRIu64 " of them on jobs, %"
	    PRIu64 " launched late, %" PRIu64 " kept, %" PRIu64 " cancelled); %"
	    PRIu64 " writer %s, %" PRIu64 " writer %s, %" PRIu64 " MiB "
	    "verified", n, stress_plural(n, "checkpoint", "checkpoints"),
	    st->count, stress_plural(st->count, "tensor", "tensors"),
	    st->total >> 20, st->n_mode[CK_STREAM_MEMORY],
	    st->n_mode[CK_STREAM_FILE], st->n_mode[CK_PERSIST_FILE],
	    st->n_mode[CK_PERSIST_MEMORY], st->n_job, st->n_launch[CK_LATE],
	    st->n_kept, st->n_cancelled, st->n_copies,
	    stress_plural(st->n_copies, "copy", "copies"), st->n_persists,
	    stress_plural(st->n_persists, "persist", "persists"),
	    st->n_bytes >> 20);
	if (st->fd >= 0)
		close(st->fd);
	free(st->sink);
	free(st->scratch);
	free(st->pattern);
	free(st->items);
	free(st->tensors);
	free(st->names);
	free(st->name_buf);
	free(st->item_of);
	free(st->by_writer);
	free(st);
	run->state = NULL;
}

static bool
ck_setup(struct stress_run *run)
{
	struct ck_state *st = calloc(1, sizeof *st);
	struct stress_rng r;
	const char *dir = getenv("TMPDIR");
	char path[4096];
	size_t at = 0;

	if (st == NULL)
		return false;
	run->state = st;
	st->fd = -1;
	pthread_mutex_init(&st->persister.lock, NULL);
	pthread_cond_init(&st->persister.cond, NULL);
	st->base_allocs = stress_default_live_allocs();
	st->writers = run->threads - 1;
	st->nitems = (size_t)st->writers * CK_ITEMS;
	st->items = calloc(st->nitems, sizeof *st->items);
	st->tensors = calloc(2 * st->nitems, sizeof *st->tensors);
	st->names = calloc(2 * st->nitems, sizeof *st->names);
	st->name_buf = calloc(2 * st->nitems, sizeof *st->name_buf);
	st->item_of = calloc(2 * st->nitems, sizeof *st->item_of);
	st->by_writer = calloc(st->nitems, sizeof *st->by_writer);
	st->scratch = malloc(CK_VERIFY_CHUNK);
	st->pattern = malloc(CK_PATTERN);
	if (st->items == NULL || st->tensors == NULL || st->names == NULL ||
	    st->name_buf == NULL || st->item_of == NULL ||
	    st->by_writer == NULL ||
	    st->scratch == NULL || st->pattern == NULL)
		goto fail;
	stress_rng_init(&r, run->seed, 0xc4, 1);
	ck_plan(st, &r);
	for (size_t k = 0; k < st->nitems; k++) {
		struct ck_item *it = &st->items[k];

		if (!ck_item_make(run, it, (unsigned)(k / CK_ITEMS) + 1,
		    (unsigned)(k % CK_ITEMS), &st->name_buf[at],
		    &st->names[at], &st->tensors[at]))
			goto fail;
		for (unsigned p = 0; p < it->nparts; p++) {
			st->item_of[at + p] = k;
			st->total += cow_tensor_nbytes(it->part[p]);
		}
		at += it->nparts;
		st->state_bytes += it->nbytes;
	}
	st->count = at;
	if ((st->sink = malloc(st->total + CK_HEADER_MAX)) == NULL)
		goto fail;
	snprintf(path, sizeof path, "%s/cow_stress_checkpoint.XXXXXX",
	    dir != NULL && dir[0] != '\0' ? dir : "/tmp");
	if ((st->fd = mkstemp(path)) < 0) {
		fprintf(stderr, "cow_stress: checkpoint: cannot create a file "
		    "in %s: %s\n", path, strerror(errno));
		goto fail;
	}
	unlink(path);
	if (pthread_create(&st->persister.thread, NULL, ck_persister_main,
	    &st->persister) != 0)
		goto fail;
	st->persister_started = true;
	return true;
fail:
	for (size_t k = 0; k < st->nitems && st->items != NULL; k++) {
		cow_tensor_release(st->items[k].base);
		for (unsigned p = 0; p < 2; p++)
			cow_tensor_release(st->items[k].part[p]);
	}
	ck_teardown(run);
	return false;
}

static void
ck_worker(struct stress_run *run, unsigned tid)
{
	struct ck_state *st = run->state;
	struct stress_rng rng;
	struct ck_item *mine = tid == 0 ? NULL :
	    &st->items[(size_t)(tid - 1) * CK_ITEMS];

	stress_rng_init(&rng, run->seed, tid, 0xc4);
	ck_tls_rng = &rng;
	if (tid == 0) {
		ck_role = CK_CHECKPOINTER;
		ck_checkpointer(run, st);
	} else {
		ck_role = CK_WRITER;
		while (stress_next_round(run, tid)) {
			uint64_t step = stress_round(run);
			unsigned first = (unsigned)stress_rng_below(&rng,
			    CK_ITEMS);

			for (unsigned j = 0; j < CK_ITEMS; j++) {
				ck_stamp_item(run,
				    &mine[(first + j) % CK_ITEMS], step, &rng);
				stress_perturb(&rng);
			}
			stress_ops(run, tid, CK_ITEMS);
			stress_barrier(run); /* the step boundary */
		}
	}
	/* Every save is over: the writers let their tensors go. */
	stress_barrier(run);
	for (unsigned j = 0; mine != NULL && j < CK_ITEMS; j++) {
		cow_tensor_release(mine[j].base);
		for (unsigned p = 0; p < mine[j].nparts; p++)
			cow_tensor_release(mine[j].part[p]);
		mine[j].base = mine[j].part[0] = mine[j].part[1] = NULL;
	}
	ck_tls_rng = NULL;
	ck_role = CK_OTHER;
	stress_barrier(run);
	if (tid == 0) {
		cow_stats_t now;
		uint64_t firsts;

		cow_stats_get(&now);
		firsts = now.materialize_copies + now.materialize_steals -
		    st->stats_start.materialize_copies -
		    st->stats_start.materialize_steals;
		stress_check(run, firsts == st->groups_rewritten,
		    "the writers' first writes after a snapshot copied or "
		    "stole %" PRIu64 " times, but %" PRIu64 " storages were "
		    "in snapshots a whole step old: every one must have done "
		    "one or the other", firsts, st->groups_rewritten);
		stress_check(run, stress_default_live_allocs() ==
		    st->base_allocs, "live allocations after every snapshot "
		    "and tensor was released: %" PRIu64 " (expected %" PRIu64
		    ")", stress_default_live_allocs(), st->base_allocs);
	}
}

const struct stress_scenario stress_scn_checkpoint = {
	.name = "checkpoint",
	.summary = "snapshots of every writer's tensors at step boundaries, "
	    "saved while the writers stamp the next steps",
	.setup = ck_setup,
	.worker = ck_worker,
	.teardown = ck_teardown,
};
