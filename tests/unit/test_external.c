/*
 * Memory the library does not own (storage.h): owned and borrowed external
 * memory, read-only memory, pins, and tensors over external memory.
 * Regression tests for the boundary issue's table: each fails on a library
 * that writes borrowed memory through a clone, writes read-only memory, or
 * lets a snapshot share bytes a kept pointer writes.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <cowstore/testing.h>

#include "leak_fixture.h"

#define N 4096
#define SENTINEL_PTR ((void *)&sentinel)

static int sentinel;

TestSuite(external, .init = leak_setup, .fini = leak_teardown,
    .timeout = 30.0);

/* A storage borrowing @buf's N bytes (no deleter), with @flags. */
static cow_storage_t *
borrow_buf(unsigned char *buf, unsigned flags)
{
	cow_storage_t *s;

	cr_assert_eq(cow_storage_from_external_with_allocator(buf, N, NULL,
	    NULL, flags, sys, &s), COW_OK);
	return s;
}

/* Row 1: a clone of borrowed memory held the last share and stole it, so
 * its write landed in the caller's buffer. */
Test(external, borrowed_memory_is_never_stolen_by_a_clone)
{
	unsigned char buf[N];
	cow_storage_t *a, *b;
	void *p;

	cow_test_fill(buf, N, 1);
	a = borrow_buf(buf, 0);
	cr_assert_eq(cow_storage_lazy_clone(a, &b), COW_OK);
	cr_assert(cow_storage_shares_data(a, b), "borrowed memory is shared "
	    "lazily");
	cow_storage_release(a);
	cr_assert_eq(cow_storage_mutable_data(b, &p), COW_OK);
	cr_assert_neq(p, (void *)buf, "the last share stole borrowed memory");
	memset(p, 0xEE, N);
	cr_assert(cow_test_check(buf, N, 1), "the caller's buffer changed");
	cr_assert_eq(cow_test_stats().external_copies, 1);
	cr_assert_eq(cow_test_stats().materialize_steals, 0);
	cow_storage_release(b);
}

/* The storage the caller made over borrowed memory writes it in place:
 * while private, and after taking it back as the last share. */
Test(external, borrowed_memory_is_written_by_its_own_storage)
{
	unsigned char buf[N];
	cow_storage_t *a, *b;
	void *p;

	cow_test_fill(buf, N, 2);
	a = borrow_buf(buf, 0);
	cr_assert_eq(cow_storage_mutable_data(a, &p), COW_OK);
	cr_assert_eq(p, (void *)buf, "private: in place");
	cr_assert_eq(cow_storage_lazy_clone(a, &b), COW_OK);
	cow_storage_release(b);
	cr_assert_eq(cow_storage_mutable_data(a, &p), COW_OK);
	cr_assert_eq(p, (void *)buf, "last share: taken back in place");
	cr_assert_eq(cow_test_stats().materialize_steals, 1);
	/* Shared: its write copies, the clone keeps the memory. */
	cr_assert_eq(cow_storage_lazy_clone(a, &b), COW_OK);
	cr_assert_eq(cow_storage_mutable_data(a, &p), COW_OK);
	cr_assert_neq(p, (void *)buf);
	cr_assert_eq(cow_storage_const_data(b), (const void *)buf);
	cow_storage_release(a);
	cow_storage_release(b);
	cr_assert(cow_test_check(buf, N, 2));
}

/* Memory handed over with a deleter is the storages' own: a clone holding
 * the last share steals it, and the deleter runs once. */
Test(external, owned_memory_is_stolen_by_the_last_share)
{
	struct cow_test_deleter d = {0};
	cow_storage_t *a, *b;
	void *data = malloc(N), *p;

	cow_test_fill(data, N, 3);
	cr_assert_eq(cow_storage_from_external_with_allocator(data, N,
	    cow_test_deleter_fn, &d, 0, sys, &a), COW_OK);
	cr_assert_eq(cow_storage_lazy_clone(a, &b), COW_OK);
	cow_storage_release(a);
	cr_assert_eq(cow_storage_mutable_data(b, &p), COW_OK);
	cr_assert_eq(p, data);
	cr_assert_eq(cow_test_stats().external_copies, 0);
	cow_storage_release(b);
	cr_assert_eq(d.calls, 1);
}

