// There are no vtables on the device.
use gpu_async::gpu_async;

trait Op {
    fn apply(&self, v: f32) -> f32;
}

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn dynamic(y: &mut [f32]) {
        join!(on_warps(0..1, fill(y))).await;
    }

    fn apply(op: &dyn super::Op, v: f32) -> f32 {
        op.apply(v)
    }

    async fn fill(y: &mut [f32]) {
        y.par_iter_mut().for_each(|v| *v = 1.0);
    }
}

fn main() {}
