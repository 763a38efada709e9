/* The Python entry points of a generated module (rbdgen/bindings): fixed code, the same for
   every robot, included by the module's rbdgen_<robot>_calls.c after its tables of data.

   cffi asks for one buffer per argument, which made a call from Python slower than
   Pinocchio's (docs/performance.md, calls from Python). Four entry points take the common call
   (float64 C-contiguous vectors of the right length, a float or an int for a parameter such as
   dt, left out or given by name when it has a default, a frame by name, an out= the Python
   function would take) straight from the vectorcall: `call` (every function of states, and its
   common batch: B x n float64 arrays, threads=),
   `call_frame`, `call_point` and `call_declared`. Any other call goes to the Python function
   given at creation, which converts, batches and raises the errors. Arrays are read and made
   through NumPy's C interface (a result one allocation, its parts views); every generated
   function is called through its uniform entry (rbdgen_function_t's eval and eval_batch).

   The including file defines, before including entry_points.h: RBDGEN_MAX_PARTS and
   RBDGEN_MAX_INPUTS, and includes the module's header; after it: RBDGEN_FUNCTIONS,
   RBDGEN_FRAME_KINDS, RBDGEN_POINT_KINDS, RBDGEN_DECLARED and RBDGEN_FRAMES (counts), and the
   tables functions[], frame_kinds[], point_kinds[], declared[], frame_body[] and
   frame_placement[] (each with one unused row when empty). */



static PyObject *frame_rows;    /* frame name -> row of frame_body and frame_placement */

#include "rbdgen_arrays.c"

/* Where a call's keywords go, and which it takes: out= always (into *given; None leaves it
   NULL); threads= when `threads` is not NULL (an int from 0 to 256, which the Python function
   accepts on any machine; 0 when not given); params= when `params` is not NULL (None leaves it
   NULL); when `f` is not NULL an input of f's after the positional ones, by its name (into
   full[], a borrowed reference). */
typedef struct {
    PyObject **given;
    int *threads;
    PyObject **params;
    const function_t *f;
    PyObject **full;
} keywords_t;

/* 1 when kwnames holds only keywords `into` takes (stored there), 0 for any other keyword or
   value (to the Python function). */
static int keywords(PyObject *kwnames, PyObject *const *args, Py_ssize_t nargs, keywords_t into)
{
    PyObject **given = into.given, **params = into.params, **full = into.full;
    int *threads = into.threads;
    const function_t *f = into.f;
    if (threads != NULL)
        *threads = 0;
    if (params != NULL)
        *params = NULL;
    for (Py_ssize_t k = 0; kwnames != NULL && k < PyTuple_GET_SIZE(kwnames); ++k) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k), *value = args[nargs + k];
        if (!PyUnicode_Check(name))
            return 0;
        int input = -1;
        for (int i = (int)nargs; f != NULL && i < f->c->n_in - f->nominal && input < 0; ++i)
            if (PyUnicode_CompareWithASCIIString(name, f->names[i]) == 0)
                input = i;
        if (input >= 0) {
            full[input] = value;
        } else if (PyUnicode_CompareWithASCIIString(name, "out") == 0) {
            *given = value == Py_None ? NULL : value;   /* out=None: the default, said */
        } else if (params != NULL && PyUnicode_CompareWithASCIIString(name, "params") == 0) {
            *params = value == Py_None ? NULL : value;
        } else if (threads != NULL && PyUnicode_CompareWithASCIIString(name, "threads") == 0
                   && PyLong_CheckExact(value)) {
            const long t = PyLong_AsLong(value);   /* -1 and an OverflowError for a huge int */
            if (t < 0 || t > 256) {
                PyErr_Clear();
                return 0;
            }
            *threads = (int)t;
        } else {
            return 0;
        }
    }
    return 1;
}

static int only_out(PyObject *kwnames, PyObject *const *args, Py_ssize_t nargs, PyObject **given)
{
    return keywords(kwnames, args, nargs, (keywords_t){ .given = given });
}

/* Whether each of `count` states' pivots of G M^-1 G^T (a contact or loop solve's last part) are
   clearly positive: otherwise the Python function says why. */
