// The peer of examples/handoff.rs: the same producer/consumer handoff written by hand
// with raw mbarriers (phase parity, one arrival per warp, expect_tx for the bulk copy), and with
// __syncthreads. One block of two warps; the consumer reads one element of each slot. Built on
// the GPU machine with nvcc -O3 -arch=sm_90 by scripts/h200-peers.sh; prints ns per item
// (median of 10 event-timed launches after 2 warm-ups) and checks the consumer's sum.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CHECK(call)                                                                 \
  do {                                                                              \
    cudaError_t e_ = (call);                                                        \
    if (e_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_));      \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t* b, unsigned n) { asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem(b)), "r"(n)); }
__device__ __forceinline__ void mbar_arrive(uint64_t* b) { asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" :: "r"(smem(b)) : "memory"); }
__device__ __forceinline__ void mbar_arrive_tx(uint64_t* b, unsigned bytes) { asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" :: "r"(smem(b)), "r"(bytes) : "memory"); }
__device__ __forceinline__ void mbar_wait(uint64_t* b, unsigned parity) {
  asm volatile("{\n .reg .pred p;\n W_%=:\n mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%0], %1;\n @!p bra W_%=;\n}\n" :: "r"(smem(b)), "r"(parity) : "memory");
}
__device__ __forceinline__ void bulk_g2s(void* dst, const void* src, unsigned bytes, uint64_t* b) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" :: "r"(smem(dst)), "l"(src), "r"(bytes), "r"(smem(b)) : "memory");
}

// The producer's item `i` into a slot of LEN u32, by the warp's lanes: 16 bytes per lane per step
// for 512-byte payloads, one u32 per lane below that.
template <int LEN>
__device__ __forceinline__ void fill_slot(unsigned* slot, unsigned i, int lane) {
  if (LEN >= 128) {
    for (int k = lane; k < LEN / 4; k += 32) ((uint4*)slot)[k] = make_uint4(i, i, i, i);
  } else if (lane < LEN) {
    slot[lane] = i;
  }
}

// LEN u32 per slot; BULK: the producer's lane 0 copies the slot from `src` with cp.async.bulk.
template <int LEN, int DEPTH, bool BULK>
__global__ void __launch_bounds__(64) handoff_mbarrier(unsigned items, const unsigned* src, unsigned* out) {
  constexpr int STRIDE = ((LEN * 4 + 127) / 128) * 128;
  extern __shared__ __align__(128) unsigned char sm[];
  uint64_t* full = (uint64_t*)(sm + DEPTH * STRIDE);
  uint64_t* empty = full + DEPTH;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < DEPTH; ++s) { mbar_init(&full[s], 1); mbar_init(&empty[s], 1); }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (warp == 0) {
    for (unsigned i = 0; i < items; ++i) {
      unsigned s = i % DEPTH, ph = (i / DEPTH) & 1;
      unsigned* slot = (unsigned*)(sm + s * STRIDE);
      mbar_wait(&empty[s], ph ^ 1);
      if (BULK) {
        if (lane == 0) { mbar_arrive_tx(&full[s], LEN * 4); bulk_g2s(slot, src, LEN * 4, &full[s]); }
      } else {
        fill_slot<LEN>(slot, i, lane);
        __syncwarp();
        if (lane == 0) mbar_arrive(&full[s]);
      }
    }
  } else {
    unsigned acc = 0;
    for (unsigned i = 0; i < items; ++i) {
      unsigned s = i % DEPTH, ph = (i / DEPTH) & 1;
      const unsigned* slot = (const unsigned*)(sm + s * STRIDE);
      mbar_wait(&full[s], ph);
      acc += slot[0];
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[s]);
    }
    if (lane == 0) out[0] = acc;
  }
}

// The same with __syncthreads: depth 1 needs two barriers per item, depth 2 (double buffer) one.
template <int LEN, int DEPTH>
__global__ void __launch_bounds__(64) handoff_syncthreads(unsigned items, unsigned* out) {
  __shared__ __align__(16) unsigned buf[DEPTH][LEN];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  unsigned acc = 0;
  for (unsigned i = 0; i <= items; ++i) {
    if (warp == 0 && i < items) {
      fill_slot<LEN>(buf[i % DEPTH], i, lane);
    }
    if (DEPTH == 1) {
      __syncthreads();
      if (warp == 1 && i < items) acc += buf[0][0];
      __syncthreads();
    } else {
      __syncthreads();
      if (warp == 1 && i >= 1) acc += buf[(i - 1) % DEPTH][0];
    }
  }
  if (warp == 1 && lane == 0) out[0] = acc;
}

