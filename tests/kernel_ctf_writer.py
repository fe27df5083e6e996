#!/usr/bin/python3
# Writes a CTF trace shaped like an LTTng kernel trace, for the kernel-trace tests
# (tests/test_kernel_lttng.cpp), through babeltrace2's own CTF writer (sink.ctf.fs) fed
# by a Python source component (Debian python3-bt2). LTTng itself cannot run here.
#
# Usage: kernel_ctf_writer.py OUT_DIR [HOSTNAME] < SPEC
# SPEC: one event per line, "TS_NS CPU EVENT_NAME key=value ...": an integer value
# becomes a signed 64-bit integer field, anything else a string (no spaces; '\s' stands
# for a space). Streams: one per CPU, with the CPU in the packet context's `cpu_id`, as
# LTTng writes them; the trace environment says domain=kernel, tracer_name=lttng-modules
# and, given HOSTNAME, hostname=HOSTNAME (as lttng-relayd's per-host traces do).
# The key `tcp=SADDR:SPORT>DADDR:DPORT,SEQ,ACK,FLAGS` (IPv4) writes lttng-modules'
# extended network header of net_dev_queue / net_if_receive_skb: `network_header_type`
# (an enumeration selecting) `network_header`, a variant whose `ipv4` option holds the IP
# header fields, `saddr`/`daddr` as arrays of 4 bytes, and `transport_header_type`
# selecting the `transport_header` variant whose `tcp` option holds the TCP header.
# An event of such a class without `tcp=` selects the empty `unknown` options.
# With --perf (after the arguments) it writes what `perf data convert --to-ctf` writes
# instead (linux tools/perf/util/data-convert-bt.c): event classes named as perf names
# them ("sched:sched_switch", "irq:irq_handler_entry"), a payload that starts with the
# sample's perf_ip, perf_tid, perf_pid, perf_id and perf_period, then the tracepoint's
# common fields (common_type, common_flags, common_preempt_count, common_pid) and its own
# fields with the kernel's names and types (prev_pid s32, prev_state s64, comm strings);
# the CPU in the packet context's cpu_id; the clock `perf_clock`; the environment's
# `host` (not `hostname`) and tracer_name=perf. The sample's thread is the key `_tid`
# (default: prev_pid of a sched_switch, else pid, else 0).
import sys

import bt2

# The kernel's tracepoint field types as perf's converter maps them: signed fields of 8
# bytes to s64, other signed ones to s32, unsigned ones to u32 (u64 when 8 bytes).
PERF_FIELD_TYPES = {
    "prev_state": "s64", "vec": "u32", "irq": "s32", "ret": "s32", "now": "s64",
    "dev": "u32", "sector": "u64", "nr_sector": "u32", "error": "s32", "len": "u32",
    "skbaddr": "x64", "hrtimer": "x64", "function": "x64",
}
PERF_COMMON = [("common_type", "u32"), ("common_flags", "u32"),
               ("common_preempt_count", "u32"), ("common_pid", "s32")]
PERF_GENERIC = [("perf_ip", "x64"), ("perf_tid", "s32"), ("perf_pid", "s32"),
                ("perf_id", "u64"), ("perf_period", "u64")]


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


def parse_tcp(text):
    ends, seq, ack, flags = text.split(",")
    src, _, dst = ends.partition(">")
    saddr, _, sport = src.partition(":")
    daddr, _, dport = dst.partition(":")
    return {
        "saddr": [int(x) for x in saddr.split(".")],
        "daddr": [int(x) for x in daddr.split(".")],
        "source_port": int(sport),
        "dest_port": int(dport),
        "seq": int(seq),
        "ack_seq": int(ack),
        "flags": int(flags, 0),
    }


def selector(tc, labels):
    fc = tc.create_unsigned_enumeration_field_class(8)
    for i, label in enumerate(labels):
        fc.add_mapping(label, bt2.UnsignedIntegerRangeSet([(i, i)]))
    return fc


