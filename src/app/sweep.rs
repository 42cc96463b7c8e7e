//! `wirebench sweep`: runs the product of clients × key sizes × targets × protocols against etcd
//! and prints one row per run, in the columns of etcd's benchmark tables plus the wire figures.

use std::fmt::Write;

use serde::Serialize;

use super::prepare;
use super::{RunError, emit, exit};
use crate::config::{
    Config, EtcdOp, Load, Stop, SweepConfig, SweepOp, TableFormat, Target, WorkloadSpec,
};
use crate::report::show::{self, num};
use crate::report::{RunReport, plus};
use crate::rng::Rng;
use crate::stack::Proto;
use crate::workload::etcd::{self as ops, client};

/// One run of the sweep.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// 0 for lease-keepalive, whose requests have no key
    pub key_size: usize,
    /// the requests have a key (all but lease-keepalive): markdown shows `-` otherwise
    #[serde(skip)]
    pub keyed: bool,
    pub clients: usize,
    pub target: &'static str,
    pub proto: &'static str,
    /// `--links`: the row's emulated path (null: loopback without a link)
    pub link: Option<String>,
    /// endpoints the clients were spread over (after `--target`)
    pub endpoints: Vec<String>,
    pub connections: u64,
    pub count: u64,
    pub ok: u64,
    pub failed: u64,
    /// null where the run measured none (a window of no length; no successful request)
    pub qps: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// socket bytes out + in per request (null: no request on the connections)
    pub bytes_per_op: Option<f64>,
    /// TCP segments out + in per request (TCP_INFO; null: no connection's could be read)
    pub packets_per_op: Option<f64>,
    /// syscalls per request written, counted by the kernel (null where it could not count)
    pub syscalls_per_op: Option<f64>,
    pub context_switches_per_op: Option<f64>,
    /// null: no request written
    pub client_cpu_us_per_op: Option<f64>,
    /// with --server-pid
    pub server_cpu_us_per_op: Option<f64>,
    /// the row's latency histogram (HdrHistogram V2 compressed, base64, ns; JSON only)
    pub latency_hdr: String,
    /// Ctrl-C cut the row's run short (JSON only; the markdown table says so below it)
    pub interrupted: bool,
    /// txn-mixed: the row's reads and writes apart (absent for the other operations)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classes: Option<Vec<ClassRow>>,
    /// `--find-max`: the row's capacity search (its other figures are the run at the answer:
    /// the confirmation, or the best step)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityCell>,
}

/// A row's capacity search, in short (the whole search is in a run's report).
#[derive(Debug, Clone, Serialize)]
pub struct CapacityCell {
    /// the highest rate that met every objective (null: none did)
    pub answer_rps: Option<f64>,
    /// the lowest rate that broke one (null: none did)
    pub broken_rps: Option<f64>,
    pub ending: crate::report::capacity::Ending,
    pub steps: usize,
    /// every confirmation at the answer met the objectives
    pub confirmed: bool,
    pub requests: u64,
}

impl CapacityCell {
    fn of(c: &crate::report::capacity::Capacity) -> CapacityCell {
        CapacityCell {
            answer_rps: c.answer_rps,
            broken_rps: c.broken_rps,
            ending: c.ending,
            steps: c.steps.len(),
            confirmed: c.confirmed(),
            requests: c.requests,
        }
    }

    /// The answer in a table cell: "1234", with "≥" when it is a floor, "-" without one.
    fn cell(&self) -> String {
        use crate::report::capacity::Ending;
        match (self.answer_rps, self.ending) {
            (None, _) => "-".into(),
            (Some(a), Ending::ClientBound | Ending::RateCeiling) => format!("≥{a:.0}"),
            (Some(a), _) => format!("{a:.0}"),
        }
    }
}

