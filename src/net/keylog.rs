//! TLS secrets of QUIC connections: each connection's own (`Secrets`, which its ledger reads to
//! decrypt a copy of its packets), and `--tls-keylog FILE` (every connection's, in the NSS key
//! log format that Wireshark and tshark read).

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// `--tls-keylog FILE`: one line per secret, `LABEL CLIENT_RANDOM SECRET` in hex.
#[derive(Debug)]
pub struct KeyLogFile {
    file: Mutex<File>,
}

impl KeyLogFile {
    /// Creates (truncates) `path`.
    pub fn create(path: &Path) -> io::Result<Arc<KeyLogFile>> {
        Ok(Arc::new(KeyLogFile {
            file: Mutex::new(File::create(path)?),
        }))
    }

    pub(super) fn write(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        let mut line =
            String::with_capacity(label.len() + 2 * (client_random.len() + secret.len()) + 3);
        line.push_str(label);
        line.push(' ');
        hex(&mut line, client_random);
        line.push(' ');
        hex(&mut line, secret);
        line.push('\n');
        if let Ok(mut f) = self.file.lock() {
            // a failed write loses the line, not the run
            let _ = f.write_all(line.as_bytes());
        }
    }
}

impl rustls::KeyLog for KeyLogFile {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        self.write(label, client_random, secret);
    }
}

fn hex(out: &mut String, bytes: &[u8]) {
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
}

/// One connection's secrets as rustls logs them, until its driver takes them.
#[derive(Debug, Default)]
pub struct Secrets {
    /// (label, secret) in the order they were logged
    logged: Mutex<Vec<(&'static str, Vec<u8>)>>,
    /// `--tls-keylog`: every secret is written there too
    file: Option<Arc<KeyLogFile>>,
    /// the ledger decrypts a copy of the packets: keep the secrets for it
    keep: bool,
    /// something was logged since the last `take`: the driver asks once per datagram, and
    /// the lock is taken only when there is something to take
    fresh: AtomicBool,
}

/// The labels a TLS 1.3 client logs, as static strings (rustls hands them over borrowed).
const LABELS: [&str; 6] = [
    "CLIENT_EARLY_TRAFFIC_SECRET",
    "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
    "SERVER_HANDSHAKE_TRAFFIC_SECRET",
    "CLIENT_TRAFFIC_SECRET_0",
    "SERVER_TRAFFIC_SECRET_0",
    "EXPORTER_SECRET",
];

impl Secrets {
    pub fn new(keep: bool, file: Option<Arc<KeyLogFile>>) -> Arc<Secrets> {
        Arc::new(Secrets {
            logged: Mutex::new(Vec::new()),
            file,
            keep,
            fresh: AtomicBool::new(false),
        })
    }

    /// The secrets logged since the last call.
    pub fn take(&self) -> Vec<(&'static str, Vec<u8>)> {
        if !self.fresh.swap(false, Ordering::Acquire) {
            return Vec::new();
        }
        match self.logged.lock() {
            Ok(mut g) if !g.is_empty() => std::mem::take(&mut *g),
            _ => Vec::new(),
        }
    }
}

impl rustls::KeyLog for Secrets {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        if let Some(f) = &self.file {
            f.write(label, client_random, secret);
        }
        if !self.keep {
            return;
        }
        if let Some(l) = LABELS.iter().find(|l| **l == label)
            && let Ok(mut g) = self.logged.lock()
        {
            g.push((l, secret.to_vec()));
            self.fresh.store(true, Ordering::Release);
        }
    }

    fn will_log(&self, _label: &str) -> bool {
        self.keep || self.file.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::KeyLog;

    #[test]
    fn the_file_holds_nss_lines_and_the_connection_keeps_its_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys");
        let file = KeyLogFile::create(&path).unwrap();
        let s = Secrets::new(true, Some(file));
        s.log("CLIENT_TRAFFIC_SECRET_0", &[0xab, 0x01], &[0x00, 0xff]);
        s.log("SOMETHING_ELSE", &[1], &[2]);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "CLIENT_TRAFFIC_SECRET_0 ab01 00ff\nSOMETHING_ELSE 01 02\n"
        );
        assert_eq!(
            s.take(),
            vec![("CLIENT_TRAFFIC_SECRET_0", vec![0x00, 0xff])]
        );
        assert!(s.take().is_empty());
    }
}
