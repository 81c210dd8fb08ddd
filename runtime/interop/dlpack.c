/*
 * dlpack.c - DLPack export and import, both ABIs (include/cowstore/dlpack.h
 * states the rules; dlpack_abi.h defines the structs).
 *
 * An export is one allocation from the tensor's allocator: the managed
 * struct the consumer sees, the tensor the export holds, and its shape and
 * strides. The deleter gives all of it back on whichever thread calls it.
 * An import is a tensor over the producer's memory whose storage deleter
 * calls the producer's; an import of this library's own export (its
 * deleter is ours) is instead a tensor over the storage the export holds,
 * so that two tensors alias exactly when they share a storage.
 */
#include <stdint.h>
#include <string.h>

#include <cowstore/functional.h>

#include "alloc/allocator.h"
#include "core/error.h"
#include "core/fault.h"
#include "interop/dlpack_abi.h"
#include "storage/storage.h"
#include "tensor/dtype.h"
#include "tensor/impl.h"
#include "tensor/tensor.h"

#define EXPORT_FLAGS ((unsigned)COW_DLPACK_READ_ONLY | (unsigned)COW_DLPACK_COPY)

/* ------------------------------------------------------------------ */
/* Dtypes.                                                              */

/* dlpack.h's table, both ways. */
static const struct cow__dl_dtype dl_dtypes[COW_DTYPE_COUNT] = {
	[COW_DTYPE_BOOL] = {COW__DL_BOOL, 8, 1},
	[COW_DTYPE_UINT8] = {COW__DL_UINT, 8, 1},
	[COW_DTYPE_INT32] = {COW__DL_INT, 32, 1},
	[COW_DTYPE_INT64] = {COW__DL_INT, 64, 1},
	[COW_DTYPE_FLOAT32] = {COW__DL_FLOAT, 32, 1},
	[COW_DTYPE_FLOAT64] = {COW__DL_FLOAT, 64, 1},
	[COW_DTYPE_INT8] = {COW__DL_INT, 8, 1},
	[COW_DTYPE_INT16] = {COW__DL_INT, 16, 1},
	[COW_DTYPE_UINT16] = {COW__DL_UINT, 16, 1},
	[COW_DTYPE_UINT32] = {COW__DL_UINT, 32, 1},
	[COW_DTYPE_UINT64] = {COW__DL_UINT, 64, 1},
	[COW_DTYPE_FLOAT16] = {COW__DL_FLOAT, 16, 1},
	[COW_DTYPE_BFLOAT16] = {COW__DL_BFLOAT, 16, 1},
	[COW_DTYPE_COMPLEX64] = {COW__DL_COMPLEX, 64, 1},
	[COW_DTYPE_COMPLEX128] = {COW__DL_COMPLEX, 128, 1},
};
_Static_assert(COW_DTYPE_COUNT == 15, "every dtype needs its DLPack type");

/* The library's dtype for a DLPack one; COW_EINVAL naming it otherwise. */
static cow_status_t
dtype_from_dl(struct cow__dl_dtype d, cow_dtype_t *out)
{
	for (int i = 0; i < COW_DTYPE_COUNT; i++) {
		if (dl_dtypes[i].code == d.code && dl_dtypes[i].bits == d.bits &&
		    d.lanes == 1 && dl_dtypes[i].lanes == 1) {
			*out = (cow_dtype_t)i;
			return COW_OK;
		}
	}
	return cow__error(COW_EINVAL, "dl_tensor.dtype: code %u, bits %u, "
	    "lanes %u is not a dtype this library knows", d.code, d.bits,
	    d.lanes);
}

/* ------------------------------------------------------------------ */
/* Export.                                                              */

struct dl_export {
	union {
		struct DLManagedTensor legacy;
		struct DLManagedTensorVersioned versioned;
	} m;
	cow_tensor_t *held;     /* one reference: what the consumer sees */
	bool pinned;            /* held's storage is pinned by this export */
	unsigned flags;         /* the export's COW_DLPACK_* flags */
	int64_t shape[COW_TENSOR_MAX_NDIM];
	int64_t strides[COW_TENSOR_MAX_NDIM];
};

