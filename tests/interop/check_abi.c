/*
 * check_abi.c - the library's DLPack definitions against Debian's dlpack.h
 * (the legacy layout, every size and offset) and against the sizes and
 * offsets the DLPack specification gives for the versioned struct on LP64
 * (unchanged since 1.0 up to and including `flags`). Prints each mismatch
 * and exits 1; prints "dlpack ABI: N facts match" otherwise.
 */
#include <stdio.h>

#include "abi_facts.h"

static int bad, checked;

static void
same(const char *what, size_t ours, size_t theirs, const char *whose)
{
	checked++;
	if (ours != theirs) {
		printf("dlpack ABI mismatch: %s is %zu in the library, %zu in "
		    "%s\n", what, ours, theirs, whose);
		bad++;
	}
}

#define LEGACY(field) same(#field, o.field, d.field, "Debian's dlpack.h")
#define SPEC(field, value) same(#field, o.field, (value), "the spec")

int
main(void)
{
	struct abi_facts o, d;

	abi_facts_ours(&o);
	abi_facts_debian(&d);
	LEGACY(device_size);
	LEGACY(device_type);
	LEGACY(device_id);
	LEGACY(dtype_size);
	LEGACY(dtype_code);
	LEGACY(dtype_bits);
	LEGACY(dtype_lanes);
	LEGACY(tensor_size);
	LEGACY(data);
	LEGACY(device);
	LEGACY(ndim);
	LEGACY(dtype);
	LEGACY(shape);
	LEGACY(strides);
	LEGACY(byte_offset);
	LEGACY(managed_size);
	LEGACY(managed_tensor);
	LEGACY(managed_ctx);
	LEGACY(managed_deleter);
	/* DLPack 1.x, LP64: DLPackVersion {uint32 major, minor};
	 * DLManagedTensorVersioned {version, manager_ctx, deleter, uint64
	 * flags, DLTensor dl_tensor}. */
	SPEC(version, 0);
	SPEC(version_major, 0);
	SPEC(version_minor, 4);
	SPEC(versioned_ctx, 8);
	SPEC(versioned_deleter, 16);
	SPEC(versioned_flags, 24);
	SPEC(versioned_tensor, 32);
	SPEC(versioned_size, 32 + d.tensor_size);
	if (bad > 0) {
		printf("dlpack ABI: %d of %d facts differ\n", bad, checked);
		return 1;
	}
	printf("dlpack ABI: %d facts match\n", checked);
	return 0;
}
