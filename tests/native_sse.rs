//! Chunking-independence of the SSE parser: however a stream is split, the items are the same.

use fen::native::sse::{SseEvent, SseItem, SseParser};
use proptest::prelude::*;

/// A stream exercising every feature: BOM, all line endings, comments, multi-byte text,
/// fields without colon, ids, retry, event types, and an unterminated tail.
const RICH: &[u8] = "\u{FEFF}: keep-alive\r\nevent: delta\r\nid: 1\r\ndata: {\"t\":\"héllo\"}\r\n\r\n\
data:no-space\rdata: two\r\rretry: 3000\ndata\n\n: 世界\ndata: 🎉 x\ndata: y\n\nid\nevent: e\ndata: tail"
    .as_bytes();

fn parse_whole(bytes: &[u8]) -> Vec<SseItem> {
    let mut p = SseParser::new();
    let mut items = p.push(bytes);
    items.extend(finish_marker(&mut p));
    items
}

/// Turns the finish report into a comparable item so split tests also compare it.
fn finish_marker(p: &mut SseParser) -> Option<SseItem> {
    let f = p.finish();
    (!f.is_clean()).then(|| {
        SseItem::Comment(format!(
            "<finish {} {}>",
            f.partial_line_bytes, f.incomplete_event
        ))
    })
}

fn parse_split(bytes: &[u8], cuts: &[usize]) -> Vec<SseItem> {
    let mut p = SseParser::new();
    let mut items = Vec::new();
    let mut start = 0;
    for &cut in cuts {
        items.extend(p.push(&bytes[start..cut]));
        start = cut;
    }
    items.extend(p.push(&bytes[start..]));
    items.extend(finish_marker(&mut p));
    items
}

#[test]
fn rich_stream_parses_as_expected() {
    let items = parse_whole(RICH);
    let expected = vec![
        SseItem::Comment(" keep-alive".into()),
        SseItem::Event(SseEvent {
            event: Some("delta".into()),
            data: "{\"t\":\"héllo\"}".into(),
            id: Some("1".into()),
            retry: None,
        }),
        SseItem::Event(SseEvent {
            event: None,
            data: "no-space\ntwo".into(),
            id: Some("1".into()),
            retry: None,
        }),
        SseItem::Event(SseEvent {
            event: None,
            data: String::new(),
            id: Some("1".into()),
            retry: Some(3000),
        }),
        SseItem::Comment(" 世界".into()),
        SseItem::Event(SseEvent {
            event: None,
            data: "🎉 x\ny".into(),
            id: Some("1".into()),
            retry: None,
        }),
        SseItem::Comment("<finish 10 true>".into()),
    ];
    assert_eq!(items, expected);
}

#[test]
fn every_single_split_point_gives_the_same_items() {
    let whole = parse_whole(RICH);
    for cut in 0..=RICH.len() {
        assert_eq!(parse_split(RICH, &[cut]), whole, "split at byte {cut}");
    }
}

#[test]
fn byte_by_byte_gives_the_same_items() {
    let cuts: Vec<usize> = (1..RICH.len()).collect();
    assert_eq!(parse_split(RICH, &cuts), parse_whole(RICH));
}

/// Pieces a random stream is built from: awkward on purpose.
fn piece() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "data: a",
        "data:b",
        "data",
        "event: x",
        "id: 9",
        "id",
        "retry: 10",
        "retry: x1",
        ": c",
        ":",
        "é",
        "世",
        "🎉",
        "\u{FEFF}",
        "\n",
        "\r",
        "\r\n",
        "\n\n",
        "\r\n\r\n",
        " ",
        "junk",
    ])
}

proptest! {
    #[test]
    fn random_streams_are_split_invariant(
        pieces in prop::collection::vec(piece(), 0..40),
        raw_cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        bom in any::<bool>(),
    ) {
        let mut stream = String::new();
        if bom {
            stream.push('\u{FEFF}');
        }
        for p in pieces {
            stream.push_str(p);
        }
        let bytes = stream.as_bytes();
        let mut cuts: Vec<usize> = raw_cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        cuts.sort_unstable();
        prop_assert_eq!(parse_split(bytes, &cuts), parse_whole(bytes));
    }
}
