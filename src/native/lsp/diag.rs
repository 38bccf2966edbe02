//! Diagnostics: reading them from LSP JSON, the delta an edit introduced (against the file's
//! diagnostics before it, matched by message and by where the edit moved their lines), and
//! the `path:line:col severity message` lines fen reports.

use serde_json::Value;

/// One diagnostic, positions 0-based as LSP sends them (UTF-16 columns).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub line: u32,
    pub character: u32,
    pub end_line: u32,
    /// 1 error, 2 warning, 3 information, 4 hint (missing means error, per the spec's advice).
    pub severity: u8,
    pub message: String,
    pub source: Option<String>,
    pub code: Option<String>,
}

impl Diagnostic {
    pub fn from_json(v: &Value) -> Option<Diagnostic> {
        let start = &v["range"]["start"];
        Some(Diagnostic {
            line: start["line"].as_u64()? as u32,
            character: start["character"].as_u64().unwrap_or(0) as u32,
            end_line: v["range"]["end"]["line"].as_u64().unwrap_or(0) as u32,
            severity: v["severity"].as_u64().unwrap_or(1).clamp(1, 4) as u8,
            message: v["message"].as_str()?.to_string(),
            source: v["source"].as_str().map(str::to_string),
            code: match &v["code"] {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            },
        })
    }

    pub fn severity_name(&self) -> &'static str {
        match self.severity {
            1 => "error",
            2 => "warning",
            3 => "info",
            _ => "hint",
        }
    }
}

/// Reads a diagnostics array (missing or malformed entries are skipped).
pub fn parse_list(v: &Value) -> Vec<Diagnostic> {
    v.as_array()
        .map(|a| a.iter().filter_map(Diagnostic::from_json).collect())
        .unwrap_or_default()
}

/// For each line of `old`, the line it became in `new` (None: changed or removed by the edit).
pub fn line_map(old: &str, new: &str) -> Vec<Option<u32>> {
    use similar::{capture_diff_slices, Algorithm, DiffOp};
    let a: Vec<&str> = old.split('\n').collect();
    let b: Vec<&str> = new.split('\n').collect();
    let mut map = vec![None; a.len()];
    for op in capture_diff_slices(Algorithm::Myers, &a, &b) {
        if let DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = op
        {
            for k in 0..len {
                map[old_index + k] = Some((new_index + k) as u32);
            }
        }
    }
    map
}

/// The diagnostics of `after` that the edit introduced: those with no counterpart in
/// `before`. A counterpart has the same message and severity and sits on the line the edit
/// moved the old one to; failing that, one whose old line the edit rewrote (the diagnostic
/// stayed on a line that changed). Errors first, then by position.
pub fn introduced(
    before: &[Diagnostic],
    after: &[Diagnostic],
    map: &[Option<u32>],
) -> Vec<Diagnostic> {
    let same = |b: &Diagnostic, a: &Diagnostic| b.message == a.message && b.severity == a.severity;
    let mut used = vec![false; before.len()];
    let mut matched = vec![false; after.len()];
    // Pass 1: moved with the text around it.
    for (i, a) in after.iter().enumerate() {
        if let Some(j) = before.iter().enumerate().position(|(j, b)| {
            !used[j] && same(b, a) && map.get(b.line as usize).copied().flatten() == Some(a.line)
        }) {
            used[j] = true;
            matched[i] = true;
        }
    }
    // Pass 2: the old line was rewritten; the same complaint on some changed line is the old one.
    for (i, a) in after.iter().enumerate() {
        if matched[i] {
            continue;
        }
        if let Some(j) = before.iter().enumerate().position(|(j, b)| {
            !used[j] && same(b, a) && map.get(b.line as usize).copied().flatten().is_none()
        }) {
            used[j] = true;
            matched[i] = true;
        }
    }
    let mut out: Vec<Diagnostic> = after
        .iter()
        .zip(matched)
        .filter(|(_, m)| !m)
        .map(|(d, _)| d.clone())
        .collect();
    out.sort_by_key(|d| (d.severity, d.line, d.character));
    out
}

/// `path:line:col severity message` (1-based; the column in characters of `line_text`, the
/// text of that line, when given).
pub fn format(path: &str, d: &Diagnostic, line_text: Option<&str>) -> String {
    let col = line_text
        .map(|t| super::position::utf16_to_char_col(t, d.character))
        .unwrap_or(d.character)
        + 1;
    let msg = d
        .message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let tag = match (&d.source, &d.code) {
        (Some(s), Some(c)) => format!(" [{s} {c}]"),
        (Some(s), None) => format!(" [{s}]"),
        (None, Some(c)) => format!(" [{c}]"),
        _ => String::new(),
    };
    format!(
        "{path}:{}:{col} {} {msg}{tag}",
        d.line + 1,
        d.severity_name()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(line: u32, msg: &str) -> Diagnostic {
        Diagnostic {
            line,
            character: 0,
            end_line: line,
            severity: 1,
            message: msg.into(),
            source: None,
            code: None,
        }
    }

    #[test]
    fn moved_diagnostics_are_not_new() {
        let old = "a\nb\nc\n";
        let new = "x\ny\na\nb\nc\n";
        let map = line_map(old, new);
        let before = [d(1, "bad b")];
        let after = [d(3, "bad b"), d(0, "bad x")];
        assert_eq!(introduced(&before, &after, &map), [d(0, "bad x")]);
    }

    #[test]
    fn a_second_copy_elsewhere_is_new() {
        let text = "a\nb\nc\n";
        let map = line_map(text, "a\nb\nc\nb\n");
        let before = [d(1, "bad b")];
        let after = [d(1, "bad b"), d(3, "bad b")];
        assert_eq!(introduced(&before, &after, &map), [d(3, "bad b")]);
    }

    #[test]
    fn a_complaint_on_a_rewritten_line_is_the_old_one() {
        let map = line_map("a\nb\n", "a\nbb\n");
        assert!(introduced(&[d(1, "bad")], &[d(1, "bad")], &map).is_empty());
    }

    #[test]
    fn errors_come_first() {
        let mut w = d(0, "w");
        w.severity = 2;
        let out = introduced(&[], &[w.clone(), d(5, "e")], &line_map("", ""));
        assert_eq!(out, [d(5, "e"), w]);
    }
}
