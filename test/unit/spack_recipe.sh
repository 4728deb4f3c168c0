#!/bin/bash
# Checks contrib/spack/packages/gpuic/package.py without Spack (not installable here).
#
# What this does check: the recipe compiles, and imported against a small stand-in for
# `spack.package` (directives that only record their arguments) it declares the class, the
# variants, dependencies and conflicts it should; configure_args() maps variants to configure
# options; setup_run_environment() yields a component path that keeps SYS_DEFAULT once.
# What it cannot check: that real Spack accepts the recipe (directive semantics, concretization,
# version checks) or that `spack install` builds it.  Those need Spack itself.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
recipe="$top/contrib/spack/packages/gpuic/package.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# py_compile, with the bytecode kept out of the source tree
export PYTHONDONTWRITEBYTECODE=1
python3 -c 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)' \
    "$recipe" "$tmp/package.pyc" || { echo "spack_recipe: FAIL (does not compile)"; exit 1; }

mkdir -p "$tmp/spack"
: >"$tmp/spack/__init__.py"
cat >"$tmp/spack/package.py" <<'PY'
"""Stand-in for spack.package: directives record their arguments on the class being defined."""
import os

_pending = {"versions": [], "variants": [], "depends_on": [], "conflicts": []}


def _record(kind, *args, **kwargs):
    _pending[kind].append((args, kwargs))


def version(*a, **k): _record("versions", *a, **k)
def variant(*a, **k): _record("variants", *a, **k)
def depends_on(*a, **k): _record("depends_on", *a, **k)
def conflicts(*a, **k): _record("conflicts", *a, **k)
def join_path(*parts): return os.path.join(*parts)


class _Exe:
    def __init__(self, name): self.name, self.calls = name, []
    def __call__(self, *args, **kwargs): self.calls.append(args)


def which(name, required=False): return _Exe(name)


class InstallError(Exception):
    pass


class PackageBase:
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for kind, items in _pending.items():
            setattr(cls, "_" + kind, list(items))
            items.clear()


class AutotoolsPackage(PackageBase):
    pass


__all__ = ["AutotoolsPackage", "version", "variant", "depends_on", "conflicts", "join_path",
           "which", "InstallError"]
PY

PYTHONPATH="$tmp" python3 - "$recipe" <<'PY'
import importlib.util, os, sys, types

failures = []
def check(cond, what):
    if not cond:
        failures.append(what)
        print("check failed: " + what)

spec_ = importlib.util.spec_from_file_location("gpuic_recipe", sys.argv[1])
mod = importlib.util.module_from_spec(spec_)
spec_.loader.exec_module(mod)
from spack.package import AutotoolsPackage

cls = getattr(mod, "Gpuic", None)
check(cls is not None and issubclass(cls, AutotoolsPackage), "class Gpuic(AutotoolsPackage)")
doc = (cls.__doc__ or "") if cls else ""
check("Open MPI it runs in" in " ".join(doc.split()),
      "docstring says the component must match the Open MPI it runs in")

variants = {a[0]: k for a, k in cls._variants}
check("cuda" in variants and variants["cuda"].get("default") is True, "variant cuda, default on")
check("mlx5dv" in variants and variants["mlx5dv"].get("default") is False,
      "variant mlx5dv (rdma-core), default off")
check(all(k.get("description") for k in variants.values()), "every variant has a description")
check(len(cls._versions) >= 1, "at least one version")

deps = {}
for a, k in cls._depends_on:
    deps.setdefault(a[0].split("@")[0].split("+")[0], []).append((a[0], k))
def dep(name):
    return deps.get(name, [])
check(any(s == "openmpi@4.1" and "when" not in k for s, k in dep("openmpi")),
      "depends_on('openmpi@4.1') unconditionally")
check(any("when" not in k for s, k in dep("ucx")), "depends_on('ucx') unconditionally")
check(any(k.get("when") == "+cuda" for s, k in dep("cuda")), "depends_on('cuda', when='+cuda')")
check(any(k.get("when") == "+mlx5dv" for s, k in dep("rdma-core")),
      "depends_on('rdma-core', when='+mlx5dv')")
for tool in ("autoconf", "automake", "libtool"):
    check(any(k.get("type") == "build" for s, k in dep(tool)), f"depends_on('{tool}', type='build')")

# configure_args against a minimal spec
class Node:
    def __init__(self, prefix): self.prefix = prefix
class Spec:
    def __init__(self, on): self.on = on
    def satisfies(self, s): return s.lstrip("+") in self.on if s.startswith("+") else False
    def __getitem__(self, name): return Node("/opt/" + name)
class Prefix(str):
    @property
    def lib(self): return os.path.join(self, "lib")

for on in ({"cuda"}, set(), {"cuda", "mlx5dv"}):
    pkg = cls.__new__(cls)
    pkg.spec, pkg.prefix = Spec(on), Prefix("/opt/gpuic")
    args = pkg.configure_args()
    check("--with-ompi=/opt/openmpi" in args, f"{on}: --with-ompi=")
    check("--with-ucx=/opt/ucx" in args, f"{on}: --with-ucx=")
    check("--with-ompi-component-dir=/opt/gpuic/lib/openmpi" in args,
          f"{on}: --with-ompi-component-dir={{prefix}}/lib/openmpi")
    if "cuda" in on:
        check("--with-cuda=/opt/cuda" in args and "--without-cuda" not in args, f"{on}: --with-cuda=")
    else:
        check("--without-cuda" in args and not any(a.startswith("--with-cuda") for a in args),
              f"{on}: --without-cuda")
    if "mlx5dv" in on:
        check("--with-mlx5dv=/opt/rdma-core" in args, f"{on}: --with-mlx5dv=")
    else:
        check("--without-mlx5dv" in args, f"{on}: --without-mlx5dv")

# setup_run_environment, applied the way Spack applies path modifications
class Env:
    def __init__(self): self.ops = []
    def set(self, n, v, **k): self.ops.append(("set", n, v))
    def prepend_path(self, n, v, separator=":", **k): self.ops.append(("prepend", n, v))
    def append_path(self, n, v, separator=":", **k): self.ops.append(("append", n, v))
    def prune_duplicate_paths(self, n, separator=":", **k): self.ops.append(("prune", n, None))
    def apply(self, environ):
        for op, n, v in self.ops:
            parts = [p for p in environ.get(n, "").split(":") if p]
            if op == "set": parts = v.split(":")
            elif op == "prepend": parts = [v] + parts
            elif op == "append": parts = parts + [v]
            elif op == "prune": parts = [p for i, p in enumerate(parts) if p not in parts[:i]]
            environ[n] = ":".join(parts)
        return environ
var = "OMPI_MCA_mca_base_component_path"
pkg = cls.__new__(cls)
pkg.spec, pkg.prefix = Spec({"cuda"}), Prefix("/opt/gpuic")
env = Env(); pkg.setup_run_environment(env)
got = env.apply({})[var]
check(got == "SYS_DEFAULT:/opt/gpuic/lib/openmpi", f"component path from nothing: {got}")
got = env.apply({var: "SYS_DEFAULT:/opt/other/lib/openmpi"})[var]
check(got == "SYS_DEFAULT:/opt/other/lib/openmpi:/opt/gpuic/lib/openmpi",
      f"component path appended to an existing one: {got}")

print("spack_recipe: " + ("FAIL" if failures else "PASS") + " (syntax and declarations only)")
sys.exit(1 if failures else 0)
PY
