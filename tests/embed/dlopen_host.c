/*
 * dlopen_host.c - a host that loads libcowstore.so with dlopen, as a plugin
 * loader or a language binding does, and uses it only through dlsym: lazy
 * clone, materialise and release, on the main thread and on two threads at
 * once; the default allocator's limit and retention cap follow the rules
 * docs/embedding.md states. Then dlclose while a thread that used the library is
 * still alive, and that thread exits afterwards (its thread-exit handlers
 * must still have code to run), and the process forks.
 *
 * Usage: dlopen_host LIBRARY ALLOCATOR_NAME
 *        dlopen_host --control LIBRARY SYMBOL
 * The control mode loads another library, calls SYMBOL (void (*)(void)) on
 * a worker thread, and does the dlclose/thread-exit/fork steps only: a
 * library that is unloaded while it has thread-exit handlers crashes here.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cowstore/cowstore.h>

static struct {
	cow_status_t (*storage_new)(size_t, cow_allocator_t *,
	    cow_storage_t **);
	cow_status_t (*lazy_clone)(cow_storage_t *, cow_storage_t **);
	cow_status_t (*mutable_data)(cow_storage_t *, void **);
	const void *(*const_data)(const cow_storage_t *);
	void (*release)(cow_storage_t *);
	cow_allocator_t *(*allocator_default)(void);
	const char *(*allocator_name)(const cow_allocator_t *);
	size_t (*allocator_limit)(const cow_allocator_t *);
	size_t (*retain_limit)(cow_allocator_t *);
	const char *(*last_error)(void);
} cow;

static void (*control_fn)(void);

static void
die(const char *what)
{
	fprintf(stderr, "dlopen host: FAIL: %s\n", what);
	exit(1);
}

/* A function pointer from dlsym (memcpy: ISO C has no cast for it). */
static void
resolve(void *h, const char *name, void *fnp, size_t size)
{
	void *p = dlsym(h, name);

	if (p == NULL) {
		fprintf(stderr, "dlopen host: FAIL: dlsym(%s): %s\n", name,
		    dlerror());
		exit(1);
	}
	memcpy(fnp, &p, size);
}

#define RESOLVE(h, field, name) resolve(h, name, &cow.field, sizeof cow.field)

/* Lazy clone, materialise by copy, release; the source keeps its bytes. */
static void
exercise(unsigned seed)
{
	const size_t n = (size_t)1 << 20;
	cow_storage_t *a, *b;
	unsigned char *pa, *pb;
	void *p;

	if (cow.storage_new(n, NULL, &a) != COW_OK)
		die(cow.last_error());
	if (cow.mutable_data(a, &p) != COW_OK)
		die(cow.last_error());
	pa = p;
	if (pa[0] != 0 || pa[n - 1] != 0)
		die("cow_storage_new did not zero-fill");
	memset(pa, (int)(seed & 0xff), n);
	if (cow.lazy_clone(a, &b) != COW_OK)
		die(cow.last_error());
	if (cow.const_data(b) != cow.const_data(a))
		die("a lazy clone does not share its source's bytes");
	if (cow.mutable_data(b, &p) != COW_OK)
		die(cow.last_error());
	pb = p;
	if ((const void *)pb == cow.const_data(a))
		die("the first write did not materialise the clone");
	if (pb[n / 2] != (unsigned char)seed)
		die("the materialised copy differs from its source");
	pb[0] = (unsigned char)(seed + 1);
	if (((const unsigned char *)cow.const_data(a))[0] != (unsigned char)seed)
		die("a write through the clone reached its source");
	cow.release(a);
	cow.release(b);
}

static void *
worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;

	for (int i = 0; i < 200; i++)
		exercise(seed + (unsigned)i);
	return NULL;
}

/* Used the library, then waits until main has called dlclose. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_used, gate_closed;

static void *
lingering(void *arg)
{
	(void)arg;
	if (control_fn != NULL)
		control_fn();
	else
		exercise(7);
	pthread_mutex_lock(&gate_mu);
	gate_used = 1;
	pthread_cond_broadcast(&gate_cv);
	while (!gate_closed)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
	return NULL; /* thread-exit handlers run now */
}

/* A line naming the step the host takes next, out before it runs. */
static void
step(const char *what)
{
	printf("dlopen host: %s\n", what);
	fflush(stdout);
}

static void *
nothing(void *arg)
{
	return arg;
}

/* dlclose while @lingering is alive, let it exit, then make and end a
 * thread and fork: nothing of the library may run from unmapped code. */
