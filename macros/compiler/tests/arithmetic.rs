//! What the PTX writer makes of arithmetic the compiler knows more about than ptxas: unsigned
//! divisions by a constant power of two, and checks of a constant divisor.

use gpu_async_compiler::compile;
use quote::quote;

/// The PTX of the one kernel of `module`.
fn ptx(module: proc_macro2::TokenStream) -> String {
    let mut kernels = compile(module).unwrap_or_else(|d| panic!("{:?}", d.messages()));
    kernels.remove(0).ptx
}

#[test]
fn unsigned_division_by_a_power_of_two_is_a_shift_and_its_remainder_a_mask() {
    let ptx = ptx(quote! {
        mod m {
            use gpu_async::device::*;
            #[kernel(warps = 1)]
            pub async fn k(y: &mut [u64], z: &mut [u32]) {
                join!(on_warps(0..1, r(y, z))).await;
            }
            async fn r(y: &mut [u64], z: &mut [u32]) {
                y.par_iter_mut().enumerate().for_each(|(i, v)| *v = (i / 32 + i % 32) as u64);
                z.par_iter_mut().enumerate().for_each(|(i, v)| *v = (i as u32) / 8 + (i as u32) % 8);
            }
        }
    });
    for needle in [
        "shr.u64", ", 5;", "and.b64", ", 31;", "shr.u32", ", 3;", "and.b32", ", 7;",
    ] {
        assert!(ptx.contains(needle), "missing {needle:?}");
    }
    assert!(!ptx.contains("div.u") && !ptx.contains("rem.u"), "{ptx}");
    // The divisor is a constant other than zero: its checks are left out.
    assert!(!ptx.contains("divisor of zero") && !ptx.contains("divide by zero"));
}

#[test]
fn signed_and_unknown_divisors_keep_their_division_and_checks() {
    let ptx = ptx(quote! {
        mod m {
            use gpu_async::device::*;
            #[kernel(warps = 1)]
            pub async fn k(d: u32, y: &mut [i32], z: &mut [u32]) {
                join!(on_warps(0..1, r(d, y, z))).await;
            }
            async fn r(d: u32, y: &mut [i32], z: &mut [u32]) {
                y.par_iter_mut().enumerate().for_each(|(i, v)| *v = (i as i32 - 100) / 8);
                z.par_iter_mut().enumerate().for_each(|(i, v)| *v = (i as u32) % d);
            }
        }
    });
    assert!(
        ptx.contains("div.s32"),
        "a signed division rounds toward zero: no shift"
    );
    assert!(ptx.contains("rem.u32"), "a divisor that is not a constant");
    assert!(
        ptx.contains("divisor of zero"),
        "the unknown divisor's check stays"
    );
}

#[test]
fn a_64_bit_division_by_a_register_divides_in_32_bits_when_both_operands_fit() {
    let ptx = ptx(quote! {
        mod m {
            use gpu_async::device::*;
            #[kernel(warps = 1)]
            pub async fn k(y: &mut [u64], d: u64) {
                join!(on_warps(0..1, r(y, d))).await;
            }
            async fn r(y: &mut [u64], d: u64) {
                let b = block_index() as u64;
                y[0..2].par_iter_mut().for_each(|v| *v = b / d + b % d);
            }
        }
    });
    // Both high words tested, then the 32-bit path, with the 64-bit one beside it.
    for needle in [
        "shr.u64", ", 32;", "div.u32", "rem.u32", "div.u64", "rem.u64",
    ] {
        assert!(ptx.contains(needle), "no `{needle}` in:\n{ptx}");
    }
}
