//! The verdict on a server-streaming call's response, judged as its parts arrive (sans-IO, fed
//! by the caller's h2 driver): `:status` 200, then any number of messages, each at most the
//! receive limit, then trailers with `grpc-status: 0`. A trailers-only answer with status 0 is
//! a good stream of no messages.
//!
//! Messages are taken out of the caller's buffer as soon as each is complete, so what the
//! buffer holds is bounded by one message at the receive limit plus the chunk at hand, however
//! long the stream runs.

use bytes::BytesMut;

use super::unary::{Verdict, judge_head};
use super::{Code, Error, decode_with};

/// One server-streaming response being received.
#[derive(Debug)]
pub struct StreamingResponse {
    max_message: usize,
    messages: u64,
}

impl StreamingResponse {
    /// A stream whose messages may be at most `max_message` bytes each (the receive limit).
    pub fn new(max_message: usize) -> StreamingResponse {
        StreamingResponse {
            max_message,
            messages: 0,
        }
    }

    /// Messages taken so far.
    pub fn messages(&self) -> u64 {
        self.messages
    }

    /// The response headers: `:status` and `grpc-status` (parsed), if present. `Ok(true)`:
    /// messages and trailers follow; `Ok(false)`: a trailers-only answer with status 0, a
    /// complete stream of no messages.
    pub fn headers(
        &self,
        status: u16,
        grpc_status: Option<Result<Code, Error>>,
    ) -> Result<bool, Verdict> {
        judge_head(status, grpc_status)
    }

    /// Takes every complete message out of `rx` (the bytes received so far, the caller
    /// appends), lending each to `message`. What stays in `rx` is the start of the next one.
    pub fn data(
        &mut self,
        rx: &mut BytesMut,
        mut message: impl FnMut(&[u8]),
    ) -> Result<(), Verdict> {
        while decode_with(rx, self.max_message, &mut message)
            .map_err(Verdict::Framing)?
            .is_some()
        {
            self.messages += 1;
        }
        Ok(())
    }

    /// The end of the stream: whether trailers came, and their grpc-status. The number of
    /// messages when everything was right.
    pub fn finish(
        &self,
        rx: &BytesMut,
        trailers: bool,
        grpc_status: Option<Result<Code, Error>>,
    ) -> Result<u64, Verdict> {
        if !trailers {
            return Err(Verdict::NoTrailers);
        }
        match grpc_status.transpose().map_err(Verdict::Framing)? {
            None => Err(Verdict::NoStatus),
            Some(Code::Ok) if !rx.is_empty() => Err(Verdict::Truncated),
            Some(Code::Ok) => Ok(self.messages),
            Some(code) => Err(Verdict::Status(code)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(payload: &[u8]) -> Vec<u8> {
        let mut v = vec![0];
        v.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    /// Feeds `bytes` in chunks of `step` and returns the messages taken.
    fn feed(
        s: &mut StreamingResponse,
        rx: &mut BytesMut,
        bytes: &[u8],
        step: usize,
    ) -> Vec<Vec<u8>> {
        let mut got = Vec::new();
        for chunk in bytes.chunks(step) {
            rx.extend_from_slice(chunk);
            s.data(rx, |m| got.push(m.to_vec())).unwrap();
        }
        got
    }

    #[test]
    fn messages_are_taken_in_any_chunks() {
        let mut all = Vec::new();
        for p in [&b"one"[..], b"", b"three", &[7u8; 300]] {
            all.extend(framed(p));
        }
        for step in [1, 2, 5, 7, 64, all.len()] {
            let mut s = StreamingResponse::new(1024);
            let mut rx = BytesMut::new();
            assert_eq!(s.headers(200, None), Ok(true));
            let got = feed(&mut s, &mut rx, &all, step);
            assert_eq!(got.len(), 4, "step {step}");
            assert_eq!(&got[0][..], b"one");
            assert!(got[1].is_empty());
            assert_eq!(&got[2][..], b"three");
            assert_eq!(got[3].len(), 300);
            assert!(rx.is_empty());
            assert_eq!(s.finish(&rx, true, Some(Ok(Code::Ok))), Ok(4));
        }
    }

    #[test]
    fn the_head_and_the_end_are_judged() {
        let s = StreamingResponse::new(16);
        // a trailers-only OK: a stream of no messages
        assert_eq!(s.headers(200, Some(Ok(Code::Ok))), Ok(false));
        assert_eq!(
            s.headers(200, Some(Ok(Code::NotFound))),
            Err(Verdict::Status(Code::NotFound))
        );
        assert!(matches!(
            s.headers(503, None),
            Err(Verdict::HttpStatus {
                http: 503,
                code: Code::Unavailable
            })
        ));
        let rx = BytesMut::new();
        assert_eq!(s.finish(&rx, false, None), Err(Verdict::NoTrailers));
        assert_eq!(s.finish(&rx, true, None), Err(Verdict::NoStatus));
        assert_eq!(
            s.finish(&rx, true, Some(Ok(Code::Aborted))),
            Err(Verdict::Status(Code::Aborted))
        );
        // a message cut off by the end
        let mut s = StreamingResponse::new(16);
        let mut rx = BytesMut::new();
        let got = feed(&mut s, &mut rx, &framed(b"abcdef")[..7], 3);
        assert!(got.is_empty());
        assert_eq!(
            s.finish(&rx, true, Some(Ok(Code::Ok))),
            Err(Verdict::Truncated)
        );
    }

    proptest::proptest! {
        #[test]
        fn any_messages_in_any_chunks_come_out_whole(
            payloads in proptest::collection::vec(proptest::collection::vec(0u8..=255, 0..200), 0..8),
            step in 1usize..300,
        ) {
            let mut all = Vec::new();
            for p in &payloads {
                all.extend(framed(p));
            }
            let mut s = StreamingResponse::new(256);
            let mut rx = BytesMut::new();
            let got = feed(&mut s, &mut rx, &all, step);
            let got: Vec<Vec<u8>> = got.iter().map(|m| m.to_vec()).collect();
            proptest::prop_assert_eq!(&got, &payloads);
            proptest::prop_assert_eq!(s.finish(&rx, true, Some(Ok(Code::Ok))), Ok(payloads.len() as u64));
        }
    }

    #[test]
    fn an_oversized_message_is_refused_from_its_prefix() {
        let mut s = StreamingResponse::new(16);
        let mut rx = BytesMut::new();
        rx.extend_from_slice(&framed(b"ok"));
        rx.extend_from_slice(&[0, 0, 0, 1, 0]);
        let mut got = 0;
        let r = s.data(&mut rx, |_| got += 1);
        assert_eq!(got, 1);
        assert!(matches!(
            r,
            Err(Verdict::Framing(Error::MessageTooLarge {
                len: 256,
                max: 16
            }))
        ));
    }
}
