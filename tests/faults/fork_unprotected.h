/* Negative control (threads.control.fork_unprotected): the library
 * registers no fork handlers, so a child inherits the locks and copy
 * sections that other threads held at the fork, and hangs. */
#define COW__FAULT_ON_fork_handlers 1
#define COW__FAULT_AT_fork_handlers(...) \
	((void)fork_prepare, (void)fork_parent, (void)fork_child)
