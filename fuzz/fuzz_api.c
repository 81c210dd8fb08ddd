/*
 * fuzz_api.c - random arguments to every public function of the storage
 * and allocator API: sizes at and around every limit, NULLs, bad flags,
 * alignments, probabilities (NaN, infinities), foreign handles.
 *
 * The tensor API (tensor.h, ops.h, maybe_owned.h) is driven the same way
 * by api_tensor.c, the boundary (external memory, pins, DLPack) by
 * api_boundary.c, and snapshots (snapshot.h), against a model, by
 * api_snapshot.c. Every call must return a documented status (common.h's
 * error rule: on failure the out-parameter is untouched and
 * cow_last_error() names the function), never crash, leak or trip a
 * sanitizer. A user allocator checks every call the library makes to it
 * against the vtable contract (sizes, alignments, sized frees). At the end
 * everything is released and every allocator must hold no live
 * allocation.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cowstore/cowstore.h>
#include <cowstore/testing.h>

#include "api_boundary.h"
#include "api_snapshot.h"
#include "api_tensor.h"
#include "fuzz_input.h"

#define MAX_CALLS 256
#define POOL 6
#define CAP_BYTES (1u << 20)     /* the capped allocator refuses more */
#define CAP_ALIGN 4096u          /* ... and larger alignments */
#define CAP_LIVE 256             /* ... and more live blocks */
#define REAL_MAX 65536u          /* largest real allocation asked for */
#define STATIC_BYTES 4096u

/* Status sets: bit (-status) for each allowed status. */
#define S(st) (1u << -(st))
#define S_OK S(COW_OK)

static uint8_t static_buffer[STATIC_BYTES]; /* external, never freed */
/* Read-only memory (in .rodata: a write to it faults). */
static const uint8_t static_rodata[STATIC_BYTES] = {1, 2, 3};

struct block {
	void *p;
	size_t nbytes, alignment;
};

/* The capped user allocator: checks the vtable contract. */
struct capped {
	struct block live[CAP_LIVE];
	unsigned nlive;
};

struct api {
	cow_storage_t *pool[POOL];
	cow_allocator_t *fault;  /* fault allocator over the system one */
	cow_allocator_t *capped; /* user allocator over struct capped */
	struct capped cap;
	struct api_tensor ten;   /* the tensor API part (api_tensor.c) */
	struct api_boundary bnd; /* external memory, pins, DLPack
	                            (api_boundary.c) */
	struct api_snapshot snp; /* snapshots against their model
	                            (api_snapshot.c) */
	unsigned pins[POOL];     /* pins each pool entry holds */
	unsigned deleters_owed;  /* successful externals with a deleter */
	unsigned deleter_calls;
	size_t call;
	const char *func;
};

/* A failed check (fuzz_input.h). */
#define fail(x, ...)                                                        \
	fuzz_fail("fuzz_api: call", (x)->call, (x)->func,                   \
	    __VA_ARGS__)

