/*
 * scn_snapshot.c - the persist-first save of a snapshot
 * (runtime/snapshot/save.c, include/cowstore/snapshot.h) against a writer
 * of a live tensor, and a reader or an early release of the snapshot:
 * issue 37's "the persister and a writer that reach the same tensor at
 * once must neither both write it nor lose it".
 *
 * Set-up: tensors of NB bytes, each over a storage of its own (one group
 * each) and filled with a pattern of its own; a snapshot of them. Thread a
 * saves it (cow_snapshot_save, COW_SNAPSHOT_PERSIST_FIRST); its pwrite
 * callback, which runs on whichever thread persists a tensor, records per
 * byte of the target how often it was written, with which byte and by
 * which thread (plain memory; for the weak-memory mode it marks its read
 * of the snapshot's bytes and its write of the target as plain accesses).
 * Once the save returns, a reads the target (the caller of a save that
 * returned may: every tensor is persisted). Thread b writes live tensors
 * (cow_tensor_mutable_data runs the group's write hook: the persist before
 * the write), each with a pattern of its own. Thread c, in the scenarios
 * that have one, takes the snapshot's value of a tensor (cow_snapshot_get)
 * or releases it early (cow_snapshot_release_tensor). In snapshot_fail the
 * pwrite of one tensor fails.
 *
 * The snapshot's words (its accounting, each tensor's held flag, each
 * group's state word and held count) are counters (cow__atomic_*): they
 * are scheduling points here (sync_words), the library's statistics and
 * the allocator's counters are not.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic.h"
#include "scenario.h"
#include "snapshot/snapshot.h"

#define NB 16           /* bytes per tensor */
#define MAXT 2          /* tensors */
#define BASE 8          /* the target's offset of the first tensor */
#define SEED_LIVE 11    /* tensor i's pattern at the take: SEED_LIVE + i */
#define SEED_WRITE 41   /* b's writes: SEED_WRITE + i */

enum snap_third { SNAP_NONE, SNAP_GET, SNAP_RELEASE };

struct snap_cfg {
	int ntensors;
	size_t order[MAXT]; /* the save's order */
	int writes[MAXT];   /* the tensors b writes, in order; -1 ends */
	enum snap_third third;
	int third_tensor;   /* the tensor c reads or releases */
	int fail_tensor;    /* the tensor whose pwrite fails (EIO); -1 none */
};

struct snap_scn {
	const struct snap_cfg *cfg;
	cow_tensor_t *t[MAXT];
	cow_snapshot_t *snap;
	cow_status_t save_status;
	/* The target: per byte, the last byte written, how often, by whom
	 * (a thread's letter; 0: nobody). Written by the pwrite callback. */
	unsigned char bytes[MAXT * NB];
	unsigned char count[MAXT * NB];
	char who[MAXT * NB];
	bool copied[MAXT];   /* b's write of tensor i copied the bytes */
	cow_status_t third_status;
	cow_snapshot_stats_t after; /* the snapshot's accounting at the end */
};

/* The checked thread that runs (its letter); 0 outside them. */
static _Thread_local char snap_me;

/* Where tensor @i is in the target: after the tensors before it in the
 * save's order. */
static size_t
snap_at(const struct snap_scn *st, int i)
{
	size_t k = 0;

	while (st->cfg->order[k] != (size_t)i)
		k++;
	return k * NB;
}

static int
snap_pwrite(void *ctx, const void *data, size_t n, uint64_t offset)
{
	struct snap_scn *st = ctx;
	size_t at;

	ilv_check(offset >= BASE && offset - BASE <= sizeof st->bytes &&
	    n <= sizeof st->bytes - (offset - BASE), "pwrite of %zu bytes at "
	    "%llu, outside the target (%d to %zu)", n,
	    (unsigned long long)offset, BASE, BASE + sizeof st->bytes);
	at = (size_t)(offset - BASE);
	if (st->cfg->fail_tensor >= 0 &&
	    at == snap_at(st, st->cfg->fail_tensor))
		return EIO;
	/* The persister reads the snapshot's bytes and writes the target. */
	COW__SCHED_ACCESS(data, n, 0);
	COW__SCHED_ACCESS(&st->bytes[at], n, 1);
	memcpy(&st->bytes[at], data, n);
	for (size_t i = at; i < at + n; i++) {
		st->count[i]++;
		st->who[i] = snap_me;
	}
	return 0;
}

