/* CasADi's external-function interface for the functions of a generated module: fixed code,
   the same for every robot, included by rbdgen_<robot>_casadi.c after its tables. With it the
   module's extension, and the exported library, load with casadi.external(name, library).

   Each function NAME exports NAME(arg, res, iw, w, mem) and NAME_n_in, _n_out, _name_in,
   _name_out, _sparsity_in, _sparsity_out, _work (CasADi's calling convention: dense
   column-major matrices; a NULL input is zero, a NULL output is not wanted). Where the module
   has its derivatives, jac_NAME is the Jacobian CasADi asks for: inputs (the inputs, then the
   nominal outputs, unused), outputs d output / d input for every output (outer) and input
   (inner), each numel(output) x numel(input), from the generated derivative functions.

   A function of a frame is one symbol per frame the module serves, NAME_f<index> (index in
   the module's frame list): its inputs are the states only, the frame's body and placement
   come from casadi_frames[]. The contacts' functions hold the contacts rigidly (damping 0).

   Every C function is called through its uniform entry (rbdgen_function_t's eval, the
   module's header), whatever its inputs. The including file defines RBDGEN_CASADI_MAX_IN,
   _MAX_OUT, _MAX_SOURCES, _MAX_CALL_IN, the tables
   casadi_functions[] and casadi_frames[], then RBDGEN_CASADI(NAME, ROW) for each function of
   states and, for each function of a frame, RBDGEN_CASADI_FRAME(NAME, ROW, FRAME) for its first
   frame and RBDGEN_CASADI_FRAME_AS(NAME, FIRST, ROW, FRAME) for the others (FIRST: the first's
   NAME); the _JACOBIAN forms likewise. */
#ifndef RBDGEN_CASADI_API_H
#define RBDGEN_CASADI_API_H

#include <string.h>

typedef long long rbdgen_casadi_int;   /* CasADi's casadi_int */

/* Each symbol is a thunk into the shared code below, left unoptimized (a humanoid has 800
   frame symbols, whose compilation with the shared code inlined into each is several times
   longer: docs/performance.md, Cold builds), while the file is compiled with optimization for
   the shared code, which copies the results (rbdgen's build and the export's CMakeLists: -O2). */
#if defined(_WIN32)
#define RBDGEN_CASADI_EXPORT __declspec(dllexport)
#elif defined(__clang__)
#define RBDGEN_CASADI_EXPORT __attribute__((visibility("default"), optnone, noinline))
#elif defined(__GNUC__)
#define RBDGEN_CASADI_EXPORT __attribute__((visibility("default"), optimize("O0")))
#else
#define RBDGEN_CASADI_EXPORT
#endif
#if defined(__GNUC__) || defined(__clang__)
#define RBDGEN_CASADI_SHARED __attribute__((noinline))
#else
#define RBDGEN_CASADI_SHARED
#endif

#define RBDGEN_CASADI_ZEROS (-1)       /* an input of a call that is zero */
#define RBDGEN_CASADI_PLACEMENT (-2)   /* the frame's placement on its body */

/* A C function of the module called on some of a function's inputs, through its uniform
   entry (rbdgen_function_t, the module's header). */
typedef struct {
    const rbdgen_function_t *c;
    int input[RBDGEN_CASADI_MAX_CALL_IN];   /* for each of c's inputs: which of the function's, or one of the above */
} rbdgen_casadi_call_t;

/* A frame the module serves: its body and placement on it (E row-major, then r). */
typedef struct {
    long body;
    double placement[12];
} rbdgen_casadi_frame_t;

/* How a Jacobian block is made from its source. */
#define RBDGEN_CASADI_COPY 0       /* the source's rows as they are */
#define RBDGEN_CASADI_ROTATION 1   /* d vec(R) / dq from the angular rows of a world-aligned Jacobian */
#define RBDGEN_CASADI_INVERSE 2    /* d vec(A) / dq = -A dB A for the value A = B^-1, from dB / dq (minv) */

