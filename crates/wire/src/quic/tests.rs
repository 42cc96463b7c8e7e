//! The sniffer's tests: RFC 9001 Appendix A's vectors, a test encoder's packets sniffed back
//! (proptest), key updates, coalesced packets, suite guessing and garbage.

use proptest::prelude::*;

use super::counts::{FRAME_KINDS, FrameCount};
use super::header::TAG_LEN;
use super::keys::{self, Keys, PacketKey, Secret, Suite};
use super::level::Level;
use super::*;
use crate::h3::varint;

fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

fn fc(count: u64, bytes: u64, data_bytes: u64) -> FrameCount {
    FrameCount {
        count,
        bytes,
        data_bytes,
    }
}

/// RFC 9001 Appendix A's values, in the order the RFC gives them.
const DCID: &str = "8394c8f03e515708";
const CLIENT_INITIAL: &str = "\
    c000000001088394c8f03e5157080000449e7b9aec34d1b1c98dd7689fb8ec11\
    d242b123dc9bd8bab936b47d92ec356c0bab7df5976d27cd449f63300099f399\
    1c260ec4c60d17b31f8429157bb35a1282a643a8d2262cad67500cadb8e7378c\
    8eb7539ec4d4905fed1bee1fc8aafba17c750e2c7ace01e6005f80fcb7df6212\
    30c83711b39343fa028cea7f7fb5ff89eac2308249a02252155e2347b63d58c5\
    457afd84d05dfffdb20392844ae812154682e9cf012f9021a6f0be17ddd0c208\
    4dce25ff9b06cde535d0f920a2db1bf362c23e596d11a4f5a6cf3948838a3aec\
    4e15daf8500a6ef69ec4e3feb6b1d98e610ac8b7ec3faf6ad760b7bad1db4ba3\
    485e8a94dc250ae3fdb41ed15fb6a8e5eba0fc3dd60bc8e30c5c4287e53805db\
    059ae0648db2f64264ed5e39be2e20d82df566da8dd5998ccabdae053060ae6c\
    7b4378e846d29f37ed7b4ea9ec5d82e7961b7f25a9323851f681d582363aa5f8\
    9937f5a67258bf63ad6f1a0b1d96dbd4faddfcefc5266ba6611722395c906556\
    be52afe3f565636ad1b17d508b73d8743eeb524be22b3dcbc2c7468d54119c74\
    68449a13d8e3b95811a198f3491de3e7fe942b330407abf82a4ed7c1b311663a\
    c69890f4157015853d91e923037c227a33cdd5ec281ca3f79c44546b9d90ca00\
    f064c99e3dd97911d39fe9c5d0b23a229a234cb36186c4819e8b9c5927726632\
    291d6a418211cc2962e20fe47feb3edf330f2c603a9d48c0fcb5699dbfe58964\
    25c5bac4aee82e57a85aaf4e2513e4f05796b07ba2ee47d80506f8d2c25e50fd\
    14de71e6c418559302f939b0e1abd576f279c4b2e0feb85c1f28ff18f58891ff\
    ef132eef2fa09346aee33c28eb130ff28f5b766953334113211996d20011a198\
    e3fc433f9f2541010ae17c1bf202580f6047472fb36857fe843b19f5984009dd\
    c324044e847a4f4a0ab34f719595de37252d6235365e9b84392b061085349d73\
    203a4a13e96f5432ec0fd4a1ee65accdd5e3904df54c1da510b0ff20dcc0c77f\
    cb2c0e0eb605cb0504db87632cf3d8b4dae6e705769d1de354270123cb11450e\
    fc60ac47683d7b8d0f811365565fd98c4c8eb936bcab8d069fc33bd801b03ade\
    a2e1fbc5aa463d08ca19896d2bf59a071b851e6c239052172f296bfb5e724047\
    90a2181014f3b94a4e97d117b438130368cc39dbb2d198065ae3986547926cd2\
    162f40a29f0c3c8745c0f50fba3852e566d44575c29d39a03f0cda721984b6f4\
    40591f355e12d439ff150aab7613499dbd49adabc8676eef023b15b65bfc5ca0\
    6948109f23f350db82123535eb8a7433bdabcb909271a6ecbcb58b936a88cd4e\
    8f2e6ff5800175f113253d8fa9ca8885c2f552e657dc603f252e1a8e308f76f0\
    be79e2fb8f5d5fbbe2e30ecadd220723c8c0aea8078cdfcb3868263ff8f09400\
    54da48781893a7e49ad5aff4af300cd804a6b6279ab3ff3afb64491c85194aab\
    760d58a606654f9f4400e8b38591356fbf6425aca26dc85244259ff2b19c41b9\
    f96f3ca9ec1dde434da7d2d392b905ddf3d1f9af93d1af5950bd493f5aa731b4\
    056df31bd267b6b90a079831aaf579be0a39013137aac6d404f518cfd4684064\
    7e78bfe706ca4cf5e9c5453e9f7cfd2b8b4c8d169a44e55c88d4a9a7f9474241\
    e221af44860018ab0856972e194cd934";
