#!/usr/bin/env python3
"""Generates request traces the way Jaeger's query API (`{"data": [trace, ...]}`) or the
OpenTelemetry collector's file exporter (OTLP/JSON, one request per line) writes them, for
measuring `snailtrail critical-path` at scale (docs/PERFORMANCE.md, "Span traces").

Each trace is a checkout request over 13 services: frontend -> checkout -> cart, pricing
(fan-out per item), inventory (fan-out per item, each with a db query), payment ->
fraud, shipping, currency, recommendation, ad, plus an async email (a producer/consumer
pair over a queue that outlives the request). Pods carry their own clock skew (a child
can start before its parent). Deterministic: same arguments, same bytes.

  gen-spans.py --traces 1000 -o t1k.json                 # Jaeger, ~250 spans a trace
  gen-spans.py --traces 1 --items 40000 -o huge.json     # one trace, ~1 M spans
  gen-spans.py --traces 1000 --format otlp -o t1k.otlp.jsonl --batch 512
"""
import argparse
import json
import random
import sys

SERVICES = ["frontend", "checkout", "cart", "pricing", "inventory", "inventory-db", "payment",
            "fraud", "shipping", "currency", "recommendation", "ad", "email"]
T0 = 1_700_000_000_000_000  # µs


class Trace:
    def __init__(self, rng, tid, items, pods):
        self.rng = rng
        self.tid = tid
        self.spans = []  # (span_id, parent_id, ref_type, service, pod, op, kind, start, dur)
        self.pods = pods
        self.next_id = 1
        self.items = items

    def span(self, parent, service, op, kind, start, dur, ref="CHILD_OF"):
        sid = "%016x" % (self.tid * 0x100000 + self.next_id)
        self.next_id += 1
        pod = self.rng.randrange(3)
        skew = self.pods[(service, pod)]
        self.spans.append((sid, parent, ref, service, pod, op, kind, start + skew, max(dur, 1)))
        return sid

    def build(self, t):
        r = self.rng
        n_items = self.items if self.items else r.randint(3, 90)
        total = 0
        root = self.span(None, "frontend", "GET /checkout", "server", t, 0)
        root_index = len(self.spans) - 1
        c = t + r.randint(50, 200)
        call = self.span(root, "frontend", "POST checkout/PlaceOrder", "client", c, 0)
        call_index = len(self.spans) - 1
        srv = self.span(call, "checkout", "PlaceOrder", "server", c + r.randint(20, 90), 0)
        srv_index = len(self.spans) - 1
        p = self.spans[-1][7] + r.randint(10, 50)
        cart = self.span(srv, "cart", "GetCart", "server", p, r.randint(300, 2000))
        p += self.spans[-1][8] + r.randint(5, 30)
        # Fan-out: per item a price lookup and a reservation (with its db query), in
        # parallel batches of 8.
        for b in range(0, n_items, 8):
            batch_end = p
            for i in range(b, min(n_items, b + 8)):
                s = p + r.randint(0, 80)
                d = r.randint(200, 1500)
                self.span(srv, "pricing", "GetPrice", "server", s, d)
                s2 = p + r.randint(0, 80)
                d2 = r.randint(400, 3000) + (r.randint(0, 40000) if r.random() < 0.02 else 0)
                inv = self.span(srv, "inventory", "Reserve", "server", s2, d2)
                q0 = s2 + r.randint(20, 100)
                self.span(inv, "inventory-db", "SELECT stock", "client", q0,
                          min(d2 - 120, r.randint(100, d2)))
                batch_end = max(batch_end, s + d, s2 + d2)
            p = batch_end + r.randint(5, 40)
        cur = self.span(srv, "currency", "Convert", "server", p, r.randint(100, 600))
        p += self.spans[-1][8] + r.randint(5, 30)
        pay = self.span(srv, "payment", "Charge", "server", p, 0)
        pay_index = len(self.spans) - 1
        f0 = p + r.randint(20, 80)
        fd = r.randint(500, 5000)
        self.span(pay, "fraud", "Score", "server", f0, fd)
        pend = f0 + fd + r.randint(100, 900)
        self._set_dur(pay_index, pend - p)
        p = pend + r.randint(5, 30)
        ship = self.span(srv, "shipping", "Quote", "server", p, r.randint(300, 2500))
        p += self.spans[-1][8] + r.randint(5, 30)
        # Async: the confirmation email goes through a queue and outlives the request.
        prod = self.span(srv, "checkout", "publish order-confirmed", "producer", p,
                         r.randint(50, 200))
        self.span(prod, "email", "SendConfirmation", "consumer",
                  p + r.randint(1000, 20000), r.randint(2000, 30000), ref="FOLLOWS_FROM")
        p += r.randint(60, 250)
        self._set_dur(srv_index, p - self.spans[srv_index][7] + r.randint(10, 40))
        p = self.spans[srv_index][7] + self.spans[srv_index][8] + r.randint(10, 60)
        self._set_dur(call_index, p - c)
        rec = self.span(root, "recommendation", "ListRecommendations", "server",
                        c + r.randint(0, 500), r.randint(1000, 8000))
        self.span(root, "ad", "GetAds", "server", c + r.randint(0, 500), r.randint(500, 4000))
        end = max(p, self.spans[-1][7] + self.spans[-1][8]) + r.randint(50, 300)
        self._set_dur(root_index, end - t)
        del cart, cur, ship, rec, total
        return end

    def _set_dur(self, i, d):
        s = list(self.spans[i])
        s[8] = max(d, 1)
        self.spans[i] = tuple(s)


