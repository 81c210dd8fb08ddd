/*
 * loops.c - the two protocol loops the boundary issue must not slow down,
 * through the public API only, for callgrind (instructions per iteration
 * from the difference of two iteration counts) and for timing.
 *
 *   loops clone N   N x (lazy clone of a 4 KiB storage, release the clone)
 *   loops steal N   N x (lazy clone, release the source, first write of the
 *                   clone: it holds the last share and steals)
 *
 * Built against a library by run-pair.sh; prints ns per iteration.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cowstore/cowstore.h>

static void
die(const char *what)
{
	fprintf(stderr, "loops: %s: %s\n", what, cow_last_error());
	exit(1);
}

int
main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 1000000;
	cow_storage_t *s, *c;
	struct timespec t0, t1;
	void *p;

	if (argc < 2 || cow_storage_new(4096, NULL, &s) != COW_OK)
		die("usage: loops clone|steal N");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (strcmp(argv[1], "clone") == 0) {
		for (long i = 0; i < n; i++) {
			if (cow_storage_lazy_clone(s, &c) != COW_OK)
				die("lazy clone");
			cow_storage_release(c);
		}
	} else {
		for (long i = 0; i < n; i++) {
			if (cow_storage_lazy_clone(s, &c) != COW_OK)
				die("lazy clone");
			cow_storage_release(s);
			if (cow_storage_mutable_data(c, &p) != COW_OK)
				die("steal");
			s = c;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%s %.2f ns\n", argv[1], ((t1.tv_sec - t0.tv_sec) * 1e9 +
	    (t1.tv_nsec - t0.tv_nsec)) / (double)n);
	cow_storage_release(s);
	return 0;
}
