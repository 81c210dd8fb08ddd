/*
 * api_snapshot.c - fuzz_api for snapshots (snapshot.h), against a model in
 * which a snapshot's lazy copy is an eager copy.
 *
 * Live tensors (any of the fifteen dtypes, 0 to 3 dimensions, bytes from
 * the input) and views of them (transposed, narrowed, selected, expanded,
 * strided, lazy clones) sit in SN_LIVE slots; calls write them, pin and
 * unpin them and write through the pin, take snapshots of random sets of
 * them (repeats and views of one storage included), release tensors early,
 * cancel, get, and save: streams into memory (in a random order, with
 * keep, a failing write callback, a pending cancel, and a write of a live
 * tensor from inside the callback) and persist-first saves into a memory
 * target (at a random base offset, in a random order, with keep, and a
 * write from inside the saver's pwrite callback, which then persists the
 * tensor itself: the writer's path of the persist-first mode, on the saving
 * thread).
 *
 * The model (api_snapshot.h): at the take, each tensor's bytes in C order,
 * read through its public layout; the tensors grouped by live storage as
 * snapshot.h says, each group an eager copy (a pinned storage) or hooked
 * (its storage's next write copies while the snapshot holds it, or first
 * persists it in a persist-first save that has not reached it). From that
 * it predicts every status, every byte a get, a write callback or a pwrite
 * callback receives (and where), which tensors each save releases, and the
 * accounting exactly: held tensors, extra bytes and their peak, writer
 * copies and persists, pinned copies and bytes; and the process's lazy
 * clones, bytes copied, pinned clones, snapshot copies and persists.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_snapshot.h"

#define SN_TARGET (SN_MAXT * SN_BYTES + 256)
#define S(st) (1u << -(st))
#define S_OK S(COW_OK)

#define fail(x, ...)                                                        \
	fuzz_fail("fuzz_api: snapshot call", (x)->call, (x)->func,          \
	    __VA_ARGS__)

/* The running save: what the callbacks check and the model catches up. */
struct sn_save {
	struct api_snapshot *a;
	struct sn_snap *m;
	bool persist, keep;
	size_t order[SN_MAXT];
	uint64_t off[SN_MAXT];       /* persist-first: each tensor's offset */
	size_t pos;                  /* the model is caught up to order[pos] */
	int calls;                   /* the saver's callback calls */
	int fail_at, err;            /* stream: call fail_at fails with err */
	int write_at, write_slot;    /* call write_at writes that live slot */
	double write_value;
	int depth;                   /* inside that write */
	uint64_t copies, persists;   /* the model's, by writes in callbacks */
	unsigned char buf[SN_TARGET];
	unsigned char hits[SN_TARGET];
	size_t len;
	uint64_t pdone, ptotal;
	int pcalls;
	bool pbad;
};

/* FUZZ_API_SNAPSHOT_TRACE=1: each call and each status it checks. */
static int trace = -1;

static void
expect(const struct api_snapshot *a, cow_status_t st, unsigned allowed)
{
	if (trace)
		fprintf(stderr, "  %s: %s\n", a->func, cow_status_str(st));
	if (st > 0 || st < COW_ERELEASED || (S(st) & allowed) == 0)
		fail(a, "returned %d (%s), allowed 0x%x: '%s'", (int)st,
		    cow_status_str(st), allowed, cow_last_error());
	if (st != COW_OK && strstr(cow_last_error(), a->func) == NULL)
		fail(a, "failed (%s) without naming the function: '%s'",
		    cow_status_str(st), cow_last_error());
}

static cow_stats_t
stats(void)
{
	cow_stats_t st;

	cow_stats_get(&st);
	return st;
}

/* @t's elements in C order into @out, through its public layout; their
 * bytes. */
