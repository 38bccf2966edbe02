//! The layers point only down: `cmd` → `host` → `kernel` → `native`. Read from the sources:
//! no module of `kernel/` names `host` or `cmd`, and no module of `native/` names `kernel`,
//! `host` or `cmd` (comments aside).

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

/// `file:line: text` of every code line of `dir` naming one of `forbidden` as a crate path.
fn violations(dir: &str, forbidden: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(dir);
    let mut out = Vec::new();
    for f in rust_files(&root) {
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for layer in forbidden {
                if code.contains(&format!("crate::{layer}"))
                    || code.contains(&format!("fen::{layer}"))
                {
                    out.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
                }
            }
        }
    }
    out
}

#[test]
fn the_kernel_imports_neither_the_host_nor_the_cli() {
    let bad = violations("kernel", &["host", "cmd"]);
    assert!(bad.is_empty(), "kernel/ reaches up:\n{}", bad.join("\n"));
}

#[test]
fn native_cores_import_no_other_layer() {
    let bad = violations("native", &["kernel", "host", "cmd"]);
    assert!(bad.is_empty(), "native/ reaches up:\n{}", bad.join("\n"));
}

#[test]
fn the_host_does_not_import_the_cli() {
    let bad = violations("host", &["cmd"]);
    assert!(bad.is_empty(), "host/ reaches up:\n{}", bad.join("\n"));
}
