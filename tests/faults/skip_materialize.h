/* Negative control (c): a write path that skips materialisation and writes
 * straight into shared data. */
#define COW__FAULT_ON_materialize 1
#define COW__FAULT_AT_materialize(...) return COW_OK
