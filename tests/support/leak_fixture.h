/*
 * leak_fixture.h - the leak check the Criterion unit suites share.
 *
 * System allocator: TestSuite(name, .init = leak_setup, .fini =
 * leak_teardown): @sys is cow_allocator_system(), the statistics start
 * from zero, and every test releases what it made (the allocator's live
 * bytes when the test ends are those when it began).
 *
 * Fault allocator: TestSuite(name, .init = fault_setup, .fini =
 * fault_teardown): @fa is a new fault allocator over the system one for
 * each test; when the test ends nothing is live on it, and it is
 * destroyed.
 *
 * A suite that sets up more calls these from its own init and fini.
 */
#ifndef COW_LEAK_FIXTURE_H
#define COW_LEAK_FIXTURE_H

#include <stdint.h>

#include <criterion/criterion.h>

#include <cowstore/testing.h>

#include "cow_test.h"

static cow_allocator_t *sys;
static uint64_t sys_live_at_start;
static cow_allocator_t *fa;

static inline void
leak_setup(void)
{
	sys = cow_allocator_system();
	cow_stats_reset();
	sys_live_at_start = cow_test_alloc_stats(sys).live_bytes;
}

static inline void
leak_teardown(void)
{
	uint64_t live = cow_test_alloc_stats(sys).live_bytes;

	cr_expect_eq(live, sys_live_at_start, "leaked %llu bytes",
	    (unsigned long long)(live - sys_live_at_start));
}

static inline void
fault_setup(void)
{
	cr_assert_eq(cow_allocator_fault_new(cow_allocator_system(), &fa),
	    COW_OK, "cow_allocator_fault_new: %s", cow_last_error());
}

static inline void
fault_teardown(void)
{
	cr_assert_eq(cow_test_alloc_stats(fa).live_bytes, 0, "leak");
	cr_assert_eq(cow_allocator_destroy(fa), COW_OK);
}

#endif
