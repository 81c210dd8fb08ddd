/*
 * Snapshots (include/cowstore/snapshot.h), the contract point by point:
 * values at the take (gets and both save modes never show later writes),
 * a take copies no byte (pinned tensors aside, counted), views of one
 * storage share one lazy copy and are saved in C order, zero-size and 0-d
 * tensors, every dtype, names copied, early release (the next write
 * steals, only once a storage's last tensor is released), the accounting
 * in deterministic sequences, pins and DLPack exports, refusals
 * (functional tensors, the reshape-alias check, bad arguments and
 * orders, a released tensor, a second save), stream saves (exact bytes,
 * progress, each storage released after its last tensor, keep, order),
 * cancellation (before and while saving, jobs) leaving the snapshot usable
 * and nothing behind, failing callbacks (COW_EIO naming the errno),
 * persist-first saves (offsets, a writer that persists a tensor itself,
 * on another thread or inside the saver's callback) and jobs (progress,
 * done, waits from two threads, release while running).
 *
 * The threads here only order a save against a writer through a callback
 * that blocks on a condition the test controls; the concurrency of
 * writers, readers and saves is tests/threads/test_snapshot_threads.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include <cowstore/testing.h>

#include "interop/dlpack_abi.h"
#include "leak_fixture.h"
#include "tensor_test.h"

#define CAP 65536 /* bytes a sink or target holds */
#define LOG 64    /* callback calls a target records */

static uint64_t default_live_at_start;

static uint64_t
default_live(void)
{
	return cow_test_alloc_stats(cow_allocator_default()).live_bytes;
}

static void
setup(void)
{
	leak_setup();
	default_live_at_start = default_live();
}

static void
teardown(void)
{
	cow_shadow_policy_set(COW_SHADOW_WARN_ONCE);
	cow_reshape_mode_set_thread(COW_RESHAPE_INHERIT, NULL);
	cr_expect_eq(default_live(), default_live_at_start,
	    "the default allocator holds %lld bytes more than at the start",
	    (long long)(default_live() - default_live_at_start));
	leak_teardown();
}

TestSuite(snapshot, .init = setup, .fini = teardown, .timeout = 60.0);

/* ------------------------------------------------------------------ */
/* Helpers. */

#define SENTINEL_SNAP ((cow_snapshot_t *)(uintptr_t)0x5eed)
#define SENTINEL_TENSOR ((cow_tensor_t *)(uintptr_t)0x5eed)
#define SENTINEL_JOB ((cow_snapshot_job_t *)(uintptr_t)0x5eed)

/* An int32 tensor of @sizes holding start, start + 1, ... in C order. */
static cow_tensor_t *
ints(int ndim, const int64_t *sizes, double start)
{
	cow_tensor_t *t = tt_arange(COW_DTYPE_INT32, ndim, sizes, sys);

	TT_OK(cow_tensor_add_scalar_(t, start));
	return t;
}

/* A uint8 tensor of @n bytes, every one @v. */
static cow_tensor_t *
bytes_of(int64_t n, double v)
{
	cow_tensor_t *t;

	TT_OK(cow_tensor_full(COW_DTYPE_UINT8, 1, (int64_t[]){n}, v, sys, &t));
	return t;
}

/* @t's elements in C order into @out (by its public layout); their
 * bytes. */
static size_t
c_order(const cow_tensor_t *t, unsigned char *out)
{
	int nd = cow_tensor_ndim(t);
	const int64_t *sz = cow_tensor_sizes(t), *st = cow_tensor_strides(t);
	size_t k = cow_dtype_size(cow_tensor_dtype(t)), n = 0;
	int64_t idx[COW_TENSOR_MAX_NDIM] = {0};
	const unsigned char *p;

	if (cow_tensor_numel(t) == 0)
		return 0;
	TT_OK(cow_tensor_read_data(t, (const void **)&p));
	do {
		int64_t e = 0;

		for (int d = 0; d < nd; d++)
			e += idx[d] * st[d];
		memcpy(out + n, p + e * (int64_t)k, k);
		n += k;
	} while (tt_next(nd, sz, idx));
	return n;
}

/* The tensors' bytes in C order, one after another in @order (NULL: as
 * given); the total. */
static size_t
c_order_all(size_t n, cow_tensor_t *const *t, const size_t *order,
    unsigned char *out)
{
	size_t len = 0;

	for (size_t k = 0; k < n; k++)
		len += c_order(t[order != NULL ? order[k] : k], out + len);
	return len;
}

static cow_snapshot_t *
take(size_t n, cow_tensor_t *const *t, const char *const *names)
{
	cow_snapshot_t *s = SENTINEL_SNAP;

	TT_OK(cow_snapshot_take(n, t, names, &s));
	cr_assert_neq(s, SENTINEL_SNAP);
	return s;
}

static cow_snapshot_stats_t
sstats(const cow_snapshot_t *s)
{
	cow_snapshot_stats_t st;

	memset(&st, 0xff, sizeof st);
	cow_snapshot_stats(s, &st);
	return st;
}

/* Each tensor's share count of its storage. */
static size_t
shares(const cow_tensor_t *t)
{
	return cow_storage_share_count(cow_tensor_storage(t));
}

/* A condition a callback waits on until the test lets it go. */
struct gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool entered, go;
};

static void
gate_init(struct gate *g)
{
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	g->entered = g->go = false;
}

static void
gate_destroy(struct gate *g)
{
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->cond);
}

/* Under the gate's lock: set @mine (unless NULL), then wait until @theirs
 * (unless NULL) is set. */
