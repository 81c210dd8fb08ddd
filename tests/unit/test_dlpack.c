/*
 * DLPack export and import, both ABIs (include/cowstore/dlpack.h), seen
 * through the library's own ABI definitions (runtime/interop/dlpack_abi.h;
 * tests/interop/ checks those against Debian's dlpack.h and the spec).
 */
#include <criterion/criterion.h>

#include <cowstore/testing.h>

#include "interop/dlpack_abi.h"
#include "leak_fixture.h"

TestSuite(dlpack, .init = leak_setup, .fini = leak_teardown,
    .timeout = 30.0);

/* A 3x4 float64 tensor 0..11 on the system allocator. */
static cow_tensor_t *
matrix(void)
{
	cow_tensor_t *a, *t;

	cr_assert_eq(cow_tensor_arange(COW_DTYPE_FLOAT64, 12, sys, &a), COW_OK);
	cr_assert_eq(cow_tensor_view(a, 2, (int64_t[]){3, 4}, &t), COW_OK);
	cow_tensor_release(a);
	return t;
}

static double
at(const cow_tensor_t *t, int64_t i, int64_t j)
{
	double v;

	cr_assert_eq(cow_tensor_get_f64(t, (int64_t[]){i, j}, &v), COW_OK,
	    "%s", cow_last_error());
	return v;
}

/* ------------------------------------------------------------------ */
/* Export.                                                              */

Test(dlpack, writable_export_aliases_and_pins)
{
	cow_tensor_t *t = matrix(), *snap;
	struct DLManagedTensorVersioned *m;
	double *d;

	cr_assert_eq(cow_tensor_to_dlpack_versioned(t, 0, &m), COW_OK);
	cr_assert_eq(m->version.major, 1);
	cr_assert_eq(m->flags, 0);
	cr_assert_eq(m->dl_tensor.device.device_type, COW__DL_CPU);
	cr_assert_eq(m->dl_tensor.ndim, 2);
	cr_assert_eq(m->dl_tensor.dtype.code, COW__DL_FLOAT);
	cr_assert_eq(m->dl_tensor.dtype.bits, 64);
	cr_assert_eq(m->dl_tensor.dtype.lanes, 1);
	cr_assert_eq(m->dl_tensor.shape[0], 3);
	cr_assert_eq(m->dl_tensor.shape[1], 4);
	cr_assert_not_null(m->dl_tensor.strides, "strides are always filled");
	cr_assert_eq(m->dl_tensor.strides[0], 4);
	cr_assert_eq(m->dl_tensor.strides[1], 1);
	cr_assert_eq(m->dl_tensor.byte_offset, 0);
	d = m->dl_tensor.data;
	cr_assert_eq((const void *)d, cow_tensor_const_data(t));
	cr_assert(cow_storage_is_pinned(cow_tensor_storage(t)));
	/* A snapshot taken while exported does not share the bytes the
	 * consumer writes. */
	cr_assert_eq(cow_tensor_lazy_clone(t, &snap), COW_OK);
	d[5] = -5.0;
	cr_assert_eq(at(t, 1, 1), -5.0, "the consumer writes the tensor");
	cr_assert_eq(at(snap, 1, 1), 5.0, "the snapshot changed");
	cr_assert_eq(cow_test_stats().pinned_clones, 1);
	/* The export holds its own reference. */
	cow_tensor_release(t);
	d[0] = 42.0;
	m->deleter(m);
	cow_tensor_release(snap);
}

/* A writable export pins: over borrowed memory that a lazy clone still
 * shares it is refused with COW_EBUSY, as cow_tensor_pin is, and changes
 * nothing. */
Test(dlpack, writable_export_of_shared_borrowed_memory_is_busy)
{
	double buf[4] = {1, 2, 3, 4};
	cow_tensor_t *t, *c;
	struct DLManagedTensorVersioned *m = NULL;
	struct DLManagedTensor *l = NULL;

	cr_assert_eq(cow_tensor_from_external(buf, COW_DTYPE_FLOAT64, 1,
	    (int64_t[]){4}, NULL, 0, NULL, NULL, 0, sys, &t), COW_OK);
	cr_assert_eq(cow_tensor_lazy_clone(t, &c), COW_OK);
	cr_assert_eq(cow_tensor_to_dlpack_versioned(t, 0, &m), COW_EBUSY);
	cr_assert(strstr(cow_last_error(), "cow_tensor_to_dlpack_versioned") !=
	    NULL && strstr(cow_last_error(), "1 lazy clone") != NULL, "%s",
	    cow_last_error());
	cr_assert_eq(cow_tensor_to_dlpack(t, 0, &l), COW_EBUSY);
	cr_assert_null(m);
	cr_assert_null(l);
	cr_assert_not(cow_storage_is_pinned(cow_tensor_storage(t)));
	cr_assert(cow_storage_shares_data(cow_tensor_storage(t),
	    cow_tensor_storage(c)), "a refused export changed nothing");
	/* Read-only and copied exports pin nothing: they go through. */
	cr_assert_eq(cow_tensor_to_dlpack_versioned(t, COW_DLPACK_READ_ONLY,
	    &m), COW_OK);
	m->deleter(m);
	cow_tensor_release(c);
	cr_assert_eq(cow_tensor_to_dlpack_versioned(t, 0, &m), COW_OK);
	cr_assert_eq(m->dl_tensor.data, (void *)buf);
	m->deleter(m);
	cow_tensor_release(t);
}

