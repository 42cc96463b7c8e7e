//! `wirebench sweep`: runs the product of clients × key sizes × targets × protocols against etcd
//! and prints one row per run, in the columns of etcd's benchmark tables plus the wire figures.

use std::fmt::Write;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::config::{Config, Proto, Stop, WorkloadSpec};
use crate::discover::Target;
use crate::engine;
use crate::report::RunReport;
use crate::workload::EtcdOp;

/// The etcd operation a sweep measures.
#[derive(Debug, Clone, Copy)]
pub enum SweepOp {
    Put {
        val_size: usize,
        key_space_size: u64,
        sequential_keys: bool,
    },
    /// reads one key of each key size, written once (value `val_size` bytes) before its rows
    Range { val_size: usize, serializable: bool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableFormat {
    Markdown,
    Csv,
    Json,
}

/// A validated sweep.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    /// everything but the swept dimensions (endpoints, -n/-z, timeouts, TLS, auth, ...)
    pub base: Config,
    pub op: SweepOp,
    pub clients: Vec<usize>,
    pub key_sizes: Vec<usize>,
    pub targets: Vec<Target>,
    pub protos: Vec<Proto>,
    pub format: TableFormat,
    pub output: Option<PathBuf>,
}

/// One run of the sweep.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub key_size: usize,
    pub clients: usize,
    pub target: &'static str,
    pub proto: &'static str,
    /// endpoints the clients were spread over (after `--target`)
    pub endpoints: Vec<String>,
    pub connections: u64,
    pub count: u64,
    pub ok: u64,
    pub failed: u64,
    pub qps: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    /// socket bytes out + in per request
    pub bytes_per_op: f64,
    /// TCP segments out + in per request (TCP_INFO)
    pub packets_per_op: f64,
    /// syscalls per request written, counted by the kernel (null where it could not count)
    pub syscalls_per_op: Option<f64>,
    pub context_switches_per_op: Option<f64>,
    pub client_cpu_us_per_op: f64,
    /// with --server-pid
    pub server_cpu_us_per_op: Option<f64>,
}

impl SweepConfig {
    /// Rows in etcd's table order: target, then key size, then clients, then protocol.
    fn cells(&self) -> Vec<(Target, usize, usize, Proto)> {
        let mut v = Vec::new();
        for &t in &self.targets {
            for &k in &self.key_sizes {
                for &c in &self.clients {
                    for &p in &self.protos {
                        v.push((t, k, c, p));
                    }
                }
            }
        }
        v
    }

    fn op_for(&self, key_size: usize) -> EtcdOp {
        match self.op {
            SweepOp::Put {
                val_size,
                key_space_size,
                sequential_keys,
            } => EtcdOp::Put {
                key_size,
                val_size,
                key_space_size,
                sequential_keys,
            },
            // the key a one-key put of this size writes: index 0 as a varint, then zeros
            SweepOp::Range { serializable, .. } => EtcdOp::Range {
                key: vec![0; key_size],
                serializable,
            },
        }
    }

    /// The configuration of one cell.
    fn cell(
        &self,
        target: Target,
        key_size: usize,
        clients: usize,
        proto: Proto,
    ) -> Result<Config, String> {
        let mut c = self.base.clone();
        c.load.clients = clients;
        c.load.conns = self.base.load.conns.min(clients);
        c.h2 = c.h2.for_streams(clients.div_ceil(c.load.conns));
        c.protos = vec![proto];
        c.target = target;
        c.spec = WorkloadSpec::Etcd(self.op_for(key_size));
        c.roles = Vec::new();
        c.set_endpoints(self.base.endpoints.clone())?;
        Ok(c)
    }
}

/// Writes the key a range sweep reads (one put over gRPC to the first endpoint).
fn write_range_key(s: &SweepConfig, key_size: usize, val_size: usize) -> Result<(), String> {
    let mut c = s.base.clone();
    c.load.clients = 1;
    c.load.conns = 1;
    c.load.stop = Stop::Total(1);
    c.load.warmup = Duration::ZERO;
    c.load.rate = None;
    c.protos = vec![Proto::Grpc];
    c.spec = WorkloadSpec::Etcd(EtcdOp::Put {
        key_size,
        val_size,
        key_space_size: 1,
        sequential_keys: true,
    });
    c.set_endpoints(vec![s.base.endpoints[0].clone()])?;
    let run = engine::run_proto(&c, Proto::Grpc, None)?;
    if run.stats.ok != 1 {
        let why = run
            .stats
            .errors
            .keys()
            .next()
            .map_or_else(|| "no response".to_string(), ToString::to_string);
        return Err(format!(
            "cannot write the {key_size}-byte key to read: {why}"
        ));
    }
    Ok(())
}

