#!/usr/bin/env python3
"""Grouping accuracy of `snailtrail logs templates` on the loghub 2k benchmark.

Usage: scripts/loghub-accuracy.py DIR [--snailtrail build/bin/snailtrail] [--json]
       [--datasets HDFS,Proxifier,...] [--similarity 0.5] [extra snailtrail args after --]

DIR holds the public benchmark's files as logpai/loghub lays them out:
DIR/<Dataset>/<Dataset>_2k.log and DIR/<Dataset>/<Dataset>_2k.log_structured.csv (its
EventId column is the ground truth). Only the dataset's header format (the benchmark's
format string, below) is given to snailtrail; no per-dataset masks or thresholds.

Samples: when only the structured CSV is there (e.g. its first lines, copied by hand), or
with --from-structured, each line is rebuilt from the CSV's header columns and Content by
the format string, and the score is over the lines present in both; such a figure is
"the first N lines", not the 2k figure (the table says how many lines were scored).

Grouping accuracy (the standard loghub definition): a line is correct iff the set of lines
in its predicted group equals the set of lines in its true group. Lines snailtrail did not
read as records (joined to the line before, empty) count as groups of their own.
Prints one row per dataset found and the average over them. Python 3 standard library only.
"""
import argparse
import csv
import json
import os
import re
import subprocess
import tempfile
import sys
from collections import defaultdict

# The header format of each dataset, as logpai's benchmark gives it.
FORMATS = {
    "HDFS": r"<Date> <Time> <Pid> <Level> <Component>: <Content>",
    "Hadoop": r"<Date> <Time> <Level> \[<Process>\] <Component>: <Content>",
    "Spark": r"<Date> <Time> <Level> <Component>: <Content>",
    "Zookeeper": r"<Date> <Time> - <Level>  \[<Node>:<Component>@<Id>\] - <Content>",
    "BGL": r"<Label> <Timestamp> <Date> <Node> <Time> <NodeRepeat> <Type> <Component> <Level> <Content>",
    "HPC": r"<LogId> <Node> <Component> <State> <Time> <Flag> <Content>",
    "Thunderbird": r"<Label> <Timestamp> <Date> <User> <Month> <Day> <Time> <Location> <Component>(\[<PID>\])?: <Content>",
    "Windows": r"<Date> <Time>, <Level>                  <Component>    <Content>",
    "Linux": r"<Month> <Date> <Time> <Level> <Component>(\[<PID>\])?: <Content>",
    "Android": r"<Date> <Time>  <Pid>  <Tid> <Level> <Component>: <Content>",
    "HealthApp": r"<Time>\|<Component>\|<Pid>\|<Content>",
    "Apache": r"\[<Time>\] \[<Level>\] <Content>",
    "Proxifier": r"\[<Time>\] <Program> - <Content>",
    "OpenSSH": r"<Date> <Day> <Time> <Component> sshd\[<Pid>\]: <Content>",
    "OpenStack": r"<Logrecord> <Date> <Time> <Pid> <Level> <Component> \[<ADDR>\] <Content>",
    "Mac": r"<Month>  <Date> <Time> <User> <Component>\[<PID>\]( \(<Address>\))?: <Content>",
}


def grouping_accuracy(truth, predicted):
    """truth, predicted: dicts line -> group label, over the same lines."""
    true_groups, pred_groups = defaultdict(set), defaultdict(set)
    for line, g in truth.items():
        true_groups[g].add(line)
    for line, g in predicted.items():
        pred_groups[g].add(line)
    correct = 0
    for lines in pred_groups.values():
        first = next(iter(lines))
        if true_groups[truth[first]] == lines:
            correct += len(lines)
    return correct / len(truth) if truth else 0.0


def read_rows(path):
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        return list(csv.DictReader(f))


def read_truth(rows):
    return {int(row["LineId"]): row["EventId"] for row in rows}


