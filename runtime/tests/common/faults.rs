//! Kernels that fail on purpose: a bound broken by some threads of a parallel loop, a division by
//! zero in role code, an `unwrap()` of `None` in one role of two, a receive unwrapped past the
//! stream's end, a tile of one slice used on a shorter one, an `assert!` in a parallel loop,
//! `panic!` and `unreachable!` in role code, `MIN / -1`.

use gpu_async::gpu_async;

#[gpu_async]
pub mod faults {
    use gpu_async::device::*;

    pub const TILE: usize = 64;

    /// `y[i] = x[i + shift]`: out of bounds for the last `shift` elements of `y` when `x` is as
    /// long as `y`.
    #[kernel(warps = 2)]
    pub async fn shifted_read(shift: usize, x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..2, shifted(shift, x, y))).await;
    }

    async fn shifted(shift: usize, x: &[f32], y: &mut [f32]) {
        y.par_iter_mut()
            .enumerate()
            .for_each(|(i, o)| *o = x[i + shift]);
    }

    /// Role code divides by `d`.
    #[kernel(warps = 1)]
    pub async fn divide(n: u32, d: u32, y: &mut [u32]) {
        join!(on_warps(0..1, quotient(n, d, y))).await;
    }

    async fn quotient(n: u32, d: u32, y: &mut [u32]) {
        let q = n / d;
        y.par_iter_mut().for_each(|o| *o = q);
    }

    /// The storing role takes one tile of `y` per tile of `x`: when `y` is shorter, its
    /// `unwrap()` fails while the loading role waits for free slots.
    #[kernel(warps = 2)]
    pub async fn short_output(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; TILE], 2>();
        join!(on_warps(0..1, load(x, tx)), on_warps(1..2, store(rx, y))).await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; TILE], 2>) {
        for tile in block_tiles(x.len(), TILE) {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn store(mut rx: Receiver<[f32; TILE], 2>, y: &mut [f32]) {
        let mut tiles = block_tiles(y.len(), TILE);
        while let Some(slot) = rx.recv().await {
            let tile = tiles.next().unwrap();
            y[tile]
                .par_iter_mut()
                .zip(slot.par_iter())
                .for_each(|(o, i)| *o = *i);
        }
    }

    /// The consuming role unwraps `taken` receives of the `sent` items sent (`1..=sent`), then
    /// counts to `spin` with no wait, and stores the items' sum plus the count in `out[0]`:
    /// past the stream's end when `taken > sent`.
    #[kernel(warps = 2)]
    pub async fn short_stream(sent: u32, taken: u32, spin: u64, out: &mut [u32]) {
        let (tx, rx) = channel::<[u32; 1], 2>();
        join!(
            on_warps(0..1, send_items(sent, tx)),
            on_warps(1..2, take_items(taken, spin, rx, out)),
        )
        .await;
    }

    async fn send_items(sent: u32, mut tx: Sender<[u32; 1], 2>) {
        for i in 0..sent {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot[0] = i + 1;
            slot.send();
        }
    }

    async fn take_items(taken: u32, spin: u64, mut rx: Receiver<[u32; 1], 2>, out: &mut [u32]) {
        let mut sum = 0u32;
        for _ in 0..taken {
            let item = rx.recv().await.unwrap();
            sum += item[0];
        }
        let mut count = 0u64;
        while count < spin {
            count += 1;
        }
        let total = sum + count as u32;
        out[0..1].par_iter_mut().for_each(|o| *o = total);
    }

    /// Tiles of `x` slice `y` too: past the end of `y` when `y` is shorter. The compiler proves
    /// `y[tile]` within `y` only for tiles of `y.len()`, so this check must stay.
    #[kernel(warps = 1)]
    pub async fn tiles_of_another_slice(x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..1, copy_tiles(x, y))).await;
    }

    async fn copy_tiles(x: &[f32], y: &mut [f32]) {
        for tile in block_tiles(x.len(), TILE) {
            y[tile.start..tile.end]
                .par_iter_mut()
                .zip(x[tile.start..tile.end].par_iter())
                .for_each(|(o, i)| *o = *i);
        }
    }

    /// `assert!` on every element: fails where an element is negative.
    #[kernel(warps = 2)]
    pub async fn checked_sqrt(x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..2, roots(x, y))).await;
    }

    async fn roots(x: &[f32], y: &mut [f32]) {
        y.par_iter_mut().zip(x.par_iter()).for_each(|(o, v)| {
            assert!(*v >= 0.0, "negative input");
            *o = v.sqrt();
        });
    }

    /// Role code panics when `mode` is 1, reaches `unreachable!` when it is 2, and checks
    /// `assert_eq!` when it is 3.
    #[kernel(warps = 1)]
    pub async fn modes(mode: u32, y: &mut [u32]) {
        join!(on_warps(0..1, pick(mode, y))).await;
    }

    async fn pick(mode: u32, y: &mut [u32]) {
        let v = match mode {
            0 => 10u32,
            1 => panic!("mode one is not allowed"),
            2 => unreachable!(),
            _ => {
                assert_eq!(mode + 1, 5);
                20
            }
        };
        y.par_iter_mut().for_each(|o| *o = v);
    }

    /// Signed division that overflows for `i32::MIN / -1`.
    #[kernel(warps = 1)]
    pub async fn overflow(n: i32, d: i32, y: &mut [i32]) {
        join!(on_warps(0..1, divide_signed(n, d, y))).await;
    }

    async fn divide_signed(n: i32, d: i32, y: &mut [i32]) {
        let q = n / d;
        y.par_iter_mut().for_each(|o| *o = q);
    }

    /// The same checks on the compound forms, in a parallel loop: `/=` then `%=`.
    #[kernel(warps = 1)]
    pub async fn compound(n: i32, d: i32, y: &mut [i32]) {
        join!(on_warps(0..1, divide_compound(n, d, y))).await;
    }

    async fn divide_compound(n: i32, d: i32, y: &mut [i32]) {
        y.par_iter_mut().for_each(|o| {
            let mut q = n;
            q /= d;
            *o = q;
            *o %= d;
        });
    }
}
