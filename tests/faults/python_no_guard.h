/* Negative control (python.control.no_guard): no per-storage stripes; the
 * no-lock thread test must see a torn op or a sanitizer report. */
#define COW__FAULT_ON_guard_stripes 1
#define COW__FAULT_AT_guard_stripes(...) 0
