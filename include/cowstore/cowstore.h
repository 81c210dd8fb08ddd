/*
 * cowstore: copy-on-write tensor storage, safe under concurrency.
 * Umbrella header: includes the whole public API, except the test hooks
 * of testing.h (the fault allocator, borrow debugging, the opaque test
 * backend), which a program that uses them includes itself.
 */
#ifndef COWSTORE_COWSTORE_H
#define COWSTORE_COWSTORE_H

#include "common.h"
/* Generated into the build tree (from version.h.in), so not beside this
 * header until installed: found through the include path. */
#include <cowstore/version.h>
#include "alloc.h"
#include "storage.h"
#include "stats.h"
#include "dtype.h"
#include "tensor.h"
#include "reshape.h"
#include "ops.h"
#include "maybe_owned.h"
#include "functional.h"
#include "shadow.h"
#include "dlpack.h"
#include "snapshot.h"
#include "safetensors.h"

#endif
