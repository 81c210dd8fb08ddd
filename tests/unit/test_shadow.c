/*
 * The reshape-alias simulation (COW_RESHAPE_WARN, cowstore/shadow.h; seed
 * 002): shadow storages and their generations, the null-shadow
 * optimisation, the warning rule for writes and reads, the three policies,
 * the handler API, and failure atomicity of the simulated lazy copy.
 */
#include <stdio.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <cowstore/testing.h>

#include "cow_test.h"
#include "leak_fixture.h"
#include "tensor_test.h"

#define NONE COW_GENERATION_NONE
#define SENTINEL ((cow_tensor_t *)(uintptr_t)0x5eed)
#define MAX_EVENTS 16

struct record {
	int n;
	cow_shadow_event_t ev[MAX_EVENTS];
};

static struct record rec;

/* The handler tests' tensors (act_pair), released by teardown. */
static cow_tensor_t *owned[4];
static int n_owned;

static void
record(const cow_shadow_event_t *event, void *ctx)
{
	struct record *r = ctx;

	if (r->n < MAX_EVENTS)
		r->ev[r->n] = *event;
	r->n++;
}

static void
setup(void)
{
	leak_setup();
	rec.n = 0;
	cow_shadow_handler_set(record, &rec);
	cr_assert_eq(cow_shadow_policy_get(), COW_SHADOW_WARN_ONCE,
	    "warn once is the default");
	cr_assert_eq(cow_reshape_mode_set_thread(COW_RESHAPE_WARN, NULL),
	    COW_OK);
}

static void
teardown(void)
{
	cow_shadow_handler_set(NULL, NULL);
	cow_shadow_policy_set(COW_SHADOW_WARN_ONCE);
	cow_reshape_mode_set_thread(COW_RESHAPE_INHERIT, NULL);
	while (n_owned > 0)
		cow_tensor_release(owned[--n_owned]);
	leak_teardown();
}

TestSuite(shadow, .init = setup, .fini = teardown, .timeout = 30.0);

static uint64_t
pgen(const cow_tensor_t *t)
{
	uint64_t g = 12345;

	TT_OK(cow_storage_physical_generation(cow_tensor_storage(t), &g));
	return g;
}

static uint64_t
sgen(const cow_tensor_t *t)
{
	uint64_t g = 12345;

	TT_OK(cow_tensor_shadow_generation(t, &g));
	return g;
}

static cow_tensor_t *
ones4(cow_allocator_t *a)
{
	cow_tensor_t *t;

	TT_OK(cow_tensor_full(COW_DTYPE_FLOAT32, 1, (int64_t[]){4}, 1, a, &t));
	return t;
}

static cow_tensor_t *
reshape(cow_tensor_t *t, int ndim, const int64_t *sizes)
{
	cow_tensor_t *r;

	TT_OK(cow_tensor_reshape(t, ndim, sizes, &r));
	return r;
}

static void
assert_event(int i, cow_shadow_kind_t kind, const cow_tensor_t *t,
    uint64_t physical, uint64_t shadow, const char *func)
{
	const cow_shadow_event_t *e = &rec.ev[i];

	cr_assert_lt(i, rec.n);
	cr_assert_eq(e->kind, kind, "event %d: kind %d, want %d", i,
	    (int)e->kind, (int)kind);
	cr_assert_eq(e->storage, cow_tensor_storage(t));
	cr_assert_eq(e->tensor, t);
	cr_assert_eq(e->physical_generation, physical,
	    "event %d: physical generation %llu, want %llu", i,
	    (unsigned long long)e->physical_generation,
	    (unsigned long long)physical);
	cr_assert_eq(e->shadow_generation, shadow,
	    "event %d: shadow generation %llu, want %llu", i,
	    (unsigned long long)e->shadow_generation,
	    (unsigned long long)shadow);
	cr_assert_str_eq(e->func, func);
}

/* The issue's scenario up to the first warning: T = ones(4), U =
 * reshape(T, [2, 2]) in warn mode, V = view(T, [2, 2]); T += 1 twice, then
 * a write through U. */
