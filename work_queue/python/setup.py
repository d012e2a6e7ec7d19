# setup.py: builds htc.work_queue._work_queue, a C extension over libwork_queue.
#
# Where the library comes from, first match wins:
#   HTC_BUILD=DIR     a build tree of this project (DIR/lib/libwork_queue.so); the headers are
#                     taken from the source tree HTC_SRC (default: the one this file sits in).
#   HTC_PREFIX=DIR    an installed prefix (DIR/lib, DIR/include/htc).
#   pkg-config htc-work-queue (set PKG_CONFIG_PATH for a prefix of your own).
# The library directory is recorded as the extension's RUNPATH, so no LD_LIBRARY_PATH is needed.
import os
import shlex
import subprocess
import sys

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
SRC_ROOT = os.environ.get("HTC_SRC") or os.path.normpath(os.path.join(HERE, "..", ".."))


def from_build(build):
    build = os.path.abspath(build)
    libdir = os.path.join(build, "lib")
    if not os.path.exists(os.path.join(libdir, "libwork_queue.so")):
        sys.exit(f"setup.py: HTC_BUILD={build}: no lib/libwork_queue.so there (run make first)")
    incs = [os.path.join(SRC_ROOT, d) for d in
            ("work_queue/src/master", "dttools/src", "resource_monitor/src")]
    if not os.path.exists(incs[0] + "/work_queue.h"):
        sys.exit(f"setup.py: no work_queue.h in {incs[0]}: set HTC_SRC to the source tree")
    return incs, [libdir], []


def from_prefix(prefix):
    prefix = os.path.abspath(prefix)
    libdir = os.path.join(prefix, "lib")
    if not os.path.exists(os.path.join(libdir, "libwork_queue.so")):
        sys.exit(f"setup.py: HTC_PREFIX={prefix}: no lib/libwork_queue.so there")
    return [os.path.join(prefix, "include", "htc")], [libdir], []


def from_pkg_config():
    try:
        out = subprocess.run(["pkg-config", "--cflags", "--libs", "htc-work-queue"],
                             check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        msg = getattr(e, "stderr", "") or str(e)
        sys.exit("setup.py: cannot find libwork_queue: set HTC_BUILD (a build tree) or "
                 "HTC_PREFIX (an installed prefix), or make `pkg-config htc-work-queue` work "
                 f"(PKG_CONFIG_PATH): {msg.strip()}")
    incs, libdirs, extra = [], [], []
    for w in shlex.split(out):
        if w.startswith("-I"):
            incs.append(w[2:])
        elif w.startswith("-L"):
            libdirs.append(w[2:])
        elif not w.startswith("-l"):
            extra.append(w)
    return incs, libdirs, extra


if os.environ.get("HTC_BUILD"):
    incs, libdirs, extra = from_build(os.environ["HTC_BUILD"])
elif os.environ.get("HTC_PREFIX"):
    incs, libdirs, extra = from_prefix(os.environ["HTC_PREFIX"])
else:
    incs, libdirs, extra = from_pkg_config()

ext = Extension(
    "htc.work_queue._work_queue",
    sources=["src/htc/work_queue/_work_queue.c", "src/htc/work_queue/task.c"],
    depends=["src/htc/work_queue/wq_py.h"],
    include_dirs=incs,
    library_dirs=libdirs,
    runtime_library_dirs=libdirs,
    libraries=["work_queue", "rmonitor", "dttools", "jansson"],
    extra_compile_args=["-Wall", "-Wextra", "-Werror", "-Wno-missing-field-initializers"]
    + [a for a in extra if a.startswith("-")],
)

setup(
    packages=["htc.work_queue"],
    package_dir={"": "src"},
    ext_modules=[ext],
)
