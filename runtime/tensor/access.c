/*
 * access.c - the one read access and the one write access to a tensor's
 * elements (see tensor.h), and the public accessors built on them:
 * read/const/mutable data and single elements.
 *
 * Nothing else in runtime/tensor/ calls cow_storage_const_data() or
 * cow_storage_mutable_data(): an op that reads goes through
 * cow__tensor_read_data(), an op that writes through
 * cow__tensor_write_data(). Both make the reshape-alias simulation's check
 * (tensor/shadow.h), which costs two loads on a tensor that was never
 * shadowed.
 */

#include "core/error.h"
#include "storage/storage.h"
#include "tensor/dtype.h"
#include "tensor/impl.h"
#include "tensor/shadow.h"
#include "tensor/tensor.h"

cow_status_t
cow__tensor_read_data(const cow_tensor_t *t, const char **out,
    const char *func)
{
	const char *base;
	cow_status_t st;

	if (t->numel == 0) {
		*out = NULL;
		return COW_OK;
	}
	/* A read through another shadow set than the last write's may be
	 * refused (COW_SHADOW_ERROR), before anything happened. */
	if ((st = cow__shadow_on_read(t, func)) != COW_OK)
		return st;
	/* A plain load of the storage's data pointer: no atomic operation,
	 * never a materialisation (storage.h). */
	base = cow_storage_const_data(t->storage);
	*out = base + t->offset * (int64_t)t->itemsize;
	return COW_OK;
}

/* The write access (tensor.h); @pin: pin the storage too
 * (cow_tensor_pin), which needs no elements. */
static cow_status_t
write_access(cow_tensor_t *t, bool pin, char **out, const char *func)
{
	struct cow__shadow_write w = {NULL, 0, 0, COW_SHADOW_WARN_ONCE};
	cow_status_t st;
	void *base;

	/* The shadow check decides first (a refusal changes nothing); the
	 * report and the generation bump come only once the write access
	 * cannot fail any more. */
	if (t->numel > 0 &&
	    (st = cow__shadow_write_begin(t, &w, func)) != COW_OK)
		return st;
	if (pin) {
		if ((st = cow__storage_pin(t->storage, &base)) != COW_OK)
			return st;
	} else if ((st = cow_storage_mutable_data(t->storage, &base)) !=
	    COW_OK) {
		return cow__error_wrap(st, "cannot write the tensor: ");
	}
	if (t->numel == 0) {
		*out = NULL;
		return COW_OK;
	}
	cow__shadow_write_end(t, &w, func);
	*out = (char *)base + t->offset * (int64_t)t->itemsize;
	return COW_OK;
}

cow_status_t
cow__tensor_write_data(cow_tensor_t *t, char **out, const char *func)
{
	return write_access(t, false, out, func);
}

const char *
cow__tensor_rebase(const cow_tensor_t *in, const char *in_data,
    const cow_tensor_t *dst, const char *dst_data)
{
	if (in->storage != dst->storage || in_data == NULL)
		return in_data;
	return dst_data - dst->offset * (int64_t)dst->itemsize +
	    in->offset * (int64_t)in->itemsize;
}

cow_status_t
cow__strided_read_data(const cow_tensor_t *t, const void **out,
    const char *func)
{
	const char *p;
	cow_status_t st;

	if ((st = cow__tensor_read_data(t, &p, func)) != COW_OK)
		return st;
	*out = p;
	return COW_OK;
}

cow_status_t
cow_tensor_read_data(const cow_tensor_t *t, const void **out)
{
	COW__RETURN_IF_NULL(t);
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(t->impl->read_data(t, out, __func__));
}

/* cow_tensor_const_data's failure, named. A call of its own: naming inline
 * (cow__named, or cow__error_name itself) gave the fast path a frame or an
 * extra load (26-29 instructions per call against 25,
 * scripts/instr-counts.sh). */
static __attribute__((noinline, cold)) void
const_data_failed(cow_status_t st, const char *func)
{
	(void)cow__named(st, func);
}

/* cow_tensor_const_data of a non-strided tensor, through its table, kept
 * out of line: inline, its frame costs the strided path 4 instructions (29
 * per call against 25, scripts/instr-counts.sh). */
static __attribute__((noinline, cold)) const void *
table_const_data(const cow_tensor_t *t, const char *func)
{
	const void *p;
	cow_status_t st;

	if ((st = t->impl->read_data(t, &p, func)) != COW_OK) {
		const_data_failed(st, func);
		return NULL;
	}
	return p;
}

/* The fast path reads a strided tensor's data directly (impl.h). */
const void *
cow_tensor_const_data(const cow_tensor_t *t)
{
	const char *p;
	cow_status_t st;

	if (t != NULL && !cow__tensor_is_strided(t))
		return table_const_data(t, __func__);
	if (t == NULL)
		return NULL;
	if ((st = cow__tensor_read_data(t, &p, __func__)) != COW_OK) {
		const_data_failed(st, __func__);
		return NULL;
	}
	return p;
}