static void
first_interleaving(cow_tensor_t **pt, cow_tensor_t **pu, cow_tensor_t **pv)
{
	cow_tensor_t *t = ones4(sys), *u, *v;

	u = reshape(t, 2, (int64_t[]){2, 2});
	TT_OK(cow_tensor_view(t, 2, (int64_t[]){2, 2}, &v));
	cr_assert_eq(cow_tensor_storage(u), cow_tensor_storage(t),
	    "warn mode keeps the legacy aliasing");
	cr_assert_eq(cow_tensor_storage(v), cow_tensor_storage(t));
	cr_assert_not(cow_tensor_shares_shadow(t, u));
	cr_assert_not(cow_tensor_shares_shadow(u, v));
	cr_assert(cow_tensor_shares_shadow(t, v), "a view shares its base's");
	cr_assert(cow_tensor_shares_shadow(u, u));
	cr_assert_eq(pgen(t), 0);
	cr_assert_eq(sgen(t), 0);
	cr_assert_eq(sgen(u), 0);
	cr_assert_eq(sgen(v), 0);

	TT_OK(cow_tensor_add_scalar_(t, 1));
	cr_assert_eq(pgen(t), 1, "the physical generation moves");
	cr_assert_eq(sgen(t), 1, "T's shadow moves");
	cr_assert_eq(sgen(v), 1, "so does V's: it is the same");
	cr_assert_eq(sgen(u), 0, "U's does not");
	TT_OK(cow_tensor_add_scalar_(t, 1));
	cr_assert_eq(pgen(t), 2);
	cr_assert_eq(sgen(t), 2);
	cr_assert_eq(rec.n, 0, "writes through one set do not warn");

	TT_OK(cow_tensor_fill_(u, 5));
	cr_assert_eq(rec.n, 1, "a write through the other set warns");
	assert_event(0, COW_SHADOW_WRITE_AFTER_WRITE, u, 2, 0,
	    "cow_tensor_fill_");
	cr_assert_eq(pgen(t), 3);
	cr_assert_eq(sgen(u), 3);
	cr_assert_eq(sgen(t), 2);
	*pt = t;
	*pu = u;
	*pv = v;
}

Test(shadow, issue_scenario_warn_once)
{
	cow_tensor_t *t, *u, *v;

	first_interleaving(&t, &u, &v);
	/* Still an alias: T sees U's write (legacy results). */
	tt_assert_values(t, (double[]){5, 5, 5, 5});
	cr_assert_eq(rec.n, 1, "reading T after U's write: warned already");
	TT_OK(cow_tensor_fill_(t, 3));
	TT_OK(cow_tensor_fill_(u, 4));
	TT_OK(cow_tensor_add_scalar_(v, 1));
	cr_assert_eq(rec.n, 1, "warn once: a second interleaving is silent");
	cr_assert_eq(pgen(t), 6, "but still counted");
	cr_assert_eq(sgen(v), 6);
	cr_assert_eq(sgen(u), 5);
	cow_tensor_release(v);
	cow_tensor_release(u);
	cow_tensor_release(t);
}

Test(shadow, issue_scenario_warn_always)
{
	cow_tensor_t *t, *u, *v;

	TT_OK(cow_shadow_policy_set(COW_SHADOW_WARN_ALWAYS));
	first_interleaving(&t, &u, &v);
	TT_OK(cow_tensor_fill_(t, 3));
	cr_assert_eq(rec.n, 2, "warn always: T's write after U's warns");
	assert_event(1, COW_SHADOW_WRITE_AFTER_WRITE, t, 3, 2,
	    "cow_tensor_fill_");
	TT_OK(cow_tensor_set_f64(u, (int64_t[]){0, 1}, 4));
	cr_assert_eq(rec.n, 3);
	assert_event(2, COW_SHADOW_WRITE_AFTER_WRITE, u, 4, 3,
	    "cow_tensor_set_f64");
	/* An in-place op reads and then writes: both are reported. */
	TT_OK(cow_tensor_add_scalar_(v, 1));
	cr_assert_eq(rec.n, 5);
	assert_event(3, COW_SHADOW_READ_AFTER_WRITE, v, 5, 4,
	    "cow_tensor_add_scalar_");
	assert_event(4, COW_SHADOW_WRITE_AFTER_WRITE, v, 5, 4,
	    "cow_tensor_add_scalar_");
	tt_assert_values(t, (double[]){4, 5, 4, 4});
	cr_assert_eq(rec.n, 5, "T is in sync after V's write");
	cow_tensor_release(v);
	cow_tensor_release(u);
	cow_tensor_release(t);
}

Test(shadow, read_after_write_warns)
{
	cow_tensor_t *t = ones4(sys), *u = reshape(t, 2, (int64_t[]){2, 2});
	double x = 0;

	TT_OK(cow_tensor_fill_(t, 2));
	TT_OK(cow_tensor_get_f64(u, (int64_t[]){1, 1}, &x));
	cr_assert_eq(x, 2, "the read sees T's write (legacy aliasing)");
	cr_assert_eq(rec.n, 1, "reading U after a write through T warns");
	assert_event(0, COW_SHADOW_READ_AFTER_WRITE, u, 1, 0,
	    "cow_tensor_get_f64");
	cr_assert_eq(pgen(t), 1, "a read bumps nothing");
	cr_assert_eq(sgen(u), 0);
	cow_tensor_release(u);
	cow_tensor_release(t);
}