static int pivots_clear(const function_t *f, const double *out, Py_ssize_t count)
{
    const Py_ssize_t first = f->start[f->nparts - 1];
    for (Py_ssize_t s = 0; s < count; ++s) {
        const double *state = out + s * f->out_size;
        double largest = 0.0;
        int clear = 1;
        for (Py_ssize_t i = first; i < f->out_size; ++i)
            largest = fmax(largest, state[i]);
        for (Py_ssize_t i = first; i < f->out_size && clear; ++i)
            clear = state[i] > RBDGEN_PIVOT_CLEAR * largest;   /* NaN is not clear either */
        if (!clear) return 0;
    }
    return 1;
}

/* A batch in the common call: every state input a (B, n) array as rows_of takes it, the
   parameters floats, out= as batch_target takes it. The C batch runs without the GIL, as
   cffi's call does. NULL without an exception: not the common batch. */
static PyObject *call_batch(const function_t *f, PyObject *const *args, PyObject *given, int threads)
{
    const rbdgen_function_t *c = f->c;
    double numbers[RBDGEN_MAX_INPUTS], *out;
    const double *in[RBDGEN_MAX_INPUTS];
    Py_ssize_t count = 0;
    long sizes[RBDGEN_MAX_INPUTS];
    PyObject *flat;
    for (int i = 0; i < c->n_in; ++i) {
        if (c->shared_in[i] && c->size_in[i] == 1 && number_of(args[i], &numbers[i])) {
            in[i] = &numbers[i];
        } else if (c->shared_in[i] || (in[i] = rows_of(args[i], c->size_in[i], &count)) == NULL) {
            return NULL;
        }
    }
    for (int i = 0; i < c->n_in; ++i)
        sizes[i] = c->shared_in[i] ? 0 : (long)count * c->size_in[i];
    if ((flat = batch_target(given, count, f->scalar, f->nparts, f->ndim[0], f->shape[0], f->out_size, in, sizes,
                             c->n_in)) == NULL)
        return NULL;
    out = (double *)PyArray_DATA((PyArrayObject *)flat);
    Py_BEGIN_ALLOW_THREADS
    c->eval_batch((long)count, threads, in, &out, -1);
    Py_END_ALLOW_THREADS
    if ((f->solves && !all_finite(out, count * f->out_size)) || (f->pivots && !pivots_clear(f, out, count))) {
        Py_DECREF(flat);   /* the Python function says why */
        return NULL;
    }
    return result_of(flat, f->nparts, f->start, f->ndim, f->shape, count);
}

/* A function of states given its inputs as positions (`args`, n of them, call's defaults and
   keywords already in place): the common call (float64 C-contiguous vectors of the right
   length, a float or an int for a parameter such as dt; out= as the Python function takes it)
   and the common batch (call_batch). NULL without an exception for any other call (the Python
   function converts, and raises the errors). */
static PyObject *call_given(const function_t *f, PyObject *const *args, PyObject *given, int threads,
                             PyObject *params)
{
    const rbdgen_function_t *c = f->c;
    double numbers[RBDGEN_MAX_INPUTS], *out;
    const double *in[RBDGEN_MAX_INPUTS];
    PyObject *flat, *batch;
    const int n = c->n_in - f->nominal;   /* the inputs given as arguments */
    for (int i = 0; i < n; ++i)   /* a batch: its first state input has two dimensions */
        if (!c->shared_in[i]) {
            if (PyArray_CheckExact(args[i]) && PyArray_NDIM((PyArrayObject *)args[i]) == 2) {
                if (f->nominal)   /* params in a batch (per state, or one set for all): the Python function's */
                    return NULL;
                return call_batch(f, args, given, threads);
            }
            break;
        }
    if (given != NULL && f->scalar)
        return NULL;
    for (int i = 0; i < n; ++i) {
        if (c->shared_in[i] && c->size_in[i] == 1 && number_of(args[i], &numbers[i])) {
            in[i] = &numbers[i];
        } else if ((in[i] = vector_of(args[i], c->size_in[i])) == NULL) {
            return NULL;
        }
    }
    if (f->nominal && params == NULL) {
        in[n] = nominal_params;
    } else if (f->nominal) {   /* finite values; for a solve, physical ones (rbdgen_physical.c): the Python
                                  function says what is wrong with others */
        if ((in[n] = vector_of(params, c->size_in[n])) == NULL)
            return NULL;
        for (long k = 0; k < c->size_in[n]; ++k)
            if (!isfinite(in[n][k]))
                return NULL;
        if (f->solves && params_problem(in[n], 1, 0, c->size_in[n], 0) >= 0)
            return NULL;
    }
    if (f->scalar) {
        double value;
        out = &value;
        c->eval(in, &out, -1);
        return PyFloat_FromDouble(value);
    }
    if (given != NULL && target_of(given, f->nparts, (int)f->ndim[0], f->shape[0], f->out_size, in, c->size_in,
                                   c->n_in) == NULL)
        return NULL;
    if ((flat = written_into(given, f->nparts, (int)f->ndim[0], f->shape[0], f->out_size)) == NULL)
        return NULL;
    out = (double *)PyArray_DATA((PyArrayObject *)flat);
    c->eval(in, &out, -1);
    if ((f->solves && !all_finite(out, f->out_size)) || (f->pivots && !pivots_clear(f, out, 1))) {
        Py_DECREF(flat);   /* the Python function says why */
        return NULL;
    }
    return result_of(flat, f->nparts, f->start, f->ndim, f->shape, -1);
}

