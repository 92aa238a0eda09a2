// The generated pipeline kernel itself, launched from C++ next to its peer: loads the PTX of
// examples/pipeline.rs's `scale_shift` (and of any edited copies) with the driver API and times
// each against the hand-written peer (pipeline_ablation.cuh with no flag, the kernel of
// pipeline_ws.cu) and the ablation's copy of the generated protocol, on the example's default grid
// (one block per 8 tiles) and on 2 blocks per SM, in two ways: after an L2 flush (as the
// streaming benchmarks time, peer_common.cuh) and on an idle stream (which counts the host's
// submission of the launch). What it separates: the kernel's own time from what the Rust launch path adds, and,
// with edited PTX, what one part of the generated code costs.
//
// Random inputs; every element checked bit-exactly at n (default grid) and at 2^20 + 37 (3 blocks,
// 2/SM) for every kernel; 3 warm-ups and the median of 20 launches between events; the kernels,
// grids and timings interleave within a round. Bytes: 8 per element.
//
//   cargo run -p gpu-async-compiler --bin gpu-async-inspect -- examples/pipeline.rs --ptx-only > scale_shift.ptx
//   nvcc -O3 -arch=sm_90 -o pipeline_ptx examples/peers/pipeline_ptx.cu -lcuda
//   pipeline_ptx ELEMENTS ROUNDS scale_shift.ptx [more .ptx files with the same entry]
//
// Environment: PIPELINE_PTX_POOL=1 allocates x and y from the stream-ordered pool
// (cudaMallocAsync), as gpu-async's buffers are (cuMemAllocAsync), instead of cudaMalloc, for
// every kernel; PIPELINE_PTX_WATCHDOG_NS=N passes the generated kernels a watchdog bound of N ns
// (gpu-async's default is 5 s; 0, the default here, turns it off); PIPELINE_PTX_PRIORITY_STREAM=1
// first creates a stream of the greatest priority that runs nothing, as gpu-async's cancel
// stream; PIPELINE_PTX_X_SHIFT=B and PIPELINE_PTX_Y_SHIFT=B place x and y B bytes (a multiple
// of 16) past the start of their allocations (256 and 512 cost up to 0.8%, which is why
// gpu-async's buffers start on 4 KiB boundaries); PIPELINE_PTX_CARVEOUT=P sets every kernel's preferred
// shared-memory carveout to P percent (the default already fits 9 blocks per SM). Built with
// `--default-stream per-thread`, everything runs on the per-thread stream instead of the legacy
// one.
#include <cuda.h>
#include "pipeline_ablation.cuh"

