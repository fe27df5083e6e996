#!/usr/bin/python3
# Writes a CTF trace shaped like an LTTng kernel trace, for the kernel-trace tests
# (tests/test_kernel_lttng.cpp), through babeltrace2's own CTF writer (sink.ctf.fs) fed
# by a Python source component (Debian python3-bt2). LTTng itself cannot run here.
#
# Usage: kernel_ctf_writer.py OUT_DIR < SPEC
# SPEC: one event per line, "TS_NS CPU EVENT_NAME key=value ...": an integer value
# becomes a signed 64-bit integer field, anything else a string (no spaces; '\s' stands
# for a space). Streams: one per CPU, with the CPU in the packet context's `cpu_id`, as
# LTTng writes them; the trace environment says domain=kernel, tracer_name=lttng-modules.
import sys

import bt2


def parse_spec(text):
    events = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        ts, cpu, name = int(parts[0]), int(parts[1]), parts[2]
        fields = []
        for kv in parts[3:]:
            key, _, value = kv.partition("=")
            try:
                fields.append((key, int(value)))
            except ValueError:
                fields.append((key, value.replace("\\s", " ")))
        events.append((ts, cpu, name, fields))
    events.sort(key=lambda e: e[0])
    return events


class Iter(bt2._UserMessageIterator):
    def __init__(self, config, port):
        comp = port.user_data
        self._msgs = comp.build(self)

    def __next__(self):
        if not self._msgs:
            raise StopIteration
        return self._msgs.pop(0)


class Source(bt2._UserSourceComponent, message_iterator_class=Iter):
    def __init__(self, config, params, obj):
        self._events = obj
        self._add_output_port("out", self)

    def build(self, it):
        tc = self._create_trace_class()
        cc = self._create_clock_class(frequency=1_000_000_000, name="monotonic")
        pctx = tc.create_structure_field_class()
        pctx.append_member("cpu_id", tc.create_unsigned_integer_field_class(32))
        sc = tc.create_stream_class(
            default_clock_class=cc,
            supports_packets=True,
            packets_have_beginning_default_clock_snapshot=True,
            packets_have_end_default_clock_snapshot=True,
            packet_context_field_class=pctx,
        )
        classes = {}
        for _, _, name, fields in self._events:
            if name in classes:
                continue
            payload = tc.create_structure_field_class()
            for key, value in fields:
                if isinstance(value, int):
                    payload.append_member(key, tc.create_signed_integer_field_class(64))
                else:
                    payload.append_member(key, tc.create_string_field_class())
            classes[name] = sc.create_event_class(name=name, payload_field_class=payload)
        trace = tc(environment={"domain": "kernel", "tracer_name": "lttng-modules",
                                "tracer_major": 2, "tracer_minor": 13})
        cpus = sorted({cpu for _, cpu, _, _ in self._events})
        first = self._events[0][0] if self._events else 0
        last = self._events[-1][0] if self._events else 0
        streams, packets = {}, {}
        msgs = []
        for cpu in cpus:
            s = trace.create_stream(sc)
            p = s.create_packet()
            p.context_field["cpu_id"] = cpu
            streams[cpu], packets[cpu] = s, p
            msgs.append(it._create_stream_beginning_message(s))
            msgs.append(it._create_packet_beginning_message(p, first))
        for ts, cpu, name, fields in self._events:
            msg = it._create_event_message(classes[name], packets[cpu], ts)
            for key, value in fields:
                msg.event.payload_field[key] = value
            msgs.append(msg)
        for cpu in cpus:
            msgs.append(it._create_packet_end_message(packets[cpu], last))
            msgs.append(it._create_stream_end_message(streams[cpu]))
        return msgs


def main():
    out = sys.argv[1]
    events = parse_spec(sys.stdin.read())
    graph = bt2.Graph()
    src = graph.add_component(Source, "src", obj=events)
    ctf = bt2.find_plugin("ctf")
    sink = graph.add_component(ctf.sink_component_classes["fs"], "sink",
                               params={"path": out, "assume-single-trace": True})
    graph.connect_ports(src.output_ports["out"], sink.input_ports["in"])
    graph.run()


if __name__ == "__main__":
    main()