/* The deleter's work, on any thread: unpin, drop the reference, free. */
static void
export_free(struct dl_export *e)
{
	cow_allocator_t *alloc = cow__tensor_allocator(e->held);
	cow_tensor_t *held = e->held;

	if (e->pinned)
		(void)cow__storage_unpin(held->storage);
	cow__free(alloc, e, sizeof *e);
	/* Last: the allocator outlives the storage (alloc.h). */
	cow_tensor_release(held);
}

static void
legacy_deleter(struct DLManagedTensor *self)
{
	export_free(self->manager_ctx);
}

static void
versioned_deleter(struct DLManagedTensorVersioned *self)
{
	export_free(self->manager_ctx);
}

/*
 * What an export holds, by @flags, with the address of its element
 * [0, ..., 0] (NULL when it has none): a copy, a snapshot, or @t itself
 * with its storage pinned. @t is plain.
 */
static cow_status_t
export_hold(cow_tensor_t *t, unsigned flags, cow_tensor_t **held,
    const char **data, bool *pinned, const char *func)
{
	cow_status_t st;
	char *p = NULL;

	*pinned = false;
	if (flags & COW_DLPACK_COPY) {
		/* A fresh private copy: nobody else can reach its storage. */
		if ((st = cow__tensor_clone(t, held, func)) != COW_OK)
			return st;
	} else if (flags & COW_DLPACK_READ_ONLY) {
		/* A snapshot: a lazy clone, O(1) unless @t is pinned. */
		if ((st = cow_tensor_lazy_clone(t, held)) != COW_OK)
			return cow__error_wrap(st,
			    "cannot take a snapshot: ");
		if ((st = cow__tensor_read_data(*held, data, func)) != COW_OK)
			cow_tensor_release(*held);
		return st;
	} else {
		/* Pinned: no lazy clone taken while the consumer holds the
		 * pointer shares the bytes it writes. */
		if ((st = COW__FAULT_POINT(export_pin,
		    cow__tensor_pin_data(t, &p, func))) != COW_OK)
			return st;
		cow_tensor_retain(t);
		*held = t;
		*pinned = COW__FAULT_POINT(export_pinned, true);
		*data = p;
		return COW_OK;
	}
	if ((*held)->numel > 0 &&
	    (st = cow__tensor_write_data(*held, &p, func)) != COW_OK) {
		cow_tensor_release(*held);
		return st;
	}
	*data = p;
	return COW_OK;
}

/* The DLTensor of an export of @held. */
static void
export_describe(struct dl_export *e, struct cow__dl_tensor *dl,
    const char *data)
{
	const cow_tensor_t *h = e->held;

	for (int d = 0; d < h->ndim; d++) {
		e->shape[d] = h->sizes[d];
		e->strides[d] = h->strides[d];
	}
	dl->data = (void *)(uintptr_t)data;
	dl->device = (struct cow__dl_device){COW__DL_CPU, 0};
	dl->ndim = h->ndim;
	dl->dtype = dl_dtypes[h->dtype];
	dl->shape = e->shape;
	dl->strides = e->strides;
	dl->byte_offset = 0;
}

static cow_status_t
export_tensor(cow_tensor_t *t, unsigned flags, bool versioned,
    struct dl_export **out, const char *func)
{
	cow_tensor_t *plain = NULL, *held;
	struct dl_export *e;
	const char *data = NULL;
	cow_status_t st;
	bool pinned;

