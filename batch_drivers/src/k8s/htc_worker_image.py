#!/usr/bin/env python3
"""htc_worker_image: make a container image that holds work_queue_worker (or other programs)
with the shared libraries they need (found with ldd) and a busybox shell, written as a
docker-save archive without Docker or a registry, and optionally loaded into containerd with
ctr. Installed beside the tools; doc/kubernetes.md, section 8, and man htc_worker_image."""
import argparse
import hashlib
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile

DEFAULT_NAME = "htc-worker:local"
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def fail(msg):
    sys.exit("htc_worker_image: " + msg)


def find_program(name):
    """NAME as given when it has a slash, else beside this tool, else on PATH."""
    if "/" in name:
        return os.path.abspath(name)
    here = os.path.dirname(os.path.realpath(sys.argv[0]))
    own = os.path.join(here, name)
    if os.access(own, os.X_OK):
        return own
    found = shutil.which(name)
    if not found:
        fail("%s: not found beside %s nor on PATH (give --program PATH)" % (name, here))
    return found


def libraries(program):
    """The shared libraries PROGRAM loads, as ldd resolves them: [(path in image, file)]."""
    try:
        out = subprocess.run(["ldd", program], capture_output=True, text=True, check=False)
    except OSError as e:
        fail("ldd %s: %s" % (program, e))
    text = out.stdout + out.stderr
    if "not a dynamic executable" in text or "statically linked" in text:
        return []
    if out.returncode != 0:
        fail("ldd %s: %s" % (program, text.strip()))
    libs = []
    for line in out.stdout.splitlines():
        line = line.strip()
        m = re.match(r"(\S+) => not found", line)
        if m:
            fail("%s needs %s, which ldd cannot find" % (program, m.group(1)))
        m = re.match(r"\S+ => (/\S+) \(0x", line) or re.match(r"(/\S+) \(0x", line)
        if m:
            libs.append((m.group(1), os.path.realpath(m.group(1))))
    return libs


class Layer:
    """The image's one layer: entries by path in the image, written in a stable order."""

    def __init__(self):
        self.entries = {}

    def dir(self, path, mode=0o755):
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            p = "/".join(parts[:i])
            if p and p not in self.entries:
                self.entries[p] = ("dir", mode if i == len(parts) else 0o755)

    def file(self, path, src=None, data=None, mode=None):
        path = path.strip("/")
        self.dir(os.path.dirname(path))
        if src is not None:
            st = os.stat(src)
            mode = stat.S_IMODE(st.st_mode) if mode is None else mode
        self.entries[path] = ("file", mode if mode is not None else 0o644, src, data)

    def link(self, path, target):
        path = path.strip("/")
        self.dir(os.path.dirname(path))
        self.entries[path] = ("symlink", target)

    def tree(self, dest, src):
        """SRC (a directory) copied at DEST, symbolic links kept."""
        for root, dirs, files in os.walk(src):
            rel = os.path.relpath(root, src)
            base = dest if rel == "." else os.path.join(dest, rel)
            self.dir(base, stat.S_IMODE(os.stat(root).st_mode))
            for name in sorted(dirs + files):
                s = os.path.join(root, name)
                d = os.path.join(base, name)
                if os.path.islink(s):
                    self.link(d, os.readlink(s))
                elif os.path.isfile(s):
                    self.file(d, src=s)

    def bytes(self):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for path in sorted(self.entries):
                e = self.entries[path]
                info = tarfile.TarInfo(path)
                info.mtime = 0
                info.uid = info.gid = 0
                info.uname = info.gname = "root"
                if e[0] == "dir":
                    info.type = tarfile.DIRTYPE
                    info.mode = e[1]
                    tar.addfile(info)
                elif e[0] == "symlink":
                    info.type = tarfile.SYMTYPE
                    info.linkname = e[1]
                    info.mode = 0o777
                    tar.addfile(info)
                else:
                    data = e[3]
                    if data is None:
                        with open(e[2], "rb") as f:
                            data = f.read()
                    info.size = len(data)
                    info.mode = e[1]
                    tar.addfile(info, io.BytesIO(data))
        return buf.getvalue()


def write_archive(layer, out, ref, entrypoint=None):
    """LAYER as a one-layer image REF in the docker-save format that `ctr images import`
    reads; the same content gives the same image id."""
    run = {"Env": [PATH_ENV]}
    if entrypoint:
        run["Entrypoint"] = [entrypoint]
    data = layer.bytes()
    diff_id = "sha256:" + hashlib.sha256(data).hexdigest()
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
    tmp = out + ".new"
    with tarfile.open(tmp, "w") as tar:
        for name, body in ((layer_name, data), (config_name, config),
                           ("manifest.json", manifest)):
            info = tarfile.TarInfo(name)
            info.size = len(body)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(body))
    os.replace(tmp, out)
    return len(data)