Test(shadow, every_read_path_is_checked)
{
	cow_tensor_t *t = ones4(sys), *u = reshape(t, 2, (int64_t[]){2, 2});
	cow_tensor_t *s, *c, *f, *tv;
	bool eq;

	TT_OK(cow_tensor_view(t, 2, (int64_t[]){2, 2}, &tv));
	TT_OK(cow_shadow_policy_set(COW_SHADOW_WARN_ALWAYS));
	TT_OK(cow_tensor_fill_(t, 2));
	cr_assert_not_null(cow_tensor_const_data(u));
	cr_assert_eq(rec.n, 1);
	assert_event(0, COW_SHADOW_READ_AFTER_WRITE, u, 1, 0,
	    "cow_tensor_const_data");
	TT_OK(cow_tensor_sum(u, &s));
	cr_assert_eq(rec.n, 2);
	TT_OK(cow_tensor_clone(u, &c));
	cr_assert_eq(rec.n, 3);
	TT_OK(cow_tensor_equal(tv, u, &eq));
	cr_assert(eq);
	cr_assert_eq(rec.n, 4, "only U's read of the two warns");
	assert_event(3, COW_SHADOW_READ_AFTER_WRITE, u, 1, 0,
	    "cow_tensor_equal");
	/* U read as an input of a write to a fresh tensor. */
	TT_OK(cow_tensor_zeros(COW_DTYPE_FLOAT32, 2, (int64_t[]){2, 2}, sys,
	    &f));
	TT_OK(cow_tensor_copy_(f, u));
	cr_assert_eq(rec.n, 5);
	cow_tensor_release(f);
	cow_tensor_release(c);
	cow_tensor_release(s);
	cow_tensor_release(tv);
	cow_tensor_release(u);
	cow_tensor_release(t);
}

Test(shadow, reads_by_the_writer_set_do_not_warn)
{
	cow_tensor_t *t = ones4(sys), *u = reshape(t, 2, (int64_t[]){2, 2});
	cow_tensor_t *v, *s;

	TT_OK(cow_shadow_policy_set(COW_SHADOW_WARN_ALWAYS));
	TT_OK(cow_tensor_select(t, 0, 1, &v));
	TT_OK(cow_tensor_fill_(t, 2));
	TT_OK(cow_tensor_sum(t, &s));
	cr_assert_eq(tt_get(t, (int64_t[]){3}), 2);
	cr_assert_eq(tt_get(v, NULL), 2);
	TT_OK(cow_tensor_fill_(v, 3));
	cr_assert_eq(tt_get(t, (int64_t[]){1}), 3);
	cr_assert_eq(rec.n, 0, "T after only T (or its view) was written");
	cow_tensor_release(s);
	cow_tensor_release(v);
	cow_tensor_release(u);
	cow_tensor_release(t);
}

Test(shadow, null_shadow_until_first_simulated_copy)
{
	cow_tensor_t *t = ones4(sys), *v, *r, *l;
	uint64_t allocs;

	TT_OK(cow_reshape_mode_set_thread(COW_RESHAPE_ALIAS, NULL));
	TT_OK(cow_tensor_view(t, 2, (int64_t[]){2, 2}, &v));
	r = reshape(t, 2, (int64_t[]){1, 4});
	cr_assert_eq(pgen(t), NONE, "never shadowed");
	cr_assert_eq(sgen(t), NONE, "null shadow");
	cr_assert(cow_tensor_shares_shadow(t, v));
	cr_assert(cow_tensor_shares_shadow(t, r), "an alias reshape is a view");
	allocs = cow_test_alloc_stats(sys).allocs;
	for (int k = 0; k < 100; k++) {
		TT_OK(cow_tensor_add_scalar_(t, 1));
		TT_OK(cow_tensor_fill_(v, k));
		(void)cow_tensor_const_data(r);
	}
	cr_assert_eq(cow_test_alloc_stats(sys).allocs, allocs,
	    "accesses of a never-shadowed storage allocate nothing");
	cr_assert_eq(pgen(t), NONE, "... and bump nothing");
	cr_assert_eq(sgen(v), NONE);
	TT_OK(cow_tensor_lazy_clone(t, &l));
	cr_assert_eq(pgen(l), NONE);
	cr_assert_not(cow_tensor_shares_shadow(t, l), "another storage");
	cr_assert_eq(rec.n, 0);
	cow_tensor_release(l);
	cow_tensor_release(r);
	cow_tensor_release(v);
	cow_tensor_release(t);
}