static size_t
c_order(const struct api_snapshot *a, const cow_tensor_t *t,
    unsigned char *out)
{
	int nd = cow_tensor_ndim(t);
	const int64_t *sz = cow_tensor_sizes(t), *st = cow_tensor_strides(t);
	size_t k = cow_dtype_size(cow_tensor_dtype(t)), n = 0;
	int64_t idx[COW_TENSOR_MAX_NDIM] = {0};
	const unsigned char *p = NULL;

	if (cow_tensor_numel(t) == 0)
		return 0;
	if (cow_tensor_read_data(t, (const void **)&p) != COW_OK || p == NULL)
		fail(a, "read_data: %s", cow_last_error());
	for (int64_t e = 0; e < cow_tensor_numel(t); e++) {
		int64_t at = 0;

		for (int d = 0; d < nd; d++)
			at += idx[d] * st[d];
		memcpy(out + n, p + at * (int64_t)k, k);
		n += k;
		for (int d = nd - 1; d >= 0; d--) {
			if (++idx[d] < sz[d])
				break;
			idx[d] = 0;
		}
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* The model. */

static void
extra_add(struct sn_snap *m, uint64_t n)
{
	m->extra += n;
	if (m->extra > m->peak)
		m->peak = m->extra;
}

static void
group_release(struct sn_snap *m, size_t k)
{
	struct sn_group *g = &m->g[k];

	if (g->released)
		return;
	g->released = true;
	if (g->written || g->pinned)
		m->extra -= g->nbytes;
}

/* Tensor @i is released (early, or written by a save): its group goes
 * with its last held tensor. */
static void
tensor_drop(struct sn_snap *m, size_t i)
{
	if (!m->held[i])
		return;
	m->held[i] = false;
	for (size_t j = 0; j < m->n; j++)
		if (m->held[j] && m->group[j] == m->group[i])
			return;
	group_release(m, m->group[i]);
}

static void
group_drop_all(struct sn_snap *m, size_t k)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->group[i] == k)
			m->held[i] = false;
	group_release(m, k);
}

static struct sn_pin *
pin_of(struct api_snapshot *a, int sid)
{
	for (int i = 0; i < SN_LIVE; i++)
		if (a->pins[i].pins > 0 && a->pins[i].sid == sid)
			return &a->pins[i];
	return NULL;
}

/* A write of live storage @sid succeeded: every snapshot's hook on it
 * runs (persisting first in a persist-first save that has not reached
 * it, then counting the copy while it is held). Whether one counted. */
static bool
model_write(struct api_snapshot *a, int sid)
{
	struct sn_save *s = a->save;
	bool counted = false;

	for (int j = 0; j < SN_SNAPS; j++) {
		struct sn_snap *m = &a->snaps[j];

		if (m->snap == NULL)
			continue;
		for (size_t k = 0; k < m->ng; k++) {
			struct sn_group *g = &m->g[k];

			if (g->sid != sid || !g->hook)
				continue;
			g->hook = false;
			if (s != NULL && s->persist && s->m == m &&
			    !g->released && !g->persisted) {
				m->writer_persists++;
				s->persists++;
				g->persisted = true;
				if (!s->keep)
					group_drop_all(m, k);
			}
			if (g->released)
				continue;
			g->written = true;
			extra_add(m, g->nbytes);
			m->writer_copies++;
			counted = true;
		}
	}
	return counted;
}

static void
model_clear(struct sn_snap *m)
{
	memset(m, 0, sizeof *m);
}

/* Every snapshot against its model: accounting, accessors, held flags,
 * and every held tensor's value through a get. */
static void
check_snap(struct api_snapshot *a, struct sn_snap *m)
{
	cow_snapshot_stats_t st;
	uint64_t held = 0;
	unsigned char got[SN_BYTES];
	int was = trace;

	trace = 0; /* the checks are not the calls */
	a->func = "check";
	memset(&st, 0xa5, sizeof st);
	cow_snapshot_stats(m->snap, &st);
	for (size_t i = 0; i < m->n; i++)
		held += m->held[i];
	if (st.tensors != m->n || st.bytes != m->bytes ||
	    st.held_tensors != held || st.extra_bytes != m->extra ||
	    st.extra_peak != m->peak || st.writer_copies != m->writer_copies ||
	    st.writer_persists != m->writer_persists ||
	    st.pinned_copies != m->pinned_copies ||
	    st.pinned_bytes != m->pinned_bytes)
		fail(a, "stats (tensors %llu, bytes %llu, held %llu, extra "
		    "%llu, peak %llu, writer copies %llu, writer persists "
		    "%llu, pinned %llu / %llu bytes), model (%zu, %llu, %llu, "
		    "%llu, %llu, %llu, %llu, %llu / %llu)",
		    (unsigned long long)st.tensors,
		    (unsigned long long)st.bytes,
		    (unsigned long long)st.held_tensors,
		    (unsigned long long)st.extra_bytes,
		    (unsigned long long)st.extra_peak,
		    (unsigned long long)st.writer_copies,
		    (unsigned long long)st.writer_persists,
		    (unsigned long long)st.pinned_copies,
		    (unsigned long long)st.pinned_bytes, m->n,
		    (unsigned long long)m->bytes, (unsigned long long)held,
		    (unsigned long long)m->extra, (unsigned long long)m->peak,
		    (unsigned long long)m->writer_copies,
		    (unsigned long long)m->writer_persists,
		    (unsigned long long)m->pinned_copies,
		    (unsigned long long)m->pinned_bytes);
	if (cow_snapshot_count(m->snap) != m->n ||
	    cow_snapshot_is_held(m->snap, m->n) ||
	    cow_snapshot_name(m->snap, m->n) != NULL)
		fail(a, "count %zu, model %zu", cow_snapshot_count(m->snap),
		    m->n);
	for (size_t i = 0; i < m->n; i++) {
		cow_tensor_t *g = NULL;
		cow_status_t rc;

		if (cow_snapshot_is_held(m->snap, i) != m->held[i])
			fail(a, "tensor %zu held %d, model %d", i,
			    cow_snapshot_is_held(m->snap, i), m->held[i]);
		if (strcmp(cow_snapshot_name(m->snap, i), m->name[i]) != 0 ||
		    cow_snapshot_dtype(m->snap, i) != m->dtype[i] ||
		    cow_snapshot_ndim(m->snap, i) != m->ndim[i] ||
		    cow_snapshot_nbytes(m->snap, i) != m->nbytes[i])
			fail(a, "tensor %zu: name, dtype, ndim or nbytes", i);
		for (int d = 0; d < m->ndim[i]; d++)
			if (cow_snapshot_sizes(m->snap, i)[d] != m->sizes[i][d])
				fail(a, "tensor %zu: size %d", i, d);
		a->func = "cow_snapshot_get";
		rc = cow_snapshot_get(m->snap, i, &g);
		expect(a, rc, m->held[i] ? S_OK : S(COW_ERELEASED));
		a->func = "check";
		if (rc != COW_OK)
			continue;
		if (cow_tensor_dtype(g) != m->dtype[i] ||
		    cow_tensor_ndim(g) != m->ndim[i] ||
		    c_order(a, g, got) != m->nbytes[i] ||
		    memcmp(got, m->val[i], m->nbytes[i]) != 0)
			fail(a, "get %zu: not the value at the take", i);
		cow_tensor_release(g);
	}
	trace = was;
}