static void
gate_step(struct gate *g, bool *mine, const bool *theirs)
{
	pthread_mutex_lock(&g->lock);
	if (mine != NULL) {
		*mine = true;
		pthread_cond_broadcast(&g->cond);
	}
	while (theirs != NULL && !*theirs)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

/* The callback's side: say it is in, wait to be let go. */
static void
gate_block(struct gate *g)
{
	gate_step(g, &g->entered, &g->go);
}

static void
gate_wait_entered(struct gate *g)
{
	gate_step(g, NULL, &g->entered);
}

static void
gate_open(struct gate *g)
{
	gate_step(g, &g->go, NULL);
}

/* A stream target: the bytes appended; call @fail_at (1-based) fails with
 * @err; call @block_at waits on @gate; @before runs at every call first. */
struct sink {
	unsigned char buf[CAP];
	size_t len;
	int calls;
	int fail_at, err;
	int block_at;
	struct gate *gate;
	bool bad;          /* a call broke the contract (0 bytes, overflow) */
	void (*before)(struct sink *s);
	void *ctx;
	/* Run in the first call, on @act_snap. */
	void (*act)(cow_snapshot_t *snap);
	cow_snapshot_t *act_snap;
};

static int
sink_write(void *ctx, const void *data, size_t n)
{
	struct sink *s = ctx;

	s->calls++;
	if (s->before != NULL)
		s->before(s);
	if (s->calls == 1 && s->act != NULL)
		s->act(s->act_snap);
	if (s->calls == s->block_at)
		gate_block(s->gate);
	if (s->calls == s->fail_at)
		return s->err;
	if (n == 0 || n > CAP - s->len) {
		s->bad = true;
		return 0;
	}
	memcpy(s->buf + s->len, data, n);
	s->len += n;
	return 0;
}

/* Progress as a save reports it. */
struct progress {
	int calls;
	uint64_t done, total;
	bool backwards;        /* done went down, above total, or total moved */
};

static void
progress_fn(void *ctx, uint64_t done, uint64_t total)
{
	struct progress *p = ctx;

	if (done > total || (p->calls > 0 &&
	    (done < p->done || total != p->total)))
		p->backwards = true;
	p->calls++;
	p->done = done;
	p->total = total;
}

static cow_snapshot_save_t
stream_to(struct sink *s, struct progress *p)
{
	return (cow_snapshot_save_t){.mode = COW_SNAPSHOT_STREAM,
	    .write = sink_write, .ctx = s, .progress = p != NULL ?
	    progress_fn : NULL, .progress_ctx = p};
}

/* A persist-first target: the bytes at their offsets, how many times each
 * byte was written, and each call (offset, size, thread). Call @fail_at
 * fails with @err; the call at offset @block_off (when @block) waits on
 * @gate; @at_call runs in call @hook_at (on the calling thread). */
struct target {
	pthread_mutex_t lock;
	unsigned char buf[CAP];
	unsigned char hits[CAP];
	int calls;
	struct {
		uint64_t off;
		size_t n;
		pthread_t thread;
	} log[LOG];
	int fail_at, err;
	bool block;
	uint64_t block_off;
	struct gate *gate;
	int hook_at;
	void (*at_call)(struct target *t);
	void *ctx;
	void (*act)(cow_snapshot_t *snap);  /* as struct sink's */
	cow_snapshot_t *act_snap;
	bool bad;
};

static void
target_init(struct target *t)
{
	memset(t, 0, sizeof *t);
	pthread_mutex_init(&t->lock, NULL);
}

static int
target_pwrite(void *ctx, const void *data, size_t n, uint64_t off)
{
	struct target *t = ctx;
	int call;

	pthread_mutex_lock(&t->lock);
	call = ++t->calls;
	if (call <= LOG) {
		t->log[call - 1].off = off;
		t->log[call - 1].n = n;
		t->log[call - 1].thread = pthread_self();
	}
	pthread_mutex_unlock(&t->lock);
	if (t->at_call != NULL && call == t->hook_at)
		t->at_call(t);
	if (t->act != NULL && call == 1)
		t->act(t->act_snap);
	if (t->block && off == t->block_off)
		t->gate != NULL ? gate_block(t->gate) : (void)0;
	if (call == t->fail_at)
		return t->err;
	pthread_mutex_lock(&t->lock);
	if (n == 0 || off > CAP || n > CAP - off) {
		t->bad = true;
	} else {
		memcpy(t->buf + off, data, n);
		for (size_t i = 0; i < n; i++)
			t->hits[off + i]++;
	}
	pthread_mutex_unlock(&t->lock);
	return 0;
}

static cow_snapshot_save_t
persist_to(struct target *t, uint64_t base, struct progress *p)
{
	return (cow_snapshot_save_t){.mode = COW_SNAPSHOT_PERSIST_FIRST,
	    .pwrite = target_pwrite, .ctx = t, .base_offset = base,
	    .progress = p != NULL ? progress_fn : NULL, .progress_ctx = p};
}

/* Mode 0: a stream into @sink; 1: persist-first into @tg at offset 0. */
static cow_snapshot_save_t
save_to(int mode, struct sink *sink, struct target *tg)
{
	return mode == 0 ? stream_to(sink, NULL) : persist_to(tg, 0, NULL);
}

/* Every byte of [base, base + n) written once, none outside. */
static void
assert_written_once(const struct target *t, uint64_t base, size_t n)
{
	for (size_t i = 0; i < CAP; i++) {
		unsigned want = i >= base && i < base + n;

		cr_assert_eq(t->hits[i], want, "byte %zu written %u times, "
		    "want %u", i, t->hits[i], want);
	}
	cr_assert_not(t->bad, "a pwrite call broke the contract");
}

/* A save on a thread of the test's. */
struct saver {
	pthread_t thread;
	cow_snapshot_t *snap;
	cow_snapshot_save_t how;
	cow_status_t st;
	char message[256];
};

static void *
saver_main(void *arg)
{
	struct saver *v = arg;

	v->st = cow_snapshot_save(v->snap, &v->how);
	snprintf(v->message, sizeof v->message, "%s", cow_last_error());
	return NULL;
}

static void
saver_start(struct saver *v, cow_snapshot_t *snap,
    const cow_snapshot_save_t *how)
{
	v->snap = snap;
	v->how = *how;
	cr_assert_eq(pthread_create(&v->thread, NULL, saver_main, v), 0);
}

static cow_status_t
saver_join(struct saver *v)
{
	pthread_join(v->thread, NULL);
	return v->st;
}

static void
release_all(cow_snapshot_t *s, size_t n, cow_tensor_t **t)
{
	cow_snapshot_release(s);
	for (size_t i = 0; i < n; i++)
		cow_tensor_release(t[i]);
}

/* The start most tests share: uint8 tensors of the given sizes (tensor i
 * every byte i + 1), their bytes in C order one after another, and a
 * snapshot of them named "a", "b", ... */
struct fix {
	size_t n, total;
	cow_tensor_t *t[4];
	unsigned char want[CAP];
	cow_snapshot_t *s;
};

static const char *const abc[] = {"a", "b", "c", "d"};

static void
fix_init(struct fix *f, size_t n, const int64_t *nbytes)
{
	f->n = n;
	for (size_t i = 0; i < n; i++)
		f->t[i] = bytes_of(nbytes[i], (double)(i + 1));
	f->total = c_order_all(n, f->t, NULL, f->want);
	f->s = take(n, f->t, abc);
}

static void
fix_fini(struct fix *f)
{
	release_all(f->s, f->n, f->t);
}

/* A save of @f's snapshot (save_to's @mode) that runs @act on it inside
 * its first callback call; its status. */
static cow_status_t
save_acting(int mode, struct fix *f, void (*act)(cow_snapshot_t *),
    struct sink *sink, struct target *tg)
{
	cow_snapshot_save_t how;

	target_init(tg);
	sink->act = tg->act = act;
	sink->act_snap = tg->act_snap = f->s;
	how = save_to(mode, sink, tg);
	return cow_snapshot_save(f->s, &how);
}

/* ------------------------------------------------------------------ */
/* Taking, values at the take, names, access. */

Test(snapshot, take_copies_no_byte_and_keeps_the_values_at_the_take)
{
	cow_tensor_t *t[3] = {ints(1, (int64_t[]){16}, 0),
	    ints(2, (int64_t[]){4, 5}, 100), ints(0, NULL, 7)};
	char n0[] = "alpha", n1[] = "beta", n2[] = "";
	const char *names[3] = {n0, n1, n2};
	unsigned char want[CAP], got[CAP];
	size_t total = c_order_all(3, t, NULL, want), off = 0;
	cow_stats_t before = cow_test_stats(), after;
	cow_snapshot_t *s = take(3, t, names);
	cow_snapshot_save_t how;
	struct sink sink = {0};
	struct progress p = {0};

	after = cow_test_stats();
	cr_assert_eq(after.bytes_copied, before.bytes_copied, "a take copied");
	cr_assert_eq(after.lazy_clones, before.lazy_clones + 3);
	cr_assert_eq(after.eager_fallbacks, before.eager_fallbacks);
	/* Names are copied. */
	n0[0] = 'X';
	n1[0] = 'Y';
	cr_assert_str_eq(cow_snapshot_name(s, 0), "alpha");
	cr_assert_str_eq(cow_snapshot_name(s, 1), "beta");
	cr_assert_str_eq(cow_snapshot_name(s, 2), "");
	cr_assert_eq(cow_snapshot_count(s), 3);
	for (size_t i = 0; i < 3; i++) {
		cr_assert_eq(cow_snapshot_dtype(s, i), COW_DTYPE_INT32);
		cr_assert_eq(cow_snapshot_ndim(s, i), cow_tensor_ndim(t[i]));
		for (int d = 0; d < cow_tensor_ndim(t[i]); d++)
			cr_assert_eq(cow_snapshot_sizes(s, i)[d],
			    cow_tensor_sizes(t[i])[d]);
		cr_assert_eq(cow_snapshot_nbytes(s, i),
		    (uint64_t)cow_tensor_numel(t[i]) * 4);
		cr_assert(cow_snapshot_is_held(s, i));
	}
	cr_assert_eq(sstats(s).tensors, 3);
	cr_assert_eq(sstats(s).bytes, total);
	cr_assert_eq(sstats(s).held_tensors, 3);
	/* Writes after the take never show in the snapshot. */
	for (int i = 0; i < 3; i++)
		TT_OK(cow_tensor_fill_(t[i], -1));
	cr_assert_eq(sstats(s).writer_copies, 3);
	for (size_t i = 0; i < 3; i++) {
		cow_tensor_t *g = SENTINEL_TENSOR;
		size_t n;

		TT_OK(cow_snapshot_get(s, i, &g));
		tt_assert_shape(g, cow_tensor_ndim(t[i]),
		    cow_tensor_sizes(t[i]));
		cr_assert_eq(cow_tensor_dtype(g), COW_DTYPE_INT32);
		n = c_order(g, got);
		cr_assert_eq(n, cow_snapshot_nbytes(s, i));
		cr_assert_arr_eq(got, want + off, n, "get(%zu) changed", i);
		off += n;
		cow_tensor_release(g);
	}
	how = stream_to(&sink, &p);
	TT_OK(cow_snapshot_save(s, &how));
	cr_assert_eq(sink.len, total);
	cr_assert_arr_eq(sink.buf, want, total, "the save wrote later values");
	cr_assert_not(sink.bad);
	cr_assert_not(p.backwards);
	cr_assert_eq(p.done, total);
	cr_assert_eq(p.total, total);
	release_all(s, 3, t);
}

Test(snapshot, get_is_a_lazy_copy_whose_writes_never_reach_the_snapshot)
{
	cow_tensor_t *t = ints(1, (int64_t[]){64}, 5), *g, *h;
	unsigned char want[CAP], got[CAP];
	size_t n = c_order(t, want);
	cow_snapshot_t *s = take(1, &t, (const char *[]){"t"});
	cow_stats_t before = cow_test_stats();
	struct sink sink = {0};
	cow_snapshot_save_t how = stream_to(&sink, NULL);

	TT_OK(cow_snapshot_get(s, 0, &g));
	cr_assert_eq(cow_test_stats().bytes_copied, before.bytes_copied);
	cr_assert_neq(cow_tensor_storage(g), cow_tensor_storage(t));
	TT_OK(cow_tensor_fill_(g, 99));
	cr_assert_eq(cow_test_stats().materialize_copies,
	    before.materialize_copies + 1, "a write to get's copy copies");
	cr_assert_eq(sstats(s).writer_copies, 0,
	    "a copy of the snapshot is no live tensor");
	TT_OK(cow_snapshot_get(s, 0, &h));
	cr_assert_arr_eq(got, want, c_order(h, got));
	TT_OK(cow_snapshot_save(s, &how));
	cr_assert_eq(sink.len, n);
	cr_assert_arr_eq(sink.buf, want, n);
	/* The copies outlive the snapshot's release of the tensor. */
	cr_assert_not(cow_snapshot_is_held(s, 0));
	cr_assert_arr_eq(got, want, c_order(h, got));
	cow_tensor_release(g);
	cow_tensor_release(h);
	release_all(s, 1, &t);
}

/* Views of one storage: one lazy copy shared by all; written in C order
 * by both save modes; later writes to the storage never show. */
Test(snapshot, views_of_one_storage_share_one_lazy_copy_in_c_order)
{
	for (int mode = 0; mode < 2; mode++) {
		cow_tensor_t *base = ints(2, (int64_t[]){4, 6}, 1), *v[7], *x;
		unsigned char want[CAP];
		size_t total;
		cow_stats_t before;
		cow_snapshot_t *s;
		cow_snapshot_save_t how;
		struct sink sink = {0};
		struct target tg;
		const char *names[7] = {"base", "transposed", "narrowed",
		    "strided", "row", "expanded", "scalar"};

		v[0] = base;
		TT_OK(cow_tensor_transpose(base, 0, 1, &v[1]));
		TT_OK(cow_tensor_narrow(base, 1, 1, 3, &v[2]));
		TT_OK(cow_tensor_as_strided(base, 2, (int64_t[]){2, 3},
		    (int64_t[]){12, 2}, 1, &v[3]));
		TT_OK(cow_tensor_select(base, 0, 2, &v[4]));
		TT_OK(cow_tensor_select(base, 1, 5, &x));
		TT_OK(cow_tensor_unsqueeze(x, 1, &v[5]));
		cow_tensor_release(x);
		TT_OK(cow_tensor_expand(v[5], 2, (int64_t[]){4, 3}, &x));
		cow_tensor_release(v[5]);
		v[5] = x;
		TT_OK(cow_tensor_as_strided(base, 0, NULL, NULL, 13, &v[6]));
		cr_assert_not(cow_tensor_is_contiguous(v[1]));
		cr_assert_eq(cow_tensor_strides(v[5])[1], 0);
		total = c_order_all(7, v, NULL, want);
		before = cow_test_stats();
		s = take(7, v, names);
		cr_assert_eq(cow_test_stats().lazy_clones,
		    before.lazy_clones + 1,
		    "seven views of one storage: one lazy copy");
		cr_assert_eq(shares(base), 2);
		TT_OK(cow_tensor_fill_(base, -7));
		cr_assert_eq(sstats(s).writer_copies, 1);
		cr_assert_eq(sstats(s).extra_bytes, 96);
		cr_assert_eq(cow_test_stats().materialize_copies,
		    before.materialize_copies + 1);
		if (mode == 0) {
			how = stream_to(&sink, NULL);
			TT_OK(cow_snapshot_save(s, &how));
			cr_assert_eq(sink.len, total);
			cr_assert_arr_eq(sink.buf, want, total);
		} else {
			target_init(&tg);
			how = persist_to(&tg, 3, NULL);
			TT_OK(cow_snapshot_save(s, &how));
			assert_written_once(&tg, 3, total);
			cr_assert_arr_eq(tg.buf + 3, want, total);
			pthread_mutex_destroy(&tg.lock);
		}
		cr_assert_eq(sstats(s).held_tensors, 0);
		cr_assert_eq(sstats(s).extra_bytes, 0);
		release_all(s, 7, v);
	}
}

Test(snapshot, zero_size_and_0d_tensors)
{
	cow_tensor_t *t[5], *big, *g;
	unsigned char want[CAP];
	size_t total, n;
	double v;
	cow_snapshot_t *s;
	cow_snapshot_save_t how;
	struct sink sink = {0};
	struct progress p = {0};
	struct target tg;
	const char *names[5] = {"empty", "empty3d", "scalar", "narrow0",
	    "empty_i64"};

	TT_OK(cow_tensor_zeros(COW_DTYPE_FLOAT32, 1, (int64_t[]){0}, sys,
	    &t[0]));
	TT_OK(cow_tensor_zeros(COW_DTYPE_INT16, 3, (int64_t[]){3, 0, 2}, sys,
	    &t[1]));
	TT_OK(cow_tensor_full(COW_DTYPE_FLOAT64, 0, NULL, 2.5, sys, &t[2]));
	big = ints(1, (int64_t[]){8}, 0);
	TT_OK(cow_tensor_narrow(big, 0, 3, 0, &t[3]));
	TT_OK(cow_tensor_empty(COW_DTYPE_INT64, 2, (int64_t[]){0, 4}, sys,
	    &t[4]));
	cow_tensor_release(big);
	total = c_order_all(5, t, NULL, want);
	cr_assert_eq(total, 8);
	for (int mode = 0; mode < 2; mode++) {
		s = take(5, t, names);
		for (size_t i = 0; i < 5; i++)
			cr_assert_eq(cow_snapshot_nbytes(s, i), i == 2 ? 8 : 0);
		cr_assert_eq(cow_snapshot_ndim(s, 2), 0);
		cr_assert_eq(cow_snapshot_sizes(s, 1)[1], 0);
		TT_OK(cow_tensor_fill_(t[2], -1));
		for (size_t i = 0; i < 5; i++) {
			TT_OK(cow_snapshot_get(s, i, &g));
			cr_assert_eq(cow_tensor_numel(g),
			    cow_tensor_numel(t[i]));
			tt_assert_shape(g, cow_tensor_ndim(t[i]),
			    cow_tensor_sizes(t[i]));
			if (i == 2) {
				TT_OK(cow_tensor_get_f64(g, NULL, &v));
				cr_assert_eq(v, 2.5, "the scalar changed");
			}
			cow_tensor_release(g);
		}
		memset(&p, 0, sizeof p);
		if (mode == 0) {
			memset(&sink, 0, sizeof sink);
			how = stream_to(&sink, &p);
			TT_OK(cow_snapshot_save(s, &how));
			cr_assert_not(sink.bad, "a write of 0 bytes");
			cr_assert_eq(sink.calls, 1);
			cr_assert_arr_eq(sink.buf, want, total);
		} else {
			target_init(&tg);
			how = persist_to(&tg, 10, &p);
			TT_OK(cow_snapshot_save(s, &how));
			assert_written_once(&tg, 10, total);
			cr_assert_arr_eq(tg.buf + 10, want, total);
			pthread_mutex_destroy(&tg.lock);
		}
		cr_assert_not(p.backwards);
		cr_assert_eq(p.done, 8);
		cr_assert_eq(p.total, 8);
		for (size_t i = 0; i < 5; i++)
			cr_assert_not(cow_snapshot_is_held(s, i));
		cow_snapshot_release(s);
		TT_OK(cow_tensor_fill_(t[2], 2.5));
	}
	/* A snapshot of nothing but empty tensors saves nothing. */
	s = take(2, t, names);
	memset(&sink, 0, sizeof sink);
	how = stream_to(&sink, NULL);
	TT_OK(cow_snapshot_save(s, &how));
	cr_assert_eq(sink.calls, 0);
	n = (size_t)sstats(s).bytes;
	cr_assert_eq(n, 0);
	release_all(s, 5, t);
}

Test(snapshot, every_dtype)
{
	enum { N = 2 * COW_DTYPE_COUNT };
	cow_tensor_t *t[N], *g;
	const char *names[N];
	char name[N][32];
	unsigned char want[CAP], got[CAP];
	size_t total, off;
	cow_snapshot_t *s;
	cow_snapshot_save_t how;
	struct sink sink = {0};
	struct target tg;

	for (int d = 0; d < COW_DTYPE_COUNT; d++) {
		t[2 * d] = tt_arange((cow_dtype_t)d, 2, (int64_t[]){3, 4}, sys);
		TT_OK(cow_tensor_transpose(t[2 * d], 0, 1, &t[2 * d + 1]));
		for (int k = 0; k < 2; k++) {
			snprintf(name[2 * d + k], sizeof name[0], "%s%s",
			    cow_dtype_name((cow_dtype_t)d), k ? ".T" : "");
			names[2 * d + k] = name[2 * d + k];
		}
	}
	total = c_order_all(N, t, NULL, want);
	s = take(N, t, names);
	for (int d = 0; d < COW_DTYPE_COUNT; d++)
		TT_OK(cow_tensor_fill_(t[2 * d], 1));
	cr_assert_eq(sstats(s).writer_copies, COW_DTYPE_COUNT);
	off = 0;
	for (size_t i = 0; i < N; i++) {
		size_t size = cow_dtype_size((cow_dtype_t)(i / 2));

		cr_assert_eq(cow_snapshot_dtype(s, i), (cow_dtype_t)(i / 2));
		cr_assert_str_eq(cow_snapshot_name(s, i), name[i]);
		cr_assert_eq(cow_snapshot_nbytes(s, i), 12 * size);
		TT_OK(cow_snapshot_get(s, i, &g));
		cr_assert_eq(cow_tensor_dtype(g), (cow_dtype_t)(i / 2));
		cr_assert_arr_eq(got, want + off, c_order(g, got),
		    "%s changed", name[i]);
		off += 12 * size;
		cow_tensor_release(g);
	}
	/* A stream that keeps everything, then a persist-first save. */
	how = stream_to(&sink, NULL);
	how.keep = true;
	TT_OK(cow_snapshot_save(s, &how));
	cr_assert_eq(sink.len, total);
	cr_assert_arr_eq(sink.buf, want, total);
	target_init(&tg);
	how = persist_to(&tg, 0, NULL);
	TT_OK(cow_snapshot_save(s, &how));
	assert_written_once(&tg, 0, total);
	cr_assert_arr_eq(tg.buf, want, total);
	pthread_mutex_destroy(&tg.lock);
	release_all(s, N, t);
}

/* ------------------------------------------------------------------ */
/* Early release and the accounting. */

Test(snapshot, early_release_makes_the_next_write_steal)
{
	cow_tensor_t *t = bytes_of(1024, 3), *g = SENTINEL_TENSOR;
	cow_snapshot_t *s = take(1, &t, (const char *[]){"w"});
	cow_stats_t before;
	struct sink sink = {0};
	cow_snapshot_save_t how = stream_to(&sink, NULL);

	cr_assert_eq(shares(t), 2);
	TT_OK(cow_snapshot_release_tensor(s, 0));
	cr_assert_not(cow_snapshot_is_held(s, 0));
	cr_assert_eq(sstats(s).held_tensors, 0);
	cr_assert_eq(shares(t), 1, "the lazy copy is gone");
	TT_FAILS(cow_snapshot_get(s, 0, &g), COW_ERELEASED, "released");
	cr_assert(strstr(cow_last_error(), "cow_snapshot_get") != NULL);
	cr_assert_eq(g, SENTINEL_TENSOR);
	before = cow_test_stats();
	TT_OK(cow_tensor_fill_(t, 4));
	cr_assert_eq(cow_test_stats().materialize_steals,
	    before.materialize_steals + 1);
	cr_assert_eq(cow_test_stats().materialize_copies,
	    before.materialize_copies);
	cr_assert_eq(cow_test_stats().bytes_copied, before.bytes_copied);
	cr_assert_eq(cow_test_stats().snapshot_copies, before.snapshot_copies);
	cr_assert_eq(sstats(s).writer_copies, 0);
	cr_assert_eq(sstats(s).extra_peak, 0);
	/* Releasing it again does nothing; out of range and NULL fail. */
	TT_OK(cow_snapshot_release_tensor(s, 0));
	TT_FAILS(cow_snapshot_release_tensor(s, 1), COW_ERANGE,
	    "cow_snapshot_release_tensor");
	TT_FAILS(cow_snapshot_release_tensor(NULL, 0), COW_EINVAL,
	    "cow_snapshot_release_tensor");
	/* Its name and shape stay. */
	cr_assert_str_eq(cow_snapshot_name(s, 0), "w");
	cr_assert_eq(cow_snapshot_nbytes(s, 0), 1024);
	TT_FAILS(cow_snapshot_save(s, &how), COW_ERELEASED, "tensor 0 (\"w\")");
	cr_assert_eq(sink.calls, 0);
	release_all(s, 1, &t);
}

/* Two tensors over one storage: releasing one keeps the lazy copy (the
 * next write copies); releasing the other lets it go. */
Test(snapshot, early_release_steals_only_after_the_storages_last_tensor)
{
	cow_tensor_t *t[2], *g;
	cow_snapshot_t *s;
	cow_stats_t before;
	unsigned char want[CAP], got[CAP];

	t[0] = bytes_of(512, 1);
	TT_OK(cow_tensor_narrow(t[0], 0, 100, 50, &t[1]));
	c_order(t[1], want);
	s = take(2, t, (const char *[]){"all", "part"});
	TT_OK(cow_snapshot_release_tensor(s, 0));
	cr_assert_not(cow_snapshot_is_held(s, 0));
	cr_assert(cow_snapshot_is_held(s, 1));
	cr_assert_eq(shares(t[0]), 2, "the storage is still held");
	before = cow_test_stats();
	TT_OK(cow_tensor_fill_(t[0], 2));
	cr_assert_eq(cow_test_stats().materialize_copies,
	    before.materialize_copies + 1);
	cr_assert_eq(cow_test_stats().bytes_copied, before.bytes_copied + 512);
	cr_assert_eq(cow_test_stats().snapshot_copies,
	    before.snapshot_copies + 1);
	cr_assert_eq(sstats(s).writer_copies, 1);
	cr_assert_eq(sstats(s).extra_bytes, 512);
	TT_OK(cow_snapshot_get(s, 1, &g));
	cr_assert_arr_eq(got, want, c_order(g, got));
	TT_OK(cow_snapshot_release_tensor(s, 1));
	cr_assert_eq(sstats(s).extra_bytes, 0);
	cr_assert_eq(sstats(s).extra_peak, 512);
	/* The get's copy keeps the bytes on its own. */
	cr_assert_arr_eq(got, want, c_order(g, got));
	cow_tensor_release(g);
	release_all(s, 2, t);
}

/* The snapshot's held tensors, extra bytes, their peak and writer copies
 * are these (the tensors and bytes never change). */
static void
assert_acct(const struct fix *f, uint64_t held, uint64_t extra,
    uint64_t peak, uint64_t copies)
{
	cow_snapshot_stats_t st = sstats(f->s);

	cr_assert_eq(st.tensors, f->n);
	cr_assert_eq(st.bytes, f->total);
	cr_assert_eq(st.held_tensors, held, "held %llu, want %llu",
	    (unsigned long long)st.held_tensors, (unsigned long long)held);
	cr_assert_eq(st.extra_bytes, extra, "extra %llu, want %llu",
	    (unsigned long long)st.extra_bytes, (unsigned long long)extra);
	cr_assert_eq(st.extra_peak, peak, "peak %llu, want %llu",
	    (unsigned long long)st.extra_peak, (unsigned long long)peak);
	cr_assert_eq(st.writer_copies, copies, "copies %llu, want %llu",
	    (unsigned long long)st.writer_copies, (unsigned long long)copies);
	cr_assert_eq(st.writer_persists, 0);
	cr_assert_eq(st.pinned_copies, 0);
	cr_assert_eq(st.pinned_bytes, 0);
}

Test(snapshot, accounting_is_exact_in_a_single_thread)
{
	struct fix f;
	cow_stats_t g0, g;

	fix_init(&f, 3, (int64_t[]){1024, 4096, 256});
	g0 = cow_test_stats();
	cr_assert_eq(f.total, 5376);
	assert_acct(&f, 3, 0, 0, 0);
	TT_OK(cow_tensor_fill_(f.t[1], 9));
	assert_acct(&f, 3, 4096, 4096, 1);
	g = cow_test_stats();
	cr_assert_eq(g.snapshot_copies, g0.snapshot_copies + 1);
	cr_assert_eq(g.materialize_copies, g0.materialize_copies + 1);
	cr_assert_eq(g.bytes_copied, g0.bytes_copied + 4096);
	/* A second write of the same tensor costs nothing more. */
	TT_OK(cow_tensor_fill_(f.t[1], 10));
	assert_acct(&f, 3, 4096, 4096, 1);
	cr_assert_eq(cow_test_stats().materialize_copies,
	    g0.materialize_copies + 1);
	TT_OK(cow_tensor_fill_(f.t[0], 9));
	assert_acct(&f, 3, 5120, 5120, 2);
	TT_OK(cow_snapshot_release_tensor(f.s, 1));
	assert_acct(&f, 2, 1024, 5120, 2);
	/* Released before its write: the write steals, no copy counted. */
	TT_OK(cow_snapshot_release_tensor(f.s, 2));
	g = cow_test_stats();
	TT_OK(cow_tensor_fill_(f.t[2], 9));
	cr_assert_eq(cow_test_stats().materialize_steals,
	    g.materialize_steals + 1);
	assert_acct(&f, 1, 1024, 5120, 2);
	cr_assert_eq(cow_test_stats().snapshot_copies, g0.snapshot_copies + 2);
	TT_OK(cow_snapshot_release_tensor(f.s, 0));
	assert_acct(&f, 0, 0, 5120, 2);
	fix_fini(&f);
}

/* The hook a take leaves on a live storage outlives the snapshot: a write
 * after the snapshot's release steals, and a later take unlinks the
 * finished hook (the fixture checks the snapshot's memory went). */
Test(snapshot, a_write_after_the_snapshots_release_steals)
{
	cow_tensor_t *t = bytes_of(256, 1);
	cow_snapshot_t *s = take(1, &t, (const char *[]){"t"});
	cow_stats_t g0;

	cow_snapshot_release(s);
	cr_assert_eq(shares(t), 1);
	g0 = cow_test_stats();
	TT_OK(cow_tensor_fill_(t, 2));
	cr_assert_eq(cow_test_stats().materialize_steals,
	    g0.materialize_steals + 1);
	cr_assert_eq(cow_test_stats().snapshot_copies, g0.snapshot_copies);
	cr_assert_eq(cow_test_stats().bytes_copied, g0.bytes_copied);
	/* Twice more, without a write between: the second take finds the
	 * first one's finished hook. */
	s = take(1, &t, (const char *[]){"t"});
	cow_snapshot_release(s);
	s = take(1, &t, (const char *[]){"t"});
	cr_assert_eq(shares(t), 2);
	release_all(s, 1, &t);
}

/* A write that fails (no memory for the copy) changes nothing: the
 * snapshot still holds the storage, and the next write's copy is counted
 * as the snapshot's. */
Test(snapshot, a_failed_write_keeps_the_snapshots_hook)
{
	cow_tensor_t *t, *g;
	cow_snapshot_t *s;
	cow_stats_t g0;
	unsigned char want[CAP], got[CAP];

	fault_setup();
	TT_OK(cow_tensor_full(COW_DTYPE_UINT8, 1, (int64_t[]){128}, 3, fa, &t));
	c_order(t, want);
	s = take(1, &t, (const char *[]){"t"});
	TT_OK(cow_allocator_fault_fail_nth(fa, 1));
	TT_FAILS(cow_tensor_fill_(t, 4), COW_ENOMEM, "cow_tensor_fill_");
	TT_OK(cow_allocator_fault_disarm(fa));
	cr_assert_eq(sstats(s).writer_copies, 0);
	cr_assert_eq(shares(t), 2, "the failed write changed nothing");
	g0 = cow_test_stats();
	TT_OK(cow_tensor_fill_(t, 5));
	cr_assert_eq(cow_test_stats().materialize_copies,
	    g0.materialize_copies + 1);
	cr_assert_eq(sstats(s).writer_copies, 1,
	    "the copy the snapshot caused is not counted");
	cr_assert_eq(sstats(s).extra_bytes, 128);
	cr_assert_eq(cow_test_stats().snapshot_copies, g0.snapshot_copies + 1);
	TT_OK(cow_snapshot_get(s, 0, &g));
	cr_assert_arr_eq(got, want, c_order(g, got));
	cow_tensor_release(g);
	release_all(s, 1, &t);
	fault_teardown();
}

/* Two snapshots of one storage: the first write copies once; each
 * snapshot counts it, the process counts one snapshot copy. */
Test(snapshot, two_snapshots_of_one_storage_one_write_one_copy)
{
	cow_tensor_t *t = bytes_of(2048, 1);
	cow_snapshot_t *a = take(1, &t, (const char *[]){"t"});
	cow_snapshot_t *b = take(1, &t, (const char *[]){"t"});
	cow_stats_t g0 = cow_test_stats(), g;

	cr_assert_eq(shares(t), 3);
	TT_OK(cow_tensor_fill_(t, 2));
	g = cow_test_stats();
	cr_assert_eq(g.materialize_copies, g0.materialize_copies + 1);
	cr_assert_eq(g.snapshot_copies, g0.snapshot_copies + 1,
	    "one write copied: snapshot_copies %llu, want %llu (it is also "
	    "counted in materialize_copies)",
	    (unsigned long long)(g.snapshot_copies - g0.snapshot_copies), 1ull);
	cr_assert_eq(sstats(a).writer_copies, 1);
	cr_assert_eq(sstats(b).writer_copies, 1);
	cr_assert_eq(sstats(a).extra_bytes, 2048);
	cr_assert_eq(sstats(b).extra_bytes, 2048);
	cow_snapshot_release(a);
	cow_snapshot_release(b);
	cow_tensor_release(t);
}

/* ------------------------------------------------------------------ */
/* Pins. */

Test(snapshot, pinned_tensors_are_eager_copies)
{
	cow_tensor_t *t[2] = {bytes_of(300, 5), bytes_of(100, 6)}, *g;
	unsigned char want[CAP], got[CAP];
	unsigned char *p;
	cow_stats_t g0, g1;
	cow_snapshot_t *s;
	cow_snapshot_stats_t st;
	struct DLManagedTensorVersioned *m;
	struct sink sink = {0};
	cow_snapshot_save_t how = stream_to(&sink, NULL);

	TT_OK(cow_tensor_pin(t[0], (void **)&p));
	c_order(t[0], want);
	g0 = cow_test_stats();
	s = take(2, t, (const char *[]){"pinned", "plain"});
	g1 = cow_test_stats();
	st = sstats(s);
	cr_assert_eq(st.pinned_copies, 1);
	cr_assert_eq(st.pinned_bytes, 300);
	cr_assert_eq(st.extra_bytes, 300, "a pinned copy is extra");
	cr_assert_eq(st.extra_peak, 300);
	cr_assert_eq(g1.bytes_copied, g0.bytes_copied + 300,
	    "only the pinned tensor is copied");
	cr_assert_eq(g1.pinned_clones, g0.pinned_clones + 1);
	cr_assert_eq(g1.lazy_clones, g0.lazy_clones + 2);
	cr_assert_eq(shares(t[1]), 2);
	/* The pointer the pin gave writes the live tensor only. */
	memset(p, 77, 300);
	TT_OK(cow_snapshot_get(s, 0, &g));
	cr_assert_arr_eq(got, want, c_order(g, got));
	cow_tensor_release(g);
	TT_OK(cow_tensor_unpin(t[0]));
	TT_OK(cow_snapshot_release_tensor(s, 0));
	cr_assert_eq(sstats(s).extra_bytes, 0);
	TT_OK(cow_snapshot_release_tensor(s, 1));
	cow_snapshot_release(s);

	/* A writable DLPack export pins too. */
	TT_OK(cow_tensor_fill_(t[0], 5));
	c_order(t[0], want);
	TT_OK(cow_tensor_to_dlpack_versioned(t[0], 0, &m));
	s = take(1, t, (const char *[]){"exported"});
	cr_assert_eq(sstats(s).pinned_copies, 1);
	cr_assert_eq(sstats(s).pinned_bytes, 300);
	memset(m->dl_tensor.data, 88, 300);
	TT_OK(cow_snapshot_save(s, &how));
	cr_assert_eq(sink.len, 300);
	cr_assert_arr_eq(sink.buf, want, 300, "the consumer's write shows");
	cr_assert_eq(sstats(s).extra_bytes, 0, "released when written");
	cr_assert_eq(sstats(s).extra_peak, 300);
	m->deleter(m);
	release_all(s, 2, t);
}

/* ------------------------------------------------------------------ */
/* Refusals at the take. */

Test(snapshot, functional_tensors_are_refused)
{
	cow_tensor_t *p = bytes_of(64, 1), *f, *t[2];
	cow_snapshot_t *s = SENTINEL_SNAP;
	cow_stats_t before;

	TT_OK(cow_functional_wrap(p, NULL, &f));
	cr_assert(cow_tensor_is_functional(f));
	t[0] = p;
	t[1] = f;
	before = cow_test_stats();
	TT_FAILS(cow_snapshot_take(2, t, (const char *[]){"plain", "fn"}, &s),
	    COW_EINVAL, "functional");
	cr_assert(strstr(cow_last_error(), "cow_snapshot_take") != NULL);
	cr_assert(strstr(cow_last_error(), "\"fn\"") != NULL);
	cr_assert_eq(s, SENTINEL_SNAP);
	cr_assert_eq(cow_test_stats().lazy_clones, before.lazy_clones,
	    "nothing was taken");
	cow_tensor_release(f);
	cow_tensor_release(p);
}

Test(snapshot, take_argument_errors_and_the_empty_snapshot)
{
	cow_tensor_t *t[2] = {bytes_of(8, 1), NULL};
	cow_snapshot_t *s = SENTINEL_SNAP;
	cow_snapshot_stats_t st;
	struct sink sink = {0};
	cow_snapshot_save_t how = stream_to(&sink, NULL);
	cow_tensor_t *g = SENTINEL_TENSOR;

	TT_FAILS(cow_snapshot_take(1, t, (const char *[]){"a"}, NULL),
	    COW_EINVAL, "cow_snapshot_take");
	TT_FAILS(cow_snapshot_take(1, NULL, (const char *[]){"a"}, &s),
	    COW_EINVAL, "tensors is NULL");
	TT_FAILS(cow_snapshot_take(1, t, NULL, &s), COW_EINVAL,
	    "names is NULL");
	TT_FAILS(cow_snapshot_take(2, t, (const char *[]){"a", "b"}, &s),
	    COW_EINVAL, "tensors[1] is NULL");
	TT_FAILS(cow_snapshot_take(1, t, (const char *[]){NULL}, &s),
	    COW_EINVAL, "names[0] is NULL");
	cr_assert_eq(s, SENTINEL_SNAP);
	cr_assert_eq(shares(t[0]), 1, "nothing was taken");
	/* The empty snapshot. */
	TT_OK(cow_snapshot_take(0, NULL, NULL, &s));
	cr_assert_eq(cow_snapshot_count(s), 0);
	st = sstats(s);
	cr_assert_eq(st.tensors, 0);
	cr_assert_eq(st.bytes, 0);
	TT_OK(cow_snapshot_save(s, &how));
	cr_assert_eq(sink.calls, 0);
	TT_FAILS(cow_snapshot_get(s, 0, &g), COW_ERANGE, "cow_snapshot_get");
	cr_assert_eq(g, SENTINEL_TENSOR);
	/* Out of range and NULL. */
	cr_assert_null(cow_snapshot_name(s, 0));
	cr_assert_eq(cow_snapshot_dtype(s, 0), COW_DTYPE_INVALID);
	cr_assert_eq(cow_snapshot_ndim(s, 0), -1);
	cr_assert_null(cow_snapshot_sizes(s, 0));
	cr_assert_eq(cow_snapshot_nbytes(s, 0), 0);
	cr_assert_not(cow_snapshot_is_held(s, 0));
	cr_assert_eq(cow_snapshot_count(NULL), 0);
	cr_assert_null(cow_snapshot_name(NULL, 0));
	cr_assert_eq(cow_snapshot_dtype(NULL, 0), COW_DTYPE_INVALID);
	cr_assert_not(cow_snapshot_is_held(NULL, 0));
	TT_FAILS(cow_snapshot_get(NULL, 0, &g), COW_EINVAL, "cow_snapshot_get");
	TT_FAILS(cow_snapshot_get(s, 0, NULL), COW_EINVAL, "cow_snapshot_get");
	cow_snapshot_stats(NULL, &st);
	cow_snapshot_stats(s, NULL);
	cow_snapshot_retain(NULL);
	cow_snapshot_release(NULL);
	cow_snapshot_cancel(NULL);
	cow_snapshot_retain(s);
	cow_snapshot_release(s);
	cr_assert_eq(cow_snapshot_count(s), 0, "one reference left");
	cow_snapshot_release(s);
	cow_tensor_release(t[0]);
}

/* A NULL argument of a save fails naming the function called. */
Test(snapshot, save_null_arguments_name_the_function)
{
	cow_tensor_t *t = bytes_of(8, 1);
	cow_snapshot_t *s = take(1, &t, (const char *[]){"t"});
	struct sink sink = {0};
	cow_snapshot_save_t how = stream_to(&sink, NULL);
	cow_snapshot_job_t *job = SENTINEL_JOB;

	TT_FAILS(cow_snapshot_save(NULL, &how), COW_EINVAL,
	    "cow_snapshot_save");
	TT_FAILS(cow_snapshot_save(s, NULL), COW_EINVAL, "cow_snapshot_save");
	TT_FAILS(cow_snapshot_save_start(NULL, &how, &job), COW_EINVAL,
	    "cow_snapshot_save_start");
	TT_FAILS(cow_snapshot_save_start(s, NULL, &job), COW_EINVAL,
	    "cow_snapshot_save_start");
	TT_FAILS(cow_snapshot_save_start(s, &how, NULL), COW_EINVAL,
	    "cow_snapshot_save_start");
	cr_assert_eq(job, SENTINEL_JOB);
	cr_assert_eq(sink.calls, 0);
	cr_assert(cow_snapshot_is_held(s, 0));
	release_all(s, 1, &t);
}

Test(snapshot, the_reshape_alias_check_refuses_the_take)
{
	cow_tensor_t *t, *u, *v[2];
	cow_snapshot_t *s = SENTINEL_SNAP;

	TT_OK(cow_reshape_mode_set_thread(COW_RESHAPE_WARN, NULL));
	TT_OK(cow_tensor_full(COW_DTYPE_FLOAT32, 1, (int64_t[]){4}, 1, sys,
	    &t));
	TT_OK(cow_tensor_reshape(t, 2, (int64_t[]){2, 2}, &u));
	TT_OK(cow_shadow_policy_set(COW_SHADOW_ERROR));
	TT_OK(cow_tensor_fill_(t, 2));
	v[0] = t;
	v[1] = u;
	TT_FAILS(cow_snapshot_take(2, v, (const char *[]){"t", "u"}, &s),
	    COW_EALIASING, "read-after-write");
	cr_assert(strstr(cow_last_error(), "cow_snapshot_take") != NULL);
	cr_assert_eq(s, SENTINEL_SNAP);
	cr_assert_not(cow_storage_is_cow(cow_tensor_storage(t)),
	    "nothing was taken");
	cow_tensor_release(u);
	cow_tensor_release(t);
}

/* ------------------------------------------------------------------ */
/* Stream saves. */

struct stream_watch {
	cow_snapshot_t *snap;
	cow_tensor_t **live;
	bool held[4][3];
	size_t shares[4][2];
};

static void
stream_watch(struct sink *s)
{
	struct stream_watch *w = s->ctx;
	int c = s->calls - 1;

	if (c >= 4)
		return;
	for (size_t i = 0; i < 3; i++)
		w->held[c][i] = cow_snapshot_is_held(w->snap, i);
	w->shares[c][0] = shares(w->live[0]);
	w->shares[c][1] = shares(w->live[1]);
}

/* A and C over storage 1, B over storage 2, saved A, B, C: each tensor is
 * released once written, each storage once its last tensor is. */
Test(snapshot, stream_releases_each_storage_after_its_last_tensor)
{
	cow_tensor_t *t[3];
	unsigned char want[CAP];
	size_t total;
	cow_snapshot_t *s;
	struct sink sink = {0};
	struct progress p = {0};
	struct stream_watch w = {0};
	cow_snapshot_save_t how = stream_to(&sink, &p);

	t[0] = bytes_of(64, 1);
	t[1] = bytes_of(32, 2);
	TT_OK(cow_tensor_narrow(t[0], 0, 8, 16, &t[2]));
	TT_OK(cow_tensor_fill_(t[2], 3));
	total = c_order_all(3, t, NULL, want);
	s = take(3, t, (const char *[]){"a", "b", "c"});
	w.snap = s;
	w.live = t;
	sink.before = stream_watch;
	sink.ctx = &w;
	TT_OK(cow_snapshot_save(s, &how));
	cr_assert_eq(sink.calls, 3);
	cr_assert_eq(sink.len, total);
	cr_assert_arr_eq(sink.buf, want, total);
	/* Writing A: everything held. */
	cr_assert(w.held[0][0] && w.held[0][1] && w.held[0][2]);
	cr_assert_eq(w.shares[0][0], 2);
	cr_assert_eq(w.shares[0][1], 2);
	/* Writing B: A released, its storage kept for C. */
	cr_assert(!w.held[1][0] && w.held[1][1] && w.held[1][2]);
	cr_assert_eq(w.shares[1][0], 2);
	cr_assert_eq(w.shares[1][1], 2);
	/* Writing C: B's storage gone. */
	cr_assert(!w.held[2][0] && !w.held[2][1] && w.held[2][2]);
	cr_assert_eq(w.shares[2][0], 2);
	cr_assert_eq(w.shares[2][1], 1);
	/* After: all gone. */
	cr_assert_eq(shares(t[0]), 1);
	cr_assert_eq(sstats(s).held_tensors, 0);
	/* Progress: after each chunk, monotone, complete. */
	cr_assert_eq(p.calls, 3);
	cr_assert_not(p.backwards);
	cr_assert_eq(p.done, total);
	cr_assert_eq(p.total, total);
	/* Released tensors cannot be saved again. */
	memset(&sink, 0, sizeof sink);
	TT_FAILS(cow_snapshot_save(s, &how), COW_ERELEASED, "tensor 0");
	cr_assert_eq(sink.calls, 0);
	release_all(s, 3, t);
}

/* Progress over chunks: a strided tensor of 2 MiB is gathered through a
 * 1 MiB buffer, so it goes out in two calls, each followed by progress. */
Test(snapshot, stream_progress_is_monotone_over_chunks)
{
	cow_tensor_t *big, *t[2];
	cow_snapshot_t *s;
	struct progress p = {0};
	struct sink *sk = calloc(1, sizeof *sk);
	uint64_t total;
	cow_snapshot_save_t how;

	cr_assert_not_null(sk);
	TT_OK(cow_tensor_arange(COW_DTYPE_INT32, 1 << 20, sys, &big));
	TT_OK(cow_tensor_as_strided(big, 1, (int64_t[]){1 << 19},
	    (int64_t[]){2}, 1, &t[0]));
	t[1] = ints(1, (int64_t[]){10}, 0);
	s = take(2, t, (const char *[]){"odd", "small"});
	total = sstats(s).bytes;
	cr_assert_eq(total, (2u << 20) + 40);
	how = (cow_snapshot_save_t){.mode = COW_SNAPSHOT_STREAM,
	    .write = NULL, .progress = progress_fn, .progress_ctx = &p};
	TT_FAILS(cow_snapshot_save(s, &how), COW_EINVAL, "write callback");
	how.mode = COW_SNAPSHOT_PERSIST_FIRST;
	TT_FAILS(cow_snapshot_save(s, &how), COW_EINVAL, "pwrite callback");
	how.mode = (cow_snapshot_save_mode_t)7;
	TT_FAILS(cow_snapshot_save(s, &how), COW_EINVAL, "unknown save mode");
	cr_assert_eq(p.calls, 0);
	/* The sink holds 64 KiB: the first 2 MiB only count (and flag the
	 * overflow); the calls are what this test is about. */
	how.mode = COW_SNAPSHOT_STREAM;
	how.write = sink_write;
	how.ctx = sk;
	TT_OK(cow_snapshot_save(s, &how));
	cr_assert_eq(sk->calls, 3, "2 MiB in 1 MiB gathers, then 40 bytes");
	cr_assert_eq(p.calls, 3);
	cr_assert_not(p.backwards);
	cr_assert_eq(p.done, total);
	cr_assert_eq(p.total, total);
	free(sk);
	cow_tensor_release(big);
	release_all(s, 2, t);
}

Test(snapshot, keep_keeps_every_tensor_for_another_save)
{
	cow_tensor_t *t[3] = {ints(1, (int64_t[]){5}, 0),
	    ints(2, (int64_t[]){2, 2}, 10), bytes_of(7, 9)};
	unsigned char want[CAP];
	size_t total = c_order_all(3, t, NULL, want);
	cow_snapshot_t *s = take(3, t, (const char *[]){"a", "b", "c"});
	struct sink a = {0}, b = {0};
	cow_snapshot_save_t how = stream_to(&a, NULL);

	how.keep = true;
	TT_OK(cow_snapshot_save(s, &how));
	for (size_t i = 0; i < 3; i++)
		cr_assert(cow_snapshot_is_held(s, i));
	cr_assert_eq(sstats(s).held_tensors, 3);
	cr_assert_eq(shares(t[0]), 2);
	for (int i = 0; i < 3; i++)
		TT_OK(cow_tensor_fill_(t[i], 0));
	how = stream_to(&b, NULL);
	TT_OK(cow_snapshot_save(s, &how));
	cr_assert_eq(a.len, total);
	cr_assert_eq(b.len, total);
	cr_assert_arr_eq(a.buf, want, total);
	cr_assert_arr_eq(b.buf, want, total);
	cr_assert_eq(sstats(s).held_tensors, 0);
	release_all(s, 3, t);
}

Test(snapshot, order_is_honoured_and_checked)
{
	cow_tensor_t *t[4];
	size_t order[4] = {2, 0, 3, 1}, bad[3][4] = {{0, 0, 1, 2},
	    {0, 1, 2, 4}, {3, 2, 1, (size_t)-1}};
	unsigned char want[CAP];
	size_t total, nb[4], prefix[4];
	cow_snapshot_t *s;
	struct sink sink = {0};
	struct target tg;
	struct progress p = {0};
	cow_snapshot_save_t how;

	t[0] = ints(1, (int64_t[]){3}, 0);
	t[1] = bytes_of(5, 1);
	t[2] = ints(2, (int64_t[]){2, 3}, 20);
	TT_OK(cow_tensor_transpose(t[2], 0, 1, &t[3]));
	for (int mode = 0; mode < 2; mode++) {
		total = c_order_all(4, t, order, want);
		s = take(4, t, (const char *[]){"a", "b", "c", "cT"});
		for (int k = 0; k < 3; k++) {
			memset(&sink, 0, sizeof sink);
			how = stream_to(&sink, NULL);
			how.mode = mode ? COW_SNAPSHOT_PERSIST_FIRST :
			    COW_SNAPSHOT_STREAM;
			how.pwrite = target_pwrite;
			how.order = bad[k];
			TT_FAILS(cow_snapshot_save(s, &how), COW_EINVAL,
			    "not a permutation");
			cr_assert_eq(sink.calls, 0);
		}
		for (size_t i = 0; i < 4; i++)
			cr_assert(cow_snapshot_is_held(s, i));
		memset(&p, 0, sizeof p);
		if (mode == 0) {
			memset(&sink, 0, sizeof sink);
			how = stream_to(&sink, &p);
			how.order = order;
			TT_OK(cow_snapshot_save(s, &how));
			cr_assert_eq(sink.len, total);
			cr_assert_arr_eq(sink.buf, want, total);
		} else {
			/* Each tensor at base_offset + the bytes before it in
			 * the order. */
			target_init(&tg);
			how = persist_to(&tg, 1000, &p);
			how.order = order;
			TT_OK(cow_snapshot_save(s, &how));
			assert_written_once(&tg, 1000, total);
			cr_assert_arr_eq(tg.buf + 1000, want, total);
			for (size_t k = 0, off = 1000; k < 4; k++) {
				nb[order[k]] = cow_snapshot_nbytes(s, order[k]);
				prefix[order[k]] = off;
				off += nb[order[k]];
			}
			for (int c = 0; c < tg.calls; c++) {
				bool found = false;

				for (size_t i = 0; i < 4; i++)
					found |= tg.log[c].off == prefix[i] &&
					    tg.log[c].n == nb[i];
				cr_assert(found, "pwrite at %llu of %zu bytes "
				    "is no tensor's place",
				    (unsigned long long)tg.log[c].off,
				    tg.log[c].n);
			}
			cr_assert_eq(tg.calls, 4);
			pthread_mutex_destroy(&tg.lock);
		}
		cr_assert_eq(p.done, total);
		cr_assert_eq(p.total, total);
		cr_assert_not(p.backwards);
		cow_snapshot_release(s);
	}
	for (int i = 0; i < 4; i++)
		cow_tensor_release(t[i]);
}

/* ------------------------------------------------------------------ */
/* Cancellation and failures. */

Test(snapshot, cancel_before_a_save_stops_it_at_once)
{
	struct fix f;
	struct sink sink = {0};
	struct target tg;
	cow_snapshot_save_t how = stream_to(&sink, NULL);

	fix_init(&f, 2, (int64_t[]){16, 16});
	cow_snapshot_cancel(f.s);
	TT_FAILS(cow_snapshot_save(f.s, &how), COW_ECANCELED, "cancelled");
	cr_assert(strstr(cow_last_error(), "cow_snapshot_save") != NULL);
	cr_assert_eq(sink.calls, 0);
	cr_assert(cow_snapshot_is_held(f.s, 0) && cow_snapshot_is_held(f.s, 1));
	/* The flag went with that save. */
	cow_snapshot_cancel(f.s);
	target_init(&tg);
	how = persist_to(&tg, 0, NULL);
	TT_FAILS(cow_snapshot_save(f.s, &how), COW_ECANCELED,
	    "cow_snapshot_save");
	cr_assert_eq(tg.calls, 0);
	cr_assert(cow_snapshot_is_held(f.s, 0) && cow_snapshot_is_held(f.s, 1));
	how = stream_to(&sink, NULL);
	TT_OK(cow_snapshot_save(f.s, &how));
	cr_assert_eq(sink.len, f.total);
	cr_assert_arr_eq(sink.buf, f.want, f.total);
	pthread_mutex_destroy(&tg.lock);
	fix_fini(&f);
}

/* Cancelled while saving: the tensors written are released, the others
 * still held, readable and releasable; releasing everything leaves
 * nothing behind (the fixture checks the allocators). */
Test(snapshot, cancel_while_saving_leaves_the_snapshot_usable)
{
	for (int mode = 0; mode < 2; mode++) {
		struct fix f;
		cow_tensor_t *g;
		unsigned char got[CAP];
		struct sink sink = {0};
		struct target tg;

		fix_init(&f, 3, (int64_t[]){100, 200, 300});
		for (int i = 0; i < 3; i++)
			TT_OK(cow_tensor_fill_(f.t[i], 0));
		TT_FAILS(save_acting(mode, &f, cow_snapshot_cancel, &sink, &tg),
		    COW_ECANCELED, "cow_snapshot_save");
		cr_assert_eq(mode ? tg.calls : sink.calls, 1);
		cr_assert_not(cow_snapshot_is_held(f.s, 0),
		    "written: released");
		cr_assert(cow_snapshot_is_held(f.s, 1));
		cr_assert(cow_snapshot_is_held(f.s, 2));
		cr_assert_eq(sstats(f.s).held_tensors, 2);
		TT_OK(cow_snapshot_get(f.s, 1, &g));
		cr_assert_arr_eq(got, f.want + 100, c_order(g, got));
		cow_tensor_release(g);
		TT_OK(cow_snapshot_release_tensor(f.s, 2));
		cr_assert_eq(shares(f.t[2]), 1);
		cr_assert_eq(sstats(f.s).extra_bytes, 200);
		cow_snapshot_release(f.s);
		for (int i = 0; i < 3; i++)
			cr_assert_eq(shares(f.t[i]), 1,
			    "tensor %d still shared", i);
		pthread_mutex_destroy(&tg.lock);
		for (int i = 0; i < 3; i++)
			cow_tensor_release(f.t[i]);
	}
}

Test(snapshot, failing_callbacks_give_eio_naming_the_errno)
{
	char want_msg[128];

	snprintf(want_msg, sizeof want_msg, "%s (%d)", strerror(ENOSPC),
	    ENOSPC);
	for (int mode = 0; mode < 2; mode++) {
		struct fix f;
		struct sink sink = {0};
		struct target tg;
		cow_snapshot_save_t how;

		fix_init(&f, 3, (int64_t[]){10, 20, 30});
		target_init(&tg);
		sink.fail_at = tg.fail_at = 2;
		sink.err = tg.err = ENOSPC;
		how = save_to(mode, &sink, &tg);
		how.keep = true;
		TT_FAILS(cow_snapshot_save(f.s, &how), COW_EIO, want_msg);
		cr_assert(strstr(cow_last_error(), mode ? "pwrite callback" :
		    "write callback") != NULL, "%s", cow_last_error());
		if (mode == 1)
			cr_assert(strstr(cow_last_error(), "offset 10") != NULL,
			    "%s", cow_last_error());
		for (size_t i = 0; i < 3; i++)
			cr_assert(cow_snapshot_is_held(f.s, i), "keep: %zu", i);
		/* With keep the save can be retried. */
		memset(&sink, 0, sizeof sink);
		how = stream_to(&sink, NULL);
		TT_OK(cow_snapshot_save(f.s, &how));
		cr_assert_eq(sink.len, f.total);
		cr_assert_arr_eq(sink.buf, f.want, f.total);
		cow_snapshot_release(f.s);
		/* Without keep, what was written is released. */
		f.s = take(3, f.t, abc);
		memset(&sink, 0, sizeof sink);
		target_init(&tg);
		sink.fail_at = tg.fail_at = 2;
		sink.err = tg.err = EPIPE;
		how = save_to(mode, &sink, &tg);
		TT_FAILS(cow_snapshot_save(f.s, &how), COW_EIO,
		    strerror(EPIPE));
		cr_assert_not(cow_snapshot_is_held(f.s, 0));
		cr_assert(cow_snapshot_is_held(f.s, 1));
		cr_assert(cow_snapshot_is_held(f.s, 2));
		pthread_mutex_destroy(&tg.lock);
		fix_fini(&f);
	}
}

Test(snapshot, released_tensors_fail_a_save)
{
	struct fix f;
	cow_tensor_t *g = SENTINEL_TENSOR;
	struct sink sink = {0};
	struct target tg;
	cow_snapshot_save_t how = stream_to(&sink, NULL);

	fix_init(&f, 3, (int64_t[]){10, 20, 30});
	TT_OK(cow_snapshot_release_tensor(f.s, 1));
	TT_FAILS(cow_snapshot_get(f.s, 1, &g), COW_ERELEASED,
	    "tensor 1 (\"b\")");
	cr_assert_eq(g, SENTINEL_TENSOR);
	TT_FAILS(cow_snapshot_save(f.s, &how), COW_ERELEASED,
	    "tensor 1 (\"b\")");
	cr_assert_eq(sink.calls, 0);
	target_init(&tg);
	how = persist_to(&tg, 0, NULL);
	TT_FAILS(cow_snapshot_save(f.s, &how), COW_ERELEASED,
	    "tensor 1 (\"b\")");
	cr_assert_eq(tg.calls, 0);
	cr_assert(cow_snapshot_is_held(f.s, 0),
	    "a refused save releases nothing");
	cr_assert(cow_snapshot_is_held(f.s, 2));
	pthread_mutex_destroy(&tg.lock);
	fix_fini(&f);
}

static void
release_third(cow_snapshot_t *snap)
{
	TT_OK(cow_snapshot_release_tensor(snap, 2));
}

Test(snapshot, a_tensor_released_during_a_save_fails_it)
{
	for (int mode = 0; mode < 2; mode++) {
		struct fix f;
		struct sink sink = {0};
		struct target tg;

		fix_init(&f, 3, (int64_t[]){10, 20, 30});
		TT_FAILS(save_acting(mode, &f, release_third, &sink, &tg),
		    COW_ERELEASED, mode ? "group" : "tensor 2 (\"c\")");
		cr_assert_eq(mode ? tg.calls : sink.calls, 2);
		cr_assert_eq(shares(f.t[2]), 1);
		cr_assert_eq(sstats(f.s).held_tensors, 0);
		pthread_mutex_destroy(&tg.lock);
		fix_fini(&f);
	}
}

Test(snapshot, a_second_concurrent_save_is_busy)
{
	struct fix f;
	struct gate gate;
	struct sink sink = {0}, other = {0};
	struct saver v;
	cow_snapshot_save_t how = stream_to(&sink, NULL), how2;
	cow_snapshot_job_t *job = SENTINEL_JOB;

	fix_init(&f, 2, (int64_t[]){10, 20});
	gate_init(&gate);
	sink.block_at = 1;
	sink.gate = &gate;
	saver_start(&v, f.s, &how);
	gate_wait_entered(&gate);
	how2 = stream_to(&other, NULL);
	TT_FAILS(cow_snapshot_save(f.s, &how2), COW_EBUSY, "another save");
	TT_FAILS(cow_snapshot_save_start(f.s, &how2, &job), COW_EBUSY,
	    "cow_snapshot_save_start");
	cr_assert_eq(job, SENTINEL_JOB);
	cr_assert_eq(other.calls, 0);
	gate_open(&gate);
	cr_assert_eq(saver_join(&v), COW_OK, "%s", v.message);
	cr_assert_eq(sink.len, f.total);
	cr_assert_arr_eq(sink.buf, f.want, f.total);
	gate_destroy(&gate);
	fix_fini(&f);
}

/* ------------------------------------------------------------------ */
/* Persist first. */

/* A writer reaches a tensor the save has not persisted: it persists it
 * itself (at its offset, on its own thread), the snapshot lets it go, and
 * the write steals. The saver is held inside its first pwrite (tensor A)
 * until the writer is done, so the order is the test's. */
Test(snapshot, persist_first_a_writer_persists_what_it_reaches_first)
{
	struct fix f;
	struct gate gate;
	struct target tg;
	struct progress p = {0};
	struct saver v;
	cow_snapshot_save_t how;
	cow_stats_t g0, g1;
	unsigned char *c;
	int c_calls = 0;

	fix_init(&f, 3, (int64_t[]){64, 128, 256});
	gate_init(&gate);
	target_init(&tg);
	tg.block = true;
	tg.block_off = 0; /* A, the saver's first */
	tg.gate = &gate;
	how = persist_to(&tg, 0, &p);
	saver_start(&v, f.s, &how);
	gate_wait_entered(&gate);
	g0 = cow_test_stats();
	/* C is at offset 64 + 128. */
	TT_OK(cow_tensor_fill_(f.t[2], 30));
	g1 = cow_test_stats();
	cr_assert_eq(sstats(f.s).writer_persists, 1);
	cr_assert_eq(g1.snapshot_persists, g0.snapshot_persists + 1);
	cr_assert_eq(g1.materialize_steals, g0.materialize_steals + 1,
	    "the writer's write steals");
	cr_assert_eq(g1.materialize_copies, g0.materialize_copies);
	cr_assert_eq(g1.bytes_copied, g0.bytes_copied);
	cr_assert_not(cow_snapshot_is_held(f.s, 2));
	cr_assert_eq(shares(f.t[2]), 1);
	pthread_mutex_lock(&tg.lock);
	for (int k = 0; k < tg.calls; k++) {
		if (tg.log[k].off != 192)
			continue;
		c_calls++;
		cr_assert(pthread_equal(tg.log[k].thread, pthread_self()),
		    "C was persisted by another thread than its writer");
		cr_assert_eq(tg.log[k].n, 256);
	}
	pthread_mutex_unlock(&tg.lock);
	cr_assert_eq(c_calls, 1);
	cr_assert_arr_eq(tg.buf + 192, f.want + 192, 256);
	TT_OK(cow_tensor_read_data(f.t[2], (const void **)&c));
	cr_assert_eq(c[0], 30);
	gate_open(&gate);
	cr_assert_eq(saver_join(&v), COW_OK, "%s", v.message);
	assert_written_once(&tg, 0, f.total);
	cr_assert_arr_eq(tg.buf, f.want, f.total);
	cr_assert_eq(tg.calls, 3);
	cr_assert(!pthread_equal(tg.log[0].thread, pthread_self()));
	cr_assert_eq(sstats(f.s).writer_copies, 0);
	cr_assert_eq(sstats(f.s).extra_peak, 0);
	cr_assert_eq(sstats(f.s).held_tensors, 0);
	cr_assert_eq(p.done, f.total);
	cr_assert_eq(p.total, f.total);
	cr_assert_not(p.backwards);
	gate_destroy(&gate);
	pthread_mutex_destroy(&tg.lock);
	fix_fini(&f);
}

struct writer {
	pthread_t thread;
	cow_tensor_t *t;
	double v;
	cow_status_t st;
};

static void *
writer_main(void *arg)
{
	struct writer *w = arg;

	w->st = cow_tensor_fill_(w->t, w->v);
	return NULL;
}

/* A writer reaching the tensor the saver is persisting waits for it, and
 * then steals: the tensor is written once, by the saver. */
Test(snapshot, persist_first_a_writer_waits_for_the_saver)
{
	struct fix f;
	struct gate gate;
	struct target tg;
	struct saver v;
	struct writer w = {.v = 50};
	cow_snapshot_save_t how;
	cow_stats_t g0, g1;

	fix_init(&f, 2, (int64_t[]){64, 32});
	g0 = cow_test_stats();
	w.t = f.t[0];
	gate_init(&gate);
	target_init(&tg);
	tg.block = true;
	tg.block_off = 0;
	tg.gate = &gate;
	how = persist_to(&tg, 0, NULL);
	saver_start(&v, f.s, &how);
	gate_wait_entered(&gate);
	cr_assert_eq(pthread_create(&w.thread, NULL, writer_main, &w), 0);
	gate_open(&gate);
	pthread_join(w.thread, NULL);
	TT_OK(w.st);
	cr_assert_eq(saver_join(&v), COW_OK, "%s", v.message);
	g1 = cow_test_stats();
	assert_written_once(&tg, 0, f.total);
	cr_assert_arr_eq(tg.buf, f.want, f.total);
	cr_assert_eq(sstats(f.s).writer_persists, 0);
	cr_assert_eq(sstats(f.s).writer_copies, 0);
	cr_assert_eq(g1.materialize_steals, g0.materialize_steals + 1);
	cr_assert_eq(g1.bytes_copied, g0.bytes_copied);
	gate_destroy(&gate);
	pthread_mutex_destroy(&tg.lock);
	fix_fini(&f);
}

static void
write_in_pwrite(struct target *tg)
{
	TT_OK(cow_tensor_fill_(tg->ctx, 60));
}

/* A persist-first save of @f's snapshot into @tg at @base (keeping the
 * tensors with @keep) that writes @w (unless NULL) inside its first pwrite
 * call; the target must hold every tensor once, with its value at the
 * take. */
static void
persist_checked(struct fix *f, struct target *tg, uint64_t base, bool keep,
    cow_tensor_t *w)
{
	cow_snapshot_save_t how;

	target_init(tg);
	tg->at_call = w != NULL ? write_in_pwrite : NULL;
	tg->hook_at = 1;
	tg->ctx = w;
	how = persist_to(tg, base, NULL);
	how.keep = keep;
	TT_OK(cow_snapshot_save(f->s, &how));
	assert_written_once(tg, base, f->total);
	cr_assert_arr_eq(tg->buf + base, f->want, f->total);
}

/* The saver's own thread writes a tensor not persisted yet (inside its
 * pwrite callback): it persists it on the spot, and the saver skips it. */
Test(snapshot, persist_first_a_writer_on_the_saving_thread)
{
	struct fix f;
	struct target tg;
	cow_stats_t g0, g1;

	fix_init(&f, 3, (int64_t[]){16, 32, 48});
	g0 = cow_test_stats();
	persist_checked(&f, &tg, 5, false, f.t[2]);
	g1 = cow_test_stats();
	cr_assert_eq(tg.calls, 3);
	cr_assert_eq(tg.log[1].off, 5 + 48, "C persisted inside A's call");
	cr_assert_eq(sstats(f.s).writer_persists, 1);
	cr_assert_eq(g1.snapshot_persists, g0.snapshot_persists + 1);
	cr_assert_eq(g1.materialize_steals, g0.materialize_steals + 1);
	cr_assert_eq(g1.bytes_copied, g0.bytes_copied);
	pthread_mutex_destroy(&tg.lock);
	fix_fini(&f);
}

/* A write before the save copies (the snapshot held the storage); the
 * save then persists the snapshot's copy. */
Test(snapshot, persist_first_after_a_copying_write)
{
	struct fix f;
	struct target tg;

	fix_init(&f, 2, (int64_t[]){40, 24});
	TT_OK(cow_tensor_fill_(f.t[1], 7));
	cr_assert_eq(sstats(f.s).writer_copies, 1);
	cr_assert_eq(sstats(f.s).extra_bytes, 24);
	persist_checked(&f, &tg, 0, false, NULL);
	cr_assert_eq(sstats(f.s).writer_persists, 0);
	cr_assert_eq(sstats(f.s).extra_bytes, 0);
	cr_assert_eq(sstats(f.s).extra_peak, 24);
	pthread_mutex_destroy(&tg.lock);
	fix_fini(&f);
}

/* keep: a persist-first save that keeps its tensors can be followed by
 * another one (a retry, or a second target), which must write them all
 * again; so must a writer reaching a tensor during the second. */
Test(snapshot, persist_first_with_keep_can_be_saved_again)
{
	struct fix f;
	struct target a, b;

	fix_init(&f, 2, (int64_t[]){40, 24});
	persist_checked(&f, &a, 0, true, NULL);
	cr_assert(cow_snapshot_is_held(f.s, 0) && cow_snapshot_is_held(f.s, 1));
	/* The second save, with a writer reaching B inside A's call. */
	persist_checked(&f, &b, 0, false, f.t[1]);
	cr_assert_eq(sstats(f.s).writer_persists, 1);
	cr_assert_eq(sstats(f.s).held_tensors, 0);
	pthread_mutex_destroy(&a.lock);
	pthread_mutex_destroy(&b.lock);
	fix_fini(&f);
}

/* ------------------------------------------------------------------ */
/* Jobs. */

struct waiter {
	pthread_t thread;
	cow_snapshot_job_t *job;
	cow_status_t st;
};

static void *
waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->st = cow_snapshot_job_wait(w->job);
	return NULL;
}

