//! The sniffer of one connection, the client's view: datagrams of both directions and the TLS
//! secrets in, [`QuicCounts`] per direction out.

use super::counts::QuicCounts;
use super::frames::{self, StreamVisitor};
use super::header::{self, Layout, MAX_CID_LEN, PacketType, TAG_LEN};
use super::keys::{self, Secret, Suite};
use super::level::Level;
use super::{Dir, Error, ErrorKind};

/// The encryption levels, the index of [`DirState::levels`].
const INITIAL: usize = 0;
const ZERO_RTT: usize = 1;
const HANDSHAKE: usize = 2;
const ONE_RTT: usize = 3;

/// What the sniffer keeps of one direction.
#[derive(Default)]
struct DirState {
    counts: QuicCounts,
    /// The Destination Connection ID length of this direction's short headers.
    short_dcid_len: Option<usize>,
    /// The largest packet number decrypted per space (Initial, Handshake, application).
    largest: [Option<u64>; 3],
    /// Keys per level: Initial, 0-RTT, Handshake, 1-RTT.
    levels: [Option<Level>; 4],
}

/// A QUIC v1 connection's packets decrypted and counted; see the [module](super) doc.
pub struct Sniffer {
    dirs: [DirState; 2],
    /// The suite, named by the caller or learnt from a packet.
    suite: Option<Suite>,
    /// The Destination Connection ID the initial keys came from.
    original_dcid: [u8; MAX_CID_LEN],
    original_dcid_len: usize,
    /// A Retry came: the client's next Initial brings new initial keys.
    retried: bool,
    /// Each packet is copied here, unprotected and decrypted.
    scratch: Vec<u8>,
}

impl Default for Sniffer {
    fn default() -> Sniffer {
        Sniffer::new()
    }
}

impl Sniffer {
    /// A sniffer that has seen nothing.
    pub fn new() -> Sniffer {
        Sniffer {
            dirs: Default::default(),
            suite: None,
            original_dcid: [0; MAX_CID_LEN],
            original_dcid_len: 0,
            retried: false,
            scratch: Vec::with_capacity(2048),
        }
    }

    /// Names the cipher suite. Secrets given afterwards are taken as its; levels whose suite
    /// is still a guess keep only its keys.
    pub fn set_suite(&mut self, suite: Suite) {
        self.suite = Some(suite);
        self.settle(suite);
    }

    /// The suite, named or learnt from the first packet that authenticated with a guess.
    pub fn suite(&self) -> Option<Suite> {
        self.suite
    }

    /// Installs a TLS secret under its KeyLog label: `CLIENT_EARLY_TRAFFIC_SECRET`,
    /// `CLIENT_HANDSHAKE_TRAFFIC_SECRET`, `SERVER_HANDSHAKE_TRAFFIC_SECRET`,
    /// `CLIENT_TRAFFIC_SECRET_0` or `SERVER_TRAFFIC_SECRET_0`. Other labels are ignored.
    /// Errors (and installs nothing) if the secret's length is not a suite's, or not the
    /// named suite's.
    pub fn secret(&mut self, label: &str, secret: &[u8]) -> Result<(), Error> {
        let (dir, level) = match label {
            "CLIENT_EARLY_TRAFFIC_SECRET" => (Dir::Out, ZERO_RTT),
            "CLIENT_HANDSHAKE_TRAFFIC_SECRET" => (Dir::Out, HANDSHAKE),
            "SERVER_HANDSHAKE_TRAFFIC_SECRET" => (Dir::In, HANDSHAKE),
            "CLIENT_TRAFFIC_SECRET_0" => (Dir::Out, ONE_RTT),
            "SERVER_TRAFFIC_SECRET_0" => (Dir::In, ONE_RTT),
            _ => return Ok(()),
        };
        let secret = Secret::new(secret)?;
        let len = secret.as_bytes().len();
        let suites: &[Suite] = match self.suite {
            Some(s) if s.secret_len() == len => &[s],
            Some(_) => return Err(Error::malformed("secret length is not the suite's")),
            None if len == 48 => &[Suite::Aes256Gcm],
            None => &[Suite::Aes128Gcm, Suite::ChaCha20Poly1305],
        };
        self.dirs[dir as usize].levels[level] = Some(Level::new(secret, suites));
        Ok(())
    }

    /// Sets the Destination Connection ID length of direction `dir`'s short headers, for a
    /// caller that knows it (e.g. from its endpoint's configuration); long headers that are
    /// decrypted later set it again.
    pub fn set_short_dcid_len(&mut self, dir: Dir, len: usize) {
        self.dirs[dir as usize].short_dcid_len = Some(len.min(MAX_CID_LEN));
    }

    /// The counts of direction `dir` so far.
    pub fn counts(&self, dir: Dir) -> &QuicCounts {
        &self.dirs[dir as usize].counts
    }

    /// Sniffs one UDP payload of direction `dir`.
    pub fn datagram(&mut self, dir: Dir, bytes: &[u8]) {
        self.datagram_with(dir, bytes, &mut ());
    }

