/* Negative control (python.control.snapshot_without_keep): a Snapshot
 * keeps no extra share of read-only memory, so the save's thread drops
 * the last share of a Python buffer and runs its deleter (Python code)
 * there; the deleter test must see the buffer released on another
 * thread. */
#define COW__FAULT_ON_snapshot_keep 1
#define COW__FAULT_AT_snapshot_keep(...) \
	cow_storage_release(keep[*nkeep])
