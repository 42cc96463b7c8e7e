#!/usr/bin/env python3
"""Decodes the histograms of a wirebench JSON report with HdrHistogram_py (PyPI: hdrhistogram),
an implementation independent of the Rust crate wirebench uses, and prints what it finds.

Usage: hdr_check.py REPORT.json
       hdr_check.py --merge REPORT.json...

Prints one JSON object: per run, each histogram's total count, its lowest and highest recorded
buckets, and the value at each percentile of the report's `latency_distribution`, in nanoseconds, computed two ways from the
decoded counts:

- "ceil": the rank HdrHistogram's Java reference and the Rust crate use (wirebench's): the
  smallest value whose cumulative count reaches ceil(q * total), q = percentile / 100;
- "library": HdrHistogram_py's own get_value_at_percentile, which rounds q * total to the
  nearest integer instead (one request lower when the fraction of q * total is below one half);
- "nearest": that rounded rank by the same walk as "ceil", which "library" should equal.

With --merge, the latency histograms of the first run of every report are decoded and added
together (HdrHistogram_py's add), and the sum is described the same way, under "merged".

Exits 1 with a message when a histogram does not decode.
"""

import json
import math
import sys

from hdrh.histogram import HdrHistogram


def value_at(h, q):
    """The value at quantile q with the rank ceil(q * total) (at least 1)."""
    return value_at_rank(h, max(1, math.ceil(q * h.get_total_count())), q)


def value_at_rank(h, rank, q):
    """The value of the request of rank `rank` (1-based), as HdrHistogram reports it: the
    highest value equivalent to its bucket (the lowest for q = 0)."""
    seen = 0
    for i in range(h.counts_len):
        seen += h.get_count_at_index(i)
        if seen >= rank:
            v = h.get_value_from_index(i)
            return h.get_highest_equivalent_value(v) if q > 0 else h.get_lowest_equivalent_value(v)
    return 0


def describe(text, percentiles):
    return describe_histogram(HdrHistogram.decode(text), percentiles)


def describe_histogram(h, percentiles):
    total = h.get_total_count()
    return {
        "total": total,
        "lowest_trackable": h.lowest_trackable_value,
        "highest_trackable": h.highest_trackable_value,
        "significant_figures": h.significant_figures,
        # from the decoded counts: the first and the last bucket holding a value (the library's
        # own min / max tracking is not used)
        "lowest_recorded": value_at(h, 0.0) if total else None,
        "highest_recorded": value_at(h, 1.0) if total else None,
        "ceil": [value_at(h, p / 100.0) if total else 0 for p in percentiles],
        # the rank rounded to nearest, by the same walk: what "library" should equal
        "nearest": [
            value_at_rank(h, max(1, int(p / 100.0 * total + 0.5)), p / 100.0) if total else 0
            for p in percentiles
        ],
        "library": [h.get_value_at_percentile(p) if total else 0 for p in percentiles],
    }


def merge(paths):
    total = None
    percentiles = None
    for path in paths:
        with open(path, encoding="utf-8") as f:
            run = json.load(f)["runs"][0]
        percentiles = percentiles or [p["percentile"] for p in run["latency_distribution"]]
        h = HdrHistogram.decode(run["histograms"]["latency"])
        if total is None:
            total = h
        else:
            total.add(h)
    json.dump({"merged": describe_histogram(total, percentiles)}, sys.stdout)
    print()


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--merge":
        merge(sys.argv[2:])
        return
    if len(sys.argv) != 2:
        sys.exit("usage: hdr_check.py REPORT.json | --merge REPORT.json...")
    with open(sys.argv[1], encoding="utf-8") as f:
        report = json.load(f)
    out = []
    for run in report["runs"]:
        percentiles = [p["percentile"] for p in run["latency_distribution"]]
        hists = run["histograms"]
        found = {"proto": run["proto"], "percentiles": percentiles}
        try:
            found["latency"] = describe(hists["latency"], percentiles)
            if hists.get("uncorrected_latency"):
                found["uncorrected_latency"] = describe(hists["uncorrected_latency"], percentiles)
            if hists.get("connect"):
                found["connect"] = describe(hists["connect"], percentiles)
            found["per_endpoint"] = [describe(t, percentiles) for t in hists["per_endpoint"]]
        except Exception as e:  # a histogram that does not decode: say which and why
            sys.exit(f"{sys.argv[1]}: run {run['proto']}: cannot decode: {e}")
        out.append(found)
    json.dump({"runs": out}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
