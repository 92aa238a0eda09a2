// The CUDA C++ peers of examples/transpose.rs, for docs/benchmarks.md: an n x n f32 transpose
// through a 32 x 33 shared tile, written two ways, next to a device-to-device cudaMemcpy of as
// many bytes:
//   - "classic": one 32 x 32 tile per block of 32 x 8 threads, each thread moving 4 elements
//     (the layout of NVIDIA's transpose sample), a block per tile;
//   - "persistent": the shape examples/transpose.rs generates: 128 threads per block, a few
//     blocks per multiprocessor, each block walking the tiles grid-stride, 8 elements per thread
//     loaded into the tile, a barrier, 8 stored, a barrier.
// Built on the GPU machine with `nvcc -O3 -arch=sm_90`; every element of each result is checked,
// 3 warm-ups, median of 20 launches between events after an L2 flush (peer_common.cuh).
//
//   transpose_peer [n, default 8192] [blocks per multiprocessor for "persistent", default 12]
#include <functional>
#include "peer_common.cuh"

constexpr int TILE = 32;

__global__ void transpose_classic(const float* __restrict__ x, float* __restrict__ y, int n) {
  __shared__ float tile[TILE][TILE + 1];
  int c = blockIdx.x * TILE + threadIdx.x;
  int r = blockIdx.y * TILE + threadIdx.y;
#pragma unroll
  for (int k = 0; k < TILE; k += 8) tile[threadIdx.y + k][threadIdx.x] = x[(size_t)(r + k) * n + c];
  __syncthreads();
  c = blockIdx.y * TILE + threadIdx.x;
  r = blockIdx.x * TILE + threadIdx.y;
#pragma unroll
  for (int k = 0; k < TILE; k += 8) y[(size_t)(r + k) * n + c] = tile[threadIdx.x][threadIdx.y + k];
}

__global__ void transpose_persistent(const float* __restrict__ x, float* __restrict__ y, int n) {
  __shared__ float tile[TILE][TILE + 1];
  int per_row = n / TILE;
  for (int t = blockIdx.x; t < per_row * per_row; t += gridDim.x) {
    int r0 = (t / per_row) * TILE, c0 = (t % per_row) * TILE;
#pragma unroll
    for (int i = threadIdx.x; i < TILE * TILE; i += 128)
      tile[i / TILE][i % TILE] = x[(size_t)(r0 + i / TILE) * n + c0 + i % TILE];
    __syncthreads();
#pragma unroll
    for (int i = threadIdx.x; i < TILE * TILE; i += 128)
      y[(size_t)(c0 + i / TILE) * n + r0 + i % TILE] = tile[i % TILE][i / TILE];
    __syncthreads();
  }
}

static size_t count_wrong(const std::vector<float>& x, const std::vector<float>& y, size_t n) {
  return count_parallel(n * n, [&](size_t i) { return !same_bits(y[(i % n) * n + i / n], x[i]); });
}

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 8192;
  int per_sm = argc > 2 ? std::atoi(argv[2]) : 12;
  if (n <= 0 || n % TILE != 0) {
    std::fprintf(stderr, "n must be a positive multiple of 32\n");
    return 2;
  }
  int sms = sm_count();
  size_t elems = (size_t)n * n, bytes = elems * sizeof(float);
  std::vector<float> hx(elems), hy(elems);
  random_fill(hx, 31);
  float *x, *y, *dst;
  CHECK(cudaMalloc(&x, bytes));
  CHECK(cudaMalloc(&y, bytes));
  CHECK(cudaMalloc(&dst, bytes));
  CHECK(cudaMemcpy(x, hx.data(), bytes, cudaMemcpyHostToDevice));

  auto classic = [&] { transpose_classic<<<dim3(n / TILE, n / TILE), dim3(TILE, 8)>>>(x, y, n); };
  auto persistent = [&] { transpose_persistent<<<per_sm * sms, 128>>>(x, y, n); };
  auto copy = [&] { CHECK(cudaMemcpyAsync(dst, x, bytes, cudaMemcpyDeviceToDevice)); };
  int rc = 0;
  float copy_ms = median_ms(copy);
  for (auto [name, launch] : {std::pair<const char*, std::function<void()>>{"classic", classic},
                              {"persistent", persistent}}) {
    CHECK(cudaMemset(y, 0, bytes));
    launch();
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(hy.data(), y, bytes, cudaMemcpyDeviceToHost));
    size_t bad = count_wrong(hx, hy, n);
    float ms = median_ms(launch);
    std::printf("check: transpose_%s %zu elements differ\n", name, bad);
    std::printf("bandwidth: transpose_%s %.0f GB/s (%.4f ms), device copy %.0f GB/s (%.4f ms), ratio %.2f\n",
                name, gb_per_s(2.0 * bytes, ms), ms, gb_per_s(2.0 * bytes, copy_ms), copy_ms, copy_ms / ms);
    std::printf("time: transpose_cuda_%s %.4f ms\n", name, ms);
    rc |= bad != 0;
  }
  return rc;
}
