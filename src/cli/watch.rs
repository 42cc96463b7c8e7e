//! `wirebench etcd watch`: watchers and a put load, validated into a `WatchConfig`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::common::{
    CallProto, FormatArg, H2ClientArg, MAX_GENERATED, ProtoArg, TlsArgs, nonzero, parse_endpoints,
};
use crate::config::WatchConfig;
use crate::config::{Format, Proto, parse_duration};
use crate::net::{H2Config, NetConfig};

/// h2's small-DATA-frame allowance on watch connections (bytes of framing overhead).
const WATCH_DATA_FRAME_BUDGET: usize = 16 << 20;

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Comma-separated endpoints (http://host:port); streams and puts are spread over them
    #[arg(long, value_delimiter = ',', default_value = "http://127.0.0.1:2379")]
    pub endpoints: Vec<String>,
    /// Watch protocol; `both` runs HTTP/1.1 then gRPC, each with its own put load
    #[arg(long, value_enum, default_value_t = ProtoArg::Both)]
    pub proto: ProtoArg,
    /// Watchers in all
    #[arg(long, default_value_t = 1)]
    pub watchers: usize,
    /// Watch streams (watchers / streams per stream); over HTTP/1.1 each stream is one
    /// POST /v3/watch on its own connection
    #[arg(long, default_value_t = 1)]
    pub streams: usize,
    /// gRPC connections carrying the streams
    #[arg(long, default_value_t = 1)]
    pub conns: usize,
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
    /// Protocol of the put load (default gRPC, so both watch protocols see the same events)
    #[arg(long, value_enum, default_value_t = CallProto::Grpc)]
    pub put_proto: CallProto,
    /// Value size; the first 8 bytes carry the send time
    #[arg(long, default_value_t = 16)]
    pub val_size: usize,
    /// After the last put, wait this long at most for outstanding events
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub timeout: Duration,
    /// Per-put timeout: a put not answered within it fails (`timeout`); a put client whose
    /// server stays unreachable for longer stops, and its remaining puts are not sent
    #[arg(long, value_parser = parse_duration, default_value = "20s")]
    pub put_timeout: Duration,
    /// TCP connect timeout
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    pub connect_timeout: Duration,
    /// Which h2 client carries the watch streams and gRPC puts: wirebench's own (wire) or the
    /// h2 crate (h2)
    #[arg(long, value_enum, default_value_t = H2ClientArg::Wire)]
    pub h2_client: H2ClientArg,
    /// The seed's run: 10 put clients, 80,000 puts, one watcher counting every event
    #[arg(long)]
    pub seed_preset: bool,
    #[command(flatten)]
    pub tls: TlsArgs,
    /// --compact-interval, --compact-index-delta: a compactor beside the put load
    #[command(flatten)]
    pub compact: super::etcd::CompactArgs,
    /// Report format
    #[arg(long, value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,
    /// Write the report to this file instead of stdout
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
}

impl WatchArgs {
    pub(super) fn into_config(self) -> Result<WatchConfig, String> {
        let mut a = self;
        if a.seed_preset {
            a.watchers = 1;
            a.streams = 1;
            a.put_clients = 10;
            a.put_total = 80_000;
            a.watched_keys = 1;
        }
        let watchers = nonzero("watchers", a.watchers)?;
        let streams = nonzero("streams", a.streams)?;
        let conns = nonzero("conns", a.conns)?;
        if streams > watchers {
            return Err(format!(
                "--streams {streams} exceeds --watchers {watchers}: every stream needs a watcher"
            ));
        }
        if conns > streams {
            return Err(format!(
                "--conns {conns} exceeds --streams {streams}: every connection needs a stream"
            ));
        }
        let watched_keys = nonzero("watched-keys", a.watched_keys)?;
        let put_clients = nonzero("put-clients", a.put_clients)?;
        if a.put_total == 0 {
            return Err("--put-total must be at least 1".into());
        }
        if let Some(r) = a.put_rate
            && !(r.is_finite() && r > 0.0)
        {
            return Err(format!("--put-rate must be a positive number, got {r}"));
        }
        if a.val_size < crate::workload::etcd::STAMP_LEN || a.val_size > MAX_GENERATED {
            return Err(format!(
                "--val-size must be between {} (the send-time stamp) and {MAX_GENERATED}",
                crate::workload::etcd::STAMP_LEN
            ));
        }
        if a.key_prefix.is_empty() {
            return Err("--key-prefix must not be empty".into());
        }
        if a.timeout.is_zero() || a.connect_timeout.is_zero() {
            return Err("--timeout and --connect-timeout must be positive".into());
        }
        if a.put_timeout.is_zero() {
            return Err("--put-timeout must be positive".into());
        }
        let protos = match a.proto {
            ProtoArg::Http => vec![Proto::Http],
            ProtoArg::Grpc => vec![Proto::Grpc],
            ProtoArg::Both => vec![Proto::Http, Proto::Grpc],
        };
        let endpoints = parse_endpoints(&a.endpoints)?;
        let tls = a.tls.client(&endpoints)?;
        Ok(WatchConfig {
            endpoints,
            protos,
            watchers,
            streams,
            conns,
            watched_keys,
            prefix: a.prefix,
            key_prefix: a.key_prefix,
            put_total: a.put_total,
            put_rate: a.put_rate,
            put_clients,
            put_proto: match a.put_proto {
                CallProto::Http => Proto::Http,
                CallProto::Grpc => Proto::Grpc,
                CallProto::H2 => {
                    return Err(
                        "--put-proto: choose http or grpc (etcd's API is not reached \
                                over plain HTTP/2)"
                            .into(),
                    );
                }
            },
            val_size: a.val_size,
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
            compact: a.compact.into_config()?,
        })
    }
}
