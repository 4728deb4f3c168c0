# GPUIC_CHECK_CUDA: CUDA headers for the driver API (loaded at run time, never linked) and nvcc
# for the device tests.  --with-cuda[=DIR]; default: use CUDA if found.
AC_DEFUN([GPUIC_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
                    [CUDA toolkit (default: use it if found in /usr/local/cuda or on PATH)])],
    [], [with_cuda=check])
  gpuic_have_cuda=no
  gpuic_cuda_summary="no"
  gpuic_nvcc_summary="no"
  CUDA_CPPFLAGS=""
  NVCC=""
  AS_IF([test "x$with_cuda" != xno], [
    AS_CASE(["$with_cuda"],
      [check|yes], [gpuic_cuda_dirs="/usr/local/cuda /usr"],
      [gpuic_cuda_dirs="$with_cuda"])
    for gpuic_d in $gpuic_cuda_dirs; do
      AS_IF([test -f "$gpuic_d/include/cuda.h"], [
        gpuic_have_cuda=yes
        AS_IF([test "$gpuic_d" != /usr], [CUDA_CPPFLAGS="-I$gpuic_d/include"])
        AS_IF([test -x "$gpuic_d/bin/nvcc"], [NVCC="$gpuic_d/bin/nvcc"])
        gpuic_cuda_dir="$gpuic_d"
        break
      ])
    done
    AS_IF([test -z "$NVCC"], [AC_PATH_PROG([NVCC], [nvcc])])
    AS_IF([test "x$gpuic_have_cuda" = xyes],
          [gpuic_cuda_summary="yes ($gpuic_cuda_dir/include/cuda.h; libcuda loaded at run time)"],
          [AS_IF([test "x$with_cuda" != xcheck],
                 [AC_MSG_ERROR([--with-cuda=$with_cuda: cuda.h not found])])
           gpuic_cuda_summary="no (cuda.h not found; GPU windows disabled)"])
    AS_IF([test -n "$NVCC"], [gpuic_nvcc_summary="$NVCC"],
          [gpuic_nvcc_summary="no (device tests not built)"])
  ], [gpuic_cuda_summary="no (--without-cuda)"])
  AS_IF([test "x$gpuic_have_cuda" = xyes],
        [AC_DEFINE([GPUIC_HAVE_CUDA], [1], [CUDA driver API headers are available])])
  AC_ARG_VAR([NVCC_ARCH], [nvcc -arch for device tests (default sm_90)])
  AS_IF([test -z "$NVCC_ARCH"], [NVCC_ARCH=sm_90])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([NVCC])
  AM_CONDITIONAL([GPUIC_HAVE_CUDA], [test "x$gpuic_have_cuda" = xyes])
  AM_CONDITIONAL([GPUIC_HAVE_NVCC], [test -n "$NVCC"])
])
