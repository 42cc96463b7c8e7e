//! QUIC packet protection keys (RFC 9001 §5): initial secrets, HKDF-Expand-Label, header
//! protection masks, AEAD packet protection, key update secrets (§6) and the Retry integrity
//! tag (§5.8), on `ring`.

use std::fmt;

use ring::aead::quic::{self as hp_alg, HeaderProtectionKey};
use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::hkdf;

use super::Error;
use super::header::{KEY_PHASE, SAMPLE_LEN, TAG_LEN};

/// QUIC v1's initial salt (RFC 9001 §5.2).
pub const INITIAL_SALT: [u8; 20] = [
    0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad,
    0xcc, 0xbb, 0x7f, 0x0a,
];

/// The Retry integrity tag's fixed key and nonce (RFC 9001 §5.8).
const RETRY_KEY: [u8; 16] = [
    0xbe, 0x0c, 0x69, 0x0b, 0x9f, 0x66, 0x57, 0x5a, 0x1d, 0x76, 0x6b, 0x54, 0xe3, 0x68, 0xc8, 0x4e,
];
const RETRY_NONCE: [u8; 12] = [
    0x46, 0x15, 0x99, 0xd3, 0x5d, 0x63, 0x2b, 0xf2, 0x23, 0x98, 0x25, 0xbb,
];

/// A TLS 1.3 cipher suite, as QUIC uses it (RFC 9001 §5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Suite {
    /// TLS_AES_128_GCM_SHA256: also the initial packets' suite.
    Aes128Gcm,
    /// TLS_AES_256_GCM_SHA384.
    Aes256Gcm,
    /// TLS_CHACHA20_POLY1305_SHA256.
    ChaCha20Poly1305,
}

impl Suite {
    /// The length of its traffic secrets: its hash's output.
    pub fn secret_len(self) -> usize {
        match self {
            Suite::Aes256Gcm => 48,
            Suite::Aes128Gcm | Suite::ChaCha20Poly1305 => 32,
        }
    }

    /// The suite's TLS name.
    pub fn name(self) -> &'static str {
        match self {
            Suite::Aes128Gcm => "TLS_AES_128_GCM_SHA256",
            Suite::Aes256Gcm => "TLS_AES_256_GCM_SHA384",
            Suite::ChaCha20Poly1305 => "TLS_CHACHA20_POLY1305_SHA256",
        }
    }

    fn aead(self) -> &'static aead::Algorithm {
        match self {
            Suite::Aes128Gcm => &aead::AES_128_GCM,
            Suite::Aes256Gcm => &aead::AES_256_GCM,
            Suite::ChaCha20Poly1305 => &aead::CHACHA20_POLY1305,
        }
    }

    fn hp(self) -> &'static hp_alg::Algorithm {
        match self {
            Suite::Aes128Gcm => &hp_alg::AES_128,
            Suite::Aes256Gcm => &hp_alg::AES_256,
            Suite::ChaCha20Poly1305 => &hp_alg::CHACHA20,
        }
    }

    /// The key, IV and header protection key `secret` gives under this suite.
    pub fn material(self, secret: &Secret) -> Material {
        let key_len = self.aead().key_len();
        let mut m = Material {
            key: [0; 32],
            key_len,
            iv: [0; 12],
            hp: [0; 32],
        };
        secret.expand(b"quic key", &mut m.key[..key_len]);
        secret.expand(b"quic iv", &mut m.iv);
        secret.expand(b"quic hp", &mut m.hp[..key_len]);
        m
    }
}

/// The bytes a secret expands to (RFC 9001 §5.1); `key` and `hp` hold `key_len` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Material {
    /// The AEAD key, `key_len` bytes used.
    pub key: [u8; 32],
    /// 16 or 32.
    pub key_len: usize,
    /// The AEAD IV.
    pub iv: [u8; 12],
    /// The header protection key, `key_len` bytes used.
    pub hp: [u8; 32],
}

/// A TLS 1.3 traffic secret: 32 bytes (SHA-256 suites) or 48 (SHA-384).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Secret {
    bytes: [u8; 48],
    len: usize,
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({} bytes)", self.len)
    }
}

/// An HKDF output length.
struct Len(usize);

impl hkdf::KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

/// HKDF-Expand-Label (RFC 8446 §7.1) with an empty context, filling `out`.
fn expand_label(prk: &hkdf::Prk, label: &[u8], out: &mut [u8]) {
    let len = (out.len() as u16).to_be_bytes();
    let label_len = [(6 + label.len()) as u8];
    let info: [&[u8]; 5] = [&len, &label_len, b"tls13 ", label, &[0]];
    // Local invariant: the outputs asked for here (at most 48 bytes) are far below HKDF's
    // limit of 255 hash lengths, the only way expand or fill can fail.
    prk.expand(&info, Len(out.len()))
        .and_then(|okm| okm.fill(out))
        .expect("HKDF output within its limit");
}

