/* The types of the tables of a generated module's Python entry points (entry_points.c). The
   including file includes the module's header (rbdgen_function_t) first. */
#ifndef RBDGEN_ENTRY_POINTS_H
#define RBDGEN_ENTRY_POINTS_H

#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <math.h>
#include <string.h>

/* What the generic entry point needs about a generated function: the function (its inputs
   and uniform entry, rbdgen_function_t: a parameter of the call such as dt, shared_in, is
   taken as a Python float) and the output: one array, a float, or the parts of a flat array
   as separate arrays. */
typedef struct {
    const rbdgen_function_t *c;
    Py_ssize_t out_size;
    int scalar;                      /* the result is a float */
    int nparts;                      /* 1: one array; more: a tuple of arrays */
    Py_ssize_t start[RBDGEN_MAX_PARTS], ndim[RBDGEN_MAX_PARTS], shape[RBDGEN_MAX_PARTS][3];
    int pivots;                      /* declared contacts: the last part holds the pivots of
                                        G M^-1 G^T, checked and not returned; else 0 */
    int nominal;                     /* 1: its last input is the model parameters, params=
                                        (calls.c's nominal_params when not given) */
    int solves;                      /* 1: it solves with M, so params= given go to the Python
                                        function, which checks them */
    const char *names[RBDGEN_MAX_INPUTS];   /* its inputs' names, as the Python function's keywords */
    int has_default[RBDGEN_MAX_INPUTS];     /* 1: a call may leave the input out (kp, damping, dt) */
    double defaults[RBDGEN_MAX_INPUTS];     /* its value then */
} function_t;

/* A frame quantity (frame_placement, frame_jacobian, frame_velocity, ...): its state inputs
   (q, then v, a; the C function takes the placement after them), its C function in each
   reference frame (calls.c's reference_names; NULL where not built), the one a call
   without a reference gets, and its output as for `functions`. */
typedef struct {
    int nstates;
    long size[3];
    const rbdgen_function_t *c[REFERENCES];
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
    const rbdgen_function_t *c;
    int nstates;                     /* q, then v, then a */
    long size[3];
    int zero_acceleration;           /* point_gamma: a = 0, and the result negated */
    Py_ssize_t cols;                 /* nv for a Jacobian (3 x nv, even when nv is 1), 0 for a
                                        vector (3) */
} point_kind_t;

#endif