Test(snapshot, jobs_progress_done_and_waits_from_two_threads)
{
	cow_tensor_t *t[3] = {bytes_of(1000, 1), bytes_of(2000, 2),
	    ints(2, (int64_t[]){3, 3}, 4)};
	unsigned char want[CAP];
	size_t total = c_order_all(3, t, NULL, want);
	cow_snapshot_t *s = take(3, t, (const char *[]){"a", "b", "c"});
	struct gate gate;
	struct sink sink = {0};
	struct progress p = {0};
	struct waiter w[2];
	cow_snapshot_job_t *job = SENTINEL_JOB;
	cow_snapshot_save_t how = stream_to(&sink, &p);
	uint64_t done = 1, tot = 0;

	gate_init(&gate);
	sink.block_at = 2;
	sink.gate = &gate;
	TT_OK(cow_snapshot_save_start(s, &how, &job));
	cr_assert_neq(job, SENTINEL_JOB);
	/* The caller's reference may go: the job holds its own. */
	cow_snapshot_release(s);
	gate_wait_entered(&gate);
	cr_assert_not(cow_snapshot_job_done(job));
	cow_snapshot_job_progress(job, &done, &tot);
	cr_assert_eq(done, 1000, "the first tensor's bytes");
	cr_assert_eq(tot, total);
	for (int i = 0; i < 2; i++) {
		w[i].job = job;
		cr_assert_eq(pthread_create(&w[i].thread, NULL, waiter_main,
		    &w[i]), 0);
	}
	gate_open(&gate);
	for (int i = 0; i < 2; i++) {
		pthread_join(w[i].thread, NULL);
		cr_assert_eq(w[i].st, COW_OK);
	}
	TT_OK(cow_snapshot_job_wait(job));
	TT_OK(cow_snapshot_job_wait(job));
	cr_assert(cow_snapshot_job_done(job));
	cow_snapshot_job_progress(job, &done, &tot);
	cr_assert_eq(done, total);
	cr_assert_eq(tot, total);
	cow_snapshot_job_progress(job, NULL, NULL);
	cr_assert_eq(p.done, total, "the caller's progress callback runs too");
	cr_assert_not(p.backwards);
	cr_assert_eq(sink.len, total);
	cr_assert_arr_eq(sink.buf, want, total);
	/* The save released every tensor as it wrote it; the job still
	 * holds the snapshot, which goes with it. */
	for (int i = 0; i < 3; i++)
		cr_assert_eq(shares(t[i]), 1);
	cow_snapshot_job_release(job);
	for (int i = 0; i < 3; i++)
		cow_tensor_release(t[i]);
	gate_destroy(&gate);
}

