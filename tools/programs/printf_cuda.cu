// A plain C/CUDA program that reports with printf, as many CUDA daemons do: per iteration it
// prepares its input on the CPU, uploads it from malloc'd (pageable) memory, runs a kernel and
// prints one line with its own CLOCK_REALTIME time, so gpuscope's arrival stamps can be
// checked against when each line was printed:
//
//     iter 3: prep 48.211 ms, h2d 9.870 ms, kernel 20.004 ms, total 78.100 ms (printed_at=1764590000.123456)
//
// stdout is line-buffered on a terminal and fully buffered on a pipe (C stdio): run under a
// pipe, every line arrives at exit. A program for gpuscope to diagnose, not part of gpuscope.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cuda_runtime.h>

static double now_s() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// One pass over x (grid-stride), then spin until `cycles` SM clocks have passed.
__global__ void spin(float *x, size_t n, long long cycles) {
    long long t0 = clock64();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = x[i] * 0.999f + 0.001f;
    while (clock64() - t0 < cycles) {
    }
}

#define CHECK(call) do { cudaError_t e = (call); if (e != cudaSuccess) { \
    fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); return 1; } } while (0)

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 30;
    size_t n = (size_t)64 << 20;  // 64 Mi floats = 256 MiB
    float *host = (float *)malloc(n * sizeof(float));
    float *dev;
    CHECK(cudaMalloc(&dev, n * sizeof(float)));
    cudaEvent_t e0, e1, e2;
    cudaEventCreate(&e0); cudaEventCreate(&e1); cudaEventCreate(&e2);
    // calibrate the spin to ~20 ms on this GPU's clock
    long long cycles = 40000000;
    for (int k = 0; k < 3; k++) {
        float ms = 0;
        CHECK(cudaEventRecord(e0));
        spin<<<132, 256>>>(dev, n, cycles);
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        cudaEventElapsedTime(&ms, e0, e1);
        if (ms > 0) cycles = (long long)(cycles * (20.0 / ms));
    }
    unsigned seed = 1;
    for (int it = 0; it < iters; it++) {
        double t0 = now_s();
        for (size_t i = 0; i < n; i++) { seed = seed * 1664525u + 1013904223u; host[i] = (seed >> 8) * 1e-7f; }
        double t1 = now_s();
        CHECK(cudaEventRecord(e0));
        CHECK(cudaMemcpy(dev, host, n * sizeof(float), cudaMemcpyHostToDevice));
        CHECK(cudaEventRecord(e1));
        spin<<<132, 256>>>(dev, n, cycles);
        CHECK(cudaGetLastError());
        CHECK(cudaEventRecord(e2));
        CHECK(cudaEventSynchronize(e2));
        float h2d = 0, kern = 0;
        cudaEventElapsedTime(&h2d, e0, e1);
        cudaEventElapsedTime(&kern, e1, e2);
        double t2 = now_s();
        printf("iter %d: prep %.3f ms, h2d %.3f ms, kernel %.3f ms, total %.3f ms (printed_at=%.6f)\n",
               it, (t1 - t0) * 1e3, h2d, kern, (t2 - t0) * 1e3, now_s());
    }
    cudaFree(dev);
    free(host);
    return 0;
}
