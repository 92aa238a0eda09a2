//! Running NVIDIA's `ptxas` on generated PTX, for tests and the inspect tool (never by the macro).
//!
//! `ptxas` comes from `$PTXAS`, the `PATH`, a CUDA toolkit (`$CUDA_HOME`, `$CUDA_PATH`,
//! `/usr/local/cuda`) or the PyPI wheel `nvidia-cuda-nvcc==13.0.88` (`nvidia/cu13/bin/ptxas` in
//! python3's site-packages, user site-packages or active virtual environment); [`search()`] has
//! the order.

use std::path::PathBuf;
use std::process::Command;

mod search;

pub use search::{candidates, search, Env, NotFound, INSTALL, LOOKED_IN, WHEEL_DIR};

/// Where ptxas is in this process's environment, or why it was not found.
pub fn locate() -> Result<PathBuf, NotFound> {
    search(&Env::of_this_process())
}

/// Where ptxas is in this process's environment: [`locate`] without the reason.
pub fn find() -> Option<PathBuf> {
    locate().ok()
}

/// What ptxas reported for one kernel.
#[derive(Debug, Clone)]
pub struct Report {
    /// The resource lines (registers, barriers, stack frame, spills), without the ones that change
    /// from run to run (compile time).
    pub resources: String,
    /// ptxas's whole output.
    pub log: String,
}

/// The architecture `ptx` is for, from its `.target` line: `sm_90`, or `sm_90a` for kernels with
/// register budgets (ptxas refuses sm_90a PTX for `-arch=sm_90`).
pub fn arch(ptx: &str) -> &str {
    ptx.lines()
        .find_map(|l| l.trim().strip_prefix(".target "))
        .map_or("sm_90", str::trim)
}

/// Assembles `ptx` for its `.target` (see [`arch`]) with `ptxas -v`; `Err` carries ptxas's output
/// when it rejects the PTX, warns, or reports that it ignored the `setmaxnreg`s (its info
/// C7508, which leaves every role with the same registers).
pub fn assemble(ptxas: &PathBuf, name: &str, ptx: &str) -> Result<Report, String> {
    // One file per call: threads of one process (tests run in parallel) may assemble kernels of
    // the same name at once, and a shared file would be rewritten under a running ptxas.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("gpu-async-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let name = format!("{name}-{call}");
    let src = dir.join(format!("{name}.ptx"));
    std::fs::write(&src, ptx).map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    let out = Command::new(ptxas)
        .arg(format!("-arch={}", arch(ptx)))
        .arg("-v")
        .arg(&src)
        .arg("-o")
        .arg(dir.join(format!("{name}.cubin")))
        .output()
        .map_err(|e| format!("cannot run {}: {e}", ptxas.display()))?;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() || log.contains("warning") || log.contains("'setmaxnreg' ignored") {
        return Err(log);
    }
    let resources = log
        .lines()
        .filter(|l| l.contains("Used") || l.contains("stack frame"))
        .map(|l| l.trim().trim_start_matches("ptxas info    : ").to_string())
        .collect::<Vec<_>>()
        .join("\n");
    Ok(Report { resources, log })
}
