/* The Python entry points of a generated module (rbdgen/bindings): fixed code, the same for
   every robot, included by the module's rbdgen_<robot>_calls.c after its tables of data.

   cffi asks for one buffer per argument from Python (some 300 ns each here), which made a
   call from Python slower than Pinocchio's. Three entry points take the common call (float64
   C-contiguous vectors of the right length, a float for a parameter such as dt, a frame by
   name, out= for a one-array result) straight from the interpreter's vectorcall: `call` for
   every function of states, `call_frame` for every frame quantity, `call_contact_dynamics`.
   Any other call (and an out= that overlaps an input) goes to the Python function given at
   creation, which converts, batches and raises the errors.

   The including file defines, before including entry_points.h: RBDGEN_MAX_PARTS; after it:
   RBDGEN_FUNCTIONS, RBDGEN_FRAME_KINDS and RBDGEN_FRAMES (counts), the tables functions[],
   frame_kinds[], frame_body[] and frame_placement[] (each with one unused row when empty), and
   `contact` (the declared contacts' contact_dynamics, or a NULL function). */



static PyObject *empty_array;   /* numpy.empty */
static PyObject *frame_rows;    /* frame name -> row of frame_body and frame_placement */

static int vector_of(PyObject *obj, Py_ssize_t n, Py_buffer *view)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        return 0;
    }
    if (view->ndim == 1 && view->itemsize == 8 && view->len == n * 8 && view->format
            && view->format[0] == 'd' && view->format[1] == 0)
        return 1;
    PyBuffer_Release(view);
    return 0;
}

/* The caller's out= when it is exactly what the Python path accepts: float64, C-contiguous,
   writable, of this shape. */
