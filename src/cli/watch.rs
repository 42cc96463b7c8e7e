//! `wirebench etcd watch | watch-latency | watch-get`: watchers and a put load, validated into
//! a `WatchConfig`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::common::{
    CallProto, FormatArg, H2ClientArg, ProtoArg, TlsArgs, nonzero, parse_endpoints,
};
use super::error::ArgError;
use super::heading;
use super::limits::MAX_GENERATED;
use crate::client::grpc::H2Config;
use crate::config::{Format, WatchConfig, WatchKind, parse_duration};
use crate::net::NetConfig;
use crate::stack::Proto;

/// h2's small-DATA-frame allowance on watch connections (bytes of framing overhead).
const WATCH_DATA_FRAME_BUDGET: usize = 16 << 20;

/// The most events a watch-latency run keeps receipt times for (16 bytes each): watchers x
/// puts.
const MAX_RECEIPTS: u64 = 16 << 20;

/// The flags every watch benchmark shares: where, over what, for how long, and the output.
#[derive(Debug, Args)]
pub struct WatchShared {
    /// Comma-separated endpoints (http://host:port); streams are spread over them, the puts go
    /// to the first, and a member lost mid-run is replaced by the next live one
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "http://127.0.0.1:2379",
        help_heading = heading::ETCD
    )]
    pub endpoints: Vec<String>,
    /// Watch protocol; `both` runs HTTP/1.1 then gRPC, each with its own put load
    #[arg(long, value_enum, default_value_t = ProtoArg::Both)]
    pub proto: ProtoArg,
    /// gRPC connections carrying the streams
    #[arg(long, default_value_t = 1, help_heading = heading::CONNECTIONS)]
    pub conns: usize,
    /// Protocol of the put load (default gRPC, so both watch protocols see the same events)
    #[arg(long, value_enum, default_value_t = CallProto::Grpc)]
    pub put_proto: CallProto,
    /// After the last put, wait this long at most for outstanding events
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub timeout: Duration,
    /// Per-put timeout: a put not answered within it fails (`timeout`); a put client whose
    /// server stays unreachable for longer stops, and its remaining puts are not sent
    #[arg(long, value_parser = parse_duration, default_value = "20s")]
    pub put_timeout: Duration,
    /// TCP connect timeout
    #[arg(
        long,
        value_parser = parse_duration,
        default_value = "5s",
        help_heading = heading::CONNECTIONS
    )]
    pub connect_timeout: Duration,
    /// Which h2 client carries the watch streams and gRPC puts: wirebench's own (wire) or the
    /// h2 crate (h2)
    #[arg(long, value_enum, default_value_t = H2ClientArg::Wire, help_heading = heading::HTTP2)]
    pub h2_client: H2ClientArg,
    /// Run through an emulated network path (the watchers and the put load):
    /// rtt=40ms, loss=1%, rate=100mbit, ...; docs/guides/link.md
    #[arg(long, value_name = "SPEC", help_heading = heading::CONNECTIONS)]
    pub link: Option<String>,
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Report format
    #[arg(long, value_enum, default_value_t = FormatArg::Text, help_heading = heading::OUTPUT)]
    pub format: FormatArg,
    /// Write the report to this file instead of stdout
    #[arg(short = 'o', long, help_heading = heading::OUTPUT)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Watchers in all
    #[arg(long, default_value_t = 1)]
    pub watchers: usize,
    /// Watch streams (watchers / streams per stream); over HTTP/1.1 each stream is one
    /// POST /v3/watch on its own connection
    #[arg(long, default_value_t = 1)]
    pub streams: usize,
    /// Keys written and watched (watcher i watches key i mod K)
    #[arg(long, default_value_t = 1)]
    pub watched_keys: usize,
    /// Every watcher watches all the keys (a prefix watch) instead of one
    #[arg(long)]
    pub prefix: bool,
    /// Prefix of the keys written and watched
    #[arg(long, default_value = "wirebench/watch/")]
    pub key_prefix: String,
    /// Puts in all
    #[arg(long, default_value_t = 10_000)]
    pub put_total: u64,
    /// Puts per second over all put clients (default: as fast as they go)
    #[arg(long)]
    pub put_rate: Option<f64>,
    /// Put clients (requests in flight)
    #[arg(long, default_value_t = 10)]
    pub put_clients: usize,
    /// Value size; the first 8 bytes carry the send time
    #[arg(long, default_value_t = 16)]
    pub val_size: usize,
    /// The seed's run: 10 put clients, 80,000 puts, one watcher counting every event
    #[arg(long)]
    pub seed_preset: bool,
    #[command(flatten)]
    pub shared: WatchShared,
    /// --compact-interval, --compact-index-delta: a compactor beside the put load
    #[command(flatten)]
    pub compact: super::common::CompactArgs,
}

