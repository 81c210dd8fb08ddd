/* Assert control: a copier keeps its shared hold after the copy; as the
 * last share ([KEEP]) it then waits for copiers while holding it. */
#define COW__FAULT_ON_copy_read_unlock 1
#define COW__FAULT_AT_copy_read_unlock(...) ((void)0)
