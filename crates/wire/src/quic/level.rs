//! The keys of one encryption level in one direction: the candidate suites until a packet
//! authenticates (32-byte secrets: AES-128-GCM, then ChaCha20-Poly1305), and at 1-RTT the key
//! phase with the previous and next key generations (RFC 9001 §6).

use std::mem;

use super::Error;
use super::header::{SAMPLE_LEN, decode_pn};
use super::keys::{Keys, PacketKey, Secret, Suite, key_phase, sample_at, unmask};

/// A packet decrypted in the caller's scratch buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Opened {
    /// Header bytes, the packet number included.
    pub header_len: usize,
    /// The full packet number.
    pub pn: u64,
    /// Plaintext bytes, after the header.
    pub payload_len: usize,
    /// The suite whose keys opened it.
    pub suite: Suite,
    /// Whether this packet settled a guess between suites.
    pub settled: bool,
    /// Whether it carried a key update.
    pub updated: bool,
}

/// One suite's keys: header protection and the current packet key, and the previous
/// generation's packet key after a key update.
struct Candidate {
    keys: Keys,
    prev: Option<PacketKey>,
}

/// The keys of a level: one candidate, or two while the suite is a guess.
pub(super) struct Level {
    cands: Vec<Candidate>,
    /// The current generation's secret, which the next generation's comes from.
    secret: Secret,
    /// The current key phase (1-RTT).
    phase: bool,
    /// The packet number that brought the current generation in (1-RTT).
    first_pn: u64,
}

impl Level {
    /// The keys `secret` gives under each of `suites`, tried in that order.
    pub fn new(secret: Secret, suites: &[Suite]) -> Level {
        Level {
            cands: suites
                .iter()
                .map(|&s| Candidate {
                    keys: Keys::new(s, &secret),
                    prev: None,
                })
                .collect(),
            secret,
            phase: false,
            first_pn: 0,
        }
    }

    /// Drops the candidates of other suites than `suite`, unless none is of it.
    pub fn settle(&mut self, suite: Suite) {
        if self.cands.len() > 1 && self.cands.iter().any(|c| c.keys.suite() == suite) {
            self.cands.retain(|c| c.keys.suite() == suite);
        }
    }

    /// Copies `packet` (its packet number at `pn_offset`) into `scratch`, removes header
    /// protection there and decrypts it; `largest` is the largest packet number received in
    /// its space. Tries each candidate suite, and for a 1-RTT packet whose key phase differs
    /// from the current one, the next generation's key or the previous one.
    pub fn open(
        &mut self,
        packet: &[u8],
        pn_offset: usize,
        largest: Option<u64>,
        scratch: &mut Vec<u8>,
    ) -> Result<Opened, Error> {
        let sample: [u8; SAMPLE_LEN] = sample_at(packet, pn_offset).ok_or(Error::malformed(
            "packet too short for a header protection sample",
        ))?;
        let long = packet[0] & 0x80 != 0;
        for i in 0..self.cands.len() {
            scratch.clear();
            scratch.extend_from_slice(packet);
            let mask = self.cands[i].keys.mask(&sample);
            let (pn_len, truncated) = unmask(scratch, pn_offset, mask);
            let header_len = pn_offset + pn_len;
            let pn = decode_pn(largest, truncated, pn_len);
            let opened = if long || key_phase(scratch[0]) == self.phase {
                self.cands[i]
                    .keys
                    .packet
                    .open(pn, header_len, scratch)
                    .map(|n| (n, false))
            } else {
                self.open_flipped(i, pn, header_len, packet, scratch)
            };
            if let Ok((payload_len, updated)) = opened {
                let settled = self.cands.len() > 1;
                if settled {
                    self.cands.swap(0, i);
                    self.cands.truncate(1);
                }
                return Ok(Opened {
                    header_len,
                    pn,
                    payload_len,
                    suite: self.cands[0].keys.suite(),
                    settled,
                    updated,
                });
            }
        }
        Err(Error::auth("packet failed to authenticate"))
    }

    /// A 1-RTT packet of the other key phase: a packet from before the last update (if its
    /// number is below the one that brought the update) or the peer's next update; the other
    /// is tried if the first fails. The next generation replaces the current one once a
    /// packet authenticates with it.
    fn open_flipped(
        &mut self,
        i: usize,
        pn: u64,
        header_len: usize,
        packet: &[u8],
        scratch: &mut [u8],
    ) -> Result<(usize, bool), Error> {
        let prev_first = self.cands[i].prev.is_some() && pn < self.first_pn;
        for use_prev in [prev_first, !prev_first] {
            // a failed attempt leaves the buffer unspecified: start from the ciphertext again
            scratch[header_len..].copy_from_slice(&packet[header_len..]);
            if use_prev {
                if let Some(prev) = &self.cands[i].prev
                    && let Ok(n) = prev.open(pn, header_len, scratch)
                {
                    return Ok((n, false));
                }
                continue;
            }
            let next_secret = self.secret.next();
            let cand = &mut self.cands[i];
            let next = PacketKey::new(cand.keys.suite(), &next_secret);
            if let Ok(n) = next.open(pn, header_len, scratch) {
                cand.prev = Some(mem::replace(&mut cand.keys.packet, next));
                self.secret = next_secret;
                self.phase = !self.phase;
                self.first_pn = pn;
                return Ok((n, true));
            }
        }
        Err(Error::auth(
            "packet of the other key phase failed to authenticate",
        ))
    }
}
