/*
 * trip.c - drives one path of the library to where a debug assert
 * (core/die.h, COW__ASSERT) checks an invariant, in a child process.
 *
 *     assert_trip MODE                  the path must run clean
 *     assert_trip MODE "invariant ..."  the child must die of SIGABRT with
 *                                       that message (a fault variant,
 *                                       tests/faults/, broke the invariant)
 *
 * The same program and mode run against the correct debug library prove
 * that the path itself is legal: only the fault trips the assert.
 */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cowstore/cowstore.h>

#define CHECK(call) do { \
	if ((call) != COW_OK) { \
		fprintf(stderr, "%s failed: %s\n", #call, cow_last_error()); \
		exit(2); \
	} \
} while (0)

static void
write_storage(cow_storage_t *s)
{
	void *p;

	CHECK(cow_storage_mutable_data(s, &p));
	memset(p, 7, cow_storage_nbytes(s));
}

/* A new storage of 1 KiB and a lazy clone of it. */
static void
new_and_clone(cow_storage_t **s, cow_storage_t **c)
{
	CHECK(cow_storage_new(1024, NULL, s));
	CHECK(cow_storage_lazy_clone(*s, c));
}

/* A copier: the clone's first write copies while the source shares. */
static void
mode_copy(void)
{
	cow_storage_t *s, *c;

	new_and_clone(&s, &c);
	write_storage(c);
	cow_storage_release(c);
	cow_storage_release(s);
}

/* [KEEP]: the last share of read-only memory copies, then waits for
 * copiers and frees the context. */
static void
mode_keep(void)
{
	static char bytes[1024];
	cow_storage_t *s, *c;

	CHECK(cow_storage_from_external(bytes, sizeof bytes, NULL, NULL,
	    COW_STORAGE_READ_ONLY, &s));
	CHECK(cow_storage_lazy_clone(s, &c));
	cow_storage_release(s);
	write_storage(c);
	cow_storage_release(c);
}

/* Three storages on one context, released one by one. */
static void
mode_share(void)
{
	cow_storage_t *s, *c1, *c2;

	new_and_clone(&s, &c1);
	CHECK(cow_storage_lazy_clone(s, &c2));
	cow_storage_release(c1);
	cow_storage_release(s);
	cow_storage_release(c2);
}

/* A steal, then a second write of the same storage. */
static void
mode_stolen(void)
{
	cow_storage_t *s, *c;

	new_and_clone(&s, &c);
	cow_storage_release(s);
	write_storage(c);
	write_storage(c);
	cow_storage_release(c);
}

/* A lazy clone of a pinned storage. */
static void
mode_pin(void)
{
	cow_storage_t *s, *c;
	void *p;

	CHECK(cow_storage_new(1024, NULL, &s));
	CHECK(cow_storage_pin(s, &p));
	CHECK(cow_storage_lazy_clone(s, &c));
	cow_storage_release(c);
	CHECK(cow_storage_unpin(s));
	cow_storage_release(s);
}

static void *
user_alloc(void *state, size_t nbytes, size_t alignment)
{
	void *p = NULL;

	(void)state;
	return posix_memalign(&p, alignment < sizeof(void *) ?
	    sizeof(void *) : alignment, nbytes) == 0 ? p : NULL;
}

static void
user_free(void *state, void *ptr, size_t nbytes, size_t alignment)
{
	(void)state;
	(void)nbytes;
	(void)alignment;
	free(ptr);
}

static void *
user_alloc_zeroed(void *state, size_t nbytes, size_t alignment)
{
	void *p = user_alloc(state, nbytes, alignment);

	if (p != NULL)
		memset(p, 0, nbytes);
	return p;
}

/* A large block of a user allocator with a limit: charged and given back
 * exactly. */
static void
mode_budget(void)
{
	static const cow_allocator_ops_t ops = {
		user_alloc, user_free, user_alloc_zeroed
	};
	cow_allocator_t *a;
	cow_storage_t *s;

	CHECK(cow_allocator_new(&ops, NULL, "trip", &a));
	CHECK(cow_allocator_set_limit(a, (size_t)64 << 20));
	CHECK(cow_storage_new((size_t)1 << 20, a, &s));
	cow_storage_release(s);
	CHECK(cow_allocator_destroy(a));
}

/* Writes through a tensor whose storage is shadowed (a reshape in
 * COW_RESHAPE_WARN mode). */
static void
mode_generation(void)
{
	int64_t sizes[2] = {2, 2}, flat[1] = {4}, at[2] = {0, 0};
	cow_tensor_t *t, *r;

	CHECK(cow_reshape_mode_set(COW_RESHAPE_WARN));
	CHECK(cow_tensor_zeros(COW_DTYPE_FLOAT32, 2, sizes, NULL, &t));
	CHECK(cow_tensor_reshape(t, 1, flat, &r));
	for (int i = 0; i < 3; i++)
		CHECK(cow_tensor_set_f64(t, at, i));
	cow_tensor_release(r);
	cow_tensor_release(t);
}

static const struct {
	const char *name;
	void (*run)(void);
} modes[] = {
	{"copy", mode_copy}, {"keep", mode_keep}, {"share", mode_share},
	{"stolen", mode_stolen}, {"pin", mode_pin}, {"budget", mode_budget},
	{"generation", mode_generation},
};

int
main(int argc, char **argv)
{
	const char *expect = argc > 2 ? argv[2] : NULL;
	char out[4096];
	size_t len = 0;
	ssize_t n;
	int fds[2], status;
	void (*run)(void) = NULL;
	pid_t pid;

	for (size_t i = 0; argc > 1 && i < sizeof modes / sizeof modes[0]; i++)
		if (strcmp(argv[1], modes[i].name) == 0)
			run = modes[i].run;
	if (run == NULL) {
		fprintf(stderr, "usage: %s MODE [MESSAGE]\n", argv[0]);
		return 2;
	}
	if (pipe(fds) != 0 || (pid = fork()) < 0) {
		perror("assert_trip");
		return 2;
	}
	if (pid == 0) {
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		run();
		_exit(0);
	}
	close(fds[1]);
	while ((n = read(fds[0], out + len, sizeof out - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	if (waitpid(pid, &status, 0) != pid) {
		perror("waitpid");
		return 2;
	}
	fputs(out, stderr);
	if (expect == NULL) {
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			printf("%s: clean\n", argv[1]);
			return 0;
		}
		printf("%s: the correct library failed\n", argv[1]);
		return 1;
	}
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT &&
	    strstr(out, expect) != NULL) {
		printf("%s: caught: %s\n", argv[1], expect);
		return 0;
	}
	printf("%s: NOT caught (expected \"%s\")\n", argv[1], expect);
	return 1;
}
