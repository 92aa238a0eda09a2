// The CUDA C++ peer of examples/pipeline.rs, for docs/benchmarks.md: y = a * x + b through a
// hand-written warp-specialized pipeline, the same roles as the Rust kernel.
//
//   6 warps per block. Warp 0 (lane 0) loads x tiles (TILE floats) into a DEPTH-slot input ring in
//   shared memory with cp.async.bulk, completing on the slot's 'full' mbarrier (expect_tx bytes).
//   Warps 1..4 wait on that, compute a*x+b (mul.rn then add.rn, no FMA contraction, as the Rust
//   kernel's `a * i + b`) into an ODEPTH-slot output ring, fence the generic writes to the async
//   proxy, and arrive on the input slot's 'empty' and the output slot's 'full'. Warp 5 (lane 0)
//   stores each output tile with cp.async.bulk.global.shared::cta.bulk_group, commits, waits
//   until at most LAG groups are still reading shared memory (LAG = 0: wait_group.read 0, the
//   Rust kernel's order) and frees the slot whose store has been read. Raw mbarriers with phase
//   parity throughout. Tiles go to blocks grid-stride (tile t = blockIdx.x + k * gridDim.x); a tail
//   tile shorter than TILE moves its 16-byte-aligned part in bulk and its last n % 4 elements with
//   ordinary loads and stores.
//
// Also a plain grid-stride float4 kernel of the same function, for reference. Random inputs,
// every element of y checked bit-exactly (y poisoned before each check) against (a*x)+b computed
// on the host without contraction, at n and at 2^20 + 37 (a tail tile, n % 4 != 0); 3 warm-ups,
// median of 20 launches between events; a device-to-device cudaMemcpy of 4n bytes timed the same
// way. Bytes counted: 8 per element (read x, write y) for the kernels and the copy alike.
//
//   nvcc -O3 -arch=sm_90 -o pipeline_ws_peer examples/peers/pipeline_ws.cu
//   pipeline_ws_peer [elements, default 2^28]
#include <string>
#include "peer_common.cuh"

constexpr int XWARPS = 4;                  // transform warps (warps 1..4)
constexpr int WS_THREADS = 32 * (XWARPS + 2);

