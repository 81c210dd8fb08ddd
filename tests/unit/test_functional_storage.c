/*
 * Functionalization of tensors over one storage: cow_tensor_from_storage
 * makes tensors that alias, in every way, and the writes reach the storage
 * (the three ways of functional_test.h).
 */
#include <cowstore/testing.h>

#include "functional_test.h"

TestSuite(functional, .timeout = 60.0);

/* ------------------------------------------------------------------ */
/* Tensors over one storage: cow_tensor_from_storage makes             */
/* tensors that alias, in every way, and the writes reach the storage.   */

/* Element @k of @s's bytes read as @dtype (float32, float64 or uint8). */
static double
storage_elem(const cow_storage_t *s, cow_dtype_t dtype, int64_t k)
{
	const unsigned char *p = cow_storage_const_data(s);
	float f;
	double d;

	switch (dtype) {
	case COW_DTYPE_FLOAT32:
		memcpy(&f, p + k * 4, 4);
		return f;
	case COW_DTYPE_FLOAT64:
		memcpy(&d, p + k * 8, 8);
		return d;
	default:
		return p[k];
	}
}

/* Record (and, with @want, assert) the storage's first @n elements of
 * @dtype: the bytes themselves, read without any tensor. */
static void
expect_storage(struct run *r, const char *name, const cow_storage_t *s,
    cow_dtype_t dtype, int64_t n, const double *want)
{
	struct output *o;

	cr_assert_lt(r->n, MAX_OUT);
	cr_assert_leq(n, MAX_VALUES);
	cr_assert_geq(cow_storage_nbytes(s), (size_t)n * cow_dtype_size(dtype));
	o = &r->out[r->n++];
	snprintf(o->name, sizeof o->name, "%s", name);
	o->ndim = 1;
	o->sizes[0] = o->numel = n;
	for (int64_t k = 0; k < n; k++) {
		o->v[k] = storage_elem(s, dtype, k);
		if (want != NULL)
			cr_assert(o->v[k] == want[k], "%s: %s[%lld] = %g, want "
			    "%g", way_name[r->way], name, (long long)k,
			    o->v[k], want[k]);
	}
}

/* A private storage holding @n float64 values 0, 1, ..., n - 1. */
static cow_storage_t *
storage_f64(int64_t n)
{
	cow_storage_t *s;
	double *p;

	TT_OK(cow_storage_new((size_t)n * 8, NULL, &s));
	TT_OK(cow_storage_mutable_data(s, (void **)&p));
	for (int64_t k = 0; k < n; k++)
		p[k] = (double)k;
	return s;
}

/* The repro: two float32 [4] tensors over one 16-byte storage,
 * fill_(t1, 3): t2 and the storage see it (the storage before any read,
 * and after the release of both). */
static void
prog_storage_repro(struct run *r)
{
	static const double three[] = {3, 3, 3, 3};
	cow_tensor_t *t1, *t2;
	cow_storage_t *s;

	TT_OK(cow_storage_new(16, NULL, &s));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT32, 1, (int64_t[]){4},
	    NULL, 0, &t1));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT32, 1, (int64_t[]){4},
	    NULL, 0, &t2));
	TT_OK(cow_tensor_fill_(t1, 3));
	if (functional(r))
		cr_assert_eq(info(t1).pending_updates, 1, "the write is "
		    "queued, and yet (below) in the storage");
	expect_storage(r, "storage", s, COW_DTYPE_FLOAT32, 4, three);
	expect(r, "t2", t2, three);
	cow_tensor_release(t1);
	cow_tensor_release(t2);
	expect_storage(r, "storage-released", s, COW_DTYPE_FLOAT32, 4, three);
	cow_storage_release(s);
}

Test(functional, tensors_over_one_storage_alias)
{
	run3(prog_storage_repro);
}

/*
 * Different sizes, strides and offsets over one storage of 12 float64
 * (0..11): a [3, 4] matrix, its transpose, a 2x2 block at offset 5, every
 * other element, a 0-element tensor. Each reports the strided runtime's
 * layout; writes through each are seen by all and by the storage;
 * as_strided of one of them is absolute over the storage; a tensor made
 * after the writes (while they are queued) sees them.
 */