// The same handoff with the generated channel's protocol, written by hand as well as we know
// how: the receiver learns the end of the stream from the channel (a state word per slot, 1 = an
// item, 0 = the end marker, which the sender's close writes into a slot of its own, as `Sender`'s
// drop does); both sides watch an abort word (the host's cancel, another thread's panic) every
// 32nd round of the ring and every 16th failed test of a wait, and a watchdog on %globaltimer in
// a wait that spins; waits decide for the whole warp (__all_sync), so that a warp leaves a wait
// together. It uses the tricks the generated code uses, so that it measures the protocol and
// not the compiler: the loop unrolled over the ring's slots (slot addresses are constants), the
// abort word read one check ahead (a global load never stalls the loop), and the state word
// loaded in the same asm block as the phase test, predicated on it (the load cannot pass the
// wait, and it overlaps the vote).
// One test of the phase, made warp-uniform (all lanes passed); with it, where it passed, the
// slot's state word (`st`, a shared address; the load waits for the test).
__device__ __forceinline__ bool warp_test_state(unsigned bar, unsigned parity, unsigned st, unsigned& state) {
  unsigned ok;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%2], %3;\n @p ld.shared.u32 %1, [%4];\n"
      " vote.sync.all.pred p, p, -1;\n selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(ok), "+r"(state)
      : "r"(bar), "r"(parity), "r"(st)
      : "memory");
  return ok != 0;
}
__device__ __forceinline__ bool warp_test(unsigned bar, unsigned parity) {
  unsigned ok;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n vote.sync.all.pred p, p, -1;\n"
      " selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
  return ok != 0;
}
__device__ __forceinline__ bool warp_any(bool c) {
  unsigned r;
  asm volatile("{\n .reg .pred p;\n setp.ne.u32 p, %1, 0;\n vote.sync.any.pred p, p, -1;\n selp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(r) : "r"((unsigned)c));
  return r != 0;
}
__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void arrive32(unsigned bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ unsigned lds32(unsigned addr) {
  unsigned v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void sts32(unsigned addr, unsigned v) {
  asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}

// The slow part of a wait, after a failed first test: false when the launch was aborted or the
// watchdog fired meanwhile. `st` (0: none): the state word to load once the phase completed.
__device__ __forceinline__ bool wait_slow(unsigned bar, unsigned parity, unsigned st, unsigned& state,
                                          const volatile unsigned* abort_word, unsigned id, unsigned& ahead) {
  unsigned long long deadline = 0;
  for (unsigned spins = 1;; ++spins) {
    if (warp_test(bar, parity)) {
      if (st) state = lds32(st);
      return true;
    }
    if ((spins & 15) == 0) {
      if (warp_any(ahead == id)) return false;
      ahead = *abort_word;
      unsigned long long now = globaltimer();
      if (deadline == 0) deadline = now + 1000000000ull;
      if (warp_any(now > deadline)) return false;
    }
  }
}

template <int LEN, int DEPTH, bool BULK>
__global__ void __launch_bounds__(64) handoff_protocol(unsigned items, const unsigned* src, unsigned* out,
                                                      const volatile unsigned* abort_word, unsigned id) {
  constexpr int STRIDE = ((LEN * 4 + 127) / 128) * 128;
  extern __shared__ __align__(128) unsigned char sm[];
  // 32-bit shared addresses: slots, then the full and empty barriers, then the state words.
  const unsigned base = smem(sm), full = base + DEPTH * STRIDE, empty = full + 8 * DEPTH, states = empty + 8 * DEPTH;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < DEPTH; ++s) {
      mbar_init((uint64_t*)(sm + DEPTH * STRIDE) + s, 1);
      mbar_init((uint64_t*)(sm + DEPTH * STRIDE) + DEPTH + s, 1);
      sts32(states + 4 * s, 1);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  unsigned ahead = *abort_word;  // the abort word as read at the last check
  unsigned unused = 0;
  if (warp == 0) {
    unsigned i = 0, ph = 0;
    for (unsigned round = 0;; ++round) {
#pragma unroll
      for (int s = 0; s < DEPTH; ++s) {
        const unsigned e = empty + 8 * s, f = full + 8 * s;
        if (!warp_test(e, ph ^ 1) && !wait_slow(e, ph ^ 1, 0, unused, abort_word, id, ahead)) return;
        if (i == items) {
          // The end marker takes a slot.
          if (lane == 0) sts32(states + 4 * s, 0);
          __syncwarp();
          if (lane == 0) arrive32(f);
          return;
        }
        unsigned* slot = (unsigned*)(sm + s * STRIDE);
        if (BULK) {
          if (lane == 0) {
            mbar_arrive_tx((uint64_t*)(sm + DEPTH * STRIDE) + s, LEN * 4);
            bulk_g2s(slot, src, LEN * 4, (uint64_t*)(sm + DEPTH * STRIDE) + s);
          }
        } else {
          fill_slot<LEN>(slot, i, lane);
          __syncwarp();
          if (lane == 0) arrive32(f);
        }
        ++i;
      }
      ph ^= 1;
      if ((round & 31) == 31) {
        if (warp_any(ahead == id)) return;
        ahead = *abort_word;
      }
    }
  } else {
    unsigned acc = 0, ph = 0;
    for (unsigned round = 0;; ++round) {
#pragma unroll
      for (int s = 0; s < DEPTH; ++s) {
        const unsigned f = full + 8 * s, st = states + 4 * s;
        unsigned state = 1;
        if (!warp_test_state(f, ph, st, state) && !wait_slow(f, ph, st, state, abort_word, id, ahead)) return;
        if (state == 0) {
          if (lane == 0) out[0] = acc;
          return;
        }
        acc += lds32(base + s * STRIDE);
        __syncwarp();
        if (lane == 0) arrive32(empty + 8 * s);
      }
      ph ^= 1;
      if ((round & 31) == 31) {
        if (warp_any(ahead == id)) return;
        ahead = *abort_word;
      }
    }
  }
}

template <class F>
static float median_ms(F launch) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 2; ++i) launch();
  CHECK(cudaDeviceSynchronize());
  std::vector<float> t;
  for (int r = 0; r < 10; ++r) {
    CHECK(cudaEventRecord(a));
    launch();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

static unsigned expected(unsigned items) {
  unsigned s = 0;
  for (unsigned i = 0; i < items; ++i) s += i;
  return s;
}

template <int LEN, int DEPTH, bool BULK>
static void run_mbarrier(const char* name, unsigned items, const unsigned* src, unsigned* out, double mhz) {
  constexpr int STRIDE = ((LEN * 4 + 127) / 128) * 128;
  size_t shm = DEPTH * STRIDE + 16 * DEPTH;
  auto k = handoff_mbarrier<LEN, DEPTH, BULK>;
  CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm));
  auto launch = [&] { k<<<1, 64, shm>>>(items, src, out); };
  float ms = median_ms(launch);
  CHECK(cudaGetLastError());
  unsigned got;
  CHECK(cudaMemcpy(&got, out, 4, cudaMemcpyDeviceToHost));
  unsigned want = BULK ? 0 : expected(items);
  double ns = ms * 1e6 / items;
  std::printf("peer handoff mbarrier %s: %.1f ns per item, %.0f cycles at %.0f MHz%s\n", name, ns, ns * mhz / 1000.0, mhz,
              got == want ? "" : "  WRONG SUM");
}

template <int LEN, int DEPTH, bool BULK>
static void run_protocol(const char* name, unsigned items, const unsigned* src, unsigned* out, const unsigned* abort_word, double mhz) {
  constexpr int STRIDE = ((LEN * 4 + 127) / 128) * 128;
  size_t shm = DEPTH * STRIDE + 16 * DEPTH + 4 * DEPTH;
  auto k = handoff_protocol<LEN, DEPTH, BULK>;
  CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm));
  CHECK(cudaMemset(out, 0xff, 4));
  auto launch = [&] { k<<<1, 64, shm>>>(items, src, out, abort_word, 1u); };
  float ms = median_ms(launch);
  CHECK(cudaGetLastError());
  unsigned got;
  CHECK(cudaMemcpy(&got, out, 4, cudaMemcpyDeviceToHost));
  unsigned want = BULK ? 0 : expected(items);
  double ns = ms * 1e6 / items;
  std::printf("peer handoff same protocol %s: %.1f ns per item, %.0f cycles at %.0f MHz%s\n", name, ns, ns * mhz / 1000.0, mhz,
              got == want ? "" : "  WRONG SUM");
}

