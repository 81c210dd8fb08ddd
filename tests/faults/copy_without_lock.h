/* Assert control: a materialiser drops its share and copies without the
 * shared lock (invariant 4). */
#define COW__FAULT_ON_lock_then_unshare 1
#define COW__FAULT_AT_lock_then_unshare(...) \
	before = cow__ref_sub(&ctx->shares)
