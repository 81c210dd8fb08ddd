/* Negative control (python.control.no_fork_handlers): the module registers
 * no fork handlers, so a child forked while other threads held storage
 * stripes waits for them for good; the fork test must report hung
 * children. */
#define COW__FAULT_ON_fork_handlers 1
#define COW__FAULT_AT_fork_handlers(...) false
