// Two roles that each wait for the other before sending anything: a deadlock in every schedule,
// found at compile time.

use gpu_async::gpu_async;

#[gpu_async]
pub mod deadlock {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn cross(x: &mut [f32]) {
        let (ping_tx, ping_rx) = channel::<[f32; 32], 1>();
        let (pong_tx, pong_rx) = channel::<[f32; 32], 1>();
        join!(
            on_warps(0..1, echo(ping_rx, pong_tx)),
            on_warps(1..2, echo_into(pong_rx, ping_tx, x)),
        )
        .await;
    }

    async fn echo(mut rx: Receiver<[f32; 32], 1>, mut tx: Sender<[f32; 32], 1>) {
        while let Some(input) = rx.recv().await {
            let Some(mut output) = tx.reserve().await else { return };
            output
                .par_iter_mut()
                .zip(input.par_iter())
                .for_each(|(o, i)| *o = *i);
            output.send();
        }
    }

    async fn echo_into(mut rx: Receiver<[f32; 32], 1>, tx: Sender<[f32; 32], 1>, x: &mut [f32]) {
        while let Some(input) = rx.recv().await {
            x.par_iter_mut()
                .zip(input.par_iter())
                .for_each(|(o, i)| *o = *i);
        }
        drop(tx);
    }
}

fn main() {}
