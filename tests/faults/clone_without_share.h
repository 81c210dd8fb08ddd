/* Assert control: a lazy clone points at the context without taking a
 * share (invariant 2); the last share then goes while it still points. */
#define COW__FAULT_ON_share_count 1
#define COW__FAULT_AT_share_count(...) ((void)0)