/* The entry point of a function of states: its inputs by position, then those with a default
   (kp, damping, dt) by name or left out, as call_given takes them; any other call to the
   Python function. */
static PyObject *call(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *fallback = PyTuple_GET_ITEM(self, 0);
    const function_t *f = &functions[PyLong_AsSsize_t(PyTuple_GET_ITEM(self, 1))];
    PyObject *full[RBDGEN_MAX_INPUTS] = { NULL }, *made[RBDGEN_MAX_INPUTS] = { NULL };
    PyObject *given = NULL, *params = NULL, *result = NULL;
    int threads, ok = 1;
    const int n = f->c->n_in - f->nominal;
    if (nargs > n || !keywords(kwnames, args, nargs, (keywords_t){ .given = &given, .threads = &threads,
                                   .params = f->nominal ? &params : NULL, .f = f, .full = full }))
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    for (int i = 0; i < n && ok; ++i)
        if (i < nargs)
            full[i] = args[i];
        else if (full[i] == NULL && (ok = f->has_default[i]))
            ok = (full[i] = made[i] = PyFloat_FromDouble(f->defaults[i])) != NULL;
    if (ok)
        result = call_given(f, full, given, threads, params);
    for (int i = 0; i < n; ++i)
        Py_XDECREF(made[i]);
    if (result == NULL && !PyErr_Occurred())   /* not the common call: the Python function's */
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    return result;
}

/* A frame quantity of one state, or (count > 0) of a batch, through the uniform entry: the
   state inputs `states`, then the frame's placement (one for the whole batch). */
static void evaluate_frame(const rbdgen_function_t *c, Py_ssize_t count, int threads, long body,
                           const double *const *states, const double *placement, double *out)
{
    const double *in[RBDGEN_MAX_INPUTS];
    for (int i = 0; i + 1 < c->n_in; ++i)
        in[i] = states[i];
    in[c->n_in - 1] = placement;
    if (count > 0)
        c->eval_batch((long)count, threads, in, &out, body);
    else
        c->eval(in, &out, body);
}

/* A frame quantity of a batch in the common call: every state input a (B, n) array as rows_of
   takes it, out= as batch_target takes it; the frame's placement one for the whole batch.
   NULL without an exception: not the common batch. */
static PyObject *call_frame_batch(const frame_kind_t *f, const rbdgen_function_t *c, long body, const double *placement,
                                  PyObject *const *args, PyObject *given, int threads)
{
    const double *in[3];
    Py_ssize_t count = 0;
    long sizes[3];
    PyObject *flat;
    double *out;
    for (int i = 0; i < f->nstates; ++i) {
        if ((in[i] = rows_of(args[i], f->size[i], &count)) == NULL)
            return NULL;
        sizes[i] = (long)count * f->size[i];
    }
    if ((flat = batch_target(given, count, 0, f->nparts, f->ndim[0], f->shape[0], f->out_size, in, sizes,
                             f->nstates)) == NULL)
        return NULL;
    out = (double *)PyArray_DATA((PyArrayObject *)flat);
    Py_BEGIN_ALLOW_THREADS
    evaluate_frame(c, count, threads, body, in, placement, out);
    Py_END_ALLOW_THREADS
    return result_of(flat, f->nparts, f->start, f->ndim, f->shape, count);
}

