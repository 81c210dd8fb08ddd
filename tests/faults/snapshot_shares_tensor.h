/* Negative control (stress scenario checkpoint, stress.control.h): the
 * snapshot's last storage group (the highest storage address; in the
 * scenario, some writer's small or mid-sized tensor) holds the live
 * storage itself, retained, instead of a lazy copy of it. The snapshot
 * then aliases that writer's memory: what the writer stamps after the
 * take reaches the snapshot, and a save that persists the tensor after
 * such a write persists a later step (a torn snapshot). */
#define COW__FAULT_ON_snapshot_lazy_copy 1
#define COW__FAULT_AT_snapshot_lazy_copy(...) \
	(k + 1 == snap->ngroups ? \
	    (cow_storage_retain(live), g->clone = live, COW_OK) : \
	    (__VA_ARGS__))
