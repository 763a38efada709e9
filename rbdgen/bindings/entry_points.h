/* The types of the tables of a generated module's Python entry points (entry_points.c). */
#ifndef RBDGEN_ENTRY_POINTS_H
#define RBDGEN_ENTRY_POINTS_H

#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <math.h>
#include <string.h>

/* What the generic entry point needs about a generated function: its C function (cast back to
   its type by the count of inputs), the inputs, and the output: one array, a float, or the
   parts of a flat array as separate arrays. */
#define MAX_INPUTS 5
typedef struct {
    void (*fn)(void);
    void (*batch)(void);             /* its _batch form: (n, threads, inputs..., out) */
    int ninputs;
    Py_ssize_t size[MAX_INPUTS];
    int number[MAX_INPUTS];          /* a parameter of the call (dt): a Python float is taken */
    Py_ssize_t out_size;
    int scalar;                      /* the result is a float */
    int nparts;                      /* 1: one array; more: a tuple of arrays */
    Py_ssize_t start[RBDGEN_MAX_PARTS], ndim[RBDGEN_MAX_PARTS], shape[RBDGEN_MAX_PARTS][3];
    int pivots;                      /* declared contacts: the last part holds the pivots of
                                        G M^-1 G^T, checked and not returned; else 0 */
} function_t;

/* A frame quantity (frame_placement, frame_jacobian, frame_velocity, ...): its state inputs
   (q, then v, a), its C function in each reference frame (local, world, local_world_aligned;
   NULL where not built), the one a call without a reference gets, and its output as for
   `functions`. */
#define REFERENCES 3
static const char *const reference_names[REFERENCES] = { "local", "world", "local_world_aligned" };
typedef struct {
    int nstates;
    Py_ssize_t size[3];
    void (*fn[REFERENCES])(void);
    void (*batch[REFERENCES])(void);  /* their _batch forms: (n, threads, body, states..., placement, out) */
    int default_reference;
    int takes_reference;             /* frame_placement takes none */
    Py_ssize_t out_size;
    int nparts;
    Py_ssize_t start[RBDGEN_MAX_PARTS], ndim[RBDGEN_MAX_PARTS], shape[RBDGEN_MAX_PARTS][3];
} frame_kind_t;


/* A point fixed in a frame (point_jacobian, point_velocity, point_acceleration, point_gamma):
   the local_world_aligned frame quantity at the point, whose first three rows (linear) are the
   result; point_gamma passes a zero acceleration and negates. */
typedef struct {
    void (*fn)(void);
    int nstates;                     /* q, then v, then a */
    Py_ssize_t size[3];
    int zero_acceleration;           /* point_gamma: a = 0, and the result negated */
    Py_ssize_t cols;                 /* nv for a Jacobian (3 x nv, even when nv is 1), 0 for a
                                        vector (3) */
} point_kind_t;

#endif