static void
prog_storage_layouts(struct run *r)
{
	cow_tensor_t *a, *b, *c, *d, *z, *col, *e, *f;
	cow_storage_t *s = storage_f64(12);

	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 2,
	    (int64_t[]){3, 4}, NULL, 0, &a));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 2,
	    (int64_t[]){4, 3}, (int64_t[]){1, 4}, 0, &b));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 2,
	    (int64_t[]){2, 2}, (int64_t[]){4, 1}, 5, &c));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 1,
	    (int64_t[]){6}, (int64_t[]){2}, 0, &d));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 1,
	    (int64_t[]){0}, NULL, 12, &z));
	cr_assert_eq(cow_tensor_strides(b)[0], 1);
	cr_assert_eq(cow_tensor_strides(b)[1], 4);
	cr_assert(!cow_tensor_is_contiguous(b));
	cr_assert_eq(cow_tensor_offset(c), 5);
	cr_assert_eq(cow_tensor_strides(c)[0], 4);
	cr_assert_eq(cow_tensor_strides(d)[0], 2);
	expect(r, "c", c, (double[]){5, 6, 9, 10});
	TT_OK(cow_tensor_fill_(c, -1));                 /* a[1:3, 1:3] */
	TT_OK(cow_tensor_add_scalar_(d, 100));          /* even elements */
	TT_OK(cow_tensor_select(b, 0, 3, &col));        /* a[:, 3] */
	TT_OK(cow_tensor_mul_scalar_(col, 2));
	TT_OK(cow_tensor_set_f64(b, (int64_t[]){2, 1}, 7)); /* a[1][2] */
	TT_OK(cow_tensor_fill_(z, 5));                  /* nothing */
	TT_OK(cow_tensor_as_strided(c, 1, (int64_t[]){3}, (int64_t[]){4}, 3,
	    &e));                                       /* a[:, 3] again */
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 2,
	    (int64_t[]){2, 6}, NULL, 0, &f));
	expect(r, "a", a, (double[]){100, 1, 102, 6, 104, -1, 7, 14, 108, -1,
	    99, 22});
	emit(r, "b", b);
	expect(r, "c-after", c, (double[]){-1, 7, -1, 99});
	expect(r, "d", d, (double[]){100, 102, 104, 7, 108, 99});
	expect(r, "col", col, (double[]){6, 14, 22});
	expect(r, "e", e, (double[]){6, 14, 22});
	expect(r, "f", f, (double[]){100, 1, 102, 6, 104, -1, 7, 14, 108, -1,
	    99, 22});
	emit(r, "z", z);
	expect_storage(r, "storage", s, COW_DTYPE_FLOAT64, 12,
	    (double[]){100, 1, 102, 6, 104, -1, 7, 14, 108, -1, 99, 22});
	cow_tensor_release(f);
	cow_tensor_release(e);
	cow_tensor_release(col);
	cow_tensor_release(z);
	cow_tensor_release(d);
	cow_tensor_release(c);
	cow_tensor_release(b);
	cow_tensor_release(a);
	cow_storage_release(s);
}

Test(functional, tensors_over_one_storage_with_different_layouts)
{
	run3(prog_storage_layouts);
}

/*
 * Creation and release in any order: a group whose only tensor is released
 * with its write still queued (nobody read it) has written the storage; a
 * later tensor over it starts from those bytes; a view that outlives every
 * tensor made from the storage keeps the group, and a new tensor joins it.
 */
