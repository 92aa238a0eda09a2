//! The inspect tool on the pipeline example.

use std::process::Command;

#[test]
fn inspect_prints_roles_channels_layout_and_graph() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/pipeline.rs");
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-async-inspect"))
        .args([example, "scale_shift", "--no-ptx", "--ir"])
        .output()
        .expect("run gpu-async-inspect");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in [
        "kernel `scale_shift`: 6 warps (192 threads) per block",
        "transform        warps 1..5 (128 threads)",
        "load_tx/load_rx : [f32; 1024] x 4 slots, load -> transform",
        "slots @0..16384 (stride 4096 B)",
        "role1 -->|\"out_tx/out_rx: [f32; 1024] x 2\"| role2",
        "register budgets:\n  none: role `load` runs on warps 0..1, not whole warpgroups",
        "IR:\nkernel scale_shift",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    assert!(!text.contains("PTX:"), "--no-ptx");
}

#[test]
fn inspect_prints_register_budgets() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../runtime/tests/common/budgets.rs"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-async-inspect"))
        .args([file, "pipeline", "--no-ptx"])
        .output()
        .expect("run gpu-async-inspect");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    for needle in [
        "register budgets:\n  128 per thread at the entry (.maxnreg), budgets derived from the roles",
        "  load              40  setmaxnreg.dec.sync.aligned.u32 40;",
        "  transform        216  setmaxnreg.inc.sync.aligned.u32 216;",
        "  store             40  setmaxnreg.dec.sync.aligned.u32 40;",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    if gpu_async_compiler::ptxas::find().is_some() {
        assert!(text.contains("ptxas -arch=sm_90a:"), "{text}");
    }
}

#[test]
fn inspect_says_what_is_wrong() {
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-async-inspect"))
        .arg("/nonexistent.rs")
        .output()
        .expect("run gpu-async-inspect");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read /nonexistent.rs"));
}