Test(snapshot, job_cancel_and_failures_reach_wait)
{
	struct fix f;
	cow_tensor_t *g;
	unsigned char got[CAP];
	struct gate gate;
	struct sink sink = {0};
	struct target tg;
	cow_snapshot_job_t *job = SENTINEL_JOB;
	cow_snapshot_save_t how = stream_to(&sink, NULL);
	size_t bad[3] = {0, 0, 0};
	char want_msg[128];

	fix_init(&f, 3, (int64_t[]){10, 20, 30});
	c_order(f.t[1], f.want);
	gate_init(&gate);
	sink.block_at = 1;
	sink.gate = &gate;
	TT_OK(cow_snapshot_save_start(f.s, &how, &job));
	gate_wait_entered(&gate);
	cow_snapshot_job_cancel(job);
	gate_open(&gate);
	TT_FAILS(cow_snapshot_job_wait(job), COW_ECANCELED, "cancelled");
	cr_assert(strstr(cow_last_error(), "cow_snapshot_job_wait") != NULL);
	TT_FAILS(cow_snapshot_job_wait(job), COW_ECANCELED, "cancelled");
	cr_assert(cow_snapshot_job_done(job));
	cow_snapshot_job_release(job);
	cr_assert_not(cow_snapshot_is_held(f.s, 0));
	cr_assert(cow_snapshot_is_held(f.s, 1) && cow_snapshot_is_held(f.s, 2));
	TT_OK(cow_snapshot_get(f.s, 1, &g));
	cr_assert_arr_eq(got, f.want, c_order(g, got));
	cow_tensor_release(g);
	/* A failing pwrite reaches wait with its errno. */
	target_init(&tg);
	tg.fail_at = 1;
	tg.err = EIO;
	how = persist_to(&tg, 0, NULL);
	how.order = (size_t[]){2, 1, 0};
	snprintf(want_msg, sizeof want_msg, "%s (%d)", strerror(EIO), EIO);
	TT_FAILS(cow_snapshot_save(f.s, &how), COW_ERELEASED, "tensor 0");
	cr_assert_eq(tg.calls, 0);
	cow_snapshot_release(f.s);
	f.s = take(3, f.t, abc);
	TT_OK(cow_snapshot_save_start(f.s, &how, &job));
	TT_FAILS(cow_snapshot_job_wait(job), COW_EIO, want_msg);
	cow_snapshot_job_release(job);
	/* Immediate errors: no job. */
	job = SENTINEL_JOB;
	how.order = bad;
	TT_FAILS(cow_snapshot_save_start(f.s, &how, &job), COW_EINVAL,
	    "not a permutation");
	cr_assert_eq(job, SENTINEL_JOB);
	how.order = NULL;
	TT_FAILS(cow_snapshot_job_wait(NULL), COW_EINVAL,
	    "cow_snapshot_job_wait");
	cr_assert(cow_snapshot_job_done(NULL));
	cow_snapshot_job_progress(NULL, NULL, NULL);
	cow_snapshot_job_cancel(NULL);
	cow_snapshot_job_release(NULL);
	gate_destroy(&gate);
	pthread_mutex_destroy(&tg.lock);
	fix_fini(&f);
}

