/*
 * Storage and copy-on-write semantics, single-threaded.
 */
#include <criterion/criterion.h>

#include <cowstore/testing.h>

#include "cow_test.h"

#define N 4096

static cow_allocator_t *sys;

static void
setup(void)
{
	sys = cow_allocator_system();
	cow_stats_reset();
}

TestSuite(storage, .init = setup, .timeout = 30.0);

Test(storage, new_is_private_zeroed)
{
	cow_storage_t *s;
	const unsigned char *p;

	cr_assert_eq(cow_storage_new(N, sys, &s), COW_OK);
	cr_assert_eq(cow_storage_nbytes(s), N);
	cr_assert_not(cow_storage_is_cow(s));
	cr_assert_eq(cow_storage_share_count(s), 1);
	p = cow_storage_const_data(s);
	cr_assert_not_null(p);
	cr_assert_eq((uintptr_t)p % COW_MIN_ALIGNMENT, 0);
	for (size_t i = 0; i < N; i++)
		cr_assert_eq(p[i], 0);
	cr_assert_eq(cow_storage_allocator(s), sys);
	cow_storage_release(s);
	cr_assert_eq(cow_test_alloc_stats(sys).live_bytes, 0);
}

Test(storage, lazy_clone_of_fresh_storage)
{
	cow_storage_t *s = cow_test_storage(N, sys, 1), *c;
	const void *addr = cow_storage_const_data(s);
	cow_stats_t st;

	cr_assert_eq(cow_storage_lazy_clone(s, &c), COW_OK);
	cr_assert_neq(c, s);
	cr_assert(cow_storage_is_cow(s));
	cr_assert(cow_storage_is_cow(c));
	cr_assert_eq(cow_storage_const_data(c), addr);
	cr_assert_eq(cow_storage_const_data(s), addr, "source address moved");
	cr_assert_eq(cow_storage_share_count(s), 2);
	cr_assert_eq(cow_storage_share_count(c), 2);
	cr_assert(cow_storage_shares_data(s, c));
	cow_stats_get(&st);
	cr_assert_eq(st.lazy_clones, 1);
	cr_assert_eq(st.ctx_wraps, 1);
	cr_assert_eq(st.bytes_copied, 0);
	cow_storage_release(c);
	cr_assert_eq(cow_storage_share_count(s), 1);
	cr_assert(cow_test_check(cow_storage_const_data(s), N, 1));
	cow_storage_release(s);
	cr_assert_eq(cow_test_alloc_stats(sys).live_bytes, 0);
}

Test(storage, lazy_clone_of_cow_storage_adds_one)
{
	cow_storage_t *s = cow_test_storage(N, sys, 2), *c1, *c2;
	cow_stats_t st;
	const void *addr;

	cr_assert_eq(cow_storage_lazy_clone(s, &c1), COW_OK);
	addr = cow_storage_const_data(c1);
	cr_assert(cow_storage_is_cow(c1));
	cr_assert_eq(cow_storage_share_count(c1), 2);
	cr_assert_eq(cow_storage_lazy_clone(c1, &c2), COW_OK);
	/* The COW source: count plus one, otherwise untouched. */
	cr_assert_eq(cow_storage_share_count(c1), 3);
	cr_assert(cow_storage_is_cow(c1));
	cr_assert_eq(cow_storage_const_data(c1), addr, "source address moved");
	cr_assert(cow_test_check(cow_storage_const_data(c1), N, 2));
	cr_assert_eq(cow_storage_share_count(s), 3);
	cr_assert_eq(cow_storage_share_count(c2), 3);
	cr_assert_eq(cow_storage_const_data(c2), addr);
	cr_assert(cow_storage_shares_data(c2, s));
	cr_assert(cow_test_check(cow_storage_const_data(s), N, 2));
	cow_stats_get(&st);
	cr_assert_eq(st.ctx_wraps, 1, "a COW source is not wrapped again");
	cr_assert_eq(st.lazy_clones, 2);
	cow_storage_release(c1);
	cow_storage_release(c2);
	cow_storage_release(s);
}

