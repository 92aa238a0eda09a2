// The CUDA C++ peer of examples/saxpy.rs, for docs/benchmarks.md: a grid-stride saxpy with 16-byte
// accesses, built on the GPU machine with `nvcc -O3 -arch=sm_90` and run in the same call as the
// Rust example (scripts/h200-peers.sh). Random inputs, every element checked (against fmaf: nvcc
// contracts a*x+y into one FMA), 3 warm-ups, median of 20 launches timed with events, and a
// device-to-device cudaMemcpy of as many bytes timed the same way.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t status_ = (call);                                                     \
    if (status_ != cudaSuccess) {                                                     \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(status_));    \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

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

template <class F>
static float median_ms(F launch) {
  cudaEvent_t s, e;
  CHECK(cudaEventCreate(&s));
  CHECK(cudaEventCreate(&e));
  for (int i = 0; i < 3; ++i) launch();
  CHECK(cudaDeviceSynchronize());
  std::vector<float> t;
  for (int i = 0; i < 20; ++i) {
    CHECK(cudaEventRecord(s));
    launch();
    CHECK(cudaEventRecord(e));
    CHECK(cudaEventSynchronize(e));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, s, e));
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main(int argc, char** argv) {
  size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (size_t(1) << 28);
  n &= ~size_t(3);
  const float a = 1.5f;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> hx(n), hy(n);
  for (auto& v : hx) v = dist(rng);
  for (auto& v : hy) v = dist(rng);
  float *x, *y, *copy_src, *copy_dst;
  CHECK(cudaMalloc(&x, n * 4));
  CHECK(cudaMalloc(&y, n * 4));
  // The copy moves 6n bytes each way: 12 bytes per saxpy element, as saxpy does.
  CHECK(cudaMalloc(&copy_src, n * 6));
  CHECK(cudaMalloc(&copy_dst, n * 6));
  CHECK(cudaMemset(copy_src, 1, n * 6));
  CHECK(cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(y, hy.data(), n * 4, cudaMemcpyHostToDevice));
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int threads = 256, blocks = sms * 8;
  // Check once, on the original y.
  saxpy_grid_stride<<<blocks, threads>>>(a, (const float4*)x, (float4*)y, n / 4);
  CHECK(cudaGetLastError());
  std::vector<float> out(n);
  CHECK(cudaMemcpy(out.data(), y, n * 4, cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += out[i] != std::fmaf(a, hx[i], hy[i]);
  float kernel = median_ms([&] { saxpy_grid_stride<<<blocks, threads>>>(0.5f, (const float4*)x, (float4*)y, n / 4); });
  float copy = median_ms([&] { CHECK(cudaMemcpy(copy_dst, copy_src, n * 6, cudaMemcpyDeviceToDevice)); });
  // saxpy moves 12 bytes per element (reads x and y, writes y); the copy moves 6n + 6n.
  double kgbs = 12.0 * n / (kernel * 1e-3) / 1e9, cgbs = 12.0 * n / (copy * 1e-3) / 1e9;
  std::printf("peer: CUDA C++ grid-stride saxpy (%d blocks x %d threads), %zu elements, %zu mismatches\n", blocks, threads, n, bad);
  std::printf("bandwidth: peer saxpy %.0f GB/s (%.3f ms), device copy %.0f GB/s (%.3f ms), ratio %.2f\n", kgbs, kernel, cgbs, copy, kgbs / cgbs);
  return bad == 0 ? 0 : 1;
}