Test(dlpack, writable_export_materialises_a_lazy_copy)
{
	cow_tensor_t *t = matrix(), *c;
	struct DLManagedTensor *m;

	cr_assert_eq(cow_tensor_lazy_clone(t, &c), COW_OK);
	cr_assert_eq(cow_tensor_to_dlpack(c, 0, &m), COW_OK);
	cr_assert_neq(m->dl_tensor.data, cow_tensor_const_data(t));
	cr_assert_eq(cow_test_stats().materialize_copies, 1);
	((double *)m->dl_tensor.data)[0] = 9.0;
	cr_assert_eq(at(t, 0, 0), 0.0);
	cr_assert_eq(at(c, 0, 0), 9.0);
	m->deleter(m);
	cr_assert_not(cow_storage_is_pinned(cow_tensor_storage(c)),
	    "the deleter unpins");
	cow_tensor_release(c);
	cow_tensor_release(t);
}

Test(dlpack, read_only_export_is_an_o1_snapshot)
{
	cow_tensor_t *t = matrix();
	struct DLManagedTensorVersioned *m;
	const double *d;

	cr_assert_eq(cow_tensor_to_dlpack_versioned(t, COW_DLPACK_READ_ONLY,
	    &m), COW_OK);
	cr_assert(m->flags & COW__DL_FLAG_READ_ONLY);
	cr_assert_not(m->flags & COW__DL_FLAG_IS_COPIED);
	d = m->dl_tensor.data;
	cr_assert_eq((const void *)d, cow_tensor_const_data(t), "no copy");
	cr_assert_eq(cow_test_stats().bytes_copied, 0);
	cr_assert_eq(cow_test_stats().materialize_copies, 0);
	cr_assert_not(cow_storage_is_pinned(cow_tensor_storage(t)));
	/* A later write to the tensor does not show through. */
	cr_assert_eq(cow_tensor_fill_(t, 1.0), COW_OK);
	cr_assert_eq(d[7], 7.0);
	cr_assert_eq(at(t, 1, 3), 1.0);
	m->deleter(m);
	cow_tensor_release(t);
}

Test(dlpack, copy_export_is_owned_by_the_consumer)
{
	cow_tensor_t *t = matrix(), *tr;
	struct DLManagedTensorVersioned *m;
	double *d;

	cr_assert_eq(cow_tensor_transpose(t, 0, 1, &tr), COW_OK);
	cr_assert_eq(cow_tensor_to_dlpack_versioned(tr, COW_DLPACK_COPY, &m),
	    COW_OK);
	cr_assert_eq(m->flags, COW__DL_FLAG_IS_COPIED);
	cr_assert_eq(m->dl_tensor.shape[0], 4);
	cr_assert_eq(m->dl_tensor.strides[0], 3, "the copy is contiguous");
	d = m->dl_tensor.data;
	cr_assert_eq(d[1], 4.0);
	d[1] = 100.0;
	cr_assert_eq(at(t, 1, 0), 4.0);
	cr_assert_not(cow_storage_is_pinned(cow_tensor_storage(t)));
	m->deleter(m);
	cr_assert_eq(cow_tensor_to_dlpack_versioned(tr,
	    COW_DLPACK_COPY | COW_DLPACK_READ_ONLY, &m), COW_OK);
	cr_assert_eq(m->flags, COW__DL_FLAG_IS_COPIED | COW__DL_FLAG_READ_ONLY);
	m->deleter(m);
	cow_tensor_release(tr);
	cow_tensor_release(t);
}

Test(dlpack, export_of_a_view_describes_its_layout)
{
	cow_tensor_t *t = matrix(), *v;
	struct DLManagedTensor *m;
	const double *d;

	/* Column 2 of rows 1.. : offset 6, stride 4. */
	cr_assert_eq(cow_tensor_as_strided(t, 1, (int64_t[]){2},
	    (int64_t[]){4}, 6, &v), COW_OK);
	cr_assert_eq(cow_tensor_to_dlpack(v, COW_DLPACK_READ_ONLY, &m), COW_OK);
	cr_assert_eq(m->dl_tensor.ndim, 1);
	cr_assert_eq(m->dl_tensor.strides[0], 4);
	d = m->dl_tensor.data;
	cr_assert_eq(d[0], 6.0);
	cr_assert_eq(d[4], 10.0);
	m->deleter(m);
	cow_tensor_release(v);
	cow_tensor_release(t);
}

