/* The Python entry points of a generated module (rbdgen/bindings): fixed code, the same for
   every robot, included by the module's rbdgen_<robot>_calls.c after its tables of data.

   cffi asks for one buffer per argument from Python (some 300 ns each here), which made a
   call from Python slower than Pinocchio's. Three entry points take the common call (float64
   C-contiguous vectors of the right length, a float for a parameter such as dt, a frame by
   name, out= for a one-array result) straight from the interpreter's vectorcall: `call` for
   every function of states, `call_frame` for every frame quantity, `call_point` for the
   points of frames, `call_declared` for the functions of the declared contacts.
   Any other call (and an out= that overlaps an input) goes to the Python function given at
   creation, which converts, batches and raises the errors.

   The including file defines, before including entry_points.h: RBDGEN_MAX_PARTS; after it:
   RBDGEN_FUNCTIONS, RBDGEN_FRAME_KINDS, RBDGEN_POINT_KINDS, RBDGEN_DECLARED and RBDGEN_FRAMES
   (counts), and the tables functions[], frame_kinds[], point_kinds[], declared[], frame_body[]
   and frame_placement[] (each with one unused row when empty). */



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

/* Releases the first `taken` buffers of `in`; returns `result` (for the epilogues). */
static PyObject *released(Py_buffer *in, int taken, PyObject *result)
{
    while (taken > 0)
        PyBuffer_Release(&in[--taken]);
    return result;
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
    return released(in, taken, result);
other:
    released(in, taken, NULL);
    return PyObject_Vectorcall(fallback, args, nargs, kwnames);
error:
    return released(in, taken, NULL);
}
static PyObject *point_shapes[RBDGEN_POINT_KINDS + 1];

/* point_x(states..., frame, point) with a frame name and a float64 point of 3 (frame
   coordinates): the local_world_aligned quantity of the frame moved to the point (placement
   r + E^T point), its linear rows; point_gamma's with a zero acceleration, negated. `self`:
   (the Python function, the row of point_kinds). */
static PyObject *call_point(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *fallback = PyTuple_GET_ITEM(self, 0);
    const Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GET_ITEM(self, 1));
    const point_kind_t *f = &point_kinds[k];
    const Py_ssize_t nv = f->size[f->nstates > 1 ? 1 : 0], size = 6 * f->cols;
    const Py_ssize_t shape[2] = { 3, f->cols };
    Py_buffer in[3], point, out;
    int taken = 0;
    long body;
    PyObject *row, *result = NULL;
    double placement[12], local[1024], *flat = local, *zeros = NULL;
    const double *E, *p;
    if (kwnames != NULL || nargs != f->nstates + 2 || !PyUnicode_CheckExact(args[f->nstates]))
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    if ((row = PyDict_GetItemWithError(frame_rows, args[f->nstates])) == NULL) {
        PyErr_Clear();
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    }
    if (!vector_of(args[nargs - 1], 3, &point))
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    body = frame_body[PyLong_AsLong(row)];
    E = frame_placement[PyLong_AsLong(row)];
    p = (const double *)point.buf;
    memcpy(placement, E, sizeof placement);
    for (int i = 0; i < 3; ++i)
        placement[9 + i] += E[i] * p[0] + E[3 + i] * p[1] + E[6 + i] * p[2];
    PyBuffer_Release(&point);
    for (; taken < f->nstates; ++taken)
        if (!vector_of(args[taken], f->size[taken], &in[taken]))
            goto other;
    if ((size > 1024 && (flat = (double *)PyMem_Malloc(size * sizeof(double))) == NULL)
            || (f->zero_acceleration && (zeros = (double *)PyMem_Calloc(nv, sizeof(double))) == NULL)) {
        PyErr_NoMemory();
        goto done;
    }
    switch (f->zero_acceleration ? 3 : f->nstates) {
    case 1: ((frame_inputs1)f->fn)(body, (const double *)in[0].buf, placement, flat); break;
    case 2: ((frame_inputs2)f->fn)(body, (const double *)in[0].buf, (const double *)in[1].buf, placement, flat); break;
    default: ((frame_inputs3)f->fn)(body, (const double *)in[0].buf, (const double *)in[1].buf,
                                    zeros ? zeros : (const double *)in[2].buf, placement, flat); break;
    }
    if ((result = empty_of(f->cols > 1 ? 2 : 1, shape, &point_shapes[k])) == NULL)
        goto done;
    if (PyObject_GetBuffer(result, &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        Py_CLEAR(result);
        goto done;
    }
    for (Py_ssize_t i = 0; i < 3 * f->cols; ++i)   /* the linear rows come first */
        ((double *)out.buf)[i] = f->zero_acceleration ? -flat[i] : flat[i];
    PyBuffer_Release(&out);
done:
    if (flat != local)
        PyMem_Free(flat);
    PyMem_Free(zeros);
    return released(in, taken, result);
other:
    released(in, taken, NULL);
    return PyObject_Vectorcall(fallback, args, nargs, kwnames);
}

