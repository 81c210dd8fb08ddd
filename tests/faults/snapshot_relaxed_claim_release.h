/* Weak-memory control (n): no release fence when a snapshot group's claim
 * ends (snapshot.c, group_leave_claim): a writer's persist of the group is
 * not ordered before the save's end, which waited for the claim to go. */
#define COW__FAULT_ON_snap_claim_release 1
#define COW__FAULT_AT_snap_claim_release(...) ((void)0)
