/*
 * api_snapshot.h - the snapshot part of fuzz_api (api_snapshot.c): takes of
 * random sets of live tensors and views, writes, pins, early releases,
 * gets, stream saves into memory (with failing callbacks, cancellation and
 * writes from inside the callback) and persist-first saves with writes
 * interleaved on the saving thread, all against a model in which a
 * snapshot's lazy copy is an eager copy.
 */
#ifndef COW_FUZZ_API_SNAPSHOT_H
#define COW_FUZZ_API_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cowstore/cowstore.h>

#include "fuzz_input.h"

#define SN_LIVE 6       /* live tensor slots */
#define SN_SNAPS 3      /* snapshots held at once */
#define SN_MAXT 8       /* tensors per snapshot */
#define SN_BYTES 1024   /* bytes of a tensor at most: 64 elements of 16 */

/* A live tensor; @sid names its storage (views share their base's). */
struct sn_live {
	cow_tensor_t *t;
	int sid;
};

/* A pinned live storage: its pins and the memory they let us write. */
struct sn_pin {
	int sid;
	unsigned pins;
	unsigned char *data;
	size_t nbytes;
};

/* The model of a snapshot's storage group (one live storage). */
struct sn_group {
	int sid;
	uint64_t nbytes;
	bool pinned;     /* an eager copy at the take */
	bool hook;       /* its live storage's next write runs the hook */
	bool written;    /* that write copied while it was held */
	bool released;
	bool persisted;  /* in the running persist-first save's target */
};

/* The model of a snapshot: each tensor's bytes at the take, in C order. */
struct sn_snap {
	cow_snapshot_t *snap;
	size_t n, ng;
	size_t group[SN_MAXT];
	struct sn_group g[SN_MAXT];
	bool held[SN_MAXT];
	uint64_t nbytes[SN_MAXT];
	unsigned char val[SN_MAXT][SN_BYTES];
	cow_dtype_t dtype[SN_MAXT];
	int ndim[SN_MAXT];
	int64_t sizes[SN_MAXT][COW_TENSOR_MAX_NDIM];
	char name[SN_MAXT][8];
	uint64_t bytes, extra, peak, writer_copies, writer_persists;
	uint64_t pinned_copies, pinned_bytes;
	bool cancel;     /* cow_snapshot_cancel, for the next save */
};

struct sn_save;

struct api_snapshot {
	struct sn_live live[SN_LIVE];
	struct sn_pin pins[SN_LIVE];
	struct sn_snap snaps[SN_SNAPS];
	struct sn_save *save;     /* the running save, for the callbacks */
	int next_sid;
	size_t call;
	const char *func;
};

void api_snapshot_init(struct api_snapshot *a);
/* One call chosen by the input. Aborts with a message on a violation. */
void api_snapshot_call(struct api_snapshot *a, struct fuzz_input *in);
/* Release everything. */
void api_snapshot_fini(struct api_snapshot *a);

#endif
