//! The flags that send a run's results somewhere besides its report: live metrics, the
//! per-request log, the HTML page and the charts.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::error::ArgError;
use super::heading;
use crate::config::{Outputs, parse_duration};

/// The longest `--metrics-linger` accepted.
const MAX_LINGER: Duration = Duration::from_secs(24 * 3600);

#[derive(Debug, Args, Default)]
pub struct OutputArgs {
    /// Serve live figures as Prometheus text at http://HOST:PORT/metrics while the run goes
    /// (requests by stack and status, a latency histogram, bytes, syscalls, CPU, connections)
    #[arg(long, value_name = "HOST:PORT", help_heading = heading::OUTPUT)]
    pub metrics_addr: Option<String>,
    /// Keep serving --metrics-addr this long after the report is written (its figures are
    /// then the report's), e.g. 30s
    #[arg(
        long,
        value_parser = parse_duration,
        requires = "metrics_addr",
        value_name = "DURATION",
        help_heading = heading::OUTPUT
    )]
    pub metrics_linger: Option<Duration>,
    /// Write one CSV row per measured request to FILE: start offset, latency, stack, status,
    /// connection (local port), response bytes, error (as h2load --log-file, ghz's csv)
    #[arg(long, value_name = "FILE", help_heading = heading::OUTPUT)]
    pub log_requests: Option<PathBuf>,
    /// Write the report as one self-contained HTML page (tables and charts) to FILE
    #[arg(long, value_name = "FILE", help_heading = heading::OUTPUT)]
    pub html: Option<PathBuf>,
    /// Write the latency by percentile chart (every stack, log percentile axis to 99.999) as SVG
    #[arg(long, value_name = "FILE", help_heading = heading::OUTPUT)]
    pub latency_svg: Option<PathBuf>,
    /// Write the timeline chart (requests/s and p99 per second, every stack, stages marked)
    /// as SVG
    #[arg(long, value_name = "FILE", help_heading = heading::OUTPUT)]
    pub timeline_svg: Option<PathBuf>,
    /// With --find-max: the latency (p50, p99) of every step against its achieved rate, per
    /// stack, as SVG
    #[arg(long, value_name = "FILE", help_heading = heading::OUTPUT)]
    pub curve_svg: Option<PathBuf>,
}

/// `--metrics-addr`: an address with a port (`127.0.0.1:9090`, `[::1]:9090`, `localhost:9090`,
/// `:9090` for every address).
pub(super) fn parse_addr(s: &str) -> Result<SocketAddr, ArgError> {
    let bad = || ArgError::MetricsAddr(s.to_string());
    let s = s.trim();
    let full = if s.starts_with(':') {
        format!("0.0.0.0{s}")
    } else {
        s.to_string()
    };
    if let Ok(a) = full.parse::<SocketAddr>() {
        return Ok(a);
    }
    let (host, port) = full.rsplit_once(':').ok_or_else(bad)?;
    if host.is_empty() || port.parse::<u16>().is_err() {
        return Err(bad());
    }
    full.to_socket_addrs()
        .map_err(|source| ArgError::MetricsAddrLookup {
            addr: s.to_string(),
            source,
        })?
        .next()
        .ok_or_else(|| ArgError::MetricsAddrNone(s.to_string()))
}

impl OutputArgs {
    /// The outputs asked for; `find_max`: --find-max was given (--curve-svg draws its steps).
    pub(super) fn into_outputs(self, find_max: bool) -> Result<Outputs, ArgError> {
        if self.curve_svg.is_some() && !find_max {
            return Err(ArgError::Needed(
                "--curve-svg draws the steps of a capacity search: give --find-max OBJECTIVE",
            ));
        }
        let linger = self.metrics_linger.unwrap_or(Duration::ZERO);
        if linger > MAX_LINGER {
            return Err(ArgError::Linger(linger));
        }
        let files = [
            ("--log-requests", &self.log_requests),
            ("--html", &self.html),
            ("--latency-svg", &self.latency_svg),
            ("--timeline-svg", &self.timeline_svg),
            ("--curve-svg", &self.curve_svg),
        ];
        for (flag, f) in files {
            if let Some(p) = f
                && (p.as_os_str().is_empty() || p.is_dir())
            {
                return Err(ArgError::NotAFileName {
                    flag,
                    path: p.clone(),
                });
            }
        }
        let given: Vec<&PathBuf> = files.iter().filter_map(|(_, f)| f.as_ref()).collect();
        for (i, a) in given.iter().enumerate() {
            if given[..i].contains(a) {
                return Err(ArgError::SameFile(a.to_path_buf()));
            }
        }
        Ok(Outputs {
            metrics_addr: self.metrics_addr.as_deref().map(parse_addr).transpose()?,
            metrics_linger: linger,
            log_requests: self.log_requests,
            html: self.html,
            latency_svg: self.latency_svg,
            timeline_svg: self.timeline_svg,
            curve_svg: self.curve_svg,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_addresses() {
        assert_eq!(
            parse_addr("127.0.0.1:9090").unwrap(),
            "127.0.0.1:9090".parse().unwrap()
        );
        assert_eq!(
            parse_addr(":9100").unwrap(),
            "0.0.0.0:9100".parse().unwrap()
        );
        assert_eq!(parse_addr("[::1]:0").unwrap(), "[::1]:0".parse().unwrap());
        assert_eq!(parse_addr("localhost:9090").unwrap().port(), 9090);
        for bad in ["9090", "127.0.0.1", "127.0.0.1:99999", "host:port", ":", ""] {
            let e = parse_addr(bad).unwrap_err().to_string();
            assert!(e.starts_with("--metrics-addr"), "{bad}: {e}");
        }
    }

    #[test]
    fn one_file_per_output() {
        let args = OutputArgs {
            html: Some("r.html".into()),
            latency_svg: Some("r.html".into()),
            ..OutputArgs::default()
        };
        let e = args.into_outputs(false).unwrap_err().to_string();
        assert!(e.contains("two flags"), "{e}");
        let args = OutputArgs {
            timeline_svg: Some("r.svg".into()),
            curve_svg: Some("r.svg".into()),
            ..OutputArgs::default()
        };
        let e = args.into_outputs(true).unwrap_err().to_string();
        assert!(e.contains("two flags"), "{e}");
        let args = OutputArgs {
            log_requests: Some(std::env::temp_dir()),
            ..OutputArgs::default()
        };
        assert!(
            args.into_outputs(false)
                .unwrap_err()
                .to_string()
                .contains("a file name")
        );
    }

    #[test]
    fn the_curve_needs_a_search() {
        let curve = || OutputArgs {
            curve_svg: Some("c.svg".into()),
            ..OutputArgs::default()
        };
        let e = curve().into_outputs(false).unwrap_err().to_string();
        assert_eq!(
            e,
            "--curve-svg draws the steps of a capacity search: give --find-max OBJECTIVE"
        );
        let o = curve().into_outputs(true).expect("with --find-max");
        assert_eq!(o.curve_svg, Some("c.svg".into()));
        assert!(o.any());
    }
}