    /// Sniffs one UDP payload of direction `dir`, handing the STREAM frames of its decrypted
    /// packets to `visitor`.
    pub fn datagram_with(&mut self, dir: Dir, bytes: &[u8], visitor: &mut impl StreamVisitor) {
        let counts = &mut self.dirs[dir as usize].counts;
        counts.datagrams += 1;
        counts.datagram_bytes += bytes.len() as u64;
        let mut at = 0;
        while at < bytes.len() {
            at += self.packet(dir, &bytes[at..], visitor);
        }
    }

    /// Sniffs the packet that starts `rest`; the bytes it took (at least one).
    fn packet(&mut self, dir: Dir, rest: &[u8], visitor: &mut impl StreamVisitor) -> usize {
        let d = dir as usize;
        let layout = match header::parse(rest, self.dirs[d].short_dcid_len) {
            Ok(layout) => layout,
            Err(e) => {
                let counts = &mut self.dirs[d].counts;
                if rest[0] & 0x80 == 0 {
                    counts.packets[PacketType::OneRtt as usize] += 1;
                }
                counts.add_undecryptable(e.kind, rest.len());
                return rest.len();
            }
        };
        let packet = &rest[..layout.len];
        self.dirs[d].counts.packets[layout.ty as usize] += 1;
        match layout.ty {
            PacketType::VersionNegotiation => {
                self.dirs[d].counts.header_bytes += packet.len() as u64;
            }
            PacketType::Retry => self.retry(dir, &layout, packet),
            _ => {
                if let Err(e) = self.protected(dir, &layout, packet, visitor) {
                    self.dirs[d].counts.add_undecryptable(e.kind, packet.len());
                }
            }
        }
        layout.len
    }

    /// A Retry: counted as header and integrity tag if its tag is valid (the client's next
    /// Initial then brings new initial keys), else as undecryptable.
    fn retry(&mut self, dir: Dir, layout: &Layout<'_>, packet: &[u8]) {
        let odcid = &self.original_dcid[..self.original_dcid_len];
        let valid = dir == Dir::In
            && self.dirs[Dir::Out as usize].levels[INITIAL].is_some()
            && keys::retry_tag_valid(odcid, packet, &mut self.scratch);
        let counts = &mut self.dirs[dir as usize].counts;
        if !valid {
            counts.add_undecryptable(ErrorKind::Auth, packet.len());
            return;
        }
        counts.header_bytes += layout.pn_offset as u64;
        counts.tag_bytes += TAG_LEN as u64;
        self.retried = true;
        self.dirs[Dir::Out as usize].short_dcid_len = Some(layout.scid.len());
    }

    /// A protected packet decrypted and its frames counted.
    fn protected(
        &mut self,
        dir: Dir,
        layout: &Layout<'_>,
        packet: &[u8],
        visitor: &mut impl StreamVisitor,
    ) -> Result<(), Error> {
        if layout.ty == PacketType::Initial && dir == Dir::Out {
            self.initial_keys(layout.dcid);
        }
        let level = match layout.ty {
            PacketType::Initial => INITIAL,
            PacketType::ZeroRtt => ZERO_RTT,
            PacketType::Handshake => HANDSHAKE,
            _ => ONE_RTT,
        };
        let space = layout.ty.space();
        let st = &mut self.dirs[dir as usize];
        let keys = st.levels[level]
            .as_mut()
            .ok_or(Error::no_keys("no keys for the packet's level yet"))?;
        let opened = keys.open(
            packet,
            layout.pn_offset,
            st.largest[space],
            &mut self.scratch,
        )?;

        st.largest[space] = Some(st.largest[space].map_or(opened.pn, |l| l.max(opened.pn)));
        let counts = &mut st.counts;
        counts.header_bytes += opened.header_len as u64;
        counts.tag_bytes += TAG_LEN as u64;
        counts.key_updates += u64::from(opened.updated);
        let payload = &self.scratch[opened.header_len..opened.header_len + opened.payload_len];
        frames::walk(payload, &mut counts.frames, dir, layout.ty, visitor);

        if layout.ty != PacketType::OneRtt {
            // the client's Source Connection ID is the server's destination, and the reverse
            let peer = match dir {
                Dir::Out => Dir::In,
                Dir::In => Dir::Out,
            };
            self.dirs[peer as usize].short_dcid_len = Some(layout.scid.len());
        }
        if opened.settled && self.suite.is_none() {
            self.suite = Some(opened.suite);
            self.settle(opened.suite);
        }
        Ok(())
    }

    /// The initial keys from the client's first Initial, or its first after a Retry.
    fn initial_keys(&mut self, dcid: &[u8]) {
        if self.dirs[Dir::Out as usize].levels[INITIAL].is_some() && !self.retried {
            return;
        }
        self.retried = false;
        self.original_dcid[..dcid.len()].copy_from_slice(dcid);
        self.original_dcid_len = dcid.len();
        let (client, server) = keys::initial_secrets(dcid);
        self.dirs[Dir::Out as usize].levels[INITIAL] =
            Some(Level::new(client, &[Suite::Aes128Gcm]));
        self.dirs[Dir::In as usize].levels[INITIAL] = Some(Level::new(server, &[Suite::Aes128Gcm]));
    }

    /// Every level that still guesses its suite keeps `suite`'s keys.
    fn settle(&mut self, suite: Suite) {
        for st in &mut self.dirs {
            for level in st.levels.iter_mut().flatten() {
                level.settle(suite);
            }
        }
    }
}
