/*
 * cowstore DLPack: hand tensors to other libraries (NumPy, PyTorch, ...)
 * and take theirs, with no copy, through both DLPack ABIs: the versioned
 * one (DLPack 1.x, DLManagedTensorVersioned, with flags) and the legacy one
 * (DLManagedTensor, which NumPy 1.24 and PyTorch 1.13 use).
 *
 * This header needs no DLPack header: the structs are declared, not
 * defined. Include <dlpack/dlpack.h> to look inside them; its struct tags
 * are the same, so its pointers pass here as they are.
 *
 * Export (cow_tensor_to_dlpack*): the export holds its own reference on
 * what it exports; its deleter may run on any thread, once. Strides are
 * always filled (in elements), the device is CPU, data points at element
 * [0, ..., 0] (byte_offset 0; NULL when the tensor has no elements).
 * - Writable (flags 0): the tensor's storage is materialised (copy, or
 *   steal) and pinned until the deleter runs (storage.h, "Pins"): the
 *   consumer writes the tensor's own memory, and no lazy clone taken
 *   meanwhile shares it.
 * - COW_DLPACK_READ_ONLY: an O(1) snapshot (a lazy clone): nothing is
 *   materialised, later writes to the tensor do not show through, and the
 *   versioned export sets DLPACK_FLAG_BITMASK_READ_ONLY. The consumer must
 *   not write it. The legacy ABI cannot say so: give a legacy read-only
 *   export only to a consumer that never writes its imports (NumPy 1.24
 *   imports read-only).
 * - COW_DLPACK_COPY: an eager contiguous copy the consumer owns (the
 *   versioned export sets DLPACK_FLAG_BITMASK_IS_COPIED); combined with
 *   COW_DLPACK_READ_ONLY, a read-only copy.
 * - A functional tensor (functional.h) exports its current value, read-only
 *   or as a copy; it has no memory of its own to export writable.
 *
 * Import (cow_tensor_from_dlpack*): a tensor over the producer's memory,
 * with no copy, on a new storage, but for this library's own exports
 * (below). The producer's deleter is called exactly once: when the last
 * storage sharing the memory is released, on whichever thread that is, or
 * before the import returns an error.
 * - Read-only (the versioned DLPACK_FLAG_BITMASK_READ_ONLY, or
 *   COW_DLPACK_READ_ONLY from the caller): read-only external memory
 *   (COW_STORAGE_READ_ONLY): shared lazily, never written, the first write
 *   through any storage copies.
 * - Writable: the tensor aliases the producer's memory, as with any DLPack
 *   consumer. The producer keeps its own writable handle, so the storage is
 *   pinned for its lifetime (COW_STORAGE_NOT_SHAREABLE): its lazy clones
 *   copy, and no snapshot shares bytes the producer may still write.
 * - A versioned tensor flagged DLPACK_FLAG_BITMASK_IS_COPIED (and not
 *   read-only) is the consumer's alone: owned memory, shared lazily and
 *   stolen by the last share's first write.
 * - This library's own export (its deleter is the library's, either ABI):
 *   no second storage over the memory, so that two tensors alias exactly
 *   when they share a storage. A writable export imports as a view of the
 *   exported tensor's storage, laid out as the DLTensor says: writes through
 *   either tensor are seen by the other, and the export's pin goes with the
 *   import (the storage is pinned only by whatever else pins it). A
 *   read-only export imports as its snapshot (a lazy clone of the tensor:
 *   later writes to either do not reach the other), a copying one as its
 *   copy; a writable export imported with COW_DLPACK_READ_ONLY is a snapshot
 *   too. The DLTensor must still describe memory of the storage the export
 *   holds (COW_EINVAL or COW_ERANGE otherwise). The export's deleter runs
 *   before the import returns, in every case.
 * Accepted: devices kDLCPU and the CPU-readable pinned host memory of
 * kDLCUDAHost and kDLROCMHost; lanes 1; the dtypes of dtype.h; major
 * version 1 (versioned), any minor; NULL strides mean row-major only where
 * the producer's version allows it (legacy and 1.0-1.1). The memory must be
 * aligned as cow_tensor_from_external() requires, and strides must be
 * non-negative.
 *
 * Dtypes, both ways (code, bits): bool (kDLBool, 8); int8, int16, int32,
 * int64 (kDLInt, 8-64); uint8, uint16, uint32, uint64 (kDLUInt, 8-64);
 * float16, float32, float64 (kDLFloat, 16-64); bfloat16 (kDLBfloat, 16);
 * complex64, complex128 (kDLComplex, 64 and 128).
 *
 * Thread-safety: an export is a write of the tensor's storage when
 * writable (it materialises and pins), a read otherwise; an import is a
 * creation. Errors follow common.h.
 */
#ifndef COWSTORE_DLPACK_H
#define COWSTORE_DLPACK_H

