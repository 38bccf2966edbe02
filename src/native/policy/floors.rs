//! Floors and destructive operations. A floor is denied in every mode, by any rule or hook:
//! writes to git metadata that runs code, recursive or forced deletion of `/`, `$HOME`, a
//! workspace root or anything outside the workspace, writes to block devices, disk formatting,
//! power-off, fork bombs, recursive chmod/chown of `/` or `~`. Destructive-but-legitimate
//! operations (`git reset --hard`, `git clean -f`, `git push --force`, `rm -rf` inside the
//! workspace) are reported separately so the policy can ask for them in every mode but yolo.

use super::commands::git_subcommand;
use super::paths::{PathClass, PathInfo};
use super::shell::{Access, PathRef, Segment};

/// What the floor check found for one segment.
#[derive(Debug, Clone, Default)]
pub struct Hazards {
    /// A floor: always denied.
    pub floor: Option<String>,
    /// The path the floor is about, when it is about one (the denial names it).
    pub floor_path: Option<String>,
    /// Destructive but legitimate: asked for in every mode but yolo.
    pub destructive: Option<String>,
}

fn short_flags(args: &[String]) -> String {
    args.iter()
        .take_while(|a| *a != "--")
        .filter(|a| a.starts_with('-') && !a.starts_with("--"))
        .flat_map(|a| a.chars().skip(1))
        .collect()
}

fn has_long(args: &[String], names: &[&str]) -> bool {
    args.iter().take_while(|a| *a != "--").any(|a| {
        names.iter().any(|n| {
            a.strip_prefix(n)
                .is_some_and(|v| v.is_empty() || v.starts_with('='))
        })
    })
}

/// Checks one segment whose paths have been classified (`paths[i]` ↔ `infos[i]`).
pub fn check(seg: &Segment, paths: &[PathRef], infos: &[PathInfo]) -> Hazards {
    let mut h = Hazards::default();
    if let Some(why) = seg.hazard_text() {
        h.floor = Some(why);
        return h;
    }
    let name = seg.name();
    let args = seg.argv.get(1..).unwrap_or(&[]);
    let flags = short_flags(args);

    // Commands that are floors by name.
    let base = name;
    if base.starts_with("mkfs")
        || matches!(
            base,
            "fdisk" | "sfdisk" | "cfdisk" | "parted" | "wipefs" | "mkswap" | "blkdiscard"
        )
    {
        h.floor = Some(format!("`{base}` formats or repartitions disks"));
        return h;
    }
    if matches!(
        base,
        "shutdown" | "reboot" | "halt" | "poweroff" | "telinit" | "kexec"
    ) || (base == "init"
        && args
            .first()
            .is_some_and(|a| matches!(a.as_str(), "0" | "6")))
        || (base == "systemctl"
            && args.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "poweroff"
                        | "reboot"
                        | "halt"
                        | "kexec"
                        | "suspend"
                        | "hibernate"
                        | "emergency"
                        | "rescue"
                )
            }))
    {
        h.floor = Some(format!(
            "`{}` powers off or restarts the machine",
            seg.argv.join(" ")
        ));
        return h;
    }

    // Path-based floors.
    let recursive = flags.contains('r') || flags.contains('R') || has_long(args, &["--recursive"]);
    let force = flags.contains('f') || has_long(args, &["--force"]);
    let deleter = matches!(
        name,
        "rm" | "rmdir" | "unlink" | "shred" | "srm" | "trash" | "trash-put"
    );
    let perm = matches!(name, "chmod" | "chown" | "chgrp" | "chattr" | "setfacl");
    for (p, info) in paths.iter().zip(infos) {
        let writes = p.access != Access::Read;
        if !writes {
            continue;
        }
        if info.class == PathClass::Protected {
            let what = if info.fen_settings {
                "fen's own permission settings or code (a model never changes its own permissions)"
            } else {
                "git metadata that runs code"
            };
            h.floor = Some(format!("`{}` writes {what} ({})", p.raw, show(info)));
            h.floor_path = Some(show(info));
            return h;
        }
        if info.block_device {
            h.floor = Some(format!("writes to the block device {}", show(info)));
            h.floor_path = Some(show(info));
            return h;
        }
        let mass = p.access == Access::Delete
            && ((deleter && (recursive || force)) || p.contents || (name == "rsync"));
        // Inside the workspace only recursive deletion is destructive; `rm -f x.o` is a write.
        let wide = p.access == Access::Delete
            && ((deleter && recursive) || p.contents || (name == "rsync"));
        let moves_root = p.access == Access::Delete && name == "mv";
        if mass || moves_root {
            if info.is_fs_root {
                h.floor = Some("deletes the file-system root".into());
                return h;
            }
            if info.is_home {
                h.floor = Some("deletes the home directory".into());
                return h;
            }
            if info.is_workspace_root && !p.contents {
                h.floor = Some(format!("deletes the workspace root {}", show(info)));
                return h;
            }
            if mass
                && info.class != PathClass::Unknown
                && !info.in_workspace
                && info.class != PathClass::Stream
            {
                h.floor = Some(format!("deletes outside the workspace: {}", show(info)));
                h.floor_path = Some(show(info));
                return h;
            }
        }
        if perm && recursive && (info.is_fs_root || info.is_home) {
            h.floor = Some(format!("`{name} -R` on {}", show(info)));
            return h;
        }
        if perm && p.contents && (info.is_fs_root || info.is_home) {
            h.floor = Some(format!("`{name}` on everything under {}", show(info)));
            return h;
        }
        // Destructive but legitimate.
        if h.destructive.is_none() {
            if wide {
                h.destructive = Some(format!("deletes {} recursively or by force", p.raw));
            } else if info.git_dir && p.access == Access::Delete {
                h.destructive = Some("deletes a repository's .git directory".into());
            } else if p.contents && info.is_workspace_root && p.access == Access::Delete {
                h.destructive = Some(format!(
                    "changes everything under the workspace root ({})",
                    p.raw
                ));
            }
        }
    }
    if h.destructive.is_none() {
        h.destructive = destructive_git(&seg.argv);
    }
    if h.destructive.is_none() && deleter && recursive {
        h.destructive = Some(format!(
            "`{}` deletes recursively or by force",
            seg.argv.join(" ")
        ));
    }
    h
}