def add_shell(layer, busybox):
    """/bin/sh and the other applets from a static busybox."""
    if not os.access(busybox, os.X_OK):
        fail("--shell %s: not an executable (install busybox-static, or --shell none)"
             % busybox)
    layer.file("/bin/busybox", src=busybox, mode=0o755)
    for lib in libraries(busybox):
        layer.file(lib[0], src=lib[1])
    out = subprocess.run([busybox, "--list"], capture_output=True, text=True, check=False)
    applets = out.stdout.split() if out.returncode == 0 else ["sh"]
    for a in applets:
        if a != "busybox" and ("bin/" + a) not in layer.entries:
            layer.link("/bin/" + a, "busybox")


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="htc_worker_image",
        description="Make a container image holding work_queue_worker (or the programs "
        "given) with the shared libraries ldd finds and a busybox shell, as a docker-save "
        "archive; optionally load it into containerd.")
    p.add_argument("-n", "--name", default=DEFAULT_NAME,
                   help="the image's NAME:TAG (default %s)" % DEFAULT_NAME)
    p.add_argument("-o", "--output", help="the archive to write (default NAME_TAG.tar "
                   "in the current directory)")
    p.add_argument("--program", action="append", default=[],
                   help="a program put in /usr/bin with its libraries (repeatable; "
                   "default: work_queue_worker beside this tool, else on PATH)")
    p.add_argument("--add", action="append", default=[], metavar="SRC[:DEST]",
                   help="a file or directory copied into the image at DEST (default: the "
                   "same path) (repeatable)")
    p.add_argument("--shell", default="/bin/busybox",
                   help="a static busybox giving /bin/sh and its applets (default "
                   "/bin/busybox); 'none' for no shell")
    p.add_argument("--rootfs", help="write this directory as the image instead (no "
                   "programs and no shell are added)")
    p.add_argument("--entrypoint", help="what runs when a container names no command")
    p.add_argument("--import", dest="do_import", action="store_true",
                   help="load the archive into containerd (ctr -n k8s.io images import)")
    p.add_argument("--address", help="containerd's socket for --import (default: ctr's)")
    a = p.parse_args(argv)
    if ":" not in a.name.rsplit("/", 1)[-1]:
        p.error("--name %s: expected NAME:TAG" % a.name)
    if a.rootfs and (a.program or a.add):
        p.error("--rootfs writes a directory as it is: --program and --add do not apply")
    return a


def main(argv):
    a = parse_args(argv)
    layer = Layer()
    if a.rootfs:
        if not os.path.isdir(a.rootfs):
            fail("--rootfs %s: not a directory" % a.rootfs)
        layer.tree("", a.rootfs)
    else:
        for d in ("proc", "sys", "dev", "etc", "root", "var/run"):
            layer.dir(d)
        layer.dir("tmp", 0o1777)
        layer.file("/etc/passwd", data=b"root:x:0:0:root:/root:/bin/sh\n")
        layer.file("/etc/group", data=b"root:x:0:\n")
        layer.file("/etc/hosts", data=b"127.0.0.1 localhost\n::1 localhost\n")
        if a.shell != "none":
            add_shell(layer, a.shell)
        for prog in a.program or ["work_queue_worker"]:
            path = find_program(prog)
            if not os.access(path, os.X_OK):
                fail("--program %s: not an executable" % path)
            layer.file("/usr/bin/" + os.path.basename(path), src=path, mode=0o755)
            for lib in libraries(path):
                layer.file(lib[0], src=lib[1])
        for spec in a.add:
            src, _, dest = spec.partition(":")
            dest = dest or os.path.abspath(src)
            if os.path.isdir(src):
                layer.tree(dest, src)
            elif os.path.isfile(src):
                layer.file(dest, src=src)
            else:
                fail("--add %s: no such file or directory" % src)
    out = a.output or re.sub(r"[:/]", "_", a.name) + ".tar"
    size = write_archive(layer, out, a.name, a.entrypoint)
    print("%s: %s, %d bytes of layer" % (out, a.name, size))
    if a.do_import:
        cmd = ["ctr"] + (["--address", a.address] if a.address else []) + \
              ["-n", "k8s.io", "images", "import", out]
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            fail("%s: %s" % (" ".join(cmd), (r.stderr or r.stdout).strip()))
        print("%s: loaded into containerd (namespace k8s.io)" % a.name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