const CLIENT_CRYPTO: &str = "\
    060040f1010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e868\
    04fe3a47f06a2b69484c00000413011302010000c000000010000e00000b6578\
    616d706c652e636f6dff01000100000a00080006001d00170018001000070005\
    04616c706e000500050100000000003300260024001d00209370b2c9caa47fba\
    baf4559fedba753de171fa71f50f1ce15d43e994ec74d748002b000302030400\
    0d0010000e0403050306030203080408050806002d00020101001c0002400100\
    3900320408ffffffffffffffff05048000ffff07048000ffff08011001048000\
    75300901100f088394c8f03e51570806048000ffff";
const SERVER_INITIAL: &str = "\
    cf000000010008f067a5502a4262b5004075c0d95a482cd0991cd25b0aac406a\
    5816b6394100f37a1c69797554780bb38cc5a99f5ede4cf73c3ec2493a1839b3\
    dbcba3f6ea46c5b7684df3548e7ddeb9c3bf9c73cc3f3bded74b562bfb19fb84\
    022f8ef4cdd93795d77d06edbb7aaf2f58891850abbdca3d20398c276456cbc4\
    2158407dd074ee";
const SERVER_PAYLOAD: &str = "\
    02000000000600405a020000560303eefce7f7b37ba1d1632e96677825ddf739\
    88cfc79825df566dc5430b9a045a1200130100002e00330024001d00209d3c94\
    0d89690b84d08a60993c144eca684d1081287c834d5311bcf32bb9da1a002b00\
    020304";
const RETRY: &str = "\
    ff000000010008f067a5502a4262b5746f6b656e04a265ba2eff4d829058fb3f\
    0f2496ba";

/// A.1: the initial secrets and the keys they give.
#[test]
fn rfc_9001_a1_initial_keys() {
    let (client, server) = keys::initial_secrets(&hex(DCID));
    assert_eq!(
        client.as_bytes(),
        hex("c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea")
    );
    assert_eq!(
        server.as_bytes(),
        hex("3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b")
    );
    let c = Suite::Aes128Gcm.material(&client);
    assert_eq!(c.key_len, 16);
    assert_eq!(c.key[..16], hex("1f369613dd76d5467730efcbe3b1a22d"));
    assert_eq!(c.iv[..], hex("fa044b2f42a3fd3b46fb255c"));
    assert_eq!(c.hp[..16], hex("9f50449e04a0e810283a1e9933adedd2"));
    let s = Suite::Aes128Gcm.material(&server);
    assert_eq!(s.key[..16], hex("cf3a5331653c364c88f0f379b6067e37"));
    assert_eq!(s.iv[..], hex("0ac1493ca1905853b0bba03e"));
    assert_eq!(s.hp[..16], hex("c206b8d9b9f0f37644430b490eeaa314"));
    // the mask of A.2's sample
    let keys = Keys::new(Suite::Aes128Gcm, &client);
    let sample: [u8; 16] = hex("d1b1c98dd7689fb8ec11d242b123dc9b").try_into().unwrap();
    assert_eq!(keys.mask(&sample)[..], hex("437b9aec36"));
}

/// A.2 and A.3: the client's Initial and the server's, decrypted and counted to the byte.
#[test]
fn rfc_9001_a2_a3_initials() {
    let mut s = Sniffer::new();
    let client = hex(CLIENT_INITIAL);
    assert_eq!(client.len(), 1200);
    s.datagram(Dir::Out, &client);
    let out = s.counts(Dir::Out);
    assert_eq!((out.datagrams, out.datagram_bytes), (1, 1200));
    assert_eq!(out.packets(PacketType::Initial), 1);
    // c300000001088394c8f03e5157080000449e00000002: 22 bytes with its 4-byte packet number
    assert_eq!((out.header_bytes, out.tag_bytes), (22, 16));
    // the CRYPTO frame: type, offset 0, length 0x40f1 = 241, then 241 bytes
    assert_eq!(hex(CLIENT_CRYPTO).len(), 245);
    assert_eq!(out.frame(FrameKind::Crypto), fc(1, 245, 241));
    // then PADDING to a 1162-byte payload, one run
    assert_eq!(out.frame(FrameKind::Padding), fc(1, 1162 - 245, 0));
    assert_eq!(out.payload_bytes(), 1162);
    assert_eq!(out.undecryptable_packets(), 0);
    assert_eq!(out.total(), 1200);

    let server = hex(SERVER_INITIAL);
    s.datagram(Dir::In, &server);
    let inn = s.counts(Dir::In);
    assert_eq!(inn.packets(PacketType::Initial), 1);
    // c1000000010008f067a5502a4262b50040750001: 20 bytes with a 2-byte packet number
    assert_eq!((inn.header_bytes, inn.tag_bytes), (20, 16));
    // ACK 02 00 00 00 00, then CRYPTO 06 00 40 5a and 90 bytes; no padding
    assert_eq!(hex(SERVER_PAYLOAD).len(), 99);
    assert_eq!(inn.frame(FrameKind::Ack), fc(1, 5, 0));
    assert_eq!(inn.frame(FrameKind::Crypto), fc(1, 94, 90));
    assert_eq!(inn.padding_bytes(), 0);
    assert_eq!(inn.total(), 135);
    assert_eq!(inn.datagram_bytes, 135);
}