static int out_of(PyObject *given, int ndim, const Py_ssize_t *shape, Py_buffer *out)
{
    Py_ssize_t size = 8;
    if (PyObject_GetBuffer(given, out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        return 0;
    }
    int ok = out->itemsize == 8 && out->format != NULL && out->format[0] == 'd' && out->format[1] == 0
        && out->ndim == ndim;
    for (int d = 0; ok && d < ndim; ++d) {
        ok = out->shape[d] == shape[d];
        size *= shape[d];
    }
    if (ok && out->len == size)
        return 1;
    PyBuffer_Release(out);
    return 0;
}

/* Whether two C-contiguous buffers share a byte. The generated functions take `restrict`
   arrays: an out= that overlaps an input goes to the Python function, which computes into a
   temporary. */
static int overlap(const Py_buffer *a, const Py_buffer *b)
{
    const uintptr_t a0 = (uintptr_t)a->buf, b0 = (uintptr_t)b->buf;
    return a0 < b0 + (uintptr_t)b->len && b0 < a0 + (uintptr_t)a->len;
}

typedef void (*inputs1)(const double *, double *);
typedef void (*inputs2)(const double *, const double *, double *);
typedef void (*inputs3)(const double *, const double *, const double *, double *);
typedef void (*inputs4)(const double *, const double *, const double *, const double *, double *);
typedef void (*inputs5)(const double *, const double *, const double *, const double *, const double *, double *);

static void evaluate(const function_t *f, const double *const *in, double *out)
{
    switch (f->ninputs) {
    case 1: ((inputs1)f->fn)(in[0], out); break;
    case 2: ((inputs2)f->fn)(in[0], in[1], out); break;
    case 3: ((inputs3)f->fn)(in[0], in[1], in[2], out); break;
    case 4: ((inputs4)f->fn)(in[0], in[1], in[2], in[3], out); break;
    default: ((inputs5)f->fn)(in[0], in[1], in[2], in[3], in[4], out); break;
    }
}

/* numpy.empty(shape); the shape tuple is made at the first call and kept in *cache. */
static PyObject *empty_of(int ndim, const Py_ssize_t *shape, PyObject **cache)
{
    if (*cache == NULL) {
        PyObject *dims = PyTuple_New(ndim);
        for (int d = 0; dims != NULL && d < ndim; ++d) {
            PyObject *n = PyLong_FromSsize_t(shape[d]);
            if (n == NULL)
                Py_CLEAR(dims);
            else
                PyTuple_SET_ITEM(dims, d, n);
        }
        if (dims == NULL)
            return NULL;
        *cache = dims;
    }
    return PyObject_Vectorcall(empty_array, cache, 1, NULL);
}

/* A result from its flat output: one array, or a tuple of its parts as arrays (copies). */
static PyObject *parts_of(const double *flat, Py_ssize_t size, int nparts, const Py_ssize_t *start,
                          const Py_ssize_t *ndim, const Py_ssize_t (*shape)[3], PyObject **cache)
{
    Py_buffer out;
    PyObject *result = nparts > 1 ? PyTuple_New(nparts) : NULL;
    if (nparts > 1 && result == NULL)
        return NULL;
    for (int p = 0; p < nparts; ++p) {
        PyObject *part = empty_of((int)ndim[p], shape[p], &cache[p]);
        if (part == NULL || PyObject_GetBuffer(part, &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
            Py_XDECREF(part);
            Py_XDECREF(result);
            return NULL;
        }
        const Py_ssize_t stop = p + 1 < nparts ? start[p + 1] : size;
        memcpy(out.buf, flat + start[p], (size_t)(stop - start[p]) * sizeof(double));
        PyBuffer_Release(&out);
        if (nparts == 1)
            return part;
        PyTuple_SET_ITEM(result, p, part);
    }
    return result;
}

static PyObject *shapes[RBDGEN_FUNCTIONS + 1][RBDGEN_MAX_PARTS];

/* One entry point for every function of states: `self` is (the Python function, index). It
   takes the common call (float64 C-contiguous vectors of the right length, and a float for a
   parameter such as dt; out= for a one-array result), and hands any other call to the Python
   function, which converts, batches and raises the errors. */
static PyObject *call(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *fallback = PyTuple_GET_ITEM(self, 0);
    const Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GET_ITEM(self, 1));
    const function_t *f = &functions[k];
    Py_buffer in[MAX_INPUTS], out;
    double numbers[MAX_INPUTS];
    const double *pointers[MAX_INPUTS];
    int held[MAX_INPUTS] = { 0 };
    PyObject *given = NULL, *result = NULL;
    if (nargs != f->ninputs)
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    if (kwnames != NULL) {   /* only out= is taken here */
        if (f->nparts > 1 || f->scalar || PyTuple_GET_SIZE(kwnames) != 1
                || !PyUnicode_Check(PyTuple_GET_ITEM(kwnames, 0))
                || PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "out") != 0)
            return PyObject_Vectorcall(fallback, args, nargs, kwnames);
        given = args[nargs];
    }
    for (int i = 0; i < f->ninputs; ++i) {
        if (f->number[i] && PyFloat_Check(args[i])) {
            numbers[i] = PyFloat_AS_DOUBLE(args[i]);
            pointers[i] = &numbers[i];
        } else if (vector_of(args[i], f->size[i], &in[i])) {
            held[i] = 1;
            pointers[i] = (const double *)in[i].buf;
        } else {
            goto other;
        }
    }
    if (f->nparts > 1) {
        double local[512];
        double *flat = f->out_size <= 512 ? local : (double *)PyMem_Malloc(f->out_size * sizeof(double));
        if (flat == NULL) {
            PyErr_NoMemory();
            goto error;
        }
        evaluate(f, pointers, flat);
        result = parts_of(flat, f->out_size, f->nparts, f->start, f->ndim, f->shape, shapes[k]);
        if (flat != local)
            PyMem_Free(flat);
        if (result == NULL)
            goto error;
    } else if (given != NULL) {
        if (!out_of(given, (int)f->ndim[0], f->shape[0], &out))
            goto other;
        for (int i = 0; i < f->ninputs; ++i)
            if (held[i] && overlap(&in[i], &out)) {
                PyBuffer_Release(&out);
                goto other;
            }
        evaluate(f, pointers, (double *)out.buf);
        PyBuffer_Release(&out);
        Py_INCREF(given);
        result = given;
    } else if (f->scalar) {
        double value;
        evaluate(f, pointers, &value);
        if ((result = PyFloat_FromDouble(value)) == NULL)
            goto error;
    } else {
        if ((result = empty_of((int)f->ndim[0], f->shape[0], &shapes[k][0])) == NULL)
            goto error;
        if (PyObject_GetBuffer(result, &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
            Py_CLEAR(result);
            goto error;
        }
        evaluate(f, pointers, (double *)out.buf);
        PyBuffer_Release(&out);
    }
    for (int i = 0; i < f->ninputs; ++i)
        if (held[i])
            PyBuffer_Release(&in[i]);
    return result;
other:
    for (int i = 0; i < f->ninputs; ++i)
        if (held[i])
            PyBuffer_Release(&in[i]);
    return PyObject_Vectorcall(fallback, args, nargs, kwnames);
error:
    for (int i = 0; i < f->ninputs; ++i)
        if (held[i])
            PyBuffer_Release(&in[i]);
    return NULL;
}
static PyObject *frame_shapes[RBDGEN_FRAME_KINDS + 1][RBDGEN_MAX_PARTS];

typedef void (*frame_inputs1)(long, const double *, const double *, double *);
typedef void (*frame_inputs2)(long, const double *, const double *, const double *, double *);
typedef void (*frame_inputs3)(long, const double *, const double *, const double *, const double *, double *);

/* quantity(states..., frame[, reference]) with a frame name: one dict look-up, no buffer of
   the placement, the C function of the reference; a tuple when the result has parts. `self`:
   (the Python function, the row of frame_kinds). */
static PyObject *call_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *fallback = PyTuple_GET_ITEM(self, 0);
    const Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GET_ITEM(self, 1));
    const frame_kind_t *f = &frame_kinds[k];
    Py_buffer in[3], out;
    int taken = 0, reference = f->default_reference;
    PyObject *row, *result = NULL, *given = NULL;
    double local[512], *flat = local;
    if (nargs < f->nstates + 1 || nargs > f->nstates + 1 + f->takes_reference || !PyUnicode_CheckExact(args[f->nstates]))
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    if (kwnames != NULL) {   /* only out= is taken here, for a one-array result */
        if (f->nparts > 1 || PyTuple_GET_SIZE(kwnames) != 1 || !PyUnicode_Check(PyTuple_GET_ITEM(kwnames, 0))
                || PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "out") != 0)
            return PyObject_Vectorcall(fallback, args, nargs, kwnames);
        given = args[nargs];
    }
    if (nargs == f->nstates + 2) {
        reference = -1;
        for (int r = 0; r < REFERENCES; ++r)
            if (PyUnicode_CheckExact(args[nargs - 1]) && PyUnicode_CompareWithASCIIString(args[nargs - 1], reference_names[r]) == 0)
                reference = r;
    }
    if (reference < 0 || f->fn[reference] == NULL || (row = PyDict_GetItemWithError(frame_rows, args[f->nstates])) == NULL) {
        PyErr_Clear();
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    }
    const long j = PyLong_AsLong(row);
    for (; taken < f->nstates; ++taken)
        if (!vector_of(args[taken], f->size[taken], &in[taken]))
            goto other;
    if (given != NULL) {
        if (!out_of(given, (int)f->ndim[0], f->shape[0], &out))
            goto other;
        for (int i = 0; i < taken; ++i)
            if (overlap(&in[i], &out)) {
                PyBuffer_Release(&out);
                goto other;
            }
        flat = (double *)out.buf;
    } else if (f->out_size > 512 && (flat = (double *)PyMem_Malloc(f->out_size * sizeof(double))) == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    switch (f->nstates) {
    case 1: ((frame_inputs1)f->fn[reference])(frame_body[j], (const double *)in[0].buf, frame_placement[j], flat); break;
    case 2: ((frame_inputs2)f->fn[reference])(frame_body[j], (const double *)in[0].buf, (const double *)in[1].buf,
                                               frame_placement[j], flat); break;
    default: ((frame_inputs3)f->fn[reference])(frame_body[j], (const double *)in[0].buf, (const double *)in[1].buf,
                                                (const double *)in[2].buf, frame_placement[j], flat); break;
    }
    if (given != NULL) {
        PyBuffer_Release(&out);
        Py_INCREF(given);
        result = given;
    } else {
        result = parts_of(flat, f->out_size, f->nparts, f->start, f->ndim, f->shape, frame_shapes[k]);
        if (flat != local)
            PyMem_Free(flat);
    }
    while (taken > 0)
        PyBuffer_Release(&in[--taken]);
    return result;
other:
    while (taken > 0)
        PyBuffer_Release(&in[--taken]);
    return PyObject_Vectorcall(fallback, args, nargs, kwnames);
error:
    while (taken > 0)
        PyBuffer_Release(&in[--taken]);
    return NULL;
}
/* contact_dynamics(q, v, tau) for the declared contacts, undamped: (q-ddot, lambda), when every
   pivot of G M^-1 G^T is clearly positive; otherwise the Python function says which contacts
   are redundant. */
