#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# check-decision.py EXPECTED ACTUAL: does the decision ACTUAL (autoscale once
# output) agree with EXPECTED?  EXPECTED lists only the keys a scenario is
# about: objects are compared key by key for the keys EXPECTED has (so
# {"scale_up": {"delta": 1}} leaves the group open), except that an empty
# object {} means "exactly empty"; arrays, strings, numbers and null must be
# equal.  Prints each difference with its JSON path; exit 1 if any.
import json
import sys


def diff(path, want, got, out):
    if isinstance(want, dict):
        if not isinstance(got, dict):
            out.append("%s: expected an object, got %s" % (path, json.dumps(got)))
            return
        if not want and got:
            out.append("%s: expected {}, got %s" % (path, json.dumps(got)))
        for k, v in want.items():
            if k not in got:
                out.append("%s.%s: missing" % (path, k))
            else:
                diff("%s.%s" % (path, k), v, got[k], out)
    elif isinstance(want, list) and want and isinstance(want[0], dict):
        if not isinstance(got, list) or len(got) != len(want):
            out.append("%s: expected %d items, got %s" % (path, len(want), json.dumps(got)))
            return
        for i, (w, g) in enumerate(zip(want, got)):
            diff("%s[%d]" % (path, i), w, g, out)
    elif want != got:
        out.append("%s: expected %s, got %s" % (path, json.dumps(want), json.dumps(got)))


def main():
    with open(sys.argv[1]) as f:
        want = json.load(f)
    with open(sys.argv[2]) as f:
        got = json.load(f)
    out = []
    diff("decision", want, got, out)
    for line in out:
        print(line)
    return 1 if out else 0


sys.exit(main())