/// A.4: the Retry's integrity tag checks against the client's first DCID, and the client's
/// next Initial brings new initial keys.
#[test]
fn rfc_9001_a4_retry() {
    let mut s = Sniffer::new();
    // a Retry before any Initial cannot be checked
    s.datagram(Dir::In, &hex(RETRY));
    assert_eq!(s.counts(Dir::In).undecryptable(ErrorKind::Auth).packets, 1);

    let mut s = Sniffer::new();
    s.datagram(Dir::Out, &hex(CLIENT_INITIAL));
    let mut bad = hex(RETRY);
    *bad.last_mut().unwrap() ^= 1;
    s.datagram(Dir::In, &bad);
    s.datagram(Dir::In, &hex(RETRY));
    let inn = s.counts(Dir::In);
    assert_eq!(inn.packets(PacketType::Retry), 2);
    assert_eq!(
        inn.undecryptable(ErrorKind::Auth),
        PacketBytes {
            packets: 1,
            bytes: 36
        }
    );
    assert_eq!((inn.header_bytes, inn.tag_bytes), (20, 16));
    assert_eq!(inn.total(), inn.datagram_bytes);

    // the client's next Initial goes to the Retry's SCID, whose keys the sniffer now uses
    let new_dcid = hex("f067a5502a4262b5");
    let (client, _) = keys::initial_secrets(&new_dcid);
    let keys = Keys::new(Suite::Aes128Gcm, &client);
    let mut b = Built::new(Dir::Out);
    let frames = [F::Crypto { offset: 0, len: 40 }, F::Padding(900)];
    let token = b"token";
    let packet = b.long(
        PacketType::Initial,
        &new_dcid,
        &[],
        token,
        1,
        2,
        &frames,
        &keys,
    );
    s.datagram(Dir::Out, &packet);
    let out = s.counts(Dir::Out);
    assert_eq!(out.packets(PacketType::Initial), 2);
    assert_eq!(out.undecryptable_packets(), 0);
    assert_eq!(out.frame(FrameKind::Crypto), fc(2, 245 + 43, 241 + 40));
}

/// A.5: the ChaCha20-Poly1305 short header packet, its keys and its next generation's secret.
#[test]
fn rfc_9001_a5_chacha20_short_header() {
    let secret = Secret::new(&hex(
        "9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b",
    ))
    .unwrap();
    let m = Suite::ChaCha20Poly1305.material(&secret);
    assert_eq!(
        m.key[..],
        hex("c6d98ff3441c3fe1b2182094f69caa2ed4b716b65488960a7a984979fb23e1c8")
    );
    assert_eq!(m.iv[..], hex("e0459b3474bdd0e44a41c144"));
    assert_eq!(
        m.hp[..],
        hex("25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4")
    );
    assert_eq!(
        secret.next().as_bytes(),
        hex("1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9")
    );

    let packet = hex("4cfe4189655e5cd55c41f69080575d7999c25a5bfb");
    assert_eq!(packet.len(), 21);
    // guessing the suite: AES-128-GCM fails, ChaCha20-Poly1305 opens it
    let mut level = Level::new(secret, &[Suite::Aes128Gcm, Suite::ChaCha20Poly1305]);
    let mut scratch = Vec::new();
    let opened = level
        .open(&packet, 1, Some(654_360_563), &mut scratch)
        .unwrap();
    assert_eq!(
        (opened.header_len, opened.pn, opened.payload_len),
        (4, 654_360_564, 1)
    );
    assert_eq!(
        (opened.suite, opened.settled, opened.updated),
        (Suite::ChaCha20Poly1305, true, false)
    );
    assert_eq!(scratch[..5], hex("4200bff401"));
    // protecting it again gives the RFC's bytes
    let keys = Keys::new(Suite::ChaCha20Poly1305, &secret);
    let mut again = hex("4200bff401");
    keys.protect(654_360_564, 4, &mut again).unwrap();
    assert_eq!(again, packet);
}

/// A frame the test encoder writes.
#[derive(Clone, Debug)]
enum F {
    Padding(usize),
    Ping,
    Ack {
        largest: u64,
        ranges: Vec<(u64, u64)>,
        ecn: bool,
    },
    ResetStream(u64),
    Crypto {
        offset: u64,
        len: usize,
    },
    NewToken(usize),
    Stream {
        id: u64,
        offset: u64,
        len: usize,
        fin: bool,
        with_len: bool,
    },
    MaxData(u64),
    MaxStreams(bool, u64),
    NewCid(u8),
    PathChallenge,
    Close {
        app: bool,
        reason: usize,
    },
    HandshakeDone,
    Datagram {
        len: usize,
        with_len: bool,
    },
    AckFrequency(u64),
    ImmediateAck,
    /// An unknown type (0x21) and this many bytes after it: the walk stops there.
    Unknown(usize),
}

