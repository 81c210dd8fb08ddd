/*
 * Functionalization (docs/functionalization.md): the example of the doc
 * and its trace, run the three ways of functional_test.h.
 */
#include "functional_test.h"

TestSuite(functional, .timeout = 60.0);

/* ------------------------------------------------------------------ */
/* The example of docs/functionalization.md.                            */

/*
 * x = zeros(2); x1 = x.view(1, 2); x[1].fill_(2); y = x1 + 3
 * gives y = [[3, 5]] and x = [0, 2].
 */
static void
prog_seed(struct run *r)
{
	cow_tensor_t *x, *x1, *x_1, *three, *y;

	TT_OK(cow_tensor_zeros(COW_DTYPE_FLOAT32, 1, (int64_t[]){2}, NULL, &x));
	TT_OK(cow_tensor_view(x, 2, (int64_t[]){1, 2}, &x1));
	TT_OK(cow_tensor_select(x, 0, 1, &x_1));
	TT_OK(cow_tensor_fill_(x_1, 2));
	if (functional(r)) {
		/* The write is queued, not applied: x1 is stale. */
		cr_assert_eq(info(x).pending_updates, 1);
		cr_assert_eq(info(x).generation, 1);
		cr_assert_eq(info(x1).tensor_generation, 0);
		cr_assert_eq(info(x_1).tensor_generation, 1);
	}
	TT_OK(cow_tensor_full(COW_DTYPE_FLOAT32, 0, NULL, 3, NULL, &three));
	TT_OK(cow_tensor_add(x1, three, &y));
	if (functional(r)) {
		/* Reading x1 applied the queue and replayed x1's path. */
		cr_assert_eq(info(x1).pending_updates, 0);
		cr_assert_eq(info(x1).tensor_generation, 1);
		cr_assert_eq(info(x1).updates_applied, 1);
	}
	tt_assert_shape(y, 2, (int64_t[]){1, 2});
	expect(r, "y", y, (double[]){3, 5});
	expect(r, "x", x, (double[]){0, 2});
	cow_tensor_release(y);
	cow_tensor_release(three);
	cow_tensor_release(x_1);
	cow_tensor_release(x1);
	cow_tensor_release(x);
}

Test(functional, seed_example)
{
	run3(prog_seed);
}

/* The trace of that example is view-free IR: view_copy, a scatter
 * of the write into the base, the add on the replayed view. */
Test(functional, seed_example_trace)
{
	static const enum way ways[] = {FN_STRIDED, FN_OPAQUE};

	for (size_t i = 0; i < 2; i++) {
		cow_functional_trace_t *tr;
		const cow_backend_t *be;
		struct run r = {.way = ways[i]};
		unsigned long long x;
		const char *line;
		bool mode;

		way_enter(ways[i], &be, &mode);
		TT_OK(cow_functional_trace_start());
		TT_FAILS(cow_functional_trace_start(), COW_EBUSY,
		    "cow_functional_trace_start");
		prog_seed(&r);
		TT_OK(cow_functional_trace_stop(&tr));
		way_leave(be, mode);
		cr_assert(cow_functional_trace_complete(tr));
		/* %x = zeros(...): x's base; the views and the write's
		 * scatter refer to it by its id. */
		line = trace_find(tr, "= zeros(float32, [2])");
		cr_assert_not_null(line);
		cr_assert_eq(sscanf(line, "%%%llu", &x), 1);
		cr_assert_not_null(trace_find(tr, "= view_copy(%%%llu, [1, 2])",
		    x));
		cr_assert_not_null(trace_find(tr,
		    "= select_copy(%%%llu, dim=0, index=1)", x));
		cr_assert_not_null(trace_find(tr, "= full(float32, [], 2)"));
		cr_assert_not_null(trace_find(tr, "= full(float32, [], 3)"));
		cr_assert_not_null(trace_find(tr,
		    "= select_scatter(%%%llu, %%", x));
		cr_assert_not_null(trace_find(tr, "= add(%%"));
		for (size_t k = 0; k < cow_functional_trace_length(tr); k++) {
			const char *l = cow_functional_trace_line(tr, k);

			cr_assert(l[0] == '%', "line %zu: '%s'", k, l);
			cr_assert(strstr(l, "_(") == NULL,
			    "an in-place op in the trace: '%s'", l);
		}
		cr_assert_str_eq(cow_functional_trace_line(tr, 9999), "");
		cow_functional_trace_free(tr);
	}
	TT_FAILS(cow_functional_trace_stop(NULL), COW_EINVAL,
	    "cow_functional_trace_stop");
}