impl Secret {
    /// A secret of 32 or 48 bytes.
    pub fn new(bytes: &[u8]) -> Result<Secret, Error> {
        if bytes.len() != 32 && bytes.len() != 48 {
            return Err(Error::malformed("a traffic secret is 32 or 48 bytes"));
        }
        let mut s = Secret {
            bytes: [0; 48],
            len: bytes.len(),
        };
        s.bytes[..bytes.len()].copy_from_slice(bytes);
        Ok(s)
    }

    /// The secret's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// HKDF-Expand-Label of the secret with its suite's hash (the one of its length).
    pub fn expand(&self, label: &[u8], out: &mut [u8]) {
        let alg = if self.len == 48 {
            hkdf::HKDF_SHA384
        } else {
            hkdf::HKDF_SHA256
        };
        expand_label(&hkdf::Prk::new_less_safe(alg, self.as_bytes()), label, out);
    }

    /// The next generation's secret after a key update (RFC 9001 §6.1: "quic ku").
    pub fn next(&self) -> Secret {
        let mut next = Secret {
            bytes: [0; 48],
            len: self.len,
        };
        self.expand(b"quic ku", &mut next.bytes[..self.len]);
        next
    }
}

/// The client's and the server's initial secrets from the client's first Destination
/// Connection ID (RFC 9001 §5.2).
pub fn initial_secrets(dcid: &[u8]) -> (Secret, Secret) {
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, &INITIAL_SALT).extract(dcid);
    let mut client = Secret {
        bytes: [0; 48],
        len: 32,
    };
    let mut server = client;
    expand_label(&prk, b"client in", &mut client.bytes[..32]);
    expand_label(&prk, b"server in", &mut server.bytes[..32]);
    (client, server)
}

/// Packet protection of one key generation: the AEAD key and the IV.
pub struct PacketKey {
    aead: LessSafeKey,
    iv: [u8; 12],
}

impl PacketKey {
    /// The packet key `secret` gives under `suite`.
    pub fn new(suite: Suite, secret: &Secret) -> PacketKey {
        PacketKey::from_material(suite, &suite.material(secret))
    }

    fn from_material(suite: Suite, m: &Material) -> PacketKey {
        // Local invariant: `Material` holds exactly the suite's key length.
        let key = UnboundKey::new(suite.aead(), &m.key[..m.key_len]).expect("key length");
        PacketKey {
            aead: LessSafeKey::new(key),
            iv: m.iv,
        }
    }

    /// The nonce of packet number `pn`: the IV xored with it (RFC 9001 §5.3).
    fn nonce(&self, pn: u64) -> Nonce {
        let mut n = self.iv;
        for (b, p) in n[4..].iter_mut().zip(pn.to_be_bytes()) {
            *b ^= p;
        }
        Nonce::assume_unique_for_key(n)
    }

    /// Decrypts `packet` in place, its first `header_len` bytes (header protection removed)
    /// the associated data and the rest ciphertext then tag; the plaintext's length.
    pub fn open(&self, pn: u64, header_len: usize, packet: &mut [u8]) -> Result<usize, Error> {
        if packet.len() < header_len + TAG_LEN {
            return Err(Error::malformed("packet shorter than its AEAD tag"));
        }
        let (header, body) = packet.split_at_mut(header_len);
        self.aead
            .open_in_place(self.nonce(pn), Aad::from(&*header), body)
            .map(|plain| plain.len())
            .map_err(|_| Error::auth("packet failed to authenticate"))
    }

    /// Encrypts the bytes of `packet` after `header_len` in place and appends the tag.
    pub fn seal(&self, pn: u64, header_len: usize, packet: &mut Vec<u8>) {
        let (header, body) = packet.split_at_mut(header_len);
        // Local invariant: ring refuses only payloads beyond GCM's 64 GiB, not datagrams.
        let tag = self
            .aead
            .seal_in_place_separate_tag(self.nonce(pn), Aad::from(&*header), body)
            .expect("payload within the AEAD's limit");
        packet.extend_from_slice(tag.as_ref());
    }
}

/// Header and packet protection of one encryption level in one direction under one suite.
pub struct Keys {
    suite: Suite,
    hp: HeaderProtectionKey,
    /// The current generation's packet key.
    pub packet: PacketKey,
}

