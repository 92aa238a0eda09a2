// The CUDA C++ peers of examples/saxpy.rs, for docs/benchmarks.md: a grid-stride saxpy with 16-byte
// accesses, the same loop doing 64 dependent FMAs per element ("fma64"), and a plain copy y = x
// (a grid-stride float4 kernel next to cudaMemcpy device-to-device). Built on the GPU machine with
// `nvcc -O3 -arch=sm_90` and run next to the Rust examples (scripts/h200-peers.sh).
// Random inputs (fixed seeds), every element checked (against fmaf: nvcc contracts a*x+y into one
// FMA, and fma64 calls fmaf itself), 3 warm-ups, median of 20 launches timed with events, and a
// device-to-device cudaMemcpy of as many bytes timed the same way.
//
//   saxpy_peer [elements, default 2^28] [copy elements, default 2^30]
#include <cmath>
#include "peer_common.cuh"

__global__ void saxpy_grid_stride(float a, const float4* __restrict__ x, float4* __restrict__ y, size_t n4) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
    float4 xv = x[i], yv = y[i];
    yv.x = a * xv.x + yv.x;
    yv.y = a * xv.y + yv.y;
    yv.z = a * xv.z + yv.z;
    yv.w = a * xv.w + yv.w;
    y[i] = yv;
  }
}

// Per element: t = x; 64 times t = fma(a, t, y); the result is t. Four independent chains.
__device__ __forceinline__ float4 fma64_chains(float a, float4 xv, float4 yv) {
  float4 t = xv;
#pragma unroll
  for (int k = 0; k < 64; ++k) {
    t.x = fmaf(a, t.x, yv.x);
    t.y = fmaf(a, t.y, yv.y);
    t.z = fmaf(a, t.z, yv.z);
    t.w = fmaf(a, t.w, yv.w);
  }
  return t;
}

// y = fma64(x, y) in place, grid-stride, one float4 per thread and step.
__global__ void fma64_grid_stride(float a, const float4* __restrict__ x, float4* __restrict__ y, size_t n4) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
    y[i] = fma64_chains(a, x[i], y[i]);
  }
}

// z = fma64(x, y) out of place: the peer of the generated kernels that stream y through a ring
// and write another buffer (same bytes: read x and y, write z).
__global__ void fma64_grid_stride_to(float a, const float4* __restrict__ x, const float4* __restrict__ y,
                                     float4* __restrict__ z, size_t n4) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
    z[i] = fma64_chains(a, x[i], y[i]);
  }
}

// y = x, grid-stride, U independent 16-byte loads in flight per thread before the stores.
template <int U>
__global__ void copy_grid_stride(const float4* __restrict__ x, float4* __restrict__ y, size_t n4) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  for (; i + (U - 1) * stride < n4; i += U * stride) {
    float4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = x[i + u * stride];
#pragma unroll
    for (int u = 0; u < U; ++u) y[i + u * stride] = v[u];
  }
  for (; i < n4; i += stride) y[i] = x[i];
}

// The host reference for fma64: the same 64 fmaf calls. With the FMA instruction where the host
// has it (one rounding, as fmaf), else glibc's fmaf; either is the correctly rounded fma.
__attribute__((target("fma"))) static void fma64_ref_hw(float a, const float* x, const float* y, float* r, size_t lo, size_t hi) {
  for (size_t i = lo; i < hi; ++i) {
    float t = x[i];
    for (int k = 0; k < 64; ++k) t = __builtin_fmaf(a, t, y[i]);
    r[i] = t;
  }
}
static void fma64_ref_sw(float a, const float* x, const float* y, float* r, size_t lo, size_t hi) {
  for (size_t i = lo; i < hi; ++i) {
    float t = x[i];
    for (int k = 0; k < 64; ++k) t = std::fmaf(a, t, y[i]);
    r[i] = t;
  }
}