static void
check_all(struct api_snapshot *a)
{
	for (int j = 0; j < SN_SNAPS; j++)
		if (a->snaps[j].snap != NULL)
			check_snap(a, &a->snaps[j]);
}

/* ------------------------------------------------------------------ */
/* Live tensors. */

static cow_tensor_t *
pick_live(struct api_snapshot *a, struct fuzz_input *in, int *slot)
{
	int i = fuzz_u8(in) % SN_LIVE;

	for (int k = 0; k < SN_LIVE; k++, i = (i + 1) % SN_LIVE)
		if (a->live[i].t != NULL) {
			*slot = i;
			return a->live[i].t;
		}
	return NULL;
}

/* Put @t (over storage @sid) into slot @i, or empty it (@t NULL). The
 * tensor there goes; when it was the last over its storage, the storage
 * went, pins and all. */
static void
slot_put(struct api_snapshot *a, int i, cow_tensor_t *t, int sid)
{
	cow_tensor_t *old = a->live[i].t;
	int old_sid = a->live[i].sid;
	struct sn_pin *p;

	a->live[i].t = t;
	a->live[i].sid = sid;
	if (old == NULL)
		return;
	cow_tensor_release(old);
	for (int k = 0; k < SN_LIVE; k++)
		if (a->live[k].t != NULL && a->live[k].sid == old_sid)
			return;
	if ((p = pin_of(a, old_sid)) != NULL)
		p->pins = 0;
}

static void
call_new(struct api_snapshot *a, struct fuzz_input *in)
{
	cow_dtype_t dtype = (cow_dtype_t)(fuzz_u8(in) % COW_DTYPE_COUNT);
	int ndim = fuzz_u8(in) % 4, slot = fuzz_u8(in) % SN_LIVE;
	int64_t sizes[3], numel = 1;
	unsigned char data[SN_BYTES];
	size_t n;
	cow_tensor_t *t;

	for (int d = 0; d < ndim; d++) {
		sizes[d] = fuzz_u8(in) % 5;
		numel *= sizes[d];
	}
	n = (size_t)numel * cow_dtype_size(dtype);
	for (size_t b = 0; b < n; b++)
		data[b] = fuzz_u8(in);
	a->func = "cow_tensor_from_data";
	expect(a, cow_tensor_from_data(dtype, ndim, sizes, data,
	    cow_allocator_system(), &t), S_OK);
	slot_put(a, slot, t, a->next_sid++);
}

