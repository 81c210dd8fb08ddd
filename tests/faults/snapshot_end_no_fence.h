/* Weak-memory control (o): no seq_cst fence between the end of a
 * persist-first save clearing snap->persist and its loads of the groups'
 * states (save.c, run_persist_first): a writer that claims a group may
 * still load the save, which the saver then frees. */
#define COW__FAULT_ON_snap_end_fence 1
#define COW__FAULT_AT_snap_end_fence(...) ((void)0)
