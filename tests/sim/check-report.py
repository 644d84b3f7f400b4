#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks for the HTML reports and summaries of `sim` (tests/sim/test-report.sh).

  check-report.py html FILE KIND   parse FILE strictly and check the content
                                   expected of the fixture KIND (single,
                                   compare or long)
  check-report.py mutate SIM DIR WORK N SEED
                                   render N randomly damaged copies of the
                                   result directory DIR (seeded, so the same
                                   every time): each must render (exit 0,
                                   silent) or fail with one line (exit 1)
  check-report.py schema SCHEMA [--invalid] JSON...
                                   every JSON validates against SCHEMA (with
                                   --invalid: every JSON is rejected); exits 77
                                   when python3-jsonschema is missing

The HTML check is strict on purpose: every non-void element closed in order,
only known entity references, no '<' in text, no script, no external
reference (src, href, url(), @import, http(s)://).  Expected figures are the
fixture's values formatted by hand, not copied from a previous output.
"""
import html.parser
import json
import re
import sys

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link",
        "meta", "source", "track", "wbr"}
# SVG elements written as <x/>: they come through handle_startendtag.
ENTITIES = {"amp", "lt", "gt", "quot"}


class Failure(Exception):
    pass


class StrictParser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=False)
        self.stack = []
        self.counts = {}
        self.text = []          # all text, entity references decoded
        self.tables = []        # list of rows, each a list of cell texts
        self.cell = None
        self.row = None
        self.title = None
        self.in_title = False
        self.captions = []
        self.in_caption = None
        self.figcaptions = []
        self.in_figcaption = None
        self.polylines = []     # (figure caption, points)
        self.ylabels = []       # (figure caption, value, y)
        self.svgtexts = []      # (figure caption, text) of every SVG <text>
        self.figure = None
        self.doctype = None

    def error(self, msg):
        raise Failure("line %d: %s" % (self.getpos()[0], msg))

    def handle_decl(self, decl):
        self.doctype = decl

    def check_attrs(self, tag, attrs):
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "action", "srcset"):
                self.error("<%s %s=...>: external reference" % (tag, name))
            if name.startswith("on"):
                self.error("<%s %s=...>: event handler" % (tag, name))
            if value and re.search(r"url\(|https?:|//", value):
                self.error("<%s %s=%r>: looks like a reference" % (tag, name, value))

    def handle_starttag(self, tag, attrs):
        self.check_attrs(tag, attrs)
        if tag in ("script", "iframe", "object", "embed", "link", "img", "base"):
            self.error("<%s> not allowed" % tag)
        key = "svg title" if tag == "title" and "svg" in self.stack else tag
        self.counts[key] = self.counts.get(key, 0) + 1
        if tag not in VOID:
            self.stack.append(tag)
        if tag == "title" and self.stack[:-1] == ["html", "head"]:
            self.in_title = True
            self.title = ""
        if tag == "tr":
            self.row = []
        if tag in ("td", "th"):
            self.cell = ""
        if tag == "caption":
            self.in_caption = ""
        if tag == "figcaption":
            self.in_figcaption = ""
        if tag == "table":
            self.tables.append([])

    def handle_startendtag(self, tag, attrs):
        self.check_attrs(tag, attrs)
        if tag not in VOID and tag not in ("line", "rect", "polyline", "circle", "path"):
            self.error("<%s/> is not a void or SVG shape element" % tag)
        self.counts[tag] = self.counts.get(tag, 0) + 1
        if tag == "polyline":
            pts = [tuple(float(c) for c in p.split(","))
                   for p in dict(attrs)["points"].split()]
            self.polylines.append((self.figure, pts))
        if tag == "line" and ("class", "grid") in attrs:
            self.gridline = float(dict(attrs)["y1"])

    def handle_endtag(self, tag):
        if tag in VOID:
            self.error("</%s> closes a void element" % tag)
        if not self.stack or self.stack[-1] != tag:
            self.error("</%s> closes <%s>" % (tag, self.stack[-1] if self.stack else "nothing"))
        self.stack.pop()
        if tag == "title" and self.in_title:
            self.in_title = False
        if tag in ("td", "th") and self.row is not None:
            self.row.append(self.cell.strip())
            self.cell = None
        if tag == "tr":
            self.tables[-1].append(self.row)
            self.row = None
        if tag == "caption":
            self.captions.append(self.in_caption)
            self.in_caption = None
        if tag == "figcaption":
            self.figcaptions.append(self.in_figcaption)
            self.figure = self.in_figcaption
            self.in_figcaption = None
        if tag == "figure":
            self.figure = None

    def add_text(self, data):
        self.text.append(data)
        if self.in_title:
            self.title += data
        if self.cell is not None:
            self.cell += data
        if self.in_caption is not None:
            self.in_caption += data
        if self.in_figcaption is not None:
            self.in_figcaption += data
        if self.stack and self.stack[-1] == "text":
            self.svgtexts.append((self.figure, data))
        if self.stack and self.stack[-1] == "text" and hasattr(self, "gridline"):
            self.ylabels.append((self.figure, data, self.gridline))
            del self.gridline

    def handle_data(self, data):
        if self.stack[-1:] != ["style"]:
            if "<" in data or ">" in data:
                self.error("unescaped < or > in text: %r" % data[:60])
            if "&" in data:
                self.error("bare & in text: %r" % data[:60])
        self.add_text(data)

    def handle_entityref(self, name):
        if name not in ENTITIES:
            self.error("unknown entity &%s;" % name)
        self.add_text({"amp": "&", "lt": "<", "gt": ">", "quot": '"'}[name])

    def handle_charref(self, name):
        self.add_text(chr(int(name[1:], 16) if name[0] in "xX" else int(name)))

    def handle_comment(self, data):
        self.error("comment in output")

    def handle_pi(self, data):
        self.error("processing instruction")

    def unknown_decl(self, data):
        self.error("unknown declaration %r" % data)


def parse(path):
    raw = open(path, "rb").read()
    try:
        doc = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Failure("not UTF-8: %s" % e)
    for bad in ("http://", "https://", "url(", "@import", "<script", "<link"):
        if bad in doc.lower():
            raise Failure("contains %r" % bad)
    p = StrictParser()
    p.feed(doc)
    p.close()
    if p.stack:
        raise Failure("unclosed elements at the end: %s" % p.stack)
    if p.doctype is None or p.doctype.lower() != "doctype html":
        raise Failure("no <!DOCTYPE html>")
    for tag in ("html", "head", "body", "title", "style"):
        if p.counts.get(tag) != 1:
            raise Failure("<%s> appears %s times" % (tag, p.counts.get(tag, 0)))
    if not doc.startswith("<!DOCTYPE html>\n<html"):
        raise Failure("does not start with the doctype and <html>")
    p.alltext = "".join(p.text)
    p.size = len(raw)
    return p


def expect_row(p, row):
    for table in p.tables:
        if row in table:
            return
    raise Failure("no table row %r" % (row,))


def expect(cond, what):
    if not cond:
        raise Failure(what)


def check_single(p):
    name = 'pooled <b>&amp;</b> "run"'
    expect(p.title == "Simulation report: " + name, "title is %r" % p.title)
    expect("traces/x</td><script>alert(1)</script>.jsonl" in p.alltext, "trace name not shown as text")
    # Hand-formatted from tests/sim/report/single/summary.json.
    expect_row(p, ["Name", name])
    expect_row(p, ["Seed", "7"])
    expect_row(p, ["Simulated time", "0 s to 7200 s (2h 00m)"])
    expect_row(p, ["Never scheduled", "2"])
    expect_row(p, ["Skipped bad records", "1"])
    expect_row(p, ["p90", "20.3"])
    expect_row(p, ["p99", "42.0"])
    expect_row(p, ["mean", "7.1"])
    expect_row(p, ["web", "container", "8.2", "16.34", "51.2%", "83.0%", "43.0%", "70.0%",
                   "9", "5.4", "5", "4"])
    expect_row(p, ["bm.metal", "baremetal", "5.5", "24.67", "60.0%", "90.0%", "50.0%", "75.0%",
                   "3", "2.1", "2", "2"])
    expect_row(p, ["all groups", "", "19.5", "58.41", "52.0%", "85.0%", "44.0%", "75.0%",
                   "18", "11.1", "11", "9"])
    expect_row(p, ["Wall-clock time", "0.01 s"])
    for cap in ("Nodes per group (ready and provisioning)", "Pending pods",
                "Allocation (requests over allocatable, all nodes)", "Free machines in the pool"):
        expect(cap in p.figcaptions, "no chart %r" % cap)
    # Nodes chart: one line per group plus the total; pending: its peak (30) on top.
    expect(len([l for l in p.polylines if l[0].startswith("Nodes per group")]) == 4,
           "nodes chart does not have 4 lines")
    expect(abs(value_of_top(p, "Pending pods") - 30) < 0.2, "pending peak 30 not drawn")
    expect(p.counts.get("svg") == 4, "expected 4 charts, got %s" % p.counts.get("svg"))


def value_of_top(p, caption, index=0):
    """The value at the highest point of a chart's line, read back through its y axis."""
    lines = [pts for fig, pts in p.polylines if fig == caption]
    labels = [(float(v.rstrip("%")), y) for fig, v, y in p.ylabels if fig == caption]
    expect(lines and len(labels) >= 2, "chart %r has no line or axis" % caption)
    (v0, y0), (v1, y1) = labels[0], labels[-1]
    ytop = min(y for x, y in lines[index])
    return v0 + (ytop - y0) * (v1 - v0) / (y1 - y0)


def check_compare(p):
    expect(p.title == "Simulation comparison: pooled vs dedicated", "title is %r" % p.title)
    expect_row(p, ["", "pooled", "dedicated"])
    expect_row(p, ["Pool mode", "pooled", "dedicated"])
    expect_row(p, ["Machine-hours", "412.3", "538.9"])
    expect_row(p, ["Cost", "1236.90", "1650.35"])
    expect_row(p, ["Pending p99 (s)", "64.2", "312.7"])
    expect_row(p, ["Peak machines used", "30", "34"])
    expect_row(p, ["Pods never scheduled", "0", "3"])
    for cap in ("Machine-hours", "Cost", "Pending time p99", "Peak machines used",
                "Pending pods", "Nodes, all groups", "CPU allocation", "Memory allocation"):
        expect(cap in p.figcaptions, "no chart %r" % cap)
    # Overlaid lines: one per run; the dedicated run's pending peak is 14.
    # "Pending pods" is the overlay (2 lines) and each run's own chart (1 each).
    expect(len([l for l in p.polylines if l[0] == "Pending pods"]) == 4, "pending chart lines")
    expect(abs(value_of_top(p, "Pending pods", 1) - 14) < 0.1, "dedicated pending peak")
    # Both runs' details follow the overview.
    for cap in ("Run", "Pods", "Node groups"):
        expect(p.captions.count(cap) == 2, "caption %r not twice" % cap)
    expect(p.alltext.count("Run: pooled") == 1 and p.alltext.count("Run: dedicated") == 1,
           "run sections")


def check_long(p):
    # A month of 10-second samples: the file stays small and the spike survives.
    expect(p.size < 400 * 1024, "report is %d bytes" % p.size)
    for fig, pts in p.polylines:
        expect(len(pts) <= 4 * 680, "%r: %d points" % (fig, len(pts)))
    expect(abs(value_of_top(p, "Pending pods") - 977) < 1, "pending spike of 977 lost")
    # The one-row dip of group b to 0 survives too (lowest point of its line).
    lines = [pts for fig, pts in p.polylines if fig.startswith("Nodes per group")]
    expect(max(y for x, y in lines[1]) == 220.0, "group b's dip to 0 lost")
    expect_row(p, ["Simulated time", "0 s to 2592000 s (30d 00h 00m)"])


def mutate(sim, src, work, n, seed):
    """Damage one file of a copy of @src a few times over, render it."""
    import os
    import random
    import shutil
    import subprocess
    rng = random.Random(seed)
    bad = 0
    files = sorted(os.path.relpath(os.path.join(dp, f), src)
                   for dp, dn, fn in os.walk(src) for f in fn)
    for i in range(n):
        d = os.path.join(work, "m%d" % i)
        shutil.copytree(src, d)
        f = os.path.join(d, rng.choice(files))
        data = bytearray(open(f, "rb").read())
        for _ in range(rng.randint(1, 8)):
            op = rng.randrange(4)
            pos = rng.randrange(len(data) + 1)
            if op == 0:
                del data[pos:pos + rng.randint(1, 20)]
            elif op == 1:
                data[pos:pos] = bytes(rng.choice(b'0123456789,.-e"{}[]:\n\x00\xff')
                                      for _ in range(rng.randint(1, 5)))
            elif op == 2 and data:
                data[min(pos, len(data) - 1)] = rng.randrange(256)
            else:
                data[pos:pos] = data[rng.randrange(len(data) + 1):][:rng.randint(1, 200)]
        open(f, "wb").write(data)
        r = subprocess.run([sim, "report", d, "-o", os.path.join(work, "m.html")],
                           capture_output=True)
        err = r.stderr.decode("utf-8", "replace")
        if r.returncode not in (0, 1) or (r.returncode == 1 and err.count("\n") != 1) or \
                (r.returncode == 0 and err):
            print("mutation %d of %s: exit %d: %s" % (i, f, r.returncode, err[:2000]),
                  file=sys.stderr)
            bad += 1
        else:
            shutil.rmtree(d)
    return 1 if bad else 0


def check_many(p):
    # 15 groups g00..g14 with peaks 1..15: the 11 highest are drawn, in
    # configuration order, with the total; a note counts the others.
    cap = "Nodes per group (ready and provisioning)"
    lines = [pts for fig, pts in p.polylines if fig == cap]
    expect(len(lines) == 12, "nodes chart has %d lines, expected 12" % len(lines))
    names = [t for fig, t in p.svgtexts if fig == cap and re.match(r"^g\d\d$", t)]
    expect(names == ["g%02d" % i for i in range(4, 15)], "legend is %r" % names)
    expect("4 groups with the lowest peaks are not drawn; see the table." in p.alltext,
           "no note about the groups left out")
    expect(len(p.tables[-1]) == 1 + 15 + 1, "groups table does not have 15 rows")


def main():
    if len(sys.argv) == 7 and sys.argv[1] == "mutate":
        return mutate(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]))
    if len(sys.argv) >= 3 and sys.argv[1] == "html":
        try:
            p = parse(sys.argv[2])
            {"single": check_single, "compare": check_compare,
             "long": check_long, "many": check_many, "any": lambda p: None}[sys.argv[3]](p)
        except Failure as e:
            print("%s: %s" % (sys.argv[2], e), file=sys.stderr)
            return 1
        return 0
    if len(sys.argv) >= 4 and sys.argv[1] == "schema":
        try:
            import jsonschema
        except ImportError:
            print("python3-jsonschema is missing", file=sys.stderr)
            return 77
        schema = json.load(open(sys.argv[2]))
        jsonschema.Draft202012Validator.check_schema(schema)
        v = jsonschema.Draft202012Validator(schema)
        invalid = sys.argv[3] == "--invalid"
        rc = 0
        for f in sys.argv[4 if invalid else 3:]:
            try:
                doc = json.load(open(f))
            except (ValueError, RecursionError) as e:
                doc = None
                errors = ["not JSON: %s" % e]
            else:
                errors = [e.message for e in v.iter_errors(doc)]
            if invalid and not errors:
                print("%s: validates, expected it not to" % f, file=sys.stderr)
                rc = 1
            if not invalid and errors:
                print("%s: %s" % (f, errors[0]), file=sys.stderr)
                rc = 1
        return rc
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
