/*
 * scn_storage.c - scenarios 1 to 4 of the interleaving checker: the
 * copy-or-steal protocol (runtime/storage/cow_ctx.c) and the wrap race
 * (runtime/storage/storage.c), driven through the public storage API.
 *
 * The source of every scenario is a storage over external bytes (a known
 * pattern) whose deleter counts its calls, so "the original is freed
 * exactly once" is exact: a storage that steals the original keeps it
 * (the deleter runs when that storage is released, in tear-down); a last
 * release with no steal frees it at once.
 */
#include <stdlib.h>

#include "scenario.h"

#define NB 64   /* bytes per storage */
#define SEED 5  /* the source's pattern */

struct storage_scn {
	struct ilv_ext ext;
	const void *orig;      /* the external bytes */
	cow_storage_t *s[4];   /* per scenario, see below */
	void *data[4];         /* what each materialising thread got */
	cow_stats_t before;    /* statistics after set-up */
};

static struct storage_scn *
scn_new(void)
{
	struct storage_scn *st = ilv_state_new(sizeof *st);

	st->s[0] = ilv_ext_storage(&st->ext, NB, SEED);
	st->orig = st->ext.data;
	return st;
}

static cow_storage_t *
scn_clone(cow_storage_t *s, const char *who)
{
	cow_storage_t *c;

	ilv_check(cow_storage_lazy_clone(s, &c) == COW_OK,
	    "%s: lazy clone failed", who);
	return c;
}

/* Materialise @s (thread @id), check it holds the source's bytes, then
 * write the thread's mark: byte @id flipped. */
static void *
scn_materialize_mark(cow_storage_t *s, int id)
{
	unsigned char *p;
	void *v;

	ilv_check(cow_storage_mutable_data(s, &v) == COW_OK,
	    "thread %c: materialise failed", 'a' + id);
	p = v;
	ilv_check(ilv_holds(p, NB, SEED), "thread %c: materialised bytes "
	    "differ from the source's", 'a' + id);
	p[id] ^= 0xff;
	return p;
}

/* @p holds the source's bytes with byte @mark flipped. */
static bool
scn_holds_marked(const void *p, int mark)
{
	unsigned char copy[NB];

	for (int i = 0; i < NB; i++)
		copy[i] = ((const unsigned char *)p)[i];
	copy[mark] ^= 0xff;
	return ilv_holds(copy, NB, SEED);
}

/*
 * After the threads: storages @ids (materialised by the thread of the same
 * index) are private, distinct and hold the source plus their own mark.
 * At most one of them stole the original; the original ended exactly once
 * (stolen, or freed by a last release: the deleter ran); the statistics
 * moved by exactly those steals and the other copies.
 */
static void
scn_check_materialized(struct storage_scn *st, const int *ids, int n)
{
	cow_stats_t now = ilv_stats();
	int stole = 0;

	for (int k = 0; k < n; k++) {
		int i = ids[k];

		ilv_check(!cow_storage_is_cow(st->s[i]), "storage %c is "
		    "still copy-on-write after its write", 'a' + i);
		ilv_check(cow_storage_const_data(st->s[i]) == st->data[i],
		    "storage %c's data moved after its write", 'a' + i);
		ilv_check(scn_holds_marked(st->data[i], i), "storage %c "
		    "does not hold the source's bytes plus its own mark",
		    'a' + i);
		if (st->data[i] == st->orig)
			stole++;
		for (int j = 0; j < k; j++)
			ilv_check(st->data[ids[j]] != st->data[i],
			    "storages %c and %c share one buffer",
			    'a' + ids[j], 'a' + i);
	}
	ilv_check(stole <= 1, "%d storages hold the original", stole);
	ilv_check(stole + st->ext.calls == 1, "the original is stolen %d "
	    "times and freed %d times (exactly one of the two, once)", stole,
	    st->ext.calls);
	ilv_check(now.materialize_steals - st->before.materialize_steals ==
	    (uint64_t)stole, "%llu steals counted, %d seen",
	    (unsigned long long)(now.materialize_steals -
	    st->before.materialize_steals), stole);
	ilv_check(now.materialize_copies - st->before.materialize_copies ==
	    (uint64_t)(n - stole), "%llu copies counted, expected %d",
	    (unsigned long long)(now.materialize_copies -
	    st->before.materialize_copies), n - stole);
	ilv_check(now.bytes_copied - st->before.bytes_copied ==
	    (uint64_t)(n - stole) * NB, "%llu bytes copied, expected %d",
	    (unsigned long long)(now.bytes_copied - st->before.bytes_copied),
	    (n - stole) * NB);
}

/* Release every storage left; the deleter must then have run once. */
static void
scn_teardown(void *arg)
{
	struct storage_scn *st = arg;

	for (int i = 0; i < 4; i++)
		cow_storage_release(st->s[i]);
	ilv_check(st->ext.calls == 1, "after every release the deleter ran "
	    "%d times (expected once)", st->ext.calls);
	free(st);
}

/* ------------------------------------------------------------------ */
/* 1. pair: two lazy peers materialise at once.                         */

static void *
pair_setup(void)
{
	struct storage_scn *st = scn_new();

	st->s[1] = scn_clone(st->s[0], "set-up");
	st->before = ilv_stats();
	return st;
}

static void
pair_thread(void *arg, int id)
{
	struct storage_scn *st = arg;

	st->data[id] = scn_materialize_mark(st->s[id], id);
}

