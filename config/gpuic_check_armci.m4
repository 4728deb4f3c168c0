# GPUIC_CHECK_ARMCI: ARMCI-MPI (Debian: libarmci-mpi-dev), a real user of MPI RMA that the
# tests run unchanged on gpuic.  --with-armci[=DIR]; default: use it if found.  Needs MPICC
# (GPUIC_CHECK_OMPI first): armci.h includes mpi.h and the library calls MPI.
AC_DEFUN([GPUIC_CHECK_ARMCI], [
  AC_ARG_WITH([armci],
    [AS_HELP_STRING([--with-armci@<:@=DIR@:>@],
                    [ARMCI-MPI for the ARMCI test (default: use it if found)])],
    [], [with_armci=check])
  ARMCI_CPPFLAGS=""
  ARMCI_LIBS=""
  gpuic_have_armci=no
  AS_IF([test "x$with_armci" != xno], [
    AS_CASE(["$with_armci"], [check|yes], [gpuic_armci_ldflags=""],
            [ARMCI_CPPFLAGS="-I$with_armci/include"; gpuic_armci_ldflags="-L$with_armci/lib"])
    save_CC="$CC"; save_CPPFLAGS="$CPPFLAGS"; save_LIBS="$LIBS"
    CC="$MPICC"; CPPFLAGS="$CPPFLAGS $ARMCI_CPPFLAGS"
    AC_CHECK_HEADER([armci.h], [
      # Debian names the Open MPI build libarmci-openmpi; a plain build installs libarmci
      for lib in armci-openmpi armci; do
        AC_MSG_CHECKING([for ARMCI_Init in -l$lib])
        LIBS="$gpuic_armci_ldflags -l$lib $save_LIBS"
        AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <armci.h>]], [[return ARMCI_Init();]])],
                       [AC_MSG_RESULT([yes]); gpuic_have_armci=yes
                        ARMCI_LIBS="${gpuic_armci_ldflags:+$gpuic_armci_ldflags }-l$lib"; break],
                       [AC_MSG_RESULT([no])])
      done], [], [])
    CC="$save_CC"; CPPFLAGS="$save_CPPFLAGS"; LIBS="$save_LIBS"
    AS_IF([test "x$gpuic_have_armci" = xno && test "x$with_armci" != xcheck],
          [AC_MSG_ERROR([--with-armci: armci.h or the ARMCI library not found (install libarmci-mpi-dev)])])
  ])
  AS_IF([test "x$gpuic_have_armci" = xyes],
        [gpuic_armci_summary="yes ($ARMCI_LIBS)"],
        [gpuic_armci_summary="no (install libarmci-mpi-dev for the ARMCI-MPI test)"])
  AC_SUBST([ARMCI_CPPFLAGS])
  AC_SUBST([ARMCI_LIBS])
  AM_CONDITIONAL([GPUIC_HAVE_ARMCI], [test "x$gpuic_have_armci" = xyes])
])
