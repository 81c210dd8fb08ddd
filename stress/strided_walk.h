/*
 * strided_walk.h - a walk over the elements of a strided view (a struct
 * with ndim, sizes[], strides[] and offset), for the scenarios that check
 * tensors against their own index math (scn_boundary, scn_tensor_mix).
 */
#ifndef COW_STRESS_STRIDED_WALK_H
#define COW_STRESS_STRIDED_WALK_H

#include <stdint.h>

#include "harness.h"

/* Visit the @numel elements of view @v in row-major order: k (their index)
 * and pos (their flat position), beating the heartbeat as it goes. */
#define STRIDED_FOREACH(v, numel, k, pos, body)                             \
	do {                                                                \
		int64_t idx_[sizeof (v)->sizes /                            \
		    sizeof (v)->sizes[0]] = {0};                            \
		int64_t n_ = (numel);                                       \
		for (int64_t k = 0; k < n_; k++) {                          \
			int64_t pos = (v)->offset;                          \
			stress_beat((uint64_t)k);                           \
			for (int d_ = 0; d_ < (v)->ndim; d_++)              \
				pos += idx_[d_] * (v)->strides[d_];         \
			body;                                               \
			for (int d_ = (v)->ndim - 1; d_ >= 0; d_--) {       \
				if (++idx_[d_] < (v)->sizes[d_])            \
					break;                              \
				idx_[d_] = 0;                               \
			}                                                   \
		}                                                           \
	} while (0)

#endif
