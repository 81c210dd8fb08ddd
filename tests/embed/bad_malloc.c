/*
 * bad_malloc.c - negative control: a "library" that defines malloc and
 * free, as an unprefixed jemalloc linked into libcowstore.a did. Linked
 * into the own-malloc host, the link must fail with a multiple definition.
 */
#include <stddef.h>

void *__libc_malloc(size_t);
void __libc_free(void *);

void *
malloc(size_t n)
{
	return __libc_malloc(n);
}

void
free(void *p)
{
	__libc_free(p);
}
