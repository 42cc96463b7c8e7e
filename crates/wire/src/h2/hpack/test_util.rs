//! Helpers and RFC 7541 Appendix C vectors shared by the tests of the submodules.

use super::{Decoder, Error};

/// One decoded field, owned.
pub(super) type Owned = (Vec<u8>, Vec<u8>, bool);

/// Bytes from the RFC's hex dumps (whitespace ignored).
pub(super) fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    digits
        .chunks(2)
        .map(|pair| {
            let text = std::str::from_utf8(pair).unwrap();
            u8::from_str_radix(text, 16).unwrap()
        })
        .collect()
}

/// Decodes one block, collecting its fields.
pub(super) fn decode_all(
    decoder: &mut Decoder,
    block: &[u8],
    max_list_size: usize,
) -> Result<Vec<Owned>, Error> {
    let mut fields = Vec::new();
    decoder.decode(block, max_list_size, |f| {
        fields.push((f.name.to_vec(), f.value.to_vec(), f.never_indexed));
    })?;
    Ok(fields)
}

/// Owned (name, value) pairs from string pairs, not never-indexed.
pub(super) fn pairs(list: &[(&str, &str)]) -> Vec<Owned> {
    list.iter()
        .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec(), false))
        .collect()
}

/// C.3.1 / C.4.1: the first request.
pub(super) const REQ1: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
];
/// C.3.2 / C.4.2: the second request.
pub(super) const REQ2: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
    ("cache-control", "no-cache"),
];
/// C.3.3 / C.4.3: the third request.
pub(super) const REQ3: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "https"),
    (":path", "/index.html"),
    (":authority", "www.example.com"),
    ("custom-key", "custom-value"),
];
/// The dynamic table after each request, newest first.
pub(super) const REQ_TABLE1: &[(&str, &str)] = &[(":authority", "www.example.com")];
pub(super) const REQ_TABLE2: &[(&str, &str)] = &[
    ("cache-control", "no-cache"),
    (":authority", "www.example.com"),
];
pub(super) const REQ_TABLE3: &[(&str, &str)] = &[
    ("custom-key", "custom-value"),
    ("cache-control", "no-cache"),
    (":authority", "www.example.com"),
];

/// RFC 7541 C.3: three requests without Huffman coding.
pub(super) const C3: [&str; 3] = [
    "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
    "8286 84be 5808 6e6f 2d63 6163 6865",
    "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
];
/// RFC 7541 C.4: the same requests with Huffman coding.
pub(super) const C4: [&str; 3] = [
    "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
    "8286 84be 5886 a8eb 1064 9cbf",
    "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
];
/// The requests of C.3 and C.4.
pub(super) const REQUESTS: [&[(&str, &str)]; 3] = [REQ1, REQ2, REQ3];

/// Values of the C.5 / C.6 responses.
const DATE1: &str = "Mon, 21 Oct 2013 20:13:21 GMT";
const DATE2: &str = "Mon, 21 Oct 2013 20:13:22 GMT";
const LOCATION: &str = "https://www.example.com";
const COOKIE: &str = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
/// C.5.1 / C.6.1: the first response.
pub(super) const RESP1: &[(&str, &str)] = &[
    (":status", "302"),
    ("cache-control", "private"),
    ("date", DATE1),
    ("location", LOCATION),
];
/// C.5.2 / C.6.2: the second response.
pub(super) const RESP2: &[(&str, &str)] = &[
    (":status", "307"),
    ("cache-control", "private"),
    ("date", DATE1),
    ("location", LOCATION),
];
/// C.5.3 / C.6.3: the third response.
pub(super) const RESP3: &[(&str, &str)] = &[
    (":status", "200"),
    ("cache-control", "private"),
    ("date", DATE2),
    ("location", LOCATION),
    ("content-encoding", "gzip"),
    ("set-cookie", COOKIE),
];
/// The dynamic table (256 bytes) after each response, newest first.
pub(super) const RESP_TABLE1: &[(&str, &str)] = &[
    ("location", LOCATION),
    ("date", DATE1),
    ("cache-control", "private"),
    (":status", "302"),
];
pub(super) const RESP_TABLE2: &[(&str, &str)] = &[
    (":status", "307"),
    ("location", LOCATION),
    ("date", DATE1),
    ("cache-control", "private"),
];
pub(super) const RESP_TABLE3: &[(&str, &str)] = &[
    ("set-cookie", COOKIE),
    ("content-encoding", "gzip"),
    ("date", DATE2),
];

/// RFC 7541 C.5: three responses without Huffman coding, 256-byte table.
pub(super) const C5: [&str; 3] = [
    "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
     2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70
     6c65 2e63 6f6d",
    "4803 3330 37c1 c0bf",
    "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
     54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
     5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e
     3d31",
];
/// RFC 7541 C.6: the same responses with Huffman coding.
pub(super) const C6: [&str; 3] = [
    "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
     2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
    "4883 640e ffc1 c0bf",
    "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
     77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
     9587 3160 65c0 03ed 4ee5 b106 3d50 07",
];
/// The responses of C.5 and C.6.
pub(super) const RESPONSES: [&[(&str, &str)]; 3] = [RESP1, RESP2, RESP3];