Test(dlpack, export_of_an_empty_and_a_scalar_tensor)
{
	cow_tensor_t *e, *s;
	struct DLManagedTensorVersioned *m;

	cr_assert_eq(cow_tensor_zeros(COW_DTYPE_INT32, 2, (int64_t[]){0, 3},
	    sys, &e), COW_OK);
	cr_assert_eq(cow_tensor_to_dlpack_versioned(e, 0, &m), COW_OK);
	cr_assert_null(m->dl_tensor.data);
	cr_assert_eq(m->dl_tensor.shape[0], 0);
	cr_assert_not_null(m->dl_tensor.strides);
	m->deleter(m);
	cr_assert_eq(cow_tensor_full(COW_DTYPE_INT64, 0, NULL, 7.0, sys, &s),
	    COW_OK);
	cr_assert_eq(cow_tensor_to_dlpack_versioned(s, 0, &m), COW_OK);
	cr_assert_eq(m->dl_tensor.ndim, 0);
	cr_assert_eq(*(int64_t *)m->dl_tensor.data, 7);
	m->deleter(m);
	cow_tensor_release(s);
	cow_tensor_release(e);
}

Test(dlpack, export_errors_change_nothing)
{
	cow_tensor_t *t = matrix();
	struct DLManagedTensor *m = NULL;

	cr_assert_eq(cow_tensor_to_dlpack(NULL, 0, &m), COW_EINVAL);
	cr_assert_eq(cow_tensor_to_dlpack(t, 0, NULL), COW_EINVAL);
	cr_assert_eq(cow_tensor_to_dlpack(t, 1u << 5, &m), COW_EINVAL);
	cr_assert(strstr(cow_last_error(), "0x20") != NULL);
	cr_assert_null(m);
	cr_assert_not(cow_storage_is_pinned(cow_tensor_storage(t)));
	cow_tensor_release(t);
}

Test(dlpack, export_allocation_failure_changes_nothing, .init = fault_setup,
    .fini = fault_teardown)
{
	cow_tensor_t *t, *c;
	struct DLManagedTensor *m = NULL;

	cow_status_t st;
	uint64_t n;

	cr_assert_eq(cow_tensor_arange(COW_DTYPE_FLOAT32, 64, fa, &t), COW_OK);
	cr_assert_eq(cow_tensor_lazy_clone(t, &c), COW_OK);
	/* Fail each allocation of a writable export in turn (the export
	 * struct, the materialising copy) until one succeeds. */
	for (n = 1; ; n++) {
		cr_assert_eq(cow_allocator_fault_fail_nth(fa, n), COW_OK);
		st = cow_tensor_to_dlpack(c, 0, &m);
		cr_assert_eq(cow_allocator_fault_disarm(fa), COW_OK);
		if (st == COW_OK)
			break;
		cr_assert_eq(st, COW_ENOMEM, "allocation %llu",
		    (unsigned long long)n);
		cr_assert_null(m);
		cr_assert_not(cow_storage_is_pinned(cow_tensor_storage(c)));
		cr_assert(cow_storage_shares_data(cow_tensor_storage(t),
		    cow_tensor_storage(c)), "a failed export materialised");
	}
	cr_assert_eq(n, 3, "the export allocates twice");
	m->deleter(m);
	cow_tensor_release(c);
	cow_tensor_release(t);
}

/* ------------------------------------------------------------------ */
/* Import: a producer of our own, with a counting deleter.              */

struct producer {
	struct DLManagedTensorVersioned v;
	struct DLManagedTensor l;
	int64_t shape[4], strides[4];
	double data[16];
	int deleted;
};

static void
producer_versioned_deleter(struct DLManagedTensorVersioned *self)
{
	((struct producer *)self->manager_ctx)->deleted++;
}

static void
producer_legacy_deleter(struct DLManagedTensor *self)
{
	((struct producer *)self->manager_ctx)->deleted++;
}

/* A 2x3 row-major float64 producer, 1..6, in both ABIs. */
static void
producer_init(struct producer *p, uint64_t flags)
{
	struct cow__dl_tensor dl = {
		p->data, {COW__DL_CPU, 0}, 2, {COW__DL_FLOAT, 64, 1},
		p->shape, p->strides, 0
	};

	memset(p, 0, sizeof *p);
	p->shape[0] = 2;
	p->shape[1] = 3;
	p->strides[0] = 3;
	p->strides[1] = 1;
	for (int i = 0; i < 6; i++)
		p->data[i] = i + 1;
	dl.data = p->data;
	dl.shape = p->shape;
	dl.strides = p->strides;
	p->v = (struct DLManagedTensorVersioned){{1, 3}, p,
	    producer_versioned_deleter, flags, dl};
	p->l = (struct DLManagedTensor){dl, p, producer_legacy_deleter};
}