static void
call_view(struct api_snapshot *a, struct fuzz_input *in)
{
	int from, slot, sid;
	cow_tensor_t *t = pick_live(a, in, &from), *v = NULL, *u;
	uint8_t kind = fuzz_u8(in), x = fuzz_u8(in), y = fuzz_u8(in);
	int nd;
	int64_t size;
	cow_status_t rc = COW_EINVAL;

	slot = fuzz_u8(in) % SN_LIVE;
	if (t == NULL)
		return;
	nd = cow_tensor_ndim(t);
	size = nd > 0 ? cow_tensor_sizes(t)[x % nd] : 0;
	sid = a->live[from].sid;
	a->func = "view";
	switch (kind % 6) {
	case 0:
		if (nd >= 2)
			rc = cow_tensor_transpose(t, x % nd, y % nd, &v);
		break;
	case 1:
		if (nd >= 1)
			rc = cow_tensor_narrow(t, x % nd, y % (size + 1),
			    (y / 16) % (size - y % (size + 1) + 1), &v);
		break;
	case 2:
		if (nd >= 1 && size > 0)
			rc = cow_tensor_select(t, x % nd, y % size, &v);
		break;
	case 3:
		if (nd < 3 && cow_tensor_unsqueeze(t, 0, &u) == COW_OK) {
			int64_t sz[4] = {1 + y % 3};

			for (int d = 0; d < nd; d++)
				sz[d + 1] = cow_tensor_sizes(t)[d];
			rc = cow_tensor_expand(u, nd + 1, sz, &v);
			cow_tensor_release(u);
		}
		break;
	case 4:
		/* Any layout over the storage; out of it is refused. */
		rc = cow_tensor_as_strided(t, 2, (int64_t[]){x % 4, y % 4},
		    (int64_t[]){(x / 4) % 4, (y / 4) % 4}, (x / 16) % 8, &v);
		break;
	default:
		/* A lazy clone: a storage of its own. */
		rc = cow_tensor_lazy_clone(t, &v);
		sid = a->next_sid++;
		break;
	}
	if (rc != COW_OK)
		return;
	if ((size_t)cow_tensor_numel(v) * cow_dtype_size(cow_tensor_dtype(v)) >
	    SN_BYTES) {
		cow_tensor_release(v);
		return;
	}
	slot_put(a, slot, v, sid);
}

/* Write live slot @slot (set one element, or fill when @fill); whether it
 * wrote. */
static bool
write_slot(struct api_snapshot *a, int slot, double value, bool fill)
{
	cow_tensor_t *t = a->live[slot].t;
	int64_t idx[COW_TENSOR_MAX_NDIM] = {0};
	cow_stats_t g0 = stats(), g1;
	cow_status_t rc;
	bool counted;
	const char *func = a->func;

	if (t == NULL || cow_tensor_numel(t) == 0)
		return false;
	if (fill) {
		a->func = "cow_tensor_fill_";
		rc = cow_tensor_fill_(t, value);
		/* An expanded view's elements overlap: refused, unwritten. */
		expect(a, rc, S_OK | S(COW_EOVERLAP));
	} else {
		a->func = "cow_tensor_set_f64";
		rc = cow_tensor_set_f64(t, idx, value);
		expect(a, rc, S_OK);
	}
	if (rc != COW_OK) {
		a->func = func;
		return false;
	}
	counted = model_write(a, a->live[slot].sid);
	g1 = stats();
	if (g1.snapshot_copies != g0.snapshot_copies + counted)
		fail(a, "snapshot_copies +%llu, model +%d",
		    (unsigned long long)(g1.snapshot_copies -
		    g0.snapshot_copies), counted);
	if (a->save != NULL)
		a->save->copies += counted;
	a->func = func;
	return true;
}

static void
call_write(struct api_snapshot *a, struct fuzz_input *in)
{
	int slot;
	uint8_t how = fuzz_u8(in);

	if (pick_live(a, in, &slot) == NULL)
		return;
	write_slot(a, slot, how % 16, how & 16);
}

/* Pin, unpin, or write through a pin. */
static void
call_pin(struct api_snapshot *a, struct fuzz_input *in)
{
	int slot;
	cow_tensor_t *t = pick_live(a, in, &slot);
	uint8_t how = fuzz_u8(in);
	struct sn_pin *p;
	void *ptr;
	int sid;

	if (t == NULL)
		return;
	sid = a->live[slot].sid;
	p = pin_of(a, sid);
	switch (how % 3) {
	case 0:
		a->func = "cow_tensor_pin";
		expect(a, cow_tensor_pin(t, &ptr), S_OK);
		/* A pin is a write. */
		model_write(a, sid);
		if (p == NULL) {
			for (int i = 0; i < SN_LIVE && p == NULL; i++)
				if (a->pins[i].pins == 0)
					p = &a->pins[i];
			p->sid = sid;
		}
		p->pins++;
		p->data = (unsigned char *)(uintptr_t)cow_storage_const_data(
		    cow_tensor_storage(t));
		p->nbytes = cow_storage_nbytes(cow_tensor_storage(t));
		break;
	case 1:
		if (p == NULL)
			return;
		a->func = "cow_tensor_unpin";
		expect(a, cow_tensor_unpin(t), S_OK);
		p->pins--;
		break;
	default:
		/* The kept pointer writes the live storage only. */
		if (p != NULL && p->nbytes > 0)
			memset(p->data, how, p->nbytes);
		break;
	}
}

