//! HTTP/2 byte classification: never panics, and any split of the input yields the same counts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wirebench_wire::h2sniff::H2Sniffer;

fuzz_target!(|data: &[u8]| {
    let expect_preface = data.len() % 2 == 0;
    let mut whole = H2Sniffer::new(expect_preface);
    whole.feed(data);
    assert_eq!(whole.fed(), data.len() as u64);

    let at = data.first().map_or(0, |&b| usize::from(b)).min(data.len());
    let (head, tail) = data.split_at(at);
    let mut split = H2Sniffer::new(expect_preface);
    split.feed(head);
    split.feed(tail);
    assert_eq!(split.fed(), whole.fed());
    assert_eq!(split.counts(), whole.counts());

    let c = whole.counts();
    let frame_bytes: u64 = c.frames.iter().map(|f| f.bytes).sum();
    assert_eq!(
        whole.fed(),
        c.preface_bytes + frame_bytes + c.unparsed_bytes + whole.pending()
    );
});
