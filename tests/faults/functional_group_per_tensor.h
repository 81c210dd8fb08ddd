/* Negative control (fuzz_functional; the bug the storage table fixed): a
 * group of its own per tensor, a copy of the storage that never sees nor
 * writes the other tensors' writes. */
#define COW__FAULT_ON_group_per_storage 1
#define COW__FAULT_AT_group_per_storage(...) \
	((void)join_storage_group, cow__fn_adopt(st, plain, NULL, out, func))