/* ------------------------------------------------------------------ */
/* Snapshots. */

static struct sn_snap *
pick_snap(struct api_snapshot *a, struct fuzz_input *in)
{
	struct sn_snap *m = &a->snaps[fuzz_u8(in) % SN_SNAPS];

	return m->snap != NULL ? m : NULL;
}

static void
call_take(struct api_snapshot *a, struct fuzz_input *in)
{
	struct sn_snap *m = &a->snaps[fuzz_u8(in) % SN_SNAPS];
	uint8_t how = fuzz_u8(in);
	size_t n = how % (SN_MAXT + 1);
	cow_tensor_t *t[SN_MAXT];
	const char *names[SN_MAXT];
	int sid[SN_MAXT];
	cow_snapshot_t *snap = NULL;
	cow_stats_t g0, g1;
	uint64_t pinned = 0, pinned_bytes = 0;
	bool null_name = (how & 0xf0) == 0xf0 && n > 0;
	cow_status_t rc;

	if (m->snap != NULL) {
		cow_snapshot_release(m->snap);
		model_clear(m);
	}
	for (size_t i = 0; i < n; i++) {
		int slot;

		if ((t[i] = pick_live(a, in, &slot)) == NULL) {
			n = i;
			break;
		}
		sid[i] = a->live[slot].sid;
		snprintf(m->name[i], sizeof m->name[0], "t%zu", i);
		names[i] = m->name[i];
	}
	if (null_name && n > 0)
		names[n - 1] = NULL;
	a->func = "cow_snapshot_take";
	g0 = stats();
	rc = cow_snapshot_take(n, n > 0 ? t : NULL, n > 0 ? names : NULL,
	    &snap);
	g1 = stats();
	expect(a, rc, null_name && n > 0 ? S(COW_EINVAL) : S_OK);
	if (rc != COW_OK) {
		if (snap != NULL || g1.lazy_clones != g0.lazy_clones)
			fail(a, "a refused take took something");
		model_clear(m);
		return;
	}
	/* The model: groups by live storage, values at the take. */
	m->snap = snap;
	m->n = n;
	for (size_t i = 0; i < n; i++) {
		size_t k;
		cow_storage_t *st = cow_tensor_storage(t[i]);

		for (k = 0; k < m->ng; k++)
			if (m->g[k].sid == sid[i])
				break;
		if (k == m->ng) {
			struct sn_group *g = &m->g[m->ng++];

			g->sid = sid[i];
			g->nbytes = cow_storage_nbytes(st);
			g->pinned = g->nbytes > 0 && pin_of(a, sid[i]) != NULL;
			g->hook = g->nbytes > 0 && !g->pinned;
			if (g->pinned) {
				pinned++;
				pinned_bytes += g->nbytes;
			}
		}
		m->group[i] = k;
		m->held[i] = true;
		m->dtype[i] = cow_tensor_dtype(t[i]);
		m->ndim[i] = cow_tensor_ndim(t[i]);
		memcpy(m->sizes[i], cow_tensor_sizes(t[i]),
		    (size_t)m->ndim[i] * sizeof(int64_t));
		m->nbytes[i] = c_order(a, t[i], m->val[i]);
		m->bytes += m->nbytes[i];
	}
	m->pinned_copies = pinned;
	m->pinned_bytes = pinned_bytes;
	extra_add(m, pinned_bytes);
	if (g1.lazy_clones != g0.lazy_clones + m->ng ||
	    g1.bytes_copied != g0.bytes_copied + pinned_bytes ||
	    g1.pinned_clones != g0.pinned_clones + pinned)
		fail(a, "take of %zu storages (%llu pinned, %llu bytes): lazy "
		    "clones +%llu, bytes copied +%llu, pinned clones +%llu",
		    m->ng, (unsigned long long)pinned,
		    (unsigned long long)pinned_bytes,
		    (unsigned long long)(g1.lazy_clones - g0.lazy_clones),
		    (unsigned long long)(g1.bytes_copied - g0.bytes_copied),
		    (unsigned long long)(g1.pinned_clones - g0.pinned_clones));
}

