//! The window's cost and the connections' counters of several runs: every count summed, every
//! per-request figure divided again by the summed requests its own figure names.

use super::InRun;
use super::combine::sum_all;
use crate::report::derive::{CostCounts, H3Sums, OnWire, per};
use crate::report::{CloseTotals, Cost, LayerTotals, Wire, sum_known};
use crate::stats::{Duplex, Http1Counts, IoCalls, TlsCounts};
use wirebench_wire::h2::counts::H2Counts;

/// The window's cost: the numerators summed and divided by the summed requests written. The
/// server's CPU stays per agent: each agent read it over its own window, so their sum would
/// count a server shared by the agents more than once.
pub(super) fn merge_cost(runs: &[&InRun], files: &[&str]) -> Cost {
    let syscalls = sum_all(runs, |r| r.cost.syscalls);
    let mut io = IoCalls::default();
    for r in runs {
        io = io.plus(r.cost.data_calls);
    }
    let kernel_unavailable = files.iter().zip(runs).find_map(|(f, r)| {
        r.cost
            .kernel_counters_unavailable
            .as_ref()
            .map(|why| format!("{f}: {why}"))
    });
    let server_measured = runs.iter().any(|r| r.cost.server_cpu_ns.is_some());
    CostCounts {
        requests: runs.iter().map(|r| r.cost.requests).sum(),
        user_us: runs.iter().map(|r| r.cost.client_cpu_user_us).sum(),
        sys_us: runs.iter().map(|r| r.cost.client_cpu_sys_us).sum(),
        syscalls,
        context_switches: sum_all(runs, |r| r.cost.context_switches),
        instructions: sum_all(runs, |r| r.cost.instructions),
        cycles: sum_all(runs, |r| r.cost.cycles),
        kernel_unavailable: match syscalls {
            Some(_) => None,
            None => kernel_unavailable.or_else(|| Some("an agent did not count them".into())),
        },
        syscalls_outside: sum_all(runs, |r| r.cost.syscalls_outside_window),
        context_switches_outside: sum_all(runs, |r| r.cost.context_switches_outside_window),
        io,
        server_cpu_ns: None,
        server_cpu_error: server_measured.then(|| {
            "per agent only (each read the server's CPU over its own window; see the agents' rows)"
                .to_string()
        }),
        client_loop: runs
            .iter()
            .map(|r| r.cost.client_loop.clone())
            .reduce(|a, b| if a == b { a } else { None })
            .flatten(),
    }
    .cost()
}

