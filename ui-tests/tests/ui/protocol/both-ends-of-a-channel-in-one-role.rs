// A channel connects two roles: one role cannot be given both of its ends.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn echo(y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 32], 2>();
        join!(on_warps(0..1, both(tx, rx, y))).await;
    }

    async fn both(mut tx: Sender<[f32; 32], 2>, mut rx: Receiver<[f32; 32], 2>, y: &mut [f32]) {
        while let Some(slot) = rx.recv().await {
            y[0..32].par_iter_mut().zip(slot.par_iter()).for_each(|(o, v)| *o = *v);
        }
        let Some(mut s) = tx.reserve().await else { return };
        s.par_iter_mut().for_each(|v| *v = 1.0);
        s.send();
    }
}

fn main() {}
