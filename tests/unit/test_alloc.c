/*
 * Allocators: counters, alignment, user vtables, jemalloc arena, faults.
 */
#include <math.h>

#include <criterion/criterion.h>

#include <cowstore/testing.h>

#include "cow_test.h"

TestSuite(alloc, .timeout = 30.0);

static void
check_roundtrip(cow_allocator_t *a)
{
	cow_alloc_stats_t st0 = cow_test_alloc_stats(a), st;
	size_t sizes[] = {1, 63, 64, 4096, 1 << 20};
	void *p[5];

	for (int i = 0; i < 5; i++) {
		p[i] = cow_allocator_alloc(a, sizes[i], 64);
		cr_assert_not_null(p[i], "%s: %zu bytes", cow_allocator_name(a),
		    sizes[i]);
		cr_assert_eq((uintptr_t)p[i] % 64, 0);
		memset(p[i], 0xab, sizes[i]);
	}
	st = cow_test_alloc_stats(a);
	cr_assert_eq(st.allocs - st0.allocs, 5);
	cr_assert_eq(st.live_allocs - st0.live_allocs, 5);
	cr_assert_eq(st.live_bytes - st0.live_bytes,
	    1 + 63 + 64 + 4096 + (1 << 20));
	for (int i = 0; i < 5; i++)
		cow_allocator_free(a, p[i], sizes[i], 64);
	st = cow_test_alloc_stats(a);
	cr_assert_eq(st.live_bytes, st0.live_bytes);
	cr_assert_eq(st.frees - st0.frees, 5);
}

Test(alloc, system_roundtrip)
{
	cow_allocator_t *a = cow_allocator_system();

	cr_assert_str_eq(cow_allocator_name(a), "system");
	check_roundtrip(a);
}

Test(alloc, larger_alignment)
{
	cow_allocator_t *a = cow_allocator_system();
	void *p = cow_allocator_alloc(a, 100, 4096);

	cr_assert_not_null(p);
	cr_assert_eq((uintptr_t)p % 4096, 0);
	cow_allocator_free(a, p, 100, 4096);
	cr_assert_null(cow_allocator_alloc(a, 100, 48));
	cr_assert_str_not_empty(cow_last_error());
	cr_assert_null(cow_allocator_alloc(a, 0, 64));
}

Test(alloc, jemalloc_or_enotsup)
{
	cow_allocator_t *a = NULL;
	cow_status_t st = cow_allocator_jemalloc(&a);

#ifdef COW_HAVE_JEMALLOC
	cr_assert_eq(st, COW_OK, "%s", cow_last_error());
	cr_assert_str_eq(cow_allocator_name(a), "jemalloc");
	cr_assert_eq(cow_allocator_default(), a);
	check_roundtrip(a);
#else
	cr_assert_eq(st, COW_ENOTSUP);
	cr_assert_null(a);
	cr_assert_eq(cow_allocator_default(), cow_allocator_system());
#endif
}

/* Every size up to past the small bound, with every alignment the
 * library asks for and a larger one: the jemalloc allocator serves the
 * small ones from jemalloc's malloc fast path (its size rounded up to a
 * multiple of 64), the rest from its arena; each block must be aligned,
 * writable for its whole size and distinct from the others live. */
Test(alloc, every_small_size_is_aligned)
{
	cow_allocator_t *a = cow_allocator_default();
	static const size_t aligns[] = {64, 128, 4096};
	cow_alloc_stats_t st0 = cow_test_alloc_stats(a), st;
	enum { N = 700 };
	void *p[N];
	size_t n[N];

	for (size_t k = 0; k < sizeof aligns / sizeof aligns[0]; k++) {
		size_t al = aligns[k];

		for (int i = 0; i < N; i++) {
			/* 1 .. 16 KiB + 8 in steps that hit every class. */
			n[i] = i < 300 ? (size_t)i + 1 : (size_t)(i - 299) * 41 + 1;
			p[i] = cow_allocator_alloc(a, n[i], al);
			cr_assert_not_null(p[i], "%zu bytes, align %zu", n[i], al);
			cr_assert_eq((uintptr_t)p[i] % al, 0, "%zu bytes at %p, "
			    "align %zu", n[i], p[i], al);
			memset(p[i], i & 0xff, n[i]);
		}
		for (int i = 0; i < N; i++) {
			const unsigned char *b = p[i];

			cr_assert(b[0] == (i & 0xff) && b[n[i] - 1] == (i & 0xff),
			    "block %d overwritten", i);
			cow_allocator_free(a, p[i], n[i], al);
		}
	}
	st = cow_test_alloc_stats(a);
	cr_assert_eq(st.live_bytes, st0.live_bytes);
	cr_assert_eq(st.allocs - st0.allocs, 3 * N);
}

/* The jemalloc allocator keeps small freed blocks in a per-thread cache:
 * a block freed is the next one of its size class handed out on this
 * thread, and it counts as freed meanwhile. cow_allocator_trim returns the
 * thread's cached blocks. */
