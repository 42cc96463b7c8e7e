//! Latency histograms as the JSON carries them: HdrHistogram's V2 compressed form in base64,
//! values in nanoseconds, readable by any HdrHistogram library and merged exactly.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{
    DeserializeError, Deserializer, Serializer, V2DeflateSerializer,
};
use serde::{Deserialize, Serialize};

use crate::stats::Latencies;

/// The most characters of base64 a histogram may take in a report being read: a full
/// histogram of the widest range compresses to a few hundred kilobytes at worst, so more is
/// not a histogram wirebench wrote.
pub const MAX_ENCODED: usize = 8 << 20;

/// Every latency histogram of one run (`runs[].histograms` in the JSON), each the
/// `encode`d form of the histogram its distribution was computed from.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Histograms {
    /// successful requests (open loop: from the intended send time, corrected)
    pub latency: String,
    /// open loop only: the same requests from their actual send time
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncorrected_latency: Option<String>,
    /// TCP connect times of the connections (null when none was opened)
    pub connect: Option<String>,
    /// streaming calls only: each call's start to its first message
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_message: Option<String>,
    /// bidi ping-pong only: each message to its reply
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_latency: Option<String>,
    /// client-streaming only: each call's last message to its response
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_to_response: Option<String>,
    /// `--requests-per-conn` only: from each request's connection being ready
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub without_setup: Option<String>,
    /// per endpoint, in `per_endpoint` order: its successful requests
    pub per_endpoint: Vec<String>,
}

/// `h` in HdrHistogram's V2 format, DEFLATE-compressed ("V2 compressed", the encoding of
/// HdrHistogram's `encodeIntoCompressedByteBuffer`), in standard base64.
pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    // Serializing into a Vec cannot fail: the only errors are the writer's, and a Vec's
    // writes do not fail; a histogram the crate built always has a V2 form.
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("a histogram serializes into memory");
    STANDARD.encode(bytes)
}

/// Why a histogram read from a report is not one: one line on what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum HdrError {
    #[error("{0} characters, more than a histogram takes")]
    TooLong(usize),
    #[error("not base64 ({0})")]
    NotBase64(base64::DecodeError),
    #[error("not an HdrHistogram V2 histogram: {0}")]
    NotHdr(DeserializeError),
}

/// `encode`'s inverse, for a histogram read from a report.
pub fn decode(text: &str) -> Result<Histogram<u64>, HdrError> {
    if text.len() > MAX_ENCODED {
        return Err(HdrError::TooLong(text.len()));
    }
    let bytes = STANDARD.decode(text.trim()).map_err(HdrError::NotBase64)?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(HdrError::NotHdr)
}

/// The histogram of `l`, encoded.
pub fn of(l: &Latencies) -> String {
    encode(&l.hist)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_histogram_survives_encoding_with_every_count() {
        let mut l = Latencies::default();
        for us in [90u64, 100, 100, 250, 1_000, 52_000, 3_000_000] {
            l.record(Duration::from_micros(us));
        }
        let text = of(&l);
        // the V2 compressed cookie, 0x1c849304, in base64
        assert!(text.starts_with("HISTFAAA"), "{text}");
        let back = decode(&text).unwrap();
        assert_eq!(back, l.hist);
        assert_eq!(back.len(), 7);
        for q in [0.1, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(back.value_at_quantile(q), l.quantile_ns(q).unwrap());
        }
        assert_eq!(back.high(), l.hist.high());
        assert_eq!(back.sigfig(), 3);
    }

    #[test]
    fn what_is_not_a_histogram_is_refused_in_one_line() {
        for (bad, why) in [
            ("not base64!", "not base64"),
            ("aGVsbG8gd29ybGQ=", "not an HdrHistogram"),
            ("", "not an HdrHistogram"),
        ] {
            let e = decode(bad).unwrap_err().to_string();
            assert!(e.contains(why) && !e.contains('\n'), "{bad:?}: {e}");
        }
        // a histogram cut short
        let mut l = Latencies::default();
        l.record(Duration::from_millis(1));
        let text = of(&l);
        let cut = &text[..text.len() / 2];
        assert!(decode(cut).is_err());
    }
}