Test(shadow, generation_bookkeeping)
{
	cow_tensor_t *t = ones4(sys), *v, *u, *w, *x, *uv, *l, *tr, *e;
	uint64_t allocs;

	TT_OK(cow_tensor_view(t, 2, (int64_t[]){2, 2}, &v));
	TT_OK(cow_tensor_fill_(t, 1));
	cr_assert_eq(pgen(t), NONE);
	cr_assert_eq(sgen(t), NONE);

	/* First simulated lazy copy: the default shadow (for T and V), U's
	 * own shadow and U's struct. */
	allocs = cow_test_alloc_stats(sys).allocs;
	u = reshape(t, 2, (int64_t[]){2, 2});
	cr_assert_eq(cow_test_alloc_stats(sys).allocs, allocs + 3);
	cr_assert_eq(pgen(t), 0);
	cr_assert_eq(sgen(t), 0);
	cr_assert_eq(sgen(v), 0, "a view made before shares the default");
	cr_assert_eq(sgen(u), 0);

	TT_OK(cow_tensor_fill_(t, 2));
	TT_OK(cow_tensor_fill_(v, 3));
	cr_assert_eq(pgen(t), 2);
	cr_assert_eq(sgen(t), 2);
	cr_assert_eq(sgen(u), 0);
	TT_OK(cow_tensor_fill_(t, 4));
	cr_assert_eq(pgen(u), 3, "one physical generation per storage");

	/* A second simulated copy (of U) starts in sync, with a new shadow;
	 * the storage keeps its default one. */
	allocs = cow_test_alloc_stats(sys).allocs;
	w = reshape(u, 1, (int64_t[]){4});
	cr_assert_eq(cow_test_alloc_stats(sys).allocs, allocs + 2);
	cr_assert_eq(sgen(w), 3);
	cr_assert_not(cow_tensor_shares_shadow(w, u));
	cr_assert_not(cow_tensor_shares_shadow(w, t));

	/* Views of U, and an aliasing reshape of U, share U's shadow. */
	TT_OK(cow_reshape_mode_set_thread(COW_RESHAPE_ALIAS, NULL));
	x = reshape(u, 1, (int64_t[]){4});
	TT_OK(cow_tensor_select(u, 0, 1, &uv));
	cr_assert(cow_tensor_shares_shadow(x, u));
	cr_assert(cow_tensor_shares_shadow(uv, u));
	cr_assert_eq(sgen(uv), 0);
	TT_OK(cow_tensor_fill_(uv, 5));
	cr_assert_eq(rec.n, 1);
	cr_assert_eq(pgen(t), 4);
	cr_assert_eq(sgen(u), 4, "a write through a view moves its base's");
	cr_assert_eq(sgen(x), 4);
	cr_assert_eq(sgen(t), 3);
	cr_assert_eq(sgen(w), 3);

	/* Real copies are new physical storages: never shadowed. */
	TT_OK(cow_reshape_mode_set_thread(COW_RESHAPE_WARN, NULL));
	TT_OK(cow_tensor_lazy_clone(u, &l));
	cr_assert_eq(pgen(l), NONE);
	cr_assert_eq(sgen(l), NONE);
	TT_OK(cow_tensor_transpose(u, 0, 1, &tr));
	cr_assert(cow_tensor_shares_shadow(tr, u));
	e = reshape(tr, 1, (int64_t[]){4}); /* not viewable: an eager copy */
	cr_assert_neq(cow_tensor_storage(e), cow_tensor_storage(t));
	cr_assert_eq(sgen(e), NONE);
	cr_assert_eq(pgen(e), NONE);

	cow_tensor_release(e);
	cow_tensor_release(tr);
	cow_tensor_release(l);
	cow_tensor_release(uv);
	cow_tensor_release(x);
	cow_tensor_release(w);
	cow_tensor_release(u);
	cow_tensor_release(v);
	cow_tensor_release(t);
}

Test(shadow, warn_once_is_per_storage)
{
	cow_tensor_t *t1 = ones4(sys), *t2 = ones4(sys), *u1, *u2;

	u1 = reshape(t1, 2, (int64_t[]){2, 2});
	u2 = reshape(t2, 2, (int64_t[]){2, 2});
	TT_OK(cow_tensor_fill_(t1, 2));
	TT_OK(cow_tensor_fill_(u1, 2));
	TT_OK(cow_tensor_fill_(t1, 2));
	TT_OK(cow_tensor_fill_(t2, 2));
	TT_OK(cow_tensor_fill_(u2, 2));
	cr_assert_eq(rec.n, 2, "one warning per storage");
	assert_event(0, COW_SHADOW_WRITE_AFTER_WRITE, u1, 1, 0,
	    "cow_tensor_fill_");
	assert_event(1, COW_SHADOW_WRITE_AFTER_WRITE, u2, 1, 0,
	    "cow_tensor_fill_");
	cow_tensor_release(u2);
	cow_tensor_release(u1);
	cow_tensor_release(t2);
	cow_tensor_release(t1);
}