/* Release a tensor early, cancel, or release the snapshot. */
static void
call_release(struct api_snapshot *a, struct fuzz_input *in)
{
	struct sn_snap *m = pick_snap(a, in);
	uint8_t how = fuzz_u8(in);
	size_t i = fuzz_u8(in) % (SN_MAXT + 1);

	if (m == NULL)
		return;
	switch (how % 6) {
	case 4:
		cow_snapshot_cancel(m->snap);
		m->cancel = true;
		break;
	case 5:
		cow_snapshot_retain(m->snap);
		cow_snapshot_release(m->snap);
		if (how & 8) {
			cow_snapshot_release(m->snap);
			model_clear(m);
		}
		break;
	default:
		a->func = "cow_snapshot_release_tensor";
		expect(a, cow_snapshot_release_tensor(m->snap, i),
		    i < m->n ? S_OK : S(COW_ERANGE));
		if (i < m->n)
			tensor_drop(m, i);
		break;
	}
}

/* A get, whose copy is then written: the snapshot never sees it. */
static void
call_get(struct api_snapshot *a, struct fuzz_input *in)
{
	struct sn_snap *m = pick_snap(a, in);
	size_t i = fuzz_u8(in) % (SN_MAXT + 1);
	cow_tensor_t *g = NULL;
	unsigned char got[SN_BYTES];
	cow_status_t rc;

	if (m == NULL)
		return;
	a->func = "cow_snapshot_get";
	rc = cow_snapshot_get(m->snap, i, &g);
	expect(a, rc, i >= m->n ? S(COW_ERANGE) : m->held[i] ? S_OK :
	    S(COW_ERELEASED));
	if (rc != COW_OK)
		return;
	if (c_order(a, g, got) != m->nbytes[i] ||
	    memcmp(got, m->val[i], m->nbytes[i]) != 0)
		fail(a, "get %zu: not the value at the take", i);
	if (cow_tensor_numel(g) > 0) {
		int64_t idx[COW_TENSOR_MAX_NDIM] = {0};

		a->func = "cow_tensor_fill_";
		expect(a, cow_tensor_fill_(g, 3), S_OK | S(COW_EOVERLAP));
		a->func = "cow_tensor_set_f64";
		expect(a, cow_tensor_set_f64(g, idx, 5), S_OK);
	}
	cow_tensor_release(g);
}

/* ------------------------------------------------------------------ */
/* Saves. */

static void
stream_catch_up(struct sn_save *s, size_t upto)
{
	for (; s->pos < upto; s->pos++)
		if (!s->keep)
			tensor_drop(s->m, s->order[s->pos]);
}

static void
persist_catch_up(struct sn_save *s, size_t upto)
{
	struct sn_snap *m = s->m;

	for (; s->pos < upto; s->pos++) {
		size_t k = m->group[s->order[s->pos]];

		if (m->g[k].persisted || m->g[k].released)
			continue;
		m->g[k].persisted = true;
		if (!s->keep)
			group_drop_all(m, k);
	}
}

/* The position of the @c-th (1-based) tensor with bytes in the order;
 * the count of them when there are fewer. */
static size_t
nth_with_bytes(const struct sn_save *s, int c)
{
	size_t pos;

	for (pos = 0; pos < s->m->n; pos++)
		if (s->m->nbytes[s->order[pos]] > 0 && --c == 0)
			return pos;
	return pos;
}

/* The write the input asked for, from inside a callback; never of the
 * storage a persist-first saver has claimed (it would wait for itself). */
static void
write_inside(struct sn_save *s, int busy_sid)
{
	struct api_snapshot *a = s->a;
	int slot = s->write_slot;

	if (a->live[slot].t == NULL ||
	    (s->persist && a->live[slot].sid == busy_sid))
		return;
	s->depth++;
	write_slot(a, slot, s->write_value, false);
	s->depth--;
}

static int
sn_write(void *ctx, const void *data, size_t n)
{
	struct sn_save *s = ctx;
	struct api_snapshot *a = s->a;
	struct sn_snap *m = s->m;
	size_t pos, i;

	s->calls++;
	if ((pos = nth_with_bytes(s, s->calls)) >= m->n)
		fail(a, "write call %d: more calls than tensors", s->calls);
	i = s->order[pos];
	stream_catch_up(s, pos);
	if (n != m->nbytes[i] || memcmp(data, m->val[i], n) != 0)
		fail(a, "write call %d: %zu bytes, not tensor %zu's %llu at "
		    "the take", s->calls, n, i,
		    (unsigned long long)m->nbytes[i]);
	if (s->calls == s->fail_at)
		return s->err;
	memcpy(s->buf + s->len, data, n);
	s->len += n;
	if (s->calls == s->write_at)
		write_inside(s, -1);
	return 0;
}

