/*
 * fuzz_input.h - reading a fuzzer input as a stream of small integers.
 * Past the end every read gives 0, so any input decodes to some program.
 */
#ifndef COW_FUZZ_INPUT_H
#define COW_FUZZ_INPUT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* libFuzzer's entry point; replay_main.c calls it without libFuzzer. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_input {
	const uint8_t *p;
	size_t n;
};

static inline int
fuzz_more(const struct fuzz_input *in)
{
	return in->n > 0;
}

static inline uint8_t
fuzz_u8(struct fuzz_input *in)
{
	uint8_t b;

	if (in->n == 0)
		return 0;
	b = *in->p++;
	in->n--;
	return b;
}

static inline uint16_t
fuzz_u16(struct fuzz_input *in)
{
	uint16_t lo = fuzz_u8(in);

	return (uint16_t)(lo | (uint16_t)fuzz_u8(in) << 8);
}

static inline uint64_t
fuzz_u64(struct fuzz_input *in)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)fuzz_u8(in) << (8 * i);
	return v;
}

/*
 * A failed check: print "<what> <index> (<name>): <message>" to stderr and
 * abort, so libFuzzer (or the replay) reports the input. @what names the
 * fuzzer and the kind of finding ("fuzz_tensor: model mismatch after op"),
 * @index and @name the operation or call it happened in.
 */
static inline void fuzz_fail(const char *what, size_t index, const char *name,
    const char *fmt, ...) __attribute__((format(printf, 4, 5), noreturn));

static inline void
fuzz_fail(const char *what, size_t index, const char *name, const char *fmt,
    ...)
{
	va_list ap;

	fprintf(stderr, "%s %zu (%s): ", what, index,
	    name != NULL ? name : "?");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

#endif