static PyObject *call_contact_dynamics(PyObject *fallback, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static PyObject *caches[2];
    const Py_ssize_t sizes[3] = { contact.nq, contact.nv, contact.nv }, nv = contact.nv, m = contact.rows;
    const Py_ssize_t starts[2] = { 0, nv }, ndims[2] = { 1, 1 }, shapes[2][3] = { { nv }, { m } };
    double local[512], *flat = local, zero = 0.0, largest = 0.0;
    Py_buffer in[3];
    Py_ssize_t taken = 0;
    PyObject *result = NULL;
    if (kwnames != NULL || nargs != 3)
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    for (; taken < 3; ++taken)
        if (!vector_of(args[taken], sizes[taken], &in[taken]))
            break;
    if (taken == 3 && nv + 2 * m > 512 && (flat = (double *)PyMem_Malloc((nv + 2 * m) * sizeof(double))) == NULL)
        taken = -1;
    if (taken == 3)
        contact.fn((const double *)in[0].buf, (const double *)in[1].buf, (const double *)in[2].buf, &zero, flat);
    for (Py_ssize_t k = 0; k < taken; ++k)
        PyBuffer_Release(&in[k]);
    if (taken < 0)
        return PyErr_NoMemory();
    if (taken == 3) {
        int clear = 1;
        for (Py_ssize_t k = 0; k < m; ++k)
            largest = fmax(largest, flat[nv + m + k]);
        for (Py_ssize_t k = 0; k < m; ++k)
            clear = clear && flat[nv + m + k] > 1e-12 * largest;
        if (clear)
            result = parts_of(flat, nv + m, 2, starts, ndims, shapes, caches);
    }
    if (flat != local)
        PyMem_Free(flat);
    if (taken < 3 || result == NULL && !PyErr_Occurred())
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    return result;
}