/* The row of frame_body and frame_placement of a frame given by name; -1 for anything else. */
static long frame_row(PyObject *name)
{
    PyObject *row = PyUnicode_CheckExact(name) ? PyDict_GetItemWithError(frame_rows, name) : NULL;
    if (row == NULL) {
        PyErr_Clear();
        return -1;
    }
    return PyLong_AsLong(row);
}

/* quantity(states..., frame[, reference]) with a frame name: one dict look-up, no buffer of
   the placement, the C function of the reference; a tuple when the result has parts. A batch
   of states goes to call_frame_batch. `self`: (the Python function, the row of frame_kinds). */
static PyObject *call_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *fallback = PyTuple_GET_ITEM(self, 0);
    const frame_kind_t *f = &frame_kinds[PyLong_AsSsize_t(PyTuple_GET_ITEM(self, 1))];
    const double *in[3];
    int reference = f->default_reference;
    long j;
    int threads;
    PyObject *given = NULL, *flat, *batch;
    if (nargs < f->nstates + 1 || nargs > f->nstates + 1 + f->takes_reference
            || !keywords(kwnames, args, nargs, (keywords_t){ .given = &given, .threads = &threads })
            || (j = frame_row(args[f->nstates])) < 0)
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    if (nargs == f->nstates + 2) {
        reference = -1;
        for (int r = 0; r < REFERENCES; ++r)
            if (PyUnicode_CheckExact(args[nargs - 1]) && PyUnicode_CompareWithASCIIString(args[nargs - 1], reference_names[r]) == 0)
                reference = r;
    }
    if (reference < 0 || f->c[reference] == NULL)
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    if (PyArray_CheckExact(args[0]) && PyArray_NDIM((PyArrayObject *)args[0]) == 2) {   /* a batch */
        batch = call_frame_batch(f, f->c[reference], frame_body[j], frame_placement[j], args, given, threads);
        if (batch != NULL || PyErr_Occurred())
            return batch;
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    }
    for (int i = 0; i < f->nstates; ++i)
        if ((in[i] = vector_of(args[i], f->size[i])) == NULL)
            return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    if (given != NULL && target_of(given, f->nparts, (int)f->ndim[0], f->shape[0], f->out_size, in, f->size,
                                   f->nstates) == NULL)
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    if ((flat = written_into(given, f->nparts, (int)f->ndim[0], f->shape[0], f->out_size)) == NULL)
        return NULL;
    evaluate_frame(f->c[reference], 0, 0, frame_body[j], in, frame_placement[j],
                   (double *)PyArray_DATA((PyArrayObject *)flat));
    return result_of(flat, f->nparts, f->start, f->ndim, f->shape, -1);
}

/* point_x(states..., frame, point) with a frame name and a float64 point of 3 (frame
   coordinates): the local_world_aligned quantity of the frame moved to the point (placement
   r + E^T point), its linear rows; point_gamma's with a zero acceleration, negated. `self`:
   (the Python function, the row of point_kinds). */
static PyObject *call_point(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *fallback = PyTuple_GET_ITEM(self, 0);
    const point_kind_t *f = &point_kinds[PyLong_AsSsize_t(PyTuple_GET_ITEM(self, 1))];
    const Py_ssize_t cols = f->cols > 0 ? f->cols : 1;   /* a vector is one column */
    const Py_ssize_t nv = f->size[f->nstates > 1 ? 1 : 0], size = 6 * cols, shape[2] = { 3, cols };
    const int ndim = f->cols > 0 ? 2 : 1;
    const double *in[3], *p, *E;
    double placement[12], local[1024], *flat = local, *zeros = NULL, *out;
    long j;
    PyObject *given = NULL, *result;
    if (nargs != f->nstates + 2 || !only_out(kwnames, args, nargs, &given) || (j = frame_row(args[f->nstates])) < 0
            || (p = vector_of(args[nargs - 1], 3)) == NULL)
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    for (int i = 0; i < f->nstates; ++i)
        if ((in[i] = vector_of(args[i], f->size[i])) == NULL)
            return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    if (given != NULL && target_of(given, 1, ndim, shape, 3 * cols, in, f->size, f->nstates) == NULL)
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    E = frame_placement[j];
    memcpy(placement, E, sizeof placement);
    for (int i = 0; i < 3; ++i)
        placement[9 + i] += E[i] * p[0] + E[3 + i] * p[1] + E[6 + i] * p[2];
    if ((size > 1024 && (flat = (double *)PyMem_Malloc(size * sizeof(double))) == NULL)
            || (f->zero_acceleration && (zeros = (double *)PyMem_Calloc(nv, sizeof(double))) == NULL)) {
        if (flat != local)
            PyMem_Free(flat);
        return PyErr_NoMemory();
    }
    if (zeros != NULL)
        in[2] = zeros;
    evaluate_frame(f->c, 0, 0, frame_body[j], in, placement, flat);
    if ((result = written_into(given, 1, ndim, shape, 3 * cols)) != NULL) {
        out = (double *)PyArray_DATA((PyArrayObject *)result);
        for (Py_ssize_t i = 0; i < 3 * cols; ++i)   /* the linear rows come first */
            out[i] = f->zero_acceleration ? -flat[i] : flat[i];
    }
    if (flat != local)
        PyMem_Free(flat);
    PyMem_Free(zeros);
    return result;
}