/// Runs every cell in turn; `progress` hears about each finished row.
pub fn run(
    s: &SweepConfig,
    mut progress: impl FnMut(usize, usize, &Row),
) -> Result<Vec<Row>, String> {
    let cells = s.cells();
    let mut rows = Vec::with_capacity(cells.len());
    let mut written: Vec<usize> = Vec::new();
    let clock = crate::server_clock(&s.base).map_err(|e| e.to_string())?;
    let by_pid = clock.map(|c| move || c.read());
    for (i, &(target, key_size, clients, proto)) in cells.iter().enumerate() {
        if engine::INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        if let SweepOp::Range { val_size, .. } = s.op
            && !written.contains(&key_size)
        {
            write_range_key(s, key_size, val_size)?;
            written.push(key_size);
        }
        let mut c = s.cell(target, key_size, clients, proto)?;
        crate::ensure_fds(&c, false).map_err(|e| e.to_string())?;
        crate::apply_target(&mut c).map_err(|e| e.to_string())?;
        let cpu: Option<&dyn Fn() -> Result<Duration, String>> = by_pid.as_ref().map(|f| f as _);
        let run = engine::run_proto(&c, proto, cpu)?;
        let r = RunReport::from_run(&run, &c.endpoints, &c.roles, false);
        let (w, cost) = (&r.wire, &r.cost);
        let row = Row {
            key_size,
            clients,
            target: target.name(),
            proto: proto.name(),
            endpoints: c.endpoints.iter().map(|e| e.url.clone()).collect(),
            connections: w.connections_opened,
            count: r.summary.count,
            ok: r.summary.ok,
            failed: r.summary.failed,
            qps: r.summary.requests_per_sec,
            p50_ms: r.percentile_ms(50.0),
            p90_ms: r.percentile_ms(90.0),
            p99_ms: r.percentile_ms(99.0),
            bytes_per_op: w.bytes_out_per_request + w.bytes_in_per_request,
            packets_per_op: w.segments_out_per_request + w.segments_in_per_request,
            syscalls_per_op: cost.syscalls_per_request,
            context_switches_per_op: cost.context_switches_per_request,
            client_cpu_us_per_op: cost.client_cpu_us_per_request,
            server_cpu_us_per_op: cost.server_cpu_us_per_request,
        };
        progress(i + 1, cells.len(), &row);
        rows.push(row);
    }
    Ok(rows)
}

/// One line describing what was swept, for the table's caption.
pub fn describe(s: &SweepConfig) -> String {
    let what = match s.op {
        SweepOp::Put {
            val_size,
            key_space_size,
            ..
        } => format!("etcd put, value {val_size} B, {key_space_size} key(s)"),
        SweepOp::Range {
            val_size,
            serializable,
        } => format!(
            "etcd range of one key (value {val_size} B, {})",
            if serializable {
                "serializable"
            } else {
                "linearizable"
            }
        ),
    };
    let stop = match s.base.load.stop {
        Stop::Total(n) => format!("{n} requests per row"),
        Stop::Duration(d) => format!("{:?} per row", d),
    };
    format!("{what}; {stop}")
}

const COLUMNS: [&str; 12] = [
    "key size (B)",
    "clients",
    "target",
    "proto",
    "QPS",
    "p90 ms",
    "p99 ms",
    "bytes/op",
    "packets/op",
    "syscalls/op",
    "client CPU µs/op",
    "failed",
];

fn cells_of(r: &Row) -> [String; 12] {
    [
        r.key_size.to_string(),
        r.clients.to_string(),
        r.target.to_string(),
        Proto::title(if r.proto == "http" {
            Proto::Http
        } else {
            Proto::Grpc
        })
        .to_string(),
        format!("{:.0}", r.qps),
        format!("{:.2}", r.p90_ms),
        format!("{:.2}", r.p99_ms),
        format!("{:.1}", r.bytes_per_op),
        format!("{:.2}", r.packets_per_op),
        r.syscalls_per_op
            .map_or_else(|| "n/a".into(), |v| format!("{v:.2}")),
        format!("{:.1}", r.client_cpu_us_per_op),
        r.failed.to_string(),
    ]
}