Test(dlpack, writable_import_aliases_and_is_pinned_for_life)
{
	struct producer p;
	cow_tensor_t *t, *snap;

	producer_init(&p, 0);
	cr_assert_not(cow_dlpack_is_own(&p.l), "a producer's export is ours");
	cr_assert_not(cow_dlpack_versioned_is_own(&p.v));
	cr_assert_not(cow_dlpack_is_own(NULL));
	cr_assert_not(cow_dlpack_versioned_is_own(NULL));
	cr_assert_eq(cow_tensor_from_dlpack(&p.l, 0, &t), COW_OK);
	cr_assert_eq(cow_tensor_const_data(t), (const void *)p.data);
	cr_assert_eq(at(t, 1, 2), 6.0);
	cr_assert(cow_storage_is_pinned(cow_tensor_storage(t)));
	cr_assert_eq(cow_tensor_lazy_clone(t, &snap), COW_OK);
	p.data[0] = -1.0; /* the producer writes its memory */
	cr_assert_eq(at(t, 0, 0), -1.0, "the import aliases the producer");
	cr_assert_eq(at(snap, 0, 0), 1.0, "the snapshot shares the "
	    "producer's bytes");
	cr_assert_eq(cow_tensor_fill_(t, 2.0), COW_OK);
	cr_assert_eq(p.data[5], 2.0, "writes reach the producer's memory");
	cow_tensor_release(snap);
	cr_assert_eq(p.deleted, 0);
	cow_tensor_release(t);
	cr_assert_eq(p.deleted, 1);
}

Test(dlpack, read_only_import_is_shared_lazily_and_never_written)
{
	struct producer p;
	cow_tensor_t *t, *c;

	producer_init(&p, COW__DL_FLAG_READ_ONLY);
	cr_assert_eq(cow_tensor_from_dlpack_versioned(&p.v, 0, &t), COW_OK);
	cr_assert(cow_storage_is_read_only(cow_tensor_storage(t)));
	cr_assert_not(cow_storage_is_pinned(cow_tensor_storage(t)));
	cr_assert_eq(cow_tensor_lazy_clone(t, &c), COW_OK);
	cr_assert(cow_storage_shares_data(cow_tensor_storage(t),
	    cow_tensor_storage(c)));
	cr_assert_eq(cow_tensor_fill_(t, 0.0), COW_OK);
	cr_assert_eq(p.data[0], 1.0, "a read-only import was written");
	cow_tensor_release(t);
	cr_assert_eq(p.deleted, 0, "the clone still shares the memory");
	cr_assert_eq(cow_tensor_add_scalar_(c, 1.0), COW_OK);
	cr_assert_eq(p.deleted, 1, "the last share's copy gives it back");
	cr_assert_eq(at(c, 1, 2), 7.0);
	cr_assert_eq(p.data[5], 6.0);
	cow_tensor_release(c);
	cr_assert_eq(p.deleted, 1);
}

Test(dlpack, caller_asks_a_legacy_import_to_be_read_only)
{
	struct producer p;
	cow_tensor_t *t;

	producer_init(&p, 0);
	cr_assert_eq(cow_tensor_from_dlpack(&p.l, COW_DLPACK_READ_ONLY, &t),
	    COW_OK);
	cr_assert(cow_storage_is_read_only(cow_tensor_storage(t)));
	cr_assert_eq(cow_tensor_fill_(t, 0.0), COW_OK);
	cr_assert_eq(p.data[0], 1.0);
	cow_tensor_release(t);
	cr_assert_eq(p.deleted, 1);
}

Test(dlpack, copied_import_is_owned_and_stolen)
{
	struct producer p;
	cow_tensor_t *t, *c;
	void *d;

	producer_init(&p, COW__DL_FLAG_IS_COPIED);
	cr_assert_eq(cow_tensor_from_dlpack_versioned(&p.v, 0, &t), COW_OK);
	cr_assert_not(cow_storage_is_pinned(cow_tensor_storage(t)));
	cr_assert_eq(cow_tensor_lazy_clone(t, &c), COW_OK);
	cow_tensor_release(t);
	cr_assert_eq(cow_tensor_mutable_data(c, &d), COW_OK);
	cr_assert_eq(d, (void *)p.data, "the last share steals owned memory");
	cr_assert_eq(p.deleted, 0);
	cow_tensor_release(c);
	cr_assert_eq(p.deleted, 1);
}

Test(dlpack, import_with_null_strides_is_row_major_before_1_2)
{
	struct producer p;
	cow_tensor_t *t;

	producer_init(&p, 0);
	p.l.dl_tensor.strides = NULL;
	cr_assert_eq(cow_tensor_from_dlpack(&p.l, 0, &t), COW_OK);
	cr_assert_eq(at(t, 1, 0), 4.0);
	cow_tensor_release(t);
	p.v.dl_tensor.strides = NULL;
	p.v.version.minor = 1;
	cr_assert_eq(cow_tensor_from_dlpack_versioned(&p.v, 0, &t), COW_OK);
	cow_tensor_release(t);
	cr_assert_eq(p.deleted, 2);
	p.v.version.minor = 2;
	cr_assert_eq(cow_tensor_from_dlpack_versioned(&p.v, 0, &t),
	    COW_EINVAL);
	cr_assert(strstr(cow_last_error(), "strides is NULL") != NULL);
	cr_assert_eq(p.deleted, 3);
}

