# GPUIC_CHECK_MLX5DV: rdma-core's infiniband/mlx5dv.h, against which the unit tests check the
# WQE layout byte for byte.  --with-mlx5dv[=DIR]; default: use it if found.
AC_DEFUN([GPUIC_CHECK_MLX5DV], [
  AC_ARG_WITH([mlx5dv],
    [AS_HELP_STRING([--with-mlx5dv@<:@=DIR@:>@],
                    [rdma-core headers with infiniband/mlx5dv.h (default: use them if found)])],
    [], [with_mlx5dv=check])
  MLX5DV_CPPFLAGS=""
  gpuic_have_mlx5dv=no
  AS_IF([test "x$with_mlx5dv" != xno], [
    AS_CASE(["$with_mlx5dv"], [check|yes], [], [MLX5DV_CPPFLAGS="-I$with_mlx5dv/include"])
    save_CPPFLAGS="$CPPFLAGS"; CPPFLAGS="$CPPFLAGS $MLX5DV_CPPFLAGS"
    AC_CHECK_HEADER([infiniband/mlx5dv.h], [gpuic_have_mlx5dv=yes], [], [])
    CPPFLAGS="$save_CPPFLAGS"
    AS_IF([test "x$gpuic_have_mlx5dv" = xno && test "x$with_mlx5dv" != xcheck],
          [AC_MSG_ERROR([--with-mlx5dv: infiniband/mlx5dv.h not found (install libibverbs-dev)])])
  ])
  AS_IF([test "x$gpuic_have_mlx5dv" = xyes],
        [gpuic_mlx5dv_summary="yes"],
        [gpuic_mlx5dv_summary="no (install libibverbs-dev for the byte-level WQE check)"])
  AC_SUBST([MLX5DV_CPPFLAGS])
  AM_CONDITIONAL([GPUIC_HAVE_MLX5DV], [test "x$gpuic_have_mlx5dv" = xyes])
])
