//! Path globs as the model writes them: `*.rs`, `src/**/*.ts`, `*.{rs,toml}`, `*.rs,*.toml`,
//! and `!*_test.go` to exclude.
//!
//! A glob without `/` matches the file name at any depth; a glob with `/` matches the path
//! relative to the search root, where `*` stays within one component and `**` spans any.

use std::path::Path;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::SearchError;

/// A compiled include/exclude glob list.
#[derive(Debug, Clone)]
pub(crate) struct PathGlob {
    include_name: GlobSet,
    include_path: GlobSet,
    exclude_name: GlobSet,
    exclude_path: GlobSet,
    has_include: bool,
}

impl PathGlob {
    /// Compiles a comma-separated list (commas inside `{}` belong to the brace group).
    pub(crate) fn new(spec: &str) -> Result<PathGlob, SearchError> {
        let mut include_name = GlobSetBuilder::new();
        let mut include_path = GlobSetBuilder::new();
        let mut exclude_name = GlobSetBuilder::new();
        let mut exclude_path = GlobSetBuilder::new();
        let mut has_include = false;
        for part in split_top_level(spec) {
            let (negated, raw) = match part.strip_prefix('!') {
                Some(rest) => (true, rest),
                None => (false, part),
            };
            let raw = raw.trim_start_matches("./").trim_start_matches('/');
            if raw.is_empty() {
                continue;
            }
            let glob = GlobBuilder::new(raw)
                .literal_separator(true)
                .build()
                .map_err(|err| SearchError::Glob {
                    glob: spec.to_string(),
                    message: err.kind().to_string(),
                })?;
            let by_path = raw.contains('/');
            let target = match (negated, by_path) {
                (false, false) => &mut include_name,
                (false, true) => &mut include_path,
                (true, false) => &mut exclude_name,
                (true, true) => &mut exclude_path,
            };
            target.add(glob);
            has_include |= !negated;
        }
        let build = |b: GlobSetBuilder| {
            b.build().map_err(|err| SearchError::Glob {
                glob: spec.to_string(),
                message: err.to_string(),
            })
        };
        Ok(PathGlob {
            include_name: build(include_name)?,
            include_path: build(include_path)?,
            exclude_name: build(exclude_name)?,
            exclude_path: build(exclude_path)?,
            has_include,
        })
    }

    /// Whether `rel` (relative to the search root) is selected.
    pub(crate) fn is_match(&self, rel: &Path) -> bool {
        let name = rel.file_name().map(Path::new).unwrap_or(rel);
        if self.exclude_name.is_match(name) || self.exclude_path.is_match(rel) {
            return false;
        }
        !self.has_include || self.include_name.is_match(name) || self.include_path.is_match(rel)
    }
}

/// Splits on commas that are not inside a `{...}` group; trims whitespace.
fn split_top_level(spec: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, ch) in spec.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(spec[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(spec[start..].trim());
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(spec: &str, path: &str) -> bool {
        PathGlob::new(spec).is_ok_and(|g| g.is_match(Path::new(path)))
    }

    #[test]
    fn name_globs_match_at_any_depth() {
        assert!(m("*.rs", "main.rs"));
        assert!(m("*.rs", "src/a/main.rs"));
        assert!(!m("*.rs", "src/main.ts"));
    }

    #[test]
    fn path_globs_are_anchored_and_respect_separators() {
        assert!(m("src/**/*.ts", "src/a/b/x.ts"));
        assert!(m("src/**/*.ts", "src/x.ts"));
        assert!(!m("src/*.ts", "src/a/x.ts"));
        assert!(!m("src/**/*.ts", "lib/src/x.ts"));
        assert!(m("**/*.rs", "main.rs"));
    }

    #[test]
    fn lists_braces_and_negation() {
        assert!(m("*.rs,*.toml", "Cargo.toml"));
        assert!(m("*.{rs,toml}", "a/Cargo.toml"));
        assert!(m("*.rs, !*_test.rs", "a.rs"));
        assert!(!m("*.rs,!*_test.rs", "a_test.rs"));
        assert!(!m("!*.md", "README.md"));
        assert!(m("!*.md", "main.rs"));
    }

    #[test]
    fn bad_glob_is_an_error() {
        assert!(matches!(
            PathGlob::new("a[b"),
            Err(SearchError::Glob { .. })
        ));
    }
}