/// etcd benchmark's `watch-latency`: one key, watched by every watcher, put at a steady rate.
#[derive(Debug, Args)]
pub struct WatchLatencyArgs {
    /// Watch streams
    #[arg(long, default_value_t = 10)]
    pub streams: usize,
    /// Watchers on each stream (all of the one key)
    #[arg(long, default_value_t = 10)]
    pub watchers_per_stream: usize,
    /// Puts in all
    #[arg(long, default_value_t = 1000)]
    pub put_total: u64,
    /// Puts per second (one put client)
    #[arg(long, default_value_t = 100.0)]
    pub put_rate: f64,
    /// Key size in bytes
    #[arg(long, default_value_t = 32)]
    pub key_size: usize,
    /// Value size; the first 8 bytes carry the send time
    #[arg(long, default_value_t = 32)]
    pub val_size: usize,
    #[command(flatten)]
    pub shared: WatchShared,
    /// --compact-interval, --compact-index-delta: a compactor beside the put load
    #[command(flatten)]
    pub compact: super::common::CompactArgs,
}

/// etcd benchmark's `watch-get`: unsynced watchers replay a key's history while a serializable
/// range load runs.
#[derive(Debug, Args)]
pub struct WatchGetArgs {
    /// Watchers in all
    #[arg(long, default_value_t = 10_000)]
    pub watchers: usize,
    /// Watch streams
    #[arg(long, default_value_t = 1)]
    pub streams: usize,
    /// Puts written to the watched key before the watchers exist: the events each replays
    #[arg(long, default_value_t = 8)]
    pub events: u64,
    /// Range clients reading --get-key (serializable) while the watchers catch up
    #[arg(long, default_value_t = 1)]
    pub get_clients: usize,
    /// The key the range load reads
    #[arg(long, default_value = "abc")]
    pub get_key: String,
    /// Value size of the puts; the first 8 bytes carry the send time
    #[arg(long, default_value_t = 16)]
    pub val_size: usize,
    #[command(flatten)]
    pub shared: WatchShared,
}

/// A watch run's layout before validation: who watches what and how the puts go.
struct Layout {
    kind: WatchKind,
    watchers: usize,
    streams: usize,
    watched_keys: usize,
    prefix: bool,
    key_prefix: String,
    put_total: u64,
    put_rate: Option<f64>,
    put_clients: usize,
    val_size: usize,
}

impl WatchArgs {
    pub(super) fn into_config(self) -> Result<WatchConfig, ArgError> {
        let mut a = self;
        if a.seed_preset {
            a.watchers = 1;
            a.streams = 1;
            a.put_clients = 10;
            a.put_total = 80_000;
            a.watched_keys = 1;
        }
        let layout = Layout {
            kind: WatchKind::Events,
            watchers: a.watchers,
            streams: a.streams,
            watched_keys: a.watched_keys,
            prefix: a.prefix,
            key_prefix: a.key_prefix,
            put_total: a.put_total,
            put_rate: a.put_rate,
            put_clients: a.put_clients,
            val_size: a.val_size,
        };
        config(layout, a.shared, a.compact.into_config()?)
    }
}