type Visit = (Dir, u64, u64, Vec<u8>, bool);

/// The STREAM frames a visitor saw.
#[derive(Default)]
struct Streams(Vec<Visit>);

impl StreamVisitor for Streams {
    fn stream(&mut self, dir: Dir, id: u64, offset: u64, data: &[u8], fin: bool) {
        self.0.push((dir, id, offset, data.to_vec(), fin));
    }
}

fn data(len: usize, seed: u64) -> Vec<u8> {
    (0..len).map(|i| (i as u64 * 7 + seed) as u8 | 1).collect()
}

/// A payload of `frames`, with the counts and STREAM frames the walk should find.
fn encode_frames(frames: &[F], dir: Dir) -> (Vec<u8>, [FrameCount; FRAME_KINDS], Vec<Visit>) {
    let mut out = Vec::new();
    let mut counts = [FrameCount::default(); FRAME_KINDS];
    let mut visits = Vec::new();
    let mut after_padding = false;
    for f in frames {
        if let F::Padding(n) = f {
            out.resize(out.len() + n, 0);
            let c = &mut counts[FrameKind::Padding as usize];
            c.bytes += *n as u64;
            c.count += u64::from(!after_padding);
            after_padding = true;
            continue;
        }
        let start = out.len();
        let kind = put_frame(f, &mut out, dir, &mut visits);
        let data_len = match f {
            F::Crypto { len, .. } | F::Stream { len, .. } | F::Datagram { len, .. } => *len,
            _ => 0,
        };
        counts[kind as usize].add_frame((out.len() - start) as u64, data_len as u64);
        after_padding = false;
    }
    (out, counts, visits)
}

/// Writes a frame other than padding; its kind.
fn put_frame(f: &F, out: &mut Vec<u8>, dir: Dir, visits: &mut Vec<Visit>) -> FrameKind {
    let v = |out: &mut Vec<u8>, x: u64| varint::encode(out, x);
    match f {
        F::Padding(_) => unreachable!("written by encode_frames"),
        F::Ping => {
            v(out, 1);
            FrameKind::Ping
        }
        F::Ack {
            largest,
            ranges,
            ecn,
        } => {
            v(out, if *ecn { 3 } else { 2 });
            v(out, *largest);
            v(out, 25);
            v(out, ranges.len() as u64);
            v(out, 0);
            for (gap, len) in ranges {
                v(out, *gap);
                v(out, *len);
            }
            if *ecn {
                for x in [1, 2, 3] {
                    v(out, x);
                }
            }
            FrameKind::Ack
        }
        F::ResetStream(id) => {
            for x in [4, *id, 0x10c, 1 << 20] {
                v(out, x);
            }
            FrameKind::ResetStream
        }
        F::Crypto { offset, len } => {
            for x in [6, *offset, *len as u64] {
                v(out, x);
            }
            out.extend(data(*len, *offset));
            FrameKind::Crypto
        }
        F::NewToken(len) => {
            v(out, 7);
            v(out, *len as u64);
            out.extend(data(*len, 1));
            FrameKind::NewToken
        }
        F::Stream {
            id,
            offset,
            len,
            fin,
            with_len,
        } => {
            let ty = 0x08
                | if *offset > 0 { 4 } else { 0 }
                | if *with_len { 2 } else { 0 }
                | u64::from(*fin);
            v(out, ty);
            v(out, *id);
            if *offset > 0 {
                v(out, *offset);
            }
            if *with_len {
                v(out, *len as u64);
            }
            let bytes = data(*len, *id);
            out.extend(&bytes);
            visits.push((dir, *id, *offset, bytes, *fin));
            FrameKind::Stream
        }
        F::MaxData(x) => {
            v(out, 0x10);
            v(out, *x);
            FrameKind::MaxData
        }
        F::MaxStreams(uni, x) => {
            v(out, 0x12 + u64::from(*uni));
            v(out, *x);
            FrameKind::MaxStreams
        }
        F::NewCid(len) => {
            for x in [0x18, 3, 1, u64::from(*len)] {
                v(out, x);
            }
            out.extend(data(usize::from(*len) + 16, 3));
            FrameKind::NewConnectionId
        }
        F::PathChallenge => {
            v(out, 0x1a);
            out.extend([9; 8]);
            FrameKind::PathChallenge
        }
        F::Close { app, reason } => {
            v(out, 0x1c + u64::from(*app));
            v(out, 0x0a);
            if !app {
                v(out, 0x08);
            }
            v(out, *reason as u64);
            out.extend(data(*reason, 5));
            FrameKind::ConnectionClose
        }
        F::HandshakeDone => {
            v(out, 0x1e);
            FrameKind::HandshakeDone
        }
        F::Datagram { len, with_len } => {
            v(out, 0x30 + u64::from(*with_len));
            if *with_len {
                v(out, *len as u64);
            }
            out.extend(data(*len, 2));
            FrameKind::Datagram
        }
        F::AckFrequency(seq) => {
            for x in [0xaf, *seq, 2, 25_000, 1] {
                v(out, x);
            }
            FrameKind::AckFrequency
        }
        F::ImmediateAck => {
            v(out, 0x1f);
            FrameKind::ImmediateAck
        }
        F::Unknown(n) => {
            v(out, 0x21);
            out.extend(data(*n, 4));
            FrameKind::Unknown
        }
    }
}

