/*
 * The accumulate family.  Not implemented yet: every call fails with
 * MPI_ERR_UNSUPPORTED_OPERATION rather than doing nothing silently.
 */
#include "ompi_config.h"

#include "mpi.h"

#include "osc_gpuic.h"

static int ompi_osc_gpuic_acc_unsupported(const char *call)
{
    gpuic_log(GPUIC_LOG_DEBUG, "%s is not supported yet", call);
    return MPI_ERR_UNSUPPORTED_OPERATION;
}

int ompi_osc_gpuic_accumulate(const void *origin_addr, int origin_count,
                              struct ompi_datatype_t *origin_dt, int target,
                              ptrdiff_t target_disp, int target_count,
                              struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                              struct ompi_win_t *win)
{
    return ompi_osc_gpuic_acc_unsupported("MPI_Accumulate");
}

int ompi_osc_gpuic_raccumulate(const void *origin_addr, int origin_count,
                               struct ompi_datatype_t *origin_dt, int target,
                               ptrdiff_t target_disp, int target_count,
                               struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                               struct ompi_win_t *win, struct ompi_request_t **request)
{
    return ompi_osc_gpuic_acc_unsupported("MPI_Raccumulate");
}

int ompi_osc_gpuic_get_accumulate(const void *origin_addr, int origin_count,
                                  struct ompi_datatype_t *origin_dt, void *result_addr,
                                  int result_count, struct ompi_datatype_t *result_dt,
                                  int target, ptrdiff_t target_disp, int target_count,
                                  struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                                  struct ompi_win_t *win)
{
    return ompi_osc_gpuic_acc_unsupported("MPI_Get_accumulate");
}

int ompi_osc_gpuic_rget_accumulate(const void *origin_addr, int origin_count,
                                   struct ompi_datatype_t *origin_dt, void *result_addr,
                                   int result_count, struct ompi_datatype_t *result_dt,
                                   int target, ptrdiff_t target_disp, int target_count,
                                   struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                                   struct ompi_win_t *win, struct ompi_request_t **request)
{
    return ompi_osc_gpuic_acc_unsupported("MPI_Rget_accumulate");
}

int ompi_osc_gpuic_fetch_and_op(const void *origin_addr, void *result_addr,
                                struct ompi_datatype_t *dt, int target, ptrdiff_t target_disp,
                                struct ompi_op_t *op, struct ompi_win_t *win)
{
    return ompi_osc_gpuic_acc_unsupported("MPI_Fetch_and_op");
}

int ompi_osc_gpuic_compare_and_swap(const void *origin_addr, const void *compare_addr,
                                    void *result_addr, struct ompi_datatype_t *dt, int target,
                                    ptrdiff_t target_disp, struct ompi_win_t *win)
{
    return ompi_osc_gpuic_acc_unsupported("MPI_Compare_and_swap");
}