impl WatchLatencyArgs {
    pub(super) fn into_config(self) -> Result<WatchConfig, ArgError> {
        let streams = nonzero("streams", self.streams)?;
        let per_stream = nonzero("watchers-per-stream", self.watchers_per_stream)?;
        let watchers = streams
            .checked_mul(per_stream)
            .ok_or(ArgError::TooManyWatchers)?;
        if (watchers as u64).saturating_mul(self.put_total) > MAX_RECEIPTS {
            return Err(ArgError::TooManyEvents {
                watchers,
                puts: self.put_total,
                max: MAX_RECEIPTS,
            });
        }
        if !(4..=MAX_GENERATED).contains(&self.key_size) {
            return Err(ArgError::WatchKeySize);
        }
        let layout = Layout {
            kind: WatchKind::Latency,
            watchers,
            streams,
            watched_keys: 1,
            prefix: false,
            // the key is this prefix and the key index 0: key-size bytes, new for every run
            key_prefix: latency_key_prefix(self.key_size - 1),
            put_total: self.put_total,
            put_rate: Some(self.put_rate),
            put_clients: 1,
            val_size: self.val_size,
        };
        config(layout, self.shared, self.compact.into_config()?)
    }
}

impl WatchGetArgs {
    pub(super) fn into_config(self) -> Result<WatchConfig, ArgError> {
        let get_clients = nonzero("get-clients", self.get_clients)?;
        if self.get_key.is_empty() {
            return Err(ArgError::Empty { flag: "get-key" });
        }
        if self.events == 0 {
            return Err(ArgError::Zero { flag: "events" });
        }
        let layout = Layout {
            kind: WatchKind::Get {
                get_clients,
                get_key: self.get_key,
            },
            watchers: self.watchers,
            streams: self.streams,
            watched_keys: 1,
            prefix: false,
            key_prefix: "wirebench/watch-get/".into(),
            put_total: self.events,
            put_rate: None,
            // one put at a time: the history is the events in order
            put_clients: 1,
            val_size: self.val_size,
        };
        // no compactor: the watchers replay the history it would remove
        config(layout, self.shared, None)
    }
}

/// `len` bytes of key prefix unique to this run: `wl/` and hex digits of the time and the
/// process, cut or padded with `k`.
fn latency_key_prefix(len: usize) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut key = format!("wl/{nanos:x}{:x}/", std::process::id());
    key.truncate(len);
    while key.len() < len {
        key.push('k');
    }
    key
}