def render_line(fmt, row):
    """A raw log line from a structured row: the format's <Field>s filled in, `\\x` the
    literal x, an optional group `(...)?` kept only if its fields are all non-empty."""
    def fill(part):
        out = re.sub(r"<(\w+)>", lambda m: row.get(m.group(1), ""), part)
        return re.sub(r"\\(.)", r"\1", out)

    def group(m):
        fields = re.findall(r"<(\w+)>", m.group(1))
        return fill(m.group(1)) if all(row.get(f, "") for f in fields) else ""

    parts = re.split(r"(\([^()]*\)\?)", fmt)
    return "".join(group(re.match(r"\((.*)\)\?", p)) if p.endswith(")?") and p.startswith("(")
                   else fill(p) for p in parts)


def rebuild_log(fmt, rows, path):
    """Writes the lines of `rows` (in LineId order, numbered from 1) as a raw log."""
    with open(path, "w", encoding="utf-8") as f:
        for k, row in enumerate(sorted(rows, key=lambda r: int(r["LineId"]))):
            if int(row["LineId"]) != k + 1:
                sys.exit("%s: LineId %s is not line %d: a sample must be the file's first lines"
                         % (path, row["LineId"], k + 1))
            f.write(render_line(fmt, row) + "\n")


def predict(snailtrail, log_path, fmt, extra):
    cmd = [snailtrail, "logs", "templates", log_path, "--log-format", fmt, "-f", "jsonl"] + extra
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         encoding="utf-8", errors="replace").stdout
    pred, templates = {}, set()
    for text in out.splitlines():
        obj = json.loads(text)
        line = obj["line"]
        if "template_id" in obj:
            pred[line] = "T%d" % obj["template_id"]
            templates.add(obj["template_id"])
        else:
            pred[line] = "line%d" % line  # joined or skipped: a group of its own
    return pred, len(templates)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--snailtrail", default="build/bin/snailtrail")
    ap.add_argument("--datasets", default=",".join(FORMATS))
    ap.add_argument("--json", action="store_true", help="one JSON document instead of a table")
    ap.add_argument("--from-structured", action="store_true",
                    help="rebuild the raw lines from the structured CSV even if the .log is there")
    ap.add_argument("extra", nargs="*", help="more snailtrail arguments (after --)")
    a = ap.parse_args()
    rows = []
    for name in a.datasets.split(","):
        log = os.path.join(a.dir, name, name + "_2k.log")
        truth_csv = log + "_structured.csv"
        if not os.path.exists(truth_csv):
            continue
        csv_rows = read_rows(truth_csv)
        truth = read_truth(csv_rows)
        with tempfile.TemporaryDirectory() as tmp:
            source = "log"
            if a.from_structured or not os.path.exists(log):
                log, source = os.path.join(tmp, name + ".log"), "rebuilt from the CSV"
                rebuild_log(FORMATS[name], csv_rows, log)
            pred, found = predict(a.snailtrail, log, FORMATS[name], a.extra)
        truth = {line: g for line, g in truth.items() if line in pred}  # lines in both
        pred = {line: pred[line] for line in truth}
        rows.append({"dataset": name, "lines": len(truth), "source": source,
                     "true_templates": len(set(truth.values())), "templates": found,
                     "accuracy": grouping_accuracy(truth, pred)})
    if not rows:
        sys.exit("no <Dataset>/<Dataset>_2k.log_structured.csv under " + a.dir)
    avg = sum(r["accuracy"] for r in rows) / len(rows)
    if a.json:
        print(json.dumps({"datasets": rows, "average": avg}, indent=1))
        return
    print("%-12s %6s %6s %6s %9s  %s" % ("dataset", "lines", "truth", "found", "accuracy",
                                         "input"))
    for r in rows:
        print("%-12s %6d %6d %6d %9.4f  %s" % (r["dataset"], r["lines"], r["true_templates"],
                                              r["templates"], r["accuracy"], r["source"]))
    print("%-12s %6s %6s %6s %9.4f  (%d datasets)" % ("average", "", "", "", avg, len(rows)))


if __name__ == "__main__":
    main()
