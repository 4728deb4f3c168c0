# -*- shell-script -*-
#
# Open MPI's configure hook for the gpuic osc component, used when this directory sits inside an
# Open MPI 4.1 source tree (contrib/intree-build.sh puts it there and installs Makefile.ompi.am
# as Makefile.am).  The out-of-tree build ignores this file; its checks are in config/.
#
# UCX comes from Open MPI's own detection (OMPI_CHECK_UCX, i.e. --with-ucx).  CUDA headers are
# optional, as in the out-of-tree build: libgpuic loads the driver API at run time, so only
# cuda.h is needed.  Open MPI's --with-cuda=DIR names where it is; without --with-cuda the
# places the out-of-tree build looks are tried; --without-cuda leaves GPU windows out.

m4_include([ompi/mca/osc/gpuic/osc_gpuic_version.m4])

# MCA_ompi_osc_gpuic_CONFIG([action-if-can-compile], [action-if-cant-compile])
# ------------------------------------------------------------------------------
AC_DEFUN([MCA_ompi_osc_gpuic_CONFIG], [
    AC_CONFIG_FILES([ompi/mca/osc/gpuic/Makefile
                     ompi/mca/osc/gpuic/gpuic_build_config.h:ompi/mca/osc/gpuic/osc_gpuic_intree_config.h.in])

    OMPI_CHECK_UCX([osc_gpuic], [osc_gpuic_happy=yes], [osc_gpuic_happy=no])

    AC_MSG_CHECKING([for cuda.h for the gpuic osc component])
    osc_gpuic_cuda_incdir=
    AS_CASE(["x$with_cuda"],
        [xno], [],
        [x|xyes], [for osc_gpuic_dir in /usr/local/cuda/include /usr/include; do
                       AS_IF([test -f "$osc_gpuic_dir/cuda.h"],
                             [osc_gpuic_cuda_incdir=$osc_gpuic_dir; break])
                   done],
        [AS_IF([test -f "$with_cuda/include/cuda.h"], [osc_gpuic_cuda_incdir="$with_cuda/include"],
               [test -f "$with_cuda/cuda.h"], [osc_gpuic_cuda_incdir="$with_cuda"])])
    AS_IF([test -n "$osc_gpuic_cuda_incdir"],
          [osc_gpuic_have_cuda=1
           AS_IF([test "$osc_gpuic_cuda_incdir" != /usr/include],
                 [osc_gpuic_CPPFLAGS="$osc_gpuic_CPPFLAGS -I$osc_gpuic_cuda_incdir"])
           AC_MSG_RESULT([$osc_gpuic_cuda_incdir/cuda.h])],
          [osc_gpuic_have_cuda=0
           AC_MSG_RESULT([no (GPU windows disabled)])])

    GPUIC_VERSION_MAJOR=GPUIC_M4_VERSION_MAJOR
    GPUIC_VERSION_MINOR=GPUIC_M4_VERSION_MINOR
    GPUIC_VERSION_PATCH=GPUIC_M4_VERSION_PATCH

    AS_IF([test "$osc_gpuic_happy" = yes], [$1], [$2])

    AC_SUBST([osc_gpuic_CPPFLAGS])
    AC_SUBST([osc_gpuic_LDFLAGS])
    AC_SUBST([osc_gpuic_LIBS])
    AC_SUBST([osc_gpuic_have_cuda])
    AC_SUBST([GPUIC_VERSION_MAJOR])
    AC_SUBST([GPUIC_VERSION_MINOR])
    AC_SUBST([GPUIC_VERSION_PATCH])
])dnl
