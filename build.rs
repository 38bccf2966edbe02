//! Embeds the first-party Lua extensions (`extensions/`) into the binary as a table of
//! `(relative path, contents)` pairs, so `fen` runs from a single file.
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn collect(dir: &Path, base: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, base, out);
        } else if path.extension().is_some_and(|e| e == "lua") {
            let rel = path
                .strip_prefix(base)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            out.push((rel, path));
        }
    }
}

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into()));
    let root = manifest_dir.join("extensions");
    println!("cargo:rerun-if-changed=extensions");
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    files.sort();
    let mut src = String::from("&[\n");
    for (rel, path) in &files {
        // Every directory must be watched for added files, not only the top one.
        if let Some(parent) = path.parent() {
            println!("cargo:rerun-if-changed={}", parent.display());
        }
        println!("cargo:rerun-if-changed={}", path.display());
        let _ = writeln!(
            src,
            "    ({rel:?}, include_str!({:?})),",
            path.display().to_string()
        );
    }
    src.push(']');
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into()))
        .join("embedded_extensions.rs");
    if let Err(e) = std::fs::write(&out, src) {
        panic!("cannot write {}: {e}", out.display());
    }
}
