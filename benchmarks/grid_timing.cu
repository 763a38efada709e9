/* GRiD's kernels timed on this GPU, for benchmarks/bench_gpu.py --peers (issue 47): GRiD's own
   generated header (grid.cuh, from GRiD's generator on a URDF: benchmarks/gpu_check.sh prepare)
   included as it is, its kernels launched as its compute-only entry points launch them (one
   block of SUGGESTED_THREADS a state, its dynamic shared memory) but without their
   cudaDeviceSynchronize, so that CUDA events time the kernel and not a host round trip.

       nvcc -std=c++17 -O3 -arch=sm_90 -DGRID_REAL=float -I DIR_OF_GRID_CUH benchmarks/grid_timing.cu -o grid_float
       ./grid_float 1024,16384,131072,1048576 REPEATS [CHECK_FILE]

   One type a build (GRiD's kernels declare their dynamic shared memory per type under one name,
   so float and double cannot share a translation unit). Prints "GRiD <function> <type> <states>
   <ns a state>" (median of REPEATS); with CHECK_FILE, writes four states' inputs and outputs
   first, for bench_gpu.py to hold against the module built from the same URDF. */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "grid.cuh"

#ifndef GRID_REAL
#define GRID_REAL float
#endif
#define NAME_OF(x) #x
#define NAME(x) NAME_OF(x)

using grid::NUM_JOINTS;
using Real = GRID_REAL;

template <typename T>
static void fill(grid::gridData<T> *data, int states, unsigned seed)
{
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    for (long k = 0; k < 3L * NUM_JOINTS * states; ++k)
        data->h_q_qd_u[k] = static_cast<T>(uniform(rng));
    std::vector<T> qdd(static_cast<size_t>(NUM_JOINTS) * states);
    for (auto &x : qdd)
        x = static_cast<T>(uniform(rng));
    gpuErrchk(cudaMemcpy(data->d_q_qd_u, data->h_q_qd_u, 3L * NUM_JOINTS * states * sizeof(T), cudaMemcpyHostToDevice));
    gpuErrchk(cudaMemcpy(data->d_qdd, qdd.data(), qdd.size() * sizeof(T), cudaMemcpyHostToDevice));
}

