// Measurement harness for greta's HIP kernels through nvcc, on an
// NVIDIA GPU: includes the same translation unit greta compiles with NVRTC
// (tu.cu: prelude_cuda.h, common.h, matrix_lanes.h, kernels/hip/*.hip,
// assembled by scripts/gpu/hip_variants.sh) and times one kernel family
// under the compile-time knobs given with -D, so one device call can try
// several variants. Not part of greta: greta's own rates come from
// `greta smoke --backend cuda`, which also checks every output against the
// f64 CPU reference; here outputs are spot-checked on sampled elements.
//
// usage: hip_variants FAMILY   (stream | norm | gemm32 | gemm16)
// prints: variant-tag op shape median_us rate unit max_rel_err
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include <cuda_fp16.h>

#include "tu.cu"

#ifndef TAG
#define TAG "default"
#endif
// Streaming grid: most blocks per SM (runtime/src/gpu/launch.rs BLOCKS_PER_CU).
#ifndef BLOCKS_PER_CU
#define BLOCKS_PER_CU 1024
#endif

#define CK(x)                                                                              \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static int g_sms = 132;

template <typename F>
static double time_us(F f, double warm_ms = 300.0, int reps = 20) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    // Warm-up for about warm_ms of GPU time (clocks up).
    CK(cudaEventRecord(a));
    f();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float one = 0;
    CK(cudaEventElapsedTime(&one, a, b));
    int passes = (int)std::min(2000.0, warm_ms / std::max(one, 0.001f));
    for (int i = 0; i < passes; ++i) f();
    std::vector<double> v;
    for (int i = 0; i < reps; ++i) {
        CK(cudaEventRecord(a));
        f();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        v.push_back(ms * 1e3);
    }
    CK(cudaGetLastError());
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static unsigned long long rng_state = 0x9e3779b97f4a7c15ull;
static float frand() {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (float)((rng_state * 0x2545f4914f6cdd1dull) >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

static void report(const char* op, const char* shape, double us, double rate, const char* unit, double err) {
    printf("%-28s %-10s %-12s %10.1f us %9.1f %-7s err=%.2e\n", TAG, op, shape, us, rate, unit, err);
    fflush(stdout);
}

static void stream() {
    const size_t n = (size_t)1 << 28;  // 1 GiB of u32
    uint32_t *x, *y, *z;
    CK(cudaMalloc(&x, n * 4));
    CK(cudaMalloc(&y, n * 4));
    CK(cudaMalloc(&z, n * 4));
    std::vector<uint32_t> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = (uint32_t)(i * 2654435761u);
    CK(cudaMemcpy(x, h.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(z, h.data(), n * 4, cudaMemcpyHostToDevice));
    const unsigned per_block = 256 * GRETA_VEC_UNROLL * 4;
    unsigned blocks = (unsigned)std::min<size_t>((n + per_block - 1) / per_block, (size_t)g_sms * BLOCKS_PER_CU);
    double us = time_us([&] { CK(cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice)); });
    report("memcpy", "1g", us, 2.0 * n * 4 / us / 1e3, "GB/s", 0);
    us = time_us([&] { greta_copy<<<blocks, 256>>>(x, y, (uint32_t)n); });
    std::vector<uint32_t> back(n);
    CK(cudaMemcpy(back.data(), y, n * 4, cudaMemcpyDeviceToHost));
    double err = memcmp(back.data(), h.data(), n * 4) == 0 ? 0 : 1;
    report("copy", "1g", us, 2.0 * n * 4 / us / 1e3, "GB/s", err);
    us = time_us([&] { greta_fill<<<blocks, 256>>>(y, (uint32_t)n, 0x3f9e0419u); });
    CK(cudaMemcpy(back.data(), y, n * 4, cudaMemcpyDeviceToHost));
    err = 0;
    for (size_t i = 0; i < n; i += 4097) err += back[i] != 0x3f9e0419u;
    report("fill", "1g", us, 1.0 * n * 4 / us / 1e3, "GB/s", err);
    us = time_us([&] { greta_vec_add<<<blocks, 256>>>((float*)x, (float*)z, (float*)y, (uint32_t)n); });
    report("vec_add", "256m", us, 3.0 * n * 4 / us / 1e3, "GB/s", 0);
    CK(cudaFree(x));
    CK(cudaFree(y));
    CK(cudaFree(z));
}

static void norm() {
    const uint32_t rows = 4096, cols = 8192;
    const size_t n = (size_t)rows * cols;
    std::vector<float> hx(n), hw(cols), hb(cols);
    for (auto& v : hx) v = frand() * 3.0f;
    for (auto& v : hw) v = frand();
    for (auto& v : hb) v = frand();
    float *x, *w, *b, *y;
    CK(cudaMalloc(&x, n * 4));
    CK(cudaMalloc(&y, n * 4));
    CK(cudaMalloc(&w, cols * 4));
    CK(cudaMalloc(&b, cols * 4));
    CK(cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(w, hw.data(), cols * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b, hb.data(), cols * 4, cudaMemcpyHostToDevice));
    std::vector<float> hy(n);
    const double bytes = 2.0 * n * 4;
    for (int which = 0; which < 3; ++which) {
        double us;
        const char* name;
        if (which == 0) {
            name = "rmsnorm";
            us = time_us([&] { greta_rmsnorm<<<rows, 256>>>(x, w, y, rows, cols, 1e-5f); });
        } else if (which == 1) {
            name = "layernorm";
            us = time_us([&] { greta_layernorm<<<rows, 256>>>(x, w, b, y, rows, cols, 1e-5f); });
        } else {
            name = "softmax";
            us = time_us([&] { greta_softmax<<<rows, 256>>>(x, y, rows, cols); });
        }
        CK(cudaMemcpy(hy.data(), y, n * 4, cudaMemcpyDeviceToHost));
        double err = 0;
        for (uint32_t r = 0; r < rows; r += 257) {
            const float* xr = &hx[(size_t)r * cols];
            double s = 0, mx = -1e300, mean = 0, var = 0;
            for (uint32_t c = 0; c < cols; ++c) {
                s += (double)xr[c] * xr[c];
                mx = std::max(mx, (double)xr[c]);
                mean += xr[c];
            }
            mean /= cols;
            for (uint32_t c = 0; c < cols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
            var /= cols;
            double se = 0;
            for (uint32_t c = 0; c < cols; ++c) se += std::exp(xr[c] - mx);
            for (uint32_t c = 0; c < cols; ++c) {
                double want = which == 0   ? xr[c] / std::sqrt(s / cols + 1e-5) * hw[c]
                              : which == 1 ? (xr[c] - mean) / std::sqrt(var + 1e-5) * hw[c] + hb[c]
                                           : std::exp(xr[c] - mx) / se;
                double got = hy[(size_t)r * cols + c];
                err = std::max(err, std::fabs(got - want) / std::max(1e-6, std::fabs(want)));
            }
        }
        report(name, "4096x8192", us, bytes / us / 1e3, "GB/s", err);
    }
    CK(cudaFree(x));
    CK(cudaFree(y));
    CK(cudaFree(w));
    CK(cudaFree(b));
}

template <bool HALF>
static void gemm(uint32_t s) {
    const size_t n = (size_t)s * s;
    std::vector<float> ha(n), hb(n);
    for (auto& v : ha) v = frand();
    for (auto& v : hb) v = frand();
    void *a, *b;
    float* c;
    const size_t es = HALF ? 2 : 4;
    CK(cudaMalloc(&a, n * es));
    CK(cudaMalloc(&b, n * es));
    CK(cudaMalloc(&c, n * 4));
    if (HALF) {
        std::vector<__half> ta(n), tb(n);
        for (size_t i = 0; i < n; ++i) {
            ta[i] = __float2half(ha[i]);
            tb[i] = __float2half(hb[i]);
            ha[i] = __half2float(ta[i]);
            hb[i] = __half2float(tb[i]);
        }
        CK(cudaMemcpy(a, ta.data(), n * 2, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(b, tb.data(), n * 2, cudaMemcpyHostToDevice));
    } else {
        CK(cudaMemcpy(a, ha.data(), n * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(b, hb.data(), n * 4, cudaMemcpyHostToDevice));
    }
    double us;
    if (HALF) {
        dim3 grid((s + GRETA_F16_BN - 1) / GRETA_F16_BN, (s + GRETA_F16_BM - 1) / GRETA_F16_BM);
        us = time_us([&] { greta_gemm_f16<<<grid, GRETA_F16_THREADS>>>((const greta_f16*)a, (const greta_f16*)b, c, s, s, s); },
                     500.0, 10);
    } else {
        dim3 grid((s + 127) / 128, (s + 127) / 128);
        us = time_us([&] { greta_gemm_f32<<<grid, 256>>>((const float*)a, (const float*)b, c, s, s, s); }, 500.0, 10);
    }
    std::vector<float> hc(n);
    CK(cudaMemcpy(hc.data(), c, n * 4, cudaMemcpyDeviceToHost));
    double err = 0, scale = 0;
    for (int t = 0; t < 64; ++t) {
        const uint32_t i = (uint32_t)((frand() * 0.5f + 0.5f) * (s - 1)), j = (uint32_t)((frand() * 0.5f + 0.5f) * (s - 1));
        double want = 0;
        for (uint32_t p = 0; p < s; ++p) want += (double)ha[(size_t)i * s + p] * hb[(size_t)p * s + j];
        err = std::max(err, std::fabs(hc[(size_t)i * s + j] - want));
        scale = std::max(scale, std::fabs(want));
    }
    char shape[32];
    snprintf(shape, sizeof shape, "%u", s);
    report(HALF ? "gemm_f16" : "gemm_f32", shape, us, 2.0 * s * s * s / us / 1e6, "TFLOP/s", err / scale);
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(c));
}

int main(int argc, char** argv) {
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    g_sms = p.multiProcessorCount;
    const char* fam = argc > 1 ? argv[1] : "stream";
    if (!strcmp(fam, "stream")) stream();
    if (!strcmp(fam, "norm")) norm();
    if (!strcmp(fam, "gemm32")) {
        gemm<false>(4096);
        gemm<false>(8192);
    }
    if (!strcmp(fam, "gemm16")) {
        gemm<true>(4096);
        gemm<true>(8192);
    }
    return 0;
}
