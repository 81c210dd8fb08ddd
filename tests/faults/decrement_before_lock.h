/* Negative control (b): drop the share before taking the shared lock; the
 * last holder can steal or free the data in between. */
#define COW__FAULT_ON_lock_then_unshare 1
#define COW__FAULT_AT_lock_then_unshare(...) \
	before = cow__ref_sub(&ctx->shares); \
	COW__FAULT_YIELD(); \
	cow__rwlock_read_lock(&ctx->lock)
#define COW__FAULT_ON_copy_bytes 1
#define COW__FAULT_AT_copy_bytes(...) COW__FAULT_YIELD(); __VA_ARGS__
