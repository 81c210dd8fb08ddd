/* Weak-memory control (k): the budget's epoch published and read relaxed;
 * credit drawn under an old limit can carry the new epoch. */
#define COW__FAULT_ON_epoch_publish 1
#define COW__FAULT_AT_epoch_publish(...) cow__atomic_add_relaxed(&b->epoch, 1)
#define COW__FAULT_ON_epoch_read 1
#define COW__FAULT_AT_epoch_read(...) cow__atomic_load_relaxed(&b->epoch)
