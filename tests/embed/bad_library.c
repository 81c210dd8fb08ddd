/*
 * bad_library.c - negative control for check_elf.sh and dlopen_host: a
 * shared library with every flaw those checks look for. It exports a
 * symbol without the cow_ prefix, uses initial-exec TLS (STATIC_TLS), is
 * linked against libstdc++ and without -z nodelete, and registers a
 * thread-exit destructor, so a thread that outlives its dlclose crashes.
 */
#include <pthread.h>
#include <stdlib.h>

__attribute__((tls_model("initial-exec"))) static __thread int bad_tls;

static pthread_key_t bad_key;
static pthread_once_t bad_once = PTHREAD_ONCE_INIT;

static void
bad_destructor(void *p)
{
	bad_tls++;
	free(p);
}

static void
bad_init(void)
{
	pthread_key_create(&bad_key, bad_destructor);
}

__attribute__((visibility("default"))) void bad_register_thread(void);

void
bad_register_thread(void)
{
	pthread_once(&bad_once, bad_init);
	pthread_setspecific(bad_key, malloc(16));
	bad_tls++;
}