#include "common.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct DLManagedTensor;
struct DLManagedTensorVersioned;

/* Export and import flags. */
enum {
	/* Export: a read-only O(1) snapshot. Import: read-only memory. */
	COW_DLPACK_READ_ONLY = 1u << 0,
	/* Export only: an eager copy the consumer owns. */
	COW_DLPACK_COPY = 1u << 1
};

/* The DLPack version of versioned exports. */
#define COW_DLPACK_MAJOR 1
#define COW_DLPACK_MINOR 0

/**
 * cow_tensor_to_dlpack - export @t through the legacy ABI (rules above).
 * Ownership: *out belongs to the consumer, which calls its deleter once
 * (from any thread); the export holds its own reference, so the caller
 * keeps and may release @t at any time.
 * Thread-safety: a write of @t's storage (writable export) or a read.
 * Errors: COW_EINVAL (NULL, unknown flag), COW_ENOTSUP (a writable export
 * of a functional tensor), COW_EBUSY (a writable export pins, as
 * cow_tensor_pin: of a tensor over borrowed memory that lazy clones still
 * share), COW_ENOMEM, COW_EALIASING (reshape-alias check, shadow.h);
 * nothing changed on failure.
 */
COW_API cow_status_t cow_tensor_to_dlpack(cow_tensor_t *t, unsigned flags,
    struct DLManagedTensor **out);

/**
 * cow_tensor_to_dlpack_versioned - the same through the versioned ABI
 * (version COW_DLPACK_MAJOR.COW_DLPACK_MINOR), with the read-only and
 * copied flags set as the export is.
 * Ownership: *out belongs to the consumer, as cow_tensor_to_dlpack().
 * Thread-safety: as cow_tensor_to_dlpack(). Errors: as
 * cow_tensor_to_dlpack().
 */
COW_API cow_status_t cow_tensor_to_dlpack_versioned(cow_tensor_t *t,
    unsigned flags, struct DLManagedTensorVersioned **out);

/**
 * cow_tensor_from_dlpack - import a legacy DLPack tensor (rules above).
 * @flags: 0 or COW_DLPACK_READ_ONLY.
 * Ownership: @managed is handed over in every case but NULL: its deleter
 * runs once, when the last storage over the memory is released (this
 * library's own export: before the import returns), or before an error
 * returns. *out holds one reference.
 * Thread-safety: any thread; the deleter may later run on another.
 * Errors: COW_EINVAL (@managed or out NULL, unknown flag, a device that is
 * not CPU-readable, an unknown dtype code/bits or lanes other than 1, NULL
 * shape or data where needed, a negative size or stride, misaligned data),
 * COW_ERANGE (ndim outside [0, COW_TENSOR_MAX_NDIM], or an own export's
 * DLTensor reaching outside its storage), COW_EOVERFLOW (the extent),
 * COW_EDTYPE (on a thread that creates functional tensors, an own export's
 * storage has a live alias group of another dtype: functional.h),
 * COW_ENOMEM; each message names the field.
 */
COW_API cow_status_t cow_tensor_from_dlpack(struct DLManagedTensor *managed,
    unsigned flags, cow_tensor_t **out);

/**
 * cow_tensor_from_dlpack_versioned - import a versioned DLPack tensor.
 * Read-only when its flags say so or @flags has COW_DLPACK_READ_ONLY.
 * Ownership: @managed is handed over, as cow_tensor_from_dlpack(); *out
 * holds one reference. Thread-safety: any thread.
 * Errors: as cow_tensor_from_dlpack(); COW_EINVAL also for a major version
 * other than 1 (the deleter is called, nothing else is read), and for NULL
 * strides with ndim > 0 from version 1.2 on.
 */
COW_API cow_status_t cow_tensor_from_dlpack_versioned(
    struct DLManagedTensorVersioned *managed, unsigned flags,
    cow_tensor_t **out);

/**
 * cow_dlpack_is_own / cow_dlpack_versioned_is_own - true when @managed is
 * an export of this library (cow_tensor_to_dlpack, or
 * cow_tensor_to_dlpack_versioned for the second) whose deleter has not
 * run: its deleter is the library's, which needs no lock of the caller's
 * (a binding's interpreter lock, say) and may run on any thread, and an
 * import of it is a tensor on the storage the export holds (above). A
 * binding that stands its own deleter in for a producer's must leave an
 * own export's alone, or the import cannot tell it from a foreign one.
 * NULL gives false.
 * Thread-safety: a read of @managed.
 * Errors: none.
 */
COW_API bool cow_dlpack_is_own(const struct DLManagedTensor *managed);
COW_API bool cow_dlpack_versioned_is_own(
    const struct DLManagedTensorVersioned *managed);

#ifdef __cplusplus
}
#endif
#endif
