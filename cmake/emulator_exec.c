/*
 * emulator_exec.c - preloaded into programs that run under qemu-user (the
 * arm64 preset, cmake/aarch64-linux-gnu.cmake; docs/arm64.md).
 *
 * Without binfmt_misc the host kernel cannot execute a guest binary, so a
 * guest program that executes another one fails with ENOEXEC. Criterion
 * does exactly that: every test runs in a worker that BoxFort starts with
 * execl() of the test program itself. This library replaces execve(),
 * execv() and execl(): when the file to run is an ELF file for the guest's
 * machine, it executes the emulator instead (COW_EMULATOR, with the
 * loader prefix COW_EMULATOR_LD_PREFIX), with the same pid, arguments
 * (argv[0] through qemu's -0) and environment. The guest's LD_PRELOAD and
 * LD_LIBRARY_PATH go to the emulator's -E options instead of its own
 * environment (they name guest libraries, which the host's loader must not
 * see). Any other file is executed as it is.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COW_EXPORT __attribute__((visibility("default")))

typedef int (*cow_execve_fn)(const char *, char *const[], char *const[]);

extern char **environ;

static cow_execve_fn real_execve(void)
{
	static cow_execve_fn fn;
	if (!fn) {
		void *sym = dlsym(RTLD_NEXT, "execve");
		memcpy(&fn, &sym, sizeof fn);
	}
	return fn;
}

/* An ELF file for this (the guest's) machine? */
static int is_guest_elf(const char *path)
{
	Elf64_Ehdr h;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, &h, sizeof h);
	close(fd);
	return n == (ssize_t)sizeof h && memcmp(h.e_ident, ELFMAG, SELFMAG) == 0 &&
	    h.e_machine == EM_AARCH64;
}

static int has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

COW_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	cow_execve_fn next = real_execve();
	const char *emulator = getenv("COW_EMULATOR");
	const char *prefix = getenv("COW_EMULATOR_LD_PREFIX");
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	if (!emulator || !*emulator || !is_guest_elf(path))
		return next(path, argv, envp);

	size_t na = 0, ne = 0;
	while (argv[na])
		na++;
	while (envp && envp[ne])
		ne++;
	/* emulator [-L prefix] [-E var]... -0 argv0 path argv[1..] NULL */
	char **args = calloc(2 * ne + na + 8, sizeof *args);
	char **env = calloc(ne + 1, sizeof *env);
	if (!args || !env) {
		free(args);
		free(env);
		errno = ENOMEM;
		return -1;
	}
	size_t a = 0, e = 0;
	args[a++] = (char *)emulator;
	if (prefix && *prefix) {
		args[a++] = "-L";
		args[a++] = (char *)prefix;
	}
	for (size_t i = 0; i < ne; i++) {
		if (has_prefix(envp[i], "LD_PRELOAD=") ||
		    has_prefix(envp[i], "LD_LIBRARY_PATH=")) {
			args[a++] = "-E";
			args[a++] = envp[i];
		} else {
			env[e++] = envp[i];
		}
	}
	args[a++] = "-0";
	args[a++] = na ? argv[0] : (char *)path;
	args[a++] = (char *)path;
	for (size_t i = 1; i < na; i++)
		args[a++] = argv[i];
	next(emulator, args, env);
	int err = errno;
	free(args);
	free(env);
	errno = err;
	return -1;
}

COW_EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

COW_EXPORT int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	size_t n = 1;
	va_start(ap, arg);
	while (va_arg(ap, char *))
		n++;
	va_end(ap);
	char **argv = calloc(n + 1, sizeof *argv);
	if (!argv) {
		errno = ENOMEM;
		return -1;
	}
	argv[0] = (char *)arg;
	va_start(ap, arg);
	for (size_t i = 1; i < n; i++)
		argv[i] = va_arg(ap, char *);
	va_end(ap);
	int rc = execve(path, argv, environ);
	int err = errno;
	free(argv);
	errno = err;
	return rc;
}