/// The connections' figures: every count summed, every ratio divided again by the summed
/// requests its own figure names.
pub(super) fn merge_wire(runs: &[&InRun]) -> Wire {
    let sum = |f: &dyn Fn(&Wire) -> u64| runs.iter().map(|r| f(&r.wire)).sum::<u64>();
    let requests = sum(&|w| w.requests_on_wire);
    let tcp_requests = sum(&|w| w.requests_with_tcp_info);
    let opened = sum(&|w| w.connections_opened);
    let (bytes_out, bytes_in) = (sum(&|w| w.bytes_out), sum(&|w| w.bytes_in));
    let (hdr_out, hdr_in) = (
        sum(&|w| w.ip_tcp_header_bytes_out),
        sum(&|w| w.ip_tcp_header_bytes_in),
    );
    let (segs_out, segs_in) = (sum(&|w| w.segments_out), sum(&|w| w.segments_in));
    let (data_out, data_in) = (sum(&|w| w.data_segments_out), sum(&|w| w.data_segments_in));
    let (write_calls, read_calls) = (sum(&|w| w.write_calls), sum(&|w| w.read_calls));
    // the known close segments summed, the unknown ones counted apart (as in a run)
    let close = CloseTotals {
        connections: sum(&|w| w.close.connections),
        drained: sum(&|w| w.close.drained),
        bytes_out: sum(&|w| w.close.bytes_out),
        bytes_in: sum(&|w| w.close.bytes_in),
        segments_out: sum_known(runs.iter().map(|r| r.wire.close.segments_out)),
        segments_in: sum_known(runs.iter().map(|r| r.wire.close.segments_in)),
        connections_without_segments: sum(&|w| w.close.connections_without_segments),
    };
    let layers = match runs
        .iter()
        .map(|r| r.wire.layers.as_ref())
        .collect::<Option<Vec<_>>>()
    {
        Some(l) => {
            let mut http1: Option<Http1Counts> = None;
            let mut h2: Option<Duplex<H2Counts>> = None;
            for x in &l {
                if let Some(c) = x.http1 {
                    *http1.get_or_insert_with(Default::default) += c;
                }
                if let Some(c) = x.h2 {
                    *h2.get_or_insert_with(Default::default) += c;
                }
            }
            let setup_out: u64 = l.iter().map(|x| x.setup_bytes_out).sum();
            let setup_in: u64 = l.iter().map(|x| x.setup_bytes_in).sum();
            Some(LayerTotals {
                http1,
                h2,
                setup_bytes_out: setup_out,
                setup_bytes_in: setup_in,
                bytes_out_per_request_after_setup: per(
                    bytes_out.saturating_sub(setup_out),
                    requests,
                ),
                bytes_in_per_request_after_setup: per(bytes_in.saturating_sub(setup_in), requests),
            })
        }
        None => None,
    };
    let tls = runs.iter().filter_map(|r| r.wire.tls).fold(None, |acc, t| {
        let mut a: TlsCounts = acc.unwrap_or_default();
        a += t;
        Some(a)
    });
    let (tcp_bytes_out, tcp_bytes_in) = (
        sum(&|w| w.bytes_out_with_tcp_info),
        sum(&|w| w.bytes_in_with_tcp_info),
    );
    // HTTP/3: the agents' sums added, every figure derived again from them
    let h3 = H3Sums::merged(runs.iter().map(|r| r.wire.h3.as_ref()));
    let on_wire = OnWire {
        tcp_requests,
        tcp_out: tcp_bytes_out + hdr_out,
        tcp_in: tcp_bytes_in + hdr_in,
        h3: h3.as_ref(),
    };
    Wire {
        connections_opened: opened,
        reconnects: sum(&|w| w.reconnects),
        connect_failures: sum(&|w| w.connect_failures),
        connect_error: runs.iter().rev().find_map(|r| r.wire.connect_error.clone()),
        requests_on_wire: requests,
        requests_per_connection: per(requests, opened),
        bytes_out,
        bytes_in,
        bytes_out_per_request: per(bytes_out, requests),
        bytes_in_per_request: per(bytes_in, requests),
        write_calls,
        read_calls,
        write_calls_per_request: per(write_calls, requests),
        read_calls_per_request: per(read_calls, requests),
        write_would_block: sum(&|w| w.write_would_block),
        read_would_block: sum(&|w| w.read_would_block),
        requests_with_tcp_info: tcp_requests,
        bytes_out_with_tcp_info: tcp_bytes_out,
        bytes_in_with_tcp_info: tcp_bytes_in,
        segments_out: segs_out,
        segments_in: segs_in,
        data_segments_out: data_out,
        data_segments_in: data_in,
        segments_out_per_request: per(segs_out, tcp_requests),
        segments_in_per_request: per(segs_in, tcp_requests),
        data_segments_out_per_request: per(data_out, tcp_requests),
        data_segments_in_per_request: per(data_in, tcp_requests),
        retransmits: sum(&|w| w.retransmits),
        connections_without_tcp_info: sum(&|w| w.connections_without_tcp_info),
        unix_socket_connections: sum(&|w| w.unix_socket_connections),
        ip_tcp_header_bytes_out: hdr_out,
        ip_tcp_header_bytes_in: hdr_in,
        wire_bytes_out_per_request: on_wire.per_request(true),
        wire_bytes_in_per_request: on_wire.per_request(false),
        close,
        layers,
        tls,
        h3: h3.map(H3Sums::figures),
    }
}
