// Where the pipeline example loses to its peer: the peer of examples/peers/pipeline_ws.cu
// (TILE 1024, 4 input slots, 2 output slots, LAG 0), with each difference of the kernel that
// gpu-async generates for examples/pipeline.rs added back on its own, as a flag. All flags
// together are a hand-written model of the generated protocol (examples/peers/pipeline_ptx.cu
// runs the generated PTX itself); leaving one out at a time, or adding
// one at a time, says what each costs.
//
//   F_STATE      each slot has a state word (1 open, 0 closed); a receiver reads it after its
//                wait on the full barrier, predicated on the wait's success, and leaves when 0.
//   F_WARPWAIT   the load and store roles run on all 32 lanes: every lane waits, the warp goes
//                on when all saw the phase (vote), one lane issues the bulk copy; the store's
//                wait_group.read runs on every lane, then __syncwarp, then one lane arrives.
//   F_VOTE       the transform's waits: every lane tries, the warp goes on when all saw it.
//   F_ORDER      the transform waits for its input before its output slot, and arrives on the
//                output's full barrier before the input's empty one (two __syncwarp).
//   F_LATEARRIVE the load role sets expect_tx (no arrive), issues the copy, then arrives.
//   F_CHECKS     the load and store roles compute each tile's range with 64-bit bounds and
//                slice checks and the 16-byte split after their wait, as the generated code does.
//   F_CANCEL     every role reads the abort word at its start and every 32 iterations (the
//                generated code reads the word first at the 16th iteration, then every 16th,
//                and tests it 16 iterations later).
//   F_CLOSE      the roles do not count tiles: the load role ends with an end-of-stream marker
//                that takes a slot (state 0), the transform passes one on through the output
//                ring, the store leaves when it sees it. Needs F_STATE.
//   F_READEND    not a difference but a candidate for both: the store role ends with
//                cp.async.bulk.wait_group.read 0 (its copies have read their slots) instead of
//                wait_group 0 (their writes are done too); the kernel's end completes the writes.
//
// Every variant is built with __launch_bounds__(192, 9): 32 registers, so that 9 blocks fit an SM,
// as they do for the peer (32 registers) and the generated kernel (`.minnctapersm 9`, 28).
//
// Random inputs, every element of y checked bit-exactly (y poisoned first) at n and at 2^20 + 37
// for every variant; 3 warm-ups and the median of 20 launches between events, in every round;
// the variants and grids interleave within a round. Bytes: 8 per element.
//
//   nvcc -O3 -arch=sm_90 -o pipeline_ablation examples/peers/pipeline_ablation.cu
//   pipeline_ablation [elements, default 2^28] [rounds, default 3]
#include "pipeline_ablation.cuh"

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (size_t(1) << 28);
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  const size_t n_small = (size_t(1) << 20) + 37;
  const size_t cap = std::max(n, n_small);
  const int sms = sm_count();
  std::vector<float> hx(cap), hy(cap);
  random_fill(hx, 7);
  float *x, *y;
  unsigned* abort_word;
  CHECK(cudaMalloc(&x, cap * 4));
  CHECK(cudaMalloc(&y, cap * 4));
  CHECK(cudaMalloc(&abort_word, 4));
  CHECK(cudaMemset(abort_word, 0, 4));
  CHECK(cudaMemcpy(x, hx.data(), cap * 4, cudaMemcpyHostToDevice));

  // The peer, each flag alone, all of them, all but each one.
  std::vector<Variant> variants = {
      variant<0>(),
      variant<F_STATE>(),
      variant<F_WARPWAIT>(),
      variant<F_VOTE>(),
      variant<F_ORDER>(),
      variant<F_LATEARRIVE>(),
      variant<F_CHECKS>(),
      variant<F_CANCEL>(),
      variant<F_STATE | F_CLOSE>(),
      variant<F_ALL>(),
      variant<F_ALL & ~F_STATE & ~F_CLOSE>(),
      variant<F_ALL & ~F_WARPWAIT>(),
      variant<F_ALL & ~F_VOTE>(),
      variant<F_ALL & ~F_ORDER>(),
      variant<F_ALL & ~F_LATEARRIVE>(),
      variant<F_ALL & ~F_CHECKS>(),
      variant<F_ALL & ~F_CANCEL>(),
      variant<F_ALL & ~F_CLOSE>(),
      variant<F_READEND>(),
      variant<F_ALL | F_READEND>(),
  };
  // Grids: one block per 8 tiles (the example's default), 2 blocks per SM.
  const int grids[] = {-8, 2};
  auto blocks_of = [&](int grid) {
    return grid > 0 ? grid * sms : (int)((n + (size_t)TILE * -grid - 1) / ((size_t)TILE * -grid));
  };
  auto grid_name = [](int grid) {
    return grid > 0 ? std::to_string(grid) + "/SM" : "1 block per " + std::to_string(-grid) + " tiles";
  };

  size_t failures = 0;
  int check_no = 0;
  auto check = [&](Kernel k, int blocks, size_t m) {
    const float a = 0.75f + (float)(check_no % 5), b = -0.25f - 0.125f * (float)(check_no % 7);
    ++check_no;
    return affine_mismatches(a, b, m, hx, y, hy, [&] { k<<<blocks, THREADS, SMEM>>>(a, b, x, y, m, abort_word, 1); });
  };

  for (auto& v : variants) {
    CHECK(cudaFuncSetAttribute(v.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM));
    int fit = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, v.kernel, THREADS, SMEM));
    cudaFuncAttributes attr;
    CHECK(cudaFuncGetAttributes(&attr, v.kernel));
    // Every grid of the small size, the default grid at n.
    size_t bad = check(v.kernel, blocks_of(2), n_small) + check(v.kernel, 3, n_small) + check(v.kernel, blocks_of(-8), n);
    failures += bad;
    std::printf("ablation: %-44s flags %3d, %d registers, %d blocks/SM fit, mismatches %zu\n", describe(v.flags).c_str(), v.flags,
                attr.numRegs, fit, bad);
  }

  std::map<std::pair<int, int>, std::vector<double>> gbs;  // (variant index, grid) -> GB/s per round
  for (int round = 0; round < rounds; ++round) {
    for (int grid : grids) {
      for (size_t vi = 0; vi < variants.size(); ++vi) {
        Kernel k = variants[vi].kernel;
        const int blocks = blocks_of(grid);
        float ms = median_ms([&] { k<<<blocks, THREADS, SMEM>>>(2.0f, 1.0f, x, y, n, abort_word, 1); });
        gbs[{(int)vi, grid}].push_back(gb_per_s(8.0 * n, ms));
      }
    }
  }
  std::printf("ablation: %zu elements, %d rounds, GB/s per round, and the median's ratio to the peer's median\n", n, rounds);
  for (int grid : grids) {
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double peer = median(gbs[{0, grid}]);
    std::printf("ablation: grid %s (%d blocks)\n", grid_name(grid).c_str(), blocks_of(grid));
    for (size_t vi = 0; vi < variants.size(); ++vi) {
      std::string runs;
      for (double g : gbs[{(int)vi, grid}]) runs += " " + std::to_string((int)(g + 0.5));
      std::printf("ablation:   %-44s%s  ratio %.3f\n", describe(variants[vi].flags).c_str(), runs.c_str(),
                  median(gbs[{(int)vi, grid}]) / peer);
    }
  }
  std::printf("ablation: %s, %zu mismatches in all\n", failures == 0 ? "all checks passed" : "CHECKS FAILED", failures);
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  CHECK(cudaFree(abort_word));
  return failures == 0 ? 0 : 1;
}
