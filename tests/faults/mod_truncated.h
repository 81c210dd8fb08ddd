/* Negative control (fuzz_tensor, fuzz.control.*_mod_truncated): the
 * signed integer remainder keeps C's sign (the dividend's) instead of
 * taking the divisor's. The opaque backend shares divmod.h, so only the
 * reference model, not the three worlds, can tell. */
#define COW__FAULT_ON_mod_divisor_sign 1
#define COW__FAULT_AT_mod_divisor_sign(...) ((void)0)
