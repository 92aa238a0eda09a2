// A labeled break out of the outer loop, taken on some lanes only: the outer loop's later
// shuffles miss those lanes.
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
                'rounds: for step in 0..5 {
                    for k in 0..3 {
                        if acc > 100 + k as i32 {
                            break 'rounds;
                        }
                    }
                    acc += lane.shuffle_xor(acc, 1u32 << step).await;
                }
                *o = acc;
            });
    }
}

fn main() {}