Test(dlpack, import_of_a_strided_view_with_byte_offset)
{
	struct producer p;
	cow_tensor_t *t;

	producer_init(&p, 0);
	/* Column 1 of the 2x3: offset 1 element, stride 3. */
	p.shape[0] = 2;
	p.strides[0] = 3;
	p.l.dl_tensor.ndim = 1;
	p.l.dl_tensor.byte_offset = sizeof(double);
	cr_assert_eq(cow_tensor_from_dlpack(&p.l, 0, &t), COW_OK);
	cr_assert_eq(cow_tensor_numel(t), 2);
	cr_assert_eq(cow_storage_nbytes(cow_tensor_storage(t)),
	    4 * sizeof(double));
	cr_assert_eq(cow_tensor_get_f64(t, (int64_t[]){1}, &(double){0}),
	    COW_OK);
	{
		double v;

		cr_assert_eq(cow_tensor_get_f64(t, (int64_t[]){1}, &v), COW_OK);
		cr_assert_eq(v, 5.0);
	}
	cow_tensor_release(t);
	cr_assert_eq(p.deleted, 1);
}

/* Every refusal calls the producer's deleter exactly once and names what
 * was wrong. */
static void
refused(struct producer *p, bool versioned, cow_status_t want,
    const char *why)
{
	cow_tensor_t *t = NULL;
	int before = p->deleted;
	cow_status_t st = versioned ?
	    cow_tensor_from_dlpack_versioned(&p->v, 0, &t) :
	    cow_tensor_from_dlpack(&p->l, 0, &t);

	cr_assert_eq(st, want, "%s: %s", why, cow_last_error());
	cr_assert(strstr(cow_last_error(), why) != NULL, "'%s' not in '%s'",
	    why, cow_last_error());
	cr_assert_null(t);
	cr_assert_eq(p->deleted, before + 1, "%s: deleter called %d times",
	    why, p->deleted - before);
}

Test(dlpack, import_refusals_call_the_deleter_once)
{
	struct producer p;

	producer_init(&p, 0);
	p.l.dl_tensor.device.device_type = 2; /* kDLCUDA */
	p.v.dl_tensor.device.device_type = 2;
	refused(&p, false, COW_EINVAL, "device");
	refused(&p, true, COW_EINVAL, "device");
	producer_init(&p, 0);
	p.l.dl_tensor.dtype.code = 3; /* kDLOpaqueHandle */
	refused(&p, false, COW_EINVAL, "dtype");
	producer_init(&p, 0);
	p.l.dl_tensor.dtype.bits = 24;
	refused(&p, false, COW_EINVAL, "bits 24");
	producer_init(&p, 0);
	p.l.dl_tensor.dtype.lanes = 4;
	refused(&p, false, COW_EINVAL, "lanes 4");
	producer_init(&p, 0);
	p.v.version.major = 2;
	refused(&p, true, COW_EINVAL, "major version 2");
	producer_init(&p, 0);
	p.l.dl_tensor.shape = NULL;
	refused(&p, false, COW_EINVAL, "shape is NULL");
	producer_init(&p, 0);
	p.l.dl_tensor.data = NULL;
	refused(&p, false, COW_EINVAL, "data is NULL");
	producer_init(&p, 0);
	p.strides[0] = -3;
	refused(&p, false, COW_EINVAL, "negative");
	producer_init(&p, 0);
	p.shape[1] = -1;
	refused(&p, false, COW_EINVAL, "negative");
	producer_init(&p, 0);
	p.l.dl_tensor.ndim = 17;
	refused(&p, false, COW_ERANGE, "ndim 17");
	producer_init(&p, 0);
	p.l.dl_tensor.byte_offset = 3;
	refused(&p, false, COW_EINVAL, "aligned");
}

Test(dlpack, import_argument_errors)
{
	struct producer p;
	cow_tensor_t *t;

	cr_assert_eq(cow_tensor_from_dlpack(NULL, 0, &t), COW_EINVAL);
	cr_assert_eq(cow_tensor_from_dlpack_versioned(NULL, 0, &t),
	    COW_EINVAL);
	producer_init(&p, 0);
	cr_assert_eq(cow_tensor_from_dlpack(&p.l, 0, NULL), COW_EINVAL);
	cr_assert_eq(p.deleted, 1, "handed over: the deleter runs");
	cr_assert_eq(cow_tensor_from_dlpack(&p.l, 1u << 4, &t), COW_EINVAL);
	cr_assert_eq(p.deleted, 2);
	cr_assert_eq(cow_tensor_from_dlpack_versioned(&p.v, COW_DLPACK_COPY,
	    &t), COW_EINVAL, "COW_DLPACK_COPY is for exports");
	cr_assert_eq(p.deleted, 3);
}

Test(dlpack, pinned_host_memory_is_accepted)
{
	struct producer p;
	cow_tensor_t *t;

	producer_init(&p, 0);
	p.l.dl_tensor.device.device_type = COW__DL_CUDA_HOST;
	cr_assert_eq(cow_tensor_from_dlpack(&p.l, 0, &t), COW_OK);
	cow_tensor_release(t);
	p.l.dl_tensor.device.device_type = COW__DL_ROCM_HOST;
	cr_assert_eq(cow_tensor_from_dlpack(&p.l, 0, &t), COW_OK);
	cow_tensor_release(t);
	cr_assert_eq(p.deleted, 2);
}

