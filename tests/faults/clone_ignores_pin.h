/* Assert control: a lazy clone shares a pinned storage (invariant 6). */
#define COW__FAULT_ON_clone_checks_pin 1
#define COW__FAULT_AT_clone_checks_pin(...) false