def network_header_classes(tc, payload):
    """Appends lttng-modules' network_header_type / network_header members."""
    u = tc.create_unsigned_integer_field_class
    tcp = tc.create_structure_field_class()
    for name, bits in [("source_port", 16), ("dest_port", 16), ("seq", 32), ("ack_seq", 32),
                       ("data_offset", 4), ("reserved", 3), ("flags", 9),
                       ("window_size", 16), ("checksum", 16), ("urg_ptr", 16)]:
        tcp.append_member(name, u(bits))
    th_type = selector(tc, ["_unknown", "_tcp"])
    th = tc.create_variant_field_class(th_type)
    th.append_option("unknown", tc.create_structure_field_class(),
                     bt2.UnsignedIntegerRangeSet([(0, 0)]))
    th.append_option("tcp", tcp, bt2.UnsignedIntegerRangeSet([(1, 1)]))
    ipv4 = tc.create_structure_field_class()
    for name, bits in [("version", 4), ("ihl", 4), ("tos", 8), ("tot_len", 16), ("id", 16),
                       ("frag_off", 16), ("ttl", 8), ("protocol", 8), ("checksum", 16)]:
        ipv4.append_member(name, u(bits))
    ipv4.append_member("saddr", tc.create_static_array_field_class(u(8), 4))
    ipv4.append_member("daddr", tc.create_static_array_field_class(u(8), 4))
    ipv4.append_member("transport_header_type", th_type)
    ipv4.append_member("transport_header", th)
    nh_type = selector(tc, ["_unknown", "_ipv4"])
    nh = tc.create_variant_field_class(nh_type)
    nh.append_option("unknown", tc.create_structure_field_class(),
                     bt2.UnsignedIntegerRangeSet([(0, 0)]))
    nh.append_option("ipv4", ipv4, bt2.UnsignedIntegerRangeSet([(1, 1)]))
    payload.append_member("network_header_type", nh_type)
    payload.append_member("network_header", nh)


def set_network_header(payload, tcp):
    if tcp is None:
        payload["network_header_type"] = 0
        payload["network_header"].selected_option_index = 0
        return
    payload["network_header_type"] = 1
    nh = payload["network_header"]
    nh.selected_option_index = 1
    ip = nh.selected_option
    for name, value in [("version", 4), ("ihl", 5), ("tos", 0), ("tot_len", 52), ("id", 1),
                        ("frag_off", 0), ("ttl", 64), ("protocol", 6), ("checksum", 0)]:
        ip[name] = value
    ip["saddr"] = tcp["saddr"]
    ip["daddr"] = tcp["daddr"]
    ip["transport_header_type"] = 1
    th = ip["transport_header"]
    th.selected_option_index = 1
    t = th.selected_option
    for name in ["source_port", "dest_port", "seq", "ack_seq", "flags"]:
        t[name] = tcp[name]
    for name, value in [("data_offset", 8), ("reserved", 0), ("window_size", 512),
                        ("checksum", 0), ("urg_ptr", 0)]:
        t[name] = value


class Iter(bt2._UserMessageIterator):
    def __init__(self, config, port):
        comp = port.user_data
        self._msgs = comp.build(self)

    def __next__(self):
        if not self._msgs:
            raise StopIteration
        return self._msgs.pop(0)


def perf_type(tc, kind):
    if kind == "s64":
        return tc.create_signed_integer_field_class(64)
    if kind == "s32":
        return tc.create_signed_integer_field_class(32)
    if kind == "u32":
        return tc.create_unsigned_integer_field_class(32)
    if kind == "x64":
        return tc.create_unsigned_integer_field_class(
            64, preferred_display_base=bt2.IntegerDisplayBase.HEXADECIMAL)
    return tc.create_unsigned_integer_field_class(64)