/* Export, then import what was exported: the round trip aliases (the
 * writable export), or is a snapshot (the read-only one). */
Test(dlpack, round_trip_through_both_abis)
{
	cow_tensor_t *t = matrix(), *back, *back2;
	struct DLManagedTensor *l;
	struct DLManagedTensorVersioned *v;

	cr_assert_eq(cow_tensor_to_dlpack(t, 0, &l), COW_OK);
	cr_assert_eq(cow_tensor_from_dlpack(l, 0, &back), COW_OK);
	cr_assert_eq(cow_tensor_const_data(back), cow_tensor_const_data(t));
	cr_assert_eq(cow_tensor_to_dlpack_versioned(back, COW_DLPACK_READ_ONLY,
	    &v), COW_OK);
	cr_assert_eq(cow_tensor_from_dlpack_versioned(v, 0, &back2), COW_OK);
	cr_assert_neq(cow_tensor_storage(back2), cow_tensor_storage(t));
	cr_assert(cow_storage_shares_data(cow_tensor_storage(back2),
	    cow_tensor_storage(t)), "a snapshot: shared lazily");
	cr_assert_eq(at(back2, 2, 3), 11.0);
	cow_tensor_release(t);
	cow_tensor_release(back);
	cr_assert_eq(at(back2, 0, 1), 1.0);
	cow_tensor_release(back2);
}

/* ------------------------------------------------------------------ */
/* Import of the library's own exports (issue 36): a tensor over the   */
/* storage the export holds, never a second storage over its memory.   */

/* @u is a view of @t's storage with @t's layout. */
static void
assert_same_storage(const cow_tensor_t *u, const cow_tensor_t *t)
{
	cr_assert_eq(cow_tensor_storage(u), cow_tensor_storage(t),
	    "the import is on a storage of its own");
	cr_assert_eq(cow_tensor_ndim(u), cow_tensor_ndim(t));
	for (int d = 0; d < cow_tensor_ndim(t); d++) {
		cr_assert_eq(cow_tensor_sizes(u)[d], cow_tensor_sizes(t)[d]);
		cr_assert_eq(cow_tensor_strides(u)[d],
		    cow_tensor_strides(t)[d]);
	}
	cr_assert_eq(cow_tensor_offset(u), cow_tensor_offset(t));
	cr_assert_eq(cow_tensor_dtype(u), cow_tensor_dtype(t));
}

/* Writes through either of @t and @u, views of one storage, are seen by
 * the other; the storage is not pinned, so a lazy clone shares it. */
static void
assert_aliases_unpinned(cow_tensor_t *t, cow_tensor_t *u)
{
	cow_tensor_t *snap;

	cr_assert_not(cow_storage_is_pinned(cow_tensor_storage(t)),
	    "the export's pin outlived the import");
	cr_assert_eq(cow_tensor_fill_(u, 7.0), COW_OK);
	cr_assert_eq(at(t, 1, 2), 7.0, "a write through the import");
	cr_assert_eq(cow_tensor_set_f64(t, (int64_t[]){0, 1}, -3.0), COW_OK);
	cr_assert_eq(at(u, 0, 1), -3.0, "a write through the tensor");
	cr_assert_eq(cow_tensor_lazy_clone(t, &snap), COW_OK);
	cr_assert(cow_storage_shares_data(cow_tensor_storage(snap),
	    cow_tensor_storage(t)), "a lazy clone of an unpinned storage "
	    "shares it");
	cr_assert_eq(cow_tensor_fill_(u, 8.0), COW_OK);
	cr_assert_eq(at(t, 2, 3), 8.0);
	cr_assert_eq(at(snap, 2, 3), 7.0, "the snapshot changed");
	cow_tensor_release(snap);
}

/* Export @t with @flags through either ABI, check the export is ours and
 * pins @t only when writable, and import it back with @import_flags (the
 * statistics start from zero before the export); *data (unless NULL): the
 * export's dl_tensor.data. */
static cow_tensor_t *
round_trip(cow_tensor_t *t, unsigned flags, bool versioned,
    unsigned import_flags, const void **data)
{
	struct DLManagedTensorVersioned *v;
	struct DLManagedTensor *l;
	cow_tensor_t *u = NULL;
	cow_status_t st;

	cow_stats_reset();
	if (versioned) {
		cr_assert_eq(cow_tensor_to_dlpack_versioned(t, flags, &v),
		    COW_OK);
		cr_assert(cow_dlpack_versioned_is_own(v));
	} else {
		cr_assert_eq(cow_tensor_to_dlpack(t, flags, &l), COW_OK);
		cr_assert(cow_dlpack_is_own(l));
	}
	cr_assert_eq(cow_storage_is_pinned(cow_tensor_storage(t)), flags == 0);
	if (data != NULL)
		*data = versioned ? v->dl_tensor.data : l->dl_tensor.data;
	st = versioned ? cow_tensor_from_dlpack_versioned(v, import_flags, &u) :
	    cow_tensor_from_dlpack(l, import_flags, &u);
	cr_assert_eq(st, COW_OK, "%s", cow_last_error());
	return u;
}

