//! The QPACK static table (RFC 9204 Appendix A): 99 field lines, indexed from 0, and the
//! lookups the encoder and decoder make in it.

/// The table, index `i` at `STATIC_TABLE[i]`, as Appendix A lists it.
#[rustfmt::skip]
pub const STATIC_TABLE: [(&[u8], &[u8]); 99] = [
    (b":authority", b""),
    (b":path", b"/"),
    (b"age", b"0"),
    (b"content-disposition", b""),
    (b"content-length", b"0"),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"referer", b""),
    (b"set-cookie", b""),
    (b":method", b"CONNECT"),
    (b":method", b"DELETE"),
    (b":method", b"GET"),
    (b":method", b"HEAD"),
    (b":method", b"OPTIONS"),
    (b":method", b"POST"),
    (b":method", b"PUT"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"103"),
    (b":status", b"200"),
    (b":status", b"304"),
    (b":status", b"404"),
    (b":status", b"503"),
    (b"accept", b"*/*"),
    (b"accept", b"application/dns-message"),
    (b"accept-encoding", b"gzip, deflate, br"),
    (b"accept-ranges", b"bytes"),
    (b"access-control-allow-headers", b"cache-control"),
    (b"access-control-allow-headers", b"content-type"),
    (b"access-control-allow-origin", b"*"),
    (b"cache-control", b"max-age=0"),
    (b"cache-control", b"max-age=2592000"),
    (b"cache-control", b"max-age=604800"),
    (b"cache-control", b"no-cache"),
    (b"cache-control", b"no-store"),
    (b"cache-control", b"public, max-age=31536000"),
    (b"content-encoding", b"br"),
    (b"content-encoding", b"gzip"),
    (b"content-type", b"application/dns-message"),
    (b"content-type", b"application/javascript"),
    (b"content-type", b"application/json"),
    (b"content-type", b"application/x-www-form-urlencoded"),
    (b"content-type", b"image/gif"),
    (b"content-type", b"image/jpeg"),
    (b"content-type", b"image/png"),
    (b"content-type", b"text/css"),
    (b"content-type", b"text/html; charset=utf-8"),
    (b"content-type", b"text/plain"),
    (b"content-type", b"text/plain;charset=utf-8"),
    (b"range", b"bytes=0-"),
    (b"strict-transport-security", b"max-age=31536000"),
    (b"strict-transport-security", b"max-age=31536000; includesubdomains"),
    (b"strict-transport-security", b"max-age=31536000; includesubdomains; preload"),
    (b"vary", b"accept-encoding"),
    (b"vary", b"origin"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-xss-protection", b"1; mode=block"),
    (b":status", b"100"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"302"),
    (b":status", b"400"),
    (b":status", b"403"),
    (b":status", b"421"),
    (b":status", b"425"),
    (b":status", b"500"),
    (b"accept-language", b""),
    (b"access-control-allow-credentials", b"FALSE"),
    (b"access-control-allow-credentials", b"TRUE"),
    (b"access-control-allow-headers", b"*"),
    (b"access-control-allow-methods", b"get"),
    (b"access-control-allow-methods", b"get, post, options"),
    (b"access-control-allow-methods", b"options"),
    (b"access-control-expose-headers", b"content-length"),
    (b"access-control-request-headers", b"content-type"),
    (b"access-control-request-method", b"get"),
    (b"access-control-request-method", b"post"),
    (b"alt-svc", b"clear"),
    (b"authorization", b""),
    (b"content-security-policy", b"script-src 'none'; object-src 'none'; base-uri 'none'"),
    (b"early-data", b"1"),
    (b"expect-ct", b""),
    (b"forwarded", b""),
    (b"if-range", b""),
    (b"origin", b""),
    (b"purpose", b"prefetch"),
    (b"server", b""),
    (b"timing-allow-origin", b"*"),
    (b"upgrade-insecure-requests", b"1"),
    (b"user-agent", b""),
    (b"x-forwarded-for", b""),
    (b"x-frame-options", b"deny"),
    (b"x-frame-options", b"sameorigin"),
];

/// The entry at `index`, or `None` past the end (which a decoder refuses).
pub fn get(index: u64) -> Option<(&'static [u8], &'static [u8])> {
    usize::try_from(index)
        .ok()
        .and_then(|i| STATIC_TABLE.get(i))
        .copied()
}

/// What the static table holds of a field line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// An entry with this name and value.
    Field(u8),
    /// The first entry with this name, none with this value.
    Name(u8),
    /// No entry with this name.
    None,
}

/// Looks up a field line (names are compared as sent: the table's are lowercase).
pub fn find(name: &[u8], value: &[u8]) -> Match {
    let mut found = Match::None;
    for (i, &(n, v)) in STATIC_TABLE.iter().enumerate() {
        if n != name {
            continue;
        }
        // 99 entries: every index fits in a u8
        let i = i as u8;
        if v == value {
            return Match::Field(i);
        }
        if found == Match::None {
            found = Match::Name(i);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries checked one by one against RFC 9204 Appendix A.
    #[test]
    fn known_entries_by_index() {
        let known: [(u64, &[u8], &[u8]); 9] = [
            (0, b":authority", b""),
            (1, b":path", b"/"),
            (17, b":method", b"GET"),
            (20, b":method", b"POST"),
            (23, b":scheme", b"https"),
            (25, b":status", b"200"),
            (29, b"accept", b"*/*"),
            (95, b"user-agent", b""),
            (98, b"x-frame-options", b"sameorigin"),
        ];
        for (index, name, value) in known {
            assert_eq!(get(index), Some((name, value)), "index {index}");
        }
        assert_eq!(get(99), None);
        assert_eq!(get(u64::MAX), None);
        assert_eq!(
            get(85).unwrap().1,
            b"script-src 'none'; object-src 'none'; base-uri 'none'"
        );
    }

    #[test]
    fn names_are_lowercase_tokens() {
        for (name, _) in STATIC_TABLE {
            assert!(
                name.iter()
                    .enumerate()
                    .all(|(i, &c)| c.is_ascii_lowercase() || c == b'-' || (i == 0 && c == b':')),
                "{:?}",
                String::from_utf8_lossy(name)
            );
        }
    }

    #[test]
    fn find_prefers_the_exact_entry_then_the_first_name() {
        assert_eq!(find(b":method", b"POST"), Match::Field(20));
        assert_eq!(find(b":method", b"PATCH"), Match::Name(15));
        assert_eq!(find(b":status", b"100"), Match::Field(63));
        assert_eq!(find(b":path", b"/index.html"), Match::Name(1));
        assert_eq!(find(b"x-custom", b"1"), Match::None);
        // names are not case-folded
        assert_eq!(find(b":Method", b"GET"), Match::None);
    }
}
