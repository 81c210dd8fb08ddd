/*
 * Negative control for the memcheck tests: leaks on purpose, so the
 * valgrind wrapper must report it (the ctest entry expects failure).
 */
#include <stdio.h>

#include <cowstore/cowstore.h>

int
main(void)
{
	cow_storage_t *s;

	if (cow_storage_new(100, cow_allocator_system(), &s) != COW_OK)
		return 2;
	s = NULL; /* the only reference is lost */
	printf("leaked one storage\n");
	return 0;
}
