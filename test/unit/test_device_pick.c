/* The rank-to-GPU rule (gpuic_cuda_device_pick): pure logic, no driver needed. */
#include "gpuic.h"
#include "unit_test.h"

int main(void)
{
    /* by node-local rank, modulo the visible devices */
    CHECK(gpuic_cuda_device_pick(-1, 0, 2) == 0);
    CHECK(gpuic_cuda_device_pick(-1, 1, 2) == 1);
    CHECK(gpuic_cuda_device_pick(-1, 2, 2) == 0);
    CHECK(gpuic_cuda_device_pick(-1, 3, 2) == 1);
    CHECK(gpuic_cuda_device_pick(-1, 5, 1) == 0);
    CHECK(gpuic_cuda_device_pick(-1, 7, 8) == 7);
    CHECK(gpuic_cuda_device_pick(-1, 9, 8) == 1);
    /* an unknown local rank (singleton) takes the first device */
    CHECK(gpuic_cuda_device_pick(-1, -1, 2) == 0);
    /* a named device wins over the local rank, when visible */
    CHECK(gpuic_cuda_device_pick(0, 1, 2) == 0);
    CHECK(gpuic_cuda_device_pick(1, 0, 2) == 1);
    CHECK(gpuic_cuda_device_pick(1, 3, 4) == 1);
    CHECK(gpuic_cuda_device_pick(2, 0, 2) == -1);
    CHECK(gpuic_cuda_device_pick(-2, 0, 2) == -1);
    /* no device at all */
    CHECK(gpuic_cuda_device_pick(-1, 0, 0) == -1);
    CHECK(gpuic_cuda_device_pick(0, 0, 0) == -1);
    CHECK(gpuic_cuda_device_pick(-1, 0, -1) == -1);
    /* recording a preference touches no driver and changes no rule */
    gpuic_cuda_device_prefer(-1, 3);
    CHECK(gpuic_cuda_device_pick(-1, 3, 2) == 1);
    return unit_test_result("test_device_pick");
}