/* How often the target's range of tensor @i was written: 0 or 1, the
 * same for each of its bytes (ilv_check names @when), and then with the
 * tensor's values at the take. */
static int
snap_range_writes(struct snap_scn *st, int i, const char *when)
{
	size_t at = snap_at(st, i);
	unsigned char *p = &st->bytes[at];
	int n = st->count[at];

	for (size_t b = 0; b < NB; b++)
		ilv_check(st->count[at + b] <= 1 && st->count[at + b] == n,
		    "%s: byte %zu of tensor %d was written %d times to the "
		    "target, byte 0 %d times (once: by the saver or by a "
		    "writer)", when, b, i, st->count[at + b], n);
	ilv_check(n == 0 || ilv_holds(p, NB, SEED_LIVE + (unsigned)i), "%s: "
	    "the target's tensor %d is not the tensor's value at the take",
	    when, i);
	return n;
}

/* The target holds tensor @i exactly once. */
static void
snap_check_range(struct snap_scn *st, int i, const char *when)
{
	ilv_check(snap_range_writes(st, i, when) == 1, "%s: tensor %d is "
	    "not in the target: lost (neither the saver nor a writer "
	    "persisted it)", when, i);
}

/* Is tensor @i the one thread c releases? */
static bool
snap_released(const struct snap_scn *st, int i)
{
	return st->cfg->third == SNAP_RELEASE && st->cfg->third_tensor == i;
}

static void *
snap_setup(const struct snap_cfg *cfg)
{
	struct snap_scn *st = ilv_state_new(sizeof *st);
	static const char *const names[MAXT] = {"t0", "t1"};
	const int64_t sizes[1] = {NB};
	unsigned char pattern[NB];

	st->cfg = cfg;
	for (int i = 0; i < cfg->ntensors; i++) {
		ilv_fill(pattern, NB, SEED_LIVE + (unsigned)i);
		ilv_check(cow_tensor_from_data(COW_DTYPE_UINT8, 1, sizes,
		    pattern, NULL, &st->t[i]) == COW_OK, "set-up: %s",
		    cow_last_error());
	}
	ilv_check(cow_snapshot_take((size_t)cfg->ntensors, st->t, names,
	    &st->snap) == COW_OK, "set-up: cow_snapshot_take: %s",
	    cow_last_error());
	return st;
}

/* The snapshot's words: its own (accounting, the running save) and the
 * tensor and group records, which its block lays out after it, in this
 * order (snapshot.c, block_layout). */
static void
snap_sync_words(void *arg, uintptr_t *lo, uintptr_t *hi)
{
	struct snap_scn *st = arg;
	struct cow_snapshot *snap = st->snap;

	*lo = (uintptr_t)snap;
	*hi = (uintptr_t)(snap->groups + snap->ngroups);
	ilv_check((uintptr_t)(snap->tensors + snap->count) <=
	    (uintptr_t)snap->groups, "the snapshot's layout changed: "
	    "update sync_words");
}

