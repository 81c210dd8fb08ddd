/*
 * fuzz_storage.c - operation sequences over a small pool of storages,
 * checked after every operation against the eager-copy model
 * (storage_model.c): bytes, sizes, share counts, sharing, COW state,
 * allocators, deleter calls and the library's statistics. Allocation
 * failures come from the fault-injecting allocator; a failed operation must
 * return COW_ENOMEM, leak nothing and leave everything as the model says.
 * At the end every storage is released and the allocators must hold no
 * live bytes.
 *
 * Input: a stream of operations (see the OP_ enum), each an opcode byte
 * followed by its argument bytes. A finding aborts with a message that
 * names the operation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cowstore/cowstore.h>
#include <cowstore/testing.h>

#include "fuzz_input.h"
#include "storage_model.h"

#define MAX_OPS 512
#define MAX_REFS 4

enum op {
	OP_NEW,         /* flags, size */
	OP_EXTERNAL,    /* flags, size, pattern */
	OP_CLONE,       /* source */
	OP_WRITE,       /* slot, offset (16 bits), length, pattern */
	OP_READ,        /* slot, offset (16 bits), length */
	OP_MATERIALIZE, /* slot */
	OP_RELEASE,     /* slot */
	OP_RETAIN,      /* slot */
	OP_FAULT,       /* mode, argument */
	OP_COUNT
};

static const char *const op_names[OP_COUNT] = {
	"new", "external", "clone", "write", "read", "materialize",
	"release", "retain", "fault"
};

/* What the fault allocator will do to the next allocations. */
enum fault_mode {
	FAULT_OFF,    /* every allocation succeeds */
	FAULT_NEXT,   /* the next allocation fails, once */
	FAULT_ONCE,   /* one later allocation fails, once (unknown which) */
	FAULT_MAYBE,  /* any allocation may fail */
	FAULT_ALWAYS  /* every allocation fails */
};

struct harness {
	struct sm_model m;
	cow_storage_t *h[SM_SLOTS];
	cow_allocator_t *fault;
	enum fault_mode mode;
	unsigned deleter_calls;
	unsigned externals;
	uint64_t default_live_bytes; /* the default allocator's, at start */
	size_t op;                   /* index of the operation running */
	const char *op_name;
};

/* A failed check (fuzz_input.h). */
#define fail(x, ...)                                                        \
	fuzz_fail("fuzz_storage: model mismatch after op",                  \
	    (x)->op, (x)->op_name, __VA_ARGS__)

static cow_alloc_stats_t
alloc_stats(const struct harness *t, const cow_allocator_t *a)
{
	cow_alloc_stats_t st;

	if (cow_allocator_stats(a, &st) != COW_OK)
		fail(t, "cow_allocator_stats failed: %s", cow_last_error());
	return st;
}

static void
deleter(void *data, size_t nbytes, void *ctx)
{
	struct harness *t = ctx;

	if (data == NULL && nbytes > 0)
		fail(t, "deleter called with NULL data and %zu bytes", nbytes);
	free(data);
	t->deleter_calls++;
}

/* Sizes: mostly small, some of a few kilobytes, and zero. */
static size_t
decode_size(uint8_t b)
{
	return b < 200 ? b : (size_t)(b - 199) * 256;
}

static void
fill_pattern(unsigned char *dst, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		dst[i] = (unsigned char)(seed + 31 * i + (i >> 8));
}

