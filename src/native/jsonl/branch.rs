//! Branches of the conversation inside one session file, append-only.
//!
//! A `branch` record `{"type":"branch","id","parent_id","before"?,"from_id"?,"turn"?}` says:
//! from here on the conversation continues from the message `parent_id` (null: from nothing).
//! The records between two branch records form a *run*; a run's records continue its
//! branch record's `parent_id`. Of the records written after `parent_id` in its own run, those
//! before the next message and before the first one whose `id` is `before` still belong to
//! the conversation (they were written while `parent_id` was the last message).
//!
//! The conversation now in use (the *view*) is therefore: the last run, then the part of the
//! run holding its `parent_id` up to the cut, and so on back to the first run. Nothing is
//! deleted: every earlier branch stays in the file, and its leaf can be switched back to by
//! appending another branch record. Files without branch records are one run: the whole
//! file, as before branches existed.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use memchr::memmem;
use serde_json::Value;

use super::scan::{Record, SessionBytes};

/// The bytes every branch record holds (the writer serializes compactly, and text holding
/// them is escaped): a file without them is one run.
pub const NEEDLE: &[u8] = b"\"type\":\"branch\"";

/// Whether `bytes` hold a branch record.
pub fn has_branches(bytes: &[u8]) -> bool {
    memmem::find(bytes, NEEDLE).is_some()
}

/// Where a conversation continues from: the message `leaf` (None: nothing), keeping the
/// records written after it in its run up to the first with id `before`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Point {
    pub leaf: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
}

struct Run {
    /// Index of its first record (just after its branch record).
    start: usize,
    /// One past its last record.
    end: usize,
    /// None for the first run.
    base: Option<Point>,
}

/// The runs of a session's records, with where each message is.
pub struct Tree<'a> {
    data: &'a SessionBytes,
    records: &'a [Record],
    runs: Vec<Run>,
    run_of: Vec<usize>,
    messages: HashMap<Cow<'a, str>, usize>,
}

/// The conversation of one point of a tree.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// Indices into the records, in file order (the header, when it is a record, included).
    pub records: Vec<usize>,
    /// The last message of the view, if any.
    pub leaf: Option<String>,
}

/// Another branch of the file than the one in use.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Branch {
    /// Where it continues from (what a switch to it appends).
    pub point: Point,
    /// Its messages.
    pub message_count: usize,
    /// Its last user message, whitespace-collapsed.
    pub title: Option<String>,
}