fn server_cpu(r: &Row) -> String {
    r.server_cpu_us_per_op
        .map_or_else(|| "-".into(), |v| format!("{v:.1}"))
}

pub fn markdown(s: &SweepConfig, rows: &[Row]) -> String {
    let with_server = rows.iter().any(|r| r.server_cpu_us_per_op.is_some());
    let mut head: Vec<&str> = COLUMNS.to_vec();
    if with_server {
        head.push("server CPU µs/op");
    }
    let mut out = String::new();
    let _ = writeln!(out, "<!-- {} -->", describe(s));
    let _ = writeln!(out, "| {} |", head.join(" | "));
    let _ = writeln!(
        out,
        "|{}|",
        head.iter()
            .enumerate()
            .map(|(i, _)| if i < 4 { "---" } else { "---:" })
            .collect::<Vec<_>>()
            .join("|")
    );
    for r in rows {
        let mut c: Vec<String> = cells_of(r).to_vec();
        if with_server {
            c.push(server_cpu(r));
        }
        let _ = writeln!(out, "| {} |", c.join(" | "));
    }
    out
}

pub fn csv(rows: &[Row]) -> String {
    let mut out = String::from(
        "key_size,clients,target,proto,qps,p50_ms,p90_ms,p99_ms,bytes_per_op,packets_per_op,syscalls_per_op,context_switches_per_op,client_cpu_us_per_op,server_cpu_us_per_op,count,ok,failed,connections\n",
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{:.1},{:.3},{:.3},{:.3},{:.1},{:.3},{},{},{:.2},{},{},{},{},{}",
            r.key_size,
            r.clients,
            r.target,
            r.proto,
            r.qps,
            r.p50_ms,
            r.p90_ms,
            r.p99_ms,
            r.bytes_per_op,
            r.packets_per_op,
            r.syscalls_per_op
                .map_or_else(String::new, |v| format!("{v:.3}")),
            r.context_switches_per_op
                .map_or_else(String::new, |v| format!("{v:.4}")),
            r.client_cpu_us_per_op,
            r.server_cpu_us_per_op
                .map_or_else(String::new, |v| format!("{v:.2}")),
            r.count,
            r.ok,
            r.failed,
            r.connections
        );
    }
    out
}

pub fn json(s: &SweepConfig, rows: &[Row]) -> String {
    let v = serde_json::json!({
        "schema": "wirebench.sweep.v1",
        "version": env!("CARGO_PKG_VERSION"),
        "workload": describe(s),
        "endpoints": s.base.endpoints.iter().map(|e| e.url.clone()).collect::<Vec<_>>(),
        "rows": rows,
    });
    let mut text = serde_json::to_string_pretty(&v).unwrap_or_default();
    text.push('\n');
    text
}

pub fn render(s: &SweepConfig, rows: &[Row]) -> String {
    match s.format {
        TableFormat::Markdown => markdown(s, rows),
        TableFormat::Csv => csv(rows),
        TableFormat::Json => json(s, rows),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(clients: usize, proto: &'static str) -> Row {
        Row {
            key_size: 64,
            clients,
            target: "leader",
            proto,
            endpoints: vec!["http://127.0.0.1:2379".into()],
            connections: 1,
            count: 100,
            ok: 100,
            failed: 0,
            qps: 1534.4,
            p50_ms: 0.5,
            p90_ms: 0.7,
            p99_ms: 1.25,
            bytes_per_op: 200.0,
            packets_per_op: 2.0,
            syscalls_per_op: Some(3.5),
            context_switches_per_op: None,
            client_cpu_us_per_op: 20.0,
            server_cpu_us_per_op: None,
        }
    }

    #[test]
    fn csv_has_a_header_and_one_line_per_row() {
        let text = csv(&[row(1, "http"), row(64, "grpc")]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("key_size,clients,target,proto,qps"));
        assert!(
            lines[2].starts_with("64,64,leader,grpc,1534.4,0.500,0.700,1.250,200.0,2.000,3.500,,")
        );
        let fields = lines[0].split(',').count();
        assert!(lines.iter().all(|l| l.split(',').count() == fields));
    }
}
