//! Local arrays: constant-indexed ones live in registers, run-time-indexed ones in the thread's
//! local memory; both in role code and in parallel bodies, passed to helper fns and copied.

use gpu_async::gpu_async;

#[gpu_async]
pub mod arrays {
    use gpu_async::device::*;

    pub const TAPS: usize = 5;

    /// A table in constant memory, read with constant and run-time indexes.
    pub static GAIN: [f32; 8] = [0.5, 1.0, 1.5, 2.0, -0.5, -1.0, 0.25, 4.0];

    #[kernel(warps = 2)]
    pub async fn stencil(x: &[f32], k: &[u32], y: &mut [f32], z: &mut [u32]) {
        join!(on_warps(0..2, body(x, k, y, z))).await;
    }

    /// A weighted sum of five neighbours with weights from a constant-indexed array.
    fn weigh(w: [f32; TAPS], v: [f32; TAPS]) -> f32 {
        let mut acc = 0.0;
        acc += w[0] * v[0];
        acc += w[1] * v[1];
        acc += w[2] * v[2];
        acc += w[3] * v[3];
        acc += w[4] * v[4];
        acc
    }

    async fn body(x: &[f32], k: &[u32], y: &mut [f32], z: &mut [u32]) {
        // Role code: a table built once, read with run-time indexes in the loop below.
        let mut table = [0u32; 16];
        for i in 0..16 {
            table[i] = (i as u32 * 2_654_435_761) >> 7;
        }
        let weights = [0.1f32, 0.2, 0.4, 0.2, 0.1];
        let n = x.len();
        y.par_iter_mut()
            .zip(x.par_iter())
            .enumerate()
            .for_each(|(i, (o, v))| {
                let mut window = [*v; TAPS];
                window[0] = *v * 0.5;
                window[4] = *v + (i % 7) as f32;
                let copy = window;
                window[2] = 100.0;
                *o = weigh(weights, copy) + window[2] * (n as f32) * 0.0;
            });
        z.par_iter_mut().zip(k.par_iter()).for_each(|(o, v)| {
            // A per-thread scratch array indexed at run time: local memory.
            let mut hist = [0u32; 8];
            let mut bits = *v;
            for _ in 0..8 {
                hist[(bits & 7) as usize] += 1;
                bits >>= 3;
            }
            let mut best = 0u32;
            for j in 0..8 {
                best = best.max(hist[j] * 16 + j as u32);
            }
            let g = GAIN[(*v % 8) as usize] * GAIN[3];
            *o = (best ^ table[(*v % 16) as usize]).wrapping_add(g as u32);
        });
    }
}

/// Tuples: built, destructured, returned from helpers (also through an early `return`).
#[gpu_async]
pub mod tuples {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn pairs(x: &[f32], y: &mut [f32], z: &mut [u32]) {
        join!(on_warps(0..1, body(x, y, z))).await;
    }

    fn order(a: f32, b: f32) -> (f32, f32) {
        if a < b {
            return (a, b);
        }
        (b, a)
    }

    fn split(v: u32) -> (u32, u32, u32) {
        (v & 255, (v >> 8) & 255, v >> 16)
    }

    async fn body(x: &[f32], y: &mut [f32], z: &mut [u32]) {
        let scale = (2.0, 3);
        y.par_iter_mut().zip(x.par_iter()).for_each(|(o, v)| {
            let (lo, hi) = order(*v, 0.5);
            let t = (lo * scale.0, hi);
            *o = t.0 + t.1 * scale.1 as f32;
        });
        z.par_iter_mut().zip(x.par_iter()).for_each(|(o, v)| {
            let (a, _, c) = split(v.to_bits());
            *o = a * 3 + c;
        });
    }
}

/// Structs: a kernel parameter, locals built and updated field by field, helper arguments and
/// results.
#[gpu_async]
pub mod structs {
    use gpu_async::device::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Affine {
        pub scale: f32,
        pub shift: f32,
        pub clamp_at: i32,
    }

