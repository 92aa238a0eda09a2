// A slot of structs is stored field by field on the GPU: it is filled with `par_iter_mut`,
// not with a bulk copy of the host's array.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[derive(Clone, Copy)]
    pub struct Pair {
        pub a: f32,
        pub b: f32,
    }

    #[kernel(warps = 2)]
    pub async fn pairs(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[Pair; 128], 2>();
        join!(on_warps(0..1, load(x, tx)), on_warps(1..2, store(rx, y))).await;
    }

    async fn load(x: &[f32], mut tx: Sender<[Pair; 128], 2>) {
        for tile in block_tiles(x.len(), 128) {
            let Some(mut slot) = tx.reserve().await else { return };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn store(mut rx: Receiver<[Pair; 128], 2>, y: &mut [f32]) {
        let mut k = block_index();
        while let Some(slot) = rx.recv().await {
            let start = k * 128;
            let end = (start + 128).min(y.len());
            slot.par_iter()
                .zip(y[start..end].par_iter_mut())
                .for_each(|(p, o)| *o = p.a + p.b);
            k += block_count();
        }
    }
}

fn main() {}