/* Everything observable about one storage against the model. */
static void
check_slot(const struct harness *t, int i)
{
	const struct sm_storage *ms = &t->m.s[i];
	const cow_storage_t *s = t->h[i];
	const unsigned char *data;
	cow_allocator_t *want;

	if (cow_storage_nbytes(s) != ms->nbytes)
		fail(t, "slot %d: nbytes %zu, model %zu", i,
		    cow_storage_nbytes(s), ms->nbytes);
	data = cow_storage_const_data(s);
	if ((data == NULL) != (ms->nbytes == 0))
		fail(t, "slot %d: const data %p for %zu bytes", i,
		    (const void *)data, ms->nbytes);
	if (ms->nbytes > 0 && memcmp(data, ms->bytes, ms->nbytes) != 0) {
		size_t k = 0;

		while (data[k] == ms->bytes[k])
			k++;
		fail(t, "slot %d: byte %zu is 0x%02x, model 0x%02x", i, k,
		    data[k], ms->bytes[k]);
	}
	if (cow_storage_share_count(s) != sm_share_count(&t->m, i))
		fail(t, "slot %d: share count %zu, model %u", i,
		    cow_storage_share_count(s), sm_share_count(&t->m, i));
	if (cow_storage_is_cow(s) != ms->cow)
		fail(t, "slot %d: is_cow %d, model %d", i,
		    cow_storage_is_cow(s), ms->cow);
	want = ms->faulty ? t->fault : cow_allocator_default();
	if (cow_storage_allocator(s) != want)
		fail(t, "slot %d: allocator '%s', model '%s'", i,
		    cow_allocator_name(cow_storage_allocator(s)),
		    cow_allocator_name(want));
	if (cow_storage_shares_data(s, NULL) ||
	    cow_storage_shares_data(NULL, s))
		fail(t, "slot %d: shares data with NULL", i);
	for (int j = 0; j < SM_SLOTS; j++) {
		bool model, real;

		if (!t->m.s[j].live)
			continue;
		model = sm_shares(&t->m, i, j);
		real = cow_storage_shares_data(s, t->h[j]);
		if (real != model)
			fail(t, "slots %d and %d: shares_data %d, model %d",
			    i, j, real, model);
		/* Storages with bytes share a pointer exactly when they
		 * share the allocation. */
		if (ms->nbytes > 0 &&
		    (data == cow_storage_const_data(t->h[j])) != model)
			fail(t, "slots %d and %d: same data pointer %d, "
			    "model shares %d", i, j,
			    data == cow_storage_const_data(t->h[j]), model);
	}
}

static void
check_all(const struct harness *t)
{
	cow_stats_t st;
	uint64_t injected;
	cow_alloc_stats_t fs = alloc_stats(t, t->fault);

	for (int i = 0; i < SM_SLOTS; i++) {
		if (t->m.s[i].live != (t->h[i] != NULL))
			fail(t, "slot %d: handle %p, model live %d", i,
			    (void *)t->h[i], t->m.s[i].live);
		if (t->h[i] != NULL)
			check_slot(t, i);
	}
	if (t->deleter_calls != t->m.external_deaths)
		fail(t, "%u deleter calls, model %u", t->deleter_calls,
		    t->m.external_deaths);
	injected = cow_allocator_fault_injected(t->fault);
	if (fs.failures != injected)
		fail(t, "fault allocator: %llu failures, %llu injected",
		    (unsigned long long)fs.failures,
		    (unsigned long long)injected);
	cow_stats_get(&st);
	if (st.lazy_clones != t->m.clones ||
	    st.eager_fallbacks != t->m.eager ||
	    st.materialize_copies != t->m.copies ||
	    st.materialize_steals != t->m.steals ||
	    st.bytes_copied != t->m.copied)
		fail(t, "stats: clones %llu/%llu eager %llu/%llu copies "
		    "%llu/%llu steals %llu/%llu bytes copied %llu/%llu "
		    "(library/model)",
		    (unsigned long long)st.lazy_clones, t->m.clones,
		    (unsigned long long)st.eager_fallbacks, t->m.eager,
		    (unsigned long long)st.materialize_copies, t->m.copies,
		    (unsigned long long)st.materialize_steals, t->m.steals,
		    (unsigned long long)st.bytes_copied, t->m.copied);
}

/*
 * Judge a status: COW_OK, or COW_ENOMEM caused by an injected failure,
 * naming @func, with nothing leaked. @before: the fault allocator's
 * counters before the operation. Returns true when the operation succeeded
 * (the caller then applies it to the model).
 */