    #[kernel(warps = 2)]
    pub async fn apply(t: Affine, x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..2, body(t, x, y))).await;
    }

    fn compose(a: Affine, b: Affine) -> Affine {
        Affine {
            scale: a.scale * b.scale,
            shift: a.shift * b.scale + b.shift,
            clamp_at: a.clamp_at.min(b.clamp_at),
        }
    }

    async fn body(t: Affine, x: &[f32], y: &mut [f32]) {
        let mut twice = compose(t, t);
        twice.shift += 1.0;
        y.par_iter_mut().zip(x.par_iter()).for_each(|(o, v)| {
            let r = *v * twice.scale + twice.shift;
            *o = r.min(twice.clamp_at as f32);
        });
    }
}

/// A generic helper, instantiated for `u8`, `i64` and `f32` (wrapping arithmetic in each).
#[gpu_async]
pub mod generics {
    use core::ops::{Add, Mul};
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn mixed(
        a: &[u8],
        b: &[i64],
        c: &[f32],
        ya: &mut [u8],
        yb: &mut [i64],
        yc: &mut [f32],
    ) {
        join!(on_warps(0..1, body(a, b, c, ya, yb, yc))).await;
    }

    fn mul_add<T: Copy + Add<Output = T> + Mul<Output = T>>(x: T, k: T, d: T) -> T {
        x * k + d
    }

    fn twice<T: Copy + Add<Output = T> + Mul<Output = T>>(x: T, k: T) -> T {
        mul_add(x, k, x)
    }

    async fn body(a: &[u8], b: &[i64], c: &[f32], ya: &mut [u8], yb: &mut [i64], yc: &mut [f32]) {
        ya.par_iter_mut()
            .zip(a.par_iter())
            .for_each(|(o, v)| *o = twice(*v, 7));
        yb.par_iter_mut()
            .zip(b.par_iter())
            .for_each(|(o, v)| *o = mul_add(*v, 3, -5));
        yc.par_iter_mut()
            .zip(c.par_iter())
            .for_each(|(o, v)| *o = twice(*v, 0.5));
    }
}

/// `f16` and `bf16`: parameters, slices, arithmetic (in `f32`, rounded back), comparisons,
/// negation, conversions and bits, and a channel of halves.
#[gpu_async]
pub mod halves {
    use gpu_async::device::*;

    pub const TILE: usize = 256;

    #[kernel(warps = 2)]
    pub async fn mix(k: f16, x: &[f16], b: &[bf16], y: &mut [f16], z: &mut [bf16], w: &mut [u32]) {
        let (tx, rx) = channel::<[f16; TILE], 2>();
        join!(
            on_warps(0..1, load(x, tx)),
            on_warps(1..2, compute(k, rx, b, y, z, w)),
        )
        .await;
    }

    async fn load(x: &[f16], mut tx: Sender<[f16; TILE], 2>) {
        for tile in block_tiles(x.len(), TILE) {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn compute(
        k: f16,
        mut rx: Receiver<[f16; TILE], 2>,
        b: &[bf16],
        y: &mut [f16],
        z: &mut [bf16],
        w: &mut [u32],
    ) {
        let mut tiles = block_tiles(y.len(), TILE);
        while let Some(slot) = rx.recv().await {
            let tile = tiles.next().unwrap();
            y[tile]
                .par_iter_mut()
                .zip(slot.par_iter())
                .for_each(|(o, v)| {
                    let t = *v * k + *v;
                    *o = if t > k { -t } else { t / k };
                });
        }
        z.par_iter_mut().zip(b.par_iter()).for_each(|(o, v)| {
            *o = bf16::from_f32(v.to_f32() * 3.0) - *v;
        });
        w.par_iter_mut().zip(b.par_iter()).for_each(|(o, v)| {
            *o = v.to_bits() as u32 + f16::from_f32(v.to_f32()).to_bits() as u32 * 65536;
        });
    }
}

/// A block-local shared value: the loader counts the tiles it sends and publishes the count
/// before it closes the channel; the consumer reads it after the channel has closed.
#[gpu_async]
pub mod shared_values {
    use gpu_async::device::*;

    pub const TILE: usize = 128;

    #[kernel(warps = 3)]
    pub async fn count(x: &[f32], y: &mut [f32], counts: &mut [u32]) {
        let (tx, rx) = channel::<[f32; TILE], 2>();
        let sent = shared::<u32>();
        join!(
            on_warps(0..1, load(x, tx, &sent)),
            on_warps(1..3, store(rx, y, counts, &sent)),
        )
        .await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; TILE], 2>, sent: &Shared<u32>) {
        let mut n = 0u32;
        for tile in block_tiles(x.len(), TILE) {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.copy_from(&x[tile]).await;
            slot.send();
            n += 1;
        }
        sent.set(n);
        drop(tx);
    }

    async fn store(
        mut rx: Receiver<[f32; TILE], 2>,
        y: &mut [f32],
        counts: &mut [u32],
        sent: &Shared<u32>,
    ) {
        let mut tiles = block_tiles(y.len(), TILE);
        let mut received = 0u32;
        while let Some(slot) = rx.recv().await {
            let tile = tiles.next().unwrap();
            y[tile]
                .par_iter_mut()
                .zip(slot.par_iter())
                .for_each(|(o, v)| *o = *v * 2.0);
            received += 1;
        }
        // The close came after `set`: the count is visible.
        let n = sent.get();
        let b = block_index();
        counts[b..b + 1]
            .par_iter_mut()
            .for_each(|c| *c = n * 1000 + received);
    }
}

/// Async blocks awaited where they are written: run in place, in the role.
#[gpu_async]
pub mod async_blocks {
    use gpu_async::device::*;