static void
prog_storage_orders(struct run *r)
{
	cow_tensor_t *t1, *t2, *t3, *v, *t4;
	cow_storage_t *s = storage_f64(4);

	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 1, (int64_t[]){4},
	    NULL, 0, &t1));
	TT_OK(cow_tensor_fill_(t1, 1));
	cow_tensor_release(t1);
	expect_storage(r, "storage-1", s, COW_DTYPE_FLOAT64, 4,
	    (double[]){1, 1, 1, 1});
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 1, (int64_t[]){2},
	    NULL, 2, &t2));
	TT_OK(cow_tensor_add_scalar_(t2, 5));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 1, (int64_t[]){4},
	    NULL, 0, &t3));
	cow_tensor_release(t2);
	expect(r, "t3", t3, (double[]){1, 1, 6, 6});
	TT_OK(cow_tensor_mul_scalar_(t3, 2));
	TT_OK(cow_tensor_narrow(t3, 0, 1, 2, &v));
	cow_tensor_release(t3);
	TT_OK(cow_tensor_add_scalar_(v, 10));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 1, (int64_t[]){4},
	    NULL, 0, &t4));
	expect(r, "t4", t4, (double[]){2, 12, 22, 12});
	TT_OK(cow_tensor_fill_(t4, 0));
	expect(r, "v", v, (double[]){0, 0});
	cow_tensor_release(t4);
	cow_tensor_release(v);
	expect_storage(r, "storage-2", s, COW_DTYPE_FLOAT64, 4,
	    (double[]){0, 0, 0, 0});
	cow_storage_release(s);
}

Test(functional, tensors_over_one_storage_in_any_order)
{
	run3(prog_storage_orders);
}

/*
 * When the storage holds the writes: as soon as the in-place op returns,
 * so also after cow_functional_sync of any tensor of the group and after
 * the release of its last tensor. The write is still queued in the group
 * when the storage already has it.
 */
static void
prog_storage_when(struct run *r)
{
	cow_tensor_t *t1, *t2, *row;
	cow_storage_t *s = storage_f64(6);

	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 2,
	    (int64_t[]){2, 3}, NULL, 0, &t1));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 1,
	    (int64_t[]){6}, NULL, 0, &t2));
	TT_OK(cow_tensor_select(t1, 0, 1, &row));
	TT_OK(cow_tensor_add_scalar_(row, 10));
	if (functional(r)) {
		cr_assert_eq(info(t2).pending_updates, 1);
		cr_assert_neq(info(t2).tensor_generation, info(t2).generation);
	}
	expect_storage(r, "after-write", s, COW_DTYPE_FLOAT64, 6,
	    (double[]){0, 1, 2, 13, 14, 15});
	TT_OK(cow_functional_sync(t2));
	expect_storage(r, "after-sync", s, COW_DTYPE_FLOAT64, 6,
	    (double[]){0, 1, 2, 13, 14, 15});
	TT_OK(cow_tensor_fill_(t2, 4));
	cow_tensor_release(row);
	cow_tensor_release(t1);
	cow_tensor_release(t2);
	expect_storage(r, "after-release", s, COW_DTYPE_FLOAT64, 6,
	    (double[]){4, 4, 4, 4, 4, 4});
	cow_storage_release(s);
}

Test(functional, writes_reach_the_storage_at_once)
{
	run3(prog_storage_when);
}

/*
 * The storage's bytes that no tensor of the dtype can reach stay as they
 * were: 10 bytes hold two float32 and two more bytes. A lazy clone of the
 * storage taken before, and lazy clones or clones of the tensors taken
 * after, do not alias the storage.
 */
