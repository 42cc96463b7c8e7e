//! The echo service's JSON answer: grpc-echo's `EchoResponse` in protobuf's JSON mapping (what
//! the built-in server answers over HTTP, and what a gRPC echo answer is shown as), and its
//! check on the client (`scan`: the JSON checked and `body` compared in one pass).

use serde_json::{Map, Value};

use crate::proto::echo::EchoResponse;

pub mod scan;

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (Howard Hinnant's method).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// A protobuf Timestamp in its JSON form: RFC 3339, UTC, "Z", 0, 3, 6 or 9 fraction digits.
pub fn rfc3339(seconds: i64, nanos: i32) -> String {
    let days = seconds.div_euclid(86_400);
    let secs = seconds.rem_euclid(86_400);
    let (y, mo, d) = civil_from_days(days);
    let (h, mi, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let nanos = nanos.clamp(0, 999_999_999);
    let frac = if nanos == 0 {
        String::new()
    } else if nanos % 1_000_000 == 0 {
        format!(".{:03}", nanos / 1_000_000)
    } else if nanos % 1000 == 0 {
        format!(".{:06}", nanos / 1000)
    } else {
        format!(".{nanos:09}")
    };
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}{frac}Z")
}

/// EchoResponse in protobuf's JSON mapping with the original (proto) field names.
pub fn response_json(r: &EchoResponse) -> Value {
    let mut m = Map::new();
    let mut headers: Vec<_> = r.headers.iter().collect();
    headers.sort();
    m.insert(
        "headers".into(),
        Value::Object(
            headers
                .into_iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        ),
    );
    m.insert("body".into(), Value::String(r.body.clone()));
    if !r.padding.is_empty() {
        m.insert("padding".into(), Value::String(r.padding.clone()));
    }
    if !r.remote_addr.is_empty() {
        m.insert("remote_addr".into(), Value::String(r.remote_addr.clone()));
    }
    let ts = |t: &Option<prost_types::Timestamp>| {
        t.as_ref()
            .map(|t| Value::String(rfc3339(t.seconds, t.nanos)))
    };
    for (name, t) in [
        ("received_at", &r.received_at),
        ("handler_reached_at", &r.handler_reached_at),
        ("handler_responded_at", &r.handler_responded_at),
        ("sent_at", &r.sent_at),
    ] {
        if let Some(v) = ts(t) {
            m.insert(name.into(), v);
        }
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn timestamps_sort_like_the_instants(a in 0i64..253_402_300_799, b in 0i64..253_402_300_799) {
            // Whole seconds in years 1970..=9999 render at a fixed width, so text order is time order.
            let (ta, tb) = (rfc3339(a, 0), rfc3339(b, 0));
            proptest::prop_assert_eq!(ta.cmp(&tb), a.cmp(&b));
            proptest::prop_assert_eq!(ta.len(), 20);
        }
    }

    #[test]
    fn timestamps_render_like_protobuf_json() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339(1_733_285_574, 187_983_000),
            "2024-12-04T04:12:54.187983Z"
        );
        assert_eq!(rfc3339(951_782_400, 5), "2000-02-29T00:00:00.000000005Z");
        assert_eq!(
            rfc3339(4_107_542_400, 120_000_000),
            "2100-03-01T00:00:00.120Z"
        );
    }
}