Test(storage, chain_and_fan_out)
{
	cow_storage_t *s0 = cow_test_storage(N, sys, 3), *s1, *s2, *s3;
	const void *orig = cow_storage_const_data(s0);
	void *p;
	cow_stats_t st;

	cr_assert_eq(cow_storage_lazy_clone(s0, &s1), COW_OK);
	cr_assert_eq(cow_storage_lazy_clone(s1, &s2), COW_OK);
	cr_assert_eq(cow_storage_lazy_clone(s0, &s3), COW_OK);
	cr_assert_eq(cow_storage_share_count(s0), 4);
	cr_assert_eq(cow_storage_const_data(s2), orig);
	cr_assert_eq(cow_storage_const_data(s3), orig);

	cr_assert_eq(cow_storage_mutable_data(s1, &p), COW_OK);
	cr_assert_neq(p, orig);
	cr_assert_eq(cow_storage_mutable_data(s2, &p), COW_OK);
	cr_assert_neq(p, orig);
	cr_assert_eq(cow_storage_mutable_data(s3, &p), COW_OK);
	cr_assert_neq(p, orig);
	cr_assert_eq(cow_storage_share_count(s0), 1);
	cow_stats_get(&st);
	cr_assert_eq(st.materialize_copies, 3);
	cr_assert_eq(st.materialize_steals, 0);
	cr_assert_eq(st.bytes_copied, 3 * N);

	cr_assert_eq(cow_storage_mutable_data(s0, &p), COW_OK);
	cr_assert_eq(p, orig, "the last reference steals the original");
	cr_assert_not(cow_storage_is_cow(s0));
	cow_stats_get(&st);
	cr_assert_eq(st.materialize_copies, 3);
	cr_assert_eq(st.materialize_steals, 1);
	cr_assert_eq(st.bytes_copied, 3 * N);
	for (cow_storage_t **s = (cow_storage_t *[]){s0, s1, s2, s3, NULL}; *s;
	     s++) {
		cr_assert(cow_test_check(cow_storage_const_data(*s), N, 3));
		cow_storage_release(*s);
	}
	cr_assert_eq(cow_test_alloc_stats(sys).live_bytes, 0);
}

Test(storage, write_through_clone_leaves_source)
{
	cow_storage_t *s = cow_test_storage(N, sys, 4), *c;
	unsigned char *p;

	cr_assert_eq(cow_storage_lazy_clone(s, &c), COW_OK);
	cr_assert_eq(cow_storage_mutable_data(c, (void **)&p), COW_OK);
	memset(p, 0xee, N);
	cr_assert(cow_test_check(cow_storage_const_data(s), N, 4));
	cr_assert_not(cow_storage_is_cow(c));
	cr_assert_not(cow_storage_shares_data(s, c));
	cow_storage_release(c);
	cow_storage_release(s);
}

Test(storage, write_through_source_leaves_clone)
{
	cow_storage_t *s = cow_test_storage(N, sys, 5), *c;
	unsigned char *p;
	const void *orig = cow_storage_const_data(s);

	cr_assert_eq(cow_storage_lazy_clone(s, &c), COW_OK);
	cr_assert_eq(cow_storage_mutable_data(s, (void **)&p), COW_OK);
	cr_assert_neq((const void *)p, orig, "source copies while shared");
	memset(p, 0x11, N);
	cr_assert(cow_test_check(cow_storage_const_data(c), N, 5));
	cr_assert_eq(cow_storage_const_data(c), orig);
	cow_storage_release(s);
	cow_storage_release(c);
}

Test(storage, const_access_never_materializes)
{
	cow_storage_t *s = cow_test_storage(N, sys, 6), *c;
	cow_alloc_stats_t before, after;
	cow_stats_t st;

	cr_assert_eq(cow_storage_lazy_clone(s, &c), COW_OK);
	before = cow_test_alloc_stats(sys);
	for (int i = 0; i < 100; i++) {
		cr_assert(cow_test_check(cow_storage_const_data(c), N, 6));
		cr_assert(cow_test_check(cow_storage_const_data(s), N, 6));
	}
	after = cow_test_alloc_stats(sys);
	cr_assert_eq(after.allocs, before.allocs);
	cr_assert(cow_storage_is_cow(s) && cow_storage_is_cow(c));
	cow_stats_get(&st);
	cr_assert_eq(st.materialize_copies + st.materialize_steals, 0);
	cow_storage_release(c);
	cow_storage_release(s);
}