struct releaser {
	pthread_t thread;
	cow_snapshot_job_t *job;
	bool returned;
};

static void *
releaser_main(void *arg)
{
	struct releaser *r = arg;

	cow_snapshot_job_release(r->job);
	r->returned = true;
	return NULL;
}

/* job_release while the save runs: it cancels and waits; what was written
 * is released, the rest held; nothing leaks. */
Test(snapshot, job_release_while_running)
{
	struct fix f;
	struct gate gate;
	struct sink sink = {0};
	struct releaser r = {0};
	cow_snapshot_save_t how = stream_to(&sink, NULL);

	fix_init(&f, 3, (int64_t[]){10, 20, 30});
	gate_init(&gate);
	sink.block_at = 1;
	sink.gate = &gate;
	TT_OK(cow_snapshot_save_start(f.s, &how, &r.job));
	gate_wait_entered(&gate);
	/* The cancel is set before the save can go on (so the outcome is
	 * known); the release then waits for it. */
	cow_snapshot_job_cancel(r.job);
	cr_assert_eq(pthread_create(&r.thread, NULL, releaser_main, &r), 0);
	gate_open(&gate);
	pthread_join(r.thread, NULL);
	cr_assert(r.returned);
	cr_assert_eq(sink.calls, 1);
	cr_assert_not(cow_snapshot_is_held(f.s, 0));
	cr_assert(cow_snapshot_is_held(f.s, 1) && cow_snapshot_is_held(f.s, 2));
	/* A new save after it starts cleanly. */
	TT_OK(cow_snapshot_release_tensor(f.s, 1));
	TT_OK(cow_snapshot_release_tensor(f.s, 2));
	gate_destroy(&gate);
	fix_fini(&f);
}

