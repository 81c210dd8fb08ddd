/*
 * A MaybeOwned borrow round trip (borrow, get, release), compiled on its
 * own with -O2, with and without COW_DEBUG_BORROWS. check_calls.cmake
 * disassembles it: without debug mode it must contain no call and no
 * locked instruction (release builds pay nothing for the borrow checks);
 * with debug mode it must call the library (the check can fail).
 */
#include <cowstore/maybe_owned.h>

cow_tensor_t *cow_cost_borrow_roundtrip(cow_tensor_t *t);

cow_tensor_t *
cow_cost_borrow_roundtrip(cow_tensor_t *t)
{
	cow_maybe_owned_t mo = cow_maybe_owned_borrowed(t);
	cow_tensor_t *got = cow_maybe_owned_get(&mo);

	cow_maybe_owned_release(&mo);
	return got;
}
