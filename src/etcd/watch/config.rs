//! What a watch run is: its validated configuration, the keys written and watched, and which
//! watcher watches what.

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use crate::config::{Endpoint, Format, Proto};
use crate::net::{H2Config, NetConfig};

/// Bytes at the front of every put value: the send time, ns since the epoch, little endian.
pub const STAMP_LEN: usize = 8;

/// The process-wide origin of the send-time stamps: the put side writes and the watch side
/// reads them against the same monotonic clock, so no clock sync is needed.
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Writes the send time (ns since the epoch, little endian) into the front of `value`.
pub fn stamp(value: &mut [u8]) {
    let ns = EPOCH.elapsed().as_nanos() as u64;
    if let Some(s) = value.get_mut(..STAMP_LEN) {
        s.copy_from_slice(&ns.to_le_bytes());
    }
}

/// Time from the send stamped in `value` to `now`; None when the value holds no stamp.
pub fn since_stamp(value: &[u8], now: Instant) -> Option<Duration> {
    let stamp = value.get(..STAMP_LEN)?;
    let mut b = [0u8; STAMP_LEN];
    b.copy_from_slice(stamp);
    let sent = u64::from_le_bytes(b);
    let at = now.saturating_duration_since(*EPOCH).as_nanos() as u64;
    Some(Duration::from_nanos(at.saturating_sub(sent)))
}

/// A validated watch run.
#[derive(Debug, Clone)]
pub struct WatchConfig {
    pub endpoints: Vec<Endpoint>,
    /// watch protocols to measure, one run each
    pub protos: Vec<Proto>,
    pub watchers: usize,
    pub streams: usize,
    /// gRPC connections carrying the streams (HTTP/1.1: one connection per stream)
    pub conns: usize,
    pub watched_keys: usize,
    /// every watcher watches the whole key prefix instead of one key
    pub prefix: bool,
    pub key_prefix: String,
    pub put_total: u64,
    /// puts per second over all put clients; None = as fast as the clients go
    pub put_rate: Option<f64>,
    pub put_clients: usize,
    pub put_proto: Proto,
    pub val_size: usize,
    /// how long to wait for outstanding events after the last put
    pub drain: Duration,
    /// per-put limit: a put not answered within it fails (`timeout`)
    pub put_timeout: Duration,
    pub net: NetConfig,
    pub h2: H2Config,
    pub format: Format,
    pub output: Option<std::path::PathBuf>,
}

impl WatchConfig {
    /// The key of key index `i`.
    pub fn key(&self, i: usize) -> Vec<u8> {
        format!("{}{i}", self.key_prefix).into_bytes()
    }

    /// The key range watcher `w` watches: one key, or the whole prefix.
    pub fn range(&self, w: usize) -> (Vec<u8>, Option<Vec<u8>>) {
        if self.prefix {
            let start = self.key_prefix.clone().into_bytes();
            (start.clone(), Some(prefix_end(&start)))
        } else {
            (self.key(w % self.watched_keys), None)
        }
    }

    /// The key indexes watcher `w` sees events for.
    pub fn keys_of(&self, w: usize) -> Vec<usize> {
        if self.prefix {
            (0..self.watched_keys).collect()
        } else {
            vec![w % self.watched_keys]
        }
    }

    /// What each watcher must see, sorted: the revisions of the acknowledged puts (`revisions`,
    /// per key index) to the keys it watches.
    pub fn expected(&self, revisions: &[Vec<i64>]) -> Vec<Vec<i64>> {
        (0..self.watchers)
            .map(|w| {
                let mut v: Vec<i64> = self
                    .keys_of(w)
                    .into_iter()
                    .flat_map(|k| revisions.get(k).cloned().unwrap_or_default())
                    .collect();
                v.sort_unstable();
                v
            })
            .collect()
    }
}

/// etcd's range end for "every key with this prefix": the prefix with its last byte below 0xff
/// incremented and what follows dropped.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// Watchers of stream `s` of `streams`: w with w % streams == s.
pub(super) fn stream_watchers(watchers: usize, streams: usize, s: usize) -> Vec<usize> {
    (s..watchers).step_by(streams).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_increments_the_last_byte() {
        assert_eq!(prefix_end(b"a/"), b"a0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff\xff"), vec![0]);
    }

    #[test]
    fn stamps_read_back_as_the_time_since_they_were_written() {
        let mut value = vec![0xaa; 12];
        stamp(&mut value);
        assert_eq!(&value[STAMP_LEN..], &[0xaa; 4]);
        let later = Instant::now() + Duration::from_millis(5);
        let age = since_stamp(&value, later).expect("a stamp");
        assert!(age >= Duration::from_millis(5), "{age:?}");
        assert!(age < Duration::from_secs(5), "{age:?}");
        assert_eq!(since_stamp(&value[..4], later), None);
    }

    #[test]
    fn watchers_expect_the_revisions_of_their_keys() {
        let cfg = |prefix| WatchConfig {
            endpoints: Vec::new(),
            protos: vec![Proto::Grpc],
            watchers: 3,
            streams: 1,
            conns: 1,
            watched_keys: 2,
            prefix,
            key_prefix: "k/".into(),
            put_total: 4,
            put_rate: None,
            put_clients: 1,
            put_proto: Proto::Grpc,
            val_size: 16,
            drain: Duration::from_secs(1),
            put_timeout: Duration::from_secs(1),
            net: NetConfig::default(),
            h2: H2Config::default(),
            format: Format::Text,
            output: None,
        };
        let revisions = vec![vec![7, 3], vec![5]];
        assert_eq!(
            cfg(false).expected(&revisions),
            [vec![3, 7], vec![5], vec![3, 7]]
        );
        assert_eq!(cfg(true).expected(&revisions), vec![vec![3, 5, 7]; 3]);
        assert_eq!(cfg(false).key(1), b"k/1");
    }

    #[test]
    fn streams_split_watchers_evenly() {
        assert_eq!(stream_watchers(10, 3, 0), vec![0, 3, 6, 9]);
        assert_eq!(stream_watchers(10, 3, 2), vec![2, 5, 8]);
        let all: usize = (0..10).map(|s| stream_watchers(1000, 10, s).len()).sum();
        assert_eq!(all, 1000);
    }
}