/// The validated configuration of `layout` with the `shared` flags and the compaction beside
/// the puts.
fn config(
    l: Layout,
    a: WatchShared,
    compact: Option<crate::config::Compaction>,
) -> Result<WatchConfig, ArgError> {
    let watchers = nonzero("watchers", l.watchers)?;
    let streams = nonzero("streams", l.streams)?;
    let conns = nonzero("conns", a.conns)?;
    if streams > watchers {
        return Err(ArgError::Exceeds {
            flag: "streams",
            value: streams,
            bound_flag: "watchers",
            bound: watchers,
            why: "every stream needs a watcher",
        });
    }
    if conns > streams {
        return Err(ArgError::Exceeds {
            flag: "conns",
            value: conns,
            bound_flag: "streams",
            bound: streams,
            why: "every connection needs a stream",
        });
    }
    let watched_keys = nonzero("watched-keys", l.watched_keys)?;
    let put_clients = nonzero("put-clients", l.put_clients)?;
    if l.put_total == 0 {
        return Err(ArgError::Zero { flag: "put-total" });
    }
    if let Some(r) = l.put_rate
        && !(r.is_finite() && r > 0.0)
    {
        return Err(ArgError::PutRate(r));
    }
    let stamp = crate::workload::etcd::STAMP_LEN;
    if l.val_size < stamp || l.val_size > MAX_GENERATED {
        return Err(ArgError::WatchValSize { stamp });
    }
    if l.key_prefix.is_empty() {
        return Err(ArgError::Empty { flag: "key-prefix" });
    }
    if a.timeout.is_zero() || a.connect_timeout.is_zero() {
        return Err(ArgError::TimeoutsNotPositive);
    }
    if a.put_timeout.is_zero() {
        return Err(ArgError::NotPositive {
            flag: "put-timeout",
        });
    }
    let protos = match a.proto {
        ProtoArg::Http => vec![Proto::Http],
        ProtoArg::Grpc => vec![Proto::Grpc],
        ProtoArg::Both => vec![Proto::Http, Proto::Grpc],
    };
    let endpoints = parse_endpoints(&a.endpoints)?;
    let tls = a.tls.client(&endpoints, false)?;
    Ok(WatchConfig {
        kind: l.kind,
        endpoints,
        protos,
        watchers,
        streams,
        conns,
        watched_keys,
        prefix: l.prefix,
        key_prefix: l.key_prefix,
        put_total: l.put_total,
        put_rate: l.put_rate,
        put_clients,
        put_proto: match a.put_proto {
            CallProto::Http => Proto::Http,
            CallProto::Grpc => Proto::Grpc,
            CallProto::H2 => {
                return Err(ArgError::Conflict(
                    "--put-proto: choose http or grpc (etcd's API is not reached \
                            over plain HTTP/2)",
                ));
            }
        },
        val_size: l.val_size,
        drain: a.timeout,
        put_timeout: a.put_timeout,
        net: NetConfig {
            connect_timeout: a.connect_timeout,
            tls,
            ..NetConfig::default()
        },
        // A watch stream receives a burst of small DATA frames per put batch; h2's default
        // budget for them would close the connection under normal load.
        h2: H2Config {
            data_frame_budget: WATCH_DATA_FRAME_BUDGET,
            client: a.h2_client.into(),
            ..H2Config::default()
        },
        format: match a.format {
            FormatArg::Text => Format::Text,
            FormatArg::Json => Format::Json,
        },
        output: a.output,
        compact,
        link: a.link.as_deref().map(str::parse).transpose()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_puts_stamp_each_value_and_acknowledge_its_key() {
        let cli = <crate::cli::Cli as clap::Parser>::try_parse_from([
            "wirebench",
            "etcd",
            "watch",
            "--endpoints",
            "http://127.0.0.1:2379",
            "--watched-keys",
            "3",
            "--val-size",
            "12",
        ]);
        let Ok(crate::app::Action::Watch(cfg)) = cli.map(|c| c.into_action()).unwrap() else {
            panic!("a watch configuration");
        };
        let mut w = crate::workload::WatchPuts::new(&cfg).unwrap().for_client();
        w.next_grpc(4);
        let framed = w.grpc_request();
        let mut buf = bytes::BytesMut::from(&framed[..]);
        let req = <wirebench_wire::proto::etcd::PutRequest as prost::Message>::decode(
            wirebench_wire::grpc::decode(&mut buf, 1 << 20)
                .unwrap()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(&req.key[..], b"wirebench/watch/1");
        assert_eq!(req.value.len(), 12);
        assert_eq!(&req.value[crate::workload::etcd::STAMP_LEN..], &[0; 4]);
        assert!(req.value[..crate::workload::etcd::STAMP_LEN] != [0; 8]);
        // the verdict acknowledges the key index of the put in flight
        let ok = br#"{"header":{"revision":"9"}}"#;
        let mut out = bytes::BytesMut::new();
        w.encode_http(5, &mut out);
        let text = std::str::from_utf8(&out).unwrap();
        assert!(text.starts_with("POST /v3/kv/put HTTP/1.1\r\n"), "{text}");
        assert_eq!(
            w.check_http(200, ok),
            Ok((crate::outcome::StatusKey::Http(200), Some((2, 9))))
        );
        let (status, f) = w.check_http(200, b"{}").unwrap_err();
        assert_eq!(
            (status, f.kind),
            (
                crate::outcome::StatusKey::Http(200),
                crate::outcome::FailureKind::BadResponse
            )
        );
    }

    #[test]
    fn latency_keys_have_the_size_asked_for_and_differ_between_runs() {
        let a = latency_key_prefix(31);
        assert_eq!(a.len(), 31);
        assert!(a.starts_with("wl/"), "{a}");
        assert_eq!(latency_key_prefix(3), "wl/");
        assert_eq!(latency_key_prefix(40).len(), 40);
        std::thread::sleep(Duration::from_millis(1));
        assert_ne!(latency_key_prefix(31), a);
    }
}
