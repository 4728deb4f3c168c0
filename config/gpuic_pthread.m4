# AX_PTHREAD_SIMPLE: POSIX threads through -pthread (gcc and clang on Linux).
AC_DEFUN([AX_PTHREAD_SIMPLE], [
  save_CFLAGS="$CFLAGS"
  CFLAGS="$CFLAGS -pthread"
  AC_MSG_CHECKING([whether $CC accepts -pthread])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <pthread.h>]],
                                  [[pthread_t t; pthread_create(&t, 0, 0, 0);]])],
                 [AC_MSG_RESULT([yes])], [AC_MSG_ERROR([POSIX threads (-pthread) are required])])
  CFLAGS="$save_CFLAGS"
  PTHREAD_CFLAGS="-pthread"
  PTHREAD_LIBS="-pthread"
  AC_SUBST([PTHREAD_CFLAGS])
  AC_SUBST([PTHREAD_LIBS])
])