Test(alloc, small_blocks_are_cached_per_thread)
{
#ifdef COW_HAVE_JEMALLOC
	cow_allocator_t *a = cow_allocator_default();
	cow_alloc_stats_t st0 = cow_test_alloc_stats(a), st;
	void *p = cow_allocator_alloc(a, 100, 64), *q, *r;

	cr_assert_not_null(p);
	cow_allocator_free(a, p, 100, 64);
	st = cow_test_alloc_stats(a);
	cr_assert_eq(st.live_bytes, st0.live_bytes, "a cached block is free");
	q = cow_allocator_alloc(a, 120, 64); /* same class: 65 to 128 */
	cr_assert_eq(q, p, "the cached block comes back");
	r = cow_allocator_alloc(a, 300, 64); /* too large to be cached */
	cr_assert_not_null(r);
	cow_allocator_free(a, r, 300, 64);
	cow_allocator_free(a, q, 120, 64);
	cr_assert_eq(cow_allocator_trim(a), COW_OK);
	st = cow_test_alloc_stats(a);
	cr_assert_eq(st.live_bytes, st0.live_bytes);
	cr_assert_eq(st.allocs - st0.allocs, 3);
	cr_assert_eq(st.frees - st0.frees, 3);
#else
	cr_skip("no jemalloc in this build: nothing is cached");
#endif
}

Test(alloc, builtins_are_never_destroyed)
{
	cr_assert_eq(cow_allocator_destroy(cow_allocator_system()), COW_EINVAL);
	cr_assert_eq(cow_allocator_destroy(cow_allocator_default()), COW_EINVAL);
	cr_assert_eq(cow_allocator_destroy(NULL), COW_EINVAL);
}

/* A user allocator: a bump arena over a static buffer. */
struct bump {
	unsigned char buf[1 << 16] __attribute__((aligned(4096)));
	size_t used;
	int frees;
};

static void *
bump_alloc(void *state, size_t n, size_t align)
{
	struct bump *b = state;
	size_t at = (b->used + align - 1) & ~(align - 1);

	if (at + n > sizeof b->buf)
		return NULL;
	b->used = at + n;
	return b->buf + at;
}

static void
bump_free(void *state, void *p, size_t n, size_t align)
{
	struct bump *b = state;

	(void)p;
	(void)n;
	(void)align;
	b->frees++;
}

Test(alloc, user_allocator_backs_storages)
{
	static struct bump b;
	static const cow_allocator_ops_t ops = {.alloc = bump_alloc,
	    .free = bump_free};
	cow_allocator_t *a;
	cow_storage_t *s, *c;
	void *p;

	cr_assert_eq(cow_allocator_new(&ops, &b, "bump", &a), COW_OK);
	cr_assert_str_eq(cow_allocator_name(a), "bump");
	cr_assert_eq(cow_storage_new(1000, a, &s), COW_OK);
	cr_assert_eq(cow_storage_lazy_clone(s, &c), COW_OK);
	cr_assert_eq(cow_storage_mutable_data(c, &p), COW_OK);
	cr_assert((unsigned char *)p >= b.buf &&
	    (unsigned char *)p < b.buf + sizeof b.buf);
	cr_assert_eq(cow_allocator_destroy(a), COW_EBUSY);
	cr_assert_str_not_empty(cow_last_error());
	cow_storage_release(s);
	cow_storage_release(c);
	cr_assert_eq(cow_test_alloc_stats(a).live_bytes, 0);
	cr_assert_gt(b.frees, 0);
	cr_assert_eq(cow_allocator_destroy(a), COW_OK);
}

Test(alloc, user_allocator_rejects_bad_ops)
{
	static const cow_allocator_ops_t half = {.alloc = bump_alloc};
	cow_allocator_t *a = NULL;

	cr_assert_eq(cow_allocator_new(&half, NULL, "x", &a), COW_EINVAL);
	cr_assert_null(a);
	cr_assert_eq(cow_allocator_new(NULL, NULL, "x", &a), COW_EINVAL);
	cr_assert_eq(cow_allocator_new(&half, NULL, NULL, &a), COW_EINVAL);
}

Test(alloc, fault_fails_nth_once)
{
	cow_allocator_t *f;
	void *p[5];

	cr_assert_eq(cow_allocator_fault_new(cow_allocator_system(), &f),
	    COW_OK);
	cr_assert_eq(cow_allocator_fault_fail_nth(f, 3), COW_OK);
	for (int i = 0; i < 5; i++)
		p[i] = cow_allocator_alloc(f, 128, 64);
	cr_assert_not_null(p[0]);
	cr_assert_not_null(p[1]);
	cr_assert_null(p[2]);
	cr_assert_not_null(p[3]);
	cr_assert_not_null(p[4]);
	cr_assert_eq(cow_allocator_fault_injected(f), 1);
	cr_assert_eq(cow_test_alloc_stats(f).failures, 1);
	for (int i = 0; i < 5; i++)
		cow_allocator_free(f, p[i], 128, 64);
	cr_assert_eq(cow_test_alloc_stats(f).live_bytes, 0);
	cr_assert_eq(cow_allocator_destroy(f), COW_OK);
}

