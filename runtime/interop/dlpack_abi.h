/*
 * dlpack_abi.h - the library's own definition of the DLPack ABI (the
 * public header only declares the two managed-tensor structs). Written from
 * the DLPack specification; tests/interop/ checks it against Debian's
 * libdlpack-dev (the legacy layout, DLPack 0.6) and against the sizes and
 * offsets the specification gives for the versioned one (1.x), whose
 * layout up to and including `flags` never changes.
 *
 * The managed structs carry DLPack's own tags, so that the public
 * declarations (include/cowstore/dlpack.h) and a consumer's
 * <dlpack/dlpack.h> name the same types; everything else is named here.
 */
#ifndef COW_INTEROP_DLPACK_ABI_H
#define COW_INTEROP_DLPACK_ABI_H

#include <stdint.h>

#include <cowstore/dlpack.h>

/* DLDeviceType values (DLPack's enum is int-sized on every ABI). */
enum {
	COW__DL_CPU = 1,
	COW__DL_CUDA_HOST = 3,  /* pinned host memory: CPU-readable */
	COW__DL_ROCM_HOST = 11  /* likewise */
};

/* DLDataTypeCode values. */
enum {
	COW__DL_INT = 0,
	COW__DL_UINT = 1,
	COW__DL_FLOAT = 2,
	COW__DL_BFLOAT = 4,
	COW__DL_COMPLEX = 5,
	COW__DL_BOOL = 6
};

/* DLManagedTensorVersioned flags. */
#define COW__DL_FLAG_READ_ONLY ((uint64_t)1 << 0)
#define COW__DL_FLAG_IS_COPIED ((uint64_t)1 << 1)

struct cow__dl_device {
	int32_t device_type; /* DLDeviceType */
	int32_t device_id;
};

struct cow__dl_dtype {
	uint8_t code;
	uint8_t bits;
	uint16_t lanes;
};

struct cow__dl_tensor {
	void *data;
	struct cow__dl_device device;
	int32_t ndim;
	struct cow__dl_dtype dtype;
	int64_t *shape;
	int64_t *strides;   /* in elements; NULL: row-major (before 1.2) */
	uint64_t byte_offset;
};

struct DLManagedTensor {
	struct cow__dl_tensor dl_tensor;
	void *manager_ctx;
	void (*deleter)(struct DLManagedTensor *self);
};

struct cow__dl_version {
	uint32_t major;
	uint32_t minor;
};

struct DLManagedTensorVersioned {
	struct cow__dl_version version;
	void *manager_ctx;
	void (*deleter)(struct DLManagedTensorVersioned *self);
	uint64_t flags;
	struct cow__dl_tensor dl_tensor;
};

#endif
