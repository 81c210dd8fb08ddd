/*
 * abi_debian.c - the facts of Debian's libdlpack-dev (DLPack 0.6: the
 * legacy ABI only).
 */
#include <dlpack/dlpack.h>

#include "abi_facts.h"

void
abi_facts_debian(struct abi_facts *f)
{
	ABI_FACTS_LEGACY(f, DLDevice, DLDataType, DLTensor, DLManagedTensor);
	f->versioned_size = 0;
}