static unsigned
count_failures(cow_allocator_t *f, int n)
{
	unsigned fails = 0;

	for (int i = 0; i < n; i++) {
		void *p = cow_allocator_alloc(f, 64, 64);

		if (p == NULL)
			fails++;
		cow_allocator_free(f, p, 64, 64);
	}
	return fails;
}

Test(alloc, fault_random_is_seeded_and_calibrated)
{
	cow_allocator_t *f;
	unsigned a, b, c;

	cr_assert_eq(cow_allocator_fault_new(cow_allocator_system(), &f),
	    COW_OK);
	cr_assert_eq(cow_allocator_fault_fail_random(f, 0.25, 42), COW_OK);
	a = count_failures(f, 4000);
	cr_assert_eq(cow_allocator_fault_fail_random(f, 0.25, 42), COW_OK);
	b = count_failures(f, 4000);
	cr_assert_eq(a, b, "same seed, same failures");
	cr_assert(a > 800 && a < 1200, "25%% of 4000 gave %u", a);
	cr_assert_eq(cow_allocator_fault_fail_random(f, 1.0, 1), COW_OK);
	cr_assert_eq(count_failures(f, 100), 100);
	cr_assert_eq(cow_allocator_fault_fail_random(f, 0.0, 1), COW_OK);
	cr_assert_eq(count_failures(f, 100), 0);
	cr_assert_eq(cow_allocator_fault_disarm(f), COW_OK);
	c = count_failures(f, 100);
	cr_assert_eq(c, 0);
	cr_assert_eq(cow_allocator_fault_fail_random(f, 1.5, 1), COW_EINVAL);
	cr_assert_eq(cow_allocator_fault_fail_random(f, NAN, 1), COW_EINVAL);
	cr_assert_eq(cow_allocator_destroy(f), COW_OK);
}

Test(alloc, fault_calls_reject_other_allocators)
{
	cr_assert_eq(cow_allocator_fault_fail_nth(cow_allocator_system(), 1),
	    COW_EINVAL);
	cr_assert_eq(cow_allocator_fault_disarm(NULL), COW_EINVAL);
	cr_assert_eq(cow_allocator_fault_injected(cow_allocator_system()), 0);
}

Test(alloc, trim_and_retain_limit)
{
	cow_allocator_t *a = NULL;
	enum { CHUNK = 8 << 20, COUNT = 8 };
	void *p[COUNT];

	if (cow_allocator_jemalloc(&a) != COW_OK) {
		cr_assert_eq(cow_allocator_set_retain_limit(
		    cow_allocator_system(), 1), COW_ENOTSUP);
		cr_assert_eq(cow_allocator_trim(cow_allocator_system()), COW_OK);
		cr_assert_eq(cow_allocator_retained_bytes(
		    cow_allocator_system()), 0);
		return;
	}
	/* Large limit: freed buffers stay mapped for reuse. */
	cr_assert_eq(cow_allocator_set_retain_limit(a, (size_t)1 << 30), COW_OK);
	for (int i = 0; i < COUNT; i++) {
		p[i] = cow_allocator_alloc(a, CHUNK, 64);
		cr_assert_not_null(p[i]);
		memset(p[i], 1, CHUNK);
	}
	for (int i = 0; i < COUNT; i++)
		cow_allocator_free(a, p[i], CHUNK, 64);
	cr_assert_geq(cow_allocator_retained_bytes(a), (size_t)COUNT * CHUNK,
	    "retained %zu", cow_allocator_retained_bytes(a));
	/* Reuse does not grow the retained memory. */
	p[0] = cow_allocator_alloc(a, CHUNK, 64);
	cow_allocator_free(a, p[0], CHUNK, 64);
	cr_assert_leq(cow_allocator_retained_bytes(a),
	    (size_t)(COUNT + 1) * CHUNK);
	cr_assert_eq(cow_allocator_trim(a), COW_OK);
	cr_assert_eq(cow_allocator_retained_bytes(a), 0);

	/* Small limit: retention stays within the cap plus one buffer. */
	cr_assert_eq(cow_allocator_set_retain_limit(a, 2 * CHUNK), COW_OK);
	for (int i = 0; i < COUNT; i++) {
		p[i] = cow_allocator_alloc(a, CHUNK, 64);
		memset(p[i], 1, CHUNK);
	}
	for (int i = 0; i < COUNT; i++) {
		cow_allocator_free(a, p[i], CHUNK, 64);
		cr_assert_leq(cow_allocator_retained_bytes(a), 3 * CHUNK,
		    "retained %zu after %d frees",
		    cow_allocator_retained_bytes(a), i + 1);
	}
	cr_assert_eq(cow_allocator_set_retain_limit(NULL, 1), COW_EINVAL);
	cr_assert_eq(cow_allocator_trim(NULL), COW_EINVAL);
}
