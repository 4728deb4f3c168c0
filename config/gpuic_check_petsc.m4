# GPUIC_CHECK_PETSC: PETSc (Debian: libpetsc-real3.18-dev), whose star-forest communication
# (PetscSF) has an MPI one-sided backend; a real user of MPI RMA that the tests run unchanged on
# gpuic.  Found through pkg-config; --without-petsc turns it off.  Needs MPICC
# (GPUIC_CHECK_OMPI first).
AC_DEFUN([GPUIC_CHECK_PETSC], [
  AC_ARG_WITH([petsc],
    [AS_HELP_STRING([--with-petsc],
                    [PETSc for the PetscSF window test, by pkg-config (default: use it if found)])],
    [], [with_petsc=check])
  PETSC_CFLAGS=""
  PETSC_LIBS=""
  gpuic_have_petsc=no
  AS_IF([test "x$with_petsc" != xno], [
    AS_IF([$PKG_CONFIG --exists petsc 2>/dev/null], [
      PETSC_CFLAGS=`$PKG_CONFIG --cflags petsc`
      PETSC_LIBS=`$PKG_CONFIG --libs petsc`
      save_CC="$CC"; save_CPPFLAGS="$CPPFLAGS"; save_LIBS="$LIBS"
      CC="$MPICC"; CPPFLAGS="$CPPFLAGS $PETSC_CFLAGS"; LIBS="$PETSC_LIBS $LIBS"
      AC_MSG_CHECKING([whether a PETSc program links])
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <petscsf.h>]],
                                      [[PetscSF sf; PetscSFCreate(PETSC_COMM_WORLD, &sf);]])],
                     [gpuic_have_petsc=yes], [])
      AC_MSG_RESULT([$gpuic_have_petsc])
      CC="$save_CC"; CPPFLAGS="$save_CPPFLAGS"; LIBS="$save_LIBS"
    ])
    AS_IF([test "x$gpuic_have_petsc" = xno && test "x$with_petsc" != xcheck],
          [AC_MSG_ERROR([--with-petsc: no PETSc program links (install libpetsc-real3.18-dev)])])
  ])
  AS_IF([test "x$gpuic_have_petsc" = xyes],
        [gpuic_petsc_summary="yes (`$PKG_CONFIG --modversion petsc`)"],
        [gpuic_petsc_summary="no (install libpetsc-real3.18-dev for the PetscSF test)"])
  AC_SUBST([PETSC_CFLAGS])
  AC_SUBST([PETSC_LIBS])
  AM_CONDITIONAL([GPUIC_HAVE_PETSC], [test "x$gpuic_have_petsc" = xyes])
])