	if ((flags & ~EXPORT_FLAGS) != 0)
		return cow__error(COW_EINVAL, "unknown flags 0x%x",
		    flags & ~EXPORT_FLAGS);
	if (!cow__tensor_is_strided(t)) {
		/* A functional tensor's value, as a plain tensor. */
		if (!(flags & (COW_DLPACK_READ_ONLY | COW_DLPACK_COPY)))
			return cow__error(COW_ENOTSUP, "a functional "
			    "tensor has no memory of its own to export "
			    "writable: export it read-only or as a copy");
		if ((st = cow_functional_to_plain(t, &plain)) != COW_OK)
			return cow__error_wrap(st, "");
		t = plain;
	}
	e = cow__alloc(cow__tensor_allocator(t), sizeof *e);
	if (e == NULL) {
		cow_tensor_release(plain);
		return COW_ENOMEM;
	}
	st = export_hold(t, flags, &held, &data, &pinned, func);
	cow_tensor_release(plain);
	if (st != COW_OK) {
		cow__free(cow__tensor_allocator(t), e, sizeof *e);
		return st;
	}
	memset(&e->m, 0, sizeof e->m);
	e->held = held;
	e->pinned = pinned;
	e->flags = flags;
	if (versioned) {
		struct DLManagedTensorVersioned *m = &e->m.versioned;

		m->version = (struct cow__dl_version){COW_DLPACK_MAJOR,
		    COW_DLPACK_MINOR};
		m->manager_ctx = e;
		m->deleter = versioned_deleter;
		if (flags & COW_DLPACK_READ_ONLY)
			m->flags |= COW__DL_FLAG_READ_ONLY;
		if (flags & COW_DLPACK_COPY)
			m->flags |= COW__DL_FLAG_IS_COPIED;
		export_describe(e, &m->dl_tensor, data);
	} else {
		e->m.legacy.manager_ctx = e;
		e->m.legacy.deleter = legacy_deleter;
		export_describe(e, &e->m.legacy.dl_tensor, data);
	}
	*out = e;
	return COW_OK;
}

cow_status_t
cow_tensor_to_dlpack(cow_tensor_t *t, unsigned flags,
    struct DLManagedTensor **out)
{
	/* NULL: gcc 12's aarch64 -O3 sees a path where it is not set. */
	struct dl_export *e = NULL;
	cow_status_t st;

	COW__RETURN_IF_NULL(t);
	COW__RETURN_IF_NULL(out);
	if ((st = export_tensor(t, flags, false, &e, __func__)) != COW_OK)
		return COW__NAMED(st);
	*out = &e->m.legacy;
	return COW_OK;
}

cow_status_t
cow_tensor_to_dlpack_versioned(cow_tensor_t *t, unsigned flags,
    struct DLManagedTensorVersioned **out)
{
	struct dl_export *e = NULL; /* as above */
	cow_status_t st;

	COW__RETURN_IF_NULL(t);
	COW__RETURN_IF_NULL(out);
	if ((st = export_tensor(t, flags, true, &e, __func__)) != COW_OK)
		return COW__NAMED(st);
	*out = &e->m.versioned;
	return COW_OK;
}

bool
cow_dlpack_is_own(const struct DLManagedTensor *managed)
{
	return managed != NULL && managed->deleter == legacy_deleter;
}

bool
cow_dlpack_versioned_is_own(const struct DLManagedTensorVersioned *managed)
{
	return managed != NULL && managed->deleter == versioned_deleter;
}

/* ------------------------------------------------------------------ */
/* Import.                                                              */

/* Storage deleters: the producer's deleter, once, with its own struct. */
static void
legacy_release(void *data, size_t nbytes, void *ctx)
{
	struct DLManagedTensor *m = ctx;

	(void)data;
	(void)nbytes;
	if (m->deleter != NULL)
		m->deleter(m);
}

static void
versioned_release(void *data, size_t nbytes, void *ctx)
{
	struct DLManagedTensorVersioned *m = ctx;

	(void)data;
	(void)nbytes;
	if (m->deleter != NULL)
		m->deleter(m);
}

/* What an import needs to know besides the DLTensor. */
struct dl_import {
	const struct cow__dl_tensor *dl;
	bool strides_optional;  /* NULL strides: row-major (before 1.2) */
	bool read_only;
	bool owned;             /* the producer keeps no handle (IS_COPIED) */
	cow_deleter_fn release;
	void *managed;
	struct dl_export *own;  /* our own export (its deleter is ours) */
};

/*
 * An import of our own export @e: a tensor over the storage it holds, laid
 * out as @dl says (@base: its element [0, ..., 0]), checked to lie in that
 * storage. A writable export holds the exported tensor itself, so the
 * import is a view of the tensor's storage (writes through either are
 * seen by both); a read-only export holds a snapshot and a copying one a
 * copy, whose storage the import takes over. A read-only import of a
 * writable export is a lazy clone of that view: a snapshot, which nothing
 * writes through the exported tensor's storage. The export is released
 * (its pin dropped) in every case, as the import contract requires.
 */
