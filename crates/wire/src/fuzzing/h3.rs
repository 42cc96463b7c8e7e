//! The HTTP/3 targets' checks: the frame reader and the QPACK decoder.

use bytes::BytesMut;

use crate::h2::hpack;
use crate::h3::counts::H3Counts;
use crate::h3::frame::{self as h3_frame, Frame as H3Frame, FrameReader};
use crate::h3::qpack::{self, QpackCounts};

/// HTTP/3 frames read by a `FrameReader` (the first byte picks the length limit and the size
/// of the pieces) fed whole and in pieces: the same frames (DATA pieces joined), result and
/// counts, and every byte either counted or left in the buffer. Each frame re-encoded and read
/// again is the same frame.
pub fn h3_frames(data: &[u8]) {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let max_len = [0, 16, 1024, 1 << 16][usize::from(first & 3)];
    let (whole, result, counts, left) = read_h3(input, max_len, input.len());
    let pieces = read_h3(input, max_len, usize::from(first >> 2) + 1);
    assert_eq!(
        (&whole, result, counts, left),
        (&pieces.0, pieces.1, pieces.2, pieces.3)
    );
    assert_eq!(counts.total_bytes() + left as u64, input.len() as u64);

    let mut again = Vec::new();
    for frame in &whole {
        again.clear();
        let head = match frame {
            H3Frame::Data { chunk, .. } => {
                let head = h3_frame::encode_data_head(&mut again, chunk.len() as u64);
                again.extend_from_slice(chunk);
                head
            }
            H3Frame::Headers(block) => h3_frame::encode_headers(&mut again, block),
            H3Frame::PushPromise { push_id, block } => {
                h3_frame::encode_push_promise(&mut again, *push_id, block)
            }
            H3Frame::Settings(s) => h3_frame::encode_settings(&mut again, s),
            H3Frame::GoAway(id) => h3_frame::encode_goaway(&mut again, *id),
            H3Frame::CancelPush(id) => h3_frame::encode_cancel_push(&mut again, *id),
            H3Frame::MaxPushId(id) => h3_frame::encode_max_push_id(&mut again, *id),
        };
        assert_eq!(head.header_len + head.len as usize, again.len());
        let (re, result, _, left) = read_h3(&again, u64::MAX, again.len());
        assert_eq!(
            (&re[..], result, left),
            (std::slice::from_ref(frame), Ok(()), 0)
        );
    }
}

type H3Read = (Vec<H3Frame>, Result<(), crate::h3::Error>, H3Counts, usize);

/// The frames of `input` fed in pieces of `piece` bytes, DATA pieces joined per frame, and
/// the bytes left unread (in the buffer or not yet fed when an error stopped it).
fn read_h3(input: &[u8], max_len: u64, piece: usize) -> H3Read {
    let mut reader = FrameReader::new(max_len);
    let (mut buf, mut frames, mut open) = (BytesMut::new(), Vec::new(), false);
    let mut unfed = input.len();
    for chunk in input.chunks(piece.max(1)) {
        buf.extend_from_slice(chunk);
        unfed -= chunk.len();
        loop {
            match reader.decode(&mut buf) {
                Ok(Some(H3Frame::Data { chunk, remaining })) => {
                    match frames.last_mut() {
                        Some(H3Frame::Data { chunk: last, .. }) if open => {
                            *last = [&last[..], &chunk[..]].concat().into();
                        }
                        _ => frames.push(H3Frame::Data {
                            chunk,
                            remaining: 0,
                        }),
                    }
                    open = remaining > 0;
                }
                Ok(Some(frame)) => (open, _) = (false, frames.push(frame)),
                Ok(None) => break,
                Err(e) => return (frames, Err(e), *reader.counts(), buf.len() + unfed),
            }
        }
    }
    (frames, Ok(()), *reader.counts(), buf.len())
}

/// A QPACK field section decoded with a size limit the first byte picks: the fields fit the
/// limit; one that decodes re-encodes to a section that decodes to the same fields.
pub fn qpack_decode(data: &[u8]) {
    let Some((&first, block)) = data.split_first() else {
        return;
    };
    let max_size = [0, 40, 100, 1000, 16 * 1024, u64::MAX][usize::from(first) % 6];
    let mut decoder = qpack::Decoder::new();
    let (mut fields, mut counts) = (Vec::new(), QpackCounts::default());
    let result = decoder.decode(block, max_size, &mut counts, |n, v| {
        fields.push((n.to_vec(), v.to_vec()));
    });
    let size: u64 = fields
        .iter()
        .map(|(n, v)| hpack::field_size(n, v) as u64)
        .sum();
    assert!(size <= max_size, "{size} bytes of fields");
    if result.is_err() {
        assert_eq!(counts, QpackCounts::default());
        return;
    }
    assert_eq!(counts.section_bytes, block.len() as u64);
    assert_eq!(counts.field_bytes, size - 32 * fields.len() as u64);

    let mut again = Vec::new();
    let mut sent = QpackCounts::default();
    qpack::encode_section(
        fields.iter().map(|(n, v)| (&n[..], &v[..])),
        &mut again,
        &mut sent,
    );
    let mut round_trip = Vec::new();
    let mut received = QpackCounts::default();
    let result = decoder.decode(&again, u64::MAX, &mut received, |n, v| {
        round_trip.push((n.to_vec(), v.to_vec()));
    });
    assert_eq!(result, Ok(()), "re-encoded section refused: {again:02x?}");
    assert_eq!(round_trip, fields);
    assert_eq!(sent, received);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h3::Code;

    /// The seeds get where they are meant to: through every frame, or to the error they carry.
    #[test]
    fn the_seeds_reach_their_frames() {
        let seed = include_bytes!("../../../../fuzz/corpus/h3_frames/seed-request");
        let (frames, result, counts, left) = read_h3(&seed[1..], 1024, 1);
        assert_eq!((frames.len(), result, left), (5, Ok(()), 0));
        assert_eq!(counts.frame(h3_frame::FrameType::Unknown).count, 1);
        let seed = include_bytes!("../../../../fuzz/corpus/h3_frames/seed-control");
        let (frames, result, ..) = read_h3(&seed[1..], 1 << 16, 3);
        assert_eq!((frames.len(), result), (4, Ok(())));
        let seed = include_bytes!("../../../../fuzz/corpus/h3_frames/seed-h2-type");
        let (frames, result, ..) = read_h3(&seed[1..], 1024, 1);
        assert_eq!(frames.len(), 1);
        assert_eq!(result.unwrap_err().code, Code::FrameUnexpected);

        let seed = include_bytes!("../../../../fuzz/corpus/qpack_decode/seed-request");
        let mut fields = Vec::new();
        qpack::Decoder::new()
            .decode(&seed[1..], 1 << 14, &mut QpackCounts::default(), |n, v| {
                fields.push((n.to_vec(), v.to_vec()))
            })
            .unwrap();
        assert_eq!(
            fields[2],
            (b":authority".to_vec(), b"www.example.com".to_vec())
        );
        assert_eq!(fields.len(), 4);
    }
}
