/*
 * consumer.c - a program that uses cowstore's DLPack functions with
 * Debian's <dlpack/dlpack.h> (DLPack 0.6), as a consumer would: the public
 * headers accept its DLManagedTensor as it is, an export reads back through
 * its field names, and a tensor built with its types imports. Exits 1 on
 * the first difference.
 */
#include <stdio.h>
#include <string.h>

#include <dlpack/dlpack.h>

#include <cowstore/cowstore.h>

static int deleted;

static void
producer_deleter(DLManagedTensor *self)
{
	(void)self;
	deleted++;
}

#define CHECK(cond)                                                         \
	do {                                                                \
		if (!(cond)) {                                              \
			printf("consumer: FAILED: %s (line %d): %s\n", #cond,   \
			    __LINE__, cow_last_error());                    \
			return 1;                                           \
		}                                                           \
	} while (0)

int
main(void)
{
	int64_t sizes[2] = {2, 3}, shape[1] = {4}, strides[1] = {1};
	int32_t values[4] = {10, 20, 30, 40};
	DLManagedTensor *m, in;
	cow_tensor_t *t, *back;
	int64_t v;

	/* Export: Debian's struct names read what cowstore wrote. */
	CHECK(cow_tensor_arange(COW_DTYPE_FLOAT32, 6, NULL, &t) == COW_OK);
	CHECK(cow_tensor_view(t, 2, sizes, &back) == COW_OK);
	cow_tensor_release(t);
	CHECK(cow_tensor_to_dlpack(back, 0, &m) == COW_OK);
	CHECK(m->dl_tensor.device.device_type == kDLCPU);
	CHECK(m->dl_tensor.dtype.code == kDLFloat);
	CHECK(m->dl_tensor.dtype.bits == 32 && m->dl_tensor.dtype.lanes == 1);
	CHECK(m->dl_tensor.ndim == 2);
	CHECK(m->dl_tensor.shape[0] == 2 && m->dl_tensor.shape[1] == 3);
	CHECK(m->dl_tensor.strides[0] == 3 && m->dl_tensor.strides[1] == 1);
	CHECK(((float *)m->dl_tensor.data)[5] == 5.0f);
	CHECK(m->manager_ctx != NULL);
	m->deleter(m);
	cow_tensor_release(back);

	/* Import: a producer built with Debian's types. */
	memset(&in, 0, sizeof in);
	in.dl_tensor.data = values;
	in.dl_tensor.device.device_type = kDLCPU;
	in.dl_tensor.ndim = 1;
	in.dl_tensor.dtype.code = kDLInt;
	in.dl_tensor.dtype.bits = 32;
	in.dl_tensor.dtype.lanes = 1;
	in.dl_tensor.shape = shape;
	in.dl_tensor.strides = strides;
	in.deleter = producer_deleter;
	CHECK(cow_tensor_from_dlpack(&in, 0, &t) == COW_OK);
	CHECK(cow_tensor_get_i64(t, (int64_t[]){3}, &v) == COW_OK && v == 40);
	CHECK(deleted == 0);
	cow_tensor_release(t);
	CHECK(deleted == 1);
	printf("consumer: DLPack through Debian's dlpack.h: ok\n");
	return 0;
}