/* ------------------------------------------------------------------ */
/* Edges found after the first cut. */

/* A second save while one runs is busy, even when the running one has
 * already released tensors (the busy check comes first). */
Test(snapshot, a_second_save_is_busy_before_it_looks_at_released_tensors)
{
	struct fix f;
	struct gate gate;
	struct sink sink = {0}, other = {0};
	struct saver v;
	cow_snapshot_save_t how = stream_to(&sink, NULL), how2;

	fix_init(&f, 2, (int64_t[]){10, 20});
	gate_init(&gate);
	sink.block_at = 2; /* A is written and released by then */
	sink.gate = &gate;
	saver_start(&v, f.s, &how);
	gate_wait_entered(&gate);
	cr_assert_not(cow_snapshot_is_held(f.s, 0));
	how2 = stream_to(&other, NULL);
	TT_FAILS(cow_snapshot_save(f.s, &how2), COW_EBUSY, "another save");
	gate_open(&gate);
	cr_assert_eq(saver_join(&v), COW_OK, "%s", v.message);
	gate_destroy(&gate);
	fix_fini(&f);
}

/* A write from inside the saver's own persisting of that storage (its
 * pwrite callback writes the live tensor) cannot wait for its own claim:
 * it copies, and the save still persists the values at the take. */
static void
write_a_from_the_callback(struct target *t)
{
	struct fix *f = t->ctx;

	TT_OK(cow_tensor_fill_(f->t[0], 99));
}