Test(shadow, error_policy_fails_and_changes_nothing)
{
	cow_tensor_t *t = ones4(sys), *u = reshape(t, 2, (int64_t[]){2, 2});
	cow_tensor_t *l, *tv, *out = SENTINEL;
	void *p = NULL;
	double x = -1;

	TT_OK(cow_tensor_view(t, 2, (int64_t[]){2, 2}, &tv));
	TT_OK(cow_shadow_policy_set(COW_SHADOW_ERROR));
	TT_OK(cow_tensor_fill_(t, 2));
	/* T's storage copy-on-write: a refused write must not materialise. */
	TT_OK(cow_tensor_lazy_clone(t, &l));
	TT_FAILS(cow_tensor_fill_(u, 9), COW_EALIASING, "write-after-write");
	cr_assert(strstr(cow_last_error(), "cow_tensor_fill_") != NULL);
	TT_FAILS(cow_tensor_set_f64(u, (int64_t[]){0, 0}, 9), COW_EALIASING,
	    "write-after-write");
	TT_FAILS(cow_tensor_mutable_data(u, &p), COW_EALIASING,
	    "write-after-write");
	cr_assert_null(p, "out-parameter untouched");
	TT_FAILS(cow_tensor_get_f64(u, (int64_t[]){0, 0}, &x), COW_EALIASING,
	    "read-after-write");
	cr_assert_eq(x, -1);
	cr_assert_null(cow_tensor_const_data(u), "a refused read");
	TT_FAILS(cow_tensor_add(tv, u, &out), COW_EALIASING,
	    "read-after-write");
	cr_assert_eq(out, SENTINEL);
	/* A write to T that reads U: refused at the read, T untouched. */
	TT_FAILS(cow_tensor_copy_(tv, u), COW_EALIASING, "read-after-write");

	cr_assert_eq(rec.n, 0, "errors replace the handler");
	cr_assert(cow_storage_is_cow(cow_tensor_storage(t)),
	    "nothing was materialised");
	cr_assert_eq(cow_storage_share_count(cow_tensor_storage(t)), 2);
	cr_assert_eq(pgen(t), 1, "no generation moved");
	cr_assert_eq(sgen(t), 1);
	cr_assert_eq(sgen(u), 0);
	tt_assert_values(t, (double[]){2, 2, 2, 2});

	/* The set in sync still works. */
	TT_OK(cow_tensor_add_scalar_(t, 1));
	tt_assert_values(l, (double[]){2, 2, 2, 2});
	TT_OK(cow_shadow_policy_set(COW_SHADOW_WARN_ALWAYS));
	TT_OK(cow_tensor_fill_(u, 9));
	cr_assert_eq(rec.n, 1, "back to warnings");
	tt_assert_values(t, (double[]){9, 9, 9, 9});
	cow_tensor_release(tv);
	cow_tensor_release(l);
	cow_tensor_release(u);
	cow_tensor_release(t);
}

Test(shadow, policy_setters)
{
	TT_FAILS(cow_shadow_policy_set((cow_shadow_policy_t)3), COW_EINVAL,
	    "3");
	TT_FAILS(cow_shadow_policy_set((cow_shadow_policy_t)-1), COW_EINVAL,
	    "-1");
	cr_assert_eq(cow_shadow_policy_get(), COW_SHADOW_WARN_ONCE,
	    "a refused policy changes nothing");
	TT_OK(cow_shadow_policy_set(COW_SHADOW_ERROR));
	cr_assert_eq(cow_shadow_policy_get(), COW_SHADOW_ERROR);
	TT_OK(cow_shadow_policy_set(COW_SHADOW_WARN_ALWAYS));
	cr_assert_eq(cow_shadow_policy_get(), COW_SHADOW_WARN_ALWAYS);
}

Test(shadow, handler_set_and_get)
{
	cow_shadow_handler_fn fn = NULL;
	void *ctx = NULL;

	cow_shadow_handler_get(&fn, &ctx);
	cr_assert_eq(fn, record);
	cr_assert_eq(ctx, &rec);
	cow_shadow_handler_set(NULL, &rec);
	cow_shadow_handler_get(&fn, &ctx);
	cr_assert_eq(fn, cow_shadow_default_handler, "NULL: the default");
	cr_assert_null(ctx);
	cow_shadow_handler_get(NULL, NULL);
}

Test(shadow, default_handler_prints_one_line)
{
	cow_tensor_t *t = ones4(sys), *u = reshape(t, 2, (int64_t[]){2, 2});
	FILE *tmp = tmpfile();
	char buf[1024] = {0};
	int saved, lines = 0;
	size_t n;

	cr_assert_not_null(tmp);
	cow_shadow_handler_set(NULL, NULL);
	TT_OK(cow_tensor_fill_(t, 2));
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	cr_assert_geq(saved, 0);
	cr_assert_geq(dup2(fileno(tmp), STDERR_FILENO), 0);
	TT_OK(cow_tensor_fill_(u, 3));
	TT_OK(cow_tensor_fill_(t, 4)); /* warned once already: silent */
	fflush(stderr);
	cr_assert_geq(dup2(saved, STDERR_FILENO), 0);
	close(saved);
	rewind(tmp);
	n = fread(buf, 1, sizeof buf - 1, tmp);
	fclose(tmp);
	for (size_t i = 0; i < n; i++)
		lines += buf[i] == '\n';
	cr_assert_eq(lines, 1, "one line, got: %s", buf);
	cr_assert(strstr(buf, "cowstore: warning: cow_tensor_fill_: "
	    "write-after-write") == buf, "got: %s", buf);
	cr_assert(strstr(buf, "physical generation 1, shadow generation 0")
	    != NULL, "got: %s", buf);
	cow_tensor_release(u);
	cow_tensor_release(t);
}

