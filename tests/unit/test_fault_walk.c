/*
 * Fault injection walks every allocation point of lazy clone and
 * materialise: fail the 1st, 2nd, ... allocation until the operation
 * succeeds. Every failure returns COW_ENOMEM and changes nothing.
 */
#include <criterion/criterion.h>

#include "cow_test.h"

#define N 1000

static cow_allocator_t *fa;

static void
setup(void)
{
	cr_assert_eq(cow_allocator_fault_new(cow_allocator_system(), &fa),
	    COW_OK);
}

static void
teardown(void)
{
	cr_assert_eq(cow_test_alloc_stats(fa).live_bytes, 0, "leak");
	cr_assert_eq(cow_allocator_destroy(fa), COW_OK);
}

TestSuite(fault_walk, .init = setup, .fini = teardown, .timeout = 30.0);

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

static void
walk_lazy_clone(cow_storage_t *src, unsigned seed)
{
	struct snapshot before = snap(src);
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
		cr_assert_str_not_empty(cow_last_error());
		assert_same(src, before, seed);
		failed++;
	}
	cr_assert_geq(failed, 1, "no allocation point was walked");
	cr_assert_eq(cow_allocator_fault_disarm(fa), COW_OK);
	cr_assert(cow_storage_shares_data(src, out));
	cow_storage_release(out);
}

Test(fault_walk, lazy_clone_fresh)
{
	cow_storage_t *s = cow_test_storage(N, fa, 1);

	walk_lazy_clone(s, 1);
	cow_storage_release(s);
}

Test(fault_walk, lazy_clone_cow)
{
	cow_storage_t *s = cow_test_storage(N, fa, 2), *c;

	cr_assert_eq(cow_storage_lazy_clone(s, &c), COW_OK);
	walk_lazy_clone(s, 2);
	walk_lazy_clone(c, 2);
	cow_storage_release(c);
	cow_storage_release(s);
}

static void
walk_materialize(cow_storage_t *s, cow_storage_t *peer, unsigned seed)
{
	struct snapshot before = snap(s), peer_before = snap(peer);
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
