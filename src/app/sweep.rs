//! `wirebench sweep`: runs the product of clients × key sizes × targets × protocols against etcd
//! and prints one row per run, in the columns of etcd's benchmark tables plus the wire figures.

use std::fmt::Write;

use serde::Serialize;

use super::prepare;
use super::{RunError, emit, exit};
use crate::config::{
    Config, EtcdOp, Load, Proto, Stop, SweepConfig, SweepOp, TableFormat, Target, WorkloadSpec,
};
use crate::engine;
use crate::report::RunReport;
use crate::workload::etcd::{self as ops, client};

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
    /// the row's latency histogram (HdrHistogram V2 compressed, base64, ns; JSON only)
    pub latency_hdr: String,
}

/// Rows in etcd's table order: target, then key size, then clients, then protocol.
fn cells(s: &SweepConfig) -> Vec<(Target, usize, usize, Proto)> {
    let mut v = Vec::new();
    for &t in &s.targets {
        for &k in &s.key_sizes {
            for &c in &s.clients {
                for &p in &s.protos {
                    v.push((t, k, c, p));
                }
            }
        }
    }
    v
}

fn op_for(s: &SweepConfig, key_size: usize) -> EtcdOp {
    match s.op {
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
            options: Default::default(),
        },
        SweepOp::TxnPut {
            val_size,
            key_space_size,
            ops,
        } => EtcdOp::TxnPut {
            key_size,
            val_size,
            key_space_size,
            ops,
        },
    }
}

/// The configuration of one cell: the base with the cell's dimensions.
fn cell(s: &SweepConfig, target: Target, key_size: usize, clients: usize, proto: Proto) -> Config {
    let base = &s.base;
    let conns = base.load.conns.min(clients);
    Config {
        load: Load {
            clients,
            conns,
            ..base.load.clone()
        },
        h2: base.h2.for_streams(clients.div_ceil(conns)),
        protos: vec![proto],
        target,
        spec: WorkloadSpec::Etcd(op_for(s, key_size)),
        ..base.clone()
    }
}

/// Writes the key a range sweep reads: one put over gRPC to the first endpoint, of the key and
/// value a one-key put run with the sweep's seed writes (index 0 as a varint, then zeros).
fn write_range_key(
    s: &SweepConfig,
    token: Option<&str>,
    key_size: usize,
    val_size: usize,
) -> Result<(), RunError> {
    let base = &s.base;
    let key = vec![0; key_size];
    let value = ops::put_value(&mut ops::Rng::new(base.seed), val_size);
    let ep = &base.endpoints[0];
    client::put(
        ep,
        Proto::Grpc,
        &base.net,
        &base.h2,
        token,
        &key,
        &value,
        base.load.timeout,
    )
    .map(drop)
    .map_err(|why| {
        RunError::Setup(format!(
            "cannot write the {key_size}-byte key to read: {why}"
        ))
    })
}

/// Runs the sweep (authenticated once with `--user`) and writes its table; fails when a row had
/// no successful request.
pub(super) fn sweep_and_write(s: &SweepConfig) -> Result<i32, RunError> {
    let token = prepare::authenticate(&s.base, &s.base.endpoints)?;
    let mut broken = Vec::new();
    let rows = run(s, token.as_deref(), &mut broken, |i, n, r| {
        eprintln!(
            "wirebench sweep: {i}/{n} key {} B, {} clients, {}, {}: {:.0} req/s, p90 {:.2} ms{}",
            r.key_size,
            r.clients,
            r.target,
            r.proto,
            r.qps,
            r.p90_ms,
            if r.failed > 0 {
                format!(", {} failed", r.failed)
            } else {
                String::new()
            }
        );
    })?;
    emit(s.output.as_deref(), &render(s, &rows))?;
    let empty: Vec<_> = rows.iter().filter(|r| r.ok == 0).collect();
    if let Some(r) = empty.first() {
        eprintln!(
            "error: {} of {} rows had no successful request (first: key {} B, {} clients, {}, {})",
            empty.len(),
            rows.len(),
            r.key_size,
            r.clients,
            r.target,
            r.proto
        );
        return Ok(exit::FAILURE);
    }
    Ok(super::run::judge(&s.base.thresholds, broken.into_iter()))
}

/// Runs every cell in turn, with the etcd auth `token`; `progress` hears about each finished row.
/// Every row's broken `--fail-if` thresholds go into `broken`.
pub fn run(
    s: &SweepConfig,
    token: Option<&str>,
    broken: &mut Vec<crate::report::threshold::Broken>,
    mut progress: impl FnMut(usize, usize, &Row),
) -> Result<Vec<Row>, RunError> {
    let cells = cells(s);
    let mut rows = Vec::with_capacity(cells.len());
    let mut written: Vec<usize> = Vec::new();
    let clock = prepare::server_clock(&s.base)?;
    for (i, &(target, key_size, clients, proto)) in cells.iter().enumerate() {
        if engine::INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        if let SweepOp::Range { val_size, .. } = s.op
            && !written.contains(&key_size)
        {
            write_range_key(s, token, key_size, val_size)?;
            written.push(key_size);
        }
        let c = cell(s, target, key_size, clients, proto);
        let prepared = prepare::prepare_row(&c, token, clock)?;
        let run = prepared.run_proto(&c, proto).map_err(RunError::Setup)?;
        let r = RunReport::from_run(&run, &prepared.endpoints, &prepared.roles, false);
        let row_name = format!(
            "the row of key {key_size} B, {clients} clients, {}, ",
            target.name()
        );
        broken.extend(
            s.base
                .thresholds
                .iter()
                .filter_map(|t| t.judge_value(&r, t.figure.value(&r), &row_name)),
        );
        let (w, cost) = (&r.wire, &r.cost);
        let row = Row {
            key_size,
            clients,
            target: target.name(),
            proto: proto.name(),
            endpoints: prepared.endpoints.iter().map(|e| e.url.clone()).collect(),
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
            latency_hdr: r.histograms.latency.clone(),
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
        SweepOp::TxnPut {
            val_size,
            key_space_size,
            ops,
        } => {
            format!("etcd txn-put, {ops} puts per txn, value {val_size} B, {key_space_size} key(s)")
        }
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
            latency_hdr: String::new(),
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