__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t* b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive_tx(uint64_t* b, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(b)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* b, unsigned parity) {
  asm volatile(
      "{\n .reg .pred p;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra WAIT_%=;\n}\n" ::"r"(
          smem_addr(b)),
      "r"(parity)
      : "memory");
}
// global -> shared, completing `bytes` on the mbarrier.
__device__ __forceinline__ void bulk_g2s(void* dst, const void* src, unsigned bytes, uint64_t* b) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(b))
               : "memory");
}
// shared -> global, tracked by bulk groups.
__device__ __forceinline__ void bulk_s2g(void* dst, const void* src, unsigned bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(smem_addr(src)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory"); }
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

__device__ __forceinline__ float f(float a, float b, float x) { return __fadd_rn(__fmul_rn(a, x), b); }
__device__ __forceinline__ float4 f4(float a, float b, float4 v) {
  return make_float4(f(a, b, v.x), f(a, b, v.y), f(a, b, v.z), f(a, b, v.w));
}

template <int TILE, int DEPTH, int ODEPTH>
constexpr size_t ws_smem_bytes() {
  return (size_t)(DEPTH + ODEPTH) * TILE * 4 + (size_t)(2 * DEPTH + 2 * ODEPTH) * 8;
}

template <int TILE, int DEPTH, int ODEPTH, int LAG>
__global__ void __launch_bounds__(WS_THREADS) pipeline_ws(float a, float b, const float* __restrict__ x, float* __restrict__ y, size_t n) {
  static_assert(TILE % (4 * 32 * XWARPS) == 0, "TILE must be a multiple of 512 floats");
  static_assert(LAG >= 0 && LAG < ODEPTH, "LAG must be below ODEPTH");
  extern __shared__ __align__(128) unsigned char sm[];
  float* in = (float*)sm;                 // [DEPTH][TILE]
  float* out = in + DEPTH * TILE;         // [ODEPTH][TILE]
  uint64_t* in_full = (uint64_t*)(out + ODEPTH * TILE);
  uint64_t* in_empty = in_full + DEPTH;
  uint64_t* out_full = in_empty + DEPTH;
  uint64_t* out_empty = out_full + ODEPTH;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const size_t ntiles = (n + TILE - 1) / TILE;
  if (threadIdx.x == 0) {
    for (int s = 0; s < DEPTH; ++s) { mbar_init(&in_full[s], 1); mbar_init(&in_empty[s], XWARPS); }
    for (int s = 0; s < ODEPTH; ++s) { mbar_init(&out_full[s], XWARPS); mbar_init(&out_empty[s], 1); }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  if (warp == 0) {
    // Load role.
    if (lane == 0) {
      unsigned i = 0;
      for (size_t t = blockIdx.x; t < ntiles; t += gridDim.x, ++i) {
        const unsigned s = i % DEPTH, ph = (i / DEPTH) & 1;
        const size_t base = t * TILE;
        const unsigned len = n - base < (size_t)TILE ? (unsigned)(n - base) : (unsigned)TILE;
        const unsigned bytes = (len & ~3u) * 4;  // the bulk part: a multiple of 16 bytes
        mbar_wait(&in_empty[s], ph ^ 1);
        mbar_arrive_tx(&in_full[s], bytes);
        if (bytes) bulk_g2s(in + s * TILE, x + base, bytes, &in_full[s]);
      }
    }
  } else if (warp <= XWARPS) {
    // Transform role.
    const int ct = threadIdx.x - 32;
    unsigned i = 0;
    for (size_t t = blockIdx.x; t < ntiles; t += gridDim.x, ++i) {
      const unsigned s = i % DEPTH, ph = (i / DEPTH) & 1;
      const unsigned os = i % ODEPTH, oph = (i / ODEPTH) & 1;
      const size_t base = t * TILE;
      const unsigned len = n - base < (size_t)TILE ? (unsigned)(n - base) : (unsigned)TILE;
      mbar_wait(&out_empty[os], oph ^ 1);
      mbar_wait(&in_full[s], ph);
      const float4* src = (const float4*)(in + s * TILE);
      float4* dst = (float4*)(out + os * TILE);
      if (len == TILE) {
#pragma unroll
        for (int k = 0; k < TILE / (4 * 32 * XWARPS); ++k) {
          const int j = ct + k * 32 * XWARPS;
          dst[j] = f4(a, b, src[j]);
        }
      } else {
        const unsigned len4 = len / 4;
        for (unsigned j = ct; j < len4; j += 32 * XWARPS) dst[j] = f4(a, b, src[j]);
        const unsigned r = len4 * 4 + ct;  // the last len % 4 elements, read from global
        if (r < len) out[os * TILE + r] = f(a, b, x[base + r]);
      }
      fence_proxy_async();  // this thread's generic writes, before the store's async-proxy reads
      __syncwarp();
      if (lane == 0) {
        mbar_arrive(&in_empty[s]);
        mbar_arrive(&out_full[os]);
      }
    }
  } else {
    // Store role.
    if (lane == 0) {
      unsigned i = 0;
      for (size_t t = blockIdx.x; t < ntiles; t += gridDim.x, ++i) {
        const unsigned os = i % ODEPTH, oph = (i / ODEPTH) & 1;
        const size_t base = t * TILE;
        const unsigned len = n - base < (size_t)TILE ? (unsigned)(n - base) : (unsigned)TILE;
        const unsigned bulk = len & ~3u;
        mbar_wait(&out_full[os], oph);
        const float* src = out + os * TILE;
        if (bulk) bulk_s2g(y + base, src, bulk * 4);
        for (unsigned r = bulk; r < len; ++r) y[base + r] = src[r];
        bulk_commit();
        bulk_wait_read<LAG>();  // all but the newest LAG stores have read their slots
        if constexpr (LAG == 0) mbar_arrive(&out_empty[os]);
        else if (i >= (unsigned)LAG) mbar_arrive(&out_empty[(i - LAG) % ODEPTH]);
      }
      bulk_wait_all();
    }
  }
}

// The same function, grid-stride, 16-byte accesses; the last n % 4 elements by the first threads.
__global__ void pipeline_grid_stride(float a, float b, const float* __restrict__ x, float* __restrict__ y, size_t n) {
  const size_t n4 = n / 4, tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  const float4* x4 = (const float4*)x;
  float4* y4 = (float4*)y;
  for (size_t i = tid; i < n4; i += (size_t)gridDim.x * blockDim.x) y4[i] = f4(a, b, x4[i]);
  if (tid < n - n4 * 4) y[n4 * 4 + tid] = f(a, b, x[n4 * 4 + tid]);
}

using Kernel = void (*)(float, float, const float*, float*, size_t);
struct Config {
  const char* name;
  Kernel kernel;
  int tile, depth, odepth, lag;
  size_t smem;
  std::vector<int> per_sm;
  // Grids larger than what is resident: one block per K tiles, for each K here.
  std::vector<int> tiles_per_block;
};
template <int TILE, int DEPTH, int ODEPTH, int LAG>
static Config ws_config(std::vector<int> per_sm, std::vector<int> tiles_per_block = {}) {
  return Config{"pipeline_ws", pipeline_ws<TILE, DEPTH, ODEPTH, LAG>, TILE, DEPTH, ODEPTH, LAG,
                ws_smem_bytes<TILE, DEPTH, ODEPTH>(), per_sm, tiles_per_block};
}

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (size_t(1) << 28);
  const size_t n_small = (size_t(1) << 20) + 37;
  const size_t cap = std::max(n, n_small);
  const int sms = sm_count();
  std::vector<float> hx(cap), hy(cap);
  random_fill(hx, 7);
  float *x, *y, *copy_src, *copy_dst;
  CHECK(cudaMalloc(&x, cap * 4));
  CHECK(cudaMalloc(&y, cap * 4));
  CHECK(cudaMalloc(&copy_src, n * 4));
  CHECK(cudaMalloc(&copy_dst, n * 4));
  CHECK(cudaMemcpy(x, hx.data(), cap * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(copy_src, hx.data(), n * 4, cudaMemcpyHostToDevice));

  float copy = median_ms([&] { CHECK(cudaMemcpy(copy_dst, copy_src, n * 4, cudaMemcpyDeviceToDevice)); });
  const double cgbs = gb_per_s(8.0 * n, copy);
  std::printf("pipeline_ws peer: device copy (cudaMemcpy D2D of %zu floats) %.0f GB/s (%.3f ms), %d SMs\n", n, cgbs, copy, sms);

  // Runs `launch` on `m` elements with (a, b), y poisoned first; returns the mismatches.
  int check_no = 0;
  auto check = [&](size_t m, auto launch) {
    const float a = 0.75f + (float)(check_no % 5), b = -0.25f - 0.125f * (float)(check_no % 7);
    ++check_no;
    return affine_mismatches(a, b, m, hx, y, hy, [&] { launch(a, b, m); });
  };

  size_t failures = 0;
  struct Result { std::string what; double gbs; float ms; };
  std::vector<Result> results;

  // The plain grid-stride kernel.
  {
    const int threads = 256, per_sm = 8, blocks = per_sm * sms;
    auto launch = [&](float a, float b, size_t m) { pipeline_grid_stride<<<blocks, threads>>>(a, b, x, y, m); };
    size_t bs = check(n_small, launch), bn = check(n, launch);
    failures += bs + bn;
    float ms = median_ms([&] { launch(2.0f, 1.0f, n); });
    double g = gb_per_s(8.0 * n, ms);
    std::printf("pipeline_gs peer: grid-stride float4, %d blocks (%d/SM) x %d threads, mismatches %zu of %zu, %zu of %zu: %.0f GB/s (%.3f ms), ratio %.2f\n",
                blocks, per_sm, threads, bs, n_small, bn, n, g, ms, g / cgbs);
    results.push_back({"grid-stride float4 256 threads 8/SM", g, ms});
  }

  std::vector<Config> configs;
  configs.push_back(ws_config<1024, 4, 2, 0>({2, 3, 4, 8}, {8, 16, 32, 64}));
  // Deeper rings and smaller tiles, the shapes examples/pipeline_variants.rs runs.
  configs.push_back(ws_config<1024, 6, 2, 0>({2, 3, 4}));
  configs.push_back(ws_config<1024, 8, 2, 0>({2, 3, 4}, {16}));
  configs.push_back(ws_config<1024, 4, 3, 0>({2, 3, 4}, {16}));
  configs.push_back(ws_config<1024, 8, 4, 0>({2, 3, 4}));
  configs.push_back(ws_config<512, 8, 4, 0>({2, 3, 4}));
  configs.push_back(ws_config<2048, 4, 2, 0>({2, 4}));
  configs.push_back(ws_config<4096, 4, 2, 0>({2}));
  configs.push_back(ws_config<1024, 4, 2, 1>({2, 3, 4, 8}));
  configs.push_back(ws_config<1024, 4, 3, 1>({2, 3}));
  configs.push_back(ws_config<1024, 4, 3, 2>({2}));
  configs.push_back(ws_config<2048, 4, 2, 1>({4}));
  configs.push_back(ws_config<4096, 3, 2, 1>({2}));
  for (auto& c : configs) {
    CHECK(cudaFuncSetAttribute(c.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)c.smem));
    int fit = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, c.kernel, WS_THREADS, c.smem));
    // Positive: blocks per SM; negative: one block per -grid tiles.
    std::vector<int> grids = c.per_sm;
    for (int k : c.tiles_per_block) grids.push_back(-k);
    for (int grid : grids) {
      char what[160];
      if (grid > 0)
        std::snprintf(what, sizeof what, "TILE=%d DEPTH=%d ODEPTH=%d LAG=%d, %d/SM", c.tile, c.depth, c.odepth, c.lag, grid);
      else
        std::snprintf(what, sizeof what, "TILE=%d DEPTH=%d ODEPTH=%d LAG=%d, 1 block per %d tiles", c.tile, c.depth, c.odepth, c.lag, -grid);
      if (grid > fit) {
        std::printf("pipeline_ws peer: %s: skipped, only %d blocks of %zu B shared memory fit on an SM\n", what, fit, c.smem);
        continue;
      }
      const size_t span = (size_t)c.tile * (size_t)(grid > 0 ? 1 : -grid);
      const int blocks = grid > 0 ? grid * sms : (int)((n + span - 1) / span);
      auto launch = [&](float a, float b, size_t m) { c.kernel<<<blocks, WS_THREADS, c.smem>>>(a, b, x, y, m); };
      size_t bs = check(n_small, launch), bn = check(n, launch);
      failures += bs + bn;
      float ms = median_ms([&] { launch(2.0f, 1.0f, n); });
      double g = gb_per_s(8.0 * n, ms);
      std::printf("pipeline_ws peer: %s, %d blocks x %d threads, %zu B smem, mismatches %zu of %zu, %zu of %zu: %.0f GB/s (%.3f ms), ratio %.2f\n",
                  what, blocks, WS_THREADS, c.smem, bs, n_small, bn, n, g, ms, g / cgbs);
      results.push_back({what, g, ms});
    }
  }

  std::printf("pipeline_ws peer: summary, %zu elements, 8 bytes each, device copy %.0f GB/s (%.3f ms)\n", n, cgbs, copy);
  for (auto& r : results)
    std::printf("pipeline_ws peer:   %-40s %6.0f GB/s  %.3f ms  ratio %.2f\n", r.what.c_str(), r.gbs, r.ms, r.gbs / cgbs);
  std::printf("pipeline_ws peer: %s, %zu mismatches in all\n", failures == 0 ? "all checks passed" : "CHECKS FAILED", failures);
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  CHECK(cudaFree(copy_src));
  CHECK(cudaFree(copy_dst));
  return failures == 0 ? 0 : 1;
}