static int
sn_pwrite(void *ctx, const void *data, size_t n, uint64_t off)
{
	struct sn_save *s = ctx;
	struct api_snapshot *a = s->a;
	struct sn_snap *m = s->m;
	size_t i, pos;

	for (i = 0; i < m->n; i++)
		if (m->nbytes[i] > 0 && s->off[i] == off && m->nbytes[i] == n)
			break;
	if (i == m->n)
		fail(a, "pwrite of %zu bytes at %llu: no tensor's place", n,
		    (unsigned long long)off);
	if (memcmp(data, m->val[i], n) != 0)
		fail(a, "pwrite of tensor %zu: not its value at the take", i);
	for (size_t b = 0; b < n; b++)
		if (s->hits[off + b]++ != 0)
			fail(a, "byte %llu written twice",
			    (unsigned long long)(off + b));
	memcpy(s->buf + off, data, n);
	if (s->depth > 0)
		return 0; /* a writer persisting a tensor itself */
	/* The saver persists its groups in the order of their first
	 * tensors: all before this one's are done. */
	s->calls++;
	for (pos = 0; m->group[s->order[pos]] != m->group[i]; pos++)
		continue;
	persist_catch_up(s, pos);
	if (s->calls == s->write_at)
		write_inside(s, m->g[m->group[i]].sid);
	return 0;
}

static void
sn_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct sn_save *s = ctx;

	if (done > total || (s->pcalls > 0 && (done < s->pdone ||
	    total != s->ptotal)))
		s->pbad = true;
	s->pcalls++;
	s->pdone = done;
	s->ptotal = total;
}

/* The order the input gives: none, a permutation, or a bad one; whether
 * it is valid. */
static bool
pick_order(struct sn_save *s, struct fuzz_input *in, unsigned kind,
    const size_t **order)
{
	size_t n = s->m->n;

	for (size_t k = 0; k < n; k++)
		s->order[k] = k;
	*order = NULL;
	if (kind == 0 || n == 0)
		return true;
	for (size_t k = n - 1; k > 0; k--) {
		size_t j = fuzz_u8(in) % (k + 1), x = s->order[k];

		s->order[k] = s->order[j];
		s->order[j] = x;
	}
	*order = s->order;
	if (kind < 3)
		return true;
	/* Out of range, or (with two or more) a repeat. */
	{
		size_t k = fuzz_u8(in) % n;

		s->order[k] = n > 1 && (fuzz_u8(in) & 1) ?
		    s->order[(k + 1) % n] : n + fuzz_u8(in);
	}
	return false;
}

