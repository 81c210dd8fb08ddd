/* Interleaving control (l): a snapshot group's claim (snapshot.c,
 * cow__snap_group_claim) is a load, then a store, not one compare-and-swap:
 * the saver and a writer may both claim a group and both persist it. */
#define COW__FAULT_ON_snap_claim_cas 1
#define COW__FAULT_AT_snap_claim_cas(...) \
	(cow__atomic_store_relaxed(&g->state, \
	    (w & ~(uint64_t)COW__GROUP_STATE) | COW__GROUP_CLAIMED), true)
