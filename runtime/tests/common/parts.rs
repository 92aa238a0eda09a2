//! Kernels that hand the parts of one `&mut` slice to different roles: `split_at_mut`, ranges of
//! the kernel body (`&mut y[..mid]`, `&mut y[mid..]`, also kept in locals, and three of them),
//! `chunks_mut` / `chunks_exact_mut`, and `split_at` of a shared slice in role code.

#[gpu_async::gpu_async]
pub mod parts {
    use gpu_async::device::*;

    /// `y[i] = 2 x[i]` below `mid`, `3 x[i]` from `mid` on, by two roles with a half each.
    #[kernel(warps = 2)]
    pub async fn halves(mid: usize, x: &[u32], y: &mut [u32]) {
        let (lo, hi) = y.split_at_mut(mid);
        join!(
            on_warps(0..1, scale(2, x, 0, lo)),
            on_warps(1..2, scale(3, x, mid, hi)),
        )
        .await;
    }

    /// `out[i] = k x[from + i]`.
    async fn scale(k: u32, x: &[u32], from: usize, out: &mut [u32]) {
        let n = out.len();
        out.par_iter_mut()
            .zip(x[from..from + n].par_iter())
            .for_each(|(o, v)| *o = k * *v);
    }

    /// The same, with the ranges written at the roles.
    #[kernel(warps = 2)]
    pub async fn ranges(mid: usize, x: &[u32], y: &mut [u32]) {
        join!(
            on_warps(0..1, scale(2, x, 0, &mut y[..mid])),
            on_warps(1..2, scale(3, x, mid, &mut y[mid..])),
        )
        .await;
    }

    /// Three ranges kept in locals: `2 x` below `a`, `3 x` to `b`, `5 x` after.
    #[kernel(warps = 3)]
    pub async fn thirds(a: usize, b: usize, x: &[u32], y: &mut [u32]) {
        let first = &mut y[..a];
        let second = &mut y[a..b];
        let third = &mut y[b..];
        join!(
            on_warps(0..1, scale(2, x, 0, first)),
            on_warps(1..2, scale(3, x, a, second)),
            on_warps(2..3, scale(5, x, b, third)),
        )
        .await;
    }

    /// The first two chunks of `size`: `2 x` and `3 x` (the rest of `y` is left alone).
    #[kernel(warps = 2)]
    pub async fn chunked(size: usize, x: &[u32], y: &mut [u32]) {
        let mut parts = y.chunks_mut(size);
        join!(
            on_warps(0..1, scale(2, x, 0, parts.next().unwrap())),
            on_warps(1..2, scale(3, x, size, parts.next().unwrap())),
        )
        .await;
    }

    /// The same with `chunks_exact_mut`: a second chunk shorter than `size` is a device panic.
    #[kernel(warps = 2)]
    pub async fn chunked_exact(size: usize, x: &[u32], y: &mut [u32]) {
        let mut parts = y.chunks_exact_mut(size);
        join!(
            on_warps(0..1, scale(2, x, 0, parts.next().unwrap())),
            on_warps(1..2, scale(3, x, size, parts.next().unwrap())),
        )
        .await;
    }

    /// `split_at` of a shared slice in role code: `y[0]` = the sum of `x[..mid]`, `y[1]` = of
    /// `x[mid..]` (role-code element writes).
    #[kernel(warps = 1)]
    pub async fn sums(mid: usize, x: &[u32], y: &mut [u32]) {
        join!(on_warps(0..1, two_sums(mid, x, y))).await;
    }

    async fn two_sums(mid: usize, x: &[u32], y: &mut [u32]) {
        let (a, b) = x.split_at(mid);
        y[0] = a.par_iter().sum();
        y[1] = b.par_iter().sum();
    }
}
