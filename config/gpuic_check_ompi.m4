# GPUIC_CHECK_OMPI: find Open MPI's development headers and libraries.
#
# Sets OMPI_CPPFLAGS, OMPI_LDFLAGS, OMPI_LIBS, OMPI_COMPONENT_DIR, MPICC, MPIRUN, OMPI_INFO and
# gpuic_ompi_version.  The component must be built against the Open MPI it runs in; it refuses
# to open under any other version.
AC_DEFUN([GPUIC_CHECK_OMPI], [
  AC_ARG_WITH([ompi],
    [AS_HELP_STRING([--with-ompi=DIR],
                    [Open MPI installation (default: pkg-config ompi, then mpicc on PATH)])],
    [], [with_ompi=check])
  AC_ARG_WITH([ompi-component-dir],
    [AS_HELP_STRING([--with-ompi-component-dir=DIR],
                    [where to install mca_osc_gpuic.so (default: LIBDIR/openmpi)])],
    [OMPI_COMPONENT_DIR="$withval"], [OMPI_COMPONENT_DIR='${libdir}/openmpi'])
  AC_SUBST([OMPI_COMPONENT_DIR])

  AS_IF([test "x$with_ompi" = xno],
        [AC_MSG_ERROR([gpuic is an Open MPI component: --without-ompi is not possible])])

  gpuic_ompi_how=""
  AS_IF([test "x$with_ompi" != xcheck && test "x$with_ompi" != xyes], [
    # An explicit prefix: ask its own mpicc for the flags.
    AS_IF([test -x "$with_ompi/bin/mpicc"], [],
          [AC_MSG_ERROR([--with-ompi=$with_ompi: $with_ompi/bin/mpicc not found])])
    gpuic_ompi_cflags=`"$with_ompi/bin/mpicc" --showme:compile`
    gpuic_ompi_libs=`"$with_ompi/bin/mpicc" --showme:link`
    gpuic_ompi_bindir="$with_ompi/bin"
    gpuic_ompi_how="--with-ompi=$with_ompi"
  ], [
    PKG_CHECK_MODULES([OMPI_PC], [ompi], [
      gpuic_ompi_cflags="$OMPI_PC_CFLAGS"
      gpuic_ompi_libs="$OMPI_PC_LIBS"
      gpuic_ompi_how="pkg-config ompi"
    ], [
      AC_PATH_PROG([gpuic_mpicc_path], [mpicc])
      AS_IF([test -z "$gpuic_mpicc_path"],
            [AC_MSG_ERROR([Open MPI not found: install it with 'apt-get install libopenmpi-dev openmpi-bin', or pass --with-ompi=DIR])])
      gpuic_ompi_cflags=`$gpuic_mpicc_path --showme:compile`
      gpuic_ompi_libs=`$gpuic_mpicc_path --showme:link`
      gpuic_ompi_how="mpicc on PATH"
    ])
    gpuic_ompi_bindir=""
  ])

  # Component code includes Open MPI's internal headers, which live one level below the
  # public include dir ("<incdir>/openmpi").  Add it if pkg-config did not.
  OMPI_CPPFLAGS="$gpuic_ompi_cflags"
  for gpuic_flag in $gpuic_ompi_cflags; do
    case "$gpuic_flag" in
      -I*) gpuic_dir=`echo "$gpuic_flag" | sed -e 's/^-I//'`
           AS_IF([test -f "$gpuic_dir/openmpi/ompi_config.h"],
                 [OMPI_CPPFLAGS="$OMPI_CPPFLAGS -I$gpuic_dir/openmpi"]) ;;
    esac
  done
  OMPI_LIBS="$gpuic_ompi_libs"
  # The component also calls into libopen-pal (progress, convertor, hash tables).
  gpuic_pal_dir=""
  for gpuic_flag in $gpuic_ompi_libs; do
    case "$gpuic_flag" in
      -L*) gpuic_pal_dir=`echo "$gpuic_flag" | sed -e 's/^-L//'` ;;
    esac
  done
  OMPI_PAL_LIBS="-lopen-pal"
  AC_SUBST([OMPI_CPPFLAGS])
  AC_SUBST([OMPI_LIBS])
  AC_SUBST([OMPI_PAL_LIBS])

  save_CPPFLAGS="$CPPFLAGS"
  CPPFLAGS="$CPPFLAGS $OMPI_CPPFLAGS"
  AC_CHECK_HEADER([ompi_config.h], [],
    [AC_MSG_ERROR([Open MPI's development headers (ompi_config.h) were not found: install libopenmpi-dev, or pass --with-ompi=DIR])])
  AC_CHECK_HEADER([ompi/mca/osc/osc.h], [],
    [AC_MSG_ERROR([Open MPI's component headers (ompi/mca/osc/osc.h) were not found: install libopenmpi-dev, or pass --with-ompi=DIR])],
    [#include <ompi_config.h>])
  # Some distributions do not ship fint_2_int.h, which ompi/op/op.h includes.
  AC_CHECK_HEADER([ompi/mpi/fortran/base/fint_2_int.h],
    [gpuic_need_fint_compat=no], [gpuic_need_fint_compat=yes], [#include <ompi_config.h>])
  AC_MSG_CHECKING([Open MPI version of the headers])
  AC_COMPUTE_INT([gpuic_ompi_major], [OMPI_MAJOR_VERSION], [#include <ompi/version.h>], [gpuic_ompi_major=0])
  AC_COMPUTE_INT([gpuic_ompi_minor], [OMPI_MINOR_VERSION], [#include <ompi/version.h>], [gpuic_ompi_minor=0])
  AC_COMPUTE_INT([gpuic_ompi_release], [OMPI_RELEASE_VERSION], [#include <ompi/version.h>], [gpuic_ompi_release=0])
  gpuic_ompi_version="$gpuic_ompi_major.$gpuic_ompi_minor.$gpuic_ompi_release"
  AC_MSG_RESULT([$gpuic_ompi_version])
  CPPFLAGS="$save_CPPFLAGS"
  AS_IF([test "$gpuic_ompi_major" -ne 4 || test "$gpuic_ompi_minor" -lt 1],
        [AC_MSG_ERROR([gpuic needs Open MPI 4.1.x (found $gpuic_ompi_version)])])
  AM_CONDITIONAL([GPUIC_FINT_COMPAT], [test "x$gpuic_need_fint_compat" = xyes])

  AC_PATH_PROG([MPICC], [mpicc], [], [$gpuic_ompi_bindir$PATH_SEPARATOR$PATH])
  AC_PATH_PROG([MPIRUN], [mpirun], [], [$gpuic_ompi_bindir$PATH_SEPARATOR$PATH])
  AC_PATH_PROG([OMPI_INFO], [ompi_info], [], [$gpuic_ompi_bindir$PATH_SEPARATOR$PATH])
  AS_IF([test -z "$MPICC"], [AC_MSG_ERROR([mpicc not found: install openmpi-bin])])
])
