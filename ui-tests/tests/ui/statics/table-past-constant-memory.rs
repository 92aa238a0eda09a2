// Constant memory holds 64 KiB: the error says how much the tables need.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    static BIG: [f32; 16384] = [1.0; 16384];
    static MORE: [u32; 8] = [0; 8];

    #[kernel(warps = 1)]
    pub async fn reads(k: &[u32], y: &mut [f32]) {
        join!(on_warps(0..1, read(k, y))).await;
    }

    async fn read(k: &[u32], y: &mut [f32]) {
        y.par_iter_mut()
            .zip(k.par_iter())
            .for_each(|(o, i)| *o = BIG[*i as usize] + MORE[0] as f32);
    }
}

fn main() {}
