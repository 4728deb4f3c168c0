# Spack recipe for gpuic.  contrib/spack is a Spack package repository:
#   spack repo add contrib/spack
#   spack develop --path "$PWD" gpuic@main && spack install gpuic@main
from spack.package import *


class Gpuic(AutotoolsPackage):
    """gpuic: an Open MPI one-sided (osc) component in which host and GPU code initiate RMA,
    with direct loads and stores to same-node peers and UCX beyond them.

    The component (mca_osc_gpuic.so) is loaded into an Open MPI process and reaches into
    Open MPI's internal structures, so it must be built against the very Open MPI it runs in:
    it refuses to open under any other version.  Hence the exact openmpi@4.1 dependency, and
    that openmpi must install its development (component) headers: an external Open MPI such
    as Debian's libopenmpi-dev, or one configured with --with-devel-headers.  configure stops
    with a clear message when ompi/mca/osc/osc.h is missing.

    After installation, the run environment appends the component directory to
    OMPI_MCA_mca_base_component_path; select it with `mpirun --mca osc gpuic`.
    """

    # No public repository or release is named here: point Spack at a checkout with
    # `spack develop --path DIR gpuic@main`.  The autotools generate configure from it.
    version("main")

    variant("cuda", default=True,
            description="CUDA driver API support (GPU windows, device API); libcuda is loaded "
                        "at run time, never linked")
    variant("mlx5dv", default=False,
            description="Check the WQE layout byte for byte against rdma-core's mlx5dv.h "
                        "(build-time test only)")

    depends_on("c", type="build")
    depends_on("autoconf", type="build", when="@main")
    depends_on("automake", type="build", when="@main")
    depends_on("libtool", type="build", when="@main")
    depends_on("m4", type="build", when="@main")
    depends_on("pkgconfig", type="build")

    depends_on("openmpi@4.1")
    # Required, not a variant: the component's host path and its proxy are built on UCP.
    # One UCX node in the DAG also keeps Open MPI's own UCX and gpuic's the same library.
    depends_on("ucx@1.9:")
    depends_on("cuda", when="+cuda")
    depends_on("rdma-core", when="+mlx5dv")

    conflicts("platform=darwin", msg="gpuic needs Linux (UCX, CUDA IPC, POSIX shared memory)")
    conflicts("platform=windows", msg="gpuic needs Linux (UCX, CUDA IPC, POSIX shared memory)")

    @property
    def component_dir(self):
        """Where mca_osc_gpuic.so is installed."""
        return join_path(self.prefix.lib, "openmpi")

    def autoreconf(self, spec, prefix):
        which("sh", required=True)("./autogen.sh")

    def configure_args(self):
        spec = self.spec
        args = [
            "--with-ompi={0}".format(spec["openmpi"].prefix),
            "--with-ucx={0}".format(spec["ucx"].prefix),
            "--with-ompi-component-dir={0}".format(self.component_dir),
            # Optional test-only users of RMA: never picked up from the host by accident.
            "--without-armci",
            "--without-ga",
            "--without-petsc",
        ]
        if spec.satisfies("+cuda"):
            args.append("--with-cuda={0}".format(spec["cuda"].prefix))
        else:
            args.append("--without-cuda")
        if spec.satisfies("+mlx5dv"):
            args.append("--with-mlx5dv={0}".format(spec["rdma-core"].prefix))
        else:
            args.append("--without-mlx5dv")
        return args

    def setup_run_environment(self, env):
        # A set OMPI_MCA_mca_base_component_path replaces Open MPI's search path, so the list
        # keeps SYS_DEFAULT (Open MPI's own components) in front, once.
        var = "OMPI_MCA_mca_base_component_path"
        env.prepend_path(var, "SYS_DEFAULT", separator=":")
        env.append_path(var, self.component_dir, separator=":")
        env.prune_duplicate_paths(var, separator=":")
