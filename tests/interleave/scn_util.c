/*
 * scn_util.c - helpers of the interleaving checker's scenarios.
 */
#include <stdlib.h>

#include "scenario.h"

static void
ilv_ext_deleter(void *data, size_t nbytes, void *ctx)
{
	struct ilv_ext *ext = ctx;

	ilv_check(data == ext->data && nbytes == ext->nbytes,
	    "the deleter got other data than it was given");
	ext->calls++;
	ilv_check(ext->calls == 1, "the deleter is called %d times",
	    ext->calls);
	free(data);
}

cow_storage_t *
ilv_ext_storage(struct ilv_ext *ext, size_t nbytes, unsigned seed)
{
	cow_storage_t *s;

	ext->nbytes = nbytes;
	ext->calls = 0;
	ext->data = malloc(nbytes);
	ilv_check(ext->data != NULL, "out of memory (set-up)");
	ilv_fill(ext->data, nbytes, seed);
	ilv_check(cow_storage_from_external(ext->data, nbytes,
	    ilv_ext_deleter, ext, 0, &s) == COW_OK, "set-up: %s",
	    cow_last_error());
	return s;
}

void
ilv_fill(void *p, size_t n, unsigned seed)
{
	unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(seed * 131u + i * 7u + 1u);
}

bool
ilv_holds(const void *p, size_t n, unsigned seed)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != (unsigned char)(seed * 131u + i * 7u + 1u))
			return false;
	return true;
}

void *
ilv_state_new(size_t size)
{
	void *st = calloc(1, size);

	ilv_check(st != NULL, "out of memory (set-up)");
	return st;
}

void
ilv_state_free(void *st)
{
	free(st);
}

cow_stats_t
ilv_stats(void)
{
	cow_stats_t st;

	cow_stats_get(&st);
	return st;
}