typedef struct {
    rbdgen_casadi_call_t call;         /* the function itself */
    int n_in, n_out;
    const char *in_name[RBDGEN_CASADI_MAX_IN];
    rbdgen_casadi_int in_sparsity[RBDGEN_CASADI_MAX_IN][3];    /* dense: rows, columns, 1 */
    const char *out_name[RBDGEN_CASADI_MAX_OUT];
    rbdgen_casadi_int out_sparsity[RBDGEN_CASADI_MAX_OUT][3];
    long out_start[RBDGEN_CASADI_MAX_OUT];                       /* in the flat row-major output */
    int n_sources;                      /* the derivative functions the Jacobian reads */
    rbdgen_casadi_call_t source[RBDGEN_CASADI_MAX_SOURCES];
    /* block (output o, input i): source, start in its flat output (row-major, numel(o) rows,
       numel(i) columns); source -1: zero */
    int block_source[RBDGEN_CASADI_MAX_OUT][RBDGEN_CASADI_MAX_IN];
    long block_start[RBDGEN_CASADI_MAX_OUT][RBDGEN_CASADI_MAX_IN];
    int block_kind[RBDGEN_CASADI_MAX_OUT][RBDGEN_CASADI_MAX_IN];
    int value_source;                   /* ROTATION, INVERSE blocks: the source whose output starts with
                                           the function's value (R, A) */
    const char *jac_in_name[RBDGEN_CASADI_MAX_IN + RBDGEN_CASADI_MAX_OUT];
    const char *jac_out_name[RBDGEN_CASADI_MAX_OUT * RBDGEN_CASADI_MAX_IN];
    rbdgen_casadi_int jac_sparsity[RBDGEN_CASADI_MAX_OUT * RBDGEN_CASADI_MAX_IN][3];
    long work;                          /* doubles of w: outputs or sources, then zeros */
    long zeros;                         /* the largest input, for a NULL one */
} rbdgen_casadi_function_t;

static long rbdgen_casadi_numel(const rbdgen_casadi_int *sparsity)
{
    return (long)(sparsity[0] * sparsity[1]);
}

/* Calls `c` on the function's inputs `arg` (NULL: the zeros at `zeros`), for `frame` (NULL
   for a function of states), into `out`. */
RBDGEN_CASADI_SHARED static void rbdgen_casadi_run(const rbdgen_casadi_call_t *c, const rbdgen_casadi_frame_t *frame, const double **arg,
                              const double *zeros, double *out)
{
    const double *in[RBDGEN_CASADI_MAX_CALL_IN];
    for (int k = 0; k < c->c->n_in; ++k)
        in[k] = c->input[k] == RBDGEN_CASADI_PLACEMENT ? frame->placement
              : c->input[k] >= 0 && arg[c->input[k]] ? arg[c->input[k]] : zeros;
    c->c->eval(in, &out, frame ? frame->body : -1);
}

/* A rows x cols row-major block into CasADi's column-major storage. */
RBDGEN_CASADI_SHARED static void rbdgen_casadi_transpose(const double *from, long rows, long cols, double *to)
{
    for (long j = 0; j < cols; ++j)
        for (long i = 0; i < rows; ++i)
            to[j * rows + i] = from[i * cols + j];
}

/* A COPY block of an output (n_rows x n_cols, its entries row-major in the block's rows, cols
   columns) into CasADi's storage: the rows in column-major order of the output's entries (a
   vector's as they are), the block column-major. */
RBDGEN_CASADI_SHARED static void rbdgen_casadi_matrix_block(const double *from, long n_rows, long n_cols, long cols,
                                                           double *to)
{
    for (long k = 0; k < cols; ++k)
        for (long a = 0; a < n_rows; ++a)
            for (long b = 0; b < n_cols; ++b)
                to[k * n_rows * n_cols + b * n_rows + a] = from[(a * n_cols + b) * cols + k];
}

