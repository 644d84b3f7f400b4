# SPDX-License-Identifier: Apache-2.0
#
# For the fuse-qtfs tests: how often a process's io_uring kernel workers
# (its "iou-wrk-" threads) have run, from their schedstat run counts.  A
# count that does not move means io_uring handed them no work.

import os


def worker_runs(pid):
    n = 0
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return 0
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                if not f.read().startswith("iou-wrk"):
                    continue
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                n += int(f.read().split()[2])
        except OSError:
            pass  # the thread ended meanwhile
    return n