#define CU(call)                                                                   \
  do {                                                                             \
    CUresult r_ = (call);                                                          \
    if (r_ != CUDA_SUCCESS) {                                                      \
      const char* s_ = "?";                                                        \
      cuGetErrorString(r_, &s_);                                                   \
      std::fprintf(stderr, "%s failed: %s\n", #call, s_);                          \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

static std::string read_file(const char* path) {
  FILE* f = std::fopen(path, "rb");
  if (!f) {
    std::fprintf(stderr, "cannot open %s\n", path);
    std::exit(1);
  }
  std::string s;
  char buf[65536];
  size_t k;
  while ((k = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, k);
  std::fclose(f);
  return s;
}

// A hand-written kernel (`peer`) or a loaded one (`fn`, with the generated kernel's parameters).
struct Entry {
  std::string name;
  Kernel peer;
  CUfunction fn;
};

// The generated kernel's dynamic shared memory (the inspect tool prints it): 24704 B.
constexpr unsigned GENERATED_SMEM = 24704;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: pipeline_ptx ELEMENTS ROUNDS FILE.ptx...\n");
    return 2;
  }
  const size_t n = std::strtoull(argv[1], nullptr, 10);
  const int rounds = std::atoi(argv[2]);
  const size_t n_small = (size_t(1) << 20) + 37, cap = std::max(n, n_small);
  const int sms = sm_count();
  CHECK(cudaFree(0));  // the runtime's primary context, which the driver calls below use
  std::vector<Entry> entries = {
      {"peer (pipeline_ws's kernel)", pipeline_ablation<0>, nullptr},
      {"ablation: all flags", pipeline_ablation<F_ALL>, nullptr},
  };
  for (int i = 3; i < argc; ++i) {
    const std::string ptx = read_file(argv[i]);
    CUmodule module;
    char log[8192] = {0};
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* vals[] = {log, (void*)(size_t)sizeof log};
    if (cuModuleLoadDataEx(&module, ptx.c_str(), 2, opts, vals) != CUDA_SUCCESS) {
      std::fprintf(stderr, "%s does not load: %s\n", argv[i], log);
      return 1;
    }
    CUfunction fn;
    CU(cuModuleGetFunction(&fn, module, "scale_shift"));
    int regs;
    CU(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn));
    std::printf("pipeline_ptx: %s: %d registers\n", argv[i], regs);
    entries.push_back({argv[i], nullptr, fn});
  }
  for (auto& e : entries)
    if (e.peer) CHECK(cudaFuncSetAttribute(e.peer, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM));

  std::vector<float> hx(cap), hy(cap);
  random_fill(hx, 7);
  float *x, *y;
  unsigned* abort_word;
  void* record;
  const char* pool = std::getenv("PIPELINE_PTX_POOL");
  const char* watchdog_env = std::getenv("PIPELINE_PTX_WATCHDOG_NS");
  const uint64_t watchdog_ns = watchdog_env ? std::strtoull(watchdog_env, nullptr, 10) : 0;
  // A stream of the greatest priority in the context, running nothing, as gpu-async's cancel
  // stream is.
  if (const char* hp = std::getenv("PIPELINE_PTX_PRIORITY_STREAM"); hp && std::string(hp) == "1") {
    int least = 0, greatest = 0;
    CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cudaStream_t high;
    CHECK(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest));
    std::printf("pipeline_ptx: a stream of priority %d (least %d) exists, unused\n", greatest, least);
  }
  // x's and y's distances past the start of their allocations, in bytes.
  const char* x_shift_env = std::getenv("PIPELINE_PTX_X_SHIFT");
  const char* y_shift_env = std::getenv("PIPELINE_PTX_Y_SHIFT");
  const size_t x_shift = x_shift_env ? std::strtoull(x_shift_env, nullptr, 10) : 0;
  const size_t y_shift = y_shift_env ? std::strtoull(y_shift_env, nullptr, 10) : 0;
  if (pool && std::string(pool) == "1") {
    CHECK(cudaMallocAsync(&x, cap * 4 + x_shift, 0));
    CHECK(cudaMallocAsync(&y, cap * 4 + y_shift, 0));
    CHECK(cudaStreamSynchronize(0));
  } else {
    CHECK(cudaMalloc(&x, cap * 4 + x_shift));
    CHECK(cudaMalloc(&y, cap * 4 + y_shift));
  }
  x = (float*)((char*)x + x_shift);
  y = (float*)((char*)y + y_shift);
  std::printf("pipeline_ptx: x and y from %s, at %p and %p (shifted by %zu and %zu B), watchdog %llu ns\n",
              pool ? "the stream-ordered pool" : "cudaMalloc", (void*)x, (void*)y, x_shift, y_shift,
              (unsigned long long)watchdog_ns);
  // The preferred shared-memory carveout in percent (-1: the driver's default), for every kernel.
  const char* carveout_env = std::getenv("PIPELINE_PTX_CARVEOUT");
  const int carveout = carveout_env ? std::atoi(carveout_env) : -1;
  for (auto& e : entries) {
    int fit = 0;
    if (e.peer) {
      if (carveout >= 0) CHECK(cudaFuncSetAttribute(e.peer, cudaFuncAttributePreferredSharedMemoryCarveout, carveout));
      CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, e.peer, THREADS, SMEM));
    } else {
      if (carveout >= 0) CU(cuFuncSetAttribute(e.fn, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, carveout));
      CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&fit, e.fn, THREADS, GENERATED_SMEM));
    }
    std::printf("pipeline_ptx: %s: %d blocks per SM fit (carveout %d)\n", e.name.c_str(), fit, carveout);
  }
  CHECK(cudaMalloc(&abort_word, 4));
  CHECK(cudaMalloc(&record, 64));
  CHECK(cudaMemset(abort_word, 0, 4));
  CHECK(cudaMemset(record, 0, 64));
  CHECK(cudaMemcpy(x, hx.data(), cap * 4, cudaMemcpyHostToDevice));
  // The generated kernel's parameters: a, b, x and its length, y and its length, then the abort
  // protocol's: the abort word, the launch id (never 0, and never in the word here), the failure
  // record, the watchdog in ns (0: off).
  auto launch = [&](const Entry& e, int blocks, float a, float b, size_t m) {
    if (e.peer) {
      e.peer<<<blocks, THREADS, SMEM>>>(a, b, x, y, m, abort_word, 1);
      return;
    }
    CUdeviceptr px = (CUdeviceptr)x, py = (CUdeviceptr)y, pa = (CUdeviceptr)abort_word, pr = (CUdeviceptr)record;
    uint64_t len = m, watchdog = watchdog_ns;
    unsigned id = 1;
    void* params[] = {&a, &b, &px, &len, &py, &len, &pa, &id, &pr, &watchdog};
    CU(cuLaunchKernel(e.fn, blocks, 1, 1, THREADS, 1, 1, GENERATED_SMEM, 0, params, nullptr));
  };
  // Grid codes: negative, one block per -g tiles; positive, g blocks per SM.
  auto blocks_of = [&](int g) { return g > 0 ? g * sms : (int)((n + (size_t)TILE * -g - 1) / ((size_t)TILE * -g)); };

  size_t failures = 0;
  for (auto& e : entries) {
    for (const auto& shape : {std::pair<size_t, int>{n_small, 3}, {n_small, blocks_of(2)}, {n, blocks_of(-8)}}) {
      const size_t m = shape.first;
      const int blocks = shape.second;
      const float a = 1.75f, b = -0.375f;
      const size_t bad = affine_mismatches(a, b, m, hx, y, hy, [&] { launch(e, blocks, a, b, m); });
      failures += bad;
      if (bad) std::printf("pipeline_ptx: %s: %zu mismatches of %zu\n", e.name.c_str(), bad, m);
    }
  }

  struct Setting {
    int grid;
    bool flushed;
  };
  const Setting settings[] = {{-8, true}, {2, true}, {-8, false}, {2, false}};
  std::map<std::pair<size_t, int>, std::vector<double>> gbs;  // (entry, setting) -> GB/s per round
  for (int round = 0; round < rounds; ++round)
    for (int si = 0; si < 4; ++si)
      for (size_t i = 0; i < entries.size(); ++i) {
        auto run = [&] { launch(entries[i], blocks_of(settings[si].grid), 2.0f, 1.0f, n); };
        const float ms = median_ms(run, settings[si].flushed);
        gbs[{i, si}].push_back(gb_per_s(8.0 * n, ms));
      }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("pipeline_ptx: %zu elements, %d rounds; GB/s per round, the median's ratio to the peer's\n", n, rounds);
  for (int si = 0; si < 4; ++si) {
    const int g = settings[si].grid;
    std::printf("pipeline_ptx: %s (%d blocks), %s\n",
                g < 0 ? ("1 block per " + std::to_string(-g) + " tiles").c_str() : (std::to_string(g) + "/SM").c_str(),
                blocks_of(g), settings[si].flushed ? "after an L2 flush" : "idle stream");
    const double peer = median(gbs[{0, si}]);
    for (size_t i = 0; i < entries.size(); ++i) {
      std::string runs;
      for (double v : gbs[{i, si}]) runs += " " + std::to_string((int)(v + 0.5));
      std::printf("pipeline_ptx:   %-36s%s  ratio %.3f\n", entries[i].name.c_str(), runs.c_str(), median(gbs[{i, si}]) / peer);
    }
  }
  std::printf("pipeline_ptx: %s, %zu mismatches in all\n", failures ? "CHECKS FAILED" : "all checks passed", failures);
  return failures ? 1 : 0;
}