Test(shadow, fork_failure_changes_nothing)
{
	cow_allocator_t *fault;
	cow_tensor_t *t, *u = NULL, *w;
	int failed = 0;

	cr_assert_eq(cow_allocator_fault_new(sys, &fault), COW_OK);
	t = ones4(fault);
	/* First simulated copy: three allocation points, then two. */
	for (int round = 0; round < 2; round++) {
		uint64_t before = pgen(t), live =
		    cow_test_alloc_stats(fault).live_bytes;

		failed = 0;
		for (uint64_t k = 1;; k++) {
			cow_status_t st;

			w = SENTINEL;
			cr_assert_eq(cow_allocator_fault_fail_nth(fault, k),
			    COW_OK);
			st = cow_tensor_reshape(round ? u : t, 2,
			    (int64_t[]){2, 2}, &w);
			if (st == COW_OK)
				break;
			cr_assert_eq(st, COW_ENOMEM);
			cr_assert_eq(w, SENTINEL, "out written on failure");
			cr_assert_eq(pgen(t), before, "storage changed");
			cr_assert_eq(cow_test_alloc_stats(fault).live_bytes,
			    live, "leak or change");
			failed++;
		}
		cr_assert_eq(cow_allocator_fault_disarm(fault), COW_OK);
		cr_assert_eq(failed, round ? 2 : 3);
		cr_assert_eq(pgen(t), 0);
		if (round)
			cow_tensor_release(w);
		else
			u = w;
	}
	cow_tensor_release(u);
	cow_tensor_release(t);
	cr_assert_eq(cow_test_alloc_stats(fault).live_bytes, 0);
	cr_assert_eq(cow_allocator_destroy(fault), COW_OK);
}

Test(shadow, failed_write_reports_and_bumps_nothing)
{
	cow_allocator_t *fault;
	cow_tensor_t *t, *u, *l;

	cr_assert_eq(cow_allocator_fault_new(sys, &fault), COW_OK);
	t = ones4(fault);
	u = reshape(t, 2, (int64_t[]){2, 2});
	TT_OK(cow_tensor_fill_(t, 2));
	TT_OK(cow_tensor_lazy_clone(t, &l)); /* U's write must copy */
	cr_assert_eq(cow_allocator_fault_fail_nth(fault, 1), COW_OK);
	TT_FAILS(cow_tensor_fill_(u, 3), COW_ENOMEM, "cow_tensor_fill_");
	cr_assert_eq(cow_allocator_fault_disarm(fault), COW_OK);
	cr_assert_eq(rec.n, 0, "a write that failed is not reported");
	cr_assert_eq(pgen(t), 1);
	cr_assert_eq(sgen(u), 0);
	TT_OK(cow_tensor_fill_(u, 3));
	cr_assert_eq(rec.n, 1);
	cr_assert_eq(pgen(t), 2);
	tt_assert_values(l, (double[]){2, 2, 2, 2});
	cow_tensor_release(l);
	cow_tensor_release(u);
	cow_tensor_release(t);
	cr_assert_eq(cow_allocator_destroy(fault), COW_OK);
}

Test(shadow, introspection_errors)
{
	cow_tensor_t *t = ones4(sys);
	uint64_t g = 7;

	TT_FAILS(cow_storage_physical_generation(NULL, &g), COW_EINVAL,
	    "storage");
	TT_FAILS(cow_storage_physical_generation(cow_tensor_storage(t), NULL),
	    COW_EINVAL, "out");
	TT_FAILS(cow_tensor_shadow_generation(NULL, &g), COW_EINVAL, "t");
	TT_FAILS(cow_tensor_shadow_generation(t, NULL), COW_EINVAL, "out");
	cr_assert_eq(g, 7);
	cr_assert_not(cow_tensor_shares_shadow(NULL, t));
	cr_assert_not(cow_tensor_shares_shadow(t, NULL));
	cow_tensor_release(t);
}

/*
 * Handlers that access tensors (issue 30, point 6). Before the re-entry
 * rule, a handler that read the reported tensor under warn-always was
 * reported in turn and recursed until the stack overflowed. The handler
 * act() records what it saw; the tests assert afterwards (an assertion
 * inside would leave the handler's lock held).
 */
struct act {
	int calls;
	cow_shadow_event_t ev[MAX_EVENTS];
	/* On every call: read event->tensor's first element. */
	bool read_event;
	cow_status_t status[MAX_EVENTS];
	double seen[MAX_EVENTS];
	/* On the first call only: */
	bool set_error;          /* switch to COW_SHADOW_ERROR first */
	bool ops;                /* sum, add and reshape event->tensor */
	char write, read;        /* 't' or 'u': act_pair's write_to, read_too */
	cow_tensor_t *write_to;  /* fill with 7, then += 1 */
	cow_tensor_t *read_too;  /* read element 0 */
	cow_status_t write_status, read_status, ops_status;
	double read_seen, sum_seen;
	bool error_named;        /* the refusal's message says so */
};

