/* A program that uses the installed cowstore, test hooks (testing.h,
 * installed beside the other headers) included. */
#include <stdio.h>
#include <string.h>

#include <cowstore/cowstore.h>
#include <cowstore/testing.h>

int
main(void)
{
	cow_storage_t *a, *b;
	void *p;

	if (cow_storage_new(64, NULL, &a) != COW_OK ||
	    cow_storage_lazy_clone(a, &b) != COW_OK ||
	    cow_storage_mutable_data(b, &p) != COW_OK)
		return 1;
	memset(p, 1, 64);
	if (((const unsigned char *)cow_storage_const_data(a))[0] != 0)
		return 2;
	cow_storage_release(a);
	cow_storage_release(b);
	/* The package (CMake or pkg-config) told this program whether the
	 * library records MaybeOwned borrows. */
#ifdef COW_DEBUG_BORROWS
	if (!cow_borrow_debug_enabled())
		return 3;
#else
	if (cow_borrow_debug_enabled())
		return 4;
#endif
	printf("ok\n");
	return 0;
}