static void
snap_saver(struct snap_scn *st)
{
	cow_snapshot_save_t how = {
		.mode = COW_SNAPSHOT_PERSIST_FIRST,
		.pwrite = snap_pwrite,
		.ctx = st,
		.base_offset = BASE,
		.order = st->cfg->order,
	};

	st->save_status = cow_snapshot_save(st->snap, &how);
	/* Nothing released a tensor early, yet the save found one released:
	 * a group persisted and released, then claimed again. */
	ilv_check(st->save_status != COW_ERELEASED || st->cfg->third ==
	    SNAP_RELEASE, "thread a: the save found a tensor released that "
	    "nothing released early: a second claim of a group already "
	    "persisted and released (%s)", cow_last_error());
	/* An early release may fail the save, a failing pwrite must; nothing
	 * else may. */
	if (st->cfg->fail_tensor >= 0)
		ilv_check(st->save_status == COW_EIO, "thread a: the save "
		    "whose pwrite of tensor %d fails gave %d (%s)",
		    st->cfg->fail_tensor, (int)st->save_status,
		    cow_last_error());
	else
		ilv_check(st->save_status == COW_OK || (st->cfg->third ==
		    SNAP_RELEASE && st->save_status == COW_ERELEASED),
		    "thread a: cow_snapshot_save failed (%d): %s",
		    (int)st->save_status, cow_last_error());
	/* Returned: every tensor is in the target, or (failed) at most
	 * once. The read of the whole target is what the writers' pwrite
	 * calls must happen before. */
	COW__SCHED_ACCESS(st->bytes, (size_t)st->cfg->ntensors * NB, 0);
	for (int i = 0; i < st->cfg->ntensors; i++)
		if (st->save_status == COW_OK)
			snap_check_range(st, i, "thread a, once the save "
			    "returned");
		else
			(void)snap_range_writes(st, i, "thread a, once the "
			    "save failed");
}

static void
snap_writer(struct snap_scn *st)
{
	for (int k = 0; k < MAXT && st->cfg->writes[k] >= 0; k++) {
		int i = st->cfg->writes[k];
		const void *before = cow_tensor_const_data(st->t[i]);
		void *p;

		ilv_check(cow_tensor_mutable_data(st->t[i], &p) == COW_OK,
		    "thread b: the write of tensor %d failed: %s", i,
		    cow_last_error());
		st->copied[i] = p != before;
		ilv_check(ilv_holds(p, NB, SEED_LIVE + (unsigned)i),
		    "thread b: tensor %d does not hold its own values before "
		    "b writes it", i);
		ilv_fill(p, NB, SEED_WRITE + (unsigned)i);
	}
}

static void
snap_third(struct snap_scn *st)
{
	int i = st->cfg->third_tensor;
	cow_tensor_t *v;
	const void *p;

	if (st->cfg->third == SNAP_RELEASE) {
		st->third_status = cow_snapshot_release_tensor(st->snap,
		    (size_t)i);
		return;
	}
	st->third_status = cow_snapshot_get(st->snap, (size_t)i, &v);
	if (st->third_status != COW_OK)
		return;
	ilv_check(cow_tensor_read_data(v, &p) == COW_OK, "thread c: read: "
	    "%s", cow_last_error());
	COW__SCHED_ACCESS(p, NB, 0);
	ilv_check(ilv_holds(p, NB, SEED_LIVE + (unsigned)i), "thread c: the "
	    "snapshot's tensor %d is not its value at the take", i);
	cow_tensor_release(v);
}

static void
snap_thread(void *arg, int id)
{
	struct snap_scn *st = arg;

	snap_me = (char)('a' + id);
	if (id == 0)
		snap_saver(st);
	else if (id == 1)
		snap_writer(st);
	else
		snap_third(st);
	snap_me = 0;
}

/* The groups' states: a group whose tensors are all released has let its
 * lazy copy go; one still held counts its bytes as extra once its live
 * storage was written. */
