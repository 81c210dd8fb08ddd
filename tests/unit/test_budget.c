/*
 * test_budget.c - the allocator's byte limit (cow_allocator_set_limit) and
 * the zero-filled path of cow_storage_new.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cow_test.h"
#include "alloc/allocator.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COW_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define COW_TEST_SANITIZED 1
#endif
#endif
#ifndef COW_TEST_SANITIZED
#define COW_TEST_SANITIZED 0
#endif

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

/* Resident memory of this process in bytes (/proc/self/statm). */
static uint64_t
resident_bytes(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	cr_assert_not_null(f);
	cr_assert_eq(fscanf(f, "%lu %lu", &size, &resident), 2);
	fclose(f);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static double
thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The case: 64 TiB used to be mapped and then memset page by page
 * until the OOM killer ended the process. Now the limit refuses it before
 * anything is mapped. CPU time, not wall time: a descheduled test must
 * not fail. */
static void
refuse_huge(cow_allocator_t *a)
{
	cow_storage_t *s = NULL;
	uint64_t rss0;
	double t0, ms;

	/* Once to warm the error path (message formatting, lazy binding). */
	cr_assert_eq(cow_storage_new((size_t)1 << 46, a, &s), COW_ENOMEM);
	rss0 = resident_bytes();
	t0 = thread_cpu_ms();
	cr_assert_eq(cow_storage_new((size_t)1 << 46, a, &s), COW_ENOMEM);
	ms = thread_cpu_ms() - t0;
	cr_assert_null(s);
	cr_assert_lt(ms, 10.0, "refusing 64 TiB took %.3f ms of CPU", ms);
	cr_assert_lt(resident_bytes(), rss0 + ((uint64_t)1 << 20),
	    "resident memory grew from %llu to %llu bytes",
	    (unsigned long long)rss0, (unsigned long long)resident_bytes());
	cr_assert(strstr(cow_last_error(), "limit") != NULL, "%s",
	    cow_last_error());
	cr_assert(strstr(cow_last_error(), "70368744177664") != NULL, "%s",
	    cow_last_error());
}

Test(budget, huge_storage_is_refused_default)
{
	refuse_huge(NULL);
}

Test(budget, huge_storage_is_refused_system)
{
	refuse_huge(cow_allocator_system());
}

/* A 1 GiB storage is zero and costs (almost) no resident memory until
 * written; writing 64 MiB of it shows up (the measurement can see it). */
static void
lazy_zero(cow_allocator_t *a)
{
	const size_t n = (size_t)1 << 30, w = (size_t)64 << 20;
	cow_storage_t *s;
	const unsigned char *c;
	uint64_t rss0, rss1, rss2;
	void *p;

	if (COW_TEST_SANITIZED || RUNNING_ON_VALGRIND)
		cr_skip_test("resident memory is the sanitizer's or valgrind's");
	rss0 = resident_bytes();
	cr_assert_eq(cow_storage_new(n, a, &s), COW_OK, "%s", cow_last_error());
	rss1 = resident_bytes();
	cr_assert_lt(rss1, rss0 + ((uint64_t)16 << 20),
	    "a fresh 1 GiB storage made %llu bytes resident",
	    (unsigned long long)(rss1 - rss0));
	c = cow_storage_const_data(s);
	for (size_t i = 0; i < n; i += (size_t)1 << 24)
		cr_assert_eq(c[i], 0);
	cr_assert_eq(cow_storage_mutable_data(s, &p), COW_OK);
	memset(p, 1, w);
	rss2 = resident_bytes();
	cr_assert_geq(rss2, rss1 + w - ((uint64_t)4 << 20),
	    "writing 64 MiB made only %llu bytes resident",
	    (unsigned long long)(rss2 - rss1));
	cow_storage_release(s);
}

Test(budget, gigabyte_storage_costs_nothing_until_written_default)
{
	lazy_zero(NULL);
}

Test(budget, gigabyte_storage_costs_nothing_until_written_system)
{
	lazy_zero(cow_allocator_system());
}

/* Memory whose bytes are never zero, counting alloc calls. */
struct dirty {
	int allocs;
};

static void *
dirty_alloc(void *state, size_t nbytes, size_t alignment)
{
	struct dirty *d = state;
	void *p = NULL;

	d->allocs++;
	if (posix_memalign(&p, alignment, nbytes) != 0)
		return NULL;
	memset(p, 0xab, nbytes);
	return p;
}

static void
dirty_free(void *state, void *ptr, size_t nbytes, size_t alignment)
{
	(void)state;
	(void)nbytes;
	(void)alignment;
	free(ptr);
}

/* A user allocator without alloc_zeroed (the vtable before it existed). */
static const cow_allocator_ops_t dirty_ops = {.alloc = dirty_alloc,
    .free = dirty_free};

Test(budget, user_allocator_without_zeroed_path_still_zero_fills)
{
	struct dirty d = {0};
	cow_allocator_t *a;
	cow_storage_t *s;
	const unsigned char *p;

	cr_assert_eq(cow_allocator_new(&dirty_ops, &d, "dirty", &a), COW_OK);
	cr_assert_eq(cow_storage_new(5000, a, &s), COW_OK);
	p = cow_storage_const_data(s);
	for (size_t i = 0; i < 5000; i++)
		cr_assert_eq(p[i], 0, "byte %zu is %u", i, p[i]);
	cow_storage_release(s);
	cr_assert_eq(cow_allocator_destroy(a), COW_OK);
}

Test(budget, limit_refuses_before_the_back_end_and_names_itself)
{
	struct dirty d = {0};
	cow_allocator_t *a;
	cow_storage_t *s, *t;
	int calls;

	cr_assert_eq(cow_allocator_new(&dirty_ops, &d, "dirty", &a), COW_OK);
	cr_assert_eq(cow_allocator_limit(a), COW_ALLOCATOR_NO_LIMIT);
	cr_assert_eq(cow_allocator_set_limit(a, (size_t)1 << 20), COW_OK);
	cr_assert_eq(cow_allocator_limit(a), (size_t)1 << 20);
	cr_assert_eq(cow_storage_new((size_t)700 << 10, a, &s), COW_OK);
	calls = d.allocs;
	/* 700 KiB live (plus the struct): another 700 KiB is over. */
	cr_assert_eq(cow_storage_new((size_t)700 << 10, a, &t), COW_ENOMEM);
	cr_assert_eq(d.allocs, calls, "the back end was called");
	cr_assert(strstr(cow_last_error(), "limit of 1048576 bytes") != NULL,
	    "%s", cow_last_error());
	cr_assert(strstr(cow_last_error(), "dirty") != NULL);
	cr_assert_eq(cow_test_alloc_stats(a).failures, 1);
	/* A lazy clone's materialisation is refused the same way, and the
	 * clone stays readable. */
	cr_assert_eq(cow_storage_lazy_clone(s, &t), COW_OK);
	{
		void *p;

		cr_assert_eq(cow_storage_mutable_data(t, &p), COW_ENOMEM);
		cr_assert_eq(cow_storage_const_data(t),
		    cow_storage_const_data(s));
	}
	cow_storage_release(s);
	/* Released: it fits again (t steals the data, no allocation). */
	cr_assert_eq(cow_storage_new((size_t)200 << 10, a, &s), COW_OK);
	cow_storage_release(s);
	cow_storage_release(t);
	cr_assert_eq(cow_allocator_set_limit(a, COW_ALLOCATOR_NO_LIMIT),
	    COW_OK);
	cr_assert_eq(cow_allocator_limit(a), COW_ALLOCATOR_NO_LIMIT);
	cr_assert_eq(cow_allocator_destroy(a), COW_OK);
	cr_assert_eq(cow_allocator_set_limit(NULL, 1), COW_EINVAL);
	cr_assert_eq(cow_allocator_limit(NULL), 0);
}

/* The built-in allocator's per-thread credit: live bytes never exceed the
 * limit, and small requests are refused at most two chunks early. */
Test(budget, small_requests_stay_within_the_limit)
{
	cow_allocator_t *a = cow_allocator_default();
	const size_t limit = (size_t)4 << 20, n = 100;
	static void *blocks[((size_t)4 << 20) / 100 + 1];
	size_t k = 0;

	uint64_t live;

	cr_assert_eq(cow_allocator_set_limit(a,
	    (size_t)cow__budget_used(&a->budget) + limit), COW_OK);
	while ((blocks[k] = cow_allocator_alloc(a, n, 64)) != NULL)
		k++;
	live = cow_test_alloc_stats(a).live_bytes;
	cr_assert_gt(k, 0);
	cr_assert_leq(live, cow_allocator_limit(a));
	cr_assert_gt(live + n + 2 * COW__BUDGET_CHUNK, cow_allocator_limit(a),
	    "refused with %llu bytes live under a limit of %zu",
	    (unsigned long long)live, cow_allocator_limit(a));
	for (size_t i = 0; i < k; i++)
		cow_allocator_free(a, blocks[i], n, 64);
	cr_assert_not_null(blocks[0] = cow_allocator_alloc(a, n, 64));
	cow_allocator_free(a, blocks[0], n, 64);
}

/* A limit lowered below what is live holds at once for small requests
 * too: the per-thread credit drawn under the old limit no longer counts. */
static void
lowered_limit_refuses(cow_allocator_t *a)
{
	cow_storage_t *held, *s = NULL;
	size_t live;

	/* Draw credit: this thread now holds some for small requests. */
	cr_assert_eq(cow_storage_new(64, a, &held), COW_OK);
	live = (size_t)cow_test_alloc_stats(a).live_bytes;
	cr_assert_eq(cow_allocator_set_limit(a, live / 2), COW_OK);
	cr_assert_eq(cow_storage_new(64, a, &s), COW_ENOMEM,
	    "a small request was granted with %llu bytes live under a "
	    "limit of %zu", (unsigned long long)
	    cow_test_alloc_stats(a).live_bytes, live / 2);
	cr_assert_null(s);
	cr_assert(strstr(cow_last_error(), "limit") != NULL, "%s",
	    cow_last_error());
	cr_assert_eq(cow_allocator_set_limit(a, 0), COW_OK);
	cr_assert_eq(cow_storage_new(64, a, &s), COW_ENOMEM);
	/* Raised again: requests succeed, and nothing was lost. */
	cr_assert_eq(cow_allocator_set_limit(a, COW_ALLOCATOR_NO_LIMIT),
	    COW_OK);
	cr_assert_eq(cow_storage_new(64, a, &s), COW_OK);
	cow_storage_release(s);
	cow_storage_release(held);
}

Test(budget, lowered_limit_holds_at_once_default)
{
	lowered_limit_refuses(cow_allocator_default());
}

Test(budget, lowered_limit_holds_at_once_system)
{
	lowered_limit_refuses(cow_allocator_system());
}

/* Another thread, ordered after set_limit by a lock: it drew credit under
 * the old limit, and its next small request must see the new one. */
struct ordered {
	cow_allocator_t *a;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int step;           /* 1: credit drawn; 2: limit lowered */
	cow_status_t first; /* the request before the lowering */
	cow_status_t later; /* the request after it */
};

static void *
ordered_thread(void *arg)
{
	struct ordered *o = arg;
	cow_storage_t *held = NULL, *s = NULL;

	o->first = cow_storage_new(64, o->a, &held);
	pthread_mutex_lock(&o->lock);
	o->step = 1;
	pthread_cond_broadcast(&o->cond);
	while (o->step != 2)
		pthread_cond_wait(&o->cond, &o->lock);
	pthread_mutex_unlock(&o->lock);
	o->later = cow_storage_new(64, o->a, &s);
	if (s != NULL)
		cow_storage_release(s);
	cow_storage_release(held);
	return NULL;
}

static void
lowered_limit_reaches_an_ordered_thread(cow_allocator_t *a)
{
	struct ordered o = {.a = a, .step = 0};
	pthread_t t;

	pthread_mutex_init(&o.lock, NULL);
	pthread_cond_init(&o.cond, NULL);
	cr_assert_eq(pthread_create(&t, NULL, ordered_thread, &o), 0);
	pthread_mutex_lock(&o.lock);
	while (o.step != 1)
		pthread_cond_wait(&o.cond, &o.lock);
	pthread_mutex_unlock(&o.lock);
	cr_assert_eq(cow_allocator_set_limit(a,
	    (size_t)cow_test_alloc_stats(a).live_bytes / 2), COW_OK);
	pthread_mutex_lock(&o.lock);
	o.step = 2;
	pthread_cond_broadcast(&o.cond);
	pthread_mutex_unlock(&o.lock);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(cow_allocator_set_limit(a, COW_ALLOCATOR_NO_LIMIT),
	    COW_OK);
	cr_assert_eq(o.first, COW_OK);
	cr_assert_eq(o.later, COW_ENOMEM, "a thread ordered after the "
	    "lowering was granted a small request from credit drawn under "
	    "the old limit");
	pthread_cond_destroy(&o.cond);
	pthread_mutex_destroy(&o.lock);
}

Test(budget, lowered_limit_reaches_an_ordered_thread_default)
{
	lowered_limit_reaches_an_ordered_thread(cow_allocator_default());
}

Test(budget, lowered_limit_reaches_an_ordered_thread_system)
{
	lowered_limit_reaches_an_ordered_thread(cow_allocator_system());
}

static void *
credit_thread(void *arg)
{
	cow_allocator_t *a = arg;
	cow_storage_t *s;

	for (int i = 0; i < 1000; i++) {
		cr_assert_eq(cow_storage_new(64, a, &s), COW_OK);
		cow_storage_release(s);
	}
	return NULL;
}

/* A thread's credit goes back when it exits. */
Test(budget, thread_exit_returns_its_credit)
{
	cow_allocator_t *a = cow_allocator_default();
	uint64_t before = cow__budget_used(&a->budget);
	pthread_t t;

	cr_assert_eq(pthread_create(&t, NULL, credit_thread, a), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(cow__budget_used(&a->budget), before,
	    "%llu bytes charged before the thread, %llu after",
	    (unsigned long long)before,
	    (unsigned long long)cow__budget_used(&a->budget));
}

/* The default allocators start at three quarters of physical memory
 * (COW_MEMORY_LIMIT_MB overrides it: tests/embed). */
Test(budget, default_limit_is_three_quarters_of_ram)
{
	uint64_t ram = (uint64_t)sysconf(_SC_PHYS_PAGES) *
	    (uint64_t)sysconf(_SC_PAGESIZE);

	if (getenv("COW_MEMORY_LIMIT_MB") != NULL)
		cr_skip_test("COW_MEMORY_LIMIT_MB is set");
	cr_assert_eq((uint64_t)cow_allocator_limit(cow_allocator_default()),
	    ram / 4 * 3);
	cr_assert_eq((uint64_t)cow_allocator_limit(cow_allocator_system()),
	    ram / 4 * 3);
}
