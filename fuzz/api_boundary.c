/*
 * api_boundary.c - the boundary part of fuzz_api: tensors over external
 * memory, pins, DLPack export and import (api_boundary.h).
 *
 * Every call must return a documented status (the rules of tensor.h,
 * storage.h and dlpack.h, recomputed here from the arguments), leave its
 * out-parameter alone on failure, never crash or trip a sanitizer. Read-only
 * memory lives in .rodata, so a write the library should never make faults.
 * Every deleter must run exactly once: a storage's at its last release, a
 * DLPack producer's at the last release or before a refused import returns,
 * an export's when the consumer (this file) calls it, in any order with
 * the tensor's release.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api_boundary.h"
#include "dl_dtype.h"

#define S(st) (1u << -(st))
#define BUF_MAX 4096          /* largest real external buffer */
#define BORROWED_MAX 64       /* borrowed buffers kept until the end */

/* Read-only memory: in .rodata (initialised, const), so writing it faults. */
static const uint8_t rodata[BUF_MAX] __attribute__((aligned(64))) = {1, 2,
    3, 4, 5, 6, 7, 8};

/* Borrowed buffers: the caller keeps them until every storage is gone. */
static void *borrowed[BORROWED_MAX];
static unsigned nborrowed;

static int sentinel_object;
#define SENTINEL ((void *)&sentinel_object)

#define fail(x, ...)                                                        \
	fuzz_fail("fuzz_api: boundary call", (x)->call, (x)->func,          \
	    __VA_ARGS__)

static bool
expect(const struct api_boundary *b, cow_status_t st, unsigned allowed,
    void *out)
{
	if (st > 0 || st < COW_EFORMAT || (S(st) & allowed) == 0)
		fail(b, "returned %d (%s), allowed 0x%x: '%s'", (int)st,
		    cow_status_str(st), allowed, cow_last_error());
	if (st == COW_OK)
		return true;
	if (strstr(cow_last_error(), b->func) == NULL)
		fail(b, "failed (%s) without naming the function: '%s'",
		    cow_status_str(st), cow_last_error());
	if (out != SENTINEL)
		fail(b, "failed (%s) but wrote its out-parameter",
		    cow_status_str(st));
	return false;
}

static bool
dl_known(struct cow__dl_dtype t, cow_dtype_t *out)
{
	for (int d = 0; d < COW_DTYPE_COUNT; d++) {
		uint8_t code, bits;

		if (dl_of((cow_dtype_t)d, &code, &bits) && code == t.code &&
		    bits == t.bits && t.lanes == 1) {
			*out = (cow_dtype_t)d;
			return true;
		}
	}
	return false;
}

static size_t
alignment_of(cow_dtype_t d)
{
	size_t size = cow_dtype_size(d);

	return strncmp(cow_dtype_name(d), "complex", 7) == 0 ? size / 2 : size;
}

/* ------------------------------------------------------------------ */
/* Layouts: what tensor.h says is valid, and the bytes it reaches.     */

struct layout {
	int ndim;
	int64_t sizes[COW_TENSOR_MAX_NDIM + 2];
	int64_t strides[COW_TENSOR_MAX_NDIM + 2];
	bool null_sizes, null_strides;
	int64_t offset;
};

static int64_t
pick_small(struct fuzz_input *in)
{
	uint8_t k = fuzz_u8(in);

	if (k < 200)
		return k % 6;
	if (k < 220)
		return -(int64_t)(k % 3) - 1;
	if (k < 240)
		return (int64_t)1 << (k % 63);
	return (int64_t)fuzz_u64(in);
}

static void
pick_layout(struct fuzz_input *in, struct layout *l)
{
	uint8_t k = fuzz_u8(in);

	l->ndim = k < 240 ? k % 4 : (k & 1) ? COW_TENSOR_MAX_NDIM + 1 : -1;
	l->null_sizes = (fuzz_u8(in) & 31) == 0;
	l->null_strides = (fuzz_u8(in) & 3) == 0;
	for (int d = 0; d < l->ndim && d < COW_TENSOR_MAX_NDIM + 2; d++) {
		l->sizes[d] = pick_small(in);
		l->strides[d] = pick_small(in);
	}
	l->offset = pick_small(in);
}

