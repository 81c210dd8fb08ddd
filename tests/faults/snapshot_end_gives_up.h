/* Interleaving control (m): the end of a persist-first save (save.c,
 * end_group) fails on a group that is held and not persisted instead of
 * persisting it: the save as first written, which lost a group that a
 * writer claimed while the saver went past it and gave back when it found
 * the save ended. */
#define COW__FAULT_ON_snap_end_persists 1
#define COW__FAULT_AT_snap_end_persists(...) \
	((void)st, cow__snap_save_fail(s, COW_ECANCELED, "stopped before every " \
	    "tensor was saved"), true)