static bool
judge(struct harness *t, cow_status_t st, const cow_alloc_stats_t *before,
    const char *func)
{
	cow_alloc_stats_t now = alloc_stats(t, t->fault);
	bool injected = now.failures != before->failures;

	if (injected && (t->mode == FAULT_NEXT || t->mode == FAULT_ONCE))
		t->mode = FAULT_OFF; /* the one-shot failure has fired */
	if (st == COW_OK)
		return true;
	if (st != COW_ENOMEM)
		fail(t, "%s returned %s: %s", func, cow_status_str(st),
		    cow_last_error());
	if (!injected)
		fail(t, "%s returned COW_ENOMEM with no injected failure: %s",
		    func, cow_last_error());
	if (strstr(cow_last_error(), func) == NULL)
		fail(t, "%s failed but the message does not name it: '%s'",
		    func, cow_last_error());
	if (now.live_allocs != before->live_allocs ||
	    now.live_bytes != before->live_bytes)
		fail(t, "%s failed but live allocations went from %llu "
		    "(%llu bytes) to %llu (%llu bytes)", func,
		    (unsigned long long)before->live_allocs,
		    (unsigned long long)before->live_bytes,
		    (unsigned long long)now.live_allocs,
		    (unsigned long long)now.live_bytes);
	return false;
}

/* An operation that must allocate from the fault allocator fails when the
 * next (or every) allocation is set to fail. */
static void
expect_injection(const struct harness *t, enum fault_mode mode_before,
    bool ok, const char *func)
{
	if (ok && (mode_before == FAULT_NEXT || mode_before == FAULT_ALWAYS))
		fail(t, "%s succeeded although its first allocation was "
		    "set to fail", func);
}

static void
op_new(struct harness *t, struct fuzz_input *in)
{
	uint8_t flags = fuzz_u8(in);
	size_t nbytes = decode_size(fuzz_u8(in));
	bool faulty = (flags & 1) == 0;
	int slot = sm_free_slot(&t->m);
	enum fault_mode mode = t->mode;
	cow_alloc_stats_t before = alloc_stats(t, t->fault);
	cow_storage_t *s = NULL;
	cow_status_t st;
	bool ok;

	if (slot < 0)
		return;
	st = cow_storage_new(nbytes, faulty ? t->fault : NULL, &s);
	ok = judge(t, st, &before, "cow_storage_new");
	if (faulty)
		expect_injection(t, mode, ok, "cow_storage_new");
	if (!ok) {
		if (s != NULL)
			fail(t, "cow_storage_new failed but wrote *out");
		return;
	}
	t->h[slot] = s;
	if (!sm_new(&t->m, slot, nbytes, faulty))
		abort();
}

static void
op_external(struct harness *t, struct fuzz_input *in)
{
	uint8_t flags = fuzz_u8(in);
	size_t nbytes = decode_size(fuzz_u8(in));
	uint8_t pattern = fuzz_u8(in);
	bool shareable = (flags & 1) == 0;
	int slot = sm_free_slot(&t->m);
	unsigned char *data = NULL;
	cow_storage_t *s = NULL;
	cow_status_t st;

	if (slot < 0)
		return;
	if (nbytes > 0) {
		if ((data = malloc(nbytes)) == NULL)
			abort();
		fill_pattern(data, nbytes, pattern);
	}
	st = cow_storage_from_external(data, nbytes, deleter, t,
	    shareable ? 0 : COW_STORAGE_NOT_SHAREABLE, &s);
	if (st != COW_OK)
		fail(t, "cow_storage_from_external returned %s: %s",
		    cow_status_str(st), cow_last_error());
	t->h[slot] = s;
	t->externals++;
	if (!sm_external(&t->m, slot, data, nbytes, shareable))
		abort();
}

static void
op_clone(struct harness *t, struct fuzz_input *in)
{
	int src = sm_pick_live(&t->m, fuzz_u8(in));
	int dst = sm_free_slot(&t->m);
	enum fault_mode mode = t->mode;
	cow_alloc_stats_t before;
	cow_storage_t *s = NULL;
	cow_status_t st;
	bool faulty, ok;

	if (src < 0 || dst < 0)
		return;
	faulty = sm_clone_uses_fault(&t->m, src);
	before = alloc_stats(t, t->fault);
	st = cow_storage_lazy_clone(t->h[src], &s);
	ok = judge(t, st, &before, "cow_storage_lazy_clone");
	if (faulty)
		expect_injection(t, mode, ok, "cow_storage_lazy_clone");
	if (!ok) {
		if (s != NULL)
			fail(t, "cow_storage_lazy_clone failed but wrote *out");
		return;
	}
	t->h[dst] = s;
	if (!sm_clone(&t->m, src, dst))
		abort();
}

