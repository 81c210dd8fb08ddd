/*
 * tensor_model.h - the reference fuzz_tensor checks the tensor API against:
 * plain arrays of values, one per storage, and views as (base, offset,
 * sizes, strides) with naive index arithmetic. There is no sharing: a lazy
 * clone copies the whole base array, and a write through a view writes the
 * base array, which every other view of it then reads.
 *
 * Values are exact: bool and integer elements are kept as int64_t (modulo
 * 2^64: a uint64 above INT64_MAX is held by its bits), floating ones as
 * double (float16, bfloat16 and float32 ones rounded to the dtype), complex
 * ones as two doubles. Written from the headers (dtype.h, tensor.h, ops.h)
 * alone, without looking at runtime/tensor/: rounding to a floating dtype
 * here scales the exact value (in long double, which holds every int64 and
 * uint64) by a power of two and rounds it to an integer with rintl().
 */
#ifndef COW_FUZZ_TENSOR_MODEL_H
#define COW_FUZZ_TENSOR_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include <cowstore/tensor.h>

#define TM_MAX_NDIM COW_TENSOR_MAX_NDIM
#define TM_SLOTS 10

/* A set of statuses, as the reference allows them: bit -st for each
 * (COW_OK is bit 0). */
#define TM_S(st) (1u << -(st))

typedef struct tm_value {
	int64_t i;  /* bool and integer dtypes (uint64: its bits) */
	double f;   /* floating dtypes; complex: the real part */
	double im;  /* complex: the imaginary part */
} tm_value_t;

struct tm_layout {
	int ndim;
	int64_t sizes[TM_MAX_NDIM];
	int64_t strides[TM_MAX_NDIM];
	int64_t offset;
};

struct tm_base {
	bool live;
	cow_dtype_t dtype;
	int64_t n;        /* elements */
	tm_value_t *v;
};

struct tm_tensor {
	bool live;
	int base;
	struct tm_layout l;
};

struct tm_model {
	struct tm_base b[TM_SLOTS];
	struct tm_tensor t[TM_SLOTS];
};

/* Values and the conversion and arithmetic rules of ops.h. */
bool tm_is_float(cow_dtype_t dtype);     /* real floating */
bool tm_is_complex(cow_dtype_t dtype);
bool tm_is_unsigned(cow_dtype_t dtype);  /* uint8 .. uint64 (not bool) */
bool tm_dtype_valid(int dtype);
int64_t tm_dtype_size(cow_dtype_t dtype);
tm_value_t tm_from_double(cow_dtype_t dtype, double x);
tm_value_t tm_from_int(cow_dtype_t dtype, int64_t x);
tm_value_t tm_convert(cow_dtype_t from, tm_value_t v, cow_dtype_t to);
tm_value_t tm_add(cow_dtype_t dtype, tm_value_t a, tm_value_t b);
tm_value_t tm_mul(cow_dtype_t dtype, tm_value_t a, tm_value_t b);
tm_value_t tm_neg(cow_dtype_t dtype, tm_value_t a);
/* The binary ops of issue 39 (ops.h): values of tm_binop_dtype(op,
 * @dtype): the comparisons give bool values (i = 0 or 1), div of bool and
 * integers float64 ones, the others values of @dtype. An op is defined in
 * place when its dtype is @dtype. */
enum tm_binop { TM_SUB, TM_DIV, TM_FLOOR_DIV, TM_MOD, TM_EQ, TM_NE, TM_LT,
	TM_LE, TM_GT, TM_GE, TM_BINOPS };
bool tm_binop_defined(enum tm_binop op, cow_dtype_t dtype);
cow_dtype_t tm_binop_dtype(enum tm_binop op, cow_dtype_t dtype);
tm_value_t tm_binop(enum tm_binop op, cow_dtype_t dtype, tm_value_t a,
    tm_value_t b);
/* The dtype of a sum of @dtype, and the dtype it accumulates in (float32
 * for float16 and bfloat16, rounded once at the end: tm_convert). */