/// Packets built and protected, with what the sniffer should count of one direction.
struct Built {
    dir: Dir,
    counts: QuicCounts,
    visits: Vec<Visit>,
}

impl Built {
    fn new(dir: Dir) -> Built {
        Built {
            dir,
            counts: QuicCounts::default(),
            visits: Vec::new(),
        }
    }

    /// The payload of `frames`, behind enough padding to give a header protection sample.
    fn payload(&mut self, frames: &[F], pn_len: usize) -> Vec<u8> {
        let (mut payload, mut counts, mut visits) = encode_frames(frames, self.dir);
        if payload.len() + pn_len < 4 {
            let padded: Vec<F> = [F::Padding(4)].into_iter().chain(frames.to_vec()).collect();
            (payload, counts, visits) = encode_frames(&padded, self.dir);
        }
        for (a, b) in self.counts.frames.iter_mut().zip(counts) {
            a.count += b.count;
            a.bytes += b.bytes;
            a.data_bytes += b.data_bytes;
        }
        self.visits.append(&mut visits);
        payload
    }

    fn protect(
        &mut self,
        ty: PacketType,
        pn: u64,
        mut p: Vec<u8>,
        payload: &[u8],
        keys: &Keys,
    ) -> Vec<u8> {
        let header_len = p.len();
        p.extend_from_slice(payload);
        keys.protect(pn, header_len, &mut p).unwrap();
        self.counts.packets[ty as usize] += 1;
        self.counts.header_bytes += header_len as u64;
        self.counts.tag_bytes += TAG_LEN as u64;
        p
    }

    /// A long header packet (Initial, 0-RTT or Handshake).
    #[allow(clippy::too_many_arguments)]
    fn long(
        &mut self,
        ty: PacketType,
        dcid: &[u8],
        scid: &[u8],
        token: &[u8],
        pn: u64,
        pn_len: usize,
        frames: &[F],
        keys: &Keys,
    ) -> Vec<u8> {
        let payload = self.payload(frames, pn_len);
        let bits = match ty {
            PacketType::Initial => 0,
            PacketType::ZeroRtt => 1,
            PacketType::Handshake => 2,
            _ => panic!("not a protected long header type"),
        };
        let mut p = vec![0xc0 | bits << 4 | (pn_len - 1) as u8];
        p.extend(1u32.to_be_bytes());
        p.push(dcid.len() as u8);
        p.extend(dcid);
        p.push(scid.len() as u8);
        p.extend(scid);
        if ty == PacketType::Initial {
            varint::encode(&mut p, token.len() as u64);
            p.extend(token);
        }
        varint::encode(&mut p, (pn_len + payload.len() + TAG_LEN) as u64);
        p.extend(&pn.to_be_bytes()[8 - pn_len..]);
        self.protect(ty, pn, p, &payload, keys)
    }

    /// A short header (1-RTT) packet.
    fn short(
        &mut self,
        dcid: &[u8],
        pn: u64,
        pn_len: usize,
        phase: bool,
        frames: &[F],
        keys: &Keys,
    ) -> Vec<u8> {
        let payload = self.payload(frames, pn_len);
        let mut p = vec![0x40 | if phase { 0x04 } else { 0 } | (pn_len - 1) as u8];
        p.extend(dcid);
        p.extend(&pn.to_be_bytes()[8 - pn_len..]);
        self.protect(PacketType::OneRtt, pn, p, &payload, keys)
    }

    /// One datagram of `packets`.
    fn datagram(&mut self, packets: &[&[u8]]) -> Vec<u8> {
        let d = packets.concat();
        self.counts.datagrams += 1;
        self.counts.datagram_bytes += d.len() as u64;
        d
    }
}

