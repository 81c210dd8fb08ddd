/*
 * MaybeOwned (docs/tensor.md): owned and borrowed values,
 * expect_contiguous, the cost of a borrow (no refcount change in any build;
 * no record in release builds), and, in builds with COW_DEBUG_BORROWS, the
 * abort that names the borrow's file:line when the last owning reference
 * goes while a borrow is outstanding.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <cowstore/testing.h>

#include "cow_test.h"
#include "tensor_test.h"

static cow_allocator_t *sys;

static void
setup(void)
{
	sys = cow_allocator_system();
}

TestSuite(maybe_owned, .init = setup, .timeout = 30.0);

static cow_tensor_t *
make(bool contiguous)
{
	const int64_t sz[2] = {3, 4};
	cow_tensor_t *t = tt_arange(COW_DTYPE_FLOAT32, 2, sz, sys), *tr;

	if (contiguous)
		return t;
	TT_OK(cow_tensor_transpose(t, 0, 1, &tr));
	cow_tensor_release(t);
	return tr;
}

Test(maybe_owned, layout_is_the_same_in_every_build)
{
	cow_maybe_owned_t mo;

	/* The ABI rule of maybe_owned.h: three words, debug or not. */
	cr_assert_eq(sizeof mo, 3 * sizeof(void *));
	cr_assert_eq(offsetof(cow_maybe_owned_t, tensor), 0);
	cr_assert_eq(offsetof(cow_maybe_owned_t, debug_borrow),
	    2 * sizeof(void *));
}

Test(maybe_owned, owned_releases_its_reference)
{
	cow_tensor_t *t = make(true);
	cow_maybe_owned_t mo;

	cow_tensor_retain(t);
	mo = cow_maybe_owned_owned(t);
	cr_assert(cow_maybe_owned_is_owned(&mo));
	cr_assert_eq(cow_maybe_owned_get(&mo), t);
	cr_assert_eq(cow_tensor_refcount(t), 2);
	cow_maybe_owned_release(&mo);
	cr_assert_eq(cow_tensor_refcount(t), 1, "release dropped one count");
	cr_assert_null(cow_maybe_owned_get(&mo));
	cow_maybe_owned_release(&mo);
	cr_assert_eq(cow_tensor_refcount(t), 1, "a second release is a no-op");
	cow_tensor_release(t);
	cr_assert_eq(cow_test_alloc_stats(sys).live_bytes, 0);
}

Test(maybe_owned, borrow_takes_no_reference)
{
	cow_tensor_t *t = make(true);
	unsigned before = cow_tensor_refcount(t);
	cow_maybe_owned_t mo = cow_maybe_owned_borrowed(t);

	cr_assert_eq(cow_tensor_refcount(t), before,
	    "a borrow does not touch the refcount");
	cr_assert_not(cow_maybe_owned_is_owned(&mo));
	cr_assert_eq(cow_maybe_owned_get(&mo), t);
	cow_maybe_owned_release(&mo);
	cr_assert_eq(cow_tensor_refcount(t), before,
	    "releasing a borrow does not touch the refcount");
	cr_assert_null(mo.tensor);
	cow_tensor_release(t);
	cr_assert_eq(cow_test_alloc_stats(sys).live_bytes, 0);
}

Test(maybe_owned, expect_contiguous)
{
	cow_tensor_t *c = make(true), *n = make(false);
	cow_maybe_owned_t mo;
	bool eq;

	TT_OK(cow_tensor_expect_contiguous(c, &mo));
	cr_assert_not(cow_maybe_owned_is_owned(&mo), "borrowed when "
	    "already contiguous");
	cr_assert_eq(cow_maybe_owned_get(&mo), c);
	cr_assert_eq(cow_tensor_refcount(c), 1);
	cow_maybe_owned_release(&mo);
	cr_assert_eq(cow_tensor_refcount(c), 1);

	TT_OK(cow_tensor_expect_contiguous(n, &mo));
	cr_assert(cow_maybe_owned_is_owned(&mo), "an owned copy otherwise");
	cr_assert_neq(cow_maybe_owned_get(&mo), n);
	cr_assert(cow_tensor_is_contiguous(cow_maybe_owned_get(&mo)));
	cr_assert_eq(cow_tensor_refcount(cow_maybe_owned_get(&mo)), 1);
	cr_assert_eq(cow_tensor_refcount(n), 1);
	TT_OK(cow_tensor_equal(cow_maybe_owned_get(&mo), n, &eq));
	cr_assert(eq);
	cr_assert_eq(cow_borrow_debug_outstanding(cow_maybe_owned_get(&mo)), 0);
	cow_maybe_owned_release(&mo);
	cow_tensor_release(n);
	cow_tensor_release(c);
	cr_assert_eq(cow_test_alloc_stats(sys).live_bytes, 0,
	    "the owned copy was freed");
	TT_FAILS(cow_tensor_expect_contiguous(NULL, &mo), COW_EINVAL, "'t'");
}

/* An owner other than the borrower may come and go while the borrow is
 * out, as long as some owner remains. */
