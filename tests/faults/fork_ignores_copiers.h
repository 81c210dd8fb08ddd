/* Negative control (threads.control.fork_ignores_copiers): a fork takes
 * every lock but does not wait for the copy sections under contexts'
 * shared locks, so a child inherits a shared hold that no thread will
 * drop, and its last share waits for it for ever. */
#define COW__FAULT_ON_fork_waits_for_copiers 1
#define COW__FAULT_AT_fork_waits_for_copiers(...) ((void)0)
