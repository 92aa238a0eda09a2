// A loop some lanes leave early: the later rounds' shuffle misses them.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn lanes(x: &[i32], y: &mut [i32]) {
        join!(on_warps(0..1, role(x, y))).await;
    }

    async fn role(x: &[i32], y: &mut [i32]) {
        x.par_iter()
            .zip(y.par_iter_mut())
            .for_each_lane(async |lane, (v, o)| {
                let mut acc = *v;
                for step in 0..5 {
                    if acc > 100 {
                        break;
                    }
                    acc += lane.shuffle_xor(acc, 1u32 << step).await;
                }
                *o = acc;
            });
    }
}

fn main() {}