static cow_status_t
import_own(const struct dl_import *im, cow_dtype_t dtype, const char *base,
    cow_tensor_t **out)
{
	const struct cow__dl_tensor *dl = im->dl;
	const struct dl_export *e = im->own;
	cow_storage_t *s = e->held->storage;
	const char *sdata = cow_storage_const_data(s);
	size_t isz = cow_dtype_size(dtype);
	bool snapshot = im->read_only &&
	    (e->flags & (COW_DLPACK_READ_ONLY | COW_DLPACK_COPY)) == 0;
	cow_tensor_t *v = NULL, *c;
	bool empty = false;
	int64_t offset = 0;
	cow_status_t st = COW_OK;

	for (int d = 0; d < dl->ndim; d++)
		empty = empty || dl->shape[d] == 0;
	/* The offset of @base in the storage; none when the layout has no
	 * element (then @base may be NULL, as in an export). */
	if (base == NULL ? !empty : sdata == NULL ||
	    (uintptr_t)base < (uintptr_t)sdata ||
	    ((uintptr_t)base - (uintptr_t)sdata) % isz != 0)
		st = cow__error(COW_EINVAL, "dl_tensor.data does not "
		    "point at a %s element of the storage this library "
		    "exported", cow_dtype_name(dtype));
	else if (base != NULL)
		offset = (int64_t)(((uintptr_t)base - (uintptr_t)sdata) / isz);
	if (st == COW_OK && (st = cow_tensor_from_storage(s, dtype, dl->ndim,
	    dl->shape, dl->strides, offset, &v)) != COW_OK)
		st = cow__error_wrap(st, st == COW_ENOMEM ? "" :
		    "dl_tensor does not describe the memory this library "
		    "exported: ");
	/* The view holds the storage now: release the export (its pin). */
	im->release(NULL, 0, im->managed);
	if (st != COW_OK || !snapshot) {
		*out = v;
		return st;
	}
	st = cow_tensor_lazy_clone(v, &c);
	cow_tensor_release(v);
	if (st != COW_OK)
		return cow__error_wrap(st, "");
	*out = c;
	return COW_OK;
}

/* The checks every import makes; *dtype and *base (element [0, ..., 0])
 * from the DLTensor. */
static cow_status_t
import_check(const struct dl_import *im, cow_dtype_t *dtype, char **base)
{
	const struct cow__dl_tensor *dl = im->dl;
	cow_status_t st;

	if (dl->device.device_type != COW__DL_CPU &&
	    dl->device.device_type != COW__DL_CUDA_HOST &&
	    dl->device.device_type != COW__DL_ROCM_HOST)
		return cow__error(COW_EINVAL, "dl_tensor.device: type %d "
		    "is not memory the CPU can read (kDLCPU, kDLCUDAHost or "
		    "kDLROCMHost)", (int)dl->device.device_type);
	if ((st = dtype_from_dl(dl->dtype, dtype)) != COW_OK)
		return st;
	if (dl->ndim < 0 || dl->ndim > COW_TENSOR_MAX_NDIM)
		return cow__error(COW_ERANGE,
		    "dl_tensor.ndim %d out of range [0, %d]", (int)dl->ndim,
		    COW_TENSOR_MAX_NDIM);
	if (dl->ndim > 0 && dl->shape == NULL)
		return cow__error(COW_EINVAL, "dl_tensor.shape is NULL "
		    "but ndim is %d", (int)dl->ndim);
	if (dl->ndim > 0 && dl->strides == NULL && !im->strides_optional)
		return cow__error(COW_EINVAL, "dl_tensor.strides is NULL "
		    "but ndim is %d (DLPack 1.2 and later always fill them)",
		    (int)dl->ndim);
	if (dl->byte_offset > (uint64_t)PTRDIFF_MAX)
		return cow__error(COW_EINVAL, "dl_tensor.byte_offset "
		    "%llu is out of range", (unsigned long long)dl->byte_offset);
	*base = dl->data == NULL ? NULL : (char *)dl->data + dl->byte_offset;
	return COW_OK;
}