static void
prog_storage_copies(struct run *r)
{
	cow_tensor_t *t, *lc, *c;
	cow_storage_t *s, *before;
	unsigned char *p;

	TT_OK(cow_storage_new(10, NULL, &s));
	TT_OK(cow_storage_mutable_data(s, (void **)&p));
	memset(p, 0, 8);
	p[8] = 0xab;
	p[9] = 0xcd;
	TT_OK(cow_storage_lazy_clone(s, &before));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT32, 1, (int64_t[]){2},
	    NULL, 0, &t));
	TT_OK(cow_tensor_fill_(t, 2));
	TT_OK(cow_tensor_lazy_clone(t, &lc));
	TT_OK(cow_tensor_clone(t, &c));
	TT_OK(cow_tensor_fill_(lc, 8));
	TT_OK(cow_tensor_fill_(c, 9));
	expect(r, "t", t, (double[]){2, 2});
	expect(r, "lc", lc, (double[]){8, 8});
	expect_storage(r, "storage-f32", s, COW_DTYPE_FLOAT32, 2,
	    (double[]){2, 2});
	expect_storage(r, "storage-bytes", s, COW_DTYPE_UINT8, 10,
	    (double[]){0, 0, 0, 64, 0, 0, 0, 64, 0xab, 0xcd});
	expect_storage(r, "before", before, COW_DTYPE_UINT8, 10,
	    (double[]){0, 0, 0, 0, 0, 0, 0, 0, 0xab, 0xcd});
	cow_tensor_release(c);
	cow_tensor_release(lc);
	cow_tensor_release(t);
	cow_storage_release(before);
	cow_storage_release(s);
}

Test(functional, storage_copies_and_unreachable_bytes)
{
	run3(prog_storage_copies);
}

/* A copy within one dtype copies the bytes (ops.h): bool bytes other than
 * 0 and 1 in a caller's storage reach the storage as they are, in every
 * way. (Found by fuzz_functional once it compared storages.) */
static void
prog_storage_bool_bytes(struct run *r)
{
	cow_tensor_t *t, *u;
	cow_storage_t *s;
	unsigned char *p;

	TT_OK(cow_storage_new(4, NULL, &s));
	TT_OK(cow_storage_mutable_data(s, (void **)&p));
	memcpy(p, (unsigned char[]){5, 0, 0, 0xff}, 4);
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_BOOL, 1, (int64_t[]){2},
	    NULL, 0, &t));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_BOOL, 1, (int64_t[]){2},
	    NULL, 2, &u));
	expect(r, "u", u, (double[]){0, 1});
	TT_OK(cow_tensor_copy_(u, t));
	expect(r, "u-after", u, (double[]){1, 0});
	expect_storage(r, "storage", s, COW_DTYPE_UINT8, 4,
	    (double[]){5, 0, 5, 0});
	cow_tensor_release(u);
	cow_tensor_release(t);
	cow_storage_release(s);
}

Test(functional, copies_within_one_dtype_keep_the_bytes)
{
	run3(prog_storage_bool_bytes);
}

/* The cost on the strided backend: making the group copies nothing (its
 * base is a lazy clone of the storage); the group's first write
 * materialises the storage (one copy of it: the base still shares its
 * bytes), later writes copy nothing more (their elements go into the now
 * private storage); applying a write through a narrow view of the
 * whole-storage tensor copies the base once, as in any group (its path is
 * the narrow alone, not as_strided then narrow). */
Test(functional, storage_group_copies_on_the_strided_backend)
{
	enum { N = 1 << 18 }; /* 1 MiB of float32 */
	cow_tensor_t *t, *part;
	const cow_backend_t *be;
	cow_stats_t s0, s1;
	cow_storage_t *s;
	bool mode;

	TT_OK(cow_storage_new((size_t)N * 4, NULL, &s));
	way_enter(FN_STRIDED, &be, &mode);
	cow_stats_get(&s0);
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT32, 1, (int64_t[]){N},
	    NULL, 0, &t));
	TT_OK(cow_tensor_narrow(t, 0, 1000, 1000, &part));
	cow_stats_get(&s1);
	cr_assert_eq(s1.bytes_copied, s0.bytes_copied);
	TT_OK(cow_tensor_fill_(part, -1));
	cow_stats_get(&s1);
	cr_assert_eq(s1.bytes_copied - s0.bytes_copied, (uint64_t)N * 4);
	TT_OK(cow_tensor_fill_(part, -2));
	cow_stats_get(&s1);
	cr_assert_eq(s1.bytes_copied - s0.bytes_copied, (uint64_t)N * 4);
	cr_assert_eq(storage_elem(s, COW_DTYPE_FLOAT32, 1006), -2.0);
	cr_assert_eq(tt_get(t, (int64_t[]){1006}), -2.0);
	cow_stats_get(&s1);
	cr_assert_eq(s1.bytes_copied - s0.bytes_copied, (uint64_t)N * 4 * 2);
	cow_tensor_release(part);
	cow_tensor_release(t);
	way_leave(be, mode);
	cow_storage_release(s);
}

