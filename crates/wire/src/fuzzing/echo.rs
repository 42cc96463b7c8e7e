//! The echo answer's target's check: the one-pass scan (`echo::scan`) against serde_json's
//! parse of the same text, which the client used before, and the client's quick look against
//! the scan.

use std::borrow::Cow;

use serde::Deserialize;

use crate::echo::scan::{MAX_DEPTH, echo_answer_matches, echoed_body_matches};

/// What the client parsed an echo answer into before the scan.
#[derive(Deserialize)]
struct EchoJson<'a> {
    #[serde(borrow, default)]
    body: Cow<'a, str>,
}

/// The scan against serde on the bytes as an echo answer, for three pings: a fixed one, the
/// empty one (a missing `body`) and, when serde reads a `body`, that one.
pub fn echo_json(data: &[u8]) {
    echo_agrees(data, b"Hello, world!");
    echo_agrees(data, b"");
    if let Ok(answer) = serde_json::from_slice::<EchoJson>(data) {
        echo_agrees(data, answer.body.as_bytes());
    }
}

/// The scan's verdict on `json` for `ping` is serde's: what the scan accepts serde reads,
/// with the same comparison; what serde reads the scan accepts, except where the scan is
/// stricter on purpose (see `echo::scan`).
///
/// And the client's check ([`echo_answer_matches`]) says what the scan says, but where the
/// scan refuses a text that opens with a `body` member holding the ping as is: the quick look
/// may accept that one.
pub fn echo_agrees(json: &[u8], ping: &[u8]) {
    let ours = echoed_body_matches(json, ping);
    let quick = echo_answer_matches(json, ping);
    if quick != ours {
        let opens = json
            .trim_ascii_start()
            .strip_prefix(b"{\"body\":\"")
            .and_then(|rest| rest.strip_prefix(ping))
            .is_some_and(|rest| rest.starts_with(b"\""));
        assert!(
            ours.is_err() && quick == Ok(true) && opens,
            "the quick look said {quick:?}, the scan {ours:?}"
        );
    }
    match (ours, serde_json::from_slice::<EchoJson>(json)) {
        (Ok(same), Ok(answer)) => assert_eq!(
            same,
            answer.body.as_bytes() == ping,
            "body {:?}, ping {:?}",
            answer.body,
            String::from_utf8_lossy(ping)
        ),
        (Ok(_), Err(e)) => panic!("the scan accepted what serde refuses: {e}"),
        (Err(e), Ok(_)) => assert!(
            stricter_here(json),
            "the scan refused what serde reads: {e}"
        ),
        (Err(_), Err(_)) => {}
    }
}

/// Whether the text (one that serde reads) is one the scan refuses on purpose: not all UTF-8,
/// not an object at the top level, or nested deeper than the scan's limit.
fn stricter_here(json: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(json) else {
        return true;
    };
    !text
        .trim_start_matches([' ', '\n', '\r', '\t'])
        .starts_with('{')
        || depth(json) > MAX_DEPTH
}

/// How deep objects and arrays nest in a valid JSON text.
fn depth(json: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0);
    let (mut in_string, mut escaped) = (false, false);
    for &c in json {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}
