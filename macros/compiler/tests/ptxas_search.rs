//! Where `ptxas::search` looks, and in which order: over environments written out here, with
//! stand-ins for ptxas in temporary directories (never this process's environment, which every
//! test of the binary shares).

use std::path::{Path, PathBuf};

use gpu_async_compiler::ptxas::{candidates, search, Env, NotFound};

const EXE: &str = if cfg!(windows) { "ptxas.exe" } else { "ptxas" };

/// A temporary directory of one test, removed when it is dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "gpu-async-ptxas-search-{}-{test}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the scratch directory");
        Scratch(dir)
    }

    /// `rel` under the scratch directory.
    fn at(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    /// A stand-in for ptxas at `rel/ptxas`; returns its path.
    fn ptxas_in(&self, rel: &str) -> PathBuf {
        let dir = self.at(rel);
        std::fs::create_dir_all(&dir).expect("create a directory");
        let file = dir.join(EXE);
        std::fs::write(&file, "#!/bin/sh\n").expect("write a stand-in");
        file
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `dirs` as a `PATH` value.
fn path_of(dirs: &[PathBuf]) -> Option<std::ffi::OsString> {
    Some(std::env::join_paths(dirs).expect("a PATH value"))
}

/// An environment in which every place has a directory of its own under `s`.
fn every_place(s: &Scratch) -> Env {
    Env {
        ptxas: None,
        path: path_of(&[s.at("path1"), s.at("path2")]),
        cuda_home: Some(s.at("cuda_home").into()),
        cuda_path: Some(s.at("cuda_path").into()),
        cuda_default: Some(s.at("usr_local_cuda")),
        site_packages: vec![s.at("site"), s.at("user_site")],
        virtual_env: Some(s.at("venv").into()),
    }
}

#[test]
fn the_places_come_in_order() {
    let s = Scratch::new("order");
    std::fs::create_dir_all(s.at("venv/lib/python3.12/site-packages")).unwrap();
    std::fs::create_dir_all(s.at("venv/lib/python3.10/site-packages")).unwrap();
    std::fs::create_dir_all(s.at("venv/lib/site-python")).unwrap();
    let wheel = |site: &str| s.at(site).join("nvidia/cu13/bin").join(EXE);
    assert_eq!(
        candidates(&every_place(&s)),
        vec![
            s.at("path1").join(EXE),
            s.at("path2").join(EXE),
            s.at("cuda_home/bin").join(EXE),
            s.at("cuda_path/bin").join(EXE),
            s.at("usr_local_cuda/bin").join(EXE),
            wheel("site"),
            wheel("user_site"),
            wheel("venv/lib/python3.10/site-packages"),
            wheel("venv/lib/python3.12/site-packages"),
        ]
    );
}

#[test]
fn the_first_place_that_has_ptxas_wins() {
    let s = Scratch::new("first");
    let env = every_place(&s);
    let found = [
        s.ptxas_in("path1"),
        s.ptxas_in("path2"),
        s.ptxas_in("cuda_home/bin"),
        s.ptxas_in("cuda_path/bin"),
        s.ptxas_in("usr_local_cuda/bin"),
        s.ptxas_in("site/nvidia/cu13/bin"),
        s.ptxas_in("user_site/nvidia/cu13/bin"),
        s.ptxas_in("venv/lib/python3.11/site-packages/nvidia/cu13/bin"),
    ];
    // Each one found while it is there, then removed to uncover the next.
    for file in &found {
        assert_eq!(search(&env), Ok(file.clone()));
        std::fs::remove_file(file).unwrap();
    }
    assert_eq!(search(&env), Err(NotFound::Nowhere));
}

#[test]
fn a_directory_named_ptxas_is_not_ptxas() {
    let s = Scratch::new("directory");
    std::fs::create_dir_all(s.at("path1").join(EXE)).unwrap();
    let file = s.ptxas_in("path2");
    assert_eq!(search(&every_place(&s)), Ok(file));
}

#[test]
fn ptxas_from_the_variable_comes_before_the_path() {
    let s = Scratch::new("variable");
    s.ptxas_in("path1");
    let mine = s.ptxas_in("mine");
    let env = Env {
        ptxas: Some(mine.clone().into()),
        ..every_place(&s)
    };
    assert_eq!(search(&env), Ok(mine));
}

#[test]
fn a_variable_that_names_nothing_is_an_error_not_a_fallback() {
    let s = Scratch::new("bad_variable");
    s.ptxas_in("path1");
    let bad = |value: PathBuf| {
        let env = Env {
            ptxas: Some(value.into()),
            ..every_place(&s)
        };
        match search(&env) {
            Err(e @ NotFound::BadPtxasVar { .. }) => e.to_string(),
            other => panic!("expected an error, got {other:?}"),
        }
    };
    let missing = s.at("nowhere/ptxas");
    let message = bad(missing.clone());
    assert!(message.contains("does not exist"), "{message}");
    assert!(
        message.contains(&missing.display().to_string()),
        "{message}"
    );
    let message = bad(s.at("path1"));
    assert!(message.contains("is not a file"), "{message}");
    let message = bad(PathBuf::from("bin").join(EXE));
    assert!(message.contains("is not an absolute path"), "{message}");
}

#[test]
fn nowhere_says_where_it_looked_and_how_to_install() {
    assert_eq!(search(&Env::default()), Err(NotFound::Nowhere));
    let s = Scratch::new("nowhere");
    assert_eq!(search(&every_place(&s)), Err(NotFound::Nowhere));
    let message = NotFound::Nowhere.to_string();
    for needle in [
        "$PTXAS",
        "PATH",
        "$CUDA_HOME/bin",
        "$CUDA_PATH/bin",
        "/usr/local/cuda/bin",
        "site-packages",
        "$VIRTUAL_ENV",
        "pip install nvidia-cuda-nvcc==13.0.88",
    ] {
        assert!(message.contains(needle), "{needle}: {message}");
    }
}

#[test]
fn an_empty_environment_has_no_places() {
    assert_eq!(candidates(&Env::default()), Vec::<PathBuf>::new());
    let venv_without_lib = Env {
        virtual_env: Some(Path::new("/nonexistent-venv").into()),
        ..Env::default()
    };
    assert_eq!(candidates(&venv_without_lib), Vec::<PathBuf>::new());
}
