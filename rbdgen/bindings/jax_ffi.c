/* The XLA FFI handler through which JAX calls a generated module's C (robot.jax): fixed code,
   the same for every robot, compiled against jaxlib's XLA FFI C API on a module's first
   robot.jax() call (the module's _jax_ffi.py).

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

/* Whether a call asks no work: XLA first asks which version of the API the handler was compiled
   against (answered here; traits 0: not in CUDA graphs, as the GPU's launch goes through the
   driver), then calls each stage; only the execution's does any. */
static int no_work(XLA_FFI_CallFrame *frame)
{
    XLA_FFI_Extension_Base *extension = frame->extension_start;
    if (extension != NULL && extension->type == XLA_FFI_Extension_Metadata) {
        XLA_FFI_Metadata *metadata = ((XLA_FFI_Metadata_Extension *)extension)->metadata;
        metadata->api_version.major_version = XLA_FFI_API_MAJOR;
        metadata->api_version.minor_version = XLA_FFI_API_MINOR;
        metadata->traits = 0;
        return 1;
    }
    return frame->stage != XLA_FFI_ExecutionStage_EXECUTE;
}

/* Whether buffer x is float64 with the leading dimensions of `result` (the states) */
static int with_states_of(const XLA_FFI_Buffer *x, const XLA_FFI_Buffer *result)
{
    if (x->dtype != XLA_FFI_DataType_F64 || x->rank != result->rank)
        return 0;
    for (int64_t d = 0; d + 1 < x->rank; ++d)
        if (x->dims[d] != result->dims[d])
            return 0;
    return 1;
}