cow_status_t
cow__strided_mutable_data(cow_tensor_t *t, void **out)
{
	cow_status_t st;
	char *p = NULL;

	if (t->numel > 0 &&
	    (st = cow__tensor_write_data(t, &p, "cow_tensor_mutable_data")) !=
	    COW_OK)
		return st;
	*out = p;
	return COW_OK;
}

cow_status_t
cow_tensor_mutable_data(cow_tensor_t *t, void **out)
{
	COW__RETURN_IF_NULL(t);
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(t->impl->mutable_data(t, out));
}

cow_status_t
cow__tensor_pin_data(cow_tensor_t *t, char **out, const char *func)
{
	return write_access(t, true, out, func);
}

cow_status_t
cow__strided_pin(cow_tensor_t *t, void **out)
{
	cow_status_t st;
	char *p;

	if ((st = cow__tensor_pin_data(t, &p, "cow_tensor_pin")) != COW_OK)
		return st;
	*out = p;
	return COW_OK;
}

cow_status_t
cow_tensor_pin(cow_tensor_t *t, void **out)
{
	COW__RETURN_IF_NULL(t);
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(t->impl->pin(t, out));
}

cow_status_t
cow__strided_unpin(cow_tensor_t *t)
{
	return cow__storage_unpin(t->storage);
}

cow_status_t
cow_tensor_unpin(cow_tensor_t *t)
{
	COW__RETURN_IF_NULL(t);
	return COW__NAMED(t->impl->unpin(t));
}

cow_status_t
cow__index_check(const cow_tensor_t *t, const int64_t *index, int64_t *idx)
{
	if (t->ndim > 0 && index == NULL)
		return cow__error(COW_EINVAL,
		    "index is NULL but the tensor has %d dimensions", t->ndim);
	for (int d = 0; d < t->ndim; d++) {
		int64_t i = index[d], n = t->sizes[d];

		if (i < -n || i >= n)
			return cow__error(COW_ERANGE,
			    "index %lld out of range for dim %d of size %lld",
			    (long long)i, d, (long long)n);
		idx[d] = i < 0 ? i + n : i;
	}
	return COW_OK;
}

/* Byte offset of @index from element [0, ..., 0]. */
static cow_status_t
element_offset(const cow_tensor_t *t, const int64_t *index, int64_t *out)
{
	int64_t idx[COW_TENSOR_MAX_NDIM], off = 0;
	cow_status_t st;

	if ((st = cow__index_check(t, index, idx)) != COW_OK)
		return st;
	/* Every index is in range, so the tensor has elements and the offset
	 * lies inside its storage (an empty tensor's strides may be huge). */
	for (int d = 0; d < t->ndim; d++)
		off += idx[d] * t->strides[d];
	*out = off * (int64_t)t->itemsize;
	return COW_OK;
}

cow_status_t
cow__strided_get(const cow_tensor_t *t, const int64_t *index, double *f,
    int64_t *i, const char *func)
{
	const char *p;
	cow_status_t st;
	int64_t off;

	if ((st = element_offset(t, index, &off)) != COW_OK ||
	    (st = cow__tensor_read_data(t, &p, func)) != COW_OK)
		return st;
	if (f != NULL)
		*f = cow__load_f64(t->dtype, p + off);
	else
		*i = cow__load_i64(t->dtype, p + off);
	return COW_OK;
}

cow_status_t
cow_tensor_get_f64(const cow_tensor_t *t, const int64_t *index, double *out)
{
	COW__RETURN_IF_NULL(t);
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(t->impl->get(t, index, out, NULL, __func__));
}

cow_status_t
cow_tensor_get_i64(const cow_tensor_t *t, const int64_t *index, int64_t *out)
{
	COW__RETURN_IF_NULL(t);
	COW__RETURN_IF_NULL(out);
	return COW__NAMED(t->impl->get(t, index, NULL, out, __func__));
}

cow_status_t
cow__strided_set(cow_tensor_t *t, const int64_t *index, const double *f,
    const int64_t *i, const char *func)
{
	cow_status_t st;
	int64_t off;
	char *p = NULL; /* set on success (gcc -O2 cannot tell) */

	if ((st = element_offset(t, index, &off)) != COW_OK ||
	    (st = cow__tensor_write_data(t, &p, func)) != COW_OK)
		return st;
	if (f != NULL)
		cow__store_f64(t->dtype, p + off, *f);
	else
		cow__store_i64(t->dtype, p + off, *i);
	return COW_OK;
}

cow_status_t
cow_tensor_set_f64(cow_tensor_t *t, const int64_t *index, double value)
{
	COW__RETURN_IF_NULL(t);
	return COW__NAMED(t->impl->set(t, index, &value, NULL, __func__));
}

cow_status_t
cow_tensor_set_i64(cow_tensor_t *t, const int64_t *index, int64_t value)
{
	COW__RETURN_IF_NULL(t);
	return COW__NAMED(t->impl->set(t, index, NULL, &value, __func__));
}