static bool
is_pow2(size_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

static void *
capped_alloc(void *state, size_t nbytes, size_t alignment)
{
	struct api *t = state;
	struct capped *c = &t->cap;
	void *p = NULL;

	if (nbytes == 0 || !is_pow2(alignment) ||
	    alignment < COW_MIN_ALIGNMENT)
		fail(t, "user alloc called with nbytes %zu, alignment %zu",
		    nbytes, alignment);
	if (nbytes > CAP_BYTES || alignment > CAP_ALIGN ||
	    c->nlive == CAP_LIVE)
		return NULL;
	if (posix_memalign(&p, alignment, nbytes) != 0)
		return NULL;
	c->live[c->nlive++] = (struct block){p, nbytes, alignment};
	return p;
}

static void
capped_free(void *state, void *ptr, size_t nbytes, size_t alignment)
{
	struct api *t = state;
	struct capped *c = &t->cap;

	for (unsigned i = 0; i < c->nlive; i++) {
		if (c->live[i].p != ptr)
			continue;
		if (c->live[i].nbytes != nbytes ||
		    c->live[i].alignment != alignment)
			fail(t, "sized free of %p with (%zu, %zu), allocated "
			    "with (%zu, %zu)", ptr, nbytes, alignment,
			    c->live[i].nbytes, c->live[i].alignment);
		free(ptr);
		c->live[i] = c->live[--c->nlive];
		return;
	}
	fail(t, "user free of %p, which it did not allocate", ptr);
}

static const cow_allocator_ops_t capped_ops = {.alloc = capped_alloc,
    .free = capped_free};

/* The status must be in @allowed; a failure must name the function. */
static void
expect(const struct api *t, cow_status_t st, unsigned allowed)
{
	if (st > 0 || st < COW_EFORMAT || (S(st) & allowed) == 0)
		fail(t, "returned %d (%s), allowed set 0x%x; last error '%s'",
		    (int)st, cow_status_str(st), allowed, cow_last_error());
	if (st != COW_OK && strstr(cow_last_error(), t->func) == NULL)
		fail(t, "failed with %s but the message does not name it: "
		    "'%s'", cow_status_str(st), cow_last_error());
}

/* A sentinel for out-parameters: a failed call must leave it. */
static int sentinel_object;
#define SENTINEL ((void *)&sentinel_object)

static void
expect_out(const struct api *t, cow_status_t st, const void *out)
{
	if (st != COW_OK && out != SENTINEL)
		fail(t, "failed with %s but wrote its out-parameter",
		    cow_status_str(st));
	if (st == COW_OK && (out == SENTINEL || out == NULL))
		fail(t, "succeeded without writing its out-parameter");
}

enum alloc_kind { A_NULL, A_DEFAULT, A_SYSTEM, A_FAULT, A_CAPPED, A_KINDS };

static cow_allocator_t *
alloc_of(const struct api *t, enum alloc_kind k)
{
	switch (k) {
	case A_DEFAULT:
		return cow_allocator_default();
	case A_SYSTEM:
		return cow_allocator_system();
	case A_FAULT:
		return t->fault;
	case A_CAPPED:
		return t->capped;
	default:
		return NULL;
	}
}

/* Allocators that may fail an allocation on purpose. */
static bool
may_fail(enum alloc_kind k)
{
	return k == A_FAULT || k == A_CAPPED;
}

/* A size: small, around 64 KiB, at and around PTRDIFF_MAX, SIZE_MAX, or
 * any 64-bit value. */
static size_t
pick_size(struct fuzz_input *in)
{
	uint8_t k = fuzz_u8(in);

	switch (k % 8) {
	case 0:
	case 1:
	case 2:
		return fuzz_u8(in);
	case 3:
		return fuzz_u16(in) + (size_t)fuzz_u8(in);
	case 4:
		return (size_t)PTRDIFF_MAX - 1 + fuzz_u8(in) % 3;
	case 5:
		return SIZE_MAX - fuzz_u8(in) % 2;
	case 6:
		return (size_t)1 << (fuzz_u8(in) % 64);
	default:
		return (size_t)fuzz_u64(in);
	}
}

/*
 * Real memory is never asked of the system allocator beyond REAL_MAX,
 * directly or through the fault allocator (libFuzzer's malloc limit and
 * ASan would report it): such sizes go to the capped allocator, which
 * refuses them as an allocation failure.
 */
static enum alloc_kind
safe_alloc(enum alloc_kind k, size_t nbytes)
{
	if (nbytes > REAL_MAX && nbytes <= COW_STORAGE_MAX_NBYTES &&
	    k != A_CAPPED)
		return A_CAPPED;
	return k;
}

/* Keep a new storage in the pool (or drop it when full). */
static void
keep(struct api *t, cow_storage_t *s)
{
	for (int i = 0; i < POOL; i++) {
		if (t->pool[i] == NULL) {
			t->pool[i] = s;
			t->pins[i] = 0;
			return;
		}
	}
	cow_storage_release(s);
}

/* A pool entry, or NULL (which every function must take as EINVAL or as
 * documented). */
static cow_storage_t *
pick_storage(struct api *t, struct fuzz_input *in, int *index)
{
	uint8_t k = fuzz_u8(in);

	*index = k % (POOL + 1);
	return *index < POOL ? t->pool[*index] : NULL;
}

static void
check_storage(const struct api *t, const cow_storage_t *s, size_t nbytes)
{
	if (cow_storage_nbytes(s) != nbytes)
		fail(t, "nbytes %zu, asked %zu", cow_storage_nbytes(s),
		    nbytes);
	if ((cow_storage_const_data(s) == NULL) != (nbytes == 0))
		fail(t, "const data %p for %zu bytes",
		    cow_storage_const_data(s), nbytes);
	if (cow_storage_share_count(s) < 1 || !cow_storage_shares_data(s, s))
		fail(t, "share count %zu", cow_storage_share_count(s));
}

static void
call_storage_new(struct api *t, struct fuzz_input *in)
{
	size_t nbytes = pick_size(in);
	enum alloc_kind k = safe_alloc(fuzz_u8(in) % A_KINDS, nbytes);
	bool null_out = (fuzz_u8(in) & 7) == 0;
	cow_storage_t *s = SENTINEL;
	unsigned allowed = 0;
	cow_status_t st;

	t->func = "cow_storage_new";
	st = cow_storage_new(nbytes, alloc_of(t, k), null_out ? NULL : &s);
	if (null_out)
		allowed |= S(COW_EINVAL);
	if (nbytes > COW_STORAGE_MAX_NBYTES)
		allowed |= S(COW_EOVERFLOW);
	if (allowed == 0)
		allowed = S_OK | (may_fail(k) ? S(COW_ENOMEM) : 0);
	expect(t, st, allowed);
	expect_out(t, st, null_out ? SENTINEL : s);
	if (st != COW_OK || null_out)
		return;
	check_storage(t, s, nbytes);
	for (size_t i = 0; i < nbytes; i++)
		if (((const uint8_t *)cow_storage_const_data(s))[i] != 0)
			fail(t, "byte %zu of a new storage is not zero", i);
	if (cow_storage_allocator(s) != (k == A_NULL ?
	    cow_allocator_default() : alloc_of(t, k)))
		fail(t, "storage allocator '%s'",
		    cow_allocator_name(cow_storage_allocator(s)));
	keep(t, s);
}

static void
call_from_external(struct api *t, struct fuzz_input *in)
{
	uint8_t how = fuzz_u8(in);
	size_t nbytes = pick_size(in);
	unsigned flags = fuzz_u8(in);
	bool null_out = (how & 7) == 0, with_deleter = (how & 8) != 0;
	bool null_data = (how & 48) == 0, with_alloc = (how & 64) != 0;
	enum alloc_kind k = with_alloc ? fuzz_u8(in) % A_KINDS : A_NULL;
	cow_storage_t *s = SENTINEL;
	unsigned allowed = 0;
	cow_status_t st;
	void *data = NULL;

	t->func = with_alloc ? "cow_storage_from_external_with_allocator" :
	    "cow_storage_from_external";
	flags = flags < 128 ? flags % 4 : flags; /* mostly valid flags */
	/* Real data is as large as nbytes says, unless nbytes is over the
	 * limit (the call must refuse it before looking at the data). */
	if (!null_data && nbytes > STATIC_BYTES &&
	    nbytes <= COW_STORAGE_MAX_NBYTES)
		nbytes %= STATIC_BYTES + 1;
	if (!null_data) {
		if (with_deleter) {
			if ((data = malloc(nbytes > 0 &&
			    nbytes <= STATIC_BYTES ? nbytes : 1)) == NULL)
				abort();
		} else if (flags == COW_STORAGE_READ_ONLY && (how & 128)) {
			data = (void *)(uintptr_t)static_rodata;
		} else {
			data = static_buffer;
		}
	}
	if (with_alloc)
		st = cow_storage_from_external_with_allocator(data, nbytes,
		    with_deleter ? api_count_deleter : NULL, &t->deleter_calls,
		    flags, alloc_of(t, k), null_out ? NULL : &s);
	else
		st = cow_storage_from_external(data, nbytes,
		    with_deleter ? api_count_deleter : NULL, &t->deleter_calls,
		    flags, null_out ? NULL : &s);
	if (null_out || (data == NULL && nbytes > 0) ||
	    (flags & ~(unsigned)(COW_STORAGE_NOT_SHAREABLE |
	    COW_STORAGE_READ_ONLY)) != 0)
		allowed |= S(COW_EINVAL);
	if (nbytes > COW_STORAGE_MAX_NBYTES)
		allowed |= S(COW_EOVERFLOW);
	if (allowed == 0) /* the default allocator does not fail here */
		allowed = S_OK | (may_fail(k) ? S(COW_ENOMEM) : 0);
	expect(t, st, allowed);
	expect_out(t, st, null_out ? SENTINEL : s);
	if (st != COW_OK) {
		/* Nothing was taken: the data is still ours. */
		if (with_deleter)
			free(data);
		return;
	}
	if (cow_storage_allocator(s) != (k == A_NULL ?
	    cow_allocator_default() : alloc_of(t, k)))
		fail(t, "storage allocator '%s'",
		    cow_allocator_name(cow_storage_allocator(s)));
	if (with_deleter)
		t->deleters_owed++;
	check_storage(t, s, nbytes);
	if (nbytes > 0 && cow_storage_const_data(s) != data)
		fail(t, "external storage does not use the caller's data");
	if (cow_storage_is_read_only(s) !=
	    ((flags & COW_STORAGE_READ_ONLY) != 0) ||
	    cow_storage_is_pinned(s) !=
	    ((flags & COW_STORAGE_NOT_SHAREABLE) != 0))
		fail(t, "flags 0x%x: read-only %d, pinned %d", flags,
		    cow_storage_is_read_only(s), cow_storage_is_pinned(s));
	keep(t, s);
}

/* Pin, unpin, and the queries, on a pool storage or NULL. The pool's pins
 * are counted per entry; an entry only unpins what it pinned. */
static void
call_pin(struct api *t, struct fuzz_input *in)
{
	int i;
	cow_storage_t *s = pick_storage(t, in, &i);
	uint8_t how = fuzz_u8(in);
	void *p = SENTINEL;
	cow_status_t st;

	if (s == NULL && (cow_storage_is_pinned(s) ||
	    cow_storage_is_read_only(s)))
		fail(t, "a query on NULL gave true");
	if (how & 1) {
		t->func = "cow_storage_unpin";
		if (s != NULL && t->pins[i] == 0 && cow_storage_is_pinned(s))
			return; /* pinned for life: nothing of ours */
		st = cow_storage_unpin(s);
		expect(t, st, s != NULL && t->pins[i] > 0 ? S_OK :
		    S(COW_EINVAL));
		if (st == COW_OK)
			t->pins[i]--;
		return;
	}
	t->func = "cow_storage_pin";
	st = cow_storage_pin(s, (how & 6) == 0 ? NULL : &p);
	/* COW_EBUSY: a storage over borrowed memory whose clones share it. */
	expect(t, st, s == NULL || (how & 6) == 0 ? S(COW_EINVAL) :
	    S_OK | S(COW_ENOMEM) | (cow_storage_share_count(s) > 1 ?
	    S(COW_EBUSY) : 0));
	if (st != COW_OK) {
		if (p != SENTINEL)
			fail(t, "failed with %s but wrote *ptr",
			    cow_status_str(st));
		return;
	}
	t->pins[i]++;
	if (p != cow_storage_const_data(s) || !cow_storage_is_pinned(s) ||
	    cow_storage_is_cow(s) || cow_storage_is_read_only(s))
		fail(t, "after a pin: pointer %p, data %p, pinned %d, cow %d, "
		    "read-only %d", p, cow_storage_const_data(s),
		    cow_storage_is_pinned(s), cow_storage_is_cow(s),
		    cow_storage_is_read_only(s));
	if (cow_storage_nbytes(s) > 0)
		memset(p, how, cow_storage_nbytes(s));
}

static void
call_clone(struct api *t, struct fuzz_input *in)
{
	int i;
	cow_storage_t *src = pick_storage(t, in, &i);
	bool null_out = (fuzz_u8(in) & 7) == 0;
	cow_storage_t *s = SENTINEL;
	unsigned allowed;
	cow_status_t st;
	size_t shares = cow_storage_share_count(src);

	t->func = "cow_storage_lazy_clone";
	st = cow_storage_lazy_clone(src, null_out ? NULL : &s);
	if (src == NULL || null_out)
		allowed = S(COW_EINVAL);
	else
		allowed = S_OK | S(COW_ENOMEM);
	expect(t, st, allowed);
	expect_out(t, st, null_out ? SENTINEL : s);
	if (st != COW_OK) {
		if (src != NULL && cow_storage_share_count(src) != shares)
			fail(t, "failed clone changed the share count");
		return;
	}
	check_storage(t, s, cow_storage_nbytes(src));
	if (cow_storage_nbytes(src) > 0 && memcmp(cow_storage_const_data(s),
	    cow_storage_const_data(src), cow_storage_nbytes(src)) != 0)
		fail(t, "clone differs from its source");
	keep(t, s);
}

static void
call_mutable(struct api *t, struct fuzz_input *in)
{
	int i;
	cow_storage_t *s = pick_storage(t, in, &i);
	uint8_t how = fuzz_u8(in);
	bool null_ptr = (how & 7) == 0;
	void *p = SENTINEL;
	cow_status_t st;

	if (how & 8) {
		t->func = "cow_storage_materialize";
		st = cow_storage_materialize(s);
		expect(t, st, s == NULL ? S(COW_EINVAL) :
		    S_OK | S(COW_ENOMEM));
	} else {
		t->func = "cow_storage_mutable_data";
		st = cow_storage_mutable_data(s, null_ptr ? NULL : &p);
		expect(t, st, s == NULL || null_ptr ? S(COW_EINVAL) :
		    S_OK | S(COW_ENOMEM));
		if (st != COW_OK && p != SENTINEL)
			fail(t, "failed with %s but wrote *ptr",
			    cow_status_str(st));
		if (st == COW_OK && p != cow_storage_const_data(s))
			fail(t, "pointer %p, const data %p", p,
			    cow_storage_const_data(s));
		if (st == COW_OK && cow_storage_nbytes(s) > 0)
			memset(p, how, cow_storage_nbytes(s));
	}
	if (st == COW_OK && cow_storage_is_cow(s))
		fail(t, "still copy-on-write after materialising");
}

static void
call_queries(struct api *t, struct fuzz_input *in)
{
	int i, j;
	cow_storage_t *a = pick_storage(t, in, &i);
	cow_storage_t *b = pick_storage(t, in, &j);

	t->func = "queries";
	if (a == NULL) {
		if (cow_storage_nbytes(a) != 0 ||
		    cow_storage_const_data(a) != NULL ||
		    cow_storage_is_cow(a) || cow_storage_share_count(a) != 0 ||
		    cow_storage_allocator(a) != NULL ||
		    cow_storage_shares_data(a, b) ||
		    cow_storage_shares_data(b, a))
			fail(t, "a query on NULL gave a non-empty answer");
		cow_storage_release(NULL);
		return;
	}
	if (b != NULL && cow_storage_shares_data(a, b) !=
	    cow_storage_shares_data(b, a))
		fail(t, "shares_data is not symmetric");
	if (b != NULL && cow_storage_shares_data(a, b) && a != b &&
	    cow_storage_const_data(a) != cow_storage_const_data(b))
		fail(t, "storages that share data have different pointers");
	if (cow_storage_is_cow(a) != (cow_storage_share_count(a) > 1) &&
	    cow_storage_share_count(a) > 1)
		fail(t, "shared but not copy-on-write");
}

static void
call_release(struct api *t, struct fuzz_input *in)
{
	int i;
	cow_storage_t *s = pick_storage(t, in, &i);

	t->func = "cow_storage_release";
	if (s == NULL) {
		cow_storage_release(NULL);
		return;
	}
	if (fuzz_u8(in) & 1) {
		/* A second reference, released at once. */
		cow_storage_retain(s);
		cow_storage_release(s);
		check_storage(t, s, cow_storage_nbytes(s));
		return;
	}
	cow_storage_release(s);
	t->pool[i] = NULL;
	t->pins[i] = 0;
}

static void
call_allocator_new(struct api *t, struct fuzz_input *in)
{
	static const cow_allocator_ops_t no_alloc = {.free = capped_free};
	static const cow_allocator_ops_t no_free = {.alloc = capped_alloc};
	char name[80];
	uint8_t how = fuzz_u8(in), len = fuzz_u8(in) % sizeof name;
	const cow_allocator_ops_t *ops;
	cow_allocator_t *a = SENTINEL;
	bool null_out = (how & 7) == 0, null_name = (how & 24) == 0;
	cow_status_t st;

	t->func = "cow_allocator_new";
	switch ((how >> 5) % 4) {
	case 0:
		ops = NULL;
		break;
	case 1:
		ops = &no_alloc;
		break;
	case 2:
		ops = &no_free;
		break;
	default:
		ops = &capped_ops;
		break;
	}
	memset(name, 'a' + how % 26, len);
	name[len] = '\0';
	st = cow_allocator_new(ops, t, null_name ? NULL : name,
	    null_out ? NULL : &a);
	expect(t, st, ops != &capped_ops || null_name || null_out ?
	    S(COW_EINVAL) : S_OK | S(COW_ENOMEM));
	expect_out(t, st, null_out ? SENTINEL : a);
	if (st != COW_OK)
		return;
	if (strncmp(cow_allocator_name(a), name, 31) != 0 ||
	    strlen(cow_allocator_name(a)) != (len < 31 ? len : 31))
		fail(t, "name '%s' for '%s'", cow_allocator_name(a), name);
	t->func = "cow_allocator_destroy";
	expect(t, cow_allocator_destroy(a), S_OK);
}

static void
call_allocator_misc(struct api *t, struct fuzz_input *in)
{
	enum alloc_kind k = fuzz_u8(in) % A_KINDS;
	cow_allocator_t *a = alloc_of(t, k), *j = SENTINEL, *f = SENTINEL;
	cow_alloc_stats_t stats;
	bool null_out = fuzz_u8(in) & 1;
	cow_status_t st;

	t->func = "cow_allocator_destroy";
	if (k != A_FAULT && k != A_CAPPED) {
		/* NULL and the built-ins are refused. */
		expect(t, cow_allocator_destroy(a), S(COW_EINVAL));
	} else if (cow_allocator_stats(a, &stats) == COW_OK &&
	    stats.live_allocs > 0) {
		/* Ours are refused while they hold allocations (and are
		 * destroyed at the end). */
		expect(t, cow_allocator_destroy(a), S(COW_EBUSY));
	}
	t->func = "cow_allocator_stats";
	st = cow_allocator_stats(a, null_out ? NULL : &stats);
	expect(t, st, a == NULL || null_out ? S(COW_EINVAL) : S_OK);
	if (st == COW_OK && (stats.live_allocs != stats.allocs - stats.frees ||
	    stats.live_bytes > stats.total_bytes))
		fail(t, "inconsistent stats for '%s'", cow_allocator_name(a));
	t->func = "cow_allocator_name";
	if (cow_allocator_name(a) == NULL ||
	    (a == NULL && cow_allocator_name(a)[0] != '\0'))
		fail(t, "bad name");
	t->func = "cow_allocator_jemalloc";
	st = cow_allocator_jemalloc(null_out ? NULL : &j);
	expect(t, st, null_out ? S(COW_EINVAL) :
	    S_OK | S(COW_ENOTSUP) | S(COW_ENOMEM));
	expect_out(t, st, null_out ? SENTINEL : j);
	t->func = "cow_allocator_fault_new";
	st = cow_allocator_fault_new(a, null_out ? NULL : &f);
	expect(t, st, a == NULL || null_out ? S(COW_EINVAL) :
	    S_OK | S(COW_ENOMEM));
	expect_out(t, st, null_out ? SENTINEL : f);
	if (st == COW_OK) {
		t->func = "cow_allocator_destroy";
		expect(t, cow_allocator_destroy(f), S_OK);
	}
}

static double
pick_probability(struct fuzz_input *in)
{
	static const double special[] = {0.0, -0.0, 1.0, 0.5, -1.0,
	    1.0000001, 2.0, 1e-300, 0.9999999999999999};
	uint8_t k = fuzz_u8(in);
	uint64_t bits;
	double d;

	if (k < 64)
		return k / 63.0;
	if (k < 128)
		return special[k % (sizeof special / sizeof special[0])];
	if (k < 160)
		return k & 1 ? INFINITY : -INFINITY;
	if (k < 192)
		return NAN;
	bits = fuzz_u64(in);
	memcpy(&d, &bits, sizeof d);
	return d;
}

static void
call_fault(struct api *t, struct fuzz_input *in)
{
	uint8_t how = fuzz_u8(in);
	enum alloc_kind k = how % A_KINDS;
	cow_allocator_t *a = alloc_of(t, k);
	bool is_fault = k == A_FAULT;
	unsigned bad = is_fault ? 0 : S(COW_EINVAL);
	double p;
	uint64_t before = cow_allocator_fault_injected(a);

	if (!is_fault && before != 0)
		fail(t, "injected count %llu for a non-fault allocator",
		    (unsigned long long)before);
	switch ((how >> 3) % 3) {
	case 0:
		t->func = "cow_allocator_fault_fail_nth";
		expect(t, cow_allocator_fault_fail_nth(a, fuzz_u8(in) % 8),
		    bad ? bad : S_OK);
		break;
	case 1:
		t->func = "cow_allocator_fault_fail_random";
		p = pick_probability(in);
		expect(t, cow_allocator_fault_fail_random(a, p, fuzz_u64(in)),
		    bad ? bad : (p >= 0.0 && p <= 1.0) ? S_OK :
		    S(COW_EINVAL));
		break;
	default:
		t->func = "cow_allocator_fault_disarm";
		expect(t, cow_allocator_fault_disarm(a), bad ? bad : S_OK);
		break;
	}
}

static void
call_raw_alloc(struct api *t, struct fuzz_input *in)
{
	enum alloc_kind k = fuzz_u8(in) % A_KINDS;
	size_t nbytes = pick_size(in), alignment, eff;
	uint8_t ak = fuzz_u8(in);
	cow_allocator_t *a;
	uint8_t *p;

	t->func = "cow_allocator_alloc";
	alignment = ak < 64 ? ak : ak < 128 ? (size_t)1 << (ak % 64) :
	    (size_t)fuzz_u64(in);
	if (k != A_CAPPED && (nbytes > REAL_MAX || alignment > CAP_ALIGN))
		k = A_CAPPED;
	a = alloc_of(t, k);
	p = cow_allocator_alloc(a, nbytes, alignment);
	eff = alignment < COW_MIN_ALIGNMENT ? COW_MIN_ALIGNMENT : alignment;
	if (p == NULL) {
		if (a != NULL && nbytes > 0 && is_pow2(alignment) &&
		    nbytes <= (size_t)PTRDIFF_MAX && !may_fail(k))
			fail(t, "%zu bytes aligned to %zu failed: %s", nbytes,
			    alignment, cow_last_error());
		if (strstr(cow_last_error(), t->func) == NULL)
			fail(t, "NULL without naming the function: '%s'",
			    cow_last_error());
		return;
	}
	if (a == NULL || nbytes == 0 || !is_pow2(alignment) ||
	    nbytes > (size_t)PTRDIFF_MAX)
		fail(t, "invalid arguments (%p, %zu, %zu) gave memory",
		    (void *)a, nbytes, alignment);
	if (((uintptr_t)p & (eff - 1)) != 0)
		fail(t, "%p is not aligned to %zu", (void *)p, eff);
	memset(p, 0xa5, nbytes); /* ASan checks the size */
	cow_allocator_free(a, p, nbytes, alignment);
	cow_allocator_free(a, NULL, nbytes, alignment);
	cow_allocator_free(NULL, NULL, 0, 0);
}

static void
call_misc(struct api *t, struct fuzz_input *in)
{
	int v = (int8_t)fuzz_u8(in);
	const char *s;
	cow_stats_t st;

	t->func = "cow_status_str";
	s = cow_status_str((cow_status_t)v);
	if (s == NULL || strncmp(s, "COW_", 4) != 0)
		fail(t, "cow_status_str(%d) gave '%s'", v, s ? s : "(null)");
	if ((v > 0 || v < COW_EFORMAT) != (strcmp(s, "COW_E?") == 0))
		fail(t, "cow_status_str(%d) gave '%s'", v, s);
	t->func = "cow_last_error";
	if (cow_last_error() == NULL)
		fail(t, "NULL");
	t->func = "cow_stats_get";
	cow_stats_get(NULL);
	cow_stats_get(&st);
	if (st.materialize_copies + st.materialize_steals > UINT64_MAX / 2)
		fail(t, "absurd counters");
}

static void
call_boundary(struct api *t, struct fuzz_input *in)
{
	t->func = "boundary";
	t->bnd.call = t->call;
	api_boundary_call(&t->bnd, in);
}

static void
call_tensor(struct api *t, struct fuzz_input *in)
{
	t->func = "tensor";
	t->ten.call = t->call;
	api_tensor_call(&t->ten, in);
}

static void
call_snapshot(struct api *t, struct fuzz_input *in)
{
	t->func = "snapshot";
	t->snp.call = t->call;
	api_snapshot_call(&t->snp, in);
}

typedef void (*call_fn)(struct api *, struct fuzz_input *);

static const call_fn calls[] = {
	call_storage_new, call_from_external, call_clone, call_mutable,
	call_queries, call_release, call_allocator_new, call_allocator_misc,
	call_fault, call_raw_alloc, call_misc, call_tensor, call_tensor,
	call_tensor, call_tensor
};

/* Calls added later, chosen by selector bytes from 240 up (byte % 8), so
 * that the bytes below keep choosing what they chose when the corpus was
 * made. */
#define LATER_FROM 240
static const call_fn later_calls[] = {
	call_boundary, call_boundary, call_boundary, call_pin,
	call_snapshot, call_snapshot, call_snapshot, call_snapshot
};

static void
call_one(struct api *t, struct fuzz_input *in)
{
	enum { N = sizeof calls / sizeof calls[0] };
	uint8_t k = fuzz_u8(in);

	_Static_assert(LATER_FROM % N == 0 && LATER_FROM / N * N < 256,
	    "bytes below LATER_FROM pick calls[byte % N]");
	if (k < LATER_FROM)
		calls[k % N](t, in);
	else
		later_calls[k % (sizeof later_calls / sizeof later_calls[0])](
		    t, in);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = {data, size};
	struct api t;
	cow_alloc_stats_t st;

	memset(&t, 0, sizeof t);
	t.func = "setup";
	if (cow_allocator_fault_new(cow_allocator_system(), &t.fault) !=
	    COW_OK || cow_allocator_new(&capped_ops, &t, "capped",
	    &t.capped) != COW_OK)
		fail(&t, "%s", cow_last_error());
	api_tensor_init(&t.ten, t.capped);
	api_boundary_init(&t.bnd, t.capped);
	api_snapshot_init(&t.snp);
	for (t.call = 0; t.call < MAX_CALLS && fuzz_more(&in); t.call++)
		call_one(&t, &in);
	t.func = "teardown";
	api_tensor_fini(&t.ten);
	api_boundary_fini(&t.bnd);
	t.snp.call = t.call;
	api_snapshot_fini(&t.snp);
	for (int i = 0; i < POOL; i++)
		cow_storage_release(t.pool[i]);
	if (t.deleter_calls != t.deleters_owed)
		fail(&t, "%u deleter calls for %u external storages",
		    t.deleter_calls, t.deleters_owed);
	cow_allocator_stats(t.fault, &st);
	if (st.live_allocs != 0 || st.live_bytes != 0)
		fail(&t, "fault allocator: %llu live bytes",
		    (unsigned long long)st.live_bytes);
	cow_allocator_stats(t.capped, &st);
	if (st.live_allocs != 0 || t.cap.nlive != 0)
		fail(&t, "capped allocator: %u blocks live", t.cap.nlive);
	if (cow_allocator_destroy(t.fault) != COW_OK ||
	    cow_allocator_destroy(t.capped) != COW_OK)
		fail(&t, "destroy: %s", cow_last_error());
	return 0;
}
