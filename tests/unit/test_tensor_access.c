/*
 * Unambiguous answers from a tensor's accessors (issue 30, point 3):
 * COW_DTYPE_INVALID from cow_tensor_dtype(NULL).
 */
#include <criterion/criterion.h>

#include "cow_test.h"
#include "leak_fixture.h"
#include "tensor_test.h"

TestSuite(tensor_access, .init = leak_setup, .fini = leak_teardown,
    .timeout = 30.0);

/* ------------------------------------------------------------------ */
/* COW_DTYPE_INVALID.                                                    */

Test(tensor_access, dtype_of_null_is_invalid)
{
	cow_tensor_t *t, *s;

	cr_assert_eq(cow_tensor_dtype(NULL), COW_DTYPE_INVALID);
	cr_assert_lt((int)COW_DTYPE_INVALID, 0, "outside [0, COUNT)");
	cr_assert_neq(COW_DTYPE_INVALID, COW_DTYPE_BOOL);
	cr_assert_eq(cow_dtype_size(COW_DTYPE_INVALID), 0);
	cr_assert_str_eq(cow_dtype_name(COW_DTYPE_INVALID), "unknown");
	/* Valid dtypes are unchanged; BOOL is 0 and a BOOL tensor says so. */
	cr_assert_eq((int)COW_DTYPE_BOOL, 0);
	for (int d = 0; d < COW_DTYPE_COUNT; d++) {
		TT_OK(cow_tensor_zeros((cow_dtype_t)d, 1, (int64_t[]){2}, sys,
		    &t));
		cr_assert_eq(cow_tensor_dtype(t), (cow_dtype_t)d);
		cr_assert_neq(cow_tensor_dtype(t), COW_DTYPE_INVALID);
		cr_assert_gt(cow_dtype_size((cow_dtype_t)d), 0);
		cow_tensor_release(t);
	}
	/* It is refused wherever a dtype is taken. */
	TT_FAILS(cow_tensor_empty(COW_DTYPE_INVALID, 1, (int64_t[]){2}, sys,
	    &t), COW_EINVAL, "unknown dtype -1");
	TT_OK(cow_tensor_zeros(COW_DTYPE_UINT8, 1, (int64_t[]){8}, sys, &s));
	TT_FAILS(cow_tensor_from_storage(cow_tensor_storage(s),
	    COW_DTYPE_INVALID, 1, (int64_t[]){2}, NULL, 0, &t), COW_EINVAL,
	    "unknown dtype -1");
	cow_tensor_release(s);
}
