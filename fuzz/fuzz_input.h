/*
 * fuzz_input.h - reading a fuzzer input as a stream of small integers.
 * Past the end every read gives 0, so any input decodes to some program.
 */
#ifndef COW_FUZZ_INPUT_H
#define COW_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

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

#endif
