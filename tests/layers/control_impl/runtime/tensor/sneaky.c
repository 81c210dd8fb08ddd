/*
 * The control of layers.impl (tests/CMakeLists.txt): a public function
 * that tests its tensor's implementation itself instead of calling the
 * table. check_impl.cmake must name line 14.
 */
#include "core/error.h"
#include "tensor/impl.h"

cow_status_t
cow_tensor_fill_(cow_tensor_t *t, double value)
{
	COW__RETURN_IF_NULL(t);
	/* A plain tensor's fast path, skipping the table: not allowed. */
	if (t->impl == &cow__tensor_strided_impl)
		return cow__kernel_fill(t, value, __func__);
	return t->impl->fill_(t, value);
}
