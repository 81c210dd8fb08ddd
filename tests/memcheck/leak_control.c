/*
 * Negative control for the memcheck tests: leaks one storage on purpose,
 * made through the allocator named by argv[1] ("system" or "default"), so
 * the valgrind wrapper must report it (the ctest entries expect failure).
 */
#include <stdio.h>
#include <string.h>

#include <cowstore/cowstore.h>

int
main(int argc, char **argv)
{
	cow_allocator_t *a = NULL; /* the default allocator */
	cow_storage_t *s;

	if (argc != 2 || (strcmp(argv[1], "system") != 0 &&
	    strcmp(argv[1], "default") != 0)) {
		fprintf(stderr, "usage: %s system|default\n", argv[0]);
		return 2;
	}
	if (strcmp(argv[1], "system") == 0)
		a = cow_allocator_system();
	if (cow_storage_new(100, a, &s) != COW_OK)
		return 2;
	s = NULL; /* the only reference is lost */
	printf("leaked one storage (%s allocator)\n", argv[1]);
	return 0;
}
