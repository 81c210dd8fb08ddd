/* Negative control (tests/dtype): float16 and bfloat16 ties round away
 * from zero instead of to even. */
#define COW__FAULT_ON_ties_to_even 1
#define COW__FAULT_AT_ties_to_even(...) (rem >= half)
#define COW__FAULT_ON_f16_ties_to_even 1
#define COW__FAULT_AT_f16_ties_to_even(...) \
	((a - ((127u - 15u) << 23) + 0x1000u) >> 13)
#define COW__FAULT_ON_bf16_ties_to_even 1
#define COW__FAULT_AT_bf16_ties_to_even(...) ((b + 0x8000u) >> 16)