fn show(info: &PathInfo) -> String {
    info.path
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "an unknown path".into())
}

/// Git operations that throw work away or rewrite shared history.
fn destructive_git(argv: &[String]) -> Option<String> {
    if argv.first().map(String::as_str) != Some("git") {
        return None;
    }
    let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
    let (i, _) = git_subcommand(&args);
    let sub = *args.get(i)?;
    let rest = &args[i + 1..];
    let short: String = rest
        .iter()
        .filter(|a| a.starts_with('-') && !a.starts_with("--"))
        .flat_map(|a| a.chars().skip(1))
        .collect();
    let why = match sub {
        "reset"
            if rest
                .iter()
                .any(|a| matches!(*a, "--hard" | "--merge" | "--keep")) =>
        {
            "discards uncommitted changes"
        }
        "clean" if short.contains('f') || rest.contains(&"--force") => "deletes untracked files",
        "push"
            if short.contains('f')
                || short.contains('d')
                || rest.iter().any(|a| {
                    a.starts_with("--force") || matches!(*a, "--delete" | "--mirror" | "--prune")
                })
                || rest
                    .iter()
                    .any(|a| a.starts_with('+') || a.starts_with(':')) =>
        {
            "rewrites or deletes remote history"
        }
        "checkout"
            if short.contains('f')
                || rest.contains(&"--force")
                || rest.first() == Some(&".")
                || rest.windows(2).any(|w| w == ["--", "."]) =>
        {
            "discards local changes"
        }
        "restore"
            if rest
                .iter()
                .any(|a| *a == "." || *a == "--worktree" || *a == "-W")
                && !rest.contains(&"--staged") =>
        {
            "discards local changes"
        }
        "branch"
            if short.contains('D')
                || (short.contains('d') && (short.contains('f') || rest.contains(&"--force"))) =>
        {
            "deletes a branch"
        }
        "stash" if matches!(rest.first(), Some(&"drop" | &"clear")) => "drops stashed changes",
        "reflog" if matches!(rest.first(), Some(&"expire" | &"delete")) => "drops history",
        "filter-branch" | "filter-repo" => "rewrites history",
        "update-ref" if short.contains('d') => "deletes a ref",
        "gc" if rest.iter().any(|a| a.starts_with("--prune")) => "prunes unreachable objects",
        _ => return None,
    };
    Some(format!("`git {sub}` {why}"))
}