fn frame() -> impl Strategy<Value = F> {
    prop_oneof![
        (1usize..40).prop_map(F::Padding),
        Just(F::Ping),
        (
            0..varint::MAX,
            proptest::collection::vec((0..varint::MAX, 0u64..1000), 0..4),
            any::<bool>()
        )
            .prop_map(|(largest, ranges, ecn)| F::Ack {
                largest,
                ranges,
                ecn
            }),
        (0..varint::MAX).prop_map(F::ResetStream),
        (0u64..1 << 20, 0usize..300).prop_map(|(offset, len)| F::Crypto { offset, len }),
        (0usize..100).prop_map(F::NewToken),
        (
            0..varint::MAX,
            prop_oneof![Just(0), 1..varint::MAX / 2],
            0usize..300,
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(|(id, offset, len, fin, with_len)| F::Stream {
                id,
                offset,
                len,
                fin,
                with_len
            }),
        (0..varint::MAX).prop_map(F::MaxData),
        (any::<bool>(), 0..varint::MAX).prop_map(|(uni, x)| F::MaxStreams(uni, x)),
        (1u8..=20).prop_map(F::NewCid),
        Just(F::PathChallenge),
        (any::<bool>(), 0usize..50).prop_map(|(app, reason)| F::Close { app, reason }),
        Just(F::HandshakeDone),
        (0usize..200, any::<bool>()).prop_map(|(len, with_len)| F::Datagram { len, with_len }),
        (0..varint::MAX).prop_map(F::AckFrequency),
        Just(F::ImmediateAck),
        (0usize..30).prop_map(F::Unknown),
    ]
}

/// Frames as a sender may put them: only the last may run to the payload's end, and an
/// unknown frame can only be seen last.
fn frames() -> impl Strategy<Value = Vec<F>> {
    proptest::collection::vec(frame(), 0..6).prop_map(|mut v| {
        let last = v.pop();
        v.retain(|f| !matches!(f, F::Unknown(_)));
        for f in &mut v {
            if let F::Stream { with_len, .. } | F::Datagram { with_len, .. } = f {
                *with_len = true;
            }
        }
        v.extend(last);
        v
    })
}

fn suite() -> impl Strategy<Value = Suite> {
    prop_oneof![
        Just(Suite::Aes128Gcm),
        Just(Suite::Aes256Gcm),
        Just(Suite::ChaCha20Poly1305)
    ]
}

const LABELS: [&str; 4] = [
    "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
    "SERVER_HANDSHAKE_TRAFFIC_SECRET",
    "CLIENT_TRAFFIC_SECRET_0",
    "SERVER_TRAFFIC_SECRET_0",
];

proptest! {
    /// A handshake's worth of packets (Initials, Handshakes coalesced, 1-RTT) of random frames,
    /// built and protected by the test encoder, are counted as built, suite named or not.
    #[test]
    fn built_packets_are_counted_as_built(
        suite in suite(),
        named in any::<bool>(),
        odcid in proptest::collection::vec(any::<u8>(), 8..=20),
        ccid in proptest::collection::vec(any::<u8>(), 0..=20),
        scid in proptest::collection::vec(any::<u8>(), 0..=20),
        seed in any::<u8>(),
        pn_lens in proptest::collection::vec(1usize..=4, 6),
        f in proptest::collection::vec(frames(), 6),
    ) {
        let mut s = Sniffer::new();
        if named {
            s.set_suite(suite);
        }
        let secret = |i: usize| Secret::new(&vec![seed ^ i as u8; suite.secret_len()]).unwrap();
        for (i, label) in LABELS.iter().enumerate() {
            s.secret(label, secret(i).as_bytes()).unwrap();
        }
        let keys = |i| Keys::new(suite, &secret(i));
        let (ci, si) = keys::initial_secrets(&odcid);
        let (ci, si) = (Keys::new(Suite::Aes128Gcm, &ci), Keys::new(Suite::Aes128Gcm, &si));
        let (mut out, mut inn) = (Built::new(Dir::Out), Built::new(Dir::In));
        let mut seen = Streams::default();

        let p = out.long(PacketType::Initial, &odcid, &ccid, &[], 0, pn_lens[0], &f[0], &ci);
        s.datagram_with(Dir::Out, &out.datagram(&[&p]), &mut seen);
        let p1 = inn.long(PacketType::Initial, &ccid, &scid, &[], 0, pn_lens[1], &f[1], &si);
        let p2 = inn.long(PacketType::Handshake, &ccid, &scid, &[], 0, pn_lens[2], &f[2], &keys(1));
        s.datagram_with(Dir::In, &inn.datagram(&[&p1, &p2]), &mut seen);
        let p1 = out.long(PacketType::Handshake, &scid, &ccid, &[], 0, pn_lens[3], &f[3], &keys(0));
        let p2 = out.short(&scid, 0, pn_lens[4], false, &f[4], &keys(2));
        s.datagram_with(Dir::Out, &out.datagram(&[&p1, &p2]), &mut seen);
        let p = inn.short(&ccid, 0, pn_lens[5], false, &f[5], &keys(3));
        s.datagram_with(Dir::In, &inn.datagram(&[&p]), &mut seen);

        prop_assert_eq!(s.counts(Dir::Out), &out.counts);
        prop_assert_eq!(s.counts(Dir::In), &inn.counts);
        for built in [&out, &inn] {
            prop_assert_eq!(built.counts.total(), built.counts.datagram_bytes);
            let seen: Vec<_> = seen.0.iter().filter(|v| v.0 == built.dir).cloned().collect();
            prop_assert_eq!(&seen, &built.visits);
        }
        let learnt = named || suite != Suite::Aes256Gcm;
        prop_assert_eq!(s.suite(), learnt.then_some(suite));
    }

    /// Arbitrary datagrams after a valid client Initial, with secrets installed: the fuzz
    /// check's invariants (no panic, sums add up) where keys are there to try.
    #[test]
    fn arbitrary_datagrams_add_up(mut data in proptest::collection::vec(any::<u8>(), 1..600)) {
        data[0] |= 0x09;
        crate::fuzzing::quic_sniff(&data);
    }
}

/// Keys of a 1-RTT secret's generation `n`: the first generation's header protection, the
/// n-th's packet key.
fn generation(suite: Suite, secret: &Secret, n: usize) -> Keys {
    let mut keys = Keys::new(suite, secret);
    let mut s = *secret;
    for _ in 0..n {
        s = s.next();
    }
    keys.packet = PacketKey::new(suite, &s);
    keys
}

/// Key updates: a phase flip brings the next generation in, a late packet of the phase
/// before opens with the previous keys, and a third generation drops the first.
#[test]
fn key_updates_and_late_packets() {
    for suite in [Suite::Aes128Gcm, Suite::Aes256Gcm, Suite::ChaCha20Poly1305] {
        let secret = Secret::new(&vec![3; suite.secret_len()]).unwrap();
        let mut s = Sniffer::new();
        s.set_suite(suite);
        s.set_short_dcid_len(Dir::Out, 4);
        s.secret("CLIENT_TRAFFIC_SECRET_0", secret.as_bytes())
            .unwrap();
        let mut b = Built::new(Dir::Out);
        let dcid = [1, 2, 3, 4];
        for (pn, generation_n, phase) in [
            (0, 0, false),
            (2, 1, true),
            (1, 0, false),
            (3, 1, true),
            (4, 2, false),
        ] {
            let keys = generation(suite, &secret, generation_n);
            let p = b.short(&dcid, pn, 2, phase, &[F::Ping, F::Padding(3)], &keys);
            s.datagram(Dir::Out, &b.datagram(&[&p]));
        }
        b.counts.key_updates = 2;
        assert_eq!(s.counts(Dir::Out), &b.counts, "{suite:?}");

        // the first generation with the current phase no longer authenticates
        let stale = Built::new(Dir::Out).short(
            &dcid,
            5,
            2,
            false,
            &[F::Ping],
            &generation(suite, &secret, 0),
        );
        s.datagram(Dir::Out, &stale);
        let c = s.counts(Dir::Out);
        assert_eq!(
            c.undecryptable(ErrorKind::Auth),
            PacketBytes {
                packets: 1,
                bytes: stale.len() as u64
            }
        );
        assert_eq!(c.total(), c.datagram_bytes);
    }
}

/// A 32-byte secret is AES-128-GCM or ChaCha20-Poly1305: the first packet tells, and the
/// levels installed later take that suite alone.
#[test]
fn the_suite_of_32_byte_secrets_is_learnt() {
    for suite in [Suite::Aes128Gcm, Suite::ChaCha20Poly1305] {
        let secret = Secret::new(&[9; 32]).unwrap();
        let mut s = Sniffer::new();
        s.set_short_dcid_len(Dir::In, 0);
        s.secret("SERVER_TRAFFIC_SECRET_0", secret.as_bytes())
            .unwrap();
        assert_eq!(s.suite(), None);
        let mut b = Built::new(Dir::In);
        let p = b.short(
            &[],
            0,
            1,
            false,
            &[F::HandshakeDone],
            &Keys::new(suite, &secret),
        );
        s.datagram(Dir::In, &b.datagram(&[&p]));
        assert_eq!(s.suite(), Some(suite));
        assert_eq!(s.counts(Dir::In), &b.counts);
        // a 48-byte secret no longer fits
        assert_eq!(
            s.secret("CLIENT_TRAFFIC_SECRET_0", &[1; 48])
                .unwrap_err()
                .kind,
            ErrorKind::Malformed
        );
        // under the other suite's keys, a packet does not authenticate
        let other = if suite == Suite::Aes128Gcm {
            Suite::ChaCha20Poly1305
        } else {
            Suite::Aes128Gcm
        };
        let p = Built::new(Dir::In).short(&[], 1, 1, false, &[F::Ping], &Keys::new(other, &secret));
        s.datagram(Dir::In, &p);
        assert_eq!(s.counts(Dir::In).undecryptable(ErrorKind::Auth).packets, 1);
    }
    // 48 bytes: AES-256-GCM, at once
    let mut s = Sniffer::new();
    s.secret("CLIENT_HANDSHAKE_TRAFFIC_SECRET", &[5; 48])
        .unwrap();
    assert!(
        s.secret("CLIENT_HANDSHAKE_TRAFFIC_SECRET", &[5; 40])
            .is_err()
    );
    assert_eq!(s.secret("SOMETHING_ELSE", &[5; 3]), Ok(()));
}

/// Packets before their keys, coalesced packets, and bytes after the last packet.
#[test]
fn coalesced_packets_and_missing_keys() {
    let odcid = [0x11; 8];
    let (ci, si) = keys::initial_secrets(&odcid);
    let (ci, si) = (
        Keys::new(Suite::Aes128Gcm, &ci),
        Keys::new(Suite::Aes128Gcm, &si),
    );
    let hs = Secret::new(&[4; 32]).unwrap();
    let mut s = Sniffer::new();
    s.set_suite(Suite::Aes128Gcm);

    // a server Initial before the client's: no initial keys yet
    let mut inn = Built::new(Dir::In);
    let early = inn.long(
        PacketType::Initial,
        &[1; 4],
        &[2; 6],
        &[],
        0,
        1,
        &[F::Ping],
        &si,
    );
    s.datagram(Dir::In, &early);
    assert_eq!(
        s.counts(Dir::In).undecryptable(ErrorKind::NoKeys).bytes,
        early.len() as u64
    );

    let mut out = Built::new(Dir::Out);
    let p = out.long(
        PacketType::Initial,
        &odcid,
        &[1; 4],
        b"tok",
        0,
        4,
        &[
            F::Crypto {
                offset: 0,
                len: 100,
            },
            F::Padding(1000),
        ],
        &ci,
    );
    s.datagram(Dir::Out, &out.datagram(&[&p]));
    assert_eq!(s.counts(Dir::Out), &out.counts);

    // Initial, Handshake (before its secret), 1-RTT (before its secret), in one datagram
    let mut inn = Built::new(Dir::In);
    let p1 = inn.long(
        PacketType::Initial,
        &[1; 4],
        &[2; 6],
        &[],
        1,
        2,
        &[
            F::Ack {
                largest: 0,
                ranges: vec![],
                ecn: false,
            },
            F::Crypto { offset: 0, len: 90 },
        ],
        &si,
    );
    let mut lost = Built::new(Dir::In);
    let p2 = lost.long(
        PacketType::Handshake,
        &[1; 4],
        &[2; 6],
        &[],
        0,
        2,
        &[F::Crypto {
            offset: 0,
            len: 700,
        }],
        &Keys::new(Suite::Aes128Gcm, &hs),
    );
    let p3 = lost.short(
        &[1; 4],
        0,
        2,
        false,
        &[F::Ping],
        &Keys::new(Suite::Aes128Gcm, &hs),
    );
    let before = *s.counts(Dir::In);
    s.datagram(Dir::In, &[&p1[..], &p2, &p3].concat());
    let c = s.counts(Dir::In);
    assert_eq!(
        c.header_bytes - before.header_bytes,
        inn.counts.header_bytes
    );
    assert_eq!(
        c.frame(FrameKind::Crypto),
        inn.counts.frame(FrameKind::Crypto)
    );
    assert_eq!(c.packets(PacketType::Handshake), 1);
    assert_eq!(c.packets(PacketType::OneRtt), 1);
    let no_keys = c.undecryptable(ErrorKind::NoKeys);
    assert_eq!(no_keys.packets, 3);
    assert_eq!(no_keys.bytes, (early.len() + p2.len() + p3.len()) as u64);
    assert_eq!(c.total(), c.datagram_bytes);

    // with the secret, the Handshake packet opens; then bytes that are no packet after it
    s.secret("SERVER_HANDSHAKE_TRAFFIC_SECRET", hs.as_bytes())
        .unwrap();
    let junk = [0xe0, 0, 0, 0, 1, 0, 0, 0x44];
    s.datagram(Dir::In, &[&p2[..], &junk].concat());
    let c = s.counts(Dir::In);
    assert_eq!(c.frame(FrameKind::Crypto).data_bytes, 790);
    assert_eq!(
        c.undecryptable(ErrorKind::Malformed),
        PacketBytes {
            packets: 1,
            bytes: 8
        }
    );
    assert_eq!(c.total(), c.datagram_bytes);
    // the server's SCID is the length of the client's short headers' DCID
    let mut out = Built::new(Dir::Out);
    s.secret("CLIENT_TRAFFIC_SECRET_0", &[6; 32]).unwrap();
    let p = out.short(
        &[2; 6],
        0,
        1,
        false,
        &[F::MaxData(1 << 20)],
        &Keys::new(Suite::Aes128Gcm, &Secret::new(&[6; 32]).unwrap()),
    );
    s.datagram(Dir::Out, &p);
    assert_eq!(s.counts(Dir::Out).frame(FrameKind::MaxData).count, 1);
}

/// Garbage in either direction, with keys and without: nothing panics, the sums add up.
#[test]
fn garbage_is_counted_not_fatal() {
    let inputs: [&[u8]; 8] = [
        &[],
        &[0],
        &[0xff; 3],
        &[0xc0, 0, 0, 0, 1, 21],
        &[
            0xc0, 0, 0, 0, 1, 0, 0, 0, 0xbf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        ],
        &[0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
        &[0xf0, 0, 0, 0, 1, 0, 0],
        &[0x40; 60],
    ];
    for with_keys in [false, true] {
        let mut s = Sniffer::new();
        if with_keys {
            s.set_short_dcid_len(Dir::Out, 0);
            s.set_short_dcid_len(Dir::In, 20);
            for label in LABELS {
                s.secret(label, &[1; 32]).unwrap();
            }
        }
        for input in inputs {
            for dir in Dir::BOTH {
                s.datagram(dir, input);
                let c = s.counts(dir);
                assert_eq!(c.total(), c.datagram_bytes, "{input:02x?}");
                assert_eq!(
                    c.header_bytes + c.tag_bytes + c.payload_bytes(),
                    11 * c.packets(PacketType::VersionNegotiation)
                );
            }
        }
    }
}
