/* Negative control (e): a copier reads the context after its unlock (the
 * ck_brlock pattern); the last holder may have freed it. */
#define COW__FAULT_ON_copy_bytes 1
#define COW__FAULT_AT_copy_bytes(...) COW__FAULT_YIELD(); __VA_ARGS__
#define COW__FAULT_ON_count_copied_bytes 1
#define COW__FAULT_AT_count_copied_bytes(...) \
	COW__FAULT_YIELD(); \
	cow__stat_add(COW__STAT_BYTES_COPIED, ctx->buf.nbytes)