    pub const TILE: usize = 64;

    #[kernel(warps = 2)]
    pub async fn relay(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; TILE], 2>();
        join!(on_warps(0..1, load(x, tx)), on_warps(1..2, store(rx, y))).await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; TILE], 2>) {
        for tile in block_tiles(x.len(), TILE) {
            async {
                let mut slot = tx.reserve().await.unwrap();
                slot.copy_from(&x[tile]).await;
                slot.send();
            }
            .await;
        }
    }

    async fn store(mut rx: Receiver<[f32; TILE], 2>, y: &mut [f32]) {
        let mut tiles = block_tiles(y.len(), TILE);
        while let Some(slot) = rx.recv().await {
            let tile = tiles.next().unwrap();
            let scale = async { 2.0f32 }.await;
            y[tile]
                .par_iter_mut()
                .zip(slot.par_iter())
                .for_each(|(o, v)| *o = *v * scale);
        }
    }
}

/// Enums without payloads: a kernel parameter, `match` on the variants, `==`, an `if` that
/// yields a variant, a helper that returns one, and `as i32`.
#[gpu_async]
pub mod enums {
    use gpu_async::device::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum Op {
        Add,
        Mul = 4,
        Max,
    }

    #[kernel(warps = 1)]
    pub async fn apply(op: Op, x: &[i32], y: &mut [i32]) {
        join!(on_warps(0..1, body(op, x, y))).await;
    }

    fn combine(op: Op, a: i32, b: i32) -> i32 {
        match op {
            Op::Add => a + b,
            Op::Mul => a * b,
            Op::Max => a.max(b),
        }
    }

    fn next(op: Op) -> Op {
        if op == Op::Max {
            Op::Add
        } else {
            Op::Max
        }
    }

    async fn body(op: Op, x: &[i32], y: &mut [i32]) {
        let other = next(op);
        y.par_iter_mut().zip(x.par_iter()).for_each(|(o, v)| {
            *o = combine(op, *v, 3) + combine(other, *v, 2) + op as i32;
        });
    }
}

/// Structs through a channel: the producer writes whole elements and single fields, the
/// consumer reads fields, whole copies and a struct-typed `let`; a field is reduced.
#[gpu_async]
pub mod struct_payloads {
    use gpu_async::device::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Particle {
        pub position: f32,
        pub speed: f64,
        pub id: u16,
        pub alive: bool,
    }

    pub const TILE: usize = 256;

    #[kernel(warps = 3)]
    pub async fn step(x: &[f32], v: &[f64], y: &mut [f32], ids: &mut [u32], sums: &mut [f64]) {
        let (tx, rx) = channel::<[Particle; TILE], 2>();
        join!(
            on_warps(0..1, produce(x, v, tx)),
            on_warps(1..3, consume(rx, y, ids, sums)),
        )
        .await;
    }

