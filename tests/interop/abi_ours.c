/*
 * abi_ours.c - the facts of the library's own DLPack definitions
 * (runtime/interop/dlpack_abi.h; the control build finds a broken copy of
 * that header first).
 */
#include "abi_facts.h"
#include "interop/dlpack_abi.h"

void
abi_facts_ours(struct abi_facts *f)
{
	ABI_FACTS_LEGACY(f, struct cow__dl_device, struct cow__dl_dtype,
	    struct cow__dl_tensor, struct DLManagedTensor);
	ABI_FACTS_VERSIONED(f, struct cow__dl_version,
	    struct DLManagedTensorVersioned);
}