XLA_FFI_Error *rbdgen_jax_call(XLA_FFI_CallFrame *frame)
{
    if (no_work(frame))
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
        return failure(api, "rbdgen: a call of the JAX handler that rbdgen's _jax.py did not make");

    const XLA_FFI_Buffer *first = (const XLA_FFI_Buffer *)frame->rets.rets[0];
    double *part[MAX_PARTS];
    long part_size[MAX_PARTS], out_size = 0;
    for (int p = 0; p < nparts; ++p) {
        const XLA_FFI_Buffer *r = (const XLA_FFI_Buffer *)frame->rets.rets[p];
        if (r->rank < 1 || !with_states_of(r, first))
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
        if (!with_states_of(x, result))
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


/* The handler for the CUDA platform (robot.jax on a GPU: the module's _jax_ffi.py): one launch
   of the function's batch kernel (the module's CUDA dialect) on XLA's stream, on device buffers,
   with no copy through the host. Its attributes:
     kernels   the address of a table of the kernel loaded on each device (rbdgen_cuda_kernel_t,
               indexed by XLA's device ordinal), or 0 when there are none: then `reason`, the
               address of the message that says why, is the error;
     devices   the table's length;
     launch, context_of, push, pop: the addresses of the driver's cuLaunchKernel,
               cuStreamGetCtx, cuCtxPushCurrent and cuCtxPopCurrent (so this file needs no CUDA
               header or library): the stream's context is made current around the launch;
     per_body, body: a frame function's kernel takes the body after n;
     flagged   a bit per input that is not a state: the kernel takes an int after it, 0 here
               (JAX gives every state its own row);
     stream    -1: XLA's (tests on the CPU name one, with no context calls).
   The result is the function's whole output, (..., size); the Python side slices its parts. */

typedef struct {
    void *function;   /* CUfunction */
    long block;       /* threads a block */
} rbdgen_cuda_kernel_t;

typedef int (*launch_t)(void *function, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                        unsigned block_y, unsigned block_z, unsigned shared_bytes, void *stream, void **arguments,
                        void **extra);
typedef int (*context_of_t)(void *stream, void **context);
typedef int (*push_t)(void *context);
typedef int (*pop_t)(void **context);

/* `message` (of `size` bytes) holds `a` then `b`, cut to fit */
static const char *joined(char *message, size_t size, const char *a, const char *b)
{
    message[0] = '\0';
    strncat(message, a, size - 1);
    strncat(message, b, size - 1 - strlen(message));
    return message;
}

static XLA_FFI_Error *pass_on(const XLA_FFI_Api *api, XLA_FFI_Error *error, const char *what)
{
    char message[256], head[96];
    XLA_FFI_Error_GetMessage_Args text;
    memset(&text, 0, sizeof text);
    text.struct_size = XLA_FFI_Error_GetMessage_Args_STRUCT_SIZE;
    text.error = error;
    api->XLA_FFI_Error_GetMessage(&text);
    joined(message, sizeof message, joined(head, sizeof head, "rbdgen: ", what), ": ");
    strncat(message, text.message ? text.message : "failed", sizeof message - 1 - strlen(message));
    XLA_FFI_Error_Destroy_Args destroy;
    memset(&destroy, 0, sizeof destroy);
    destroy.struct_size = XLA_FFI_Error_Destroy_Args_STRUCT_SIZE;
    destroy.error = error;
    api->XLA_FFI_Error_Destroy(&destroy);
    return failure(api, message);
}

XLA_FFI_Error *rbdgen_jax_cuda_call(XLA_FFI_CallFrame *frame)
{
    if (no_work(frame))
        return NULL;
    const XLA_FFI_Api *api = frame->api;
    const rbdgen_cuda_kernel_t *kernels = (const rbdgen_cuda_kernel_t *)(uintptr_t)attribute(&frame->attrs, "kernels", 0);
    int64_t devices = attribute(&frame->attrs, "devices", 0);
    launch_t launch = (launch_t)(uintptr_t)attribute(&frame->attrs, "launch", 0);
    int per_body = (int)attribute(&frame->attrs, "per_body", 0);
    long body = (long)attribute(&frame->attrs, "body", -1);
    int64_t flagged = attribute(&frame->attrs, "flagged", 0);
    int64_t stream_given = attribute(&frame->attrs, "stream", -1);
    const char *reason = (const char *)(uintptr_t)attribute(&frame->attrs, "reason", 0);
    context_of_t context_of = (context_of_t)(uintptr_t)attribute(&frame->attrs, "context_of", 0);
    push_t push = (push_t)(uintptr_t)attribute(&frame->attrs, "push", 0);
    pop_t pop = (pop_t)(uintptr_t)attribute(&frame->attrs, "pop", 0);
    int ninputs = (int)frame->args.size;
    if (kernels == NULL)
        return failure(api, reason != NULL ? reason : "rbdgen: this module has no CUDA kernels here");
    if (launch == NULL || ninputs < 1 || ninputs > MAX_INPUTS || frame->rets.size != 1)
        return failure(api, "rbdgen: a call of the JAX handler that rbdgen's _jax_ffi.py did not make");

    XLA_FFI_DeviceOrdinal_Get_Args ordinal;
    memset(&ordinal, 0, sizeof ordinal);
    ordinal.struct_size = XLA_FFI_DeviceOrdinal_Get_Args_STRUCT_SIZE;
    ordinal.ctx = frame->ctx;
    XLA_FFI_Error *error = api->XLA_FFI_DeviceOrdinal_Get(&ordinal);
    if (error != NULL)
        return pass_on(api, error, "the device of a JAX call");
    if (ordinal.device_ordinal < 0 || ordinal.device_ordinal >= devices)
        return failure(api, "rbdgen: a JAX call on a GPU whose kernels were not loaded (a device made visible "
                            "after the function was made?)");
    void *stream = (void *)(intptr_t)stream_given;
    if (stream_given == -1) {
        XLA_FFI_Stream_Get_Args args;
        memset(&args, 0, sizeof args);
        args.struct_size = XLA_FFI_Stream_Get_Args_STRUCT_SIZE;
        args.ctx = frame->ctx;
        if ((error = api->XLA_FFI_Stream_Get(&args)) != NULL)
            return pass_on(api, error, "XLA's stream");
        stream = args.stream;
    }

    const XLA_FFI_Buffer *result = (const XLA_FFI_Buffer *)frame->rets.rets[0];
    if (result->dtype != XLA_FFI_DataType_F64 || result->rank < 1)
        return failure(api, "rbdgen: the result must be float64 (..., size)");
    long n = 1;
    for (int64_t d = 0; d + 1 < result->rank; ++d)
        n *= (long)result->dims[d];
    void *pointer[MAX_INPUTS + 1];
    int own_rows[MAX_INPUTS] = { 0 };   /* <name>_shared = 0: every state its own row */
    void *arguments[2 + 2 * MAX_INPUTS + 1];
    int count = 0;
    arguments[count++] = &n;
    if (per_body)
        arguments[count++] = &body;
    for (int i = 0; i < ninputs; ++i) {
        const XLA_FFI_Buffer *x = (const XLA_FFI_Buffer *)frame->args.args[i];
        if (!with_states_of(x, result))
            return failure(api, "rbdgen: every input must be float64 with the result's leading dimensions");
        pointer[i] = x->data;
        arguments[count++] = &pointer[i];
        if (flagged >> i & 1)
            arguments[count++] = &own_rows[i];
    }
    pointer[ninputs] = result->data;
    arguments[count++] = &pointer[ninputs];
    if (n == 0)
        return NULL;
    const rbdgen_cuda_kernel_t *kernel = &kernels[ordinal.device_ordinal];
    if (kernel->function == NULL || kernel->block <= 0)
        return failure(api, "rbdgen: a JAX call on a GPU whose kernels were not loaded");
    long grid = (n + kernel->block - 1) / kernel->block;
    void *context = NULL;
    int pushed = stream_given == -1 && context_of != NULL && push != NULL && pop != NULL
                 && context_of(stream, &context) == 0 && push(context) == 0;
    int code = launch(kernel->function, (unsigned)grid, 1, 1, (unsigned)kernel->block, 1, 1, 0, stream, arguments, NULL);
    if (pushed)
        pop(&context);
    if (code != 0) {   /* the driver's code, in decimal */
        char message[96], digits[12];
        int k = (int)sizeof digits - 1;
        digits[k] = '\0';
        for (unsigned value = (unsigned)code; k > 0 && (value != 0 || k == (int)sizeof digits - 1); value /= 10)
            digits[--k] = (char)('0' + value % 10);
        joined(message, sizeof message, "rbdgen: launching a kernel failed: CUDA error ", digits + k);
        return failure(api, message);
    }
    return NULL;
}
