//! Parallel loops over a constant count that every thread covers in a few whole steps, whose
//! bodies mix the index arithmetic the PTX writer computes from the first step (`(i / 32) * n`,
//! `i % 32`, products with a parameter, narrowing casts) with arithmetic it must compute in every
//! step (a shift or mask by more than the step's multiple, signed division, widening casts of a
//! changing value, `xor`, a shift of a value that wraps between steps).

use gpu_async::gpu_async;

#[gpu_async]
pub mod index_steps {
    use gpu_async::device::*;

    /// Items per loop.
    pub const ITEMS: usize = 1024;

    /// The items of [`mix`], on two warps: 16 steps of 64 items.
    #[kernel(warps = 2)]
    pub async fn two_warps(
        x: &[u64],
        n: usize,
        k: u32,
        wide: &mut [u64],
        narrow: &mut [u32],
        signed: &mut [i64],
    ) {
        join!(on_warps(0..2, mix(x, n, k, wide, narrow, signed))).await;
    }

    /// The items of [`mix`], on a role of three warps: 96 threads, so `i / 32` changes by 3 a
    /// step while `i / 64` and `i % 64` have no fixed change. Warp 0 idles.
    #[kernel(warps = 4, idle_warps)]
    pub async fn three_warps(
        x: &[u64],
        n: usize,
        k: u32,
        wide: &mut [u64],
        narrow: &mut [u32],
        signed: &mut [i64],
    ) {
        join!(on_warps(1..4, mix_960(x, n, k, wide, narrow, signed))).await;
    }

    async fn mix(
        x: &[u64],
        n: usize,
        k: u32,
        wide: &mut [u64],
        narrow: &mut [u32],
        signed: &mut [i64],
    ) {
        assert!(
            x.len() == ITEMS && wide.len() == ITEMS,
            "x and wide have ITEMS items"
        );
        assert!(
            narrow.len() == ITEMS && signed.len() == ITEMS,
            "narrow and signed have ITEMS items"
        );
        (0..ITEMS).into_par_iter().for_each(|i| {
            let a = (i / 32) * n + i % 32 + (i >> 7) * 5 + (i & 127);
            let b = (i << 3) ^ (i / 64) ^ x[(i * 37) % ITEMS] as usize;
            wide[i] = (a as u64).wrapping_mul(1 << 20) + b as u64;
        });
        (0..ITEMS).into_par_iter().for_each(|i| {
            // `i - 100` wraps below zero in the first steps of some threads and not in later
            // ones: its shift is computed in every step.
            let wraps = (i as u32).wrapping_sub(100) >> 4;
            narrow[i] = ((i as u32) * k).wrapping_sub(7) + ((i * 3) as u32 >> 2) + wraps;
        });
        (0..ITEMS).into_par_iter().for_each(|i| {
            let s = i as i64 - 500;
            signed[i] = s / 4 + (s * 3) % 7 + (((i as u32) * k) as u64 as i64) * 2;
        });
    }

    async fn mix_960(
        x: &[u64],
        n: usize,
        k: u32,
        wide: &mut [u64],
        narrow: &mut [u32],
        signed: &mut [i64],
    ) {
        assert!(
            x.len() == ITEMS && wide.len() == ITEMS,
            "x and wide have ITEMS items"
        );
        assert!(
            narrow.len() == ITEMS && signed.len() == ITEMS,
            "narrow and signed have ITEMS items"
        );
        (0..960).into_par_iter().for_each(|i| {
            let a = (i / 32) * n + i % 32 + (i / 64) * 5 + i % 64;
            wide[i] = (a as u64).wrapping_mul(1 << 20) + x[(i * 37) % ITEMS];
        });
        (0..960).into_par_iter().for_each(|i| {
            // A product with the 64-bit `n`, narrowed: computed in every step.
            narrow[i] = ((i as u32) * k).wrapping_sub(7) + ((i as u32) & 31) + (i * n) as u32;
        });
        (0..960).into_par_iter().for_each(|i| {
            signed[i] = (i as i64 - 500) / 4 + ((i * 3) as u32 as i64);
        });
    }
}
