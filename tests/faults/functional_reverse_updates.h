/* Negative control (fuzz_functional): apply the newest queued update
 * first, which is wrong when two queued writes overlap. */
#define COW__FAULT_ON_oldest_update 1
#define COW__FAULT_AT_oldest_update(...) (g->nupd - 1)
