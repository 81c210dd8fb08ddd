/*
 * scn_external.c - the interleaving checker on memory the library does not
 * own (storage.h): read-only memory, which nobody may write, and borrowed
 * memory, which only the storage made over it may write.
 *
 * keep: three lazy peers of read-only memory; two materialise at once
 *   while the third releases. Nobody may take the original, so both copy,
 *   and whichever share goes last frees it: a release, or a copier that
 *   finds itself last ([KEEP] in cow_ctx.c). The deleter checks the bytes
 *   are the original's when it runs, exactly once.
 * borrowed: the storage made over borrowed memory (its home) and its lazy
 *   clone materialise at once. The clone always copies; the home takes the
 *   memory back only when it holds the last share. Only the home ever holds
 *   the memory, and the caller's bytes change only by the home's own mark.
 */
#include <stdlib.h>

#include "scenario.h"

#define NB 48
#define SEED 11

struct external_scn {
	unsigned char *mem;    /* the memory the library does not own */
	int deleted;           /* deleter calls (read-only memory) */
	cow_storage_t *s[3];
	unsigned char *data[3];
	cow_stats_t before;
};

/* The read-only memory's deleter: the bytes must be the original's. */
static void
checking_deleter(void *data, size_t nbytes, void *ctx)
{
	struct external_scn *st = ctx;

	ilv_check(data == st->mem && nbytes == NB, "the deleter got other "
	    "memory than it was given");
	ilv_check(ilv_holds(data, NB, SEED), "read-only memory was written "
	    "before it was given back");
	st->deleted++;
	ilv_check(st->deleted == 1, "the deleter is called %d times",
	    st->deleted);
}

static struct external_scn *
external_new(bool read_only)
{
	struct external_scn *st = calloc(1, sizeof *st);

	ilv_check(st != NULL && (st->mem = malloc(NB)) != NULL,
	    "out of memory (set-up)");
	ilv_fill(st->mem, NB, SEED);
	ilv_check(cow_storage_from_external(st->mem, NB, read_only ?
	    checking_deleter : NULL, st, read_only ? COW_STORAGE_READ_ONLY :
	    0, &st->s[0]) == COW_OK, "set-up: %s", cow_last_error());
	return st;
}

static cow_storage_t *
clone_of(cow_storage_t *s)
{
	cow_storage_t *c;

	ilv_check(cow_storage_lazy_clone(s, &c) == COW_OK, "set-up: lazy "
	    "clone failed");
	return c;
}

/* Materialise storage @id and write its mark (byte @id flipped). */
static void
materialize_mark(struct external_scn *st, int id)
{
	void *p;

	ilv_check(cow_storage_mutable_data(st->s[id], &p) == COW_OK,
	    "thread %c: materialise failed", 'a' + id);
	ilv_check(ilv_holds(p, NB, SEED), "thread %c: materialised bytes "
	    "differ from the original's", 'a' + id);
	st->data[id] = p;
	st->data[id][id] ^= 0xff;
}

static void
external_teardown(void *arg)
{
	struct external_scn *st = arg;

	for (int i = 0; i < 3; i++)
		cow_storage_release(st->s[i]);
	free(st->mem);
	free(st);
}

/* ------------------------------------------------------------------ */
/* keep                                                                 */

static void *
keep_setup(void)
{
	struct external_scn *st = external_new(true);

	st->s[1] = clone_of(st->s[0]);
	st->s[2] = clone_of(st->s[1]);
	st->before = ilv_stats();
	return st;
}

static void
keep_thread(void *arg, int id)
{
	struct external_scn *st = arg;

	if (id < 2) {
		materialize_mark(st, id);
	} else {
		cow_storage_release(st->s[2]);
		st->s[2] = NULL;
	}
}

static void
keep_check(void *arg)
{
	struct external_scn *st = arg;
	cow_stats_t now = ilv_stats();

	for (int i = 0; i < 2; i++) {
		ilv_check(st->data[i] != st->mem, "storage %c holds the "
		    "read-only memory", 'a' + i);
		ilv_check(!cow_storage_is_cow(st->s[i]) &&
		    !cow_storage_is_read_only(st->s[i]), "storage %c is not "
		    "private and writable after its write", 'a' + i);
	}
	ilv_check(st->data[0] != st->data[1], "the two copies share a buffer");
	ilv_check(st->deleted == 1, "after every share went, the read-only "
	    "memory was given back %d times", st->deleted);
	ilv_check(now.materialize_steals == st->before.materialize_steals &&
	    now.materialize_copies - st->before.materialize_copies == 2 &&
	    now.external_copies - st->before.external_copies == 2,
	    "statistics: %llu steals, %llu copies, %llu external copies",
	    (unsigned long long)(now.materialize_steals -
	    st->before.materialize_steals),
	    (unsigned long long)(now.materialize_copies -
	    st->before.materialize_copies),
	    (unsigned long long)(now.external_copies -
	    st->before.external_copies));
}

ILV_SCENARIO(keep, 3, false, keep_setup, keep_thread, keep_check,
    external_teardown, "three peers of read-only memory: two materialise "
    "(copy), one releases; the last share frees it");

/* ------------------------------------------------------------------ */
/* borrowed                                                             */

static void *
borrowed_setup(void)
{
	struct external_scn *st = external_new(false);

	st->s[1] = clone_of(st->s[0]);
	st->before = ilv_stats();
	return st;
}

static void
borrowed_thread(void *arg, int id)
{
	materialize_mark(arg, id);
}

static void
borrowed_check(void *arg)
{
	struct external_scn *st = arg;
	cow_stats_t now = ilv_stats();
	bool home_took = st->data[0] == st->mem;

	ilv_check(st->data[1] != st->mem, "the clone took borrowed memory");
	ilv_check(st->data[0] != st->data[1], "the two share a buffer");
	/* The caller's bytes: the original, plus the home's mark if the
	 * home took the memory back. */
	if (!home_took)
		ilv_check(ilv_holds(st->mem, NB, SEED), "borrowed memory was "
		    "written by a storage that did not take it");
	ilv_check(now.materialize_steals - st->before.materialize_steals ==
	    (home_took ? 1u : 0u) && now.external_copies -
	    st->before.external_copies == 1, "statistics: %llu steals, %llu "
	    "external copies (the home %s)", (unsigned long long)
	    (now.materialize_steals - st->before.materialize_steals),
	    (unsigned long long)(now.external_copies -
	    st->before.external_copies), home_took ? "took it" : "copied");
}

ILV_SCENARIO(borrowed, 2, false, borrowed_setup, borrowed_thread,
    borrowed_check, external_teardown, "the storage over borrowed memory and "
    "its lazy clone materialise at once; only the first may take it");
