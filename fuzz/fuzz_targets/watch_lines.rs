//! Watch-stream lines: split the bytes (whole and in two pieces) and parse every line without panicking.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use wirebench_wire::watch::{
    WatchLine, next_line, next_line_eof, parse_line, render_response_line,
};

/// Splits all lines (including an unterminated tail), parsing each; returns the raw lines.
fn drain(buf: &mut BytesMut, lines: &mut Vec<Vec<u8>>) {
    loop {
        let line = match next_line(buf) {
            Ok(Some(l)) => l,
            Ok(None) => match next_line_eof(buf) {
                Ok(Some(l)) => l,
                _ => return,
            },
            Err(_) => return,
        };
        lines.push(line.to_vec());
        if let Ok(WatchLine::Response {
            watch_id,
            revision,
            created,
            events,
            ..
        }) = parse_line(&line)
        {
            // What the renderer keeps must survive a render -> parse round trip.
            let mut out = BytesMut::new();
            render_response_line(watch_id, revision, created, &events, &mut out);
            let again = next_line(&mut out).ok().flatten().expect("rendered line");
            match parse_line(&again) {
                Ok(WatchLine::Response {
                    watch_id: w,
                    revision: r,
                    created: c,
                    events: e,
                    ..
                }) => assert_eq!((w, r, c, e), (watch_id, revision, created, events)),
                other => panic!("rendered line did not parse: {other:?}"),
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut whole = Vec::new();
    drain(&mut BytesMut::from(data), &mut whole);

    // Arrival in two pieces must give the same lines as long as no line is cut mid-way by EOF.
    let Some(&first) = data.first() else {
        return;
    };
    let (a, b) = data.split_at(usize::from(first) % data.len());
    let mut buf = BytesMut::from(a);
    let mut split = Vec::new();
    while let Ok(Some(l)) = next_line(&mut buf) {
        split.push(l.to_vec());
    }
    buf.extend_from_slice(b);
    drain(&mut buf, &mut split);
    assert_eq!(split, whole);
});
