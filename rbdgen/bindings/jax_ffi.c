/* The XLA FFI handler through which JAX calls a generated module's C (robot.jax): fixed code,
   the same for every robot, compiled against jaxlib's XLA FFI C API on a module's first
   robot.jax() call (rbdgen/bindings/jax.py).

   One handler serves every function. Its attributes say which: `kernel` and `batch`, the
   addresses of the function's uniform entry and of its batch form (<fn>_eval, <fn>_eval_batch
   in the module's extension, loaded in the same process: one type for every function), `body`
   (a frame function's body, passed to every function), `shared` (a bit per input
   that a batch entry point takes once for the whole batch: a placement, dt, damping) and
   `threads` (as the module's functions take them). The Python side passes every input as
   (..., size) and the results as (..., size) with the same leading dimensions (a batch of its
   own, and what jax.vmap adds), so one call of the batch entry point does them all. The
   results are the parts of the function's output in order: one is written in place, several
   are copied out of a scratch array (XLA gives each its own buffer). A shared input that
   differs between states (a vmap over dt) is run state by state. */
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "xla/ffi/api/c_api.h"

#define MAX_INPUTS 8
#define MAX_PARTS 16

/* rbdgen_function_t's eval and eval_batch (the module's header) */
typedef void (*eval_t)(const double *const *in, double *const *out, long body);
typedef void (*eval_batch_t)(long n, int threads, const double *const *in, double *const *out, long body);

static XLA_FFI_Error *failure(const XLA_FFI_Api *api, const char *message)
{
    XLA_FFI_Error_Create_Args args;
    memset(&args, 0, sizeof args);
    args.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
    args.message = message;
    args.errc = XLA_FFI_Error_Code_INVALID_ARGUMENT;
    return api->XLA_FFI_Error_Create(&args);
}

/* The int64 attribute `name`, or `fallback` when the call has none. */
static int64_t attribute(const XLA_FFI_Attrs *attrs, const char *name, int64_t fallback)
{
    size_t length = strlen(name);
    for (int64_t i = 0; i < attrs->size; ++i) {
        const XLA_FFI_ByteSpan *key = attrs->names[i];
        if (attrs->types[i] != XLA_FFI_AttrType_SCALAR || key->len != length || memcmp(key->ptr, name, length))
            continue;
        const XLA_FFI_Scalar *scalar = (const XLA_FFI_Scalar *)attrs->attrs[i];
        if (scalar->dtype == XLA_FFI_DataType_S64)
            return *(const int64_t *)scalar->value;
        if (scalar->dtype == XLA_FFI_DataType_S32)
            return *(const int32_t *)scalar->value;
    }
    return fallback;
}

XLA_FFI_Error *rbdgen_jax_call(XLA_FFI_CallFrame *frame)
{
    /* XLA first asks which version of the API the handler was compiled against */
    XLA_FFI_Extension_Base *extension = frame->extension_start;
    if (extension != NULL && extension->type == XLA_FFI_Extension_Metadata) {
        XLA_FFI_Metadata *metadata = ((XLA_FFI_Metadata_Extension *)extension)->metadata;
        metadata->api_version.major_version = XLA_FFI_API_MAJOR;
        metadata->api_version.minor_version = XLA_FFI_API_MINOR;
        metadata->traits = 0;
        return NULL;
    }
    if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE)
        return NULL;
    const XLA_FFI_Api *api = frame->api;
    eval_t kernel = (eval_t)(uintptr_t)attribute(&frame->attrs, "kernel", 0);
    eval_batch_t batch = (eval_batch_t)(uintptr_t)attribute(&frame->attrs, "batch", 0);
    long body = (long)attribute(&frame->attrs, "body", -1);
    int64_t shared = attribute(&frame->attrs, "shared", 0);
    int threads = (int)attribute(&frame->attrs, "threads", 0);
    int ninputs = (int)frame->args.size;
    int nparts = (int)frame->rets.size;
    if (kernel == NULL || batch == NULL || ninputs < 1 || ninputs > MAX_INPUTS
            || nparts < 1 || nparts > MAX_PARTS)
        return failure(api, "rbdgen: a call of the JAX handler that rbdgen's jax.py did not make");

    const XLA_FFI_Buffer *first = (const XLA_FFI_Buffer *)frame->rets.rets[0];
    double *part[MAX_PARTS];
    long part_size[MAX_PARTS], out_size = 0;
    for (int p = 0; p < nparts; ++p) {
        const XLA_FFI_Buffer *r = (const XLA_FFI_Buffer *)frame->rets.rets[p];
        if (r->dtype != XLA_FFI_DataType_F64 || r->rank != first->rank || r->rank < 1)
            return failure(api, "rbdgen: every result must be float64 (..., size) with the same leading dimensions");
        for (int64_t d = 0; d + 1 < r->rank; ++d)
            if (r->dims[d] != first->dims[d])
                return failure(api, "rbdgen: every result must be float64 (..., size) with the same leading dimensions");
        part[p] = (double *)r->data;
        part_size[p] = (long)r->dims[r->rank - 1];
        out_size += part_size[p];
    }
    const XLA_FFI_Buffer *result = first;
    long n = 1;
    for (int64_t d = 0; d + 1 < result->rank; ++d)
        n *= (long)result->dims[d];
    const double *in[MAX_INPUTS];
    long size[MAX_INPUTS];
    for (int i = 0; i < ninputs; ++i) {
        const XLA_FFI_Buffer *x = (const XLA_FFI_Buffer *)frame->args.args[i];
        if (x->dtype != XLA_FFI_DataType_F64 || x->rank != result->rank)
            return failure(api, "rbdgen: every input must be float64 with the result's leading dimensions");
        for (int64_t d = 0; d + 1 < x->rank; ++d)
            if (x->dims[d] != result->dims[d])
                return failure(api, "rbdgen: every input must be float64 with the result's leading dimensions");
        in[i] = (const double *)x->data;
        size[i] = (long)x->dims[x->rank - 1];
    }
    if (n == 0)
        return NULL;

    /* one call for the whole batch, unless a shared input differs between its states */
    int uniform = 1;
    for (int i = 0; i < ninputs && uniform; ++i)
        if (shared >> i & 1)
            for (long k = 1; k < n && uniform; ++k)
                uniform = memcmp(in[i], in[i] + k * size[i], (size_t)size[i] * sizeof(double)) == 0;
    double *out = part[0];
    if (nparts > 1 && (out = malloc((size_t)n * (size_t)out_size * sizeof(double))) == NULL)
        return failure(api, "rbdgen: out of memory for the results");
    if (n == 1)   /* one state: no OpenMP region to enter */
        kernel(in, &out, body);
    else if (uniform)
        batch(n, threads, in, &out, body);
    else
        for (long k = 0; k < n; ++k) {
            const double *state[MAX_INPUTS];
            double *at = out + k * out_size;
            for (int i = 0; i < ninputs; ++i)
                state[i] = in[i] + k * size[i];
            kernel(state, &at, body);
        }
    if (nparts > 1) {
        for (long k = 0; k < n; ++k)
            for (int p = 0, start = 0; p < nparts; start += (int)part_size[p], ++p)
                memcpy(part[p] + k * part_size[p], out + k * out_size + start, (size_t)part_size[p] * sizeof(double));
        free(out);
    }
    return NULL;
}