static struct act act_rec;

static void
act_ops(struct act *a, const cow_shadow_event_t *event)
{
	cow_tensor_t *s = NULL, *o = NULL, *r = NULL;

	a->ops_status = cow_tensor_sum(event->tensor, &s);
	if (a->ops_status == COW_OK)
		a->ops_status = cow_tensor_get_f64(s, NULL, &a->sum_seen);
	if (a->ops_status == COW_OK)
		a->ops_status = cow_tensor_add(event->tensor, event->tensor,
		    &o);
	if (a->ops_status == COW_OK)
		a->ops_status = cow_tensor_reshape(a->write_to, 1,
		    (int64_t[]){4}, &r);
	if (r != NULL)
		a->ops_status = cow_tensor_fill_(r, 1);
	cow_tensor_release(r);
	cow_tensor_release(o);
	cow_tensor_release(s);
}

static void
act(const cow_shadow_event_t *event, void *ctx)
{
	struct act *a = ctx;
	int64_t idx[COW_TENSOR_MAX_NDIM] = {0};
	int i = a->calls++;
	double x = -1;
	cow_status_t st = COW_OK;

	/* Unconditional: a re-entered handler would recurse without end. */
	if (a->read_event)
		st = cow_tensor_get_f64(event->tensor, idx, &x);
	if (i < MAX_EVENTS) {
		a->ev[i] = *event;
		a->seen[i] = x;
		a->status[i] = st;
	}
	if (i != 0)
		return;
	if (a->set_error)
		(void)cow_shadow_policy_set(COW_SHADOW_ERROR);
	if (a->write_to != NULL) {
		a->write_status = cow_tensor_fill_(a->write_to, 7);
		a->error_named = strstr(cow_last_error(),
		    "refused under COW_SHADOW_ERROR") != NULL;
		if (a->write_status == COW_OK)
			a->write_status = cow_tensor_add_scalar_(a->write_to,
			    1);
	}
	if (a->read_too != NULL)
		a->read_status = cow_tensor_get_f64(a->read_too, idx,
		    &a->read_seen);
	if (a->ops)
		act_ops(a, event);
}

/* T = ones(4) and U = reshape(T) in warn mode (teardown releases them);
 * act() installed with @cfg, warn always; then T = 2, so U is out of
 * sync. */
static void
act_pair(cow_tensor_t **pt, cow_tensor_t **pu, struct act cfg)
{
	*pt = owned[n_owned++] = ones4(sys);
	*pu = owned[n_owned++] = reshape(*pt, 2, (int64_t[]){2, 2});
	act_rec = cfg;
	if (cfg.write != 0)
		act_rec.write_to = cfg.write == 't' ? *pt : *pu;
	if (cfg.read != 0)
		act_rec.read_too = cfg.read == 't' ? *pt : *pu;
	cow_shadow_handler_set(act, &act_rec);
	TT_OK(cow_shadow_policy_set(COW_SHADOW_WARN_ALWAYS));
	TT_OK(cow_tensor_fill_(*pt, 2));
}

/* U = 3, a write-after-write: act() is called once; then U's set is in
 * sync at generation @gen and U holds 3. */
static void
act_write_u(cow_tensor_t *u, uint64_t gen)
{
	TT_OK(cow_tensor_fill_(u, 3));
	cr_assert_eq(act_rec.calls, 1, "%d calls", act_rec.calls);
	cr_assert_eq(act_rec.ev[0].kind, COW_SHADOW_WRITE_AFTER_WRITE);
	cr_assert_eq(pgen(u), gen);
	cr_assert_eq(sgen(u), gen);
	tt_assert_values(u, (double[]){3, 3, 3, 3});
	cr_assert_eq(act_rec.calls, 1, "U's set is in sync");
}

Test(shadow, handler_reads_reported_tensor)
{
	cow_tensor_t *t, *u;

	act_pair(&t, &u, (struct act){.read_event = true});
	cr_assert_eq(tt_get(u, (int64_t[]){1, 1}), 2);
	cr_assert_eq(act_rec.calls, 1, "the handler's own read is not "
	    "reported (%d calls)", act_rec.calls);
	cr_assert_eq(act_rec.ev[0].kind, COW_SHADOW_READ_AFTER_WRITE);
	cr_assert_eq(act_rec.status[0], COW_OK);
	cr_assert_eq(act_rec.seen[0], 2);
	cr_assert_eq(pgen(t), 1, "reads bump nothing");
	cr_assert_eq(sgen(u), 0);
	/* Outside the handler the next access is reported as before. */
	(void)tt_get(u, (int64_t[]){0, 0});
	cr_assert_eq(act_rec.calls, 2);
	cr_assert_eq(act_rec.status[1], COW_OK);
}