Test(maybe_owned, borrow_with_other_owners)
{
	cow_tensor_t *t = make(true);
	cow_maybe_owned_t mo = cow_maybe_owned_borrowed(t);

	cow_tensor_retain(t);
	cow_tensor_release(t);
	cr_assert_eq(cow_tensor_refcount(t), 1);
	cow_maybe_owned_release(&mo);
	cow_tensor_release(t);
}

#ifdef COW_DEBUG_BORROWS

Test(maybe_owned, debug_records_borrows)
{
	cow_tensor_t *t = make(true);
	cow_maybe_owned_t a, b;

	cr_assert(cow_borrow_debug_enabled());
	a = cow_maybe_owned_borrowed(t);
	TT_OK(cow_tensor_expect_contiguous(t, &b));
	cr_assert_not_null(a.debug_borrow);
	cr_assert_not_null(b.debug_borrow);
	cr_assert_eq(cow_borrow_debug_outstanding(t), 2);
	cr_assert_eq(cow_tensor_refcount(t), 1,
	    "debug bookkeeping is not a refcount");
	cow_maybe_owned_release(&a);
	cr_assert_eq(cow_borrow_debug_outstanding(t), 1);
	cow_maybe_owned_release(&b);
	cr_assert_eq(cow_borrow_debug_outstanding(t), 0);
	cow_tensor_release(t);
}

/* The hazard of a borrow: the borrowed tensor loses its last owner. */
Test(maybe_owned, last_release_during_borrow_aborts, .signal = SIGABRT)
{
	cow_tensor_t *t = make(true);
	cow_maybe_owned_t mo = cow_maybe_owned_borrowed(t);

	cow_tensor_release(t);
	/* Not reached: the release above aborts. */
	cow_maybe_owned_release(&mo);
	cr_assert_fail("releasing the last owner during a borrow went "
	    "unnoticed");
}

Test(maybe_owned, expect_contiguous_borrow_is_checked, .signal = SIGABRT)
{
	cow_tensor_t *t = make(true);
	cow_maybe_owned_t mo;

	TT_OK(cow_tensor_expect_contiguous(t, &mo));
	cow_tensor_release(t);
	cow_maybe_owned_release(&mo);
	cr_assert_fail("not reached");
}

/* Run the hazard in a child and read what it printed. */
Test(maybe_owned, abort_message_names_the_borrow_site)
{
	char buf[2048] = "", want[128];
	int fds[2], status = 0, borrow_line = 0;
	ssize_t n, got = 0;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		cow_tensor_t *t = make(true);
		cow_maybe_owned_t mo;

		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		/* Report the borrow's line first, then trip the check. */
		mo = cow_maybe_owned_borrowed(t); borrow_line = __LINE__;
		fprintf(stderr, "borrow line %d\n", borrow_line);
		fflush(stderr);
		cow_tensor_release(t);
		(void)mo;
		_exit(0);
	}
	close(fds[1]);
	while ((n = read(fds[0], buf + got, sizeof buf - 1 - (size_t)got)) > 0)
		got += n;
	buf[got] = '\0';
	close(fds[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
	    "child status %d; stderr: %s", status, buf);
	cr_assert_eq(sscanf(buf, "borrow line %d", &borrow_line), 1, "%s",
	    buf);
	snprintf(want, sizeof want, "test_maybe_owned.c:%d", borrow_line);
	cr_assert(strstr(buf, want) != NULL, "message lacks '%s': %s", want,
	    buf);
	cr_assert(strstr(buf, "cow_tensor_release") != NULL, "%s", buf);
	cr_assert(strstr(buf, "borrow") != NULL, "%s", buf);
}

/*
 * ABI rule: a borrow that was not recorded (made by a translation unit
 * compiled without COW_DEBUG_BORROWS: the plain struct) is never checked,
 * and a recorded borrow ends through cow_maybe_owned_release in any
 * translation unit.
 */
Test(maybe_owned, unrecorded_borrows_are_not_checked)
{
	cow_tensor_t *t = make(true);
	cow_maybe_owned_t mo = {t, false, NULL};
	void *rec;

	cr_assert_eq(cow_borrow_debug_outstanding(t), 0);
	cow_maybe_owned_release(&mo);
	rec = cow_borrow_debug_begin(t, __FILE__, __LINE__);
	cr_assert_not_null(rec);
	mo = (cow_maybe_owned_t){t, false, rec};
	cow_maybe_owned_release(&mo);
	cr_assert_eq(cow_borrow_debug_outstanding(t), 0);
	cow_tensor_release(t);
}

#else /* !COW_DEBUG_BORROWS */

/* Release builds: a borrow is the struct and nothing else. */
Test(maybe_owned, release_build_records_nothing)
{
	cow_tensor_t *t = make(true);
	cow_maybe_owned_t mo = cow_maybe_owned_borrowed(t);

	cr_assert_not(cow_borrow_debug_enabled());
	cr_assert_null(mo.debug_borrow, "no record");
	cr_assert_eq(cow_borrow_debug_outstanding(t), 0);
	cr_assert_eq(cow_tensor_refcount(t), 1, "no refcount");
	cr_assert_null(cow_borrow_debug_begin(t, __FILE__, __LINE__),
	    "a release library records nothing even when asked");
	cow_maybe_owned_release(&mo);
	cow_tensor_release(t);
}

#endif
