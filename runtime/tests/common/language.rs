//! A kernel that exercises the scalar language in role code and in parallel bodies: integer
//! and float arithmetic, casts, shifts, `if`/`else` values, `for` and `while` loops, `bool`
//! parameters, `enumerate`, range bounds, a slot written by ordinary stores, and the scalar
//! methods that are exact on the GPU (`sqrt`, `abs`, `floor`, `mul_add`, `min`, `wrapping_mul`, ...).

use gpu_async::gpu_async;

#[gpu_async]
pub mod language {
    use gpu_async::device::*;

    pub const TILE: usize = 256;
    pub const SHIFT: u32 = 3;

    #[kernel(warps = 3)]
    pub async fn mix(
        scale: f32,
        bias: i32,
        flag: bool,
        x: &[f32],
        y: &mut [f32],
        z: &mut [i32],
        w: &mut [u32],
    ) {
        let (tx, rx) = channel::<[f32; TILE], 2>();
        join!(
            on_warps(0..1, produce(scale, x, tx)),
            on_warps(1..3, consume(bias, flag, rx, y, z, w)),
        )
        .await;
    }

    /// Computes each tile into the slot instead of copying it.
    async fn produce(scale: f32, x: &[f32], mut tx: Sender<[f32; TILE], 2>) {
        for tile in block_tiles(x.len(), TILE) {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.par_iter_mut()
                .zip(x[tile].par_iter())
                .for_each(|(s, v)| {
                    *s = if *v < 0.0 { -*v * scale } else { *v / scale };
                });
            slot.send();
        }
    }

    async fn consume(
        bias: i32,
        flag: bool,
        mut rx: Receiver<[f32; TILE], 2>,
        y: &mut [f32],
        z: &mut [i32],
        w: &mut [u32],
    ) {
        let mut acc: u32 = 0;
        for i in 0..10 {
            acc = acc * 3 + (i as u32 ^ 5) % 7;
        }
        let mut steps = 0;
        while steps < 4 {
            steps += 1;
        }
        let offset = if flag { bias * 2 - steps } else { bias >> 1 };
        let mut tiles = block_tiles(y.len(), TILE);
        while let Some(slot) = rx.recv().await {
            let tile = tiles.next().unwrap();
            let start = tile.start;
            let end = tile.end;
            y[start..end]
                .par_iter_mut()
                .zip(slot.par_iter())
                .enumerate()
                .for_each(|(i, (o, v))| {
                    let k = (i as u32) << SHIFT;
                    let base = *v + (k % 13) as f32 - offset as f32;
                    *o = base
                        .abs()
                        .sqrt()
                        .mul_add(0.5, v.floor())
                        .max(-100.0)
                        .copysign(base)
                        + v.ceil()
                        - v.trunc();
                });
            z[start..end]
                .par_iter_mut()
                .zip(slot.par_iter())
                .for_each(|(o, v)| {
                    let t = *v as i32;
                    let u = if t > 0 && flag {
                        t * 3 + offset
                    } else {
                        -t / 2 - (acc as i32)
                    };
                    *o = u.wrapping_mul(7919).clamp(-(1 << 20), 1 << 20).abs();
                });
            w[start..end].par_iter_mut().enumerate().for_each(|(i, o)| {
                *o = (i as u32 + acc) ^ ((start + i) as u32 >> 2);
            });
        }
    }

    /// Control flow: `match` with ranges, `|` and guards, labeled loops with `break` values and
    /// `continue`, early `return`, `step_by` and `rev`.
    #[kernel(warps = 1)]
    pub async fn control(seed: u32, out: &mut [u32]) {
        join!(on_warps(0..1, steer(seed, out))).await;
    }

    fn classify(v: u32) -> u32 {
        if v == 7 {
            return 700;
        }
        match v % 10 {
            0 => 1,
            1 | 2 => 2,
            3..=5 => 3,
            x if x > 8 => 9,
            _ => 4,
        }
    }

    async fn steer(seed: u32, out: &mut [u32]) {
        let mut acc = seed;
        'outer: for i in (0..40).step_by(3) {
            for j in (0..6).rev() {
                if (i + j) % 7 == 0 {
                    continue 'outer;
                }
                if i * j > 90 {
                    break 'outer;
                }
                acc = acc.wrapping_mul(31) ^ classify(acc ^ (i + j) as u32);
            }
        }
        let mut n = 0u32;
        let first = loop {
            n += 1;
            if (acc >> (n % 32)) & 1 == 1 || n > 40 {
                break n * 3;
            }
        };
        out.par_iter_mut().enumerate().for_each(|(i, o)| {
            *o = acc ^ first ^ classify(i as u32);
        });
    }

    /// Integer arithmetic that overflows: it wraps, on the GPU and in the simulator alike.
    #[kernel(warps = 2)]
    pub async fn hash(seed: u32, out: &mut [u32], signed: &mut [i32]) {
        join!(on_warps(0..2, mix_bits(seed, out, signed))).await;
    }

    async fn mix_bits(seed: u32, out: &mut [u32], signed: &mut [i32]) {
        let mut h = seed;
        for i in 0..20 {
            h = h * 2654435761 + ((i as u32) << 7);
            h ^= h >> 13;
        }
        out.par_iter_mut().enumerate().for_each(|(i, o)| {
            let mut x = h + i as u32 * 2654435769;
            x *= 2246822507;
            *o = x ^ (x >> 16) << 3;
        });
        signed.par_iter_mut().enumerate().for_each(|(i, o)| {
            let v = (h as i32) * 31 - (i as i32) * 1000000007;
            *o = -(v - 2147483647);
        });
    }
}
