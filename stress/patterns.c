/*
 * patterns.c - reference contents, marks and checksums.
 *
 * Pattern @key is a pure function of (key, offset), so any thread can tell
 * what a buffer must hold without a shared reference copy. A mark is what a
 * writer puts at the offsets it owns; it never equals the pattern byte, so
 * a mark that leaks into another buffer (or a write that went into shared
 * data) is always visible.
 */
#include <string.h>

#include "harness.h"

static uint64_t
stress_pattern_word(uint64_t key, size_t w)
{
	return stress_mix64(key ^ ((uint64_t)w * 0xd6e8feb86659fd93ULL));
}

uint8_t
stress_pattern_byte(uint64_t key, size_t i)
{
	return (uint8_t)(stress_pattern_word(key, i / 8) >> ((i % 8) * 8));
}

void
stress_pattern_fill(void *p, size_t n, uint64_t key)
{
	uint8_t *b = p;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w = stress_pattern_word(key, i / 8);

		stress_beat(i / 8);
		for (unsigned k = 0; k < 8; k++)
			b[i + k] = (uint8_t)(w >> (k * 8));
	}
	for (; i < n; i++)
		b[i] = stress_pattern_byte(key, i);
}

uint8_t
stress_mark(uint64_t key, size_t i, unsigned who)
{
	/* Never equal to the pattern byte: the xor value is non-zero. */
	return (uint8_t)(stress_pattern_byte(key, i) ^ (0x80u | (who & 0x7f)));
}

void
stress_write_marks(void *p, size_t n, uint64_t key, size_t mod, size_t rem,
    unsigned who)
{
	uint8_t *b = p;
	uint64_t k = 0;

	for (size_t i = rem; i < n; i += mod) {
		stress_beat(k++);
		b[i] = stress_mark(key, i, who);
	}
}

size_t
stress_verify_marked(const void *p, size_t n, uint64_t key, size_t mod,
    size_t rem, unsigned who)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i += 8) {
		uint64_t w = stress_pattern_word(key, i / 8);
		size_t end = i + 8 < n ? i + 8 : n;

		stress_beat(i / 8);
		for (size_t j = i; j < end; j++) {
			uint8_t want = (uint8_t)(w >> ((j - i) * 8));

			if (mod != 0 && j % mod == rem)
				want = (uint8_t)(want ^ (0x80u | (who & 0x7f)));
			if (b[j] != want)
				return j;
		}
	}
	return n;
}

uint64_t
stress_checksum(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 0x243f6a8885a308d3ULL ^ n;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w;

		stress_beat(i / 8);
		memcpy(&w, b + i, 8);
		h = stress_mix64(h ^ w);
	}
	for (; i < n; i++)
		h = stress_mix64(h ^ b[i]);
	return h;
}

size_t
stress_first_diff(const void *a, const void *b, size_t n)
{
	const uint8_t *x = a, *y = b;

	for (size_t i = 0; i < n; i++) {
		stress_beat(i);
		if (x[i] != y[i])
			return i;
	}
	return n;
}