Test(storage, sole_reference_steals_without_allocation)
{
	cow_storage_t *s = cow_test_storage(N, sys, 7), *c;
	const void *orig = cow_storage_const_data(s);
	cow_alloc_stats_t before, after;
	void *p;

	cr_assert_eq(cow_storage_lazy_clone(s, &c), COW_OK);
	cow_storage_release(s);
	cr_assert(cow_storage_is_cow(c));
	cr_assert_eq(cow_storage_share_count(c), 1);
	before = cow_test_alloc_stats(sys);
	cr_assert_eq(cow_storage_mutable_data(c, &p), COW_OK);
	after = cow_test_alloc_stats(sys);
	cr_assert_eq(p, orig);
	cr_assert_eq(after.allocs, before.allocs, "steal allocated");
	cr_assert_eq(after.frees, before.frees + 1, "only the context freed");
	cr_assert(cow_test_check(p, N, 7));
	cow_storage_release(c);
	cr_assert_eq(cow_test_alloc_stats(sys).live_bytes, 0);
}

Test(storage, materialize_of_private_is_free)
{
	cow_storage_t *s = cow_test_storage(N, sys, 8);
	cow_alloc_stats_t before = cow_test_alloc_stats(sys);
	void *p;

	cr_assert_eq(cow_storage_materialize(s), COW_OK);
	cr_assert_eq(cow_storage_mutable_data(s, &p), COW_OK);
	cr_assert_eq(p, cow_storage_const_data(s));
	cr_assert_eq(cow_test_alloc_stats(sys).allocs, before.allocs);
	cow_storage_release(s);
}

Test(storage, releasing_all_frees_external_once)
{
	struct cow_test_deleter d = {0};
	cow_storage_t *s, *c[4];
	void *data = malloc(N);

	cow_test_fill(data, N, 9);
	cr_assert_eq(cow_storage_from_external(data, N, cow_test_deleter_fn,
	    &d, 0, &s), COW_OK);
	cr_assert_eq(cow_storage_const_data(s), data);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(cow_storage_lazy_clone(i ? c[i - 1] : s, &c[i]),
		    COW_OK);
	cr_assert_eq(cow_storage_share_count(s), 5);
	cow_storage_release(s);
	for (int i = 0; i < 3; i++)
		cow_storage_release(c[i]);
	cr_assert_eq(d.calls, 0, "freed while still shared");
	cr_assert(cow_test_check(cow_storage_const_data(c[3]), N, 9));
	cow_storage_release(c[3]);
	cr_assert_eq(d.calls, 1);
	cr_assert_eq(d.last_data, data);
	cr_assert_eq(d.last_nbytes, N);
}

Test(storage, external_steal_keeps_deleter)
{
	struct cow_test_deleter d = {0};
	cow_storage_t *s, *c;
	void *data = malloc(N), *p;

	cow_test_fill(data, N, 10);
	cr_assert_eq(cow_storage_from_external(data, N, cow_test_deleter_fn,
	    &d, 0, &s), COW_OK);
	cr_assert_eq(cow_storage_lazy_clone(s, &c), COW_OK);
	cr_assert_eq(cow_storage_mutable_data(s, &p), COW_OK);
	cr_assert_neq(p, data, "shared: the writer copies");
	cr_assert_eq(cow_storage_mutable_data(c, &p), COW_OK);
	cr_assert_eq(p, data, "last: the writer steals the external memory");
	cow_storage_release(s);
	cr_assert_eq(d.calls, 0);
	cow_storage_release(c);
	cr_assert_eq(d.calls, 1);
}

Test(storage, external_without_deleter_is_not_freed)
{
	static unsigned char buf[64];
	cow_storage_t *s, *c;

	cr_assert_eq(cow_storage_from_external(buf, sizeof buf, NULL, NULL, 0,
	    &s), COW_OK);
	cr_assert_eq(cow_storage_lazy_clone(s, &c), COW_OK);
	cow_storage_release(s);
	cow_storage_release(c);
}