/* d vec(R) / dq_j = vec(skew(w_j) R), column-major as CasADi stores R: w_j is column j of the
   angular rows `angular` (3 x cols, row-major) of the frame's world-aligned Jacobian, R
   row-major (frame -> world). The Jacobian block is column-major, 9 x cols. */
RBDGEN_CASADI_SHARED static void rbdgen_casadi_rotation(const double *angular, long cols, const double *R, double *to)
{
    for (long j = 0; j < cols; ++j) {
        const double wx = angular[j], wy = angular[cols + j], wz = angular[2 * cols + j];
        for (int c = 0; c < 3; ++c) {
            const double r0 = R[c], r1 = R[3 + c], r2 = R[6 + c];   /* column c of R */
            to[j * 9 + c * 3 + 0] = wy * r2 - wz * r1;
            to[j * 9 + c * 3 + 1] = wz * r0 - wx * r2;
            to[j * 9 + c * 3 + 2] = wx * r1 - wy * r0;
        }
    }
}

/* d vec(A) / dq_k = -vec(A dB_k A), column-major as CasADi stores A (n x n, row-major here, the
   function's value A = B^-1): dB_k is column k of the block `dB` (n n rows, row-major, cols
   columns). The Jacobian block is column-major, n n x cols. */
RBDGEN_CASADI_SHARED static void rbdgen_casadi_inverse(const double *dB, long cols, const double *A, long n, double *to)
{
    memset(to, 0, (size_t)(n * n * cols) * sizeof(double));
    for (long k = 0; k < cols; ++k)
        for (long i = 0; i < n; ++i)
            for (long b = 0; b < n; ++b) {
                double row = 0.0;   /* (A dB_k)[i][b] */
                for (long a = 0; a < n; ++a)
                    row += A[i * n + a] * dB[(a * n + b) * cols + k];
                for (long j = 0; j < n; ++j)
                    to[k * n * n + j * n + i] -= row * A[b * n + j];
            }
}

RBDGEN_CASADI_SHARED static int rbdgen_casadi_eval(const rbdgen_casadi_function_t *f, const rbdgen_casadi_frame_t *frame,
                              const double **arg, double **res, double *w)
{
    double *zeros = w + f->work - f->zeros;
    memset(zeros, 0, (size_t)f->zeros * sizeof(double));
    rbdgen_casadi_run(&f->call, frame, arg, zeros, w);
    for (int o = 0; o < f->n_out; ++o)
        if (res[o])
            rbdgen_casadi_transpose(w + f->out_start[o], f->out_sparsity[o][0], f->out_sparsity[o][1], res[o]);
    return 0;
}

RBDGEN_CASADI_SHARED static int rbdgen_casadi_jacobian(const rbdgen_casadi_function_t *f, const rbdgen_casadi_frame_t *frame,
                                  const double **arg, double **res, double *w)
{
    double *zeros = w + f->work - f->zeros;
    long offset[RBDGEN_CASADI_MAX_SOURCES + 1] = { 0 };
    memset(zeros, 0, (size_t)f->zeros * sizeof(double));
    for (int s = 0; s < f->n_sources; ++s) {
        rbdgen_casadi_run(&f->source[s], frame, arg, zeros, w + offset[s]);
        offset[s + 1] = offset[s] + f->source[s].c->size_out[0];
    }
    for (int o = 0; o < f->n_out; ++o)
        for (int i = 0; i < f->n_in; ++i) {
            double *to = res[o * f->n_in + i];
            const long rows = rbdgen_casadi_numel(f->out_sparsity[o]), cols = rbdgen_casadi_numel(f->in_sparsity[i]);
            if (to == NULL)
                continue;
            const int s = f->block_source[o][i];
            if (s < 0)
                memset(to, 0, (size_t)(rows * cols) * sizeof(double));
            else if (f->block_kind[o][i] == RBDGEN_CASADI_ROTATION)
                rbdgen_casadi_rotation(w + offset[s] + f->block_start[o][i], cols, w + offset[f->value_source], to);
            else if (f->block_kind[o][i] == RBDGEN_CASADI_INVERSE)
                rbdgen_casadi_inverse(w + offset[s] + f->block_start[o][i], cols, w + offset[f->value_source],
                                      (long)f->out_sparsity[o][0], to);
            else   /* (a vector output: one column) */
                rbdgen_casadi_matrix_block(w + offset[s] + f->block_start[o][i], (long)f->out_sparsity[o][0],
                                           (long)f->out_sparsity[o][1], cols, to);
        }
    return 0;
}

