//! Recognizes the hot path of a streamed answer: events that carry nothing but a piece of text
//! (or of thinking), and joins runs of them into one piece.
//!
//! A long answer arrives as tens of thousands of tiny SSE events, and decoding each into Lua
//! tables cost far more than the network did. The Lua provider libraries still own the wire
//! protocols; this module only answers, per event, "is this exactly a plain text (or thinking)
//! delta of wire format W, and what is its text?", mirroring what those libraries read. Any
//! doubt (an unknown shape, a field the Lua parser would act on, a parse failure) answers
//! "no", and the event goes to Lua untouched, so the fast path can never change the result,
//! only the speed.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;

use super::sse::SseEvent;

/// The streamed wire formats with a recognizer (fen's API names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI Chat Completions (`choices[0].delta.content`).
    OpenAiCompletions,
    /// OpenAI Responses (`response.output_text.delta`, reasoning text deltas).
    OpenAiResponses,
    /// Anthropic Messages (`content_block_delta` with `text_delta` / `thinking_delta`).
    AnthropicMessages,
}

impl Wire {
    /// The wire format named by fen's API name, if it has a recognizer.
    pub fn from_api(api: &str) -> Option<Wire> {
        match api {
            "openai-completions" => Some(Wire::OpenAiCompletions),
            "openai-responses" => Some(Wire::OpenAiResponses),
            "anthropic-messages" => Some(Wire::AnthropicMessages),
            _ => None,
        }
    }
}

/// What kind of plain delta an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlainKind {
    /// Answer text.
    Text,
    /// Reasoning text.
    Thinking,
}

/// One item of a batch handed to the provider: a run of plain deltas joined, or an event the
/// provider must decode itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchItem {
    /// Consecutive plain deltas of one kind, joined in order.
    Plain(PlainKind, String),
    /// Any other event, untouched.
    Event(SseEvent),
}

/// Classifies one event: `Some((kind, text))` when it is exactly a plain delta (the text may
/// be empty: an event the Lua parser would ignore), `None` when Lua must see it.
pub fn plain_delta(wire: Wire, event: &SseEvent) -> Option<(PlainKind, Cow<'_, str>)> {
    match wire {
        Wire::OpenAiCompletions => completions(&event.data),
        Wire::OpenAiResponses => {
            let (ty, delta) = typed::<Text>(event)?;
            let kind = match &*ty {
                "response.output_text.delta" => PlainKind::Text,
                "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                    PlainKind::Thinking
                }
                _ => return None,
            };
            Some((kind, delta?.0))
        }
        Wire::AnthropicMessages => {
            let (ty, delta) = typed::<AnthropicDelta>(event)?;
            if ty != "content_block_delta" {
                return None;
            }
            let delta = delta?;
            match &*delta.kind {
                "text_delta" => Some((PlainKind::Text, delta.text?.0)),
                "thinking_delta" => Some((PlainKind::Thinking, delta.thinking?.0)),
                _ => None,
            }
        }
    }
}

/// Joins runs of plain deltas, remembering the shape of the last one.
///
/// Consecutive deltas of a stream are usually byte-identical apart from their text
/// (`{"id":"x",...,"delta":{"content":"` TEXT `"},...}`). After a full check has found an
/// event plain, its bytes before and after the text's string literal are kept; a later event
/// with the same prefix and suffix whose middle is exactly one JSON string literal has the
/// same structure, so it is the same kind of plain delta, and only that string is decoded.
#[derive(Debug, Default)]
pub struct Batcher {
    wire: Option<Wire>,
    shape: Option<Shape>,
}

/// A plain delta's bytes around its text: `prefix` ends with the opening quote, `suffix`
/// starts with the closing one.
#[derive(Debug)]
struct Shape {
    event: Option<String>,
    kind: PlainKind,
    prefix: String,
    suffix: String,
}

impl Batcher {
    /// A batcher for `wire` (`None`: every event is passed through).
    pub fn new(wire: Option<Wire>) -> Self {
        Batcher { wire, shape: None }
    }

    /// Turns the events of one network read into batch items: runs of plain deltas of the
    /// same kind become one item (empty ones vanish); every other event is kept, in order.
    pub fn batch(&mut self, events: impl IntoIterator<Item = SseEvent>) -> Vec<BatchItem> {
        let mut out: Vec<BatchItem> = Vec::new();
        for event in events {
            match self.classify(&event) {
                Some((_, text)) if text.is_empty() => {}
                Some((kind, text)) => match out.last_mut() {
                    Some(BatchItem::Plain(k, run)) if *k == kind => run.push_str(&text),
                    _ => out.push(BatchItem::Plain(kind, text.into_owned())),
                },
                None => out.push(BatchItem::Event(event)),
            }
        }
        out
    }

