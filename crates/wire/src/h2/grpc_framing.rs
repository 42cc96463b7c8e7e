//! The gRPC layer of DATA: one stream's gRPC message framing, followed across the DATA frames
//! that carry it and counted into `H2Counts` (prefixes, message bytes, messages).

use super::counts::H2Counts;

/// Bytes in a gRPC message prefix (`crate::grpc::PREFIX_LEN`), as the prefix counter's type.
const PREFIX_LEN: u8 = crate::grpc::PREFIX_LEN as u8;

/// gRPC message framing state of one stream's DATA content (the sniffer keeps one per stream it
/// follows; the client connection keeps one in each of its streams, `h2::tally`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum GrpcFraming {
    /// `got` prefix bytes seen; `len` holds the length bytes among them.
    Prefix { got: u8, len: [u8; 4] },
    /// Message bytes still to come (non-zero).
    Body(u32),
    /// A prefix had an invalid flag byte; the rest of the stream is untracked.
    Broken,
}

impl GrpcFraming {
    /// At a message boundary: the next byte is a prefix's flag byte.
    pub(crate) const START: GrpcFraming = GrpcFraming::Prefix {
        got: 0,
        len: [0; 4],
    };

    /// Advances the framing over DATA content bytes, counting them into `c`.
    pub(crate) fn advance(&mut self, mut data: &[u8], c: &mut H2Counts) {
        while !data.is_empty() {
            // Fast path: a whole message (compressed flag 0 or 1) starting at a message boundary.
            if let (GrpcFraming::Prefix { got: 0, .. }, [0 | 1, l0, l1, l2, l3, ..]) = (*self, data)
            {
                let len = u32::from_be_bytes([*l0, *l1, *l2, *l3]);
                if let Some(tail) = data.get(usize::from(PREFIX_LEN) + len as usize..) {
                    c.grpc_prefix_bytes += u64::from(PREFIX_LEN);
                    c.grpc_message_bytes += u64::from(len);
                    c.grpc_messages += 1;
                    data = tail;
                    continue;
                }
            }
            match *self {
                GrpcFraming::Prefix { mut got, mut len } => {
                    if got == 0 {
                        let Some((&flag, tail)) = data.split_first() else {
                            return;
                        };
                        if flag > 1 {
                            *self = GrpcFraming::Broken;
                            continue;
                        }
                        got = 1;
                        c.grpc_prefix_bytes += 1;
                        data = tail;
                    }
                    while got < PREFIX_LEN {
                        let Some((&b, tail)) = data.split_first() else {
                            break;
                        };
                        if let Some(slot) = len.get_mut(usize::from(got - 1)) {
                            *slot = b;
                        }
                        got += 1;
                        c.grpc_prefix_bytes += 1;
                        data = tail;
                    }
                    *self = if got < PREFIX_LEN {
                        GrpcFraming::Prefix { got, len }
                    } else {
                        c.grpc_messages += 1;
                        match u32::from_be_bytes(len) {
                            0 => GrpcFraming::START,
                            n => GrpcFraming::Body(n),
                        }
                    };
                }
                GrpcFraming::Body(left) => {
                    let take = usize::try_from(left).unwrap_or(usize::MAX).min(data.len());
                    let (part, tail) = data.split_at(take);
                    c.grpc_message_bytes += part.len() as u64;
                    *self = match left - part.len() as u32 {
                        0 => GrpcFraming::START,
                        n => GrpcFraming::Body(n),
                    };
                    data = tail;
                }
                GrpcFraming::Broken => {
                    c.data_untracked_bytes += data.len() as u64;
                    return;
                }
            }
        }
    }
}