static void
snap_check_groups(struct snap_scn *st)
{
	struct cow_snapshot *snap = st->snap;
	uint64_t extra = 0;

	for (size_t k = 0; k < snap->ngroups; k++) {
		const struct cow__snap_group *g = &snap->groups[k];
		uint64_t w = cow__atomic_load_relaxed(&g->state);
		bool held = false;

		for (size_t m = 0; m < g->count; m++)
			held |= cow_snapshot_is_held(snap,
			    snap->members[g->first + m]);
		ilv_check(cow__snap_state(w) == (held ? COW__GROUP_HELD :
		    COW__GROUP_RELEASED), "group %zu (tensor %zu) is in state "
		    "%u with %s tensors held (a group whose tensors are all "
		    "released lets its lazy copy go)", k,
		    snap->members[g->first], cow__snap_state(w), held ?
		    "some" : "no");
		ilv_check(w < COW__GROUP_READER, "group %zu: a reader is left "
		    "inside", k);
		if (held && (w & COW__GROUP_WRITTEN) != 0)
			extra += g->nbytes;
	}
	ilv_check(st->after.extra_bytes == extra, "the snapshot counts %llu "
	    "extra bytes; the groups it holds whose live storage was "
	    "written have %llu", (unsigned long long)st->after.extra_bytes,
	    (unsigned long long)extra);
}

static void
snap_check(void *arg)
{
	struct snap_scn *st = arg;
	const struct snap_cfg *cfg = st->cfg;
	int by_b = 0, by_a = 0, persisted = 0, held = 0, copies = 0;

	cow_snapshot_stats(st->snap, &st->after);
	for (int i = 0; i < cfg->ntensors; i++) {
		char who = st->who[snap_at(st, i)];
		int n = snap_range_writes(st, i, "at the end");

		if (st->save_status == COW_OK)
			snap_check_range(st, i, "at the end");
		else if (snap_released(st, i) || i == cfg->fail_tensor)
			ilv_check(n == 0, "the save failed for tensor %d, yet "
			    "it is in the target", i);
		ilv_check(n == 0 || who == 'a' || who == 'b', "tensor %d was "
		    "persisted by thread %c", i, who);
		by_a += n == 1 && who == 'a';
		by_b += n == 1 && who == 'b';
		persisted += n;
		held += n == 0 && !snap_released(st, i);
		ilv_check(cow_snapshot_is_held(st->snap, (size_t)i) ==
		    (n == 0 && !snap_released(st, i)), "tensor %d is %sheld "
		    "after the save, which %s it", i,
		    cow_snapshot_is_held(st->snap, (size_t)i) ? "" : "not ",
		    n == 1 ? "persisted" : "did not persist");
	}
	ilv_check(by_a + by_b == persisted, "tensors persisted by a: %d, by "
	    "b: %d, in all: %d", by_a, by_b, persisted);
	ilv_check(st->after.writer_persists == (uint64_t)by_b, "the "
	    "snapshot counts %llu writer persists; thread b persisted %d "
	    "tensors", (unsigned long long)st->after.writer_persists, by_b);
	for (int k = 0; k < MAXT && cfg->writes[k] >= 0; k++) {
		const void *p = cow_tensor_const_data(st->t[cfg->writes[k]]);

		ilv_check(ilv_holds(p, NB, SEED_WRITE +
		    (unsigned)cfg->writes[k]), "live tensor %d does not hold "
		    "b's write", cfg->writes[k]);
		copies += st->copied[cfg->writes[k]];
	}
	ilv_check(st->after.writer_copies <= (uint64_t)copies, "the snapshot "
	    "counts %llu writer copies; b's writes copied %d times",
	    (unsigned long long)st->after.writer_copies, copies);
	for (int i = 0; i < cfg->ntensors; i++) {
		bool written = false;

		for (int k = 0; k < MAXT && cfg->writes[k] >= 0; k++)
			written |= cfg->writes[k] == i;
		if (!written)
			ilv_check(ilv_holds(cow_tensor_const_data(st->t[i]), NB,
			    SEED_LIVE + (unsigned)i), "live tensor %d, which "
			    "nobody wrote, changed", i);
	}
	ilv_check(st->after.held_tensors == (uint64_t)held, "the snapshot "
	    "counts %llu tensors held; %d were neither persisted nor "
	    "released", (unsigned long long)st->after.held_tensors, held);
	snap_check_groups(st);
	ilv_check(st->after.extra_peak == st->after.writer_copies * NB,
	    "extra bytes peaked at %llu after %llu writer copies of %d "
	    "bytes", (unsigned long long)st->after.extra_peak,
	    (unsigned long long)st->after.writer_copies, NB);
	if (cfg->third == SNAP_GET)
		ilv_check(st->third_status == COW_OK ||
		    st->third_status == COW_ERELEASED, "thread c: "
		    "cow_snapshot_get gave %d", (int)st->third_status);
	if (cfg->third == SNAP_RELEASE)
		ilv_check(st->third_status == COW_OK, "thread c: "
		    "cow_snapshot_release_tensor gave %d",
		    (int)st->third_status);
}

