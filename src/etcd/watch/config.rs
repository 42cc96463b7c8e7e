//! What a watch run is: the keys written and watched, and which watcher watches what (the
//! validated configuration itself is `config::WatchConfig`, plain data).

pub use crate::config::WatchConfig;

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
    use std::time::Duration;

    use super::*;
    use crate::client::grpc::H2Config;
    use crate::config::Format;
    use crate::net::NetConfig;
    use crate::stack::Proto;

    #[test]
    fn prefix_end_increments_the_last_byte() {
        assert_eq!(prefix_end(b"a/"), b"a0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff\xff"), vec![0]);
    }

    #[test]
    fn watchers_expect_the_revisions_of_their_keys() {
        let cfg = |prefix| WatchConfig {
            kind: crate::config::WatchKind::Events,
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
            compact: None,
            link: None,
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