template <int LEN, int DEPTH>
static void run_sync(const char* name, unsigned items, unsigned* out, double mhz) {
  auto launch = [&] { handoff_syncthreads<LEN, DEPTH><<<1, 64>>>(items, out); };
  float ms = median_ms(launch);
  CHECK(cudaGetLastError());
  unsigned got;
  CHECK(cudaMemcpy(&got, out, 4, cudaMemcpyDeviceToHost));
  double ns = ms * 1e6 / items;
  std::printf("peer handoff __syncthreads %s: %.1f ns per item, %.0f cycles at %.0f MHz%s\n", name, ns, ns * mhz / 1000.0, mhz,
              got == expected(items) ? "" : "  WRONG SUM");
}

int main(int argc, char** argv) {
  unsigned items = argc > 1 ? (unsigned)std::atoll(argv[1]) : 100000;
  double mhz = argc > 2 ? std::atof(argv[2]) : 1980.0;
  unsigned *src, *out;
  CHECK(cudaMalloc(&src, 4096 * 4));
  CHECK(cudaMemset(src, 0, 4096 * 4));
  CHECK(cudaMalloc(&out, 4));
  run_mbarrier<1, 1, false>("4 B, depth 1", items, src, out, mhz);
  run_mbarrier<1, 2, false>("4 B, depth 2", items, src, out, mhz);
  run_mbarrier<1, 4, false>("4 B, depth 4", items, src, out, mhz);
  run_mbarrier<128, 1, false>("512 B (16 B per lane), depth 1", items, src, out, mhz);
  run_mbarrier<128, 2, false>("512 B (16 B per lane), depth 2", items, src, out, mhz);
  run_mbarrier<128, 4, false>("512 B (16 B per lane), depth 4", items, src, out, mhz);
  run_mbarrier<4096, 1, true>("16 KiB bulk copy, depth 1", items, src, out, mhz);
  run_mbarrier<4096, 2, true>("16 KiB bulk copy, depth 2", items, src, out, mhz);
  run_mbarrier<4096, 4, true>("16 KiB bulk copy, depth 4", items, src, out, mhz);
  unsigned* abort_word;
  CHECK(cudaMalloc(&abort_word, 4));
  CHECK(cudaMemset(abort_word, 0, 4));
  run_protocol<1, 1, false>("4 B, depth 1", items, src, out, abort_word, mhz);
  run_protocol<1, 2, false>("4 B, depth 2", items, src, out, abort_word, mhz);
  run_protocol<1, 4, false>("4 B, depth 4", items, src, out, abort_word, mhz);
  run_protocol<128, 1, false>("512 B (16 B per lane), depth 1", items, src, out, abort_word, mhz);
  run_protocol<128, 2, false>("512 B (16 B per lane), depth 2", items, src, out, abort_word, mhz);
  run_protocol<128, 4, false>("512 B (16 B per lane), depth 4", items, src, out, abort_word, mhz);
  run_protocol<4096, 1, true>("16 KiB bulk copy, depth 1", items, src, out, abort_word, mhz);
  run_protocol<4096, 2, true>("16 KiB bulk copy, depth 2", items, src, out, abort_word, mhz);
  run_protocol<4096, 4, true>("16 KiB bulk copy, depth 4", items, src, out, abort_word, mhz);
  run_sync<1, 1>("4 B, depth 1", items, out, mhz);
  run_sync<1, 2>("4 B, depth 2", items, out, mhz);
  run_sync<128, 1>("512 B (16 B per lane), depth 1", items, out, mhz);
  run_sync<128, 2>("512 B (16 B per lane), depth 2", items, out, mhz);
  return 0;
}