/* Row-major strides for the sizes (the library's when strides are NULL). */
static void
contiguous(struct layout *l)
{
	int64_t s = 1;

	for (int d = l->ndim - 1; d >= 0; d--) {
		l->strides[d] = s;
		if (l->sizes[d] > 0 && !__builtin_mul_overflow(s, l->sizes[d],
		    &s))
			continue;
		if (l->sizes[d] > 0)
			s = INT64_MAX; /* the shape check refuses it */
	}
}

/*
 * The statuses a tensor over (@l, @itemsize) may give before any memory is
 * looked at, and its extent in *end (valid when it gives none): 0 when the
 * layout is valid.
 */
static unsigned
layout_errors(struct layout *l, size_t itemsize, int64_t *end)
{
	unsigned bad = 0;
	int64_t n = 1, last, span, nbytes;
	bool empty = false;

	if (l->ndim < 0 || l->ndim > COW_TENSOR_MAX_NDIM)
		return S(COW_ERANGE);
	if (l->ndim > 0 && l->null_sizes)
		return S(COW_EINVAL);
	for (int d = 0; d < l->ndim; d++) {
		if (l->sizes[d] < 0)
			bad |= S(COW_EINVAL);
		empty |= l->sizes[d] == 0;
	}
	if (bad)
		return bad;
	for (int d = 0; d < l->ndim && !empty; d++)
		if (__builtin_mul_overflow(n, l->sizes[d], &n))
			bad |= S(COW_EOVERFLOW);
	if (!empty && (bad || __builtin_mul_overflow(n, (int64_t)itemsize,
	    &nbytes) || nbytes > PTRDIFF_MAX))
		bad |= S(COW_EOVERFLOW);
	if (l->null_strides && l->ndim > 0)
		contiguous(l);
	if (l->offset < 0)
		bad |= S(COW_EINVAL);
	for (int d = 0; d < l->ndim; d++)
		if (l->strides[d] < 0)
			bad |= S(COW_EINVAL);
	if (bad)
		return bad;
	last = l->offset;
	for (int d = 0; d < l->ndim && !empty; d++)
		if (__builtin_mul_overflow(l->strides[d], l->sizes[d] - 1,
		    &span) || __builtin_add_overflow(last, span, &last))
			return S(COW_EOVERFLOW);
	if (__builtin_add_overflow(last, empty ? 0 : 1, end) ||
	    __builtin_mul_overflow(*end, (int64_t)itemsize, end) ||
	    *end > PTRDIFF_MAX)
		return S(COW_EOVERFLOW);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Tensors over external memory.                                        */

void
api_count_deleter(void *data, size_t nbytes, void *ctx)
{
	unsigned *calls = ctx;

	(void)nbytes;
	(*calls)++;
	free(data);
}

/* Pool @t; @home: it is the tensor the caller made over borrowed memory
 * (whose pin may be refused with COW_EBUSY). */
static void
keep(struct api_boundary *b, cow_tensor_t *t, bool home)
{
	for (int i = 0; i < BOUNDARY_TENSORS; i++) {
		if (b->pool[i] == NULL) {
			b->pool[i] = t;
			b->pins[i] = 0;
			b->home[i] = home;
			return;
		}
	}
	cow_tensor_release(t);
}

/* Every element read (ASan checks the bytes). */
static void
touch(const cow_tensor_t *t)
{
	const uint8_t *p = cow_tensor_const_data(t);
	size_t es = cow_dtype_size(cow_tensor_dtype(t));
	int nd = cow_tensor_ndim(t);
	const int64_t *sz = cow_tensor_sizes(t), *st = cow_tensor_strides(t);
	volatile uint8_t sink = 0;
	int64_t n = cow_tensor_numel(t);

	for (int64_t k = 0; k < n && k < 4096; k++) {
		int64_t r = k, e = 0;

		for (int d = nd - 1; d >= 0; d--) {
			e += (r % sz[d]) * st[d];
			r /= sz[d];
		}
		for (size_t i = 0; i < es; i++)
			sink ^= p[(size_t)e * es + i];
	}
	(void)sink;
}

enum data_kind { D_OWNED, D_BORROWED, D_RODATA, D_NULL, D_MISALIGNED,
    D_KINDS };

static void
call_from_external(struct api_boundary *b, struct fuzz_input *in)
{
	uint8_t how = fuzz_u8(in);
	enum data_kind dk = (enum data_kind)(fuzz_u8(in) % D_KINDS);
	int dt = fuzz_u8(in);
	cow_dtype_t dtype = (cow_dtype_t)(dt < 240 ? dt % COW_DTYPE_COUNT :
	    dt);
	unsigned flags = fuzz_u8(in);
	bool null_out = (how & 15) == 0, capped = how & 16;
	size_t itemsize = cow_dtype_size(dtype);
	cow_tensor_t *t = SENTINEL;
	unsigned bad = 0;
	struct layout l;
	int64_t end = 0;
	uint8_t *buf = NULL, *data = NULL;
	cow_status_t st;

	b->func = "cow_tensor_from_external";
	pick_layout(in, &l);
	flags = flags < 224 ? flags % 4 : flags;
	if (itemsize == 0)
		bad |= S(COW_EINVAL);
	else
		bad |= layout_errors(&l, itemsize, &end);
	if ((flags & ~(unsigned)(COW_STORAGE_NOT_SHAREABLE |
	    COW_STORAGE_READ_ONLY)) != 0)
		bad |= S(COW_EINVAL);
	if (dk == D_RODATA)
		flags |= COW_STORAGE_READ_ONLY; /* read-only memory, said so */
	/* Real memory only for a layout that reaches at most BUF_MAX bytes;
	 * a larger valid one gets NULL data, which must be refused. */
	if (dk != D_NULL && bad == 0 && end > BUF_MAX)
		dk = D_NULL;
	switch (dk) {
	case D_OWNED:
	case D_BORROWED:
	case D_MISALIGNED:
		if ((buf = malloc(BUF_MAX + 16)) == NULL)
			abort();
		memset(buf, 0x5a, BUF_MAX + 16);
		data = dk == D_MISALIGNED && itemsize > 1 ? buf + 1 : buf;
		break;
	case D_RODATA:
		data = (uint8_t *)(uintptr_t)rodata;
		break;
	default:
		break;
	}
	if (dk == D_NULL && end > 0)
		bad |= S(COW_EINVAL);
	if (data != NULL && itemsize > 1 &&
	    (uintptr_t)data % alignment_of(dtype) != 0)
		bad |= S(COW_EINVAL);
	if (null_out)
		bad |= S(COW_EINVAL);
	st = cow_tensor_from_external(data, dtype, l.ndim,
	    l.null_sizes ? NULL : l.sizes, l.null_strides ? NULL : l.strides,
	    l.offset, dk == D_OWNED ? api_count_deleter : NULL,
	    &b->deleter_calls, flags,
	    capped ? b->capped : NULL, null_out ? NULL : &t);
	if (!expect(b, st, bad ? bad : S(COW_OK) |
	    (capped ? S(COW_ENOMEM) : 0), null_out ? SENTINEL : t)) {
		free(buf); /* nothing was taken */
		return;
	}
	if (null_out)
		fail(b, "succeeded with out NULL");
	if (cow_tensor_numel(t) > 0 && cow_tensor_const_data(t) !=
	    (const void *)(data + l.offset * (int64_t)itemsize))
		fail(b, "the tensor does not view the caller's memory");
	if (cow_storage_nbytes(cow_tensor_storage(t)) != (size_t)end)
		fail(b, "storage of %zu bytes, the layout reaches %lld",
		    cow_storage_nbytes(cow_tensor_storage(t)), (long long)end);
	if (cow_storage_is_read_only(cow_tensor_storage(t)) !=
	    ((flags & COW_STORAGE_READ_ONLY) != 0) ||
	    cow_storage_is_pinned(cow_tensor_storage(t)) !=
	    ((flags & COW_STORAGE_NOT_SHAREABLE) != 0))
		fail(b, "flags 0x%x: read-only %d, pinned %d", flags,
		    cow_storage_is_read_only(cow_tensor_storage(t)),
		    cow_storage_is_pinned(cow_tensor_storage(t)));
	touch(t);
	if (dk == D_OWNED) {
		b->deleters_owed++;
	} else if (buf != NULL) {
		if (nborrowed == BORROWED_MAX) {
			cow_tensor_release(t);
			free(buf);
			return;
		}
		borrowed[nborrowed++] = buf;
	}
	keep(b, t, dk != D_OWNED && !(flags & COW_STORAGE_READ_ONLY));
}

/* ------------------------------------------------------------------ */
/* Pins.                                                                */

static void
call_pin(struct api_boundary *b, struct fuzz_input *in)
{
	unsigned i = fuzz_u8(in) % (BOUNDARY_TENSORS + 1);
	cow_tensor_t *t = i < BOUNDARY_TENSORS ? b->pool[i] : NULL;
	uint8_t how = fuzz_u8(in);
	cow_storage_t *s = cow_tensor_storage(t);
	void *p = SENTINEL;
	cow_status_t st;

	if (how & 1) {
		/* Unpin only what this file pinned (or refused cases): an
		 * export's pin is the export's. */
		b->func = "cow_tensor_unpin";
		if (t != NULL && b->pins[i] == 0 && cow_storage_is_pinned(s))
			return;
		st = cow_tensor_unpin(t);
		expect(b, st, t != NULL && b->pins[i] > 0 ? S(COW_OK) :
		    S(COW_EINVAL), SENTINEL);
		if (st == COW_OK)
			b->pins[i]--;
		return;
	}
	b->func = "cow_tensor_pin";
	st = cow_tensor_pin(t, (how & 6) == 0 ? NULL : &p);
	/* COW_EBUSY: the tensor over borrowed memory while lazy clones
	 * still share it. */
	if (!expect(b, st, t == NULL || (how & 6) == 0 ? S(COW_EINVAL) :
	    S(COW_OK) | S(COW_ENOMEM) | (b->home[i] &&
	    cow_storage_share_count(s) > 1 ? S(COW_EBUSY) : 0), p))
		return;
	b->pins[i]++;
	if (!cow_storage_is_pinned(s) || cow_storage_is_cow(s) ||
	    cow_storage_is_read_only(s))
		fail(b, "pinned %d, cow %d, read-only %d after a pin",
		    cow_storage_is_pinned(s), cow_storage_is_cow(s),
		    cow_storage_is_read_only(s));
	if (p != cow_tensor_const_data(t))
		fail(b, "pin gave %p, const data %p", p,
		    cow_tensor_const_data(t));
	/* Write through the kept pointer (never read-only memory now). */
	if (p != NULL)
		memset(p, how, cow_dtype_size(cow_tensor_dtype(t)));
}

/* ------------------------------------------------------------------ */
/* DLPack export.                                                       */

static struct cow__dl_tensor *
export_dl(struct boundary_export *e)
{
	return e->versioned ?
	    &((struct DLManagedTensorVersioned *)e->managed)->dl_tensor :
	    &((struct DLManagedTensor *)e->managed)->dl_tensor;
}

static void
export_delete(struct boundary_export *e)
{
	if (e->managed == NULL)
		return;
	if (e->versioned) {
		struct DLManagedTensorVersioned *m = e->managed;

		m->deleter(m);
	} else {
		struct DLManagedTensor *m = e->managed;

		m->deleter(m);
	}
	e->managed = NULL;
}

static void
export_keep(struct api_boundary *b, struct boundary_export e)
{
	for (int i = 0; i < BOUNDARY_EXPORTS; i++) {
		if (b->exports[i].managed == NULL) {
			b->exports[i] = e;
			return;
		}
	}
	export_delete(&e);
}

static void
call_export(struct api_boundary *b, struct fuzz_input *in)
{
	unsigned i = fuzz_u8(in) % (BOUNDARY_TENSORS + 1);
	cow_tensor_t *t = i < BOUNDARY_TENSORS ? b->pool[i] : NULL;
	uint8_t how = fuzz_u8(in);
	unsigned flags = fuzz_u8(in);
	struct boundary_export e = {(how & 1) != 0, SENTINEL};
	bool null_out = (how & 14) == 0, ro, busy;
	struct cow__dl_tensor *dl;
	uint8_t code = 0, bits = 0;
	cow_status_t st;

	flags = flags < 224 ? flags % 4 : flags;
	/* A writable export pins: refused with COW_EBUSY over borrowed
	 * memory that lazy clones still share (as call_pin). */
	busy = t != NULL && b->home[i] && flags == 0 &&
	    cow_storage_share_count(cow_tensor_storage(t)) > 1;
	b->func = e.versioned ? "cow_tensor_to_dlpack_versioned" :
	    "cow_tensor_to_dlpack";
	st = e.versioned ? cow_tensor_to_dlpack_versioned(t, flags,
	    null_out ? NULL : (struct DLManagedTensorVersioned **)&e.managed) :
	    cow_tensor_to_dlpack(t, flags,
	    null_out ? NULL : (struct DLManagedTensor **)&e.managed);
	if (!expect(b, st, t == NULL || null_out || flags > 3 ?
	    S(COW_EINVAL) : S(COW_OK) | S(COW_ENOMEM) |
	    (busy ? S(COW_EBUSY) : 0), e.managed))
		return;
	dl = export_dl(&e);
	ro = (flags & COW_DLPACK_READ_ONLY) != 0;
	if (!dl_of(cow_tensor_dtype(t), &code, &bits) ||
	    dl->dtype.code != code || dl->dtype.bits != bits ||
	    dl->dtype.lanes != 1 || dl->device.device_type != COW__DL_CPU ||
	    dl->ndim != cow_tensor_ndim(t) || dl->byte_offset != 0 ||
	    (dl->ndim > 0 && dl->strides == NULL))
		fail(b, "the export's DLTensor does not describe the tensor");
	for (int d = 0; d < dl->ndim; d++)
		if (dl->shape[d] != cow_tensor_sizes(t)[d] ||
		    (!(flags & COW_DLPACK_COPY) &&
		    dl->strides[d] != cow_tensor_strides(t)[d]))
			fail(b, "dim %d: shape %lld stride %lld", d,
			    (long long)dl->shape[d], (long long)dl->strides[d]);
	if (e.versioned) {
		struct DLManagedTensorVersioned *m = e.managed;
		uint64_t want = (ro ? COW__DL_FLAG_READ_ONLY : 0) |
		    (flags & COW_DLPACK_COPY ? COW__DL_FLAG_IS_COPIED : 0);

		if (m->version.major != 1 || m->flags != want)
			fail(b, "version %u.%u, flags 0x%llx (want 0x%llx)",
			    m->version.major, m->version.minor,
			    (unsigned long long)m->flags,
			    (unsigned long long)want);
	}
	if (flags == 0 && (dl->data != cow_tensor_const_data(t) ||
	    !cow_storage_is_pinned(cow_tensor_storage(t))))
		fail(b, "a writable export is the tensor's pinned memory");
	/* The consumer writes what it may write. */
	if (!ro && dl->data != NULL)
		memset(dl->data, how, cow_dtype_size(cow_tensor_dtype(t)));
	export_keep(b, e);
}

/* ------------------------------------------------------------------ */
/* DLPack import: a producer made here, or one of our exports.          */

struct producer {
	struct DLManagedTensorVersioned v;
	struct DLManagedTensor l;
	struct api_boundary *b;
	int64_t shape[COW_TENSOR_MAX_NDIM + 2];
	int64_t strides[COW_TENSOR_MAX_NDIM + 2];
	uint8_t *mem;
};

static void
producer_free(struct producer *p)
{
	p->b->import_deletes++;
	free(p->mem);
	free(p);
}

static void
producer_v_deleter(struct DLManagedTensorVersioned *self)
{
	producer_free(self->manager_ctx);
}

static void
producer_l_deleter(struct DLManagedTensor *self)
{
	producer_free(self->manager_ctx);
}

static void
call_import(struct api_boundary *b, struct fuzz_input *in)
{
	uint8_t how = fuzz_u8(in), dev = fuzz_u8(in), dk = fuzz_u8(in);
	bool versioned = how & 1, null_out = (how & 30) == 0;
	unsigned flags = (how >> 5) == 7 ? fuzz_u8(in) : (how >> 5) & 1;
	struct producer *p = calloc(1, sizeof *p);
	struct cow__dl_tensor dl;
	cow_tensor_t *t = SENTINEL;
	struct layout l;
	cow_dtype_t dtype = COW_DTYPE_UINT8;
	unsigned bad = 0, deletes = b->import_deletes;
	uint64_t vflags = fuzz_u8(in) % 8, byte_offset;
	uint32_t major = 1, minor = fuzz_u8(in) % 4;
	int64_t end = 0;
	cow_status_t st;

	if (p == NULL)
		abort();
	p->b = b;
	b->func = versioned ? "cow_tensor_from_dlpack_versioned" :
	    "cow_tensor_from_dlpack";
	memset(&dl, 0, sizeof dl);
	dl.device.device_type = dev < 200 ? COW__DL_CPU : dev < 220 ?
	    COW__DL_CUDA_HOST : dev < 230 ? COW__DL_ROCM_HOST : dev % 20;
	if (dl.device.device_type != COW__DL_CPU &&
	    dl.device.device_type != COW__DL_CUDA_HOST &&
	    dl.device.device_type != COW__DL_ROCM_HOST)
		bad |= S(COW_EINVAL);
	if (dk < 230 && dl_of((cow_dtype_t)(dk % COW_DTYPE_COUNT),
	    &dl.dtype.code, &dl.dtype.bits)) {
		dl.dtype.lanes = 1;
	} else {
		dl.dtype = (struct cow__dl_dtype){(uint8_t)(dk % 8),
		    fuzz_u8(in), (uint16_t)(fuzz_u8(in) % 3)};
	}
	if (!dl_known(dl.dtype, &dtype))
		bad |= S(COW_EINVAL);
	pick_layout(in, &l);
	l.offset = 0;
	/* NULL strides mean row-major, except from version 1.2 on. */
	if (l.null_strides && l.ndim > 0 && versioned && minor >= 2)
		bad |= S(COW_EINVAL);
	/* Every error that applies is allowed: the import checks the ndim
	 * range before the NULL strides of version 1.2, for one. */
	bad |= layout_errors(&l, cow_dtype_size(dtype), &end);
	byte_offset = fuzz_u8(in) < 240 ? (fuzz_u8(in) % 4) *
	    cow_dtype_size(dtype) : fuzz_u8(in) % 8;
	if (flags & ~(unsigned)COW_DLPACK_READ_ONLY)
		bad |= S(COW_EINVAL);
	if (null_out)
		bad |= S(COW_EINVAL);
	/* The producer's memory: byte_offset + extent bytes, or NULL. */
	if (!bad && byte_offset + (uint64_t)end <= BUF_MAX &&
	    (fuzz_u8(in) & 15) != 0) {
		if ((p->mem = malloc(BUF_MAX)) == NULL)
			abort();
		memset(p->mem, 0x33, BUF_MAX);
		dl.data = p->mem;
		if ((uintptr_t)(p->mem + byte_offset) %
		    alignment_of(dtype) != 0)
			bad |= S(COW_EINVAL);
	} else if (end > 0) {
		bad |= S(COW_EINVAL); /* NULL data for bytes */
	}
	if (versioned && (fuzz_u8(in) & 31) == 0) {
		major = 2; /* nothing else may be read: EINVAL alone */
		bad = S(COW_EINVAL);
	}
	dl.ndim = l.ndim;
	for (int d = 0; d < l.ndim && d < COW_TENSOR_MAX_NDIM + 2; d++) {
		p->shape[d] = l.sizes[d];
		p->strides[d] = l.strides[d];
	}
	dl.shape = l.null_sizes ? NULL : p->shape;
	dl.strides = l.null_strides ? NULL : p->strides;
	dl.byte_offset = byte_offset;
	p->v = (struct DLManagedTensorVersioned){{major, minor}, p,
	    producer_v_deleter, vflags, dl};
	p->l = (struct DLManagedTensor){dl, p, producer_l_deleter};
	b->imports_owed++;
	st = versioned ? cow_tensor_from_dlpack_versioned(&p->v, flags,
	    null_out ? NULL : &t) : cow_tensor_from_dlpack(&p->l, flags,
	    null_out ? NULL : &t);
	if (!expect(b, st, bad ? bad : S(COW_OK), null_out ? SENTINEL : t)) {
		if (b->import_deletes != deletes + 1)
			fail(b, "a refused import ran the producer's deleter "
			    "%u times", b->import_deletes - deletes);
		return;
	}
	if (b->import_deletes != deletes)
		fail(b, "an import ran the producer's deleter at once");
	if (cow_tensor_dtype(t) != dtype || cow_tensor_ndim(t) != l.ndim)
		fail(b, "imported %s with %d dims", cow_dtype_name(
		    cow_tensor_dtype(t)), cow_tensor_ndim(t));
	if (cow_tensor_numel(t) > 0 && cow_tensor_const_data(t) !=
	    (const void *)(p->mem + byte_offset))
		fail(b, "the import does not view the producer's memory");
	{
		bool ro = (flags & COW_DLPACK_READ_ONLY) || (versioned &&
		    (vflags & COW__DL_FLAG_READ_ONLY));
		bool owned = versioned && (vflags & COW__DL_FLAG_IS_COPIED);
		cow_storage_t *s = cow_tensor_storage(t);

		if (cow_storage_is_read_only(s) != ro ||
		    cow_storage_is_pinned(s) != (!ro && !owned))
			fail(b, "read-only %d (want %d), pinned %d",
			    cow_storage_is_read_only(s), ro,
			    cow_storage_is_pinned(s));
	}
	touch(t);
	keep(b, t, false);
}

/* An export imported back: the import owns the export now. */
static void
call_round_trip(struct api_boundary *b, struct fuzz_input *in)
{
	unsigned i = fuzz_u8(in) % BOUNDARY_EXPORTS;
	struct boundary_export e = b->exports[i];
	cow_tensor_t *t = SENTINEL;
	cow_status_t st;

	if (e.managed == NULL)
		return;
	b->exports[i].managed = NULL;
	b->func = e.versioned ? "cow_tensor_from_dlpack_versioned" :
	    "cow_tensor_from_dlpack";
	st = e.versioned ? cow_tensor_from_dlpack_versioned(e.managed,
	    fuzz_u8(in) & 1, &t) : cow_tensor_from_dlpack(e.managed,
	    fuzz_u8(in) & 1, &t);
	if (!expect(b, st, S(COW_OK) | S(COW_ENOMEM), t))
		return;
	touch(t);
	keep(b, t, false);
}

/* A lazy clone of a pool tensor: a snapshot that keeps its bytes while the
 * source is pinned, exported or written. */
static void
call_clone(struct api_boundary *b, struct fuzz_input *in)
{
	unsigned i = fuzz_u8(in) % BOUNDARY_TENSORS;
	cow_tensor_t *t = b->pool[i], *c = SENTINEL;
	bool pinned;

	if (t == NULL)
		return;
	b->func = "cow_tensor_lazy_clone";
	pinned = cow_storage_is_pinned(cow_tensor_storage(t));
	if (!expect(b, cow_tensor_lazy_clone(t, &c), S(COW_OK) |
	    S(COW_ENOMEM), c))
		return;
	if (pinned && cow_tensor_numel(t) > 0 && cow_storage_shares_data(
	    cow_tensor_storage(t), cow_tensor_storage(c)))
		fail(b, "a lazy clone of a pinned tensor shares its bytes");
	touch(c);
	keep(b, c, false);
}

static void
call_drop(struct api_boundary *b, struct fuzz_input *in)
{
	uint8_t k = fuzz_u8(in);

	b->func = "release";
	if (k & 1) {
		export_delete(&b->exports[(k >> 1) % BOUNDARY_EXPORTS]);
	} else {
		unsigned i = (k >> 1) % BOUNDARY_TENSORS;

		cow_tensor_release(b->pool[i]);
		b->pool[i] = NULL;
		b->pins[i] = 0;
	}
}

void
api_boundary_init(struct api_boundary *b, cow_allocator_t *capped)
{
	memset(b, 0, sizeof *b);
	b->capped = capped;
	nborrowed = 0;
}

void
api_boundary_call(struct api_boundary *b, struct fuzz_input *in)
{
	typedef void (*call_fn)(struct api_boundary *, struct fuzz_input *);
	static const call_fn calls[] = {call_from_external, call_pin,
	    call_export, call_import, call_round_trip, call_clone,
	    call_drop};

	calls[fuzz_u8(in) % (sizeof calls / sizeof calls[0])](b, in);
}

void
api_boundary_fini(struct api_boundary *b)
{
	b->func = "teardown";
	/* Exports and tensors go in either order: drop the tensors first,
	 * so that exports outlive what they export. */
	for (int i = 0; i < BOUNDARY_TENSORS; i++)
		cow_tensor_release(b->pool[i]);
	for (int i = 0; i < BOUNDARY_EXPORTS; i++)
		export_delete(&b->exports[i]);
	if (b->deleter_calls != b->deleters_owed)
		fail(b, "%u storage deleter calls for %u handed-over buffers",
		    b->deleter_calls, b->deleters_owed);
	if (b->import_deletes != b->imports_owed)
		fail(b, "%u producer deleter calls for %u imports",
		    b->import_deletes, b->imports_owed);
	for (unsigned i = 0; i < nborrowed; i++)
		free(borrowed[i]);
	nborrowed = 0;
}