/* Materialise @slot through cow_storage_mutable_data (@ptr non-NULL) or
 * cow_storage_materialize; apply it to the model on success. */
static bool
materialize(struct harness *t, int slot, void **ptr)
{
	enum sm_materialize what = sm_would_materialize(&t->m, slot);
	bool faulty = what == SM_COPY && t->m.s[slot].faulty;
	const void *old = cow_storage_const_data(t->h[slot]);
	const char *func = ptr != NULL ? "cow_storage_mutable_data" :
	    "cow_storage_materialize";
	enum fault_mode mode = t->mode;
	cow_alloc_stats_t before = alloc_stats(t, t->fault);
	cow_status_t st;
	bool ok;

	if (ptr != NULL)
		st = cow_storage_mutable_data(t->h[slot], ptr);
	else
		st = cow_storage_materialize(t->h[slot]);
	ok = judge(t, st, &before, func);
	if (faulty)
		expect_injection(t, mode, ok, func);
	if (!ok)
		return false;
	sm_materialize(&t->m, slot);
	if (what != SM_COPY && cow_storage_const_data(t->h[slot]) != old)
		fail(t, "%s moved the data of slot %d without copying", func,
		    slot);
	if (ptr != NULL && *ptr != cow_storage_const_data(t->h[slot]))
		fail(t, "%s: pointer %p, const data %p", func, *ptr,
		    cow_storage_const_data(t->h[slot]));
	return true;
}

static void
op_write(struct harness *t, struct fuzz_input *in)
{
	int slot = sm_pick_live(&t->m, fuzz_u8(in));
	size_t off = fuzz_u16(in), len = fuzz_u8(in);
	uint8_t pattern = fuzz_u8(in);
	unsigned char buf[256];
	size_t nbytes;
	void *p = NULL;

	if (slot < 0)
		return;
	nbytes = t->m.s[slot].nbytes;
	off = nbytes == 0 ? 0 : off % nbytes;
	if (len > nbytes - off)
		len = nbytes - off;
	fill_pattern(buf, len, pattern);
	if (!materialize(t, slot, &p))
		return;
	if (len > 0)
		memcpy((unsigned char *)p + off, buf, len);
	sm_write(&t->m, slot, off, len, buf);
}

static void
op_read(struct harness *t, struct fuzz_input *in)
{
	int slot = sm_pick_live(&t->m, fuzz_u8(in));
	size_t off = fuzz_u16(in), len = fuzz_u8(in), nbytes;
	cow_alloc_stats_t before, now;
	const unsigned char *p;

	if (slot < 0)
		return;
	before = alloc_stats(t, t->fault);
	nbytes = t->m.s[slot].nbytes;
	off = nbytes == 0 ? 0 : off % nbytes;
	if (len > nbytes - off)
		len = nbytes - off;
	p = cow_storage_const_data(t->h[slot]);
	if (len > 0 && memcmp(p + off, t->m.s[slot].bytes + off, len) != 0)
		fail(t, "slot %d: bytes [%zu, %zu) differ", slot, off,
		    off + len);
	now = alloc_stats(t, t->fault);
	if (now.allocs != before.allocs || now.frees != before.frees)
		fail(t, "reading slot %d allocated or freed", slot);
}

static void
op_release(struct harness *t, int slot)
{
	cow_storage_release(t->h[slot]);
	if (t->m.s[slot].refs == 1)
		t->h[slot] = NULL;
	sm_release(&t->m, slot);
}

