// The pipeline peer of pipeline_ws.cu (TILE 1024, 4 input slots, 2 output slots, LAG 0) with each
// difference of the kernel gpu-async generates for examples/pipeline.rs as a flag (the flags are
// described in pipeline_ablation.cu). Shared by pipeline_ablation.cu and pipeline_ptx.cu.
#pragma once
#include <map>
#include <string>
#include "peer_common.cuh"

enum : int {
  F_STATE = 1,
  F_WARPWAIT = 2,
  F_VOTE = 4,
  F_ORDER = 8,
  F_LATEARRIVE = 16,
  F_CHECKS = 32,
  F_CANCEL = 64,
  F_CLOSE = 128,
  F_ALL = 255,  // the generated protocol
  F_READEND = 256,
};
static const char* const FLAG_NAMES[] = {"state", "warpwait", "vote", "order", "latearrive", "checks", "cancel", "close", "readend"};

constexpr int TILE = 1024, DEPTH = 4, ODEPTH = 2, XWARPS = 4, THREADS = 32 * (XWARPS + 2);
constexpr size_t SMEM = (size_t)(DEPTH + ODEPTH) * TILE * 4 + (2 * DEPTH + 2 * ODEPTH) * 8 + (DEPTH + ODEPTH) * 4;

__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t* b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive_tx(uint64_t* b, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* b, unsigned bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* b) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(smem_addr(b)) : "memory");
}
__device__ __forceinline__ bool mbar_try(uint64_t* b, unsigned parity) {
  unsigned ok;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(ok)
      : "r"(smem_addr(b)), "r"(parity)
      : "memory");
  return ok != 0;
}
// The peer's wait: this thread spins until it sees the phase.
__device__ __forceinline__ void mbar_wait(uint64_t* b, unsigned parity) {
  asm volatile(
      "{\n .reg .pred p;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra WAIT_%=;\n}\n" ::"r"(
          smem_addr(b)),
      "r"(parity)
      : "memory");
}
// The generated wait: every lane tries, the warp goes on when all of them saw the phase.
__device__ __forceinline__ void warp_wait(uint64_t* b, unsigned parity) {
  while (!__all_sync(~0u, mbar_try(b, parity))) {
  }
}
template <bool VOTE>
__device__ __forceinline__ void wait(uint64_t* b, unsigned parity) {
  if (VOTE) warp_wait(b, parity);
  else mbar_wait(b, parity);
}
__device__ __forceinline__ unsigned ld_shared(const unsigned* p) {
  unsigned v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(smem_addr(p)) : "memory");
  return v;
}
__device__ __forceinline__ void st_shared(unsigned* p, unsigned v) {
  asm volatile("st.shared.u32 [%0], %1;" ::"r"(smem_addr(p)), "r"(v) : "memory");
}
__device__ __forceinline__ void bulk_g2s(void* dst, const void* src, unsigned bytes, uint64_t* b) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(b))
               : "memory");
}
__device__ __forceinline__ void bulk_s2g(void* dst, const void* src, unsigned bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(smem_addr(src)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
__device__ __forceinline__ void bulk_wait_read0() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ unsigned ld_volatile(const unsigned* p) {
  unsigned v;
  asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ float f(float a, float b, float x) { return __fadd_rn(__fmul_rn(a, x), b); }
__device__ __forceinline__ float4 f4(float a, float b, float4 v) {
  return make_float4(f(a, b, v.x), f(a, b, v.y), f(a, b, v.z), f(a, b, v.w));
}

// A tile's range as the generated code computes it (F_CHECKS): 64-bit bounds, the slice checks,
// and the bulk part (a multiple of 16 bytes, none when the address is not 16-byte aligned).
struct Range {
  size_t base;
  unsigned len, bulk_bytes;
};
template <bool CHECKS>
__device__ __forceinline__ Range tile_range(size_t t, size_t n, const void* array) {
  const size_t base = t * TILE;
  if (CHECKS) {
    const size_t end = min(base + TILE, n);
    if (base > end) __trap();
    if (end > n) __trap();
    const size_t len = end - base;
    if (len > TILE) __trap();
    const size_t bytes = (len * 4) & ~(size_t)15;
    const bool aligned = (((size_t)array + base * 4) & 15) == 0;
    return Range{base, (unsigned)len, (unsigned)(aligned ? bytes : 0)};
  }
  const unsigned len = n - base < (size_t)TILE ? (unsigned)(n - base) : (unsigned)TILE;
  return Range{base, len, (len & ~3u) * 4};
}

// Polls the abort word every 32 iterations (F_CANCEL); true when the launch must stop.
struct CancelPoll {
  const unsigned* word;
  unsigned id, seen, iter;
  __device__ bool stop() {
    if ((++iter & 31) != 0) return false;
    const bool hit = seen == id;
    seen = ld_volatile(word);
    return hit;
  }
};

template <int F>
__global__ void __launch_bounds__(THREADS, 9) pipeline_ablation(float a, float b, const float* __restrict__ x,
                                                              float* __restrict__ y, size_t n, const unsigned* abort_word,
                                                              unsigned launch_id) {
  constexpr bool STATE = F & F_STATE, WARPWAIT = F & F_WARPWAIT, VOTE = F & F_VOTE, ORDER = F & F_ORDER;
  constexpr bool LATE = F & F_LATEARRIVE, CHECKS = F & F_CHECKS, CANCEL = F & F_CANCEL, CLOSE = F & F_CLOSE;
  constexpr bool READEND = F & F_READEND;
  static_assert(!CLOSE || STATE, "F_CLOSE needs F_STATE");
  extern __shared__ __align__(128) unsigned char sm[];
  float* in = (float*)sm;
  float* out = in + DEPTH * TILE;
  uint64_t* in_full = (uint64_t*)(out + ODEPTH * TILE);
  uint64_t* in_empty = in_full + DEPTH;
  uint64_t* out_full = in_empty + DEPTH;
  uint64_t* out_empty = out_full + ODEPTH;
  unsigned* in_state = (unsigned*)(out_empty + ODEPTH);
  unsigned* out_state = in_state + DEPTH;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const size_t ntiles = (n + TILE - 1) / TILE;
  if (threadIdx.x == 0) {
    for (int s = 0; s < DEPTH; ++s) { mbar_init(&in_full[s], 1); mbar_init(&in_empty[s], XWARPS); in_state[s] = 1; }
    for (int s = 0; s < ODEPTH; ++s) { mbar_init(&out_full[s], XWARPS); mbar_init(&out_empty[s], 1); out_state[s] = 1; }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  CancelPoll cancel{abort_word, launch_id, CANCEL ? ld_volatile(abort_word) : 0u, 0};

  if (warp == 0) {
    // Load role.
    if (!WARPWAIT && lane != 0) return;
    unsigned i = 0;
    for (size_t t = blockIdx.x; t < ntiles; t += gridDim.x, ++i) {
      const unsigned s = i % DEPTH, ph = (i / DEPTH) & 1;
      if (WARPWAIT) warp_wait(&in_empty[s], ph ^ 1);
      else mbar_wait(&in_empty[s], ph ^ 1);
      const Range r = tile_range<CHECKS>(t, n, x);
      if (lane == 0) {
        if (LATE) {
          if (r.bulk_bytes) {
            mbar_expect_tx(&in_full[s], r.bulk_bytes);
            bulk_g2s(in + s * TILE, x + r.base, r.bulk_bytes, &in_full[s]);
          }
        } else {
          mbar_arrive_tx(&in_full[s], r.bulk_bytes);
          if (r.bulk_bytes) bulk_g2s(in + s * TILE, x + r.base, r.bulk_bytes, &in_full[s]);
        }
      }
      if (LATE) {
        if (WARPWAIT) __syncwarp();
        if (lane == 0) mbar_arrive(&in_full[s]);
      }
      if (CANCEL && cancel.stop()) return;
    }
    if (CLOSE) {
      const unsigned s = i % DEPTH, ph = (i / DEPTH) & 1;
      if (WARPWAIT) warp_wait(&in_empty[s], ph ^ 1);
      else mbar_wait(&in_empty[s], ph ^ 1);
      if (lane == 0) {
        st_shared(&in_state[s], 0);
        mbar_arrive(&in_full[s]);
      }
    }
  } else if (warp <= XWARPS) {
    // Transform role.
    const int ct = threadIdx.x - 32;
    unsigned i = 0;
    size_t t = blockIdx.x;
    for (;; t += gridDim.x, ++i) {
      if (!CLOSE && t >= ntiles) break;
      const unsigned s = i % DEPTH, ph = (i / DEPTH) & 1;
      const unsigned os = i % ODEPTH, oph = (i / ODEPTH) & 1;
      if (!ORDER) wait<VOTE>(&out_empty[os], oph ^ 1);
      wait<VOTE>(&in_full[s], ph);
      if (STATE && ld_shared(&in_state[s]) == 0) {
        if (CLOSE) {
          // Pass the end of the stream on: it takes an output slot.
          if (ORDER) wait<VOTE>(&out_empty[os], oph ^ 1);
          if (ct == 0) st_shared(&out_state[os], 0);
          __syncwarp();
          if (lane == 0) mbar_arrive(&out_full[os]);
        }
        break;
      }
      if (ORDER) wait<VOTE>(&out_empty[os], oph ^ 1);
      const size_t base = t * TILE;
      const unsigned len = n - base < (size_t)TILE ? (unsigned)(n - base) : (unsigned)TILE;
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
        const unsigned r = len4 * 4 + ct;
        if (r < len) out[os * TILE + r] = f(a, b, x[base + r]);
      }
      fence_proxy_async();
      __syncwarp();
      if (ORDER) {
        if (lane == 0) mbar_arrive(&out_full[os]);
        __syncwarp();
        if (lane == 0) mbar_arrive(&in_empty[s]);
      } else if (lane == 0) {
        mbar_arrive(&in_empty[s]);
        mbar_arrive(&out_full[os]);
      }
      if (CANCEL && cancel.stop()) return;
    }
  } else {
    // Store role.
    if (!WARPWAIT && lane != 0) return;
    unsigned i = 0;
    size_t t = blockIdx.x;
    for (;; t += gridDim.x, ++i) {
      if (!CLOSE && t >= ntiles) break;
      const unsigned os = i % ODEPTH, oph = (i / ODEPTH) & 1;
      if (WARPWAIT) warp_wait(&out_full[os], oph);
      else mbar_wait(&out_full[os], oph);
      if (STATE && ld_shared(&out_state[os]) == 0) break;
      const Range r = tile_range<CHECKS>(t, n, y);
      const float* src = out + os * TILE;
      if (lane == 0) {
        if (r.bulk_bytes) bulk_s2g(y + r.base, src, r.bulk_bytes);
        for (unsigned k = r.bulk_bytes / 4; k < r.len; ++k) y[r.base + k] = src[k];
        bulk_commit();
      }
      bulk_wait_read0();
      if (WARPWAIT) __syncwarp();
      if (lane == 0) mbar_arrive(&out_empty[os]);
      if (CANCEL && cancel.stop()) return;
    }
    if (READEND) bulk_wait_read0();
    else bulk_wait_all();
  }
}

using Kernel = void (*)(float, float, const float*, float*, size_t, const unsigned*, unsigned);
struct Variant {
  int flags;
  Kernel kernel;
};
template <int F>
static Variant variant() {
  return Variant{F, pipeline_ablation<F>};
}

static std::string flag_list(int flags, const char* sep) {
  std::string s;
  for (int k = 0; k < 9; ++k)
    if (flags & (1 << k)) s += (s.empty() ? "" : sep) + std::string(FLAG_NAMES[k]);
  return s.empty() ? "none" : s;
}
static std::string describe(int flags) {
  if (flags & F_READEND) return describe(flags & ~F_READEND) + ", readend";
  if (flags == 0) return "the peer";
  if (flags == F_ALL) return "all (the generated protocol)";
  if (__builtin_popcount(flags) >= 6) return "all but " + flag_list(F_ALL & ~flags, ", ");
  return "peer + " + flag_list(flags, ", ");
}