def tags(rng, kind, service, op):
    t = [{"key": "span.kind", "type": "string", "value": kind},
         {"key": "component", "type": "string", "value": "grpc" if kind != "producer" else "kafka"},
         {"key": "otel.library.name", "type": "string", "value": "io.opentelemetry." + service}]
    if kind in ("server", "client"):
        t.append({"key": "rpc.method", "type": "string", "value": op})
        t.append({"key": "net.peer.port", "type": "int64", "value": rng.randint(30000, 60000)})
        t.append({"key": "http.status_code", "type": "int64", "value": 200})
    t.append({"key": "internal.span.format", "type": "string", "value": "otlp"})
    return t


def jaeger_trace(tr, rng):
    procs = {}
    pid_of = {}
    spans = []
    for (sid, parent, ref, service, pod, op, kind, start, dur) in tr.spans:
        key = (service, pod)
        if key not in pid_of:
            pid_of[key] = "p%d" % (len(pid_of) + 1)
            procs[pid_of[key]] = {
                "serviceName": service,
                "tags": [{"key": "hostname", "type": "string",
                          "value": "%s-7d9f%02d-%05x" % (service, pod, tr.tid % 99991)},
                         {"key": "ip", "type": "string", "value": "10.1.%d.%d" % (pod, len(pid_of))},
                         {"key": "jaeger.version", "type": "string", "value": "Go-2.30.0"}]}
        refs = [] if parent is None else [{"refType": ref, "traceID": "%032x" % tr.tid,
                                           "spanID": parent}]
        spans.append({"traceID": "%032x" % tr.tid, "spanID": sid, "operationName": op,
                      "references": refs, "startTime": start, "duration": dur,
                      "tags": tags(rng, kind, service, op), "logs": [],
                      "processID": pid_of[key], "warnings": None})
    return {"traceID": "%032x" % tr.tid, "spans": spans, "processes": procs, "warnings": None}


def otlp_lines(traces, rng, batch, out):
    # The collector batches finished spans across traces: interleave the traces' spans by
    # end time, cut into batches, group each batch by service (resource).
    pending = []
    for tr in traces:
        for s in tr.spans:
            pending.append((s[7] + s[8], tr.tid, s))
    pending.sort(key=lambda x: (x[0], x[1]))
    kinds = {"server": 2, "client": 3, "producer": 4, "consumer": 5, "internal": 1}
    for b in range(0, len(pending), batch):
        by_service = {}
        for (_, tid, (sid, parent, ref, service, pod, op, kind, start, dur)) in pending[b:b + batch]:
            span = {"traceId": "%032x" % tid, "spanId": sid, "parentSpanId": parent or "",
                    "name": op, "kind": kinds[kind],
                    "startTimeUnixNano": str(start * 1000), "endTimeUnixNano": str((start + dur) * 1000),
                    "attributes": [{"key": "rpc.method", "value": {"stringValue": op}}],
                    "status": {}}
            by_service.setdefault(service, []).append(span)
        req = {"resourceSpans": [
            {"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": s}}]},
             "scopeSpans": [{"scope": {"name": "io.opentelemetry." + s}, "spans": sp}]}
            for s, sp in by_service.items()]}
        out.write(json.dumps(req, separators=(",", ":")))
        out.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", type=int, default=1000)
    ap.add_argument("--items", type=int, default=0, help="cart items per trace (0: random 3-90)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--format", choices=["jaeger", "otlp"], default="jaeger")
    ap.add_argument("--batch", type=int, default=512, help="otlp: spans per line")
    ap.add_argument("-o", "--output", default="-")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    pods = {(s, p): rng.randint(-400, 400) for s in SERVICES for p in range(3)}
    out = sys.stdout if a.output == "-" else open(a.output, "w")
    t = T0
    if a.format == "jaeger":
        out.write('{"data": [')
        for i in range(a.traces):
            tr = Trace(rng, i + 1, a.items, pods)
            tr.build(t)
            t += rng.randint(100, 5000)
            if i:
                out.write(", ")
            out.write(json.dumps(jaeger_trace(tr, rng)))
        out.write('], "total": 0, "limit": 0, "offset": 0, "errors": null}\n')
    else:
        traces = []
        for i in range(a.traces):
            tr = Trace(rng, i + 1, a.items, pods)
            tr.build(t)
            t += rng.randint(100, 5000)
            traces.append(tr)
        otlp_lines(traces, rng, a.batch, out)
    if out is not sys.stdout:
        out.close()


if __name__ == "__main__":
    main()