/* Functional only: one group per storage has one dtype and one backend.
 * A tensor of another dtype (or on another backend) over a storage whose
 * group lives is refused, changing nothing; once every tensor of the group
 * (views included) is released, it is made, and reads the bytes as the
 * strided runtime does. */
Test(functional, one_dtype_and_backend_per_storage_group)
{
	static const enum way ways[] = {FN_STRIDED, FN_OPAQUE};

	for (size_t w = 0; w < 2; w++) {
		cow_tensor_t *f, *v, *i = NULL;
		const cow_backend_t *be;
		cow_storage_t *s;
		bool mode;
		float x = 1.5f;
		int32_t bits;

		way_enter(ways[w], &be, &mode);
		TT_OK(cow_storage_new(16, NULL, &s));
		TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT32, 1,
		    (int64_t[]){4}, NULL, 0, &f));
		TT_OK(cow_tensor_select(f, 0, 1, &v));
		TT_OK(cow_tensor_fill_(v, x));
		TT_FAILS(cow_tensor_from_storage(s, COW_DTYPE_INT32, 1,
		    (int64_t[]){4}, NULL, 0, &i), COW_EDTYPE,
		    "cow_tensor_from_storage: the storage already has "
		    "functional tensors of dtype float32, not int32");
		cr_assert_null(i);
		/* Another backend (the other functional way's). */
		TT_OK(cow_backend_set_thread(ways[w] == FN_OPAQUE ?
		    cow_backend_strided() : cow_backend_opaque_test(), NULL));
		TT_OK(cow_functional_mode_set_thread(true, NULL));
		TT_FAILS(cow_tensor_from_storage(s, COW_DTYPE_FLOAT32, 1,
		    (int64_t[]){4}, NULL, 0, &i), COW_EINVAL,
		    "functional tensors on backend");
		cr_assert_null(i);
		way_enter(ways[w], NULL, NULL);
		cow_tensor_release(f);
		/* The view keeps the group. */
		TT_FAILS(cow_tensor_from_storage(s, COW_DTYPE_INT32, 1,
		    (int64_t[]){4}, NULL, 0, &i), COW_EDTYPE, "dtype float32");
		cow_tensor_release(v);
		TT_OK(cow_tensor_from_storage(s, COW_DTYPE_INT32, 1,
		    (int64_t[]){4}, NULL, 0, &i));
		memcpy(&bits, &x, 4);
		tt_assert_values(i, (double[]){0, bits, 0, 0});
		cow_tensor_release(i);
		cow_storage_release(s);
		way_leave(be, mode);
	}
}

/* The trace shows the storage as the program's input, and each tensor
 * over it as its as_strided copy. */
Test(functional, storage_trace)
{
	cow_functional_trace_t *tr;
	const cow_backend_t *be;
	unsigned long long in;
	const char *line;
	cow_storage_t *s;
	cow_tensor_t *t;
	bool mode;

	way_enter(FN_OPAQUE, &be, &mode);
	TT_OK(cow_storage_new(48, NULL, &s));
	TT_OK(cow_functional_trace_start());
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 2,
	    (int64_t[]){2, 2}, (int64_t[]){1, 2}, 1, &t));
	TT_OK(cow_functional_trace_stop(&tr));
	line = trace_find(tr, "= from_storage(float64, [6])");
	cr_assert_not_null(line);
	cr_assert_eq(sscanf(line, "%%%llu", &in), 1);
	cr_assert_not_null(trace_find(tr, "= as_strided_copy(%%%llu, size=[2, 2], "
	    "stride=[1, 2], offset=1)",
	    in));
	cow_functional_trace_free(tr);
	cow_tensor_release(t);
	cow_storage_release(s);
	way_leave(be, mode);
}
