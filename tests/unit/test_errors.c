/*
 * Bad input: a status and a message naming the value, never a crash.
 */
#include <pthread.h>

#include <criterion/criterion.h>

#include "cow_test.h"

TestSuite(errors, .timeout = 30.0);

Test(errors, status_names)
{
	cr_assert_str_eq(cow_status_str(COW_OK), "COW_OK");
	cr_assert_str_eq(cow_status_str(COW_ENOMEM), "COW_ENOMEM");
	cr_assert_str_eq(cow_status_str(COW_EOVERFLOW), "COW_EOVERFLOW");
	cr_assert_str_eq(cow_status_str((cow_status_t)12345), "COW_E?");
}

Test(errors, null_out_pointers)
{
	cow_storage_t *s = cow_test_storage(16, NULL, 1);

	cr_assert_eq(cow_storage_new(16, NULL, NULL), COW_EINVAL);
	cr_assert(strstr(cow_last_error(), "cow_storage_new") != NULL,
	    "message: %s", cow_last_error());
	cr_assert(strstr(cow_last_error(), "out") != NULL);
	cr_assert_eq(cow_storage_lazy_clone(NULL, &s), COW_EINVAL);
	cr_assert_eq(cow_storage_lazy_clone(s, NULL), COW_EINVAL);
	cr_assert_eq(cow_storage_mutable_data(NULL, (void **)&s), COW_EINVAL);
	cr_assert_eq(cow_storage_mutable_data(s, NULL), COW_EINVAL);
	cr_assert_eq(cow_storage_materialize(NULL), COW_EINVAL);
	cr_assert_eq(cow_storage_from_external(NULL, 0, NULL, NULL, 0, NULL),
	    COW_EINVAL);
	cow_storage_release(s);
}

Test(errors, null_storage_queries)
{
	cow_storage_retain(NULL);
	cow_storage_release(NULL);
	cr_assert_eq(cow_storage_nbytes(NULL), 0);
	cr_assert_null(cow_storage_const_data(NULL));
	cr_assert_not(cow_storage_is_cow(NULL));
	cr_assert_eq(cow_storage_share_count(NULL), 0);
	cr_assert_not(cow_storage_shares_data(NULL, NULL));
	cr_assert_null(cow_storage_allocator(NULL));
	cr_assert_str_eq(cow_allocator_name(NULL), "");
	cow_stats_get(NULL);
}

Test(errors, overflowing_nbytes)
{
	cow_storage_t *s = NULL;

	cr_assert_eq(cow_storage_new(SIZE_MAX, NULL, &s), COW_EOVERFLOW);
	cr_assert_null(s);
	cr_assert(strstr(cow_last_error(), "18446744073709551615") != NULL,
	    "message names the value: %s", cow_last_error());
	cr_assert_eq(cow_storage_new((size_t)PTRDIFF_MAX + 1, NULL, &s),
	    COW_EOVERFLOW);
	cr_assert_eq(cow_storage_from_external((void *)&s, SIZE_MAX, NULL,
	    NULL, 0, &s), COW_EOVERFLOW);
	cr_assert_null(s);
}

Test(errors, impossible_allocation_is_enomem)
{
	cow_storage_t *s = NULL;

	/* Within the size limit but beyond any machine: a clean ENOMEM. */
	cr_assert_eq(cow_storage_new((size_t)1 << 62, cow_allocator_system(),
	    &s), COW_ENOMEM);
	cr_assert_null(s);
	cr_assert(strstr(cow_last_error(), "4611686018427387904") != NULL,
	    "%s", cow_last_error());
	cr_assert_eq(cow_test_alloc_stats(cow_allocator_system()).live_bytes,
	    0);
}

Test(errors, external_bad_arguments)
{
	cow_storage_t *s = NULL;
	char buf[8];

	cr_assert_eq(cow_storage_from_external(NULL, 8, NULL, NULL, 0, &s),
	    COW_EINVAL);
	cr_assert(strstr(cow_last_error(), "8") != NULL);
	cr_assert_eq(cow_storage_from_external(buf, 8, NULL, NULL, 0x80, &s),
	    COW_EINVAL);
	cr_assert(strstr(cow_last_error(), "0x80") != NULL, "%s",
	    cow_last_error());
	cr_assert_null(s);
}

static void *
fail_in_thread(void *arg)
{
	(void)arg;
	cow_storage_new(SIZE_MAX, NULL, NULL);
	return NULL;
}

Test(errors, message_is_thread_local)
{
	pthread_t t;

	cr_assert_eq(cow_storage_new(SIZE_MAX, NULL, (cow_storage_t **)&t),
	    COW_EOVERFLOW);
	char mine[256];
	strncpy(mine, cow_last_error(), sizeof mine - 1);
	mine[sizeof mine - 1] = 0;
	pthread_create(&t, NULL, fail_in_thread, NULL);
	pthread_join(t, NULL);
	cr_assert_str_eq(cow_last_error(), mine);
}

/* A call that succeeds records no message: the last failure's message
 * stays, even through paths that try something and fall back (the default
 * allocator's jemalloc probe, reshape of a non-viewable layout, an eager
 * clone of an unshareable storage, the functional layer). */
Test(errors, success_records_nothing)
{
	cow_storage_t *s = NULL, *c, *e;
	cow_tensor_t *t, *tt, *r, *f;
	char buf[8] = {0};
	char failed[256];

	cr_assert_eq(cow_storage_new(SIZE_MAX, NULL, &s), COW_EOVERFLOW);
	snprintf(failed, sizeof failed, "%s", cow_last_error());
	cr_assert_str_not_empty(failed);

	cr_assert_eq(cow_storage_new(64, NULL, &s), COW_OK);
	cr_assert_eq(cow_storage_lazy_clone(s, &c), COW_OK);
	cr_assert_eq(cow_storage_materialize(c), COW_OK);
	cr_assert_eq(cow_storage_from_external(buf, sizeof buf, NULL, NULL,
	    COW_STORAGE_NOT_SHAREABLE, &e), COW_OK);
	cow_storage_release(c);
	cr_assert_eq(cow_storage_lazy_clone(e, &c), COW_OK);
	cr_assert_eq(cow_tensor_arange(COW_DTYPE_INT32, 6, NULL, &t), COW_OK);
	cr_assert_eq(cow_tensor_view(t, 2, (int64_t[]){2, 3}, &r), COW_OK);
	cr_assert_eq(cow_tensor_transpose(r, 0, 1, &tt), COW_OK);
	cow_tensor_release(r);
	cr_assert_eq(cow_tensor_reshape(tt, 1, (int64_t[]){6}, &r), COW_OK);
	cr_assert_eq(cow_tensor_add(tt, tt, &f), COW_OK);
	cow_tensor_release(f);
	cr_assert_eq(cow_functional_wrap(tt, NULL, &f), COW_OK);
	cr_assert_eq(cow_tensor_add_scalar_(f, 1), COW_OK);
	cow_tensor_release(f);

	cr_assert_str_eq(cow_last_error(), failed);
	cow_tensor_release(r);
	cow_tensor_release(tt);
	cow_tensor_release(t);
	cow_storage_release(c);
	cow_storage_release(e);
	cow_storage_release(s);
}