impl<'a> Tree<'a> {
    pub fn new(data: &'a SessionBytes, records: &'a [Record]) -> Tree<'a> {
        let mut runs = vec![Run {
            start: 0,
            end: records.len(),
            base: None,
        }];
        let mut run_of = Vec::with_capacity(records.len());
        let mut messages = HashMap::new();
        for (i, r) in records.iter().enumerate() {
            match data.record_type(r).as_deref() {
                Some("branch") => {
                    let v = data.value(r).unwrap_or(Value::Null);
                    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
                    if let Some(last) = runs.last_mut() {
                        last.end = i;
                    }
                    runs.push(Run {
                        start: i + 1,
                        end: records.len(),
                        base: Some(Point {
                            leaf: s("parent_id"),
                            before: s("before"),
                        }),
                    });
                }
                Some("message") => {
                    if let Some(id) = data.id(r) {
                        messages.insert(id, i);
                    }
                }
                _ => {}
            }
            run_of.push(runs.len() - 1);
        }
        Tree {
            data,
            records,
            runs,
            run_of,
            messages,
        }
    }

    fn is_message(&self, i: usize) -> bool {
        self.data.record_type(&self.records[i]).as_deref() == Some("message")
    }

    /// The conversation in use: the last run and what it continues.
    pub fn current(&self) -> View {
        let last = self.runs.len() - 1;
        let run = &self.runs[last];
        let mut chunks = vec![(run.start..run.end).collect::<Vec<_>>()];
        self.walk(run.base.clone(), last, &mut chunks);
        self.finish(chunks)
    }

    /// The conversation of `point` (as if a branch record naming it were appended).
    pub fn at(&self, point: &Point) -> View {
        let mut chunks = Vec::new();
        self.walk(Some(point.clone()), self.runs.len(), &mut chunks);
        self.finish(chunks)
    }

    /// Follows bases back from a run (`below`: bases must point into earlier runs, so a
    /// damaged file cannot loop).
    fn walk(&self, mut base: Option<Point>, mut below: usize, chunks: &mut Vec<Vec<usize>>) {
        while let Some(Point {
            leaf: Some(leaf),
            before,
        }) = base
        {
            let Some(&x) = self.messages.get(leaf.as_str()) else {
                break;
            };
            let r = self.run_of[x];
            if r >= below {
                break;
            }
            let run = &self.runs[r];
            let mut chunk: Vec<usize> = (run.start..=x).collect();
            for i in x + 1..run.end {
                // Records after the next message were written while it was the leaf.
                if self.is_message(i)
                    || before.is_some()
                        && self.data.id(&self.records[i]).as_deref() == before.as_deref()
                {
                    break;
                }
                chunk.push(i);
            }
            chunks.push(chunk);
            base = run.base.clone();
            below = r;
        }
    }

    fn finish(&self, chunks: Vec<Vec<usize>>) -> View {
        let mut records: Vec<usize> = chunks.into_iter().rev().flatten().collect();
        // The header belongs to every view.
        if let Some(first) = self.records.first() {
            if self.data.record_type(first).as_deref() == Some("session")
                && records.first() != Some(&0)
            {
                records.insert(0, 0);
            }
        }
        let leaf = records
            .iter()
            .rev()
            .find(|&&i| self.is_message(i))
            .and_then(|&i| self.data.id(&self.records[i]))
            .map(Cow::into_owned);
        View { records, leaf }
    }

    /// Where the conversation in `view` continues from if a new branch is cut just before
    /// the record `index` of it (None: just after its end), for a branch record.
    pub fn cut(&self, view: &View, index: Option<usize>) -> Point {
        let upto = match index {
            Some(i) => view
                .records
                .iter()
                .position(|&r| r == i)
                .unwrap_or(view.records.len()),
            None => view.records.len(),
        };
        let kept = &view.records[..upto];
        let Some(&x) = kept.iter().rev().find(|&&i| self.is_message(i)) else {
            return Point::default();
        };
        let leaf = self.data.id(&self.records[x]).map(Cow::into_owned);
        // The first record of x's run after x that the new branch leaves out.
        let in_view: HashSet<usize> = kept.iter().copied().collect();
        let run = &self.runs[self.run_of[x]];
        let before = (x + 1..run.end)
            .take_while(|&i| !self.is_message(i))
            .find(|&i| !in_view.contains(&i))
            .and_then(|i| self.data.id(&self.records[i]))
            .map(Cow::into_owned);
        Point { leaf, before }
    }

    /// The branches other than the one in use: the ends of the runs whose leaf is not in the
    /// current view, each once.
    pub fn others(&self) -> Vec<Branch> {
        let current = self.current();
        let on_path: HashSet<usize> = current.records.iter().copied().collect();
        let mut seen: Vec<Point> = Vec::new();
        let mut out = Vec::new();
        for (k, run) in self.runs.iter().enumerate() {
            let last_message = (run.start..run.end).rev().find(|&i| self.is_message(i));
            let point = match last_message {
                Some(i) => {
                    if on_path.contains(&i) {
                        continue;
                    }
                    Point {
                        leaf: self.data.id(&self.records[i]).map(Cow::into_owned),
                        before: None,
                    }
                }
                None => match &run.base {
                    Some(p) if k + 1 < self.runs.len() => p.clone(),
                    _ => continue,
                },
            };
            if point.leaf.is_none() || seen.contains(&point) {
                continue;
            }
            let view = self.at(&point);
            if view.leaf == current.leaf && view.records.len() == current.records.len() {
                continue;
            }
            seen.push(point.clone());
            let messages: Vec<usize> = view
                .records
                .iter()
                .copied()
                .filter(|&i| self.is_message(i))
                .collect();
            let title = messages.iter().rev().find_map(|&i| {
                let v = self.data.value(&self.records[i]).ok()?;
                user_text(v.get("message")?)
            });
            out.push(Branch {
                point,
                message_count: messages.len(),
                title,
            });
        }
        out
    }
}

