# SPDX-License-Identifier: Apache-2.0
"""Write an OCI image archive (what `ctr image import` takes) of two
layers: oci-image.py OUT.tar NAME:TAG [BUSYBOX].  The first holds a static
busybox with a few applets, /etc/passwd, /data0 with two files and empty
/data, /tmp, /proc, /sys, /dev; the second changes it the ways image
layers do: a whiteout deletes /bin/wc, an opaque /data0 hides the first
layer's files behind its own, and /opt/a and /opt/b are one file (a hard
link).  Prints the digests of its blobs: the two layers, the
config and the manifest.  Deterministic: the same busybox
gives the same digests."""

import hashlib
import io
import json
import sys
import tarfile

APPLETS = ("sh", "echo", "cat", "sleep", "ls", "true", "wc", "sha256sum", "dd", "mkdir", "rm",
           "sync", "mv", "stat")


def entry(name, **kw):
    ti = tarfile.TarInfo(name)
    ti.mtime = 1700000000
    ti.uid = ti.gid = 0
    for k, v in kw.items():
        setattr(ti, k, v)
    return ti


def digest(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def main():
    out, name = sys.argv[1], sys.argv[2]
    busybox = open(sys.argv[3] if len(sys.argv) > 3 else "/bin/busybox", "rb").read()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for d in ("bin", "etc", "tmp", "proc", "sys", "dev", "data"):
            t.addfile(entry(d, type=tarfile.DIRTYPE, mode=0o1777 if d == "tmp" else 0o755))
        t.addfile(entry("bin/busybox", size=len(busybox), mode=0o755), io.BytesIO(busybox))
        for app in APPLETS:
            t.addfile(entry("bin/" + app, type=tarfile.SYMTYPE, linkname="busybox"))
        pw = b"root:x:0:0:root:/:/bin/sh\n"
        t.addfile(entry("etc/passwd", size=len(pw), mode=0o644), io.BytesIO(pw))
        t.addfile(entry("data0", type=tarfile.DIRTYPE, mode=0o755))
        for n in ("old1", "old2"):
            t.addfile(entry("data0/" + n, size=3, mode=0o644), io.BytesIO(b"old"))
    layer = buf.getvalue()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        t.addfile(entry("bin/.wh.wc", size=0, mode=0o644), io.BytesIO(b""))
        t.addfile(entry("data0", type=tarfile.DIRTYPE, mode=0o755))
        t.addfile(entry("data0/.wh..wh..opq", size=0, mode=0o644), io.BytesIO(b""))
        t.addfile(entry("data0/new", size=3, mode=0o644), io.BytesIO(b"new"))
        t.addfile(entry("opt", type=tarfile.DIRTYPE, mode=0o755))
        t.addfile(entry("opt/a", size=7, mode=0o644), io.BytesIO(b"linked\n"))
        t.addfile(entry("opt/b", type=tarfile.LNKTYPE, linkname="opt/a", mode=0o644))
    layer2 = buf.getvalue()
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Cmd": ["/bin/sh"], "Env": ["PATH=/bin"]},
        "rootfs": {"type": "layers", "diff_ids": [digest(layer), digest(layer2)]}}).encode()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": digest(config), "size": len(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": digest(b), "size": len(b)} for b in (layer, layer2)]}).encode()
    index = json.dumps({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": digest(manifest), "size": len(manifest),
        "annotations": {"io.containerd.image.name": name,
                        "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]}}]}).encode()
    with tarfile.open(out, "w") as t:
        def add(n, b):
            t.addfile(entry(n, size=len(b), mode=0o644), io.BytesIO(b))
        for d in ("blobs", "blobs/sha256"):
            t.addfile(entry(d, type=tarfile.DIRTYPE, mode=0o755))
        for b in (layer, layer2, config, manifest):
            add("blobs/sha256/" + digest(b)[7:], b)
        add("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        add("index.json", index)
    print(digest(layer), digest(layer2), digest(config), digest(manifest))


main()
