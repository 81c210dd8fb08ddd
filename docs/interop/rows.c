/* rows.c - the rows 1, 2 and 4 of issue 25's table (docs/interop.md), with
 * only the API that existed before (11162cb): each prints PASS or FAIL.
 * Row 2 runs in a child (it died of SIGSEGV). Built and run against two
 * release builds by rows.sh. RO_FLAG is COW_STORAGE_READ_ONLY where it
 * exists, else 0. Row 4 fails in both: a kept pointer is safe only while
 * the storage is pinned (the test pinned_pointer_does_not_reach_a_snapshot
 * of tests/unit/test_external.c is the row with the pin). */
#define _DEFAULT_SOURCE
#include <cowstore/cowstore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
	unsigned char buf[4096];
	cow_storage_t *a, *b, *snap;
	void *p; int st;

	memset(buf, 7, sizeof buf);
	cow_storage_from_external(buf, sizeof buf, NULL, NULL, 0, &a);
	cow_storage_lazy_clone(a, &b);
	cow_storage_release(a);
	cow_storage_mutable_data(b, &p);
	memset(p, 1, sizeof buf);
	printf("row 1 (borrowed buffer clobbered): %s (p %s buf, buf[0] = %d)\n",
	    buf[0] == 7 ? "PASS" : "FAIL", p == buf ? "==" : "!=", buf[0]);
	cow_storage_release(b);

	if (fork() == 0) {
		unsigned char *m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		cow_storage_from_external(m, 4096, NULL, NULL, RO_FLAG, &a);
		if (cow_storage_lazy_clone(a, &b) == COW_OK) {
			cow_storage_mutable_data(b, &p); memset(p, 1, 4096);
			cow_storage_mutable_data(a, &p); memset(p, 1, 4096);
		}
		_exit(0);
	}
	wait(&st);
	printf("row 2 (PROT_READ mapping written): %s (%s)\n",
	    WIFSIGNALED(st) ? "FAIL" : "PASS",
	    WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "no signal");

	cow_storage_new(4096, NULL, &a);
	cow_storage_mutable_data(a, &p);          /* the engine keeps p */
	memset(p, 3, 4096);
	cow_storage_lazy_clone(a, &snap);         /* a snapshot */
	memset(p, 9, 4096);                       /* write through the kept pointer */
	printf("row 4 (cached pointer reaches the snapshot): %s (snapshot[0] = %d)\n",
	    ((const unsigned char *)cow_storage_const_data(snap))[0] == 3 ? "PASS" : "FAIL",
	    ((const unsigned char *)cow_storage_const_data(snap))[0]);
	return 0;
}