Test(snapshot, persist_first_a_write_inside_the_savers_own_claim_copies)
{
	struct fix f;
	struct target tg;
	cow_snapshot_save_t how;
	cow_stats_t g0, g1;

	fix_init(&f, 2, (int64_t[]){16, 32});
	target_init(&tg);
	tg.ctx = &f;
	tg.hook_at = 1; /* A's pwrite: the saver holds A's claim */
	tg.at_call = write_a_from_the_callback;
	how = persist_to(&tg, 0, NULL);
	g0 = cow_test_stats();
	TT_OK(cow_snapshot_save(f.s, &how));
	g1 = cow_test_stats();
	cr_assert_arr_eq(tg.buf, f.want, f.total);
	assert_written_once(&tg, 0, f.total);
	cr_assert_eq(g1.materialize_copies, g0.materialize_copies + 1);
	cr_assert_eq(sstats(f.s).writer_persists, 0);
	cr_assert_eq(tt_geti(f.t[0], (int64_t[]){0}), 99);
	pthread_mutex_destroy(&tg.lock);
	fix_fini(&f);
}

/* A stream of no bytes still reports progress once, complete; with a
 * cancel pending it is cancelled like any other save. */
Test(snapshot, a_stream_of_no_bytes_reports_progress_and_honours_cancel)
{
	cow_tensor_t *t[2] = {bytes_of(0, 1), bytes_of(0, 2)};
	cow_snapshot_t *s = take(2, t, abc);
	struct sink sink = {0};
	struct progress p = {0};
	cow_snapshot_save_t how = stream_to(&sink, &p);

	cow_snapshot_cancel(s);
	TT_FAILS(cow_snapshot_save(s, &how), COW_ECANCELED, "cancelled");
	cr_assert(cow_snapshot_is_held(s, 0) && cow_snapshot_is_held(s, 1));
	TT_OK(cow_snapshot_save(s, &how));
	cr_assert_eq(p.calls, 1);
	cr_assert_eq(p.done, 0);
	cr_assert_eq(p.total, 0);
	cr_assert_eq(sink.calls, 0);
	release_all(s, 2, t);
}
