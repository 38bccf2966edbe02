//! The layout description Lua hands over once per change (not per frame): the status row,
//! panels, notices, the completion menu, the input editor and a modal overlay. The transcript
//! is not in it: blocks are added and changed one by one (see [`super::transcript`]), so a
//! change costs the change, not the transcript.

use super::style::{Line, Span};
use serde::Deserialize;

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Layout {
    /// Status row items, left to right (separated by the renderer).
    pub status: Vec<Span>,
    /// Items at the right end of the status row, before the spinner.
    pub status_right: Vec<Span>,
    /// Set while the agent works: the spinner and elapsed time show at the right end.
    pub busy: Option<Busy>,
    /// Panels between the transcript and the input, top to bottom.
    pub panels: Vec<Panel>,
    /// Transient rows just above the input (hints, "press Ctrl-C again to quit").
    pub notices: Vec<Line>,
    /// A completion menu above the input.
    pub menu: Option<Menu>,
    pub input: Input,
    /// A modal (select / prompt / ask) drawn over everything; it takes the cursor.
    pub overlay: Option<Overlay>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Busy {
    pub label: String,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Panel {
    pub title: Option<String>,
    pub lines: Vec<Line>,
    /// Most of the screen height this panel may take (0..1).
    pub max_share: f32,
}

impl Default for Panel {
    fn default() -> Self {
        Panel {
            title: None,
            lines: Vec::new(),
            max_share: 0.3,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Menu {
    pub items: Vec<Line>,
    pub selected: Option<usize>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Input {
    pub text: String,
    /// Byte offset of the cursor in `text` (clamped to a character boundary).
    pub cursor: usize,
    /// Prefix of the first row (continuation rows are indented to its width).
    pub prompt: String,
    /// Dim text shown while `text` is empty.
    pub placeholder: String,
}

impl Default for Input {
    fn default() -> Self {
        Input {
            text: String::new(),
            cursor: 0,
            prompt: "> ".into(),
            placeholder: String::new(),
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Overlay {
    pub title: String,
    /// Text above the items (wrapped).
    pub question: String,
    pub items: Vec<Line>,
    pub selected: Option<usize>,
    /// A text field (prompt overlays).
    pub input: Option<Input>,
    /// Key help at the bottom (`enter select · esc dismiss`).
    pub hint: String,
}
