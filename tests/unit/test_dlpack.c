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

/* Export, then import what was exported: the round trip aliases. */
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
	cr_assert(cow_storage_is_read_only(cow_tensor_storage(back2)));
	cr_assert_eq(at(back2, 2, 3), 11.0);
	cow_tensor_release(t);
	cow_tensor_release(back);
	cr_assert_eq(at(back2, 0, 1), 1.0);
	cow_tensor_release(back2);
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