static unsigned char *
map_read_only(size_t n, unsigned seed)
{
	unsigned char *m = mmap(NULL, n, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(m, MAP_FAILED);
	cow_test_fill(m, n, seed);
	cr_assert_eq(mprotect(m, n, PROT_READ), 0);
	return m;
}

static void
unmap(void *data, size_t nbytes, void *ctx)
{
	int *calls = ctx;

	(*calls)++;
	munmap(data, nbytes);
}

/* Row 2: a write through a storage over a PROT_READ mapping raised
 * SIGSEGV. Every storage's first write copies; the mapping is unchanged. */
Test(external, read_only_mapping_is_never_written)
{
	size_t n = (size_t)sysconf(_SC_PAGESIZE) * 4;
	unsigned char *m = map_read_only(n, 4);
	cow_storage_t *a, *b, *c;
	int unmapped = 0;
	void *p;

	cr_assert_eq(cow_storage_from_external_with_allocator(m, n, unmap,
	    &unmapped, COW_STORAGE_READ_ONLY, sys, &a), COW_OK);
	cr_assert(cow_storage_is_read_only(a));
	cr_assert_eq(cow_storage_lazy_clone(a, &b), COW_OK);
	cr_assert_eq(cow_storage_lazy_clone(a, &c), COW_OK);
	cr_assert_eq(cow_storage_const_data(b), (const void *)m, "reads "
	    "never copy");
	cr_assert_eq(cow_storage_mutable_data(b, &p), COW_OK);
	memset(p, 1, n);
	cow_storage_release(c);
	/* a holds the last share of the mapping: it copies too. */
	cr_assert_eq(cow_storage_mutable_data(a, &p), COW_OK);
	cr_assert_neq(p, (void *)m);
	cr_assert_eq(unmapped, 1, "the last share's copy gives the mapping "
	    "back");
	memset(p, 2, n);
	cr_assert_not(cow_storage_is_read_only(a));
	cr_assert_eq(cow_test_stats().external_copies, 2);
	cr_assert_eq(cow_test_stats().materialize_steals, 0);
	cow_storage_release(a);
	cow_storage_release(b);
}

Test(external, read_only_private_storage_copies_on_first_write)
{
	size_t n = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char *m = map_read_only(n, 5);
	cow_storage_t *a;
	int unmapped = 0;
	void *p;

	cr_assert_eq(cow_storage_from_external_with_allocator(m, n, unmap,
	    &unmapped, COW_STORAGE_READ_ONLY, sys, &a), COW_OK);
	cr_assert_eq(cow_storage_mutable_data(a, &p), COW_OK);
	cr_assert_neq(p, (void *)m);
	cr_assert(cow_test_check(p, n, 5), "the copy has the bytes");
	cr_assert_eq(unmapped, 1);
	((unsigned char *)p)[0] ^= 1;
	cr_assert_eq(cow_test_stats().materialize_copies, 1);
	cr_assert_eq(cow_test_stats().external_copies, 1);
	cow_storage_release(a);
	cr_assert_eq(unmapped, 1);
}

/* A zero-byte read-only storage: its first write hands the memory back
 * too, and after it the storage is an ordinary writable one. */
Test(external, empty_read_only_storage_gives_memory_back_on_write)
{
	struct cow_test_deleter d = {0};
	cow_storage_t *a;
	void *p = SENTINEL_PTR;

	cr_assert_eq(cow_storage_from_external_with_allocator(malloc(1), 0,
	    cow_test_deleter_fn, &d, COW_STORAGE_READ_ONLY, sys, &a), COW_OK);
	cr_assert(cow_storage_is_read_only(a));
	cr_assert_eq(cow_storage_mutable_data(a, &p), COW_OK);
	cr_assert_null(p);
	cr_assert_eq(d.calls, 1);
	cr_assert_not(cow_storage_is_read_only(a));
	cr_assert_eq(cow_test_stats().materialize_copies, 0, "nothing was copied");
	cow_storage_release(a);
	cr_assert_eq(d.calls, 1);
}

/* Borrowed read-only memory: no deleter, and never written. */
Test(external, borrowed_read_only_memory_stays_the_callers)
{
	static const unsigned char text[] = "immutable bytes";
	cow_storage_t *a;
	void *p;

	cr_assert_eq(cow_storage_from_external_with_allocator((void *)text,
	    sizeof text, NULL, NULL, COW_STORAGE_READ_ONLY, sys, &a), COW_OK);
	cr_assert_eq(cow_storage_mutable_data(a, &p), COW_OK);
	cr_assert_neq(p, (const void *)text);
	cr_assert_str_eq(p, "immutable bytes");
	cow_storage_release(a);
}

/* Row 3: the only opt-out made every clone eager. Borrowed and read-only
 * memory are shared lazily: no eager copy. */
Test(external, borrowed_and_read_only_memory_clone_lazily)
{
	unsigned char buf[N];
	cow_storage_t *a, *b, *r, *rc;

	a = borrow_buf(buf, 0);
	r = borrow_buf(buf, COW_STORAGE_READ_ONLY);
	cr_assert_eq(cow_storage_lazy_clone(a, &b), COW_OK);
	cr_assert_eq(cow_storage_lazy_clone(r, &rc), COW_OK);
	cr_assert(cow_storage_shares_data(a, b));
	cr_assert(cow_storage_shares_data(r, rc));
	cr_assert_eq(cow_test_stats().eager_fallbacks, 0);
	cr_assert_eq(cow_test_stats().bytes_copied, 0);
	cow_storage_release(a);
	cow_storage_release(b);
	cow_storage_release(r);
	cow_storage_release(rc);
}

/* Row 4: a pointer kept from mutable_data, a snapshot, a write through the
 * pointer: the snapshot changed. Pinned, the snapshot keeps its bytes. */
Test(external, pinned_pointer_does_not_reach_a_snapshot)
{
	cow_storage_t *s = cow_test_storage(N, sys, 6), *snap;
	unsigned char *p;

	cr_assert_eq(cow_storage_pin(s, (void **)&p), COW_OK);
	cr_assert(cow_storage_is_pinned(s));
	cr_assert_eq(cow_storage_lazy_clone(s, &snap), COW_OK);
	cr_assert_not(cow_storage_shares_data(s, snap));
	memset(p, 0x5A, N);
	cr_assert(cow_test_check(cow_storage_const_data(snap), N, 6),
	    "the snapshot changed under a pinned pointer");
	cr_assert_eq(cow_test_stats().pinned_clones, 1);
	cr_assert_eq(cow_test_stats().eager_fallbacks, 1);
	cr_assert_eq(cow_storage_unpin(s), COW_OK);
	cr_assert_not(cow_storage_is_pinned(s));
	cow_storage_release(snap);
	cow_storage_release(s);
}

/* Unpinned, lazy clones share again; pins nest; unpinning an unpinned
 * storage is an error that changes nothing. */
Test(external, pins_nest_and_unpin_restores_lazy_clones)
{
	cow_storage_t *s = cow_test_storage(N, sys, 7), *c;
	void *p1, *p2;

	cr_assert_eq(cow_storage_unpin(s), COW_EINVAL);
	cr_assert(strstr(cow_last_error(), "not pinned") != NULL);
	cr_assert_eq(cow_storage_pin(s, &p1), COW_OK);
	cr_assert_eq(cow_storage_pin(s, &p2), COW_OK);
	cr_assert_eq(p1, p2);
	cr_assert_eq(cow_storage_unpin(s), COW_OK);
	cr_assert(cow_storage_is_pinned(s));
	cr_assert_eq(cow_storage_unpin(s), COW_OK);
	cr_assert_not(cow_storage_is_pinned(s));
	cr_assert_eq(cow_storage_lazy_clone(s, &c), COW_OK);
	cr_assert(cow_storage_shares_data(s, c));
	cr_assert_eq(cow_test_stats().pinned_clones, 0);
	cow_storage_release(c);
	cow_storage_release(s);
}

/* A pin materialises a storage that shares its data: the pointer is the
 * storage's own, and the earlier clone keeps the old bytes. */
Test(external, pin_materialises_a_shared_storage)
{
	cow_storage_t *s = cow_test_storage(N, sys, 8), *c;
	unsigned char *p;

	cr_assert_eq(cow_storage_lazy_clone(s, &c), COW_OK);
	cr_assert_eq(cow_storage_pin(s, (void **)&p), COW_OK);
	cr_assert_not(cow_storage_shares_data(s, c));
	memset(p, 0, N);
	cr_assert(cow_test_check(cow_storage_const_data(c), N, 8));
	cr_assert_eq(cow_storage_unpin(s), COW_OK);
	cow_storage_release(c);
	cow_storage_release(s);
}

/* The owner of borrowed memory pins its storage to write the memory
 * directly: in place, refused while older clones still share it. */
Test(external, pin_of_borrowed_memory_is_in_place_or_busy)
{
	unsigned char buf[N];
	cow_storage_t *a, *b;
	void *p = NULL;

	cow_test_fill(buf, N, 9);
	a = borrow_buf(buf, 0);
	cr_assert_eq(cow_storage_lazy_clone(a, &b), COW_OK);
	cr_assert_eq(cow_storage_pin(a, &p), COW_EBUSY);
	cr_assert(strstr(cow_last_error(), "1 lazy clone") != NULL, "%s",
	    cow_last_error());
	cr_assert_null(p);
	cr_assert(cow_storage_shares_data(a, b), "a refused pin changed "
	    "nothing");
	cow_storage_release(b);
	cr_assert_eq(cow_storage_pin(a, &p), COW_OK);
	cr_assert_eq(p, (void *)buf);
	cr_assert_eq(cow_storage_lazy_clone(a, &b), COW_OK);
	buf[0] ^= 0xFF; /* the owner writes directly */
	cr_assert_neq(((const unsigned char *)cow_storage_const_data(b))[0],
	    buf[0]);
	cr_assert_eq(cow_storage_unpin(a), COW_OK);
	cow_storage_release(a);
	cow_storage_release(b);
}

/* COW_STORAGE_NOT_SHAREABLE is a pin for life. */
Test(external, not_shareable_is_pinned_for_life)
{
	unsigned char buf[N];
	cow_storage_t *a, *b;

	a = borrow_buf(buf, COW_STORAGE_NOT_SHAREABLE);
	cr_assert(cow_storage_is_pinned(a));
	cr_assert_eq(cow_storage_unpin(a), COW_EINVAL);
	cr_assert_eq(cow_storage_lazy_clone(a, &b), COW_OK);
	cr_assert_not(cow_storage_shares_data(a, b));
	cr_assert_eq(cow_test_stats().pinned_clones, 1);
	cow_storage_release(a);
	cow_storage_release(b);
}

Test(external, unknown_flag_is_refused)
{
	unsigned char buf[8];
	cow_storage_t *s = NULL;

	cr_assert_eq(cow_storage_from_external(buf, 8, NULL, NULL, 1u << 7,
	    &s), COW_EINVAL);
	cr_assert(strstr(cow_last_error(), "0x80") != NULL);
	cr_assert_null(s);
}

Test(external, pin_errors)
{
	void *p;

	cr_assert_eq(cow_storage_pin(NULL, &p), COW_EINVAL);
	cr_assert_eq(cow_storage_unpin(NULL), COW_EINVAL);
	cr_assert_not(cow_storage_is_pinned(NULL));
	cr_assert_not(cow_storage_is_read_only(NULL));
}

/* ------------------------------------------------------------------ */
/* Tensors over external memory.                                       */

Test(external, tensor_over_external_memory_is_zero_copy)
{
	float data[12];
	int64_t sizes[2] = {3, 2}, strides[2] = {4, 1};
	struct cow_test_deleter d = {0};
	cow_tensor_t *t;
	double v;
	float *heap = malloc(sizeof data);

	for (int i = 0; i < 12; i++)
		heap[i] = (float)i;
	memcpy(data, heap, sizeof data);
	/* Rows of 4 floats, the first 2 of each, starting at element 1. */
	cr_assert_eq(cow_tensor_from_external(heap, COW_DTYPE_FLOAT32, 2,
	    sizes, strides, 1, cow_test_deleter_fn, &d, 0, sys, &t), COW_OK);
	cr_assert_eq(cow_tensor_const_data(t), (const void *)(heap + 1));
	/* The storage spans the bytes the layout reaches: up to element
	 * 1 + 2 * 4 + 1, inclusive. */
	cr_assert_eq(cow_storage_nbytes(cow_tensor_storage(t)),
	    11 * sizeof(float));
	cr_assert_eq(cow_tensor_get_f64(t, (int64_t[]){2, 1}, &v), COW_OK);
	cr_assert_eq(v, 10.0);
	cow_tensor_release(t);
	cr_assert_eq(d.calls, 1);
	cr_assert_eq(d.last_nbytes, 11 * sizeof(float));
}

Test(external, tensor_over_external_memory_errors_take_nothing)
{
	int64_t sizes[1] = {4}, neg[1] = {-1}, huge[2] = {INT64_MAX / 2, 3};
	struct cow_test_deleter d = {0};
	cow_tensor_t *t = NULL;
	char *buf = malloc(64);

	cr_assert_eq(cow_tensor_from_external(buf + 1, COW_DTYPE_INT32, 1,
	    sizes, NULL, 0, cow_test_deleter_fn, &d, 0, sys, &t), COW_EINVAL);
	cr_assert(strstr(cow_last_error(), "aligned to 4 bytes") != NULL,
	    "%s", cow_last_error());
	cr_assert_eq(cow_tensor_from_external(NULL, COW_DTYPE_INT32, 1,
	    sizes, NULL, 0, NULL, NULL, 0, sys, &t), COW_EINVAL);
	cr_assert_eq(cow_tensor_from_external(buf, COW_DTYPE_INT32, 1,
	    sizes, neg, 0, NULL, NULL, 0, sys, &t), COW_EINVAL);
	cr_assert_eq(cow_tensor_from_external(buf, COW_DTYPE_INT32, 1,
	    sizes, NULL, -1, NULL, NULL, 0, sys, &t), COW_EINVAL);
	cr_assert_eq(cow_tensor_from_external(buf, COW_DTYPE_INT32, 2,
	    huge, NULL, 0, NULL, NULL, 0, sys, &t), COW_EOVERFLOW);
	cr_assert_eq(cow_tensor_from_external(buf, (cow_dtype_t)99, 1,
	    sizes, NULL, 0, NULL, NULL, 0, sys, &t), COW_EINVAL);
	cr_assert_eq(cow_tensor_from_external(buf, COW_DTYPE_INT32, 1,
	    sizes, NULL, 0, NULL, NULL, 1u << 9, sys, &t), COW_EINVAL);
	cr_assert_eq(cow_tensor_from_external(buf, COW_DTYPE_INT32, 1,
	    sizes, NULL, 0, NULL, NULL, 0, sys, NULL), COW_EINVAL);
	cr_assert_null(t);
	cr_assert_eq(d.calls, 0);
	/* Nothing reached: NULL data is fine. */
	cr_assert_eq(cow_tensor_from_external(NULL, COW_DTYPE_INT32, 1,
	    (int64_t[]){0}, NULL, 0, NULL, NULL, 0, sys, &t), COW_OK);
	cr_assert_eq(cow_tensor_numel(t), 0);
	cow_tensor_release(t);
	free(buf);
}

/* A tensor creation that fails after the storage was made leaves the
 * memory with the caller: the deleter is not called. */
Test(external, tensor_over_external_memory_failure_keeps_memory,
    .init = fault_setup, .fini = fault_teardown)
{
	struct cow_test_deleter d = {0};
	int64_t sizes[1] = {8};
	cow_tensor_t *t = NULL;
	void *buf = malloc(64);

	/* The storage struct succeeds; the tensor struct fails. */
	cr_assert_eq(cow_allocator_fault_fail_nth(fa, 2), COW_OK);
	cr_assert_eq(cow_tensor_from_external(buf, COW_DTYPE_INT64, 1, sizes,
	    NULL, 0, cow_test_deleter_fn, &d, 0, fa, &t), COW_ENOMEM);
	cr_assert_null(t);
	cr_assert_eq(d.calls, 0, "a failed creation called the deleter");
	cr_assert_eq(cow_allocator_fault_disarm(fa), COW_OK);
	free(buf);
}

/* A read-only tensor over external memory: reads in place, the first
 * write copies. */
Test(external, read_only_tensor_copies_on_write)
{
	int32_t data[4] = {1, 2, 3, 4};
	int64_t sizes[1] = {4};
	cow_tensor_t *t, *c;
	int64_t v;

	cr_assert_eq(cow_tensor_from_external(data, COW_DTYPE_INT32, 1, sizes,
	    NULL, 0, NULL, NULL, COW_STORAGE_READ_ONLY, sys, &t), COW_OK);
	cr_assert_eq(cow_tensor_lazy_clone(t, &c), COW_OK);
	cr_assert_eq(cow_tensor_fill_(t, 9.0), COW_OK);
	cr_assert_eq(cow_tensor_fill_(c, 7.0), COW_OK);
	cr_assert_eq(data[0], 1);
	cr_assert_eq(data[3], 4);
	cr_assert_eq(cow_tensor_get_i64(t, (int64_t[]){3}, &v), COW_OK);
	cr_assert_eq(v, 9);
	cow_tensor_release(t);
	cow_tensor_release(c);
}

/* cow_tensor_pin: the element address for writing, and snapshots taken
 * meanwhile do not share it. */
Test(external, tensor_pin_keeps_snapshots_apart)
{
	int64_t sizes[1] = {16};
	cow_tensor_t *t, *v, *snap;
	float *p;
	double x;

	cr_assert_eq(cow_tensor_full(COW_DTYPE_FLOAT32, 1, sizes, 3.0, sys,
	    &t), COW_OK);
	cr_assert_eq(cow_tensor_slice(t, 0, 4, 16, 1, &v), COW_OK);
	cr_assert_eq(cow_tensor_pin(v, (void **)&p), COW_OK);
	cr_assert_eq((const void *)p, cow_tensor_const_data(v));
	cr_assert_eq(cow_tensor_lazy_clone(t, &snap), COW_OK);
	p[0] = -1.0f;
	cr_assert_eq(cow_tensor_get_f64(snap, (int64_t[]){4}, &x), COW_OK);
	cr_assert_eq(x, 3.0, "a snapshot of a pinned tensor changed");
	cr_assert_eq(cow_tensor_unpin(t), COW_OK, "the pin is the storage's");
	cr_assert_eq(cow_tensor_unpin(v), COW_EINVAL);
	cow_tensor_release(snap);
	cow_tensor_release(v);
	cow_tensor_release(t);
}

/* On a thread that creates functional tensors, a tensor over external
 * memory joins the new storage's alias group, and its writes reach the
 * memory (the storage made over borrowed memory writes it in place). */
Test(external, functional_tensor_over_borrowed_memory_writes_it)
{
	int32_t data[4] = {1, 2, 3, 4};
	cow_tensor_t *t;
	bool previous;

	cr_assert_eq(cow_functional_mode_set_thread(true, &previous), COW_OK);
	cr_assert_eq(cow_tensor_from_external(data, COW_DTYPE_INT32, 1,
	    (int64_t[]){4}, NULL, 0, NULL, NULL, 0, sys, &t), COW_OK);
	cr_assert(cow_tensor_is_functional(t));
	cr_assert_eq(cow_tensor_add_scalar_(t, 10.0), COW_OK);
	cr_assert_eq(data[0], 11);
	cr_assert_eq(data[3], 14);
	cow_tensor_release(t);
	cr_assert_eq(cow_functional_mode_set_thread(previous, NULL), COW_OK);
}
