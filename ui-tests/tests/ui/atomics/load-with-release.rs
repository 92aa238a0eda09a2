// A load cannot release (Rust panics on it at run time; the kernel language says so at compile time).
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[kernel(warps = 1)]
    pub async fn reads(flags: &[AtomicU32], out: &mut [u32]) {
        join!(on_warps(0..1, read(flags, out))).await;
    }

    async fn read(flags: &[AtomicU32], out: &mut [u32]) {
        out.par_iter_mut().enumerate().for_each(|(i, o)| {
            *o = flags[i].load(Ordering::Release);
        });
    }
}

fn main() {}
