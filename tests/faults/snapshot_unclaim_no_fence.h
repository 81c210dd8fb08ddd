/* Weak-memory control (p): no seq_cst fence between a claim given back and
 * the load of the group's held count (snapshot.c, cow__snap_group_unclaim):
 * an early release of the group's last tensor that found the group claimed
 * and the claimant that gives it back may both miss each other, and the
 * group keeps its lazy copy with no tensor held. */
#define COW__FAULT_ON_snap_unclaim_fence 1
#define COW__FAULT_AT_snap_unclaim_fence(...) ((void)0)
