/*
 * The negative control of dlpack.abi: a plausible mistake in the library's
 * DLPack definitions, the versioned struct laid out like the legacy one
 * (dl_tensor first, flags last). check_abi must report it.
 */
#ifndef COW_INTEROP_DLPACK_ABI_H
#define COW_INTEROP_DLPACK_ABI_H

#include <stdint.h>

struct cow__dl_device {
	int32_t device_type;
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
	int64_t *strides;
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
	struct cow__dl_tensor dl_tensor;
	struct cow__dl_version version;
	void *manager_ctx;
	void (*deleter)(struct DLManagedTensorVersioned *self);
	uint64_t flags;
};

#endif
