/* The NumPy arrays of a generated module's Python entry points (rbdgen/bindings): the inputs
   and out= the common call takes, read without a buffer request, and the results made from the
   array its C function wrote. Fixed code, included by rbdgen_entry_points.c. */

/* The data of `obj` when it is what the common call passes: a NumPy float64 vector of n,
   C-contiguous, aligned, in native byte order; NULL for anything else (converted by the
   Python function). The caller holds the arguments for the call, so no buffer is taken. */
static const double *vector_of(PyObject *obj, Py_ssize_t n)
{
    PyArrayObject *a = (PyArrayObject *)obj;
    if (!PyArray_CheckExact(obj) || PyArray_NDIM(a) != 1 || PyArray_DIM(a, 0) != n || PyArray_TYPE(a) != NPY_DOUBLE
            || !PyArray_CHKFLAGS(a, NPY_ARRAY_CARRAY_RO) || !PyArray_ISNOTSWAPPED(a))
        return NULL;
    return (const double *)PyArray_DATA(a);
}

/* 1 and *x when `obj` is a number as the common call takes one (dt, damping, kp): a float, or
   an int (not a bool), rounded to a double as Python rounds it; else 0 (an int beyond a
   double's range: the Python function says so). */
static int number_of(PyObject *obj, double *x)
{
    if (PyFloat_Check(obj)) {
        *x = PyFloat_AS_DOUBLE(obj);
        return 1;
    }
    if (!PyLong_CheckExact(obj))
        return 0;
    *x = PyLong_AsDouble(obj);
    if (*x == -1.0 && PyErr_Occurred()) {   /* too large: the Python function says so */
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* The data of the caller's out= when it is exactly what the Python function accepts: a NumPy
   float64 array of this shape, C-contiguous, aligned, writable, native; else NULL. */
static double *out_of(PyObject *given, int ndim, const Py_ssize_t *shape)
{
    PyArrayObject *a = (PyArrayObject *)given;
    if (!PyArray_CheckExact(given) || PyArray_NDIM(a) != ndim || PyArray_TYPE(a) != NPY_DOUBLE
            || !PyArray_CHKFLAGS(a, NPY_ARRAY_CARRAY) || !PyArray_ISNOTSWAPPED(a))
        return NULL;
    for (int d = 0; d < ndim; ++d)
        if (PyArray_DIM(a, d) != shape[d])
            return NULL;
    return (double *)PyArray_DATA(a);
}

/* Whether an output of `size` doubles shares memory with one of the inputs. The generated
   functions take `restrict` arrays: an out= that overlaps an input goes to the Python
   function, which computes into a temporary. */
static int overlaps(const double *out, Py_ssize_t size, const double *const *in, const long *sizes, int n)
{
    for (int i = 0; i < n; ++i)
        if (sizes[i] > 0 && out < in[i] + sizes[i] && in[i] < out + size)
            return 1;
    return 0;
}

/* The caller's out= of a result of `size` doubles (one array of `shape`, or the flat array of
   a result with parts) when the common call may write into it; else NULL. */
static double *target_of(PyObject *given, int parts, int ndim, const Py_ssize_t *shape, Py_ssize_t size,
                         const double *const *in, const long *sizes, int n)
{
    const Py_ssize_t flat[1] = { size };
    double *out = parts > 1 ? out_of(given, 1, flat) : out_of(given, ndim, shape);
    return out != NULL && !overlaps(out, size, in, sizes, n) ? out : NULL;
}

/* A new float64 array (uninitialized). */
static PyObject *new_array(int ndim, const Py_ssize_t *shape)
{
    return PyArray_SimpleNew(ndim, (npy_intp *)shape, NPY_DOUBLE);
}

/* A result from the array its C function wrote: the array itself when it has one part, else
   a tuple of views of its first `nparts` parts (as the Python function returns), each with
   the batch's `count` states first when count >= 0 (flat is then count x its output). Takes
   over the reference to `flat`. */
static PyObject *result_of(PyObject *flat, int nparts, const Py_ssize_t *start, const Py_ssize_t *ndim,
                           const Py_ssize_t (*shape)[3], Py_ssize_t count)
{
    if (flat == NULL || nparts == 1)
        return flat;
    PyObject *result = PyTuple_New(nparts);
    PyArrayObject *whole = (PyArrayObject *)flat;
    double *data = (double *)PyArray_DATA(whole);
    const int lead = count >= 0;
    for (int p = 0; result != NULL && p < nparts; ++p) {
        npy_intp dims[4], strides[4];
        const int nd = (int)ndim[p] + lead;
        if (lead) {
            dims[0] = count;
            strides[0] = PyArray_STRIDE(whole, 0);
        }
        for (int d = nd - 1, step = sizeof(double); d >= lead; --d) {
            dims[d] = shape[p][d - lead];
            strides[d] = step;
            step *= (int)dims[d];
        }
        PyObject *part = PyArray_NewFromDescr(&PyArray_Type, PyArray_DescrFromType(NPY_DOUBLE), nd, dims, strides,
                                              data + start[p], NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE, NULL);
        Py_INCREF(flat);
        if (part == NULL || PyArray_SetBaseObject((PyArrayObject *)part, flat) < 0) {
            if (part == NULL)
                Py_DECREF(flat);
            Py_XDECREF(part);
            Py_CLEAR(result);
        } else {
            PyTuple_SET_ITEM(result, p, part);
        }
    }
    Py_DECREF(flat);
    return result;
}

/* The array a result is written into: the caller's out= (a new reference to it), else a new
   one (the shape of a one-part result, or flat). */
static PyObject *written_into(PyObject *given, int nparts, int ndim, const Py_ssize_t *shape, Py_ssize_t size)
{
    if (given != NULL) {
        Py_INCREF(given);
        return given;
    }
    return nparts > 1 ? new_array(1, &size) : new_array(ndim, shape);
}

/* Whether the n numbers at x are all finite (a solve's result: else the Python function, which
   computes it again, names the cause). */
static int all_finite(const double *x, Py_ssize_t n)
{
    unsigned long long infinite = 0;   /* an exponent of all ones: inf or NaN (a loop that vectorizes) */
    for (Py_ssize_t k = 0; k < n; ++k) {
        unsigned long long bits;
        memcpy(&bits, x + k, sizeof bits);
        infinite |= (bits & 0x7ff0000000000000ULL) == 0x7ff0000000000000ULL;
    }
    return !infinite;
}

/* The data of `obj` when it is a batch as the common call passes it: a NumPy float64 array of
   (count, n), C-contiguous, aligned, native, count >= 1 and the same as *count when that is
   set (> 0); NULL for anything else. Sets *count. */
static const double *rows_of(PyObject *obj, Py_ssize_t n, Py_ssize_t *count)
{
    PyArrayObject *a = (PyArrayObject *)obj;
    if (!PyArray_CheckExact(obj) || PyArray_NDIM(a) != 2 || PyArray_DIM(a, 1) != n || PyArray_TYPE(a) != NPY_DOUBLE
            || !PyArray_CHKFLAGS(a, NPY_ARRAY_CARRAY_RO) || !PyArray_ISNOTSWAPPED(a) || PyArray_DIM(a, 0) < 1
            || (*count > 0 && PyArray_DIM(a, 0) != *count))
        return NULL;
    *count = PyArray_DIM(a, 0);
    return (const double *)PyArray_DATA(a);
}

/* The array a batch of `count` states is written into: the caller's out= when it is what the
   Python function takes ((B,) + the output's shape, (B, size) for a result in parts, (B,) for a
   number) and overlaps no input, else a new one. NULL without an exception: out= is not such
   an array (the Python function takes the call). */
static PyObject *batch_target(PyObject *given, Py_ssize_t count, int scalar, int nparts, Py_ssize_t ndim0,
                              const Py_ssize_t *shape0, Py_ssize_t out_size, const double *const *in,
                              const long *sizes, int n)
{
    Py_ssize_t shape[4] = { count };
    int ndim;
    if (scalar || nparts > 1) {
        ndim = 1 + !scalar;
        shape[1] = out_size;
    } else {
        ndim = 1 + (int)ndim0;
        for (int d = 0; d < ndim0; ++d)
            shape[1 + d] = shape0[d];
    }
    if (given != NULL && (out_of(given, ndim, shape) == NULL
                          || overlaps((const double *)PyArray_DATA((PyArrayObject *)given), count * out_size, in, sizes, n)))
        return NULL;
    return written_into(given, 1, ndim, shape, 0);
}