def perf_payload_class(tc, fields):
    payload = tc.create_structure_field_class()
    for key, kind in PERF_GENERIC + PERF_COMMON:
        payload.append_member(key, perf_type(tc, kind))
    for key, value in fields:
        if key == "_tid":
            continue
        if isinstance(value, int):
            payload.append_member(key, perf_type(tc, PERF_FIELD_TYPES.get(key, "s32")))
        else:
            payload.append_member(key, tc.create_string_field_class())
    return payload


def set_perf_payload(payload, cpu, fields):
    values = dict(fields)
    tid = values.get("_tid", values.get("prev_pid", values.get("pid", 0)))
    generic = {"perf_ip": 0xffffffff81000000, "perf_tid": tid, "perf_pid": tid, "perf_id": cpu,
               "perf_period": 1, "common_type": 316, "common_flags": 1,
               "common_preempt_count": 0, "common_pid": tid}
    for key, value in generic.items():
        payload[key] = value
    for key, value in fields:
        if key != "_tid":
            payload[key] = value


class Source(bt2._UserSourceComponent, message_iterator_class=Iter):
    def __init__(self, config, params, obj):
        self._events, self._hostname, self._perf = obj
        self._add_output_port("out", self)

    def build(self, it):
        tc = self._create_trace_class()
        cc = self._create_clock_class(frequency=1_000_000_000,
                                      name="perf_clock" if self._perf else "monotonic")
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
        with_tcp = {name for _, _, name, fields in self._events
                    if any(k == "tcp" for k, _ in fields)}
        for _, _, name, fields in self._events:
            if name in classes:
                continue
            if self._perf:
                classes[name] = sc.create_event_class(
                    name=name, payload_field_class=perf_payload_class(tc, fields))
                continue
            payload = tc.create_structure_field_class()
            for key, value in fields:
                if key == "tcp":
                    continue
                if isinstance(value, int):
                    payload.append_member(key, tc.create_signed_integer_field_class(64))
                else:
                    payload.append_member(key, tc.create_string_field_class())
            if name in with_tcp:
                network_header_classes(tc, payload)
            classes[name] = sc.create_event_class(name=name, payload_field_class=payload)
        env = {"domain": "kernel", "tracer_name": "lttng-modules", "tracer_major": 2,
               "tracer_minor": 13}
        if self._hostname:
            env["hostname"] = self._hostname
        if self._perf:
            env = {"host": self._hostname or "localhost", "sysname": "Linux",
                   "release": "6.1.0-18-amd64", "version": "#1 SMP PREEMPT_DYNAMIC",
                   "machine": "x86_64", "domain": "kernel", "tracer_name": "perf"}
        trace = tc(environment=env)
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
            if self._perf:
                set_perf_payload(msg.event.payload_field, cpu, fields)
                msgs.append(msg)
                continue
            tcp = None
            for key, value in fields:
                if key == "tcp":
                    tcp = parse_tcp(value)
                else:
                    msg.event.payload_field[key] = value
            if name in with_tcp:
                set_network_header(msg.event.payload_field, tcp)
            msgs.append(msg)
        for cpu in cpus:
            msgs.append(it._create_packet_end_message(packets[cpu], last))
            msgs.append(it._create_stream_end_message(streams[cpu]))
        return msgs


def main():
    args = [a for a in sys.argv[1:] if a != "--perf"]
    perf = "--perf" in sys.argv[1:]
    out = args[0]
    hostname = args[1] if len(args) > 1 else None
    events = parse_spec(sys.stdin.read())
    graph = bt2.Graph()
    src = graph.add_component(Source, "src", obj=(events, hostname, perf))
    ctf = bt2.find_plugin("ctf")
    sink = graph.add_component(ctf.sink_component_classes["fs"], "sink",
                               params={"path": out, "assume-single-trace": True})
    graph.connect_ports(src.output_ports["out"], sink.input_ports["in"])
    graph.run()


if __name__ == "__main__":
    main()