int main(int argc, char** argv) {
  size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (size_t(1) << 28);
  size_t ncopy = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : (size_t(1) << 30);
  n &= ~size_t(3);
  ncopy &= ~size_t(3);
  const float a = 1.5f;
  const int sms = sm_count();
  size_t failures = 0;

  // ---- saxpy: y = a*x + y, 12 bytes per element.
  std::vector<float> hx(n), hy(n);
  random_fill(hx, 42);
  random_fill(hy, 43);
  float *x, *y, *copy_src, *copy_dst;
  CHECK(cudaMalloc(&x, n * 4));
  CHECK(cudaMalloc(&y, n * 4));
  // The copy moves 6n bytes each way: 12 bytes per saxpy element, as saxpy does.
  CHECK(cudaMalloc(&copy_src, n * 6));
  CHECK(cudaMalloc(&copy_dst, n * 6));
  CHECK(cudaMemset(copy_src, 1, n * 6));
  CHECK(cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(y, hy.data(), n * 4, cudaMemcpyHostToDevice));
  const int threads = 256, blocks = sms * 8;
  // Check once, on the original y.
  saxpy_grid_stride<<<blocks, threads>>>(a, (const float4*)x, (float4*)y, n / 4);
  CHECK(cudaGetLastError());
  std::vector<float> out(n);
  CHECK(cudaMemcpy(out.data(), y, n * 4, cudaMemcpyDeviceToHost));
  size_t bad = count_parallel(n, [&](size_t i) { return !same_bits(out[i], std::fmaf(a, hx[i], hy[i])); });
  failures += bad;
  float kernel = median_ms([&] { saxpy_grid_stride<<<blocks, threads>>>(0.5f, (const float4*)x, (float4*)y, n / 4); });
  float copy = median_ms([&] { CHECK(cudaMemcpy(copy_dst, copy_src, n * 6, cudaMemcpyDeviceToDevice)); });
  // saxpy moves 12 bytes per element (reads x and y, writes y); the copy moves 6n + 6n.
  double kgbs = gb_per_s(12.0 * n, kernel), cgbs = gb_per_s(12.0 * n, copy);
  std::printf("peer: CUDA C++ grid-stride saxpy (%d blocks x %d threads), %zu elements, %zu mismatches\n", blocks, threads, n, bad);
  std::printf("bandwidth: peer saxpy %.0f GB/s (%.3f ms), device copy %.0f GB/s (%.3f ms), ratio %.2f\n", kgbs, kernel, cgbs, copy, kgbs / cgbs);

  // ---- fma64: per element 64 dependent FMAs on (x, y), y written once: 12 bytes and 128 flops.
  {
    CHECK(cudaMemcpy(y, hy.data(), n * 4, cudaMemcpyHostToDevice));
    fma64_grid_stride<<<blocks, threads>>>(a, (const float4*)x, (float4*)y, n / 4);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(out.data(), y, n * 4, cudaMemcpyDeviceToHost));
    std::vector<float> ref(n);
    const bool hw = __builtin_cpu_supports("fma");
    parallel_for(n, [&](size_t lo, size_t hi) {
      if (hw) fma64_ref_hw(a, hx.data(), hy.data(), ref.data(), lo, hi);
      else fma64_ref_sw(a, hx.data(), hy.data(), ref.data(), lo, hi);
    });
    size_t fbad = count_parallel(n, [&](size_t i) { return !same_bits(out[i], ref[i]); });
    failures += fbad;
    std::printf("fma64 peer: CUDA C++ grid-stride 64 dependent FMAs per element (float4), %zu elements, %zu mismatches against 64 host fmaf (%s)\n",
                n, fbad, hw ? "FMA instruction" : "libm fmaf");
    // Timed in place with a = -0.5: y shrinks by 2/3 each launch and stays finite and normal.
    const int cfg[][2] = {{256, 4}, {256, 8}, {512, 4}, {1024, 2}};
    float best = 1e30f;
    int best_b = 0, best_t = 0;
    for (auto& c : cfg) {
      int t = c[0], b = c[1] * sms;
      float ms = median_ms([&] { fma64_grid_stride<<<b, t>>>(-0.5f, (const float4*)x, (float4*)y, n / 4); });
      double g = gb_per_s(12.0 * n, ms);
      std::printf("fma64 peer: %d blocks (%d/SM) x %d threads: %.0f GB/s (%.3f ms), %.0f GFLOP/s, device copy %.0f GB/s (%.3f ms), ratio %.2f\n",
                  b, c[1], t, g, ms, 128.0 * n / (ms * 1e-3) / 1e9, cgbs, copy, g / cgbs);
      if (ms < best) best = ms, best_b = b, best_t = t;
    }
    double g = gb_per_s(12.0 * n, best);
    std::printf("fma64 peer: best %d blocks x %d threads: %.0f GB/s (%.3f ms), ratio %.2f to device copy\n", best_b, best_t, g, best, g / cgbs);

    // Out of place, z = fma64(x, y), checked against the same reference (y is the original).
    float* z;
    CHECK(cudaMalloc(&z, n * 4));
    CHECK(cudaMemcpy(y, hy.data(), n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(z, 0xff, n * 4));
    fma64_grid_stride_to<<<blocks, threads>>>(a, (const float4*)x, (const float4*)y, (float4*)z, n / 4);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(out.data(), z, n * 4, cudaMemcpyDeviceToHost));
    size_t zbad = count_parallel(n, [&](size_t i) { return !same_bits(out[i], ref[i]); });
    failures += zbad;
    std::printf("fma64 peer to z: out of place, %zu mismatches\n", zbad);
    best = 1e30f;
    for (auto& c : cfg) {
      int t = c[0], b = c[1] * sms;
      float ms = median_ms([&] { fma64_grid_stride_to<<<b, t>>>(-0.5f, (const float4*)x, (const float4*)y, (float4*)z, n / 4); });
      std::printf("fma64 peer to z: %d blocks (%d/SM) x %d threads: %.0f GB/s (%.3f ms)\n", b, c[1], t, gb_per_s(12.0 * n, ms), ms);
      if (ms < best) best = ms, best_b = b, best_t = t;
    }
    g = gb_per_s(12.0 * n, best);
    std::printf("fma64 peer to z: best %d blocks x %d threads: %.0f GB/s (%.3f ms), ratio %.2f to device copy\n", best_b, best_t, g, best, g / cgbs);
    CHECK(cudaFree(z));
  }
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  CHECK(cudaFree(copy_src));
  CHECK(cudaFree(copy_dst));
  std::vector<float>().swap(hx);
  std::vector<float>().swap(hy);
  std::vector<float>().swap(out);

  // ---- copy: y = x at ncopy floats, 8 bytes per element (read + write).
  {
    std::vector<float> hsrc(ncopy), hdst(ncopy);
    random_fill(hsrc, 44);
    float *src, *dst;
    CHECK(cudaMalloc(&src, ncopy * 4));
    CHECK(cudaMalloc(&dst, ncopy * 4));
    CHECK(cudaMemcpy(src, hsrc.data(), ncopy * 4, cudaMemcpyHostToDevice));
    float mcopy = median_ms([&] { CHECK(cudaMemcpy(dst, src, ncopy * 4, cudaMemcpyDeviceToDevice)); });
    double mg = gb_per_s(8.0 * ncopy, mcopy);
    std::printf("copy peer: cudaMemcpy device-to-device, %zu elements (%.2f GB each way): %.0f GB/s (%.3f ms)\n", ncopy, ncopy * 4 / 1e9, mg, mcopy);
    struct Cfg { int unroll, threads, per_sm; };
    const Cfg cfg[] = {{1, 256, 4}, {1, 256, 8}, {4, 256, 4}, {4, 256, 8}};
    float best = 1e30f;
    const Cfg* bestc = &cfg[0];
    for (auto& c : cfg) {
      int b = c.per_sm * sms;
      auto launch = [&] {
        if (c.unroll == 1) copy_grid_stride<1><<<b, c.threads>>>((const float4*)src, (float4*)dst, ncopy / 4);
        else copy_grid_stride<4><<<b, c.threads>>>((const float4*)src, (float4*)dst, ncopy / 4);
      };
      CHECK(cudaMemset(dst, 0xff, ncopy * 4));  // poison: every element must be written
      launch();
      CHECK(cudaGetLastError());
      CHECK(cudaMemcpy(hdst.data(), dst, ncopy * 4, cudaMemcpyDeviceToHost));
      size_t cbad = count_parallel(ncopy, [&](size_t i) { return !same_bits(hdst[i], hsrc[i]); });
      failures += cbad;
      float ms = median_ms(launch);
      double g = gb_per_s(8.0 * ncopy, ms);
      std::printf("copy peer: grid-stride float4 kernel, unroll %d, %d blocks (%d/SM) x %d threads, %zu elements, %zu mismatches: %.0f GB/s (%.3f ms), ratio %.2f to cudaMemcpy\n",
                  c.unroll, b, c.per_sm, c.threads, ncopy, cbad, g, ms, g / mg);
      if (ms < best) best = ms, bestc = &c;
    }
    double g = gb_per_s(8.0 * ncopy, best);
    std::printf("copy peer: best kernel unroll %d, %d/SM x %d threads: %.0f GB/s (%.3f ms); cudaMemcpy %.0f GB/s (%.3f ms); ratio %.2f\n",
                bestc->unroll, bestc->per_sm, bestc->threads, g, best, mg, mcopy, g / mg);
    CHECK(cudaFree(src));
    CHECK(cudaFree(dst));
  }
  return failures == 0 ? 0 : 1;
}
