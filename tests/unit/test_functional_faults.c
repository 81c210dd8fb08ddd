/*
 * Functionalization under allocation failures: a failed call returns
 * COW_ENOMEM, changes no value anyone can read, leaks nothing; the retry
 * succeeds.
 */
#include <cowstore/testing.h>

#include "functional_test.h"
#include "leak_fixture.h"

/* The state every walk step starts from: x [4, 4] with a pending write
 * through a row, a stale column view. */
struct fstate {
	cow_tensor_t *x, *row, *col;
};

static void
fstate_make(struct fstate *s, const cow_backend_t *be)
{
	cow_tensor_t *p;

	p = tt_arange(COW_DTYPE_INT64, 2, (int64_t[]){4, 4}, fa);
	TT_OK(cow_functional_wrap(p, be, &s->x));
	cow_tensor_release(p);
	TT_OK(cow_tensor_select(s->x, 0, 1, &s->row));
	TT_OK(cow_tensor_select(s->x, 1, 2, &s->col));
	TT_OK(cow_tensor_fill_(s->row, -1));
}

static void
fstate_free(struct fstate *s)
{
	cow_tensor_release(s->col);
	cow_tensor_release(s->row);
	cow_tensor_release(s->x);
}

/* What x holds after the op: unchanged, or written by it. */
enum fwrite { F_NONE, F_COL_ADD, F_COL_SET };

static void
fstate_check(const struct fstate *s, enum fwrite w)
{
	static const double x0[] = {0, 1, 2, 3, -1, -1, -1, -1, 8, 9, 10, 11,
	    12, 13, 14, 15};
	double want[16];

	memcpy(want, x0, sizeof want);
	if (w == F_COL_ADD)
		for (int i = 0; i < 4; i++)
			want[i * 4 + 2] += 100;
	if (w == F_COL_SET)
		want[3 * 4 + 2] = 7;
	tt_assert_values(s->x, want);
}

typedef cow_status_t (*fop)(struct fstate *s, cow_tensor_t **made);

static cow_status_t
fop_col_add(struct fstate *s, cow_tensor_t **made)
{
	(void)made;
	return cow_tensor_add_scalar_(s->col, 100);
}

static cow_status_t
fop_sync(struct fstate *s, cow_tensor_t **made)
{
	(void)made;
	return cow_functional_sync(s->col);
}

static cow_status_t
fop_view(struct fstate *s, cow_tensor_t **made)
{
	return cow_tensor_diagonal(s->x, 0, 0, 1, made);
}

static cow_status_t
fop_sum(struct fstate *s, cow_tensor_t **made)
{
	return cow_tensor_sum_dim(s->col, 0, true, made);
}

static cow_status_t
fop_lazy_clone(struct fstate *s, cow_tensor_t **made)
{
	return cow_tensor_lazy_clone(s->row, made);
}

static cow_status_t
fop_set(struct fstate *s, cow_tensor_t **made)
{
	(void)made;
	return cow_tensor_set_i64(s->col, (int64_t[]){3}, 7);
}

static void
walk(fop op, enum fwrite writes)
{
	static const enum way ways[] = {FN_STRIDED, FN_OPAQUE};

	for (size_t w = 0; w < 2; w++) {
		const cow_backend_t *be = ways[w] == FN_OPAQUE ?
		    cow_backend_opaque_test() : cow_backend_strided();
		int failures = 0;

		for (uint64_t k = 1;; k++) {
			struct fstate s;
			cow_tensor_t *made = NULL;
			cow_status_t st;

			fstate_make(&s, be);
			TT_OK(cow_allocator_fault_fail_nth(fa, k));
			st = op(&s, &made);
			TT_OK(cow_allocator_fault_disarm(fa));
			if (st == COW_OK) {
				fstate_check(&s, writes);
				cow_tensor_release(made);
				fstate_free(&s);
				break;
			}
			cr_assert_eq(st, COW_ENOMEM, "%s: allocation %llu: %s",
			    way_name[ways[w]], (unsigned long long)k,
			    cow_status_str(st));
			cr_assert_null(made, "out written on failure");
			cr_assert_str_not_empty(cow_last_error());
			fstate_check(&s, F_NONE);
			failures++;
			fstate_free(&s);
		}
		cr_assert_gt(failures, 0, "no allocation point was walked");
	}
}

TestSuite(functional_faults, .init = fault_setup, .fini = fault_teardown,
    .timeout = 60.0);

Test(functional_faults, inplace_op_through_a_stale_view)
{
	walk(fop_col_add, F_COL_ADD);
}

Test(functional_faults, sync)
{
	walk(fop_sync, F_NONE);
}

Test(functional_faults, view)
{
	walk(fop_view, F_NONE);
}

Test(functional_faults, reduction_of_a_stale_view)
{
	walk(fop_sum, F_NONE);
}

Test(functional_faults, lazy_clone)
{
	walk(fop_lazy_clone, F_NONE);
}

Test(functional_faults, set_element)
{
	walk(fop_set, F_COL_SET);
}

/* Flushes that cannot allocate: the write that overflowed the queue has
 * happened, so its update stays queued; the next write must apply the queue
 * first or be refused. So the queue never holds more than one update past
 * its count bound, nor more than one value past its byte bound, and every
 * write either happened or changed nothing. Writes through one-element
 * slices reach the count bound, writes through 30-element slices (240 of
 * the base's 320 bytes) the byte bound. */