    async fn produce(x: &[f32], v: &[f64], mut tx: Sender<[Particle; TILE], 2>) {
        for tile in block_tiles(x.len(), TILE) {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            let n = tile.end - tile.start;
            slot.par_iter_mut()
                .zip(
                    x[tile.start..tile.end]
                        .par_iter()
                        .zip(v[tile.start..tile.end].par_iter()),
                )
                .enumerate()
                .for_each(|(i, (p, (a, b)))| {
                    *p = Particle {
                        position: *a,
                        speed: *b,
                        id: (tile.start + i) as u16,
                        alive: false,
                    };
                    p.alive = *a > 0.0;
                });
            // The tail of the last tile: elements past the input are marked dead.
            slot.par_iter_mut().enumerate().for_each(|(i, p)| {
                if i >= n {
                    p.alive = false;
                    p.position = 0.0;
                    p.speed = 0.0;
                }
            });
            slot.send();
        }
    }

    async fn consume(
        mut rx: Receiver<[Particle; TILE], 2>,
        y: &mut [f32],
        ids: &mut [u32],
        sums: &mut [f64],
    ) {
        let mut k = block_index();
        while let Some(slot) = rx.recv().await {
            let start = k * TILE;
            let end = (start + TILE).min(y.len());
            let total = slot.par_iter().map(|p| p.speed).sum();
            slot.par_iter()
                .zip(
                    y[start..end]
                        .par_iter_mut()
                        .zip(ids[start..end].par_iter_mut()),
                )
                .for_each(|(p, (o, id))| {
                    let q = *p;
                    *o = if q.alive {
                        q.position + p.speed as f32
                    } else {
                        -1.0
                    };
                    *id = q.id as u32;
                });
            sums[k..k + 1].par_iter_mut().for_each(|s| *s = total);
            k += block_count();
        }
    }
}

/// Structs with array fields: a kernel parameter (one PTX parameter per element), locals
/// written at constant and run-time indices, a helper's result, and a channel payload.
#[gpu_async]
pub mod struct_arrays {
    use gpu_async::device::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Poly {
        pub coeffs: [f32; 4],
        pub scale: f32,
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Window {
        pub taps: [f32; 3],
        pub center: i32,
    }

    pub const TILE: usize = 128;

    #[kernel(warps = 2)]
    pub async fn eval(p: Poly, x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[Window; TILE], 2>();
        join!(
            on_warps(0..1, produce(p, x, tx)),
            on_warps(1..2, consume(p, rx, y)),
        )
        .await;
    }

    fn horner(p: Poly, v: f32) -> f32 {
        let mut acc = 0.0f32;
        for k in 0..4 {
            acc = acc * v + p.coeffs[3 - k];
        }
        acc * p.scale
    }

    fn reversed(p: Poly) -> Poly {
        let mut q = p;
        for k in 0..4 {
            q.coeffs[k] = p.coeffs[3 - k];
        }
        q
    }

    async fn produce(p: Poly, x: &[f32], mut tx: Sender<[Window; TILE], 2>) {
        let q = reversed(reversed(p));
        for tile in block_tiles(x.len(), TILE) {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.par_iter_mut()
                .zip(x[tile.start..tile.end].par_iter())
                .enumerate()
                .for_each(|(i, (w, v))| {
                    w.taps = [*v, horner(q, *v), 0.0];
                    w.taps[2] = *v * 2.0;
                    w.center = (i % 3) as i32;
                });
            slot.send();
        }
    }

    async fn consume(p: Poly, mut rx: Receiver<[Window; TILE], 2>, y: &mut [f32]) {
        let mut k = block_index();
        while let Some(slot) = rx.recv().await {
            let start = k * TILE;
            let end = (start + TILE).min(y.len());
            slot.par_iter()
                .zip(y[start..end].par_iter_mut())
                .for_each(|(w, o)| {
                    let mut local = *w;
                    local.taps[local.center as usize] += p.coeffs[0];
                    *o = local.taps[0] + local.taps[1] * 0.5 + w.taps[w.center as usize];
                });
            k += block_count();
        }
    }
}

/// Writes under a condition in a parallel loop: where the condition is false the element
/// keeps its value (the GPU loads it before the body, since the store after the body is
/// unconditional).
#[gpu_async]
pub mod conditional_writes {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn keep_large(x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..2, body(x, y))).await;
    }

    async fn body(x: &[f32], y: &mut [f32]) {
        y.par_iter_mut().zip(x.par_iter()).for_each(|(o, v)| {
            if *v > 0.5 {
                *o = *v;
            }
        });
    }
}

/// Warps that run no role, on purpose: the block has 4 warps and the one role uses 2.
#[gpu_async]
pub mod idle_warps {
    use gpu_async::device::*;

