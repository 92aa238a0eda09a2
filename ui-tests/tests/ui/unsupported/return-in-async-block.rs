// `return` in an async block leaves the block, not the function: give the block a value.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn k(flag: bool, y: &mut [f32]) {
        join!(on_warps(0..1, role(flag, y))).await;
    }

    async fn role(flag: bool, y: &mut [f32]) {
        let v = async {
            if flag {
                return 1.0f32;
            }
            2.0f32
        }
        .await;
        y.par_iter_mut().for_each(|o| *o = v);
    }
}

fn main() {}