static void
op_fault(struct harness *t, struct fuzz_input *in)
{
	uint8_t mode = fuzz_u8(in), arg = fuzz_u8(in);
	cow_status_t st;

	switch (mode % 4) {
	case 0:
		st = cow_allocator_fault_disarm(t->fault);
		t->mode = FAULT_OFF;
		break;
	case 1:
		st = cow_allocator_fault_fail_nth(t->fault, 1);
		t->mode = FAULT_NEXT;
		break;
	case 2:
		st = cow_allocator_fault_fail_nth(t->fault, 2 + arg % 8);
		t->mode = FAULT_ONCE;
		break;
	default:
		st = cow_allocator_fault_fail_random(t->fault, arg / 255.0,
		    fuzz_u64(in));
		t->mode = arg == 0 ? FAULT_OFF : arg == 255 ? FAULT_ALWAYS :
		    FAULT_MAYBE;
		break;
	}
	if (st != COW_OK)
		fail(t, "arming the fault allocator returned %s: %s",
		    cow_status_str(st), cow_last_error());
}

static void
run_op(struct harness *t, struct fuzz_input *in)
{
	uint8_t code = fuzz_u8(in) % OP_COUNT;
	int slot;

	t->op_name = op_names[code];
	switch (code) {
	case OP_NEW:
		op_new(t, in);
		break;
	case OP_EXTERNAL:
		op_external(t, in);
		break;
	case OP_CLONE:
		op_clone(t, in);
		break;
	case OP_WRITE:
		op_write(t, in);
		break;
	case OP_READ:
		op_read(t, in);
		break;
	case OP_MATERIALIZE:
		if ((slot = sm_pick_live(&t->m, fuzz_u8(in))) >= 0)
			materialize(t, slot, NULL);
		break;
	case OP_RELEASE:
		if ((slot = sm_pick_live(&t->m, fuzz_u8(in))) >= 0)
			op_release(t, slot);
		break;
	case OP_RETAIN:
		slot = sm_pick_live(&t->m, fuzz_u8(in));
		if (slot >= 0 && t->m.s[slot].refs < MAX_REFS) {
			cow_storage_retain(t->h[slot]);
			sm_retain(&t->m, slot);
		}
		break;
	default:
		op_fault(t, in);
		break;
	}
}

static void
teardown(struct harness *t)
{
	cow_alloc_stats_t fs, ds;
	cow_status_t st;

	t->op_name = "final release";
	cow_allocator_fault_disarm(t->fault);
	t->mode = FAULT_OFF;
	for (int i = 0; i < SM_SLOTS; i++) {
		while (t->m.s[i].live) {
			op_release(t, i);
			check_all(t);
		}
	}
	if (t->deleter_calls != t->externals)
		fail(t, "%u external storages, %u deleter calls",
		    t->externals, t->deleter_calls);
	fs = alloc_stats(t, t->fault);
	if (fs.live_bytes != 0 || fs.live_allocs != 0)
		fail(t, "fault allocator: %llu live bytes in %llu "
		    "allocations after releasing everything",
		    (unsigned long long)fs.live_bytes,
		    (unsigned long long)fs.live_allocs);
	ds = alloc_stats(t, cow_allocator_default());
	if (ds.live_bytes != t->default_live_bytes)
		fail(t, "default allocator: %llu live bytes, %llu before",
		    (unsigned long long)ds.live_bytes,
		    (unsigned long long)t->default_live_bytes);
	if ((st = cow_allocator_destroy(t->fault)) != COW_OK)
		fail(t, "cow_allocator_destroy returned %s: %s",
		    cow_status_str(st), cow_last_error());
	sm_fini(&t->m);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = {data, size};
	struct harness t;

	memset(&t, 0, sizeof t);
	sm_init(&t.m);
	t.op_name = "setup";
	if (cow_allocator_fault_new(cow_allocator_system(), &t.fault) !=
	    COW_OK)
		fail(&t, "cow_allocator_fault_new: %s", cow_last_error());
	t.default_live_bytes =
	    alloc_stats(&t, cow_allocator_default()).live_bytes;
	cow_stats_reset();
	for (t.op = 0; t.op < MAX_OPS && fuzz_more(&in); t.op++) {
		run_op(&t, &in);
		check_all(&t);
	}
	teardown(&t);
	return 0;
}