Test(storage, not_shareable_clones_eagerly)
{
	struct cow_test_deleter d = {0};
	cow_storage_t *s, *c;
	void *data = malloc(N);
	cow_stats_t st;

	cow_test_fill(data, N, 11);
	cr_assert_eq(cow_storage_from_external(data, N, cow_test_deleter_fn,
	    &d, COW_STORAGE_NOT_SHAREABLE, &s), COW_OK);
	cr_assert_eq(cow_storage_lazy_clone(s, &c), COW_OK);
	cr_assert_not(cow_storage_is_cow(s));
	cr_assert_not(cow_storage_is_cow(c));
	cr_assert_neq(cow_storage_const_data(c), data);
	cr_assert(cow_test_check(cow_storage_const_data(c), N, 11));
	cr_assert_not(cow_storage_shares_data(s, c));
	cow_stats_get(&st);
	cr_assert_eq(st.eager_fallbacks, 1);
	cr_assert_eq(st.bytes_copied, N);
	cr_assert_eq(st.ctx_wraps, 0);
	cow_storage_release(c);
	cow_storage_release(s);
	cr_assert_eq(d.calls, 1);
}

Test(storage, zero_size_rule)
{
	cow_storage_t *s, *c;
	void *p = (void *)1;
	cow_stats_t st;

	cr_assert_eq(cow_storage_new(0, sys, &s), COW_OK);
	cr_assert_eq(cow_storage_nbytes(s), 0);
	cr_assert_null(cow_storage_const_data(s));
	cr_assert_eq(cow_storage_mutable_data(s, &p), COW_OK);
	cr_assert_null(p);
	cr_assert_eq(cow_storage_lazy_clone(s, &c), COW_OK);
	cr_assert_neq(c, s);
	cr_assert_not(cow_storage_is_cow(s));
	cr_assert_not(cow_storage_is_cow(c));
	cr_assert_eq(cow_storage_share_count(c), 1);
	cow_stats_get(&st);
	cr_assert_eq(st.eager_fallbacks, 0);
	cr_assert_eq(st.bytes_copied, 0);
	cow_storage_release(c);
	cow_storage_release(s);
	cr_assert_eq(cow_storage_from_external(NULL, 0, NULL, NULL, 0, &s),
	    COW_OK);
	cow_storage_release(s);
	cr_assert_eq(cow_test_alloc_stats(sys).live_bytes, 0);
}

Test(storage, retain_keeps_storage_alive)
{
	cow_storage_t *s = cow_test_storage(N, sys, 12);

	cow_storage_retain(s);
	cow_storage_release(s);
	cr_assert(cow_test_check(cow_storage_const_data(s), N, 12));
	cow_storage_release(s);
	cr_assert_eq(cow_test_alloc_stats(sys).live_bytes, 0);
}

Test(storage, default_allocator_is_used_for_null)
{
	cow_storage_t *s;

	cr_assert_eq(cow_storage_new(16, NULL, &s), COW_OK);
	cr_assert_eq(cow_storage_allocator(s), cow_allocator_default());
	cow_storage_release(s);
}

/* Fuzz finding: zero bytes over non-NULL external data still have NULL
 * data (storage.h), and the deleter still gets the caller's pointer. */
Test(storage, external_zero_bytes_has_null_data)
{
	struct cow_test_deleter del = {0};
	void *mem = malloc(16), *p = (void *)1;
	cow_storage_t *s;

	cr_assert_eq(cow_storage_from_external(mem, 0, cow_test_deleter_fn,
	    &del, 0, &s), COW_OK);
	cr_assert_null(cow_storage_const_data(s));
	cr_assert_eq(cow_storage_mutable_data(s, &p), COW_OK);
	cr_assert_null(p);
	cow_storage_release(s);
	cr_assert_eq(del.calls, 1);
	cr_assert_eq(del.last_data, mem);
}

/* Fuzz finding: a failed materialize names cow_storage_materialize. */
Test(storage, materialize_error_names_itself)
{
	cow_allocator_t *fault;
	cow_storage_t *s, *c;

	cr_assert_eq(cow_allocator_fault_new(sys, &fault), COW_OK);
	cr_assert_eq(cow_storage_new(64, fault, &s), COW_OK);
	cr_assert_eq(cow_storage_lazy_clone(s, &c), COW_OK);
	cr_assert_eq(cow_allocator_fault_fail_nth(fault, 1), COW_OK);
	cr_assert_eq(cow_storage_materialize(c), COW_ENOMEM);
	cr_assert(strstr(cow_last_error(), "cow_storage_materialize") != NULL,
	    "%s", cow_last_error());
	cr_assert(cow_storage_is_cow(c));
	cow_storage_release(c);
	cow_storage_release(s);
	cr_assert_eq(cow_allocator_destroy(fault), COW_OK);
}