/* ns a state of run(), the median of `repeats` timed calls after one untimed */
template <typename Run>
static double median_ns(Run run, int states, int repeats)
{
    run();
    gpuErrchk(cudaGetLastError());
    gpuErrchk(cudaDeviceSynchronize());
    std::vector<double> times;
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    for (int r = 0; r < repeats; ++r) {
        cudaEventRecord(start);
        run();
        cudaEventRecord(stop);
        cudaEventSynchronize(stop);
        float ms = 0;
        cudaEventElapsedTime(&ms, start, stop);
        times.push_back(1e6 * ms / states);
    }
    gpuErrchk(cudaGetLastError());
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

template <typename T>
static void time_all(const std::vector<int> &sizes, int repeats)
{
    grid::robotModel<T> *model = grid::init_robotModel<T>();
    cudaStream_t *streams = grid::init_grid<T>();
    const T gravity = static_cast<T>(9.81);
    dim3 threads(grid::SUGGESTED_THREADS, 1, 1);
    for (int states : sizes) {
        grid::gridData<T> *data = grid::init_gridData<T>(states);
        fill(data, states, 47u);
        dim3 blocks(states, 1, 1);
        const int stride = 3 * NUM_JOINTS;   /* q, qd, u of a state, one after another */
        const size_t real = sizeof(T);
        struct { const char *name; double ns; } rows[] = {
            {"ID", median_ns([&] { grid::inverse_dynamics_kernel<T><<<blocks, threads, grid::ID_DYNAMIC_SHARED_MEM_COUNT * real>>>(
                data->d_c, data->d_q_qd_u, stride, data->d_qdd, model, gravity, states); }, states, repeats)},
            {"Minv", median_ns([&] { grid::direct_minv_kernel<T><<<blocks, threads, grid::MINV_DYNAMIC_SHARED_MEM_COUNT * real>>>(
                data->d_Minv, data->d_q_qd_u, stride, model, states); }, states, repeats)},
            {"FD", median_ns([&] { grid::forward_dynamics_kernel<T><<<blocks, threads, grid::FD_DYNAMIC_SHARED_MEM_COUNT * real>>>(
                data->d_qdd, data->d_q_qd_u, stride, model, gravity, states); }, states, repeats)},
            {"dID", median_ns([&] { grid::inverse_dynamics_gradient_kernel<T><<<blocks, threads, grid::ID_DU_DYNAMIC_SHARED_MEM_COUNT * real>>>(
                data->d_dc_du, data->d_q_qd_u, stride, data->d_qdd, model, gravity, states); }, states, repeats)},
            {"dFD", median_ns([&] { grid::forward_dynamics_gradient_kernel<T><<<blocks, threads, grid::FD_DU_DYNAMIC_SHARED_MEM_COUNT * real>>>(
                data->d_df_du, data->d_q_qd_u, stride, model, gravity, states); }, states, repeats)},
        };
        for (auto &row : rows)
            printf("GRiD %s %s %d %.4f\n", row.name, NAME(GRID_REAL), states, row.ns);
        fflush(stdout);
        grid::close_grid<T>(streams, model, data);   /* frees the model and streams too: made again */
        model = grid::init_robotModel<T>();
        streams = grid::init_grid<T>();
    }
}

static void write_rows(FILE *f, const char *name, const Real *x, long count)
{
    fprintf(f, "%s", name);
    for (long k = 0; k < count; ++k)
        fprintf(f, " %.17g", x[k]);
    fprintf(f, "\n");
}

/* Four states: inputs (q, qd, u; qdd given to ID and dID) and every output, one line each */
static void check(const char *path)
{
    const int states = 4, n = NUM_JOINTS;
    grid::robotModel<Real> *model = grid::init_robotModel<Real>();
    cudaStream_t *streams = grid::init_grid<Real>();
    grid::gridData<Real> *data = grid::init_gridData<Real>(states);
    fill(data, states, 7u);
    std::vector<Real> qdd(n * states), c(n * states), minv(n * n * states), fd(n * states),
        dc(2 * n * n * states), df(2 * n * n * states);
    auto read = [](std::vector<Real> &to, const Real *from) {
        gpuErrchk(cudaMemcpy(to.data(), from, to.size() * sizeof(Real), cudaMemcpyDeviceToHost));
    };
    const Real gravity = static_cast<Real>(9.81);
    read(qdd, data->d_qdd);
    dim3 blocks(states, 1, 1), threads(grid::SUGGESTED_THREADS, 1, 1);
    grid::inverse_dynamics_compute_only<Real, true, false>(data, model, gravity, states, blocks, threads);
    read(c, data->d_c);
    grid::inverse_dynamics_gradient_compute_only<Real, true, false>(data, model, gravity, states, blocks, threads);
    read(dc, data->d_dc_du);
    grid::direct_minv_compute_only<Real, false>(data, model, states, blocks, threads);
    read(minv, data->d_Minv);
    grid::forward_dynamics_compute_only<Real>(data, model, gravity, states, blocks, threads);
    read(fd, data->d_qdd);
    grid::forward_dynamics_gradient_compute_only<Real, false>(data, model, gravity, states, blocks, threads);
    read(df, data->d_df_du);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        exit(1);
    }
    fprintf(f, "joints %d\nstates %d\n", n, states);
    write_rows(f, "q_qd_u", data->h_q_qd_u, 3L * n * states);
    write_rows(f, "qdd", qdd.data(), (long)qdd.size());
    write_rows(f, "ID", c.data(), (long)c.size());
    write_rows(f, "dID", dc.data(), (long)dc.size());
    write_rows(f, "Minv", minv.data(), (long)minv.size());
    write_rows(f, "FD", fd.data(), (long)fd.size());
    write_rows(f, "dFD", df.data(), (long)df.size());
    fclose(f);
    grid::close_grid<Real>(streams, model, data);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s SIZES REPEATS [CHECK_FILE]\n", argv[0]);
        return 2;
    }
    std::vector<int> sizes;
    for (char *s = strtok(argv[1], ","); s != NULL; s = strtok(NULL, ","))
        sizes.push_back(atoi(s));
    int repeats = atoi(argv[2]);
    if (sizes.empty() || repeats < 1) {
        fprintf(stderr, "%s: give sizes and at least one repeat\n", argv[0]);
        return 2;
    }
    if (argc > 3)
        check(argv[3]);
    time_all<Real>(sizes, repeats);
    return 0;
}
