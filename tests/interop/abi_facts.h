/*
 * abi_facts.h - the sizes and offsets of a DLPack ABI definition, taken by
 * the same macro from whichever header the including file saw
 * (tests/interop/check_abi.c compares them).
 */
#ifndef COW_TEST_ABI_FACTS_H
#define COW_TEST_ABI_FACTS_H

#include <stddef.h>

struct abi_facts {
	size_t device_size, device_type, device_id;
	size_t dtype_size, dtype_code, dtype_bits, dtype_lanes;
	size_t tensor_size, data, device, ndim, dtype, shape, strides,
	    byte_offset;
	size_t managed_size, managed_tensor, managed_ctx, managed_deleter;
	/* Versioned (0 where the header has none). */
	size_t versioned_size, version, version_major, version_minor,
	    versioned_ctx, versioned_deleter, versioned_flags,
	    versioned_tensor;
};

/* Fill @f from the types DEVICE, DTYPE, TENSOR and MANAGED. */
#define ABI_FACTS_LEGACY(f, DEVICE, DTYPE, TENSOR, MANAGED)                 \
	do {                                                                \
		(f)->device_size = sizeof(DEVICE);                          \
		(f)->device_type = offsetof(DEVICE, device_type);           \
		(f)->device_id = offsetof(DEVICE, device_id);               \
		(f)->dtype_size = sizeof(DTYPE);                            \
		(f)->dtype_code = offsetof(DTYPE, code);                    \
		(f)->dtype_bits = offsetof(DTYPE, bits);                    \
		(f)->dtype_lanes = offsetof(DTYPE, lanes);                  \
		(f)->tensor_size = sizeof(TENSOR);                          \
		(f)->data = offsetof(TENSOR, data);                         \
		(f)->device = offsetof(TENSOR, device);                     \
		(f)->ndim = offsetof(TENSOR, ndim);                         \
		(f)->dtype = offsetof(TENSOR, dtype);                       \
		(f)->shape = offsetof(TENSOR, shape);                       \
		(f)->strides = offsetof(TENSOR, strides);                   \
		(f)->byte_offset = offsetof(TENSOR, byte_offset);           \
		(f)->managed_size = sizeof(MANAGED);                        \
		(f)->managed_tensor = offsetof(MANAGED, dl_tensor);         \
		(f)->managed_ctx = offsetof(MANAGED, manager_ctx);          \
		(f)->managed_deleter = offsetof(MANAGED, deleter);          \
	} while (0)

#define ABI_FACTS_VERSIONED(f, VERSION, VERSIONED)                          \
	do {                                                                \
		(f)->versioned_size = sizeof(VERSIONED);                    \
		(f)->version = offsetof(VERSIONED, version);                \
		(f)->version_major = offsetof(VERSION, major);              \
		(f)->version_minor = offsetof(VERSION, minor);              \
		(f)->versioned_ctx = offsetof(VERSIONED, manager_ctx);      \
		(f)->versioned_deleter = offsetof(VERSIONED, deleter);      \
		(f)->versioned_flags = offsetof(VERSIONED, flags);          \
		(f)->versioned_tensor = offsetof(VERSIONED, dl_tensor);     \
	} while (0)

/* From the library's definitions (abi_ours.c) and Debian's dlpack.h
 * (abi_debian.c). */
void abi_facts_ours(struct abi_facts *f);
void abi_facts_debian(struct abi_facts *f);

#endif