/// One class of a txn-mixed row (reads, writes), over the row's measured window.
#[derive(Debug, Clone, Serialize)]
pub struct ClassRow {
    pub class: &'static str,
    pub count: u64,
    pub ok: u64,
    pub failed: u64,
    pub qps: Option<f64>,
    /// of the class's successful requests (null: none)
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

/// One run of the sweep: its link (an index into `links`), target, key size, clients,
/// connections and protocol.
#[derive(Debug, Clone, Copy)]
struct Cell {
    link: usize,
    target: Target,
    key_size: usize,
    clients: usize,
    conns: usize,
    proto: Proto,
}

/// Rows in etcd's table order: link, target, key size, clients, then connections and protocol
/// (HTTP/1.1 in the first connection count's rows only: it has a connection per client).
fn cells(s: &SweepConfig) -> Vec<Cell> {
    let mut v = Vec::new();
    for link in 0..s.links.len().max(1) {
        for &target in &s.targets {
            for &key_size in &s.key_sizes {
                for &clients in &s.clients {
                    let counts = crate::config::axes::connection_counts(&s.conns, clients);
                    for (i, &conns) in counts.iter().enumerate() {
                        for &proto in &s.protos {
                            if i > 0 && proto == Proto::Http {
                                continue;
                            }
                            v.push(Cell {
                                link,
                                target,
                                key_size,
                                clients,
                                conns,
                                proto,
                            });
                        }
                    }
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
        SweepOp::TxnMixed {
            val_size,
            key_space_size,
            rw_ratio,
            limit,
            serializable,
        } => EtcdOp::TxnMixed(crate::config::TxnMixed {
            key_size,
            val_size,
            key_space_size,
            rw_ratio,
            limit,
            end_key: Vec::new(),
            serializable,
        }),
        SweepOp::LeaseKeepalive { ttl } => EtcdOp::LeaseKeepalive { ttl },
    }
}

/// The configuration of one cell: the base with the cell's dimensions.
fn cell(s: &SweepConfig, c: Cell) -> Config {
    let base = &s.base;
    let conns = c.conns.min(c.clients).max(1);
    Config {
        load: Load {
            clients: c.clients,
            conns,
            ..base.load.clone()
        },
        h2: base.h2.for_streams(c.clients.div_ceil(conns)),
        protos: vec![c.proto],
        target: c.target,
        spec: WorkloadSpec::Etcd(op_for(s, c.key_size)),
        link: s.links.get(c.link).cloned().flatten(),
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
    let value = ops::put_value(&mut Rng::new(base.seed), val_size);
    let dial = client::Dial {
        ep: &base.endpoints[0],
        proto: Proto::Grpc,
        net: &base.net,
        h2: &base.h2,
    };
    client::put(dial, token, &key, &value, base.load.timeout)
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
            "wirebench sweep: {i}/{n} {}{} clients, {}, {}: {} req/s, p90 {} ms{}",
            if r.keyed {
                format!("key {} B, ", r.key_size)
            } else {
                String::new()
            },
            r.clients,
            r.target,
            r.proto,
            num(r.qps, 0),
            num(r.p90_ms, 2),
            if r.failed > 0 {
                format!(", {} failed", r.failed)
            } else {
                String::new()
            }
        );
    })?;
    if super::interrupted() && rows.iter().all(|r| r.count == 0) {
        return Err(RunError::Interrupted);
    }
    emit(s.output.as_deref(), &render(s, &rows))?;
    let empty: Vec<_> = rows.iter().filter(|r| r.ok == 0).collect();
    if let Some(r) = empty.first() {
        eprintln!(
            "error: {} of {} rows had no successful request (first: {}{} clients, {}, {})",
            empty.len(),
            rows.len(),
            if r.keyed {
                format!("key {} B, ", r.key_size)
            } else {
                String::new()
            },
            r.clients,
            r.target,
            r.proto
        );
        return Ok(exit::FAILURE);
    }
    Ok(super::stacks::judge(&s.base.thresholds, broken.into_iter()))
}

/// Runs every cell in turn, with the etcd auth `token`; `progress` hears about each finished row.
/// Every row's broken `--fail-if` thresholds go into `broken`.
pub fn run(
    s: &SweepConfig,
    token: Option<&str>,
    broken: &mut Vec<crate::report::verdict::Broken>,
    mut progress: impl FnMut(usize, usize, &Row),
) -> Result<Vec<Row>, RunError> {
    let cells = cells(s);
    let mut rows = Vec::with_capacity(cells.len());
    let mut written: Vec<usize> = Vec::new();
    let clock = prepare::server_clock(&s.base)?;
    for (i, &c) in cells.iter().enumerate() {
        let Cell {
            target,
            key_size,
            clients,
            proto,
            ..
        } = c;
        if super::interrupted() {
            break;
        }
        if let SweepOp::Range { val_size, .. } = s.op
            && !written.contains(&key_size)
        {
            write_range_key(s, token, key_size, val_size)?;
            written.push(key_size);
        }
        let cfg = cell(s, c);
        let prepared = prepare::prepare_row(&cfg, token, clock)?;
        let (run, capacity) = match &cfg.capacity {
            Some(spec) => {
                let found =
                    super::capacity::search(&cfg, &prepared, proto, spec, spec.max_duration)?;
                // Ctrl-C before its first step: the row is not there
                let Some(run) = found.run else { break };
                (run, Some(CapacityCell::of(&found.capacity)))
            }
            None => (
                prepared.run_proto(&cfg, proto).map_err(RunError::Setup)?,
                None,
            ),
        };
        let r = RunReport::from_run(&run, &prepared.endpoints, &prepared.roles, false);
        let keyed = !matches!(s.op, SweepOp::LeaseKeepalive { .. });
        let row_name = format!(
            "the row of {}{clients} clients, {}, ",
            if keyed {
                format!("key {key_size} B, ")
            } else {
                String::new()
            },
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
            keyed,
            clients,
            target: target.name(),
            proto: proto.name(),
            link: cfg.link.as_ref().map(ToString::to_string),
            endpoints: prepared.endpoints.iter().map(|e| e.url.clone()).collect(),
            connections: w.connections_opened,
            count: r.summary.count,
            ok: r.summary.ok,
            failed: r.summary.failed,
            qps: r.summary.requests_per_sec,
            p50_ms: r.percentile_ms(50.0),
            p90_ms: r.percentile_ms(90.0),
            p99_ms: r.percentile_ms(99.0),
            bytes_per_op: plus(w.bytes_out_per_request, w.bytes_in_per_request),
            packets_per_op: plus(w.segments_out_per_request, w.segments_in_per_request),
            syscalls_per_op: cost.syscalls_per_request,
            context_switches_per_op: cost.context_switches_per_request,
            client_cpu_us_per_op: cost.client_cpu_us_per_request,
            server_cpu_us_per_op: cost.server_cpu_us_per_request,
            classes: r.classes.as_ref().map(|cs| {
                cs.iter()
                    .map(|c| ClassRow {
                        class: c.class,
                        count: c.count,
                        ok: c.ok,
                        failed: c.failed,
                        qps: c.requests_per_sec,
                        p50_ms: crate::report::percentile_in(&c.latency_distribution, 50.0),
                        p90_ms: crate::report::percentile_in(&c.latency_distribution, 90.0),
                        p99_ms: crate::report::percentile_in(&c.latency_distribution, 99.0),
                    })
                    .collect()
            }),
            latency_hdr: r.histograms.latency.clone(),
            interrupted: r.interrupted,
            capacity,
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
        SweepOp::TxnMixed {
            val_size,
            key_space_size,
            rw_ratio,
            limit,
            serializable,
        } => format!(
            "etcd txn-mixed, {rw_ratio} reads per write; writes: value {val_size} B, \
             {key_space_size} key(s); reads: every key, limit {limit}, {}",
            if serializable {
                "serializable"
            } else {
                "linearizable"
            }
        ),
        SweepOp::LeaseKeepalive { ttl } => {
            format!("etcd lease-keepalive, one lease per client (TTL {ttl} s)")
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
    let stop = match (&s.base.capacity, s.base.load.stop) {
        (Some(c), _) => format!(
            "capacity per row: --find-max {}, steps of {:?} after {:?}, precision {}%",
            c.objectives
                .iter()
                .map(|t| t.text.as_str())
                .collect::<Vec<_>>()
                .join(" --find-max "),
            c.step,
            c.settle,
            c.precision * 100.0
        ),
        (None, Stop::Total(n)) => format!("{n} requests per row"),
        (None, Stop::Duration(d)) => format!("{:?} per row", d),
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
        if r.keyed {
            r.key_size.to_string()
        } else {
            "-".into()
        },
        r.clients.to_string(),
        r.target.to_string(),
        Proto::title(if r.proto == "http" {
            Proto::Http
        } else {
            Proto::Grpc
        })
        .to_string(),
        num(r.qps, 0),
        num(r.p90_ms, 2),
        num(r.p99_ms, 2),
        num(r.bytes_per_op, 1),
        num(r.packets_per_op, 2),
        num(r.syscalls_per_op, 2),
        num(r.client_cpu_us_per_op, 1),
        r.failed.to_string(),
    ]
}

/// txn-mixed: the classes the rows show apart (read, write), from the first row with them.
fn class_names(rows: &[Row]) -> Vec<&'static str> {
    rows.iter()
        .find_map(|r| r.classes.as_ref())
        .map_or_else(Vec::new, |cs| cs.iter().map(|c| c.class).collect())
}

/// A row's figure `f` of class `name` (empty when the row has no such class).
fn class_cell(r: &Row, name: &str, f: impl Fn(&ClassRow) -> String) -> String {
    r.classes
        .iter()
        .flatten()
        .find(|c| c.class == name)
        .map_or_else(String::new, f)
}

pub fn markdown(s: &SweepConfig, rows: &[Row]) -> String {
    let with_server = rows.iter().any(|r| r.server_cpu_us_per_op.is_some());
    let with_capacity = rows.iter().any(|r| r.capacity.is_some());
    let classes = class_names(rows);
    // --links / several --conns: the row's path before etcd's columns
    let paths = rows.iter().any(|r| r.link.is_some()) || s.conns.len() > 1;
    let lead = if paths { 2 } else { 0 };
    let mut head: Vec<String> = Vec::new();
    if paths {
        head.extend(["link".to_string(), "conns".to_string()]);
    }
    head.extend(COLUMNS.iter().map(|c| c.to_string()));
    if with_server {
        head.push("server CPU µs/op".into());
    }
    if with_capacity {
        head.extend(["capacity req/s".into(), "search".into()]);
    }
    // txn-mixed: each class's QPS and p99 after the row's own columns
    for name in &classes {
        head.push(format!("{name} QPS"));
        head.push(format!("{name} p99 ms"));
    }
    let mut out = String::new();
    let _ = writeln!(out, "<!-- {} -->", describe(s));
    let _ = writeln!(out, "| {} |", head.join(" | "));
    let _ = writeln!(
        out,
        "|{}|",
        head.iter()
            .enumerate()
            .map(|(i, _)| if i < 4 + lead { "---" } else { "---:" })
            .collect::<Vec<_>>()
            .join("|")
    );
    for r in rows {
        let mut c: Vec<String> = Vec::new();
        if paths {
            c.push(r.link.clone().unwrap_or_else(|| "none".into()));
            c.push(r.connections.to_string());
        }
        c.extend(cells_of(r));
        if with_server {
            c.push(num(r.server_cpu_us_per_op, 1));
        }
        if with_capacity {
            let cap = r.capacity.as_ref();
            c.push(cap.map_or_else(|| "-".into(), CapacityCell::cell));
            c.push(cap.map_or_else(String::new, |k| {
                format!("{} steps, {}", k.steps, ending_word(k))
            }));
        }
        for name in &classes {
            c.push(class_cell(r, name, |k| num(k.qps, 0)));
            c.push(class_cell(r, name, |k| num(k.p99_ms, 2)));
        }
        let _ = writeln!(out, "| {} |", c.join(" | "));
    }
    if super::interrupted() {
        let _ = writeln!(
            out,
            "\nInterrupted (Ctrl-C) after {} rows{}.",
            rows.len(),
            if rows.last().is_some_and(|r| r.interrupted) {
                ", the last cut short"
            } else {
                ""
            }
        );
    }
    out
}

/// A row's search's ending in one word or two, for a table.
fn ending_word(k: &CapacityCell) -> &'static str {
    use crate::report::capacity::Ending;
    match k.ending {
        Ending::Converged if k.confirmed => "confirmed",
        Ending::Converged => "unconfirmed",
        Ending::ClientBound => "client-bound",
        Ending::NoneMet => "none met",
        Ending::Steps => "step bound",
        Ending::Time => "time bound",
        Ending::RateCeiling => "rate ceiling",
        Ending::Interrupted => "interrupted",
    }
}

pub fn csv(rows: &[Row]) -> String {
    let classes = class_names(rows);
    let with_capacity = rows.iter().any(|r| r.capacity.is_some());
    let mut out = String::from(
        "key_size,clients,target,proto,qps,p50_ms,p90_ms,p99_ms,bytes_per_op,packets_per_op,syscalls_per_op,context_switches_per_op,client_cpu_us_per_op,server_cpu_us_per_op,count,ok,failed,connections,link",
    );
    if with_capacity {
        out.push_str(",capacity_rps,capacity_broken_rps,capacity_search");
    }
    // txn-mixed: each class's count, QPS and percentiles at the end of the line
    for name in &classes {
        for col in ["count", "ok", "failed", "qps", "p50_ms", "p90_ms", "p99_ms"] {
            let _ = write!(out, ",{name}_{col}");
        }
    }
    out.push('\n');
    for r in rows {
        let _ = write!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.key_size,
            r.clients,
            r.target,
            r.proto,
            show::csv(r.qps, 1),
            show::csv(r.p50_ms, 3),
            show::csv(r.p90_ms, 3),
            show::csv(r.p99_ms, 3),
            show::csv(r.bytes_per_op, 1),
            show::csv(r.packets_per_op, 3),
            show::csv(r.syscalls_per_op, 3),
            show::csv(r.context_switches_per_op, 4),
            show::csv(r.client_cpu_us_per_op, 2),
            show::csv(r.server_cpu_us_per_op, 2),
            r.count,
            r.ok,
            r.failed,
            r.connections,
            r.link.as_deref().unwrap_or("none")
        );
        if with_capacity {
            match &r.capacity {
                Some(k) => {
                    let _ = write!(
                        out,
                        ",{},{},{}",
                        show::csv(k.answer_rps, 1),
                        show::csv(k.broken_rps, 1),
                        ending_word(k)
                    );
                }
                None => out.push_str(",,,"),
            }
        }
        for name in &classes {
            let cell = class_cell(r, name, |k| {
                format!(
                    "{},{},{},{},{},{},{}",
                    k.count,
                    k.ok,
                    k.failed,
                    show::csv(k.qps, 1),
                    show::csv(k.p50_ms, 3),
                    show::csv(k.p90_ms, 3),
                    show::csv(k.p99_ms, 3)
                )
            });
            if cell.is_empty() {
                out.push_str(",,,,,,,");
            } else {
                let _ = write!(out, ",{cell}");
            }
        }
        out.push('\n');
    }
    out
}

pub fn json(s: &SweepConfig, rows: &[Row]) -> String {
    let v = serde_json::json!({
        "schema": "wirebench.sweep.v2",
        "version": env!("CARGO_PKG_VERSION"),
        "workload": describe(s),
        "endpoints": s.base.endpoints.iter().map(|e| e.url.clone()).collect::<Vec<_>>(),
        "interrupted": super::interrupted(),
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
            link: None,
            key_size: 64,
            keyed: true,
            clients,
            target: "leader",
            proto,
            endpoints: vec!["http://127.0.0.1:2379".into()],
            connections: 1,
            count: 100,
            ok: 100,
            failed: 0,
            qps: Some(1534.4),
            p50_ms: Some(0.5),
            p90_ms: Some(0.7),
            p99_ms: Some(1.25),
            bytes_per_op: Some(200.0),
            packets_per_op: Some(2.0),
            syscalls_per_op: Some(3.5),
            context_switches_per_op: None,
            client_cpu_us_per_op: Some(20.0),
            server_cpu_us_per_op: None,
            classes: None,
            latency_hdr: String::new(),
            interrupted: false,
            capacity: None,
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

    #[test]
    fn txn_mixed_rows_show_reads_and_writes_apart() {
        use clap::Parser as _;
        let class = |class, qps, p99_ms| ClassRow {
            class,
            count: 50,
            ok: 50,
            failed: 0,
            qps: Some(qps),
            p50_ms: Some(0.5),
            p90_ms: Some(0.75),
            p99_ms: Some(p99_ms),
        };
        let mut mixed = row(4, "grpc");
        mixed.classes = Some(vec![
            class("read", 1200.4, 1.5),
            class("write", 400.6, 2.25),
        ]);
        let mut lease = row(4, "grpc");
        (lease.key_size, lease.keyed) = (0, false);
        let text = csv(&[mixed.clone()]);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].ends_with(
                ",read_count,read_ok,read_failed,read_qps,read_p50_ms,read_p90_ms,read_p99_ms,\
                 write_count,write_ok,write_failed,write_qps,write_p50_ms,write_p90_ms,write_p99_ms"
            ),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].ends_with(",50,50,0,1200.4,0.500,0.750,1.500,50,50,0,400.6,0.500,0.750,2.250"),
            "{}",
            lines[1]
        );
        assert_eq!(lines[0].split(',').count(), lines[1].split(',').count());
        // no key: 0 in CSV and JSON, a dash in markdown
        assert!(
            csv(&[lease.clone()])
                .lines()
                .nth(1)
                .unwrap()
                .starts_with("0,4,leader,grpc,")
        );
        let cfg = crate::cli::Cli::try_parse_from(["wirebench", "sweep", "etcd", "txn-mixed"])
            .unwrap()
            .into_action()
            .unwrap();
        let crate::app::Action::Sweep(cfg) = cfg else {
            panic!("a sweep");
        };
        let md = markdown(&cfg, &[mixed, lease]);
        let head = md.lines().nth(1).unwrap();
        assert!(
            head.ends_with("| read QPS | read p99 ms | write QPS | write p99 ms |"),
            "{head}"
        );
        let mixed_line = md.lines().nth(3).unwrap();
        assert!(
            mixed_line.ends_with("| 1200 | 1.50 | 401 | 2.25 |"),
            "{mixed_line}"
        );
        let lease_line = md.lines().nth(4).unwrap();
        assert!(lease_line.starts_with("| - | 4 |"), "{lease_line}");
    }
}