static void
call_save(struct api_snapshot *a, struct fuzz_input *in, bool persist)
{
	static const int errs[] = {EIO, ENOSPC, EPIPE, EFBIG};
	struct sn_snap *m = pick_snap(a, in);
	uint8_t how = fuzz_u8(in);
	struct sn_save *s;
	cow_snapshot_save_t d;
	const size_t *order;
	cow_stats_t g0, g1;
	bool valid, held = true;
	size_t upto, with_bytes = 0;
	cow_status_t rc, want;
	uint64_t total = 0, at;

	if (m == NULL)
		return;
	if ((s = calloc(1, sizeof *s)) == NULL)
		abort();
	s->a = a;
	s->m = m;
	s->persist = persist;
	s->keep = how & 1;
	valid = pick_order(s, in, (how >> 1) % 4, &order);
	s->fail_at = persist ? 0 : (how >> 3) % 4;
	s->err = errs[(how >> 5) % 4];
	s->write_at = fuzz_u8(in) % 4;
	s->write_slot = fuzz_u8(in) % SN_LIVE;
	s->write_value = fuzz_u8(in) % 16;
	memset(&d, 0, sizeof d);
	d.mode = persist ? COW_SNAPSHOT_PERSIST_FIRST : COW_SNAPSHOT_STREAM;
	d.write = sn_write;
	d.pwrite = sn_pwrite;
	d.ctx = s;
	d.base_offset = persist ? fuzz_u8(in) : 0;
	d.order = order;
	d.progress = sn_progress;
	d.progress_ctx = s;
	d.keep = s->keep;
	for (size_t i = 0; i < m->n; i++)
		held &= m->held[i];
	for (size_t k = 0; valid && k < m->n; k++) {
		s->off[s->order[k]] = d.base_offset + total;
		total += m->nbytes[s->order[k]];
		with_bytes += m->nbytes[s->order[k]] > 0;
	}
	a->func = "cow_snapshot_save";
	a->save = s;
	g0 = stats();
	rc = cow_snapshot_save(m->snap, &d);
	g1 = stats();
	a->save = NULL;
	if (!held || !valid) {
		/* Refused before it started: nothing happened. */
		expect(a, rc, !held ? S(COW_ERELEASED) : S(COW_EINVAL));
		if (s->calls != 0 || s->pcalls != 0)
			fail(a, "a refused save called back");
		free(s);
		return;
	}
	/* The model's run. */
	/* A pending cancel stops the save before its first tensor (a
	 * stream) or group (a persist-first save): it writes nothing, empty
	 * tensors included; an empty snapshot has nothing to stop. */
	if (m->cancel)
		want = m->n > 0 ? COW_ECANCELED : COW_OK;
	else if (s->fail_at > 0 && (size_t)s->fail_at <= with_bytes)
		want = COW_EIO;
	else
		want = COW_OK;
	expect(a, rc, S(want));
	m->cancel = false;
	if (rc == COW_EIO && strstr(cow_last_error(), strerror(s->err)) ==
	    NULL)
		fail(a, "the message does not name the errno: '%s'",
		    cow_last_error());
	if (persist) {
		if (rc == COW_OK)
			persist_catch_up(s, m->n);
		for (size_t k = 0; k < m->ng; k++)
			m->g[k].persisted = false;
		for (size_t b = 0; b < SN_TARGET; b++) {
			bool in_range = false;

			for (size_t i = 0; i < m->n && rc == COW_OK; i++)
				in_range |= b >= s->off[i] &&
				    b < s->off[i] + m->nbytes[i];
			if (s->hits[b] != in_range)
				fail(a, "target byte %zu written %u times",
				    b, s->hits[b]);
		}
	} else {
		upto = rc == COW_OK ? m->n : rc == COW_EIO ?
		    nth_with_bytes(s, s->fail_at) : 0;
		stream_catch_up(s, upto);
		at = 0;
		for (size_t k = 0; k < upto; k++) {
			size_t i = s->order[k];

			if (at + m->nbytes[i] > s->len ||
			    memcmp(s->buf + at, m->val[i], m->nbytes[i]) != 0)
				fail(a, "stream: tensor %zu not at %llu", i,
				    (unsigned long long)at);
			at += m->nbytes[i];
		}
		if (at != s->len)
			fail(a, "stream: %zu bytes, model %llu", s->len,
			    (unsigned long long)at);
	}
	if (s->pbad || (rc == COW_OK && (persist || total > 0) &&
	    (s->pcalls == 0 || s->pdone != total || s->ptotal != total)))
		fail(a, "progress: %d calls, last %llu of %llu (%s), model "
		    "%llu", s->pcalls, (unsigned long long)s->pdone,
		    (unsigned long long)s->ptotal, s->pbad ? "backwards" :
		    "monotone", (unsigned long long)total);
	if (g1.snapshot_persists != g0.snapshot_persists + s->persists ||
	    g1.snapshot_copies != g0.snapshot_copies + s->copies)
		fail(a, "snapshot persists +%llu, copies +%llu; model +%llu, "
		    "+%llu", (unsigned long long)(g1.snapshot_persists -
		    g0.snapshot_persists), (unsigned long long)(
		    g1.snapshot_copies - g0.snapshot_copies),
		    (unsigned long long)s->persists,
		    (unsigned long long)s->copies);
	free(s);
}

static void
call_stream(struct api_snapshot *a, struct fuzz_input *in)
{
	call_save(a, in, false);
}

static void
call_persist(struct api_snapshot *a, struct fuzz_input *in)
{
	call_save(a, in, true);
}

typedef void (*sn_fn)(struct api_snapshot *, struct fuzz_input *);

static const struct {
	sn_fn fn;
	const char *name;
} sn_calls[] = {
	{call_new, "new"}, {call_view, "view"}, {call_write, "write"},
	{call_pin, "pin"}, {call_take, "take"}, {call_take, "take"},
	{call_release, "release"}, {call_get, "get"},
	{call_stream, "stream"}, {call_persist, "persist-first"}
};

void
api_snapshot_init(struct api_snapshot *a)
{
	memset(a, 0, sizeof *a);
	if (trace < 0)
		trace = getenv("FUZZ_API_SNAPSHOT_TRACE") != NULL;
}

void
api_snapshot_call(struct api_snapshot *a, struct fuzz_input *in)
{
	unsigned k = fuzz_u8(in) % (sizeof sn_calls / sizeof sn_calls[0]);

	if (trace)
		fprintf(stderr, "call %zu: snapshot %s\n", a->call,
		    sn_calls[k].name);
	sn_calls[k].fn(a, in);
	check_all(a);
}

void
api_snapshot_fini(struct api_snapshot *a)
{
	a->func = "teardown";
	check_all(a);
	for (int j = 0; j < SN_SNAPS; j++)
		cow_snapshot_release(a->snaps[j].snap);
	for (int i = 0; i < SN_LIVE; i++)
		slot_put(a, i, NULL, 0);
	memset(a, 0, sizeof *a);
}
