#!/usr/bin/env python3
"""docker-archive.py ROOTFS OUT.tar NAME:TAG [ENTRYPOINT]: write the directory ROOTFS as a one-layer image
in the docker-save tarball format (manifest.json, the image config, the layer), which
`ctr images import` reads. No Docker and no registry are needed. File times are set to 0 so
that the same ROOTFS gives the same image id. ENTRYPOINT (a path in the image) is what runs
when a container names no command (the sandbox image needs one)."""
import hashlib
import io
import json
import os
import sys
import tarfile


def layer_bytes(root):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        def reset(info):
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            return info
        for name in sorted(os.listdir(root)):
            tar.add(os.path.join(root, name), arcname=name, filter=reset)
    return buf.getvalue()


def member(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def main():
    if len(sys.argv) not in (4, 5) or ":" not in sys.argv[3]:
        sys.exit("usage: docker-archive.py ROOTFS OUT.tar NAME:TAG [ENTRYPOINT]")
    root, out, ref = sys.argv[1:4]
    run = {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
    if len(sys.argv) == 5:
        run["Entrypoint"] = [sys.argv[4]]
    layer = layer_bytes(root)
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    config = json.dumps({
        "architecture": "amd64",
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": run,
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }, sort_keys=True).encode()
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    layer_name = diff_id[7:] + "/layer.tar"
    manifest = json.dumps([{"Config": config_name, "RepoTags": [ref],
                            "Layers": [layer_name]}]).encode()
    with tarfile.open(out, "w") as tar:
        member(tar, layer_name, layer)
        member(tar, config_name, config)
        member(tar, "manifest.json", manifest)
    print("%s: %s, %d bytes of layer" % (out, ref, len(layer)))


main()