static void
pair_check(void *arg)
{
	static const int ids[] = {0, 1};
	struct storage_scn *st = arg;

	scn_check_materialized(st, ids, 2);
	ilv_check(st->data[0] == st->orig || st->data[1] == st->orig,
	    "nobody stole the original (two peers: the second must)");
}

ILV_SCENARIO(pair, 2, false, pair_setup, pair_thread, pair_check,
    scn_teardown, "two lazy peers materialise at once");

/* ------------------------------------------------------------------ */
/* 2. trio: three peers; two materialise, one releases.                 */

static void *
trio_setup(void)
{
	struct storage_scn *st = scn_new();

	st->s[1] = scn_clone(st->s[0], "set-up");
	st->s[2] = scn_clone(st->s[1], "set-up");
	st->before = ilv_stats();
	return st;
}

static void
trio_thread(void *arg, int id)
{
	struct storage_scn *st = arg;

	if (id < 2) {
		st->data[id] = scn_materialize_mark(st->s[id], id);
	} else {
		cow_storage_release(st->s[2]);
		st->s[2] = NULL;
	}
}

static void
trio_check(void *arg)
{
	static const int ids[] = {0, 1};

	scn_check_materialized(arg, ids, 2);
}

ILV_SCENARIO(trio, 3, false, trio_setup, trio_thread, trio_check,
    scn_teardown, "three peers: two materialise, one releases");

/* ------------------------------------------------------------------ */
/* 3. wrap: two threads make the first lazy clone of one fresh storage  */
/* while a third reads it.                                              */

static void *
wrap_setup(void)
{
	struct storage_scn *st = scn_new();

	st->before = ilv_stats();
	return st;
}

static void
wrap_thread(void *arg, int id)
{
	struct storage_scn *st = arg;
	cow_storage_t *src = st->s[0];

	if (id < 2) {
		cow_storage_t *c = scn_clone(src, id == 0 ? "thread a" :
		    "thread b");

		ilv_check(cow_storage_const_data(c) == st->orig,
		    "thread %c: the clone does not point at the source's "
		    "bytes", 'a' + id);
		ilv_check(ilv_holds(cow_storage_const_data(c), NB, SEED),
		    "thread %c: the clone reads other bytes", 'a' + id);
		st->s[1 + id] = c;
	} else {
		size_t shares = cow_storage_share_count(src);

		/* A read of the source while it is wrapped and cloned. */
		ilv_check(cow_storage_const_data(src) == st->orig &&
		    ilv_holds(cow_storage_const_data(src), NB, SEED),
		    "thread c: the source's bytes changed");
		ilv_check(shares >= 1 && shares <= 3, "thread c: share count "
		    "%zu", shares);
		ilv_check(cow_storage_is_cow(src) || shares == 1,
		    "thread c: %zu shares of a private storage", shares);
	}
}

static void
wrap_check(void *arg)
{
	struct storage_scn *st = arg;
	cow_stats_t now = ilv_stats();

	ilv_check(now.ctx_wraps - st->before.ctx_wraps == 1, "%llu contexts "
	    "installed (expected 1)", (unsigned long long)(now.ctx_wraps -
	    st->before.ctx_wraps));
	ilv_check(now.lazy_clones - st->before.lazy_clones == 2, "%llu lazy "
	    "clones counted (expected 2)", (unsigned long long)
	    (now.lazy_clones - st->before.lazy_clones));
	ilv_check(cow_storage_share_count(st->s[0]) == 3, "share count %zu "
	    "after two clones (expected 3)",
	    cow_storage_share_count(st->s[0]));
	ilv_check(cow_storage_shares_data(st->s[0], st->s[1]) &&
	    cow_storage_shares_data(st->s[0], st->s[2]), "a clone does not "
	    "share the installed context");
	ilv_check(st->ext.calls == 0, "the original was freed while shared");
}

ILV_SCENARIO(wrap, 3, false, wrap_setup, wrap_thread, wrap_check,
    scn_teardown, "two threads make the first lazy clone of one fresh "
    "storage while a third reads it");

/* ------------------------------------------------------------------ */
/* 4. chain: a clone of a clone racing the source's release and a       */
/* peer's materialise. s[3] is the clone C that thread a clones (into   */
/* s[0]) and then releases; s[1] is the source, released by thread b;   */
/* s[2] is the peer that thread c materialises.                        */

static void *
chain_setup(void)
{
	struct storage_scn *st = scn_new();

	st->s[1] = st->s[0];
	st->s[0] = NULL;
	st->s[3] = scn_clone(st->s[1], "set-up");
	st->s[2] = scn_clone(st->s[1], "set-up");
	st->before = ilv_stats();
	return st;
}

static void
chain_thread(void *arg, int id)
{
	struct storage_scn *st = arg;

	switch (id) {
	case 0:
		st->s[0] = scn_clone(st->s[3], "thread a");
		cow_storage_release(st->s[3]);
		st->s[3] = NULL;
		st->data[0] = scn_materialize_mark(st->s[0], 0);
		break;
	case 1:
		cow_storage_release(st->s[1]);
		st->s[1] = NULL;
		break;
	default:
		st->data[2] = scn_materialize_mark(st->s[2], 2);
		break;
	}
}

static void
chain_check(void *arg)
{
	static const int ids[] = {0, 2};

	scn_check_materialized(arg, ids, 2);
}

ILV_SCENARIO(chain, 3, false, chain_setup, chain_thread, chain_check,
    scn_teardown, "a clone of a clone races the source's release and a "
    "peer's materialise");
