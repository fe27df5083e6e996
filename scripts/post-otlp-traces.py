#!/usr/bin/env python3
"""Posts T traces of S spans each to an OTLP/HTTP receiver as OTLP/JSON, one request a trace:
trace t (1-based) lasts t ms, its spans form a tree 10 wide under the root. Used to measure
serve's slow traces (docs/SERVE.md, "Slow traces: the live Waterfall").

    python3 scripts/post-otlp-traces.py PORT T S
"""
import json
import sys
import urllib.request


def main():
    port, traces, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    for t in range(traces):
        base = 1_700_000_000_000_000_000 + t * 10**9
        dur = (t + 1) * 1_000_000
        spans = []
        for i in range(size):
            span = {"traceId": "%032x" % (t + 1), "spanId": "%016x" % (t * size + i + 1),
                    "name": "op%d" % (i % 20),
                    "startTimeUnixNano": str(base + i * 100),
                    "endTimeUnixNano": str(base + dur - i * 100)}
            if i:  # the parent: the root for the first 10, then span (i // 10) of this trace
                span["parentSpanId"] = "%016x" % (t * size + (i // 10 if i >= 10 else 0) + 1)
            spans.append(span)
        body = json.dumps({"resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
            "scopeSpans": [{"spans": spans}]}]}).encode()
        req = urllib.request.Request("http://127.0.0.1:%d/v1/traces" % port, body,
                                     {"Content-Type": "application/json"})
        urllib.request.urlopen(req).read()


if __name__ == "__main__":
    main()
