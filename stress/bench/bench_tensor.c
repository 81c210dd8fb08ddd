/*
 * Tensor metadata benchmarks (filled in when the tensor API lands).
 */
#include "bench.h"

const struct bench bench_tensor_table[] = {
	{0},
};
