//! A kernel whose two roles each wait for the other: it never finishes. Whether `echo_into`
//! sends first depends on a run-time value, so the compiler's static check of wait cycles cannot
//! decide it; the simulator and the GPU's watchdog must report it.

use gpu_async::gpu_async;

#[gpu_async]
pub mod deadlock {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn cross(seed_first: bool, x: &mut [f32]) {
        let (ping_tx, ping_rx) = channel::<[f32; 32], 1>();
        let (pong_tx, pong_rx) = channel::<[f32; 32], 1>();
        join!(
            on_warps(0..1, echo(ping_rx, pong_tx)),
            on_warps(1..2, echo_into(seed_first, pong_rx, ping_tx, x)),
        )
        .await;
    }

    async fn echo(mut rx: Receiver<[f32; 32], 1>, mut tx: Sender<[f32; 32], 1>) {
        while let Some(input) = rx.recv().await {
            let Some(mut output) = tx.reserve().await else {
                return;
            };
            output
                .par_iter_mut()
                .zip(input.par_iter())
                .for_each(|(o, i)| *o = *i);
            output.send();
        }
    }

    async fn echo_into(
        seed_first: bool,
        mut rx: Receiver<[f32; 32], 1>,
        mut tx: Sender<[f32; 32], 1>,
        x: &mut [f32],
    ) {
        if seed_first {
            let Some(mut first) = tx.reserve().await else {
                return;
            };
            first.par_iter_mut().for_each(|o| *o = 1.0);
            first.send();
        }
        while let Some(input) = rx.recv().await {
            x.par_iter_mut()
                .zip(input.par_iter())
                .for_each(|(o, i)| *o = *i);
        }
        drop(tx);
    }
}
