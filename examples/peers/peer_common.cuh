// Helpers shared by the CUDA C++ peers (saxpy.cu, pipeline_ws.cu): error checks, the timing rule
// of the benchmarks (3 warm-ups, median of 20 launches between CUDA events, each after an L2
// flush that keeps the GPU busy while the run is enqueued), a fixed-seed
// random fill that runs on every host core, and a parallel loop for the host-side checks.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
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

// Before each timed run, untimed: a copy of 128 MiB between two scratch buffers on the same
// stream, as gpu_async::bench::Timing does before each of the Rust examples' runs (and
// triton.testing.do_bench's zeroing of 256 MB before each of its runs). It evicts the L2, and
// it keeps the GPU busy while the host enqueues the start event, the run and the end event, so
// that the time is the GPU's and not the host's submission of the run.
struct FlushBuffers {
  void* src = nullptr;
  void* dst = nullptr;
  static constexpr size_t bytes = size_t(128) << 20;
};
static void flush_l2() {
  static FlushBuffers f = [] {
    FlushBuffers b;
    CHECK(cudaMalloc(&b.src, FlushBuffers::bytes));
    CHECK(cudaMalloc(&b.dst, FlushBuffers::bytes));
    return b;
  }();
  CHECK(cudaMemcpyAsync(f.dst, f.src, FlushBuffers::bytes, cudaMemcpyDeviceToDevice));
}

// 3 warm-ups, then the median of 20 launches, each between two events after a flush_l2() (or,
// with `flush` false, on an idle stream, which counts the host's submission of the launch in
// the time).
template <class F>
static float median_ms(F launch, bool flush = true) {
  cudaEvent_t s, e;
  CHECK(cudaEventCreate(&s));
  CHECK(cudaEventCreate(&e));
  for (int i = 0; i < 3; ++i) launch();
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<float> t;
  for (int i = 0; i < 20; ++i) {
    if (flush) flush_l2();
    CHECK(cudaEventRecord(s));
    launch();
    CHECK(cudaEventRecord(e));
    CHECK(cudaEventSynchronize(e));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, s, e));
    t.push_back(ms);
  }
  CHECK(cudaGetLastError());
  CHECK(cudaEventDestroy(s));
  CHECK(cudaEventDestroy(e));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// f(lo, hi) over [0, n), split across the host's cores.
template <class F>
static void parallel_for(size_t n, F f) {
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  size_t chunk = (n + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    size_t lo = t * chunk, hi = std::min(n, lo + chunk);
    if (lo >= hi) break;
    pool.emplace_back([lo, hi, &f] { f(lo, hi); });
  }
  for (auto& th : pool) th.join();
}

// Counts the i in [0, n) for which bad(i) holds, on every core.
template <class F>
static size_t count_parallel(size_t n, F bad) {
  std::atomic<size_t> total{0};
  parallel_for(n, [&](size_t lo, size_t hi) {
    size_t c = 0;
    for (size_t i = lo; i < hi; ++i) c += bad(i) ? 1 : 0;
    total += c;
  });
  return total.load();
}

static inline uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Element i of the random stream `seed`: uniform in [-1, 1), 24 random bits (a multiple of 2^-23).
static inline float random_at(uint64_t seed, size_t i) {
  uint32_t r = (uint32_t)(splitmix64(splitmix64(seed) ^ (uint64_t)i) >> 40);
  return (float)r * (1.0f / 8388608.0f) - 1.0f;
}

static void random_fill(std::vector<float>& v, uint64_t seed) {
  parallel_for(v.size(), [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) v[i] = random_at(seed, i);
  });
}

static inline bool same_bits(float a, float b) {
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

// The pipeline peers' reference: (a*x)+b on the host, each operation rounded to f32 (the volatile
// keeps the compiler from contracting it into an FMA).
static float host_f(float a, float b, float x) {
  volatile float p = a * x;
  return p + b;
}

// The pipeline peers' check: poisons y[0..m), runs `launch` (which computes y = a*x + b on the
// device copy of hx), waits for it, reads y back into hy and returns how many of its elements
// differ, bit for bit, from host_f.
template <class F>
static size_t affine_mismatches(float a, float b, size_t m, const std::vector<float>& hx, float* y,
                                std::vector<float>& hy, F launch) {
  CHECK(cudaMemset(y, 0xff, m * 4));
  launch();
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(hy.data(), y, m * 4, cudaMemcpyDeviceToHost));
  return count_parallel(m, [&](size_t i) { return !same_bits(hy[i], host_f(a, b, hx[i])); });
}

static inline double gb_per_s(double bytes, float ms) { return bytes / (ms * 1e-3) / 1e9; }

static int sm_count() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  return sms;
}
