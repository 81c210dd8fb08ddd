/* Weak-memory control (j): no release fence before the first lazy clone
 * installs its context. */
#define COW__FAULT_ON_install_release 1
#define COW__FAULT_AT_install_release(...) ((void)0)