static void
snap_teardown(void *arg)
{
	struct snap_scn *st = arg;

	cow_snapshot_release(st->snap);
	for (int i = 0; i < st->cfg->ntensors; i++)
		cow_tensor_release(st->t[i]);
	free(st);
}

/* ------------------------------------------------------------------ */
/* The scenarios.                                                       */

/* snapshot: a saves t0 and t1; b writes t0. */
static const struct snap_cfg snap_cfg_main = {
	.ntensors = 2,
	.order = {0, 1},
	.writes = {0, -1},
	.third = SNAP_NONE,
	.fail_tensor = -1,
};

/* snapshot_get: a saves t0; b writes it; c takes the snapshot's value of
 * it (a reader inside the group, against the release of its lazy copy). */
static const struct snap_cfg snap_cfg_get = {
	.ntensors = 1,
	.order = {0},
	.writes = {0, -1},
	.third = SNAP_GET,
	.third_tensor = 0,
	.fail_tensor = -1,
};

/* snapshot_release: a saves t1, then t0; b writes t0; c releases t1 early
 * (the save may fail with COW_ERELEASED, and then ends while b may be
 * claiming t0: the end-of-save handshake). */
static const struct snap_cfg snap_cfg_release = {
	.ntensors = 2,
	.order = {1, 0},
	.writes = {0, -1},
	.third = SNAP_RELEASE,
	.third_tensor = 1,
	.fail_tensor = -1,
};

/* snapshot_fail: a saves t1, then t0, and its pwrite of t1 fails: the
 * save stops there and ends while b may be claiming t0 (the end-of-save
 * handshake: b persists t0, or finds the save gone and writes without
 * it). */
static const struct snap_cfg snap_cfg_fail = {
	.ntensors = 2,
	.order = {1, 0},
	.writes = {0, -1},
	.third = SNAP_NONE,
	.fail_tensor = 1,
};

/* The scenario @id (struct ilv_scn_<id>) of @cfg with @n threads. */
#define SNAP_SCENARIO(id, cfg, n, description)				\
	static void *							\
	snap_setup_##id(void)						\
	{								\
		return snap_setup(&(cfg));				\
	}								\
	const struct ilv_scenario ilv_scn_##id = {			\
		.name = #id,						\
		.what = description,					\
		.nthreads = n,						\
		.sync_words = snap_sync_words,				\
		.setup = snap_setup_##id,				\
		.thread = snap_thread,					\
		.check = snap_check,					\
		.teardown = snap_teardown,				\
	}

SNAP_SCENARIO(snapshot, snap_cfg_main, 2,
    "a persist-first save of two tensors against a writer of one");
SNAP_SCENARIO(snapshot_get, snap_cfg_get, 3,
    "a persist-first save, a writer and a reader of one tensor");
SNAP_SCENARIO(snapshot_release, snap_cfg_release, 3,
    "a persist-first save, a writer of one tensor, an early release of the "
    "other");
SNAP_SCENARIO(snapshot_fail, snap_cfg_fail, 2,
    "a persist-first save that fails, against a writer");
