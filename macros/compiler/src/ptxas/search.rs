//! Where ptxas is. Only `std`: the build script of the dev-only `gpu-async-testing` crate
//! includes this file, so a test is ignored for want of ptxas exactly when the test itself would
//! not find it.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The places searched, for messages.
pub const LOOKED_IN: &str = "looked in $PTXAS, PATH, $CUDA_HOME/bin, $CUDA_PATH/bin, \
     /usr/local/cuda/bin, python3's site-packages and user site-packages, \
     $VIRTUAL_ENV/lib/python3*/site-packages";

/// How to get ptxas, for messages.
pub const INSTALL: &str = "`pip install nvidia-cuda-nvcc==13.0.88` or set PTXAS";

/// Where the PyPI wheel puts ptxas, under a site-packages directory.
pub const WHEEL_DIR: &str = "nvidia/cu13/bin";

/// What the search reads: environment variables and python3's site-packages directories, from
/// [`Env::of_this_process`] or written out by a test. An empty variable counts as unset.
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// `$PTXAS`.
    pub ptxas: Option<OsString>,
    /// `$PATH`.
    pub path: Option<OsString>,
    /// `$CUDA_HOME`.
    pub cuda_home: Option<OsString>,
    /// `$CUDA_PATH`.
    pub cuda_path: Option<OsString>,
    /// The toolkit's default directory: `/usr/local/cuda` for this process, none by default.
    pub cuda_default: Option<PathBuf>,
    /// python3's `site.getsitepackages()`, then `site.getusersitepackages()`; empty without a
    /// working python3.
    pub site_packages: Vec<PathBuf>,
    /// `$VIRTUAL_ENV`.
    pub virtual_env: Option<OsString>,
}

impl Env {
    /// This process's environment; runs `python3` (from the `PATH`) for its site-packages.
    pub fn of_this_process() -> Env {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        Env {
            ptxas: var("PTXAS"),
            path: var("PATH"),
            cuda_home: var("CUDA_HOME"),
            cuda_path: var("CUDA_PATH"),
            cuda_default: Some(PathBuf::from("/usr/local/cuda")),
            site_packages: python_site_packages(),
            virtual_env: var("VIRTUAL_ENV"),
        }
    }
}

/// python3's site-packages directories, then its user site-packages; none when python3 is
/// missing or fails.
fn python_site_packages() -> Vec<PathBuf> {
    let script = "import site\n\
                  for d in getattr(site, 'getsitepackages', list)(): print(d)\n\
                  print(site.getusersitepackages())\n";
    match Command::new("python3").args(["-c", script]).output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(PathBuf::from)
            .collect(),
        _ => Vec::new(),
    }
}

/// Why ptxas was not found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotFound {
    /// `$PTXAS` is set but is not the absolute path of a file.
    BadPtxasVar {
        /// The variable's value.
        value: PathBuf,
        /// What is wrong with it.
        why: &'static str,
    },
    /// ptxas is in none of the places searched.
    Nowhere,
}

impl fmt::Display for NotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotFound::BadPtxasVar { value, why } => write!(
                f,
                "PTXAS={} {why}: set it to ptxas's absolute path, or unset it to search the PATH \
                 and the usual places",
                value.display()
            ),
            NotFound::Nowhere => write!(f, "ptxas not found ({LOOKED_IN}); {INSTALL}"),
        }
    }
}

impl std::error::Error for NotFound {}

/// The executable's file name on this platform.
fn exe() -> String {
    format!("ptxas{}", std::env::consts::EXE_SUFFIX)
}

/// Every place the search looks at after `$PTXAS`, in order (files that may not exist).
pub fn candidates(env: &Env) -> Vec<PathBuf> {
    let exe = exe();
    let mut places = Vec::new();
    if let Some(path) = &env.path {
        places.extend(std::env::split_paths(path).map(|dir| dir.join(&exe)));
    }
    for cuda in [&env.cuda_home, &env.cuda_path].into_iter().flatten() {
        places.push(Path::new(cuda).join("bin").join(&exe));
    }
    if let Some(cuda) = &env.cuda_default {
        places.push(cuda.join("bin").join(&exe));
    }
    for site in &env.site_packages {
        places.push(site.join(WHEEL_DIR).join(&exe));
    }
    if let Some(venv) = &env.virtual_env {
        for site in venv_site_packages(Path::new(venv)) {
            places.push(site.join(WHEEL_DIR).join(&exe));
        }
    }
    places
}

/// `venv/lib/python3*/site-packages`, in name order.
fn venv_site_packages(venv: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(venv.join("lib")) else {
        return Vec::new();
    };
    let mut sites: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
        .map(|e| e.path().join("site-packages"))
        .collect();
    sites.sort();
    sites
}

/// Where ptxas is in `env`: `$PTXAS`, which must then be the absolute path of a file (a `PTXAS`
/// that names nothing is an error, not a reason to look elsewhere); else the first file of
/// [`candidates`]: each directory of the `PATH`; `$CUDA_HOME/bin`, `$CUDA_PATH/bin` and
/// `/usr/local/cuda/bin`; then `nvidia/cu13/bin/ptxas` (where the PyPI wheel `nvidia-cuda-nvcc`
/// puts it) under python3's site-packages (`site.getsitepackages()`), its user site-packages
/// (`site.getusersitepackages()`) and an active virtual environment's
/// `$VIRTUAL_ENV/lib/python3*/site-packages`.
pub fn search(env: &Env) -> Result<PathBuf, NotFound> {
    if let Some(value) = &env.ptxas {
        let value = PathBuf::from(value);
        let why = if !value.is_absolute() {
            "is not an absolute path"
        } else if !value.exists() {
            "does not exist"
        } else if !value.is_file() {
            "is not a file"
        } else {
            return Ok(value);
        };
        return Err(NotFound::BadPtxasVar { value, why });
    }
    candidates(env)
        .into_iter()
        .find(|p| p.is_file())
        .ok_or(NotFound::Nowhere)
}