Test(dlpack, import_of_own_writable_export_is_a_view_of_its_storage)
{
	for (int versioned = 0; versioned < 2; versioned++) {
		cow_tensor_t *t = matrix();
		cow_tensor_t *u = round_trip(t, 0, versioned, 0, NULL);

		assert_same_storage(u, t);
		assert_aliases_unpinned(t, u);
		/* Either may go first. */
		cow_tensor_release(t);
		cr_assert_eq(at(u, 2, 3), 8.0);
		cow_tensor_release(u);
	}
}

/* A view with an offset and strides comes back as the same view. */
Test(dlpack, import_of_own_export_of_a_view_keeps_its_layout)
{
	cow_tensor_t *t = matrix(), *tr, *col, *u;
	struct DLManagedTensorVersioned *v;

	cr_assert_eq(cow_tensor_transpose(t, 0, 1, &tr), COW_OK);
	cr_assert_eq(cow_tensor_narrow(tr, 0, 1, 2, &col), COW_OK);
	cr_assert_eq(cow_tensor_to_dlpack_versioned(col, 0, &v), COW_OK);
	cr_assert_eq(cow_tensor_from_dlpack_versioned(v, 0, &u), COW_OK, "%s",
	    cow_last_error());
	assert_same_storage(u, col);
	cr_assert_eq(cow_tensor_offset(u), 1);
	cr_assert_eq(cow_tensor_storage(u), cow_tensor_storage(t));
	cr_assert_eq(at(u, 1, 2), 10.0);
	cr_assert_eq(cow_tensor_set_f64(u, (int64_t[]){1, 2}, -1.0), COW_OK);
	cr_assert_eq(at(t, 2, 2), -1.0);
	cr_assert_not(cow_storage_is_pinned(cow_tensor_storage(t)));
	cow_tensor_release(u);
	cow_tensor_release(col);
	cow_tensor_release(tr);
	cow_tensor_release(t);
}

/* A copying export is the consumer's: the import takes its storage over
 * (the export's copy is the only one), and the tensor is not involved. */
Test(dlpack, import_of_own_copy_export_takes_the_copy)
{
	for (int versioned = 0; versioned < 2; versioned++) {
		cow_tensor_t *t = matrix(), *u;
		const void *data;

		u = round_trip(t, COW_DLPACK_COPY, versioned, 0, &data);
		cr_assert_eq(cow_tensor_const_data(u), data,
		    "the import copied the export's copy again");
		cr_assert_not(cow_storage_shares_data(cow_tensor_storage(u),
		    cow_tensor_storage(t)));
		cr_assert_not(cow_storage_is_pinned(cow_tensor_storage(u)));
		cr_assert_eq(cow_tensor_fill_(u, 3.0), COW_OK);
		cr_assert_eq(at(t, 2, 3), 11.0);
		cow_tensor_release(t);
		cr_assert_eq(at(u, 2, 3), 3.0);
		cow_tensor_release(u);
	}
}

/* @u is a snapshot of @t (0..11): on a storage of its own that shares
 * the bytes (nothing copied since round_trip), and later writes to either
 * do not reach the other. */
static void
assert_snapshot(cow_tensor_t *t, cow_tensor_t *u)
{
	cr_assert_not(cow_storage_is_pinned(cow_tensor_storage(t)));
	cr_assert_neq(cow_tensor_storage(u), cow_tensor_storage(t));
	cr_assert(cow_storage_shares_data(cow_tensor_storage(u),
	    cow_tensor_storage(t)), "the snapshot copied");
	cr_assert_eq(cow_test_stats().bytes_copied, 0);
	cr_assert_eq(cow_tensor_fill_(t, 1.0), COW_OK);
	cr_assert_eq(at(u, 1, 2), 6.0, "a write to the tensor showed through "
	    "its snapshot");
	cr_assert_eq(cow_tensor_fill_(u, 2.0), COW_OK);
	cr_assert_eq(at(t, 1, 2), 1.0, "a write to the snapshot reached the "
	    "tensor");
	cr_assert_eq(at(u, 1, 2), 2.0);
}

/* A read-only export holds a snapshot: its import is that snapshot, which
 * the import takes over (O(1)). So is a read-only import of a writable
 * export, taken after the export's pin went (so it shares). */
Test(dlpack, import_of_own_read_only_export_is_a_snapshot)
{
	/* Bit 0: the versioned ABI; bit 1: the import is the read-only one. */
	for (unsigned i = 0; i < 4; i++) {
		unsigned ro_import = i & 2 ? COW_DLPACK_READ_ONLY : 0;
		cow_tensor_t *t = matrix(), *u;

		u = round_trip(t, COW_DLPACK_READ_ONLY & ~ro_import, i & 1,
		    ro_import, NULL);
		assert_snapshot(t, u);
		cow_tensor_release(u);
		cow_tensor_release(t);
	}
}