static void
close_while_thread_lives(void *h)
{
	pthread_t t, u;
	pid_t pid;
	int status;

	if (pthread_create(&t, NULL, lingering, NULL) != 0)
		die("pthread_create");
	pthread_mutex_lock(&gate_mu);
	while (!gate_used)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
	if (dlclose(h) != 0)
		die(dlerror());
	/* Each step says so before it runs, so that a crash is known by its
	 * step (the control must die of the thread's exit, nothing else). */
	step("dlclosed while a thread of the library lives; it exits now");
	pthread_mutex_lock(&gate_mu);
	gate_closed = 1;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
	if (pthread_join(t, NULL) != 0)
		die("pthread_join");
	step("the thread exited after dlclose; a new thread and a fork");
	if (pthread_create(&u, NULL, nothing, NULL) != 0 ||
	    pthread_join(u, NULL) != 0)
		die("a thread after dlclose");
	if ((pid = fork()) < 0)
		die("fork");
	if (pid == 0)
		_exit(0);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		die("fork after dlclose");
}

static uint64_t
physical_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

	return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

/* docs/embedding.md's rules for the default allocator's limit and cap. */
static void
check_defaults(const char *name)
{
	cow_allocator_t *a = cow.allocator_default();
	const char *env = getenv("COW_MEMORY_LIMIT_MB");
	uint64_t ram = physical_memory(), want;

	if (strcmp(cow.allocator_name(a), name) != 0) {
		fprintf(stderr, "dlopen host: FAIL: default allocator is '%s', "
		    "expected '%s'\n", cow.allocator_name(a), name);
		exit(1);
	}
	if (env != NULL && *env != '\0')
		want = (uint64_t)strtoull(env, NULL, 10) << 20;
	else
		want = ram / 4 * 3;
	if ((uint64_t)cow.allocator_limit(a) != want) {
		fprintf(stderr, "dlopen host: FAIL: limit %zu, expected %llu\n",
		    cow.allocator_limit(a), (unsigned long long)want);
		exit(1);
	}
	if (strcmp(name, "jemalloc") == 0 &&
	    getenv("COW_RETAIN_LIMIT_MB") == NULL) {
		want = ram / 16 < COW_RETAIN_LIMIT_MAX ? ram / 16 :
		    COW_RETAIN_LIMIT_MAX;
		if ((uint64_t)cow.retain_limit(a) != want) {
			fprintf(stderr, "dlopen host: FAIL: retention cap %zu, "
			    "expected %llu\n", cow.retain_limit(a),
			    (unsigned long long)want);
			exit(1);
		}
	}
	printf("dlopen host: default allocator '%s', limit %zu MiB, "
	    "retention cap %zu MiB\n", cow.allocator_name(a),
	    cow.allocator_limit(a) >> 20, cow.retain_limit(a) >> 20);
}

static void *
load(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (h == NULL)
		die(dlerror());
	RESOLVE(h, storage_new, "cow_storage_new");
	RESOLVE(h, lazy_clone, "cow_storage_lazy_clone");
	RESOLVE(h, mutable_data, "cow_storage_mutable_data");
	RESOLVE(h, const_data, "cow_storage_const_data");
	RESOLVE(h, release, "cow_storage_release");
	RESOLVE(h, allocator_default, "cow_allocator_default");
	RESOLVE(h, allocator_name, "cow_allocator_name");
	RESOLVE(h, allocator_limit, "cow_allocator_limit");
	RESOLVE(h, retain_limit, "cow_allocator_retain_limit");
	RESOLVE(h, last_error, "cow_last_error");
	return h;
}

int
main(int argc, char **argv)
{
	pthread_t t[2];
	void *h;

	if (argc == 4 && strcmp(argv[1], "--control") == 0) {
		if ((h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL)) == NULL)
			die(dlerror());
		resolve(h, argv[3], &control_fn, sizeof control_fn);
		close_while_thread_lives(h);
		printf("dlopen host: ok (control library survived)\n");
		return 0;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: %s LIBRARY ALLOCATOR_NAME\n", argv[0]);
		return 2;
	}
	h = load(argv[1]);
	check_defaults(argv[2]);
	exercise(1);
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, worker,
		    (void *)(uintptr_t)(10 + i * 50)) != 0)
			die("pthread_create");
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	close_while_thread_lives(h);
	/* Loading it again works (it stayed mapped). */
	load(argv[1]);
	exercise(3);
	printf("dlopen host: ok\n");
	return 0;
}