impl Keys {
    /// The keys `secret` gives under `suite`.
    pub fn new(suite: Suite, secret: &Secret) -> Keys {
        let m = suite.material(secret);
        // Local invariant: `Material` holds exactly the suite's key length.
        let hp = HeaderProtectionKey::new(suite.hp(), &m.hp[..m.key_len]).expect("key length");
        Keys {
            suite,
            hp,
            packet: PacketKey::from_material(suite, &m),
        }
    }

    /// The suite the keys are of.
    pub fn suite(&self) -> Suite {
        self.suite
    }

    /// The header protection mask of a sample (RFC 9001 §5.4.3, §5.4.4).
    pub fn mask(&self, sample: &[u8; SAMPLE_LEN]) -> [u8; 5] {
        // Local invariant: every suite's sample is 16 bytes, the only way this fails.
        self.hp.new_mask(sample).expect("16-byte sample")
    }

    /// Protects the packet in `packet`: its header (packet number unprotected, in the
    /// `(first & 3) + 1` bytes that end the header at `header_len`) then its payload; the
    /// payload is encrypted, the tag appended and the header protected. Errors if the
    /// payload is too short to give a header protection sample (RFC 9001 §5.4.2).
    pub fn protect(&self, pn: u64, header_len: usize, packet: &mut Vec<u8>) -> Result<(), Error> {
        let pn_len = usize::from(packet[0] & 3) + 1;
        let pn_offset = header_len - pn_len;
        if packet.len() + TAG_LEN < pn_offset + 4 + SAMPLE_LEN {
            return Err(Error::malformed(
                "payload too short for a header protection sample",
            ));
        }
        self.packet.seal(pn, header_len, packet);
        let sample = sample_at(packet, pn_offset).expect("length checked above");
        let mask = self.mask(&sample);
        apply_mask(packet, pn_offset, pn_len, mask);
        Ok(())
    }
}

/// The header protection sample of a packet whose packet number starts at `pn_offset`: the
/// 16 bytes from 4 bytes past it (RFC 9001 §5.4.2).
pub fn sample_at(packet: &[u8], pn_offset: usize) -> Option<[u8; SAMPLE_LEN]> {
    let start = pn_offset.checked_add(4)?;
    packet.get(start..start + SAMPLE_LEN)?.try_into().ok()
}

/// Xors the mask into the first byte's protected bits and the packet number's bytes.
fn apply_mask(packet: &mut [u8], pn_offset: usize, pn_len: usize, mask: [u8; 5]) {
    packet[0] ^= mask[0] & if packet[0] & 0x80 != 0 { 0x0f } else { 0x1f };
    for (b, m) in packet[pn_offset..pn_offset + pn_len]
        .iter_mut()
        .zip(&mask[1..])
    {
        *b ^= m;
    }
}

/// Removes header protection from `packet` (whose length the caller checked to hold a
/// sample past `pn_offset`): the packet number's length and its truncated value.
pub fn unmask(packet: &mut [u8], pn_offset: usize, mask: [u8; 5]) -> (usize, u64) {
    packet[0] ^= mask[0] & if packet[0] & 0x80 != 0 { 0x0f } else { 0x1f };
    let pn_len = usize::from(packet[0] & 3) + 1;
    let mut pn = 0u64;
    for (b, m) in packet[pn_offset..pn_offset + pn_len]
        .iter_mut()
        .zip(&mask[1..])
    {
        *b ^= m;
        pn = pn << 8 | u64::from(*b);
    }
    (pn_len, pn)
}

/// Whether the (unprotected) first byte of a short header has its key phase bit set.
pub fn key_phase(first: u8) -> bool {
    first & KEY_PHASE != 0
}

/// Whether `retry` (a whole Retry packet) carries the integrity tag of RFC 9001 §5.8 for the
/// client's original Destination Connection ID; `scratch` holds the pseudo-packet.
pub fn retry_tag_valid(odcid: &[u8], retry: &[u8], scratch: &mut Vec<u8>) -> bool {
    let Some(split) = retry.len().checked_sub(TAG_LEN) else {
        return false;
    };
    let Ok(odcid_len) = u8::try_from(odcid.len()) else {
        return false;
    };
    scratch.clear();
    scratch.push(odcid_len);
    scratch.extend_from_slice(odcid);
    scratch.extend_from_slice(&retry[..split]);
    let mut tag = [0u8; TAG_LEN];
    tag.copy_from_slice(&retry[split..]);
    // Local invariant: a 16-byte key is AES-128-GCM's.
    let key = LessSafeKey::new(UnboundKey::new(&aead::AES_128_GCM, &RETRY_KEY).expect("key"));
    let nonce = Nonce::assume_unique_for_key(RETRY_NONCE);
    key.open_in_place(nonce, Aad::from(&scratch[..]), &mut tag)
        .is_ok()
}