/*
 * The import of @im. @im->managed is handed over in every case: on
 * success the new tensor's storage holds it (our own export: it has been
 * released), on failure its deleter has run.
 */
static cow_status_t
import_tensor(const struct dl_import *im, cow_tensor_t **out,
    const char *func)
{
	/* Set by dtype_from_dl before any use; initialised because gcc 12 at
	 * -O3 (the release preset, -Werror) cannot see that its failure
	 * returns first (-Wmaybe-uninitialized). */
	cow_dtype_t dtype = COW_DTYPE_BOOL;
	const struct cow__dl_tensor *dl = im->dl;
	char *base = NULL;
	unsigned sflags;
	cow_status_t st;

	if ((st = import_check(im, &dtype, &base)) == COW_OK) {
		if (im->own != NULL)
			return import_own(im, dtype, base, out);
		if (im->read_only)
			sflags = COW_STORAGE_READ_ONLY;
		else
			sflags = im->owned ? 0 : COW_STORAGE_NOT_SHAREABLE;
		st = cow__tensor_over_external(base, dtype, dl->ndim,
		    dl->shape, dl->strides, 0, im->release, im->managed,
		    sflags, NULL, out, func);
	}
	/* The storage did not take the memory: hand it back now. */
	if (st != COW_OK)
		im->release(NULL, 0, im->managed);
	return st;
}

cow_status_t
cow_tensor_from_dlpack(struct DLManagedTensor *managed, unsigned flags,
    cow_tensor_t **out)
{
	struct dl_import im;
	cow_status_t st;

	COW__RETURN_IF_NULL(managed);
	if (out == NULL)
		st = cow__error(COW_EINVAL, "argument 'out' is NULL");
	else if ((flags & ~(unsigned)COW_DLPACK_READ_ONLY) != 0)
		st = cow__error(COW_EINVAL, "unknown flags 0x%x",
		    flags & ~(unsigned)COW_DLPACK_READ_ONLY);
	else {
		im = (struct dl_import){&managed->dl_tensor, true,
		    (flags & COW_DLPACK_READ_ONLY) != 0, false, legacy_release,
		    managed, cow_dlpack_is_own(managed) ?
		    managed->manager_ctx : NULL};
		return COW__NAMED(import_tensor(&im, out, __func__));
	}
	/* Refused before the import: hand the memory back now. */
	legacy_release(NULL, 0, managed);
	return COW__NAMED(st);
}

cow_status_t
cow_tensor_from_dlpack_versioned(struct DLManagedTensorVersioned *managed,
    unsigned flags, cow_tensor_t **out)
{
	struct dl_import im;
	cow_status_t st;

	COW__RETURN_IF_NULL(managed);
	if (managed->version.major != COW_DLPACK_MAJOR)
		/* Nothing past the version may be read. */
		st = cow__error(COW_EINVAL, "DLPack major version "
		    "%u is not supported (only %d)",
		    (unsigned)managed->version.major, COW_DLPACK_MAJOR);
	else if (out == NULL)
		st = cow__error(COW_EINVAL, "argument 'out' is NULL");
	else if ((flags & ~(unsigned)COW_DLPACK_READ_ONLY) != 0)
		st = cow__error(COW_EINVAL, "unknown flags 0x%x",
		    flags & ~(unsigned)COW_DLPACK_READ_ONLY);
	else {
		im = (struct dl_import){&managed->dl_tensor,
		    managed->version.minor < 2,
		    (flags & COW_DLPACK_READ_ONLY) != 0 ||
		    (managed->flags & COW__DL_FLAG_READ_ONLY) != 0,
		    (managed->flags & COW__DL_FLAG_IS_COPIED) != 0,
		    versioned_release, managed,
		    cow_dlpack_versioned_is_own(managed) ?
		    managed->manager_ctx : NULL};
		return COW__NAMED(import_tensor(&im, out, __func__));
	}
	versioned_release(NULL, 0, managed);
	return COW__NAMED(st);
}