    fn classify<'a>(&mut self, event: &'a SseEvent) -> Option<(PlainKind, Cow<'a, str>)> {
        let wire = self.wire?;
        if let Some(hit) = self.shape.as_ref().and_then(|s| s.matches(event)) {
            return Some(hit);
        }
        let (kind, text) = plain_delta(wire, event)?;
        // Remember the shape when the text is borrowed, i.e. its literal is verbatim in data.
        if let Cow::Borrowed(t) = &text {
            let start = t.as_ptr() as usize - event.data.as_ptr() as usize;
            let end = start + t.len();
            let d = event.data.as_bytes();
            if start > 0 && d[start - 1] == b'"' && d.get(end) == Some(&b'"') {
                self.shape = Some(Shape {
                    event: event.event.clone(),
                    kind,
                    prefix: event.data[..start].to_owned(),
                    suffix: event.data[end..].to_owned(),
                });
            }
        }
        Some((kind, text))
    }
}

impl Shape {
    fn matches<'a>(&self, event: &'a SseEvent) -> Option<(PlainKind, Cow<'a, str>)> {
        let d = &event.data;
        if event.event != self.event
            || d.len() < self.prefix.len() + self.suffix.len()
            || !d.starts_with(&self.prefix)
            || !d.ends_with(&self.suffix)
        {
            return None;
        }
        // The literal, quotes included: it must parse as one JSON string and nothing more.
        let literal = &d[self.prefix.len() - 1..d.len() - self.suffix.len() + 1];
        let text = match serde_json::from_str::<&str>(literal) {
            Ok(t) => Cow::Borrowed(t),
            // Escapes need an owned string.
            Err(_) => Cow::Owned(serde_json::from_str::<String>(literal).ok()?),
        };
        Some((self.kind, text))
    }
}

/// One-shot form of [`Batcher::batch`] (no shape is kept across calls).
pub fn batch(wire: Option<Wire>, events: impl IntoIterator<Item = SseEvent>) -> Vec<BatchItem> {
    Batcher::new(wire).batch(events)
}

// The shapes below read only what the Lua parsers read. Fields they act on other than the
// delta itself (errors, usage, finish reasons, tool calls, reasoning) are captured as
// `Option<IgnoredAny>` so that their presence sends the event to Lua.

#[derive(Deserialize)]
struct CompletionsChunk<'a> {
    #[serde(borrow)]
    choices: Vec<CompletionsChoice<'a>>,
    #[serde(default)]
    usage: Option<IgnoredAny>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct CompletionsChoice<'a> {
    #[serde(borrow, default)]
    delta: Option<CompletionsDelta<'a>>,
    #[serde(default)]
    finish_reason: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct CompletionsDelta<'a> {
    #[serde(borrow, default)]
    content: Option<Text<'a>>,
    #[serde(default)]
    reasoning_content: Option<IgnoredAny>,
    #[serde(default)]
    reasoning: Option<IgnoredAny>,
    #[serde(default)]
    tool_calls: Option<IgnoredAny>,
    /// OpenAI's refusal text: the Lua parser marks the message a refusal (empty is ignored).
    #[serde(borrow, default)]
    refusal: Option<Text<'a>>,
}

fn completions(data: &str) -> Option<(PlainKind, Cow<'_, str>)> {
    let chunk: CompletionsChunk = serde_json::from_str(data).ok()?;
    if chunk.usage.is_some() || chunk.error.is_some() {
        return None;
    }
    let choice = chunk.choices.into_iter().next()?;
    let delta = choice.delta?;
    if choice.finish_reason.is_some()
        || delta.reasoning_content.is_some()
        || delta.reasoning.is_some()
        || delta.tool_calls.is_some()
        || delta.refusal.is_some_and(|r| !r.0.is_empty())
    {
        return None;
    }
    Some((
        PlainKind::Text,
        delta.content.map(|t| t.0).unwrap_or_default(),
    ))
}

/// A JSON string, borrowed from the input when it has no escapes. (serde's `Cow<str>` only
/// borrows as a direct field, never inside an `Option`.)
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Cow<'de, str>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
                Ok(Cow::Borrowed(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
                Ok(Cow::Owned(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Cow<'de, str>, E> {
                Ok(Cow::Owned(v))
            }
        }
        d.deserialize_str(V).map(Text)
    }
}

/// An event of the event-typed wires (Responses, Anthropic): its `type` and its `delta`.
#[derive(Deserialize)]
#[serde(bound(deserialize = "D: Deserialize<'de>"))]
struct TypedEvent<'a, D> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    delta: Option<D>,
}

