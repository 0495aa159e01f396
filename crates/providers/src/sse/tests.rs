//! Unit tests of the event-stream decoder: events split anywhere across reads.

use super::*;

fn decode(chunks: &[&[u8]]) -> Vec<SseEvent> {
    let mut decoder = SseDecoder::new();
    let mut out = Vec::new();
    for chunk in chunks {
        decoder
            .push(chunk, &mut |event| {
                out.push(event.clone());
                Ok(())
            })
            .unwrap();
    }
    out
}

fn event(name: Option<&str>, data: &str) -> SseEvent {
    SseEvent { event: name.map(str::to_owned), data: data.to_owned() }
}

#[test]
fn events_comments_and_multiline_data() {
    let got = decode(&[b": keep-alive\n\nevent: a\ndata: {\"x\":1}\n\ndata:1\ndata: 2\n\n"]);
    assert_eq!(got, vec![event(Some("a"), "{\"x\":1}"), event(None, "1\n2")]);
}

#[test]
fn any_split_gives_the_same_events() {
    let stream = "event: t\r\ndata: h\u{e9}llo \u{1F600}\r\n\r\ndata: [DONE]\r\r".as_bytes();
    let whole = decode(&[stream]);
    assert_eq!(whole, vec![event(Some("t"), "h\u{e9}llo \u{1F600}"), event(None, "[DONE]")]);
    for cut in 0..stream.len() {
        assert_eq!(decode(&[&stream[..cut], &stream[cut..]]), whole, "cut at {cut}");
    }
    let bytes: Vec<&[u8]> = stream.chunks(1).collect();
    assert_eq!(decode(&bytes), whole);
}

#[test]
fn invalid_utf8_is_an_error() {
    let mut decoder = SseDecoder::new();
    let err = decoder.push(b"data: \xff\xfe\n\n", &mut |_| Ok(())).unwrap_err();
    assert!(err.to_string().contains("not UTF-8"), "{err}");
}

#[test]
fn an_incomplete_event_is_not_dispatched() {
    let mut decoder = SseDecoder::new();
    let mut n = 0;
    decoder
        .push(b"data: partial", &mut |_| {
            n += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(n, 0);
    assert_eq!(decoder.buf.len(), 13);
}