static PyObject *declared_shapes[RBDGEN_DECLARED + 1][RBDGEN_MAX_PARTS];

/* A function of the contacts declared at build time, in the public function's common call:
   its states (contact_dynamics: q, v, tau), its parameters (damping, restitution) zero. The
   result without the pivots of G M^-1 G^T, when each is clearly positive; otherwise the
   Python function says which contacts are redundant. `self`: (the Python function, the row
   of declared). */
static PyObject *call_declared(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *fallback = PyTuple_GET_ITEM(self, 0);
    const Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GET_ITEM(self, 1));
    const function_t *f = &declared[k];
    Py_buffer in[MAX_INPUTS];
    const double *pointers[MAX_INPUTS];
    const double zero = 0.0;
    int held[MAX_INPUTS] = { 0 }, states = 0, clear = 1;
    double local[1024], *flat = local, largest = 0.0;
    PyObject *result = NULL;
    for (int i = 0; i < f->ninputs; ++i)
        states += !f->number[i];
    if (kwnames != NULL || nargs != states)
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    for (int i = 0, a = 0; i < f->ninputs; ++i) {
        if (f->number[i]) {
            pointers[i] = &zero;
        } else if (vector_of(args[a++], f->size[i], &in[i])) {
            held[i] = 1;
            pointers[i] = (const double *)in[i].buf;
        } else {
            clear = 0;
            break;
        }
    }
    if (clear && f->out_size > 1024 && (flat = (double *)PyMem_Malloc(f->out_size * sizeof(double))) == NULL) {
        PyErr_NoMemory();
        clear = -1;
    }
    if (clear > 0)
        evaluate(f, pointers, flat);
    for (int i = 0; i < f->ninputs; ++i)
        if (held[i])
            PyBuffer_Release(&in[i]);
    if (clear > 0 && f->pivots) {
        const Py_ssize_t first = f->start[f->nparts - 1];
        for (Py_ssize_t i = first; i < f->out_size; ++i)
            largest = fmax(largest, flat[i]);
        for (Py_ssize_t i = first; i < f->out_size; ++i)
            clear = clear && flat[i] > 1e-12 * largest;
    }
    if (clear > 0)
        result = parts_of(flat, f->pivots ? f->start[f->nparts - 1] : f->out_size, f->nparts - f->pivots,
                          f->start, f->ndim, f->shape, declared_shapes[k]);
    if (flat != local)
        PyMem_Free(flat);
    if (clear == 0)
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    return result;
}

/* Called once at import (through cffi, which does not hold the GIL): `given` is the address
   of a tuple (numpy.empty, a dict name -> the module's Python function, the dict frame name ->
   row of frame_body and frame_placement). Returns a new reference to a dict name -> entry
   point, for each definition whose name the first dict has; NULL on failure. */
static void *make_entry_points(void *given, PyMethodDef *definitions, const Py_ssize_t *rows)
{
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *python = PyTuple_GET_ITEM((PyObject *)given, 1), *made = PyDict_New();
    empty_array = PyTuple_GET_ITEM((PyObject *)given, 0);
    frame_rows = PyTuple_GET_ITEM((PyObject *)given, 2);
    Py_INCREF(empty_array);
    Py_INCREF(frame_rows);
    for (Py_ssize_t k = 0; made != NULL && definitions[k].ml_name != NULL; ++k) {
        PyObject *fallback = PyDict_GetItemString(python, definitions[k].ml_name);
        if (fallback == NULL)   /* not public in this module (a point function without frames) */
            continue;
        PyObject *self = Py_BuildValue("(On)", fallback, rows[k]);
        PyObject *f = self == NULL ? NULL : PyCFunction_New(&definitions[k], self);
        Py_XDECREF(self);
        if (f == NULL || PyDict_SetItemString(made, definitions[k].ml_name, f) < 0)
            Py_CLEAR(made);
        Py_XDECREF(f);
    }
    if (made == NULL)
        PyErr_Clear();
    PyGILState_Release(gil);
    return made;
}
