/*
 * Fault injection walks every allocation point of lazy clone and
 * materialise: fail the 1st, 2nd, ... allocation until the operation
 * succeeds. Every failure returns COW_ENOMEM and changes nothing.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <cowstore/testing.h>

#include "cow_test.h"
#include "leak_fixture.h"

#define N 1000

TestSuite(fault_walk, .init = fault_setup, .fini = fault_teardown,
    .timeout = 30.0);

struct snapshot {
	bool is_cow;
	size_t shares;
	const void *addr;
};

static struct snapshot
snap(const cow_storage_t *s)
{
	return (struct snapshot){cow_storage_is_cow(s),
	    cow_storage_share_count(s), cow_storage_const_data(s)};
}

static void
assert_same(const cow_storage_t *s, struct snapshot was, unsigned seed)
{
	struct snapshot now = snap(s);

	cr_assert_eq(now.is_cow, was.is_cow);
	cr_assert_eq(now.shares, was.shares);
	cr_assert_eq(now.addr, was.addr);
	cr_assert(cow_test_check(now.addr, N, seed));
}

/* Fail the 1st, 2nd, ... allocation of a lazy clone of @src: there are
 * exactly @points of them, and each failure changes nothing (share counts,
 * bytes, addresses, the allocator's live bytes). The clone then holds
 * @src's bytes (pattern @seed), sharing them when @shared (else it is an
 * eager copy). */
static void
walk_lazy_clone(cow_storage_t *src, unsigned seed, int points, bool shared)
{
	struct snapshot before = snap(src);
	uint64_t live = cow_test_alloc_stats(fa).live_bytes;
	cow_storage_t *out = NULL;
	int failed = 0;

	for (uint64_t k = 1;; k++) {
		cow_status_t st;

		cr_assert_eq(cow_allocator_fault_fail_nth(fa, k), COW_OK);
		st = cow_storage_lazy_clone(src, &out);
		if (st == COW_OK)
			break;
		cr_assert_eq(st, COW_ENOMEM);
		cr_assert_null(out, "out written on failure");
		cr_assert(strstr(cow_last_error(), "cow_storage_lazy_clone") !=
		    NULL, "%s", cow_last_error());
		assert_same(src, before, seed);
		cr_assert_eq(cow_test_alloc_stats(fa).live_bytes, live,
		    "allocation %llu: a failed clone leaked",
		    (unsigned long long)k);
		failed++;
	}
	cr_assert_eq(failed, points, "%d allocation points, expected %d",
	    failed, points);
	cr_assert_eq(cow_allocator_fault_disarm(fa), COW_OK);
	cr_assert_eq(cow_storage_shares_data(src, out), shared);
	cr_assert(cow_test_check(cow_storage_const_data(out), N, seed));
	cr_assert_eq(cow_storage_allocator(out), cow_storage_allocator(src));
	cow_storage_release(out);
}

/* A first clone allocates the new storage and the COW context. */
Test(fault_walk, lazy_clone_fresh)
{
	cow_storage_t *s = cow_test_storage(N, fa, 1);

	walk_lazy_clone(s, 1, 2, true);
	cow_storage_release(s);
}

/* A clone of a COW storage allocates only the new storage. */
Test(fault_walk, lazy_clone_cow)
{
	cow_storage_t *s = cow_test_storage(N, fa, 2), *c;

	cr_assert_eq(cow_storage_lazy_clone(s, &c), COW_OK);
	walk_lazy_clone(s, 2, 1, true);
	walk_lazy_clone(c, 2, 1, true);
	cow_storage_release(c);
	cow_storage_release(s);
}

static void
free_deleter(void *data, size_t nbytes, void *ctx)
{
	(void)nbytes;
	(*(int *)ctx)++;
	free(data);
}

/* The eager fallback of a storage that may not be shared: a new storage
 * struct and a buffer, both from the storage's allocator. */
Test(fault_walk, lazy_clone_not_shareable)
{
	unsigned char *data = malloc(N);
	cow_storage_t *s;
	int deleted = 0;

	cow_test_fill(data, N, 5);
	cr_assert_eq(cow_storage_from_external_with_allocator(data, N,
	    free_deleter, &deleted, COW_STORAGE_NOT_SHAREABLE, fa, &s),
	    COW_OK);
	cr_assert_eq(cow_storage_allocator(s), fa);
	walk_lazy_clone(s, 5, 2, false);
	cr_assert_not(cow_storage_is_cow(s));
	cow_storage_release(s);
	cr_assert_eq(deleted, 1);
}

static void
walk_materialize(cow_storage_t *s, cow_storage_t *peer, unsigned seed)
{
	struct snapshot before = snap(s), peer_before = snap(peer);
	uint64_t live = cow_test_alloc_stats(fa).live_bytes;
	void *p = NULL;
	int failed = 0;

	for (uint64_t k = 1;; k++) {
		cow_status_t st;

		cr_assert_eq(cow_allocator_fault_fail_nth(fa, k), COW_OK);
		st = cow_storage_mutable_data(s, &p);
		if (st == COW_OK)
			break;
		cr_assert_eq(st, COW_ENOMEM);
		cr_assert_null(p);
		assert_same(s, before, seed);
		assert_same(peer, peer_before, seed);
		cr_assert_eq(cow_test_alloc_stats(fa).live_bytes, live);
		failed++;
	}
	cr_assert_eq(failed, 1, "materialize by copy allocates once");
	cr_assert_eq(cow_allocator_fault_disarm(fa), COW_OK);
	cr_assert(cow_test_check(p, N, seed));
	cr_assert_not(cow_storage_is_cow(s));
}

Test(fault_walk, materialize_copy)
{
	cow_storage_t *s = cow_test_storage(N, fa, 3), *c;

	cr_assert_eq(cow_storage_lazy_clone(s, &c), COW_OK);
	walk_materialize(c, s, 3);
	cr_assert_eq(cow_storage_share_count(s), 1);
	cow_storage_release(c);
	cow_storage_release(s);
}

Test(fault_walk, materialize_steal_needs_no_allocation)
{
	cow_storage_t *s = cow_test_storage(N, fa, 4), *c;
	void *p;

	cr_assert_eq(cow_storage_lazy_clone(s, &c), COW_OK);
	cow_storage_release(s);
	cr_assert_eq(cow_allocator_fault_fail_random(fa, 1.0, 0), COW_OK);
	cr_assert_eq(cow_storage_mutable_data(c, &p), COW_OK);
	cr_assert(cow_test_check(p, N, 4));
	cr_assert_eq(cow_allocator_fault_disarm(fa), COW_OK);
	cow_storage_release(c);
}

Test(fault_walk, storage_new)
{
	cow_storage_t *s = NULL;

	for (uint64_t k = 1;; k++) {
		cow_status_t st;

		cr_assert_eq(cow_allocator_fault_fail_nth(fa, k), COW_OK);
		st = cow_storage_new(N, fa, &s);
		if (st == COW_OK)
			break;
		cr_assert_eq(st, COW_ENOMEM);
		cr_assert_eq(cow_test_alloc_stats(fa).live_bytes, 0);
	}
	cow_storage_release(s);
}
