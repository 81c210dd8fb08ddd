/*
 * static_host.c - a host linked with libcowstore.a and nothing but
 * -lpthread -lm (tests/embed/check_static_host.cmake builds it).
 *
 *   static_host libc  the host's malloc stays the C library's: dladdr names
 *                     libc for malloc, and mallinfo2 counts a 50 MiB malloc.
 *   static_host own   built with -DHOST_OWN_MALLOC: the host defines its own
 *                     malloc family (counting, then handing the call to
 *                     glibc's __libc_* functions); it links, and its malloc
 *                     is the one called, by the host and by cowstore's
 *                     system allocator.
 * Both also run lazy clone, materialise and release through the default
 * allocator. The negative controls build `libc` with -DHOST_OWN_MALLOC (a
 * replaced malloc must be caught) and `own` with bad_malloc.c (a library
 * that defines malloc must fail to link).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cowstore/cowstore.h>

/* volatile: GCC assumes the builtin malloc changes no global. */
static volatile unsigned long host_calls;
/* Keeps the compiler from eliding a malloc/free pair. */
static void *volatile host_keep;

#ifdef HOST_OWN_MALLOC
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void __libc_free(void *);

void *
malloc(size_t n)
{
	host_calls++;
	return __libc_malloc(n);
}

void *
calloc(size_t k, size_t n)
{
	host_calls++;
	return __libc_calloc(k, n);
}

void *
realloc(void *p, size_t n)
{
	host_calls++;
	return __libc_realloc(p, n);
}

void
free(void *p)
{
	__libc_free(p);
}

void *
memalign(size_t align, size_t n)
{
	host_calls++;
	return __libc_memalign(align, n);
}

void *
aligned_alloc(size_t align, size_t n)
{
	host_calls++;
	return __libc_memalign(align, n);
}

int
posix_memalign(void **out, size_t align, size_t n)
{
	void *p;

	host_calls++;
	if ((p = __libc_memalign(align, n)) == NULL)
		return ENOMEM;
	*out = p;
	return 0;
}
#endif

static int
fail(const char *what)
{
	fprintf(stderr, "static host: FAIL: %s\n", what);
	return 1;
}

/* Lazy clone, materialise, release through @a (NULL: the default). */
static int
exercise(cow_allocator_t *a)
{
	cow_storage_t *s, *c;
	void *p;

	if (cow_storage_new((size_t)1 << 20, a, &s) != COW_OK ||
	    cow_storage_lazy_clone(s, &c) != COW_OK ||
	    cow_storage_mutable_data(c, &p) != COW_OK)
		return fail(cow_last_error());
	memset(p, 1, (size_t)1 << 20);
	if (((const unsigned char *)cow_storage_const_data(s))[0] != 0)
		return fail("a write through a lazy clone reached its source");
	cow_storage_release(s);
	cow_storage_release(c);
	return 0;
}

static int
check_libc(void)
{
	void *(*fn)(size_t) = malloc;
	const size_t big = (size_t)50 << 20;
	struct mallinfo2 before, after;
	Dl_info info;
	void *addr;

	memcpy(&addr, &fn, sizeof addr); /* ISO C has no such cast */
	if (dladdr(addr, &info) == 0 || info.dli_fname == NULL)
		return fail("dladdr(malloc) found no object");
	if (strstr(info.dli_fname, "libc.so") == NULL) {
		fprintf(stderr, "static host: FAIL: malloc is not the C "
		    "library's: it is in %s\n", info.dli_fname);
		return 1;
	}
	before = mallinfo2();
	/* Through a volatile pointer: compilers may drop an unused malloc. */
	if ((host_keep = fn(big)) == NULL)
		return fail("malloc(50 MiB)");
	after = mallinfo2();
	if (after.hblkhd + after.arena < before.hblkhd + before.arena + big) {
		fprintf(stderr, "static host: FAIL: mallinfo2 did not count a "
		    "50 MiB malloc (%zu -> %zu bytes)\n",
		    before.hblkhd + before.arena, after.hblkhd + after.arena);
		return 1;
	}
	free(host_keep);
	printf("static host: malloc is in %s; mallinfo2 counted 50 MiB\n",
	    info.dli_fname);
	return 0;
}

static int
check_own(void)
{
	unsigned long before = host_calls;

	host_keep = malloc(100);
	free(host_keep);
	if (host_calls != before + 1)
		return fail("the host's own malloc was not called");
	before = host_calls;
	if (exercise(cow_allocator_system()) != 0)
		return 1;
	if (host_calls == before)
		return fail("cowstore's system allocator did not reach the "
		    "host's malloc");
	printf("static host: the host's malloc served %lu calls\n",
	    host_calls);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc != 2)
		return fail("usage: static_host libc|own");
	if (exercise(NULL) != 0)
		return 1;
	if (strcmp(argv[1], "libc") == 0 && check_libc() != 0)
		return 1;
	if (strcmp(argv[1], "own") == 0 && check_own() != 0)
		return 1;
	printf("static host: ok (default allocator '%s')\n",
	    cow_allocator_name(cow_allocator_default()));
	return 0;
}