Test(shadow, handler_reads_writer_of_a_write)
{
	cow_tensor_t *t, *u;

	act_pair(&t, &u, (struct act){.read_event = true});
	/* The writer's generation moves once, after the handler. */
	act_write_u(u, 2);
	cr_assert_eq(act_rec.status[0], COW_OK);
	cr_assert_eq(act_rec.seen[0], 2, "the handler runs before the data "
	    "is written");
	cr_assert_eq(sgen(t), 1);
	cr_assert_eq(tt_get(t, (int64_t[]){3}), 3);
	cr_assert_eq(act_rec.calls, 2, "T's read after U's write is "
	    "reported");
	cr_assert_eq(act_rec.ev[1].kind, COW_SHADOW_READ_AFTER_WRITE);
	cr_assert_eq(act_rec.seen[1], 3);
}

/* A handler's writes are not reported but move the generations, so the
 * next access outside is judged by them. */
Test(shadow, handler_writes_move_generations_unreported)
{
	cow_tensor_t *t, *u;

	act_pair(&t, &u, (struct act){.write = 'u'});
	cr_assert_eq(tt_get(u, (int64_t[]){1, 1}), 8,
	    "the read follows the handler's writes");
	cr_assert_eq(act_rec.write_status, COW_OK);
	cr_assert_eq(pgen(t), 3, "both writes counted");
	cr_assert_eq(sgen(u), 3);
	cr_assert_eq(sgen(t), 1);
	(void)tt_get(u, (int64_t[]){0, 0});
	cr_assert_eq(act_rec.calls, 1, "U is in sync now");
	(void)tt_get(t, (int64_t[]){0});
	cr_assert_eq(act_rec.calls, 2, "T is not");
	cr_assert_eq(act_rec.ev[1].kind, COW_SHADOW_READ_AFTER_WRITE);
	cr_assert_eq(act_rec.ev[1].tensor, t);
	cr_assert_eq(act_rec.ev[1].physical_generation, 3);
	cr_assert_eq(act_rec.ev[1].shadow_generation, 1);
}

/* Under warn-once, an access inside the handler does not use up its
 * storage's one warning. */
Test(shadow, handler_access_leaves_warn_once_claim)
{
	cow_tensor_t *t1, *u1, *t2, *u2;

	act_pair(&t2, &u2, (struct act){0});
	act_pair(&t1, &u1, (struct act){0});
	act_rec.read_too = u2;
	TT_OK(cow_shadow_policy_set(COW_SHADOW_WARN_ONCE));
	(void)tt_get(u1, (int64_t[]){0, 0});
	cr_assert_eq(act_rec.calls, 1);
	cr_assert_eq(act_rec.read_status, COW_OK);
	cr_assert_eq(act_rec.read_seen, 2);
	(void)tt_get(u2, (int64_t[]){0, 0});
	cr_assert_eq(act_rec.calls, 2, "U2's storage still warns once");
	cr_assert_eq(act_rec.ev[1].tensor, u2);
	(void)tt_get(u2, (int64_t[]){0, 0});
	(void)tt_get(u1, (int64_t[]){0, 0});
	cr_assert_eq(act_rec.calls, 2, "and only once");
	cr_assert_eq(act_rec.ev[0].tensor, u1);
}

/* COW_SHADOW_ERROR still refuses inside a handler: the handler's call
 * fails and changes nothing; the reported access itself succeeds. */
Test(shadow, handler_access_under_error_policy_fails)
{
	cow_tensor_t *t, *u;
	double x = 0;

	act_pair(&t, &u, (struct act){.set_error = true, .write = 'u',
	    .read = 'u'});
	/* Only U's own write moved the generation. */
	act_write_u(u, 2);
	cr_assert_eq(act_rec.write_status, COW_EALIASING);
	cr_assert(act_rec.error_named);
	cr_assert_eq(act_rec.read_status, COW_EALIASING);
	cr_assert_eq(cow_shadow_policy_get(), COW_SHADOW_ERROR);
	TT_FAILS(cow_tensor_get_f64(t, (int64_t[]){0}, &x), COW_EALIASING,
	    "read-after-write");
	cr_assert_eq(act_rec.calls, 1);
}

/* Ops from inside the handler: reads, a new tensor, an in-place op and a
 * warn-mode reshape of an out-of-sync tensor. */
Test(shadow, handler_runs_ops)
{
	cow_tensor_t *t, *u;

	act_pair(&t, &u, (struct act){.ops = true, .write = 't'});
	/* T's two writes, the reshape's fill, then U's own write. */
	act_write_u(u, 5);
	cr_assert_eq(act_rec.write_status, COW_OK);
	cr_assert_eq(act_rec.ops_status, COW_OK, "%s", cow_last_error());
	cr_assert_eq(act_rec.sum_seen, 32, "U read T's writes");
	cr_assert_eq(sgen(t), 3);
	cr_assert_eq(tt_get(t, (int64_t[]){0}), 3);
	cr_assert_eq(act_rec.calls, 2, "T's set is not in sync");
}
