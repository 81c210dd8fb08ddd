/* Negative control (f): [LAST] keeps its shared hold, so the wait of its
 * own steal waits for it forever (a deadlock). */
#define COW__FAULT_ON_last_read_unlock 1
#define COW__FAULT_AT_last_read_unlock(...) ((void)0)
