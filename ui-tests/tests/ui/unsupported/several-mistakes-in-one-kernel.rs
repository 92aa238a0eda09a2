// Every unsupported construct is reported, in one build.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn many(y: &mut [f32]) {
        join!(on_warps(0..1, fill(y))).await;
    }

    async fn fill(y: &mut [f32]) {
        let names = String::new();
        let v = y.get(0)?;
        println!("{}", v);
        y.par_iter_mut().for_each(|v| *v = 1.0);
    }
}

fn main() {}
