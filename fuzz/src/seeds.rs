//! The seeds: every `#[gpu_async]` module of the repository's examples, ui-tests and runtime
//! tests, as the attribute receives it (the module without the attribute).

use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// A seed module and the file it came from.
#[derive(Clone)]
pub struct Seed {
    /// The file, relative to the workspace.
    pub origin: String,
    /// The module, without `#[gpu_async]`.
    pub module: syn::ItemMod,
}

/// The workspace's root (the fuzzer's parent folder).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the fuzzer is a folder of the workspace")
        .to_path_buf()
}

/// The `.rs` files under `dir`, recursively, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The files the seeds are read from: `examples/*.rs`, `ui-tests/tests/ui/**/*.rs` and
/// `runtime/tests/**/*.rs`.
pub fn seed_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Ok(entries) = std::fs::read_dir(root.join("examples")) {
        let mut examples: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .collect();
        examples.sort();
        files.extend(examples);
    }
    rust_files(&root.join("ui-tests/tests/ui"), &mut files);
    rust_files(&root.join("runtime/tests"), &mut files);
    files
}

/// Whether `attrs` has `#[gpu_async]` (or `#[gpu_async::gpu_async]`).
fn is_gpu_async(attr: &syn::Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "gpu_async")
}

/// The `#[gpu_async]` modules of one Rust source file, without the attribute.
pub fn modules_of(source: &str) -> Vec<syn::ItemMod> {
    struct Modules(Vec<syn::ItemMod>);
    impl<'a> Visit<'a> for Modules {
        fn visit_item_mod(&mut self, m: &'a syn::ItemMod) {
            if m.attrs.iter().any(is_gpu_async) {
                let mut m = m.clone();
                m.attrs.retain(|a| !is_gpu_async(a));
                self.0.push(m);
            } else {
                syn::visit::visit_item_mod(self, m);
            }
        }
    }
    let Ok(file) = syn::parse_file(source) else {
        return Vec::new();
    };
    let mut v = Modules(Vec::new());
    v.visit_file(&file);
    v.0
}

/// Every seed under `root`.
pub fn load(root: &Path) -> Vec<Seed> {
    let mut seeds = Vec::new();
    for file in seed_files(root) {
        let Ok(source) = std::fs::read_to_string(&file) else {
            continue;
        };
        let origin = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        for module in modules_of(&source) {
            seeds.push(Seed {
                origin: origin.clone(),
                module,
            });
        }
    }
    seeds
}