Test(functional_faults, queue_bound_holds_when_flushes_fail)
{
	enum { N = 40, WIDE = 30, NWIDE = 10, WRITES = 600 };
	static const cow_backend_t *(*const backends[])(void) = {
	    cow_backend_strided, cow_backend_opaque_test};

	for (size_t b = 0; b < 2; b++) {
		cow_tensor_t *p, *x, *one[N], *wide[NWIDE];
		double want[N] = {0};
		int over_bytes = 0, refused = 0;

		p = tt_arange(COW_DTYPE_INT64, 1, (int64_t[]){N}, fa);
		TT_OK(cow_tensor_fill_(p, 0));
		TT_OK(cow_functional_wrap(p, backends[b](), &x));
		cow_tensor_release(p);
		for (int i = 0; i < N; i++)
			TT_OK(cow_tensor_slice(x, 0, i, i + 1, 1, &one[i]));
		for (int j = 0; j < NWIDE; j++)
			TT_OK(cow_tensor_narrow(x, 0, j, WIDE, &wide[j]));
		TT_OK(cow_allocator_fault_fail_random(fa, 0.3, 42 + b));
		for (int w = 0; w < WRITES; w++) {
			bool big = w % 3 == 0;
			int i = big ? (w / 3) % NWIDE : (w * 7) % N;
			cow_status_t st = cow_tensor_fill_(big ? wide[i] : one[i],
			    w + 1);
			cow_functional_info_t in = info(x);

			if (st == COW_OK) {
				for (int k = i; k < i + (big ? WIDE : 1); k++)
					want[k] = w + 1;
			} else {
				cr_assert_eq(st, COW_ENOMEM, "%s",
				    cow_status_str(st));
				refused++;
			}
			over_bytes += in.pending_bytes > in.base_bytes;
			cr_assert_leq(in.pending_updates,
			    COW_FUNCTIONAL_MAX_UPDATES + 1);
			cr_assert_leq(in.pending_bytes,
			    in.base_bytes + WIDE * sizeof(int64_t),
			    "write %d: %zu pending bytes, base %zu", w,
			    in.pending_bytes, in.base_bytes);
		}
		TT_OK(cow_allocator_fault_disarm(fa));
		/* The walk reached failed flushes and refused writes. */
		cr_assert_gt(over_bytes, 0, "no flush failed over the bytes");
		cr_assert_gt(refused, 0, "no write was refused");
		tt_assert_values(x, want);
		for (int i = 0; i < N; i++)
			cow_tensor_release(one[i]);
		for (int j = 0; j < NWIDE; j++)
			cow_tensor_release(wide[j]);
		cow_tensor_release(x);
	}
}

/*
 * A write through a tensor over a user's storage must also reach the
 * storage, which may have to be materialised first (on the strided
 * backend the group's base shares the storage's bytes): every allocation
 * of the first write, and of a write through a stale view after it, may
 * fail, and a failure changes neither a value nor a byte of the storage.
 */
static void
storage_walk(bool second)
{
	static const cow_backend_t *(*const backends[])(void) = {
	    cow_backend_strided, cow_backend_opaque_test};

	for (size_t b = 0; b < 2; b++) {
		const cow_backend_t *prev;
		bool mode;
		int failures = 0;

		TT_OK(cow_backend_set_thread(backends[b](), &prev));
		TT_OK(cow_functional_mode_set_thread(true, &mode));
		for (uint64_t k = 1;; k++) {
			double want[8] = {0, 1, 2, 3, 4, 5, 6, 7};
			cow_tensor_t *t, *row, *col;
			cow_storage_t *s;
			cow_status_t st;
			double *p;

			TT_OK(cow_storage_new(sizeof want, fa, &s));
			TT_OK(cow_storage_mutable_data(s, (void **)&p));
			memcpy(p, want, sizeof want);
			TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 2,
			    (int64_t[]){2, 4}, NULL, 0, &t));
			TT_OK(cow_tensor_select(t, 0, 1, &row));
			TT_OK(cow_tensor_select(t, 1, 2, &col));
			if (second) {
				TT_OK(cow_tensor_fill_(row, -1));
				for (int i = 4; i < 8; i++)
					want[i] = -1;
			}
			TT_OK(cow_allocator_fault_fail_nth(fa, k));
			st = second ? cow_tensor_add_scalar_(col, 100) :
			    cow_tensor_fill_(row, -1);
			TT_OK(cow_allocator_fault_disarm(fa));
			if (st == COW_OK) {
				if (second) {
					want[2] += 100;
					want[6] += 100;
				} else {
					for (int i = 4; i < 8; i++)
						want[i] = -1;
				}
			} else {
				cr_assert_eq(st, COW_ENOMEM, "%s: allocation "
				    "%llu: %s", cow_backend_name(backends[b]()),
				    (unsigned long long)k, cow_status_str(st));
				cr_assert_str_not_empty(cow_last_error());
				failures++;
			}
			for (int i = 0; i < 8; i++)
				cr_assert_eq(((const double *)
				    cow_storage_const_data(s))[i], want[i],
				    "%s: allocation %llu: storage[%d]",
				    cow_backend_name(backends[b]()),
				    (unsigned long long)k, i);
			tt_assert_values(t, want);
			cow_tensor_release(col);
			cow_tensor_release(row);
			cow_tensor_release(t);
			cow_storage_release(s);
			if (st == COW_OK)
				break;
		}
		cr_assert_gt(failures, 0, "no allocation point was walked");
		TT_OK(cow_backend_set_thread(prev, NULL));
		TT_OK(cow_functional_mode_set_thread(mode, NULL));
	}
}

Test(functional_faults, first_write_through_a_storage_tensor)
{
	storage_walk(false);
}

Test(functional_faults, write_through_a_stale_storage_view)
{
	storage_walk(true);
}
