/* Negative control (TSan): the storage-group table without its locks;
 * TSan must report the races of functional_storage_threads. */
#define COW__FAULT_ON_bucket_lock 1
#define COW__FAULT_AT_bucket_lock(...) ((void)b)
#define COW__FAULT_ON_bucket_unlock 1
#define COW__FAULT_AT_bucket_unlock(...) ((void)b)
