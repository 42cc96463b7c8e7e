//! A sweep's path axes: its connection counts and its links, as the rows take them.

use wirebench_link::spec::{LinkSpec, SpecError};

/// A sweep's connection counts for `clients`: each capped at the clients (a count above them is
/// one stream per connection), each once, in the order given.
pub fn connection_counts(conns: &[usize], clients: usize) -> Vec<usize> {
    let mut counts: Vec<usize> = Vec::new();
    for &c in conns {
        let c = c.min(clients.max(1));
        if !counts.contains(&c) {
            counts.push(c);
        }
    }
    counts
}

/// A sweep's `--links`: the specs, `none` (or a spec that changes nothing) as no link; one
/// `None` (loopback) without the flag.
pub fn links_axis(links: Option<&str>) -> Result<Vec<Option<LinkSpec>>, SpecError> {
    let Some(s) = links else {
        return Ok(vec![None]);
    };
    Ok(wirebench_link::spec::parse_list(s)?
        .into_iter()
        .map(|l| (!l.is_passthrough()).then_some(l))
        .collect())
}
