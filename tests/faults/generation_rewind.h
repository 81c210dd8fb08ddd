/* Assert control: every write sets its shadow's generation lower than the
 * write before did. */
#define COW__FAULT_ON_generation_bump 1
#define COW__FAULT_AT_generation_bump(...) (UINT64_MAX - (__VA_ARGS__))
