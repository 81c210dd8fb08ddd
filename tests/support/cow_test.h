/*
 * cow_test.h - helpers shared by the tests: a counting deleter, byte
 * patterns, allocator counters.
 */
#ifndef COW_TEST_H
#define COW_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cowstore/cowstore.h>

/* A deleter that counts its calls and frees with free(). */
struct cow_test_deleter {
	int calls;
	void *last_data;
	size_t last_nbytes;
};

static inline void
cow_test_deleter_fn(void *data, size_t nbytes, void *ctx)
{
	struct cow_test_deleter *d = ctx;

	d->calls++;
	d->last_data = data;
	d->last_nbytes = nbytes;
	free(data);
}

/* Fill with a pattern derived from @seed. */
static inline void
cow_test_fill(void *p, size_t n, unsigned seed)
{
	unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 8));
}

static inline bool
cow_test_check(const void *p, size_t n, unsigned seed)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != (unsigned char)(seed * 131u + i * 7u + (i >> 8)))
			return false;
	return true;
}

/* The process-wide COW statistics since the last cow_stats_reset(). */
static inline cow_stats_t
cow_test_stats(void)
{
	cow_stats_t st;

	cow_stats_get(&st);
	return st;
}

static inline cow_alloc_stats_t
cow_test_alloc_stats(const cow_allocator_t *a)
{
	cow_alloc_stats_t st;

	cow_allocator_stats(a, &st);
	return st;
}

/* A private storage of @n bytes filled with pattern @seed. */
static inline cow_storage_t *
cow_test_storage(size_t n, cow_allocator_t *a, unsigned seed)
{
	cow_storage_t *s = NULL;
	void *p;

	if (cow_storage_new(n, a, &s) != COW_OK)
		abort();
	if (cow_storage_mutable_data(s, &p) != COW_OK)
		abort();
	cow_test_fill(p, n, seed);
	return s;
}

#endif