RBDGEN_CASADI_SHARED static void rbdgen_casadi_work(const rbdgen_casadi_function_t *f, int jacobian, rbdgen_casadi_int *sz_arg,
                               rbdgen_casadi_int *sz_res, rbdgen_casadi_int *sz_iw, rbdgen_casadi_int *sz_w)
{
    if (sz_arg) *sz_arg = jacobian ? f->n_in + f->n_out : f->n_in;
    if (sz_res) *sz_res = jacobian ? f->n_in * f->n_out : f->n_out;
    if (sz_iw) *sz_iw = 0;
    if (sz_w) *sz_w = f->work;
}

/* The symbols of one function, or (JAC) of its Jacobian jac_NAME: a function without
   derivatives has no jac_ symbols, and CasADi then refuses to differentiate it. */
#define RBDGEN_CASADI_SYMBOLS(NAME, F, FRAME, JAC) RBDGEN_CASADI_DESCRIPTION(NAME, F, JAC) RBDGEN_CASADI_CALL(NAME, F, FRAME, JAC)
/* What CasADi asks about the function before it calls it: the same for every frame. */
#define RBDGEN_CASADI_DESCRIPTION(NAME, F, JAC)                                                                    \
    RBDGEN_CASADI_EXPORT rbdgen_casadi_int NAME##_n_in(void)                                                   \
    { return JAC ? (F)->n_in + (F)->n_out : (F)->n_in; }                                                       \
    RBDGEN_CASADI_EXPORT rbdgen_casadi_int NAME##_n_out(void)                                                  \
    { return JAC ? (F)->n_in * (F)->n_out : (F)->n_out; }                                                      \
    RBDGEN_CASADI_EXPORT const char *NAME##_name_in(rbdgen_casadi_int i)                                       \
    { return i < 0 || i >= NAME##_n_in() ? 0 : JAC ? (F)->jac_in_name[i] : (F)->in_name[i]; }                  \
    RBDGEN_CASADI_EXPORT const char *NAME##_name_out(rbdgen_casadi_int i)                                      \
    { return i < 0 || i >= NAME##_n_out() ? 0 : JAC ? (F)->jac_out_name[i] : (F)->out_name[i]; }               \
    RBDGEN_CASADI_EXPORT const rbdgen_casadi_int *NAME##_sparsity_in(rbdgen_casadi_int i)                      \
    {                                                                                                          \
        if (i < 0 || i >= NAME##_n_in()) return 0;                                                             \
        return i < (F)->n_in ? (F)->in_sparsity[i] : (F)->out_sparsity[i - (F)->n_in];                         \
    }                                                                                                          \
    RBDGEN_CASADI_EXPORT const rbdgen_casadi_int *NAME##_sparsity_out(rbdgen_casadi_int i)                     \
    { return i < 0 || i >= NAME##_n_out() ? 0 : JAC ? (F)->jac_sparsity[i] : (F)->out_sparsity[i]; }          \
    RBDGEN_CASADI_EXPORT int NAME##_work(rbdgen_casadi_int *sz_arg, rbdgen_casadi_int *sz_res,                 \
                                         rbdgen_casadi_int *sz_iw, rbdgen_casadi_int *sz_w)                    \
    { rbdgen_casadi_work(F, JAC, sz_arg, sz_res, sz_iw, sz_w); return 0; }
#define RBDGEN_CASADI_CALL(NAME, F, FRAME, JAC)                                                                    \
    RBDGEN_CASADI_EXPORT int NAME(const double **arg, double **res, rbdgen_casadi_int *iw, double *w, int mem)  \
    {                                                                                                          \
        (void)iw; (void)mem;                                                                                   \
        return JAC ? rbdgen_casadi_jacobian(F, FRAME, arg, res, w) : rbdgen_casadi_eval(F, FRAME, arg, res, w); \
    }
/* A function's symbols for the frames after its first: on ELF its description is the first
   frame's, under aliases that cost the compiler nothing (Talos serves 60 frames: 800 symbols
   of frame functions), elsewhere it is written again. */
#if defined(__ELF__) && (defined(__GNUC__) || defined(__clang__))
#define RBDGEN_CASADI_ALIAS(TYPE, NAME, ARGS, TARGET) \
    TYPE NAME ARGS __attribute__((visibility("default"), alias(#TARGET)));
#define RBDGEN_CASADI_DESCRIPTION_AS(NAME, FIRST, F, JAC)                                                           \
    RBDGEN_CASADI_ALIAS(rbdgen_casadi_int, NAME##_n_in, (void), FIRST##_n_in)                                       \
    RBDGEN_CASADI_ALIAS(rbdgen_casadi_int, NAME##_n_out, (void), FIRST##_n_out)                                     \
    RBDGEN_CASADI_ALIAS(const char *, NAME##_name_in, (rbdgen_casadi_int i), FIRST##_name_in)                       \
    RBDGEN_CASADI_ALIAS(const char *, NAME##_name_out, (rbdgen_casadi_int i), FIRST##_name_out)                     \
    RBDGEN_CASADI_ALIAS(const rbdgen_casadi_int *, NAME##_sparsity_in, (rbdgen_casadi_int i), FIRST##_sparsity_in)  \
    RBDGEN_CASADI_ALIAS(const rbdgen_casadi_int *, NAME##_sparsity_out, (rbdgen_casadi_int i), FIRST##_sparsity_out)\
    RBDGEN_CASADI_ALIAS(int, NAME##_work, (rbdgen_casadi_int *sz_arg, rbdgen_casadi_int *sz_res,                    \
                                           rbdgen_casadi_int *sz_iw, rbdgen_casadi_int *sz_w), FIRST##_work)
#else
#define RBDGEN_CASADI_DESCRIPTION_AS(NAME, FIRST, F, JAC) RBDGEN_CASADI_DESCRIPTION(NAME, F, JAC)
#endif

#define RBDGEN_CASADI(NAME, ROW) RBDGEN_CASADI_SYMBOLS(NAME, &casadi_functions[ROW], 0, 0)
#define RBDGEN_CASADI_JACOBIAN(NAME, ROW) RBDGEN_CASADI_SYMBOLS(jac_##NAME, &casadi_functions[ROW], 0, 1)
#define RBDGEN_CASADI_FRAME(NAME, ROW, FRAME) RBDGEN_CASADI_SYMBOLS(NAME, &casadi_functions[ROW], &casadi_frames[FRAME], 0)
#define RBDGEN_CASADI_FRAME_JACOBIAN(NAME, ROW, FRAME) \
    RBDGEN_CASADI_SYMBOLS(jac_##NAME, &casadi_functions[ROW], &casadi_frames[FRAME], 1)
#define RBDGEN_CASADI_FRAME_AS(NAME, FIRST, ROW, FRAME)                           \
    RBDGEN_CASADI_DESCRIPTION_AS(NAME, FIRST, &casadi_functions[ROW], 0)          \
    RBDGEN_CASADI_CALL(NAME, &casadi_functions[ROW], &casadi_frames[FRAME], 0)
#define RBDGEN_CASADI_FRAME_JACOBIAN_AS(NAME, FIRST, ROW, FRAME)                  \
    RBDGEN_CASADI_DESCRIPTION_AS(jac_##NAME, jac_##FIRST, &casadi_functions[ROW], 1) \
    RBDGEN_CASADI_CALL(jac_##NAME, &casadi_functions[ROW], &casadi_frames[FRAME], 1)

#endif
