# The version of gpuic.  Read by configure.ac (out-of-tree build) and by configure.m4 (build
# inside Open MPI's source tree) so that both builds stamp the same component version.
m4_define([GPUIC_M4_VERSION_MAJOR], [0])
m4_define([GPUIC_M4_VERSION_MINOR], [1])
m4_define([GPUIC_M4_VERSION_PATCH], [0])