    #[kernel(warps = 4, idle_warps)]
    pub async fn fill(y: &mut [u32]) {
        join!(on_warps(1..3, body(y))).await;
    }

    async fn body(y: &mut [u32]) {
        for tile in block_tiles(y.len(), 512) {
            y[tile.start..tile.end]
                .par_iter_mut()
                .enumerate()
                .for_each(|(i, o)| *o = (tile.start + i) as u32 * 3);
        }
    }
}

/// Parallel bodies whose writes depend on control flow: `if`/`else` writing different
/// elements, a `match`, a loop that writes on some iterations, compound assignments under a
/// condition, and a write in a lane loop under a lane-dependent condition.
#[gpu_async]
pub mod body_control_flow {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn shapes(x: &[i32], a: &mut [i32], b: &mut [i32], c: &mut [i32]) {
        join!(on_warps(0..2, body(x, a, b, c))).await;
    }

    async fn body(x: &[i32], a: &mut [i32], b: &mut [i32], c: &mut [i32]) {
        a.par_iter_mut()
            .zip(b.par_iter_mut())
            .zip(x.par_iter())
            .for_each(|((p, q), v)| {
                if *v % 3 == 0 {
                    *p = *v;
                } else if *v % 3 == 1 {
                    *q = -*v;
                } else {
                    *p += 1;
                    *q -= 1;
                }
                match *v & 7 {
                    0 | 1 => *p *= 2,
                    5 => {}
                    _ => *q += 10,
                }
                for k in 0..(*v & 3) as usize {
                    if k == 1 {
                        *p ^= 0x100;
                    }
                }
            });
        let n = c.len() / 32 * 32;
        c[0..n]
            .par_iter_mut()
            .zip(x[0..n].par_iter())
            .for_each_lane(async |lane, (o, v)| {
                let total = lane.sum(*v).await;
                if lane.id() % 2 == 1 {
                    *o = total;
                }
            });
    }
}

/// `for` loops over ranges of any integer type, and inclusive ranges up to the type's `MAX`
/// (which must stop without stepping past it), with `continue` and `break`.
#[gpu_async]
pub mod typed_ranges {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn sums(n: i32, k: u8, out: &mut [i64]) {
        join!(on_warps(0..1, body(n, k, out))).await;
    }

    async fn body(n: i32, k: u8, out: &mut [i64]) {
        let mut a = 0i64;
        for i in -n..n {
            a += i as i64 * 3;
        }
        let mut b = 0i64;
        for v in k..=u8::MAX {
            if v % 7 == 0 {
                continue;
            }
            b += v as i64;
        }
        let mut c = 0i64;
        for v in i8::MIN..=i8::MAX {
            c += v as i64 * v as i64;
        }
        let mut d = 0i64;
        for v in 5u32..=4 {
            d += v as i64;
        }
        let mut e = 0i64;
        for v in 0..=n {
            if v > 10 {
                break;
            }
            e += v as i64;
        }
        out.par_iter_mut().enumerate().for_each(|(i, o)| {
            let mut f = 0i64;
            for j in 0..=(i as u16) {
                f += j as i64;
            }
            *o = match i {
                0 => a,
                1 => b,
                2 => c,
                3 => d,
                4 => e,
                _ => f,
            };
        });
    }
}

/// `if let Some(v) = ..` over the `Option` of the checked methods, as a statement and as a
/// value.
#[gpu_async]
pub mod option_if_let {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn checked(a: &[i32], b: &[i32], sums: &mut [i32], products: &mut [i32]) {
        join!(on_warps(0..1, body(a, b, sums, products))).await;
    }

    async fn body(a: &[i32], b: &[i32], sums: &mut [i32], products: &mut [i32]) {
        sums.par_iter_mut()
            .zip(products.par_iter_mut())
            .zip(a.par_iter().zip(b.par_iter()))
            .for_each(|((s, p), (x, y))| {
                if let Some(v) = x.checked_add(*y) {
                    *s = v;
                } else {
                    *s = -1;
                }
                *p = if let Some(mut v) = x.checked_mul(*y) {
                    v += 1;
                    v
                } else if x.checked_sub(*y).is_none() {
                    -2
                } else {
                    -3
                };
            });
    }
}
