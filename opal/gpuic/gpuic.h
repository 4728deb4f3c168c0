/*
 * gpuic.h - libgpuic, the portable lower layer of gpuic (no MPI, no Open MPI internals).
 *
 * Include this one header for the whole host API.
 */
#ifndef GPUIC_H
#define GPUIC_H

#include "gpuic_status.h"
#include "gpuic_log.h"
#include "gpuic_context.h"
#include "gpuic_ep.h"
#include "gpuic_call.h"
#include "gpuic_mr.h"
#include "gpuic_rma.h"
#include "gpuic_cuda.h"
#include "gpuic_wqe.h"
#include "gpuic_ring.h"
#include "gpuic_keytable.h"
#include "gpuic_cmpl.h"
#include "gpuic_proxy.h"
#include "gpuic_trace.h"

#endif /* GPUIC_H */