/* An own export whose DLTensor was changed so that it no longer describes
 * memory of the exported storage is refused; the export is released (its
 * pin goes) and nothing leaks (the suite's leak check). */
Test(dlpack, import_of_own_export_that_was_changed_is_refused)
{
	static const char *const why[] = {"not point at", "not point at",
	    "not describe", "not describe"};

	for (int k = 0; k < 4; k++) {
		cow_tensor_t *t = matrix(), *u = NULL;
		struct DLManagedTensorVersioned *v;
		cow_status_t st;

		cr_assert_eq(cow_tensor_to_dlpack_versioned(t, 0, &v), COW_OK);
		if (k == 0)        /* before the storage's first byte */
			v->dl_tensor.data = (char *)v->dl_tensor.data - 8;
		if (k == 1)        /* inside an element */
			v->dl_tensor.byte_offset = 4;
		if (k == 2)        /* past the end */
			v->dl_tensor.shape[0] = 4;
		if (k == 3)        /* past the end by its offset */
			v->dl_tensor.byte_offset = 8;
		st = cow_tensor_from_dlpack_versioned(v, 0, &u);
		cr_assert_neq(st, COW_OK, "case %d", k);
		cr_assert(strstr(cow_last_error(), why[k]) != NULL,
		    "case %d: %s", k, cow_last_error());
		cr_assert(strstr(cow_last_error(),
		    "cow_tensor_from_dlpack_versioned") != NULL, "%s",
		    cow_last_error());
		cr_assert_null(u);
		cr_assert_not(cow_storage_is_pinned(cow_tensor_storage(t)),
		    "case %d: the export was not released", k);
		cr_assert_eq(cow_tensor_refcount(t), 1);
		cow_tensor_release(t);
	}
}

/* Every allocation of an import of an own export failing in turn: the
 * export is released (its pin goes), nothing is made or leaked, the
 * tensor is untouched; then the import succeeds. */
Test(dlpack, import_of_own_export_allocation_failures, .init = fault_setup,
    .fini = fault_teardown)
{
	for (unsigned ro = 0; ro < 2; ro++) {
		cow_tensor_t *t, *u = NULL;
		struct DLManagedTensor *l;
		cow_status_t st;
		uint64_t n, live;

		cr_assert_eq(cow_tensor_arange(COW_DTYPE_FLOAT32, 64, fa, &t),
		    COW_OK);
		live = cow_test_alloc_stats(fa).live_bytes;
		for (n = 1; ; n++) {
			cr_assert_eq(cow_tensor_to_dlpack(t, 0, &l), COW_OK);
			cr_assert_eq(cow_allocator_fault_fail_nth(fa, n),
			    COW_OK);
			st = cow_tensor_from_dlpack(l, ro ?
			    COW_DLPACK_READ_ONLY : 0, &u);
			cr_assert_eq(cow_allocator_fault_disarm(fa), COW_OK);
			if (st == COW_OK)
				break;
			cr_assert_eq(st, COW_ENOMEM, "allocation %llu: %s",
			    (unsigned long long)n, cow_last_error());
			cr_assert(strstr(cow_last_error(),
			    "cow_tensor_from_dlpack") != NULL, "%s",
			    cow_last_error());
			cr_assert_null(u);
			cr_assert_not(cow_storage_is_pinned(
			    cow_tensor_storage(t)));
			cr_assert_eq(cow_test_alloc_stats(fa).live_bytes, live,
			    "allocation %llu: the failed import leaked",
			    (unsigned long long)n);
			cr_assert_eq(cow_tensor_refcount(t), 1);
		}
		cr_assert_geq(n, 2, "the import allocates");
		cr_assert_not(cow_storage_is_pinned(cow_tensor_storage(t)));
		if (ro)
			cr_assert_neq(cow_tensor_storage(u),
			    cow_tensor_storage(t));
		else
			cr_assert_eq(cow_tensor_storage(u),
			    cow_tensor_storage(t));
		cow_tensor_release(u);
		cow_tensor_release(t);
	}
}

/* Every dtype maps to a DLPack type and back. */
Test(dlpack, every_dtype_round_trips)
{
	for (int d = 0; d < COW_DTYPE_COUNT; d++) {
		cow_tensor_t *t, *back;
		struct DLManagedTensorVersioned *v;

		cr_assert_eq(cow_tensor_zeros((cow_dtype_t)d, 1, (int64_t[]){3},
		    sys, &t), COW_OK);
		cr_assert_eq(cow_tensor_to_dlpack_versioned(t, 0, &v), COW_OK,
		    "%s", cow_dtype_name((cow_dtype_t)d));
		cr_assert_eq(v->dl_tensor.dtype.bits,
		    8 * cow_dtype_size((cow_dtype_t)d));
		cr_assert_eq(cow_tensor_from_dlpack_versioned(v, 0, &back),
		    COW_OK);
		cr_assert_eq(cow_tensor_dtype(back), (cow_dtype_t)d);
		cow_tensor_release(back);
		cow_tensor_release(t);
	}
}