/// The text of a user message, whitespace-collapsed and cut to 80 chars.
fn user_text(m: &Value) -> Option<String> {
    if m.get("role").and_then(Value::as_str) != Some("user") {
        return None;
    }
    let text = match m.get("content")? {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        _ => return None,
    };
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.is_empty() {
        return None;
    }
    Some(collapsed.chars().take(80).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::jsonl::read_all;

    fn file(lines: &[&str]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        use std::io::Write;
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
        f
    }

    fn ids(report: &crate::native::jsonl::ReadReport, view: &View) -> Vec<String> {
        view.records
            .iter()
            .map(|&i| {
                report
                    .id(&report.records[i])
                    .unwrap_or_default()
                    .into_owned()
            })
            .collect()
    }

    const BASE: &[&str] = &[
        r#"{"type":"session","id":"S"}"#,
        r#"{"type":"checkpoint","id":"c1","turn":1}"#,
        r#"{"type":"message","id":"m1","parent_id":null,"message":{"role":"user","content":"one"}}"#,
        r#"{"type":"message","id":"m2","parent_id":"m1","message":{"role":"assistant","content":"ok"}}"#,
        r#"{"type":"checkpoint","id":"c1","turn":1,"end":"x"}"#,
        r#"{"type":"checkpoint","id":"c2","turn":2}"#,
        r#"{"type":"message","id":"m3","parent_id":"m2","message":{"role":"user","content":"two"}}"#,
        r#"{"type":"message","id":"m4","parent_id":"m3","message":{"role":"assistant","content":"ok"}}"#,
    ];

    #[test]
    fn without_branch_records_the_view_is_the_file() {
        let f = file(BASE);
        let r = read_all(f.path()).unwrap();
        let t = Tree::new(r.data(), &r.records);
        let v = t.current();
        assert_eq!(v.records, (0..r.records.len()).collect::<Vec<_>>());
        assert_eq!(v.leaf.as_deref(), Some("m4"));
        assert!(t.others().is_empty());
    }

    #[test]
    fn a_cut_before_a_turn_leaves_it_out_and_lists_the_old_branch() {
        let f = file(BASE);
        let r = read_all(f.path()).unwrap();
        let t = Tree::new(r.data(), &r.records);
        let v = t.current();
        let p = t.cut(&v, Some(5));
        assert_eq!(p.leaf.as_deref(), Some("m2"));
        assert_eq!(p.before.as_deref(), Some("c2"));
        let mut lines = BASE.to_vec();
        lines.push(r#"{"type":"branch","id":"b1","parent_id":"m2","before":"c2"}"#);
        lines.push(r#"{"type":"checkpoint","id":"c3","turn":3}"#);
        lines.push(r#"{"type":"message","id":"m5","parent_id":"m2","message":{"role":"user","content":"three"}}"#);
        let f = file(&lines);
        let r = read_all(f.path()).unwrap();
        let t = Tree::new(r.data(), &r.records);
        let v = t.current();
        assert_eq!(ids(&r, &v), ["S", "c1", "m1", "m2", "c1", "c3", "m5"]);
        let others = t.others();
        assert_eq!(others.len(), 1);
        assert_eq!(others[0].point.leaf.as_deref(), Some("m4"));
        assert_eq!(others[0].message_count, 4);
        assert_eq!(others[0].title.as_deref(), Some("two"));
        let old = t.at(&others[0].point);
        assert_eq!(
            ids(&r, &old),
            ["S", "c1", "m1", "m2", "c1", "c2", "m3", "m4"]
        );
        // A second cut right after the branch keeps the first cut.
        let p2 = t.cut(&v, Some(v.records[5]));
        assert_eq!(p2.leaf.as_deref(), Some("m2"));
        assert_eq!(p2.before.as_deref(), Some("c2"));
    }

    #[test]
    fn resume_follows_the_branch_and_its_compactions_only() {
        use crate::native::jsonl::resume_at;
        let ids = |r: &crate::native::jsonl::ResumeReport| -> Vec<String> {
            r.records
                .iter()
                .map(|x| r.value(x).unwrap()["id"].as_str().unwrap().to_string())
                .collect()
        };
        // A compaction on the abandoned branch does not apply.
        let f = file(&[
            r#"{"type":"session","id":"S"}"#,
            r#"{"type":"message","id":"m1","message":{"role":"user","content":"one"}}"#,
            r#"{"type":"message","id":"m2","parent_id":"m1","message":{"role":"assistant","content":"a"}}"#,
            r#"{"type":"message","id":"m3","parent_id":"m2","message":{"role":"user","content":"two"}}"#,
            r#"{"type":"compaction","id":"k1","summary":"s","first_kept_entry_id":"m3"}"#,
            r#"{"type":"checkpoint","id":"c5","turn":5}"#,
            r#"{"type":"branch","id":"b1","parent_id":"m2"}"#,
            r#"{"type":"message","id":"m4","parent_id":"m2","message":{"role":"user","content":"three"}}"#,
        ]);
        let r = resume_at(f.path(), None).unwrap();
        assert_eq!(ids(&r), ["m1", "m2", "m4"]);
        assert_eq!(r.compaction_index, None);
        assert_eq!(r.max_turn, Some(5));
        // One on the path does; `at` reads the other branch without writing anything.
        let f = file(&[
            r#"{"type":"session","id":"S"}"#,
            r#"{"type":"message","id":"m1","message":{"role":"user","content":"one"}}"#,
            r#"{"type":"message","id":"m2","parent_id":"m1","message":{"role":"assistant","content":"a"}}"#,
            r#"{"type":"compaction","id":"k1","summary":"s","first_kept_entry_id":"m2"}"#,
            r#"{"type":"message","id":"m3","parent_id":"m2","message":{"role":"user","content":"two"}}"#,
            r#"{"type":"branch","id":"b1","parent_id":"m2"}"#,
            r#"{"type":"message","id":"m4","parent_id":"m2","message":{"role":"user","content":"three"}}"#,
        ]);
        let len = std::fs::metadata(f.path()).unwrap().len();
        let r = resume_at(f.path(), None).unwrap();
        assert_eq!(ids(&r), ["m2", "k1", "m4"]);
        assert_eq!(r.compaction_index, Some(1));
        let at = Point {
            leaf: Some("m3".into()),
            before: None,
        };
        let r = resume_at(f.path(), Some(&at)).unwrap();
        assert_eq!(ids(&r), ["m2", "k1", "m3"]);
        assert_eq!(std::fs::metadata(f.path()).unwrap().len(), len);
    }

    #[test]
    fn a_cut_to_nothing_and_a_bad_parent_do_not_loop() {
        let f = file(&[
            r#"{"type":"session","id":"S"}"#,
            r#"{"type":"message","id":"m1","message":{"role":"user","content":"one"}}"#,
            r#"{"type":"branch","id":"b1","parent_id":null}"#,
            r#"{"type":"branch","id":"b2","parent_id":"m9"}"#,
        ]);
        let r = read_all(f.path()).unwrap();
        let t = Tree::new(r.data(), &r.records);
        let v = t.current();
        assert_eq!(ids(&r, &v), ["S"]);
        assert_eq!(v.leaf, None);
        assert_eq!(t.others().len(), 1);
    }
}
