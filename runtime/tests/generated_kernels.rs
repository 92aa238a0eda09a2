//! Every kernel the project generates: assembled by `ptxas -arch=sm_90`, and its IR and PTX
//! (with ptxas's resource report) kept as insta snapshots for review.
//!
//! ptxas comes from the PyPI wheel `nvidia-cuda-nvcc==13.0.88` (what `.ci/run` installs), found
//! through `$PTXAS`, the `PATH`, or python3's site-packages. Without it these tests fail, unless
//! `GPU_ASYNC_SKIP_PTXAS=1` says to skip them.

#[allow(dead_code)]
#[path = "../../examples/saxpy.rs"]
mod saxpy;

#[allow(dead_code)]
#[path = "../../examples/pipeline.rs"]
mod pipeline;

#[allow(dead_code)]
#[path = "common/deadlock.rs"]
mod deadlock;

#[allow(dead_code)]
#[path = "common/language.rs"]
mod language;

use std::path::PathBuf;
use std::process::Command;

struct Generated {
    name: &'static str,
    ptx: &'static str,
    ir: &'static str,
    spec: &'static gpu_async::KernelSpec,
}

fn kernels() -> Vec<Generated> {
    vec![
        Generated {
            name: "saxpy",
            ptx: saxpy::stream::saxpy::PTX,
            ir: saxpy::stream::saxpy::IR,
            spec: &saxpy::stream::saxpy::SPEC,
        },
        Generated {
            name: "pipeline_scale_shift",
            ptx: pipeline::pipeline::scale_shift::PTX,
            ir: pipeline::pipeline::scale_shift::IR,
            spec: &pipeline::pipeline::scale_shift::SPEC,
        },
        Generated {
            name: "deadlock_cross",
            ptx: deadlock::deadlock::cross::PTX,
            ir: deadlock::deadlock::cross::IR,
            spec: &deadlock::deadlock::cross::SPEC,
        },
        Generated {
            name: "language_mix",
            ptx: language::language::mix::PTX,
            ir: language::language::mix::IR,
            spec: &language::language::mix::SPEC,
        },
    ]
}

fn find_ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PTXAS") {
        return Some(PathBuf::from(p));
    }
    if Command::new("ptxas")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Some(PathBuf::from("ptxas"));
    }
    let out = Command::new("python3")
        .args([
            "-c",
            "import site; print('\\n'.join(site.getsitepackages()))",
        ])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|dir| PathBuf::from(dir).join("nvidia/cu13/bin/ptxas"))
        .find(|p| p.exists())
}

/// ptxas, or `None` when the environment opts out; panics (fails the test) when it is missing.
fn ptxas() -> Option<PathBuf> {
    if std::env::var("GPU_ASYNC_SKIP_PTXAS").is_ok_and(|v| v == "1") {
        eprintln!("skipping: GPU_ASYNC_SKIP_PTXAS=1");
        return None;
    }
    match find_ptxas() {
        Some(p) => Some(p),
        None => panic!(
            "ptxas not found: `pip install nvidia-cuda-nvcc==13.0.88` (or set PTXAS=/path/to/ptxas); \
             set GPU_ASYNC_SKIP_PTXAS=1 to skip these tests"
        ),
    }
}

/// Assembles `ptx`; returns ptxas's resource report (registers, barriers, shared memory, stack,
/// spills), without the lines that change from run to run.
fn assemble(ptxas: &PathBuf, name: &str, ptx: &str) -> String {
    let dir = std::env::temp_dir().join(format!("gpu-async-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let src = dir.join(format!("{name}.ptx"));
    std::fs::write(&src, ptx).expect("write ptx");
    let out = Command::new(ptxas)
        .arg("-arch=sm_90")
        .arg("-v")
        .arg(&src)
        .arg("-o")
        .arg(dir.join(format!("{name}.cubin")))
        .output()
        .expect("run ptxas");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "ptxas rejected `{name}`:\n{log}");
    assert!(!log.contains("warning"), "ptxas warned on `{name}`:\n{log}");
    log.lines()
        .filter(|l| l.contains("Used") || l.contains("stack frame"))
        .map(|l| l.trim().trim_start_matches("ptxas info    : ").to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_generated_kernel_assembles_with_ptxas() {
    let Some(ptxas) = ptxas() else { return };
    for k in kernels() {
        let report = assemble(&ptxas, k.name, k.ptx);
        assert!(
            report.contains("0 bytes spill stores"),
            "`{}` spills:\n{report}",
            k.name
        );
    }
}

#[test]
fn ir_snapshots() {
    for k in kernels() {
        insta::assert_snapshot!(format!("{}.ir", k.name), k.ir);
    }
}

#[test]
fn ptx_snapshots_with_ptxas_report() {
    let Some(ptxas) = ptxas() else { return };
    for k in kernels() {
        let report = assemble(&ptxas, k.name, k.ptx);
        // ptxas sees no dynamic shared memory: its size comes from the kernel's layout.
        let header = format!(
            "// ptxas -arch=sm_90 -v:\n// {}\n// dynamic shared memory: {} B per block, {} threads\n",
            report.replace('\n', "\n// "),
            k.spec.shared_bytes,
            32 * k.spec.warps
        );
        insta::assert_snapshot!(format!("{}.ptx", k.name), format!("{header}\n{}", k.ptx));
    }
}
