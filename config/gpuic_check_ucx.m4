# GPUIC_CHECK_UCX: UCX >= 1.9 (ucp), through pkg-config or --with-ucx=DIR.
AC_DEFUN([GPUIC_CHECK_UCX], [
  AC_ARG_WITH([ucx],
    [AS_HELP_STRING([--with-ucx=DIR], [UCX installation (default: pkg-config ucx)])],
    [], [with_ucx=check])
  AS_IF([test "x$with_ucx" = xno], [AC_MSG_ERROR([UCX is required: --without-ucx is not possible])])
  AS_IF([test "x$with_ucx" != xcheck && test "x$with_ucx" != xyes], [
    UCX_CFLAGS="-I$with_ucx/include"
    gpuic_ucx_libdir="$with_ucx/lib"
    AS_IF([test -d "$with_ucx/lib/x86_64-linux-gnu"], [gpuic_ucx_libdir="$with_ucx/lib/x86_64-linux-gnu"])
    AS_IF([test -d "$with_ucx/lib64"], [gpuic_ucx_libdir="$with_ucx/lib64"])
    UCX_LIBS="-L$gpuic_ucx_libdir -lucp -luct -lucs"
    gpuic_ucx_how="--with-ucx=$with_ucx"
  ], [
    PKG_CHECK_MODULES([UCX], [ucx >= 1.9], [gpuic_ucx_how="pkg-config ucx"],
      [AC_MSG_ERROR([UCX >= 1.9 not found: install it with 'apt-get install libucx-dev', or pass --with-ucx=DIR])])
  ])
  save_CPPFLAGS="$CPPFLAGS"; save_LIBS="$LIBS"
  CPPFLAGS="$CPPFLAGS $UCX_CFLAGS"; LIBS="$LIBS $UCX_LIBS"
  AC_CHECK_HEADER([ucp/api/ucp.h], [],
    [AC_MSG_ERROR([ucp/api/ucp.h not found: install libucx-dev, or pass --with-ucx=DIR])])
  AC_MSG_CHECKING([for ucp_put_nbx (UCX >= 1.9)])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <ucp/api/ucp.h>]],
                   [[ucp_request_param_t p; p.op_attr_mask = 0; (void)ucp_put_nbx(0, 0, 0, 0, 0, &p);]])],
                 [AC_MSG_RESULT([yes])],
                 [AC_MSG_RESULT([no]); AC_MSG_ERROR([UCX >= 1.9 is required (ucp_put_nbx missing)])])
  AC_COMPUTE_INT([gpuic_ucx_major], [UCP_API_MAJOR], [#include <ucp/api/ucp.h>], [gpuic_ucx_major=0])
  AC_COMPUTE_INT([gpuic_ucx_minor], [UCP_API_MINOR], [#include <ucp/api/ucp.h>], [gpuic_ucx_minor=0])
  gpuic_ucx_version="$gpuic_ucx_major.$gpuic_ucx_minor"
  # CUDA memory: UCX loads its CUDA transports (cuda_copy, cuda_ipc, gdr_copy) from
  # LIBDIR/ucx/libuct_cuda*.so; the process checks again at run time (ucp_context_query).
  AS_IF([test -z "$gpuic_ucx_libdir"],
        [gpuic_ucx_libdir=`$PKG_CONFIG --variable=libdir ucx 2>/dev/null`])
  AC_MSG_CHECKING([whether this UCX handles CUDA memory])
  AS_IF([ls "$gpuic_ucx_libdir"/ucx/libuct_cuda*.so* >/dev/null 2>&1],
        [gpuic_ucx_cuda="yes (GPU windows reach other nodes)"],
        [gpuic_ucx_cuda="no (GPU windows reach only this node; see README: GPU windows across nodes)"])
  AC_MSG_RESULT([$gpuic_ucx_cuda])
  CPPFLAGS="$save_CPPFLAGS"; LIBS="$save_LIBS"
  AC_SUBST([UCX_CFLAGS])
  AC_SUBST([UCX_LIBS])
])