#[derive(Deserialize)]
struct AnthropicDelta<'a> {
    #[serde(borrow, rename = "type")]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<Text<'a>>,
    #[serde(borrow, default)]
    thinking: Option<Text<'a>>,
}

/// The event's name and delta. The name is the data's `type`, else the SSE `event:` field, as
/// the Lua parsers read it (`d.type or ev.event`).
fn typed<'a, D: Deserialize<'a>>(event: &'a SseEvent) -> Option<(Cow<'a, str>, Option<D>)> {
    let d: TypedEvent<'a, D> = serde_json::from_str(&event.data).ok()?;
    let ty = d.kind.unwrap_or(Cow::Borrowed(event.event_type()));
    Some((ty, d.delta))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
            ..SseEvent::default()
        }
    }

    fn plain(wire: Wire, event: Option<&str>, data: &str) -> Option<(PlainKind, String)> {
        plain_delta(wire, &ev(event, data)).map(|(k, t)| (k, t.into_owned()))
    }

    #[test]
    fn a_refusal_or_a_list_of_typed_parts_goes_to_lua() {
        let w = Wire::OpenAiCompletions;
        let chunk = |delta: &str| {
            format!(
                r#"{{"id":"c","choices":[{{"index":0,"delta":{delta},"finish_reason":null}}]}}"#
            )
        };
        assert_eq!(plain(w, None, &chunk(r#"{"refusal":"I'm"}"#)), None);
        assert_eq!(
            plain(w, None, &chunk(r#"{"content":null,"refusal":"sorry"}"#)),
            None
        );
        // An empty refusal beside text (Snowflake sends one on every chunk) is still plain.
        assert_eq!(
            plain(w, None, &chunk(r#"{"content":"4","refusal":""}"#)),
            Some((PlainKind::Text, "4".to_owned()))
        );
        assert_eq!(
            plain(
                w,
                None,
                &chunk(
                    r#"{"content":[{"type":"thinking","thinking":[{"type":"text","text":"Ok"}]}]}"#
                )
            ),
            None
        );
    }

    #[test]
    fn completions_text_deltas_are_plain_and_anything_else_is_not() {
        let w = Wire::OpenAiCompletions;
        let text = |s: &str| Some((PlainKind::Text, s.to_owned()));
        assert_eq!(
            plain(
                w,
                None,
                r#"{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"hé\n\"x\""},"finish_reason":null}]}"#
            ),
            text("hé\n\"x\"")
        );
        // The first chunk (role only) is plain but empty: Lua would do nothing with it.
        assert_eq!(
            plain(
                w,
                None,
                r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#
            ),
            text("")
        );
        assert_eq!(
            plain(
                w,
                None,
                r#"{"choices":[{"delta":{"content":"a"}}],"usage":null}"#
            ),
            text("a")
        );
        for data in [
            "[DONE]",
            r#"{"choices":[{"delta":{"content":"a"},"finish_reason":"stop"}]}"#,
            r#"{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":1}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":1}}"#,
            r#"{"error":{"message":"overloaded"}}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"hm"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning":"hm","content":"a"}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}"#,
            r#"{"choices":[{"delta":{"content":5}}]}"#,
            r#"{"choices":[{}]}"#,
            r#"{"choices":{"0":{"delta":{"content":"a"}}}}"#,
            r#"{"choices":[{"delta":{"content":"a"}}]"#,
        ] {
            assert_eq!(plain(w, None, data), None, "{data}");
        }
    }

    #[test]
    fn anthropic_text_and_thinking_deltas_are_plain() {
        let w = Wire::AnthropicMessages;
        assert_eq!(
            plain(
                w,
                Some("content_block_delta"),
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}"#
            ),
            Some((PlainKind::Text, "hi".into()))
        );
        assert_eq!(
            plain(
                w,
                Some("content_block_delta"),
                r#"{"index":1,"delta":{"type":"thinking_delta","thinking":"hm"}}"#
            ),
            Some((PlainKind::Thinking, "hm".into())),
            "the SSE event name stands in for a missing type"
        );
        for (event, data) in [
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","delta":{"type":"signature_delta","signature":"s"}}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"}}"#,
            ),
            (
                "error",
                r#"{"type":"error","error":{"type":"overloaded_error"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":7}}"#,
            ),
        ] {
            assert_eq!(plain(w, Some(event), data), None, "{data}");
        }
    }

    #[test]
    fn responses_text_and_reasoning_deltas_are_plain() {
        let w = Wire::OpenAiResponses;
        assert_eq!(
            plain(
                w,
                Some("response.output_text.delta"),
                r#"{"type":"response.output_text.delta","item_id":"m","output_index":0,"content_index":0,"delta":"ok"}"#
            ),
            Some((PlainKind::Text, "ok".into()))
        );
        assert_eq!(
            plain(
                w,
                None,
                r#"{"type":"response.reasoning_summary_text.delta","delta":"why"}"#
            ),
            Some((PlainKind::Thinking, "why".into()))
        );
        for data in [
            r#"{"type":"response.function_call_arguments.delta","output_index":1,"delta":"{"}"#,
            r#"{"type":"response.completed","response":{}}"#,
            r#"{"type":"response.output_text.delta"}"#,
            r#"{"type":"response.output_text.delta","delta":null}"#,
        ] {
            assert_eq!(plain(w, None, data), None, "{data}");
        }
    }

    #[test]
    fn batch_joins_runs_of_one_kind_and_keeps_other_events_in_order() {
        let chunk = |s: &str| {
            ev(
                None,
                &format!(r#"{{"choices":[{{"delta":{{"content":"{s}"}}}}]}}"#),
            )
        };
        let usage = ev(None, r#"{"choices":[],"usage":{"prompt_tokens":1}}"#);
        let done = ev(None, "[DONE]");
        let items = batch(
            Some(Wire::OpenAiCompletions),
            vec![
                chunk(""),
                chunk("a"),
                chunk("b"),
                usage.clone(),
                chunk("c"),
                done.clone(),
            ],
        );
        assert_eq!(
            items,
            vec![
                BatchItem::Plain(PlainKind::Text, "ab".into()),
                BatchItem::Event(usage),
                BatchItem::Plain(PlainKind::Text, "c".into()),
                BatchItem::Event(done),
            ]
        );
        // Text and thinking never merge with each other.
        let a = |ty: &str, s: &str| {
            ev(
                None,
                &format!(
                    r#"{{"type":"content_block_delta","delta":{{"type":"{ty}","{}":"{s}"}}}}"#,
                    ty.trim_end_matches("_delta")
                ),
            )
        };
        let items = batch(
            Some(Wire::AnthropicMessages),
            vec![
                a("thinking_delta", "x"),
                a("thinking_delta", "y"),
                a("text_delta", "z"),
            ],
        );
        assert_eq!(
            items,
            vec![
                BatchItem::Plain(PlainKind::Thinking, "xy".into()),
                BatchItem::Plain(PlainKind::Text, "z".into()),
            ]
        );
        // Without a wire every event is passed through.
        assert_eq!(
            batch(None, vec![chunk("a")]),
            vec![BatchItem::Event(chunk("a"))]
        );
    }

    #[test]
    fn the_shape_of_a_plain_delta_is_reused_only_for_the_same_structure() {
        let chunk = |content: &str, finish: &str| {
            ev(
                None,
                &format!(
                    r#"{{"id":"c1","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{"content":{content}}},"finish_reason":{finish}}}]}}"#
                ),
            )
        };
        let mut b = Batcher::new(Some(Wire::OpenAiCompletions));
        let items = b.batch(vec![
            chunk(r#""a""#, "null"),
            // Same shape, escapes and a multi-byte character in the text.
            chunk(r#""\"é\n\u00e9""#, "null"),
            // Same prefix and suffix, but the middle is not one string literal: the shape does
            // not apply and the full check decides (the finish reason here sits inside the
            // delta, where the Lua parser ignores it: still plain text).
            chunk(r#""b","finish_reason":"stop","x":"c""#, "null"),
            // Same prefix, other suffix (a finish reason on the choice): not plain.
            chunk(r#""d""#, r#""stop""#),
            chunk(r#""""#, "null"),
        ]);
        assert_eq!(b.shape.as_ref().map(|s| s.kind), Some(PlainKind::Text));
        assert_eq!(items.len(), 2, "{items:?}");
        assert_eq!(
            items[0],
            BatchItem::Plain(PlainKind::Text, "a\"é\néb".into())
        );
        assert!(
            matches!(&items[1], BatchItem::Event(e) if e.data.contains(r#""finish_reason":"stop""#))
        );
        // A literal with an unescaped quote cannot pass as the shape's one string.
        let smuggled = chunk(r#""e"}],"usage":{"x":1},"y":[{"z":"""#, "null");
        assert!(b.shape.as_ref().unwrap().matches(&smuggled).is_none());
        // Another SSE event name never matches a remembered shape.
        let mut named = chunk(r#""z""#, "null");
        named.event = Some("other".into());
        assert!(b.shape.as_ref().unwrap().matches(&named).is_none());
        assert_eq!(
            b.batch(vec![named]),
            vec![BatchItem::Plain(PlainKind::Text, "z".into())],
            "the full check still applies"
        );
    }
}
