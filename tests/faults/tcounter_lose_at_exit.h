/* Negative control (unit.counters): a thread's counts die with it instead
 * of folding into the orphan totals. */
#define COW__FAULT_ON_fold_at_exit 1
#define COW__FAULT_AT_fold_at_exit(...) ((void)b)