/* Called once at import (through cffi, which does not hold the GIL): `fallbacks` is the
   address of a tuple (numpy.empty, then the Python function of each entry point, then, with
   frame quantities, the dict frame name -> row). Returns a new reference to the tuple of
   entry points, or NULL. */
static void *make_entry_points(void *fallbacks, PyMethodDef *definitions)
{
    const Py_ssize_t count = RBDGEN_FUNCTIONS + RBDGEN_FRAME_KINDS + (contact.fn != NULL);
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *given = (PyObject *)fallbacks, *made = PyTuple_New(count);
    if (made != NULL) {
        empty_array = PyTuple_GET_ITEM(given, 0);
        Py_INCREF(empty_array);
        if (RBDGEN_FRAME_KINDS > 0) {
            frame_rows = PyTuple_GET_ITEM(given, count + 1);
            Py_INCREF(frame_rows);
        }
        for (Py_ssize_t k = 0; k < count; ++k) {
            /* the functions of states and of a frame get (their Python function, their row of
               `functions` or `frame_kinds`); contact_dynamics its Python function */
            const Py_ssize_t states = RBDGEN_FUNCTIONS, frames = RBDGEN_FRAME_KINDS;
            const int row = k < states + frames;
            PyObject *self = row ? Py_BuildValue("(On)", PyTuple_GET_ITEM(given, k + 1), k < states ? k : k - states)
                                 : PyTuple_GET_ITEM(given, k + 1);
            PyObject *f = self == NULL ? NULL : PyCFunction_New(&definitions[k], self);
            if (row)
                Py_XDECREF(self);
            if (f == NULL) {
                Py_CLEAR(made);
                break;
            }
            PyTuple_SET_ITEM(made, k, f);
        }
    }
    if (made == NULL)
        PyErr_Clear();
    PyGILState_Release(gil);
    return made;
}
