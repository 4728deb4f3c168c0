# GPUIC_CHECK_GA: Global Arrays (Debian: libglobalarrays-dev, which runs on ARMCI-MPI and whose
# static library also needs libscalapack-openmpi-dev), a real user of MPI RMA that the tests run
# unchanged on gpuic.  Found through the Open MPI build's ga-config; --without-ga turns it off.
# Needs MPICC (GPUIC_CHECK_OMPI first).
AC_DEFUN([GPUIC_CHECK_GA], [
  AC_ARG_WITH([ga],
    [AS_HELP_STRING([--with-ga@<:@=GA_CONFIG@:>@],
                    [Global Arrays for the GA test, by its ga-config (default: use it if found)])],
    [], [with_ga=check])
  GA_CPPFLAGS=""
  GA_LIBS=""
  gpuic_have_ga=no
  AS_IF([test "x$with_ga" != xno], [
    AS_CASE(["$with_ga"], [check|yes], [
      # Debian keeps one ga-config per MPI; /usr/bin/ga-config may name the MPICH one
      gpuic_multiarch=`$MPICC -print-multiarch 2>/dev/null`
      AC_PATH_PROG([GA_CONFIG], [ga-config], [],
                   [/usr/lib/$gpuic_multiarch/ga/openmpi/bin$PATH_SEPARATOR$PATH])],
      [GA_CONFIG="$with_ga"])
    AS_IF([test -n "$GA_CONFIG" && test -x "$GA_CONFIG"], [
      GA_CPPFLAGS=`$GA_CONFIG --cppflags`
      GA_LIBS="`$GA_CONFIG --ldflags` `$GA_CONFIG --libs` `$GA_CONFIG --flibs`"
      save_CC="$CC"; save_CPPFLAGS="$CPPFLAGS"; save_LIBS="$LIBS"
      CC="$MPICC"; CPPFLAGS="$CPPFLAGS $GA_CPPFLAGS"; LIBS="$GA_LIBS $LIBS"
      AC_MSG_CHECKING([whether a Global Arrays program links])
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <ga.h>]], [[GA_Initialize(); GA_Terminate();]])],
                     [gpuic_have_ga=yes], [])
      AC_MSG_RESULT([$gpuic_have_ga])
      CC="$save_CC"; CPPFLAGS="$save_CPPFLAGS"; LIBS="$save_LIBS"
    ])
    AS_IF([test "x$gpuic_have_ga" = xno && test "x$with_ga" != xcheck],
          [AC_MSG_ERROR([--with-ga: no Global Arrays program links (install libglobalarrays-dev and libscalapack-openmpi-dev)])])
  ])
  AS_IF([test "x$gpuic_have_ga" = xyes],
        [gpuic_ga_summary="yes ($GA_CONFIG)"],
        [gpuic_ga_summary="no (install libglobalarrays-dev and libscalapack-openmpi-dev for the GA test)"])
  AC_SUBST([GA_CPPFLAGS])
  AC_SUBST([GA_LIBS])
  AM_CONDITIONAL([GPUIC_HAVE_GA], [test "x$gpuic_have_ga" = xyes])
])