cow_dtype_t tm_sum_dtype(cow_dtype_t dtype);
cow_dtype_t tm_sum_acc_dtype(cow_dtype_t dtype);
/* cow_tensor_equal's element rule (NaN unequal, -0 == 0). */
bool tm_equal_elem(cow_dtype_t dtype, tm_value_t a, tm_value_t b);
/* An element as stored in memory (dtype.h's layouts), and back (@v must be
 * a value of @dtype). */
tm_value_t tm_decode(cow_dtype_t dtype, const void *p);
void tm_encode(cow_dtype_t dtype, void *p, tm_value_t v);
/* The same value (bit for bit; any NaN matches any NaN). */
bool tm_same(cow_dtype_t dtype, tm_value_t a, tm_value_t b);

/* Layouts. */
int64_t tm_numel(const struct tm_layout *l); /* -1 when it overflows */
void tm_contiguous_strides(struct tm_layout *l);
bool tm_is_contiguous(const struct tm_layout *l);
/* Storage position of the k-th element in row-major order. */
int64_t tm_pos(const struct tm_layout *l, int64_t k);
/* Do two elements share a position? */
bool tm_overlaps(const struct tm_layout *l);
/* Normalise a dimension argument: false when outside [-n, n). */
bool tm_wrap_dim(int64_t dim, int n, int *out);

/* Shape rules (tensor.h, ops.h). */
/* The index of the k-th element of @l's shape in row-major order. */
void tm_unravel(const struct tm_layout *l, int64_t k, int64_t *idx);
/* Does the byte size of the non-zero (and non-negative) @sizes exceed the
 * storage maximum? *zero: some size is 0 (the tensor is empty anyway). */
bool tm_bytes_overflow(int ndim, const int64_t *sizes, int64_t esize,
    bool *zero);
bool tm_same_shape(const struct tm_layout *a, const struct tm_layout *b);
/* Broadcast two shapes (aligned at the last dimension) into a contiguous
 * layout; false when they do not broadcast. */
bool tm_broadcast(const struct tm_layout *a, const struct tm_layout *b,
    struct tm_layout *out);
/* The view rule: @l's elements in row-major order, laid out with @sizes,
 * sit at offset + sum(index * stride) for some non-negative strides.
 * Fills @out on success. */
bool tm_affine_view(const struct tm_layout *l, int ndim,
    const int64_t *sizes, struct tm_layout *out);
void tm_remove_dim(struct tm_layout *l, int d);
/* A view's shape (one entry may be -1): the statuses it allows (0: none,
 * and @shape holds the inferred sizes), *also_ok those a call may also
 * return, *ambiguous when -1 cannot be inferred (a 0 among the others). */
unsigned tm_view_shape(const struct tm_layout *l, int ndim,
    const int64_t *sizes, int64_t *shape, bool *ambiguous, unsigned *also_ok);

/* The model: bases and tensors. */
void tm_init(struct tm_model *m);
void tm_fini(struct tm_model *m);
int tm_free_slot(const struct tm_model *m);
int tm_pick_live(const struct tm_model *m, unsigned k);
/* A new base of @n elements (all zero), or -1 when the model has no room
 * (cannot happen while bases <= tensors) or no memory. */
int tm_base_new(struct tm_model *m, cow_dtype_t dtype, int64_t n);
/* Put a tensor in @slot over @base. */
void tm_tensor_set(struct tm_model *m, int slot, int base,
    const struct tm_layout *l);
/* Drop the tensor in @slot (and its base when it was the last user). */
void tm_tensor_drop(struct tm_model *m, int slot);
/* Element k (row-major) of the tensor in @slot. */
tm_value_t tm_get(const struct tm_model *m, int slot, int64_t k);
void tm_set(struct tm_model *m, int slot, int64_t k, tm_value_t v);
cow_dtype_t tm_dtype(const struct tm_model *m, int slot);
/* Element @k (row-major over @shape) of slot @src broadcast to @shape. */
tm_value_t tm_get_broadcast(const struct tm_model *m, int src,
    const struct tm_layout *shape, int64_t k);

#endif