/* A function of the contacts declared at build time, in the public function's common call:
   its states (contact_dynamics: q, v, tau), its parameters (damping, restitution) zero, out=
   the flat array of its parts. The result without the pivots of G M^-1 G^T, when each is
   clearly positive; otherwise the Python function says which contacts are redundant. `self`:
   (the Python function, the row of declared). */
static PyObject *call_declared(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *fallback = PyTuple_GET_ITEM(self, 0);
    const function_t *f = &declared[PyLong_AsSsize_t(PyTuple_GET_ITEM(self, 1))];
    const rbdgen_function_t *c = f->c;
    const double *in[RBDGEN_MAX_INPUTS];
    const double zero = 0.0;
    int states = 0;
    double *out;
    PyObject *given = NULL, *flat;
    for (int i = 0; i < c->n_in; ++i)
        states += !c->shared_in[i];
    if (nargs != states || !only_out(kwnames, args, nargs, &given))
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    for (int i = 0, a = 0; i < c->n_in; ++i)
        if ((in[i] = c->shared_in[i] ? &zero : vector_of(args[a++], c->size_in[i])) == NULL)
            return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    if (given != NULL && target_of(given, f->nparts, (int)f->ndim[0], f->shape[0], f->out_size, in, c->size_in,
                                   c->n_in) == NULL)
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    if ((flat = written_into(given, f->nparts, (int)f->ndim[0], f->shape[0], f->out_size)) == NULL)
        return NULL;
    out = (double *)PyArray_DATA((PyArrayObject *)flat);
    c->eval(in, &out, -1);
    if (f->solves && !all_finite(out, f->pivots ? f->start[f->nparts - 1] : f->out_size)) {   /* the Python function says why */
        Py_DECREF(flat);
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    }
    if (f->pivots && !pivots_clear(f, out, 1)) {
        Py_DECREF(flat);
        return PyObject_Vectorcall(fallback, args, nargs, kwnames);
    }
    return result_of(flat, f->nparts - f->pivots, f->start, f->ndim, f->shape, -1);
}

/* Called once at import (through cffi, which does not hold the GIL): `given` is the address
   of a tuple (a dict name -> the module's Python function, the dict frame name -> row of
   frame_body and frame_placement, the tuple type that holds an entry point's self). Returns a
   new reference to a dict name -> entry point, for each definition whose name the first dict
   has; NULL on failure (NumPy's C interface not found), and then the Python functions stay.
   The self type is the module's: an entry point pickles as getattr(its self, its name), and
   that self pickles as the module. */
static void *make_entry_points(void *given, PyMethodDef *definitions, const Py_ssize_t *rows)
{
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *python = PyTuple_GET_ITEM((PyObject *)given, 0), *made = NULL;
    frame_rows = PyTuple_GET_ITEM((PyObject *)given, 1);
    Py_INCREF(frame_rows);
    if (_import_array() >= 0)
        made = PyDict_New();
    for (Py_ssize_t k = 0; made != NULL && definitions[k].ml_name != NULL; ++k) {
        PyObject *fallback = PyDict_GetItemString(python, definitions[k].ml_name);
        if (fallback == NULL)   /* not public in this module (a point function without frames) */
            continue;
        PyObject *self = PyObject_CallFunction(PyTuple_GET_ITEM((PyObject *)given, 2), "((On))", fallback, rows[k]);
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
