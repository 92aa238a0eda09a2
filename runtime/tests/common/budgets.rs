//! Register budgets (`setmaxnreg`, sm_90a): kernels of whole warpgroups whose roles that only
//! move data give registers to the roles that compute.
//!
//! - `pipeline`: 16 warps, a loader and a storer (40 registers each) around a transform (216).
//! - `poly`: 12 warps, a loader (40) and an evaluator (232) that keeps 208 polynomial
//!   coefficients in registers across its loop: more than the 168 registers per thread a block of
//!   384 threads holds, so without budgets (`poly_uniform`, `registers(off)`) ptxas spills, and
//!   with them it does not.

use gpu_async::gpu_async;

#[gpu_async]
pub mod budgets {
    use gpu_async::device::*;

    pub const TILE: usize = 1024;
    /// Coefficients of the polynomial: degree `COEFS - 1`.
    pub const COEFS: usize = 208;

    /// y = a * x + b through load -> transform -> store, each role whole warpgroups.
    #[kernel(warps = 16)]
    pub async fn pipeline(a: f32, b: f32, x: &[f32], y: &mut [f32]) {
        let (load_tx, load_rx) = channel::<[f32; TILE], 4>();
        let (out_tx, out_rx) = channel::<[f32; TILE], 2>();
        join!(
            on_warps(0..4, load(x, load_tx)),
            on_warps(4..12, transform(a, b, load_rx, out_tx)),
            on_warps(12..16, store(out_rx, y)),
        )
        .await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; TILE], 4>) {
        for tile in block_tiles(x.len(), TILE) {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn transform(
        a: f32,
        b: f32,
        mut rx: Receiver<[f32; TILE], 4>,
        mut tx: Sender<[f32; TILE], 2>,
    ) {
        while let Some(input) = rx.recv().await {
            let Some(mut output) = tx.reserve().await else {
                return;
            };
            output
                .par_iter_mut()
                .zip(input.par_iter())
                .for_each(|(o, i)| *o = a * i + b);
            output.send();
        }
    }

    async fn store(mut rx: Receiver<[f32; TILE], 2>, y: &mut [f32]) {
        let mut tiles = block_tiles(y.len(), TILE);
        while let Some(slot) = rx.recv().await {
            let tile = tiles.next().unwrap();
            slot.copy_to(&mut y[tile]).await;
        }
    }

    /// The coefficients, `16` per field (`c0` the lowest powers): arrays indexed by constants
    /// only, so they live in registers.
    #[derive(Clone, Copy)]
    pub struct Coefs {
        pub c0: [f32; 16],
        pub c1: [f32; 16],
        pub c2: [f32; 16],
        pub c3: [f32; 16],
        pub c4: [f32; 16],
        pub c5: [f32; 16],
        pub c6: [f32; 16],
        pub c7: [f32; 16],
        pub c8: [f32; 16],
        pub c9: [f32; 16],
        pub c10: [f32; 16],
        pub c11: [f32; 16],
        pub c12: [f32; 16],
    }

    /// `y[i] = p(x[i])` for the polynomial of `coef` (`COEFS` coefficients, lowest power first).
    /// Sized and placed in warpgroups: the same 12 warps as `poly_uniform`'s.
    #[kernel(warpgroups = 3)]
    pub async fn poly(coef: &[f32], x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; TILE], 4>();
        join!(
            on_warpgroups(0..1, load(x, tx)),
            on_warpgroups(1..3, eval(coef, rx, y)),
        )
        .await;
    }

    /// The same kernel without budgets, to compare ptxas's reports.
    #[kernel(warps = 12, registers(off))]
    pub async fn poly_uniform(coef: &[f32], x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; TILE], 4>();
        join!(
            on_warps(0..4, load(x, tx)),
            on_warps(4..12, eval(coef, rx, y)),
        )
        .await;
    }

    async fn eval(coef: &[f32], mut rx: Receiver<[f32; TILE], 4>, y: &mut [f32]) {
        let k = Coefs {
            c0: [
                coef[0], coef[1], coef[2], coef[3], coef[4], coef[5], coef[6], coef[7], coef[8],
                coef[9], coef[10], coef[11], coef[12], coef[13], coef[14], coef[15],
            ],
            c1: [
                coef[16], coef[17], coef[18], coef[19], coef[20], coef[21], coef[22], coef[23],
                coef[24], coef[25], coef[26], coef[27], coef[28], coef[29], coef[30], coef[31],
            ],
            c2: [
                coef[32], coef[33], coef[34], coef[35], coef[36], coef[37], coef[38], coef[39],
                coef[40], coef[41], coef[42], coef[43], coef[44], coef[45], coef[46], coef[47],
            ],
            c3: [
                coef[48], coef[49], coef[50], coef[51], coef[52], coef[53], coef[54], coef[55],
                coef[56], coef[57], coef[58], coef[59], coef[60], coef[61], coef[62], coef[63],
            ],
            c4: [
                coef[64], coef[65], coef[66], coef[67], coef[68], coef[69], coef[70], coef[71],
                coef[72], coef[73], coef[74], coef[75], coef[76], coef[77], coef[78], coef[79],
            ],
            c5: [
                coef[80], coef[81], coef[82], coef[83], coef[84], coef[85], coef[86], coef[87],
                coef[88], coef[89], coef[90], coef[91], coef[92], coef[93], coef[94], coef[95],
            ],
            c6: [
                coef[96], coef[97], coef[98], coef[99], coef[100], coef[101], coef[102], coef[103],
                coef[104], coef[105], coef[106], coef[107], coef[108], coef[109], coef[110],
                coef[111],
            ],
            c7: [
                coef[112], coef[113], coef[114], coef[115], coef[116], coef[117], coef[118],
                coef[119], coef[120], coef[121], coef[122], coef[123], coef[124], coef[125],
                coef[126], coef[127],
            ],
            c8: [
                coef[128], coef[129], coef[130], coef[131], coef[132], coef[133], coef[134],
                coef[135], coef[136], coef[137], coef[138], coef[139], coef[140], coef[141],
                coef[142], coef[143],
            ],
            c9: [
                coef[144], coef[145], coef[146], coef[147], coef[148], coef[149], coef[150],
                coef[151], coef[152], coef[153], coef[154], coef[155], coef[156], coef[157],
                coef[158], coef[159],
            ],
            c10: [
                coef[160], coef[161], coef[162], coef[163], coef[164], coef[165], coef[166],
                coef[167], coef[168], coef[169], coef[170], coef[171], coef[172], coef[173],
                coef[174], coef[175],
            ],
            c11: [
                coef[176], coef[177], coef[178], coef[179], coef[180], coef[181], coef[182],
                coef[183], coef[184], coef[185], coef[186], coef[187], coef[188], coef[189],
                coef[190], coef[191],
            ],
            c12: [
                coef[192], coef[193], coef[194], coef[195], coef[196], coef[197], coef[198],
                coef[199], coef[200], coef[201], coef[202], coef[203], coef[204], coef[205],
                coef[206], coef[207],
            ],
        };
        let mut tiles = block_tiles(y.len(), TILE);
        while let Some(slot) = rx.recv().await {
            let tile = tiles.next().unwrap();
            y[tile]
                .par_iter_mut()
                .zip(slot.par_iter())
                .for_each(|(o, xi)| *o = horner(k, *xi));
        }
    }

    /// `c[15] x^15 + .. + c[0]` after `acc x^16`, by Horner's rule.
    fn horner16(c: [f32; 16], x: f32, acc: f32) -> f32 {
        let mut a = acc;
        a = a * x + c[15];
        a = a * x + c[14];
        a = a * x + c[13];
        a = a * x + c[12];
        a = a * x + c[11];
        a = a * x + c[10];
        a = a * x + c[9];
        a = a * x + c[8];
        a = a * x + c[7];
        a = a * x + c[6];
        a = a * x + c[5];
        a = a * x + c[4];
        a = a * x + c[3];
        a = a * x + c[2];
        a = a * x + c[1];
        a = a * x + c[0];
        a
    }

    pub fn horner(k: Coefs, x: f32) -> f32 {
        let mut a = 0.0f32;
        a = horner16(k.c12, x, a);
        a = horner16(k.c11, x, a);
        a = horner16(k.c10, x, a);
        a = horner16(k.c9, x, a);
        a = horner16(k.c8, x, a);
        a = horner16(k.c7, x, a);
        a = horner16(k.c6, x, a);
        a = horner16(k.c5, x, a);
        a = horner16(k.c4, x, a);
        a = horner16(k.c3, x, a);
        a = horner16(k.c2, x, a);
        a = horner16(k.c1, x, a);
        a = horner16(k.c0, x, a);
        a
    }
}
