/*
 * storage_model.h - the reference model fuzz_storage checks the library
 * against. Every lazy clone is an eager copy here: each storage has its own
 * bytes, so a write can never show through another storage. Sharing is
 * tracked apart from the bytes, as groups: the storages whose data is one
 * allocation in the real library. A group's size is the share count.
 *
 * The model knows nothing of contexts, locks or allocation sizes; it states
 * only what the public API promises (include/cowstore/storage.h).
 */
#ifndef COW_FUZZ_STORAGE_MODEL_H
#define COW_FUZZ_STORAGE_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#define SM_SLOTS 8
#define SM_GROUPS SM_SLOTS /* live groups never outnumber live storages */

struct sm_storage {
	bool live;
	size_t nbytes;
	unsigned char *bytes; /* this storage's own copy (eager model) */
	int group;            /* the allocation it uses */
	unsigned refs;        /* handles held */
	bool cow;             /* cow_storage_is_cow() */
	bool faulty;          /* uses the fault allocator (else the default) */
	bool shareable;       /* not COW_STORAGE_NOT_SHAREABLE */
};

struct sm_group {
	bool live;
	unsigned members; /* live storages using the allocation */
	bool external;    /* the caller's memory, given back by a deleter */
};

/* What materialising a storage does. */
enum sm_materialize {
	SM_NOTHING, /* already private */
	SM_COPY,    /* others share: copy (allocates) */
	SM_STEAL    /* last share: keep the allocation, no copy */
};

struct sm_model {
	struct sm_storage s[SM_SLOTS];
	struct sm_group g[SM_GROUPS];
	/* Expected counters, since the model was initialised. */
	unsigned external_deaths;     /* deleter calls */
	unsigned long long clones;    /* successful lazy clones */
	unsigned long long eager;     /* eager fallbacks with bytes */
	unsigned long long copies;    /* materialisations that copied */
	unsigned long long steals;    /* materialisations that stole */
	unsigned long long copied;    /* bytes copied */
};

void sm_init(struct sm_model *m);
void sm_fini(struct sm_model *m);

/* The first free slot, or -1. */
int sm_free_slot(const struct sm_model *m);
/* The @k-th live slot (k modulo the live count), or -1 when none. */
int sm_pick_live(const struct sm_model *m, unsigned k);

/* Operations that succeeded in the library. Return false only when the
 * model itself cannot allocate (the harness then gives up the input). */
bool sm_new(struct sm_model *m, int slot, size_t nbytes, bool faulty);
bool sm_external(struct sm_model *m, int slot, const unsigned char *bytes,
    size_t nbytes, bool shareable);
bool sm_clone(struct sm_model *m, int src, int dst);
void sm_write(struct sm_model *m, int slot, size_t off, size_t len,
    const unsigned char *src);
void sm_retain(struct sm_model *m, int slot);
void sm_release(struct sm_model *m, int slot);
/* Apply a materialisation and say what it was. */
enum sm_materialize sm_materialize(struct sm_model *m, int slot);

/* Predictions, without changing anything. */
enum sm_materialize sm_would_materialize(const struct sm_model *m, int slot);
/* True when the clone of @src must allocate through the fault allocator. */
bool sm_clone_uses_fault(const struct sm_model *m, int src);
unsigned sm_share_count(const struct sm_model *m, int slot);
bool sm_shares(const struct sm_model *m, int a, int b);

#endif
